//! `deploygen build`: import → bind → check → plan → emit, then write the
//! project atomically (or, with `--check DIR`, compare it with DIR).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::plan::{self, thousands, Level, Supply};
use crate::{bind, check};

/// The `build` command's arguments.
#[derive(Clone, Debug, Default)]
pub struct BuildArgs {
    pub model: PathBuf,
    pub platform: String,
    pub default_mem: Option<String>,
    pub l1: Option<u64>,
    pub l2: Option<u64>,
    pub l3: Option<u64>,
    pub l2_image: Option<u64>,
    pub tolerance: Option<f32>,
    pub num_data_inputs: Option<usize>,
    pub out: Option<PathBuf>,
    pub force: bool,
    pub check: Option<PathBuf>,
    pub hex_files: bool,
}

/// What a build produced.
pub struct Built {
    pub project: super::Project,
    pub plan: plan::Plan,
    pub out: PathBuf,
}

/// Generate the project in memory (every error is the earlier stages' or
/// a missing kernel binding, before anything is written).
pub fn generate(a: &BuildArgs) -> Result<Built> {
    if let Some(t) = a.tolerance {
        if !(t.is_finite() && t >= 0.0) {
            return Err(Error::Usage(format!("--tolerance {t}: the tolerance must be a finite number >= 0")));
        }
    }
    let mut opts = crate::cli::plan_options(Some(&a.platform), a.default_mem.as_deref(), [a.l1, a.l2, a.l3])?
        .expect("a platform is given");
    opts.l2_image_limit = a.l2_image;
    let model = crate::load(&a.model)?;
    let binding = if bind::inputs_path(&model)?.is_some() {
        let b = bind::bind(&model, &bind::BindOptions { num_data_inputs: a.num_data_inputs })?;
        check::training(&model, &b)?;
        Some(b)
    } else {
        if a.num_data_inputs.is_some() {
            return Err(Error::Usage(format!(
                "--num-data-inputs needs test data, but {} has no {}",
                model.dir.display(),
                bind::INPUTS_FILE
            )));
        }
        None
    };
    let plan = plan::plan(&model, &opts)?;
    let eo = super::EmitOptions { tolerance: a.tolerance, hex_files: a.hex_files, name: None };
    let project = super::generate(&model, binding.as_ref(), &plan, &eo)?;
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from("build").join(format!("{}-{}-{}", project.manifest.model, plan.platform.name, plan.default_mem))
    });
    Ok(Built { project, plan, out })
}

/// A short summary: files, bytes per level, where the weights went.
pub fn summary(b: &Built, out: &Path) -> String {
    let m = &b.project.manifest;
    let mut s = format!(
        "deploygen build: {} ({}) for {}, --default-mem {} -> {}\n  files: {} ({} B)\n",
        m.model,
        m.kind,
        m.platform,
        m.default_mem,
        out.display(),
        b.project.files.len(),
        thousands(b.project.bytes())
    );
    for l in Level::ALL {
        let lp = b.plan.level(l);
        s.push_str(&format!(
            "  {l}: arena {} B, static {} B, {} B of {} B used\n",
            thousands(lp.arena_bytes),
            thousands(lp.static_bytes),
            thousands(lp.needed_bytes),
            thousands(lp.capacity)
        ));
    }
    let mut per = vec![];
    for sup in [Supply::Baked, Supply::L3Hex, Supply::L3Staged] {
        let ws: Vec<&plan::WeightPlan> = b.plan.weights.iter().filter(|w| w.supply == sup).collect();
        if !ws.is_empty() {
            per.push(format!("{} {} ({} B)", ws.len(), sup.name(), thousands(ws.iter().map(|w| w.bytes).sum())));
        }
    }
    s.push_str(&format!("  weights: {}\n", if per.is_empty() { "none".into() } else { per.join(", ") }));
    if m.l3_image_bytes > 0 {
        s.push_str(&format!(
            "  L3 image: {} ({} B)\n",
            m.l3_image.as_deref().unwrap_or("hex/<n>.hex"),
            thousands(m.l3_image_bytes)
        ));
    }
    s.push_str(&format!(
        "  compares: {} loss(es) + {} tensor(s) = {} values (tolerance {})\n",
        m.loss_refs,
        m.compared.len(),
        m.expected_compared,
        m.tolerance
    ));
    for n in &m.not_compared {
        s.push_str(&format!("  not compared: {}: {}\n", n.name, n.why));
    }
    s
}

/// Run `deploygen build`. Returns false when `--check` found differences.
pub fn run(a: &BuildArgs) -> Result<bool> {
    let b = generate(a)?;
    if let Some(dir) = &a.check {
        if !dir.is_dir() {
            return Err(Error::Usage(format!("--check {}: not a folder", dir.display())));
        }
        let diff = b.project.check(dir)?;
        if diff.is_empty() {
            println!("deploygen build --check: {} matches ({} files)", dir.display(), b.project.files.len());
            return Ok(true);
        }
        print!("{diff}");
        return Ok(false);
    }
    b.project.write(&b.out, a.force)?;
    print!("{}", summary(&b, &b.out));
    Ok(true)
}
