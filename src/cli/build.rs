//! `deploygen build`: the pipeline, then the project written atomically
//! (or, with `--check DIR`, compared with DIR).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::emit::{EmitOptions, Project};
use crate::error::{Error, Result};
use crate::pipeline::{self, Timing};
use crate::plan::{self, thousands, Level, Supply};

#[derive(clap::Args, Clone, Debug, Default)]
pub struct Args {
    /// A model folder (network.onnx, inputs.npz, …) or one .onnx file.
    pub model: PathBuf,
    /// Target platform (GAP9, Siracusa, host).
    #[arg(long)]
    pub platform: String,
    /// Where graph I/O, weights and buffers live unless a rule moves them.
    #[arg(long, value_name = "LEVEL")]
    pub default_mem: Option<String>,
    /// L1 capacity in bytes (overrides the platform's).
    #[arg(long, value_name = "BYTES")]
    pub l1: Option<u64>,
    /// L2 capacity in bytes (overrides the platform's).
    #[arg(long, value_name = "BYTES")]
    pub l2: Option<u64>,
    /// L3 capacity in bytes (overrides the platform's).
    #[arg(long, value_name = "BYTES")]
    pub l3: Option<u64>,
    /// Most bytes of weights baked into the L2 image; larger weights are
    /// l3-staged (default: the platform's L2 image limit).
    #[arg(long = "l2-image", value_name = "BYTES")]
    pub l2_image: Option<u64>,
    /// Where the harness keeps its test data and references, L2 or L3
    /// (default: L2, moved to L3 when L2 is short).
    #[arg(long = "test-data", value_name = "LEVEL")]
    pub test_data: Option<String>,
    /// Absolute comparison tolerance (default: 1e-3).
    #[arg(long, value_name = "T")]
    pub tolerance: Option<f32>,
    /// Number of per-mini-batch data inputs (only where the data cannot tell).
    #[arg(long, value_name = "N")]
    pub num_data_inputs: Option<usize>,
    /// Output folder (default: build/<model>-<platform>-<level>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace an existing output folder.
    #[arg(long)]
    pub force: bool,
    /// Generate in memory and diff against this project folder; write nothing.
    #[arg(long, value_name = "DIR")]
    pub check: Option<PathBuf>,
    /// One hex/<n>.hex per L3 buffer instead of the packed L3 image.
    #[arg(long)]
    pub hex_files: bool,
    /// Print each stage's wall time (import, lower, bind, check, plan, emit, write).
    #[arg(long)]
    pub timings: bool,
    #[command(flatten)]
    pub train: super::train::TrainArgs,
    /// Keep today's untiled plan: whole-operand copies around each kernel.
    #[arg(long)]
    pub no_tiling: bool,
}

/// What a build produced.
pub struct Built {
    pub project: Project,
    pub plan: plan::Plan,
    pub out: PathBuf,
    pub timings: Vec<Timing>,
}

/// The pipeline's options from the flags.
fn options(a: &Args) -> Result<pipeline::Options> {
    super::check_tolerance(a.tolerance)?;
    let mut plan = super::plan_options(Some(&a.platform), a.default_mem.as_deref(), [a.l1, a.l2, a.l3])?
        .expect("a platform is given");
    plan.l2_image_limit = a.l2_image;
    plan.test_data = a.test_data.as_deref().map(super::test_data_level).transpose()?;
    plan.tiling = !a.no_tiling;
    let mut o = pipeline::Options::new(plan);
    o.bind.num_data_inputs = a.num_data_inputs;
    o.train = a.train.request();
    o.emit = EmitOptions { tolerance: a.tolerance, hex_files: a.hex_files, name: None };
    Ok(o)
}

/// Generate the project in memory (every error is a stage's, before
/// anything is written).
pub fn generate(a: &Args) -> Result<Built> {
    let g = pipeline::generate(&a.model, &options(a)?)?;
    let out = a.out.clone().unwrap_or_else(|| {
        let m = &g.project.manifest;
        PathBuf::from("build").join(format!("{}-{}-{}", m.model, g.plan.platform.name, g.plan.default_mem))
    });
    Ok(Built { project: g.project, plan: g.plan, out, timings: g.timings })
}

/// A short summary: files, bytes per level, where the weights went.
pub fn summary(b: &Built, out: &Path) -> String {
    let m = &b.project.manifest;
    let mut s = format!(
        "deploygen build: {} ({}) for {}, default memory {} -> {}\n  files: {} ({} B)\n",
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
    s.push_str(&format!("  weights: {}\n", supplies(&b.plan)));
    if m.l3_image_bytes > 0 {
        s.push_str(&format!(
            "  L3 image: {} ({} B)\n",
            m.l3_image.as_deref().unwrap_or("hex/<n>.hex"),
            thousands(m.l3_image_bytes)
        ));
    }
    if let Some(t) = &m.test_data {
        s.push_str(&format!(
            "  test data: {} B in {}{}\n",
            thousands(t.bytes),
            t.level,
            match &t.image {
                Some(f) => format!(" ({f}, streamed by the harness)"),
                None => " (static arrays)".to_string(),
            }
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

/// `3 baked (1,234 B), 2 l3-hex (…)`, or `none`.
fn supplies(p: &plan::Plan) -> String {
    let mut per = vec![];
    for sup in [Supply::Baked, Supply::L3Hex, Supply::L3Staged] {
        let ws: Vec<&plan::WeightPlan> = p.weights.iter().filter(|w| w.supply == sup).collect();
        if !ws.is_empty() {
            per.push(format!("{} {} ({} B)", ws.len(), sup.name(), thousands(ws.iter().map(|w| w.bytes).sum())));
        }
    }
    if per.is_empty() {
        "none".into()
    } else {
        per.join(", ")
    }
}

/// `  timings: import 1.2 ms, lower 0.3 ms, …, total 4.5 ms, peak RSS 9876 kB`.
fn timings(t: &[Timing]) -> String {
    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
    let parts: Vec<String> = t.iter().map(|t| format!("{} {}", t.stage, ms(t.time))).collect();
    let total: Duration = t.iter().map(|t| t.time).sum();
    let rss = peak_rss_kb().map(|kb| format!(", peak RSS {kb} kB")).unwrap_or_default();
    format!("  timings: {}, total {}{rss}\n", parts.join(", "), ms(total))
}

/// This process's peak resident memory (`VmHWM`), where the system says.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Run `deploygen build`. Returns false when `--check` found differences.
pub fn run(a: Args) -> Result<bool> {
    if let Some(dir) = &a.check {
        if !dir.is_dir() {
            return Err(Error::Usage(format!("--check {}: not a folder", dir.display())));
        }
    }
    let mut b = generate(&a)?;
    if let Some(dir) = &a.check {
        let diff = b.project.check(dir)?;
        if diff.is_empty() {
            println!("deploygen build --check: {} matches ({} files)", dir.display(), b.project.files.len());
            return Ok(true);
        }
        print!("{diff}");
        return Ok(false);
    }
    let t = Instant::now();
    b.project.write(&b.out, a.force)?;
    b.timings.push(Timing { stage: "write", time: t.elapsed() });
    print!("{}", summary(&b, &b.out));
    if a.timings {
        print!("{}", timings(&b.timings));
    }
    Ok(true)
}
