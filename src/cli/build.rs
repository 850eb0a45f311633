//! `deploygen build`: the pipeline, then the project written atomically
//! (or, with `--check DIR`, compared with DIR).

use std::path::{Component, Path, PathBuf};
use std::sync::{mpsc, Mutex};
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
    /// Where graph I/O, weights and buffers live unless a rule moves them
    /// (L2 or L3; default: L2).
    #[arg(long, value_name = "LEVEL")]
    pub default_mem: Option<String>,
    #[command(flatten)]
    pub plan: super::plan_args::PlanArgs,
    /// Absolute comparison tolerance, atol (default: the model's
    /// meta_tolerance, else 5e-4).
    #[arg(long, value_name = "T")]
    pub tolerance: Option<f32>,
    /// Relative comparison tolerance, rtol: a float value passes when
    /// |computed - ref| <= atol + rtol * |ref| (default: the model's
    /// meta_rtol, else 1e-3).
    #[arg(long, value_name = "R")]
    pub rtol: Option<f32>,
    /// Number of per-mini-batch data inputs (only where the data cannot tell).
    #[arg(long, value_name = "N")]
    pub num_data_inputs: Option<usize>,
    /// Output folder (default: build/<model>-<platform>-<level>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace an existing output folder, if deploygen made it (its
    /// deploygen.json) or it is empty.
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
    /// Ignore (with a warning) attributes the operator's schema does not
    /// define, instead of refusing the node.
    #[arg(long)]
    pub allow_unknown_attributes: bool,
    #[command(flatten)]
    pub train: super::train::TrainArgs,
}

/// What a build produced.
pub struct Built {
    pub project: Project,
    pub plan: plan::Plan,
    pub out: PathBuf,
    pub timings: Vec<Timing>,
    /// What the user should know before running the project: what the
    /// stages noted about the model (attributes read leniently, declared
    /// shapes kept), a missing test data, for stderr.
    pub warnings: Vec<String>,
    /// Set when the test data holds no reference: the one message saying
    /// so and naming the command that makes them (`bind::no_references`).
    pub no_references: Option<String>,
}

/// The stage `build` is in, for [`Watch`].
static STAGE: Mutex<&str> = Mutex::new("start");

fn note_stage(stage: &'static str) {
    *STAGE.lock().unwrap_or_else(|e| e.into_inner()) = stage;
}

/// Says on stderr what `build` is doing once it has taken more than a
/// second (a large model), and again at each later stage.
struct Watch {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    fn start(model: &Path) -> Watch {
        Watch::with(model, Duration::from_secs(1), |line| eprintln!("{line}"))
    }

    fn with(model: &Path, after: Duration, say: impl Fn(String) + Send + 'static) -> Watch {
        let (tx, rx) = mpsc::channel::<()>();
        let model = model.display().to_string();
        let thread = std::thread::spawn(move || {
            let t = Instant::now();
            let mut said = "";
            while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_millis(200)) {
                let stage = *STAGE.lock().unwrap_or_else(|e| e.into_inner());
                if t.elapsed() >= after && stage != said {
                    say(format!("deploygen build: {model}: {stage} ({:.1} s so far)", t.elapsed().as_secs_f64()));
                    said = stage;
                }
            }
        });
        Watch { stop: Some(tx), thread: Some(thread) }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The pipeline's options from the flags.
fn options(a: &Args) -> Result<pipeline::Options> {
    super::check_tolerance(a.tolerance, a.rtol)?;
    let plan = a.plan.options(&a.platform, a.default_mem.as_deref())?;
    super::runnable(&plan)?;
    let mut o = pipeline::Options::new(plan);
    o.on_stage = Some(note_stage);
    o.unknown_attrs = super::unknown_attrs(a.allow_unknown_attributes);
    o.bind.num_data_inputs = a.num_data_inputs;
    o.train = a.train.request();
    o.emit = EmitOptions { tolerance: a.tolerance, rtol: a.rtol, hex_files: a.hex_files, name: None };
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
    let mut warnings: Vec<String> =
        g.model.graph.warnings.iter().chain(g.model.optimizer.iter().flat_map(|o| &o.warnings)).cloned().collect();
    for p in &g.model.pinned {
        warnings.push(format!(
            "graph input '{}' decides shapes or constants, so it is not an input of the generated code: the code \
             computes for its value {} from inputs.npz '{}' only",
            p.name, p.value, p.keys[0]
        ));
    }
    let mut no_references = None;
    if let Some(b) = &g.binding {
        warnings.extend(b.warnings.iter().cloned());
        if g.project.manifest.compares_nothing() {
            let msg = crate::bind::no_references(&g.model, b);
            if !warnings.contains(&msg) {
                warnings.push(msg.clone());
            }
            no_references = Some(msg);
        }
    }
    if g.binding.is_none() {
        warnings.push(format!(
            "{} has no test data (inputs.npz, outputs.npz): the project builds, but its run compares nothing and \
             fails",
            a.model.display()
        ));
    }
    Ok(Built { project: g.project, plan: g.plan, out, timings: g.timings, warnings, no_references })
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
        "  compares: {} loss(es) + {} tensor(s) = {} values (tolerance {} + {} x |ref|; integers exactly)\n",
        m.loss_refs,
        m.compared.len(),
        m.expected_compared,
        m.tolerance,
        m.rtol
    ));
    match &b.no_references {
        // one line, not one per missing key
        Some(msg) => s.push_str(&format!("  not compared: {msg}\n")),
        None => {
            for n in &m.not_compared {
                s.push_str(&format!("  not compared: {}: {}\n", n.name, n.why));
            }
        }
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

/// `--out` keeps clear of the model and its data: it is not the model's
/// folder (the folder given, or the one holding the `.onnx` file), not a
/// folder around it, and not a folder inside a model folder — the folder
/// given, or the one holding the `.onnx` file when that is a model folder
/// (the file is its main graph, `network.onnx` or `training_model.onnx`,
/// or the folder holds one).
fn apart_from_model(model: &Path, out: &Path) -> Result<()> {
    let is_folder = model.is_dir();
    let folder =
        if is_folder { model } else { model.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")) };
    let model_folder = is_folder || crate::import::is_main_file(model) || crate::import::locate(folder).is_ok();
    let (Some(real_folder), Some(target)) = (resolved(folder), resolved(out)) else { return Ok(()) };
    let why = if target == real_folder {
        "is the model folder"
    } else if real_folder.starts_with(&target) {
        "holds the model folder"
    } else if model_folder && target.starts_with(&real_folder) {
        "is inside the model folder"
    } else {
        return Ok(());
    };
    Err(Error::Usage(format!(
        "--out {} {why} {}: deploygen never writes over, around or into a model and its data; choose another --out",
        out.display(),
        folder.display()
    )))
}

/// `p` absolute, with symbolic links, `.` and `..` resolved, also when it
/// does not exist yet: its deepest existing ancestor made canonical, the
/// rest applied to it.
fn resolved(p: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(p).ok()?;
    let parts: Vec<Component> = abs.components().collect();
    (1..=parts.len()).rev().find_map(|n| {
        let mut r = parts[..n].iter().collect::<PathBuf>().canonicalize().ok()?;
        for c in &parts[n..] {
            match c {
                Component::ParentDir => {
                    r.pop();
                }
                Component::Normal(s) => r.push(s),
                _ => {}
            }
        }
        Some(r)
    })
}

/// Run `deploygen build`. Returns false when `--check` found differences.
pub fn run(a: Args) -> Result<bool> {
    if let Some(dir) = &a.check {
        if !dir.is_dir() {
            return Err(Error::Usage(format!("--check {}: not a folder", dir.display())));
        }
    }
    let watch = Watch::start(&a.model);
    let mut b = generate(&a)?;
    for w in &b.warnings {
        eprintln!("warning: {}", crate::escape::terminal(w));
    }
    if let Some(dir) = &a.check {
        let diff = b.project.check(dir)?;
        if diff.is_empty() {
            println!("deploygen build --check: {} matches ({} files)", dir.display(), b.project.files.len());
            return Ok(true);
        }
        print!("{diff}");
        return Ok(false);
    }
    apart_from_model(&a.model, &b.out)?;
    let t = Instant::now();
    note_stage("write");
    b.project.write(&b.out, a.force)?;
    b.timings.push(Timing { stage: "write", time: t.elapsed() });
    drop(watch);
    print!("{}", crate::escape::terminal(&summary(&b, &b.out)));
    if a.timings {
        print!("{}", timings(&b.timings));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Quiet for a quick build; past the delay, one line per stage.
    #[test]
    fn a_long_build_says_which_stage_it_is_in() {
        let lines = Arc::new(Mutex::new(vec![]));
        let sink = Arc::clone(&lines);
        note_stage("import");
        let w = Watch::with(Path::new("big"), Duration::from_millis(1000), move |l| sink.lock().unwrap().push(l));
        // The watch looks every 200 ms: it has looked twice by now.
        std::thread::sleep(Duration::from_millis(500));
        assert!(lines.lock().unwrap().is_empty(), "nothing before the delay");
        std::thread::sleep(Duration::from_millis(1000));
        note_stage("emit");
        std::thread::sleep(Duration::from_millis(600));
        drop(w);
        let l = lines.lock().unwrap().clone();
        assert_eq!(l.len(), 2, "{l:?}");
        assert!(l[0].starts_with("deploygen build: big: import ("), "{l:?}");
        assert!(l[1].starts_with("deploygen build: big: emit ("), "{l:?}");
    }
}
