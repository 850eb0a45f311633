//! `deploygen report`: per model × platform × level, what users feel —
//! generation time and peak memory, how tightly each level's arena is
//! packed, where the weights went, how many constant bytes the deployment
//! carries against the model's own weights, how much source it is, and how
//! fast one generated step runs on the host next to onnxruntime.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{run_case, Case, Kind, Outcome, Stage, StageError};
use crate::error::Error;
use crate::plan::{Level, PlanOptions};
use crate::{ir, pipeline};

/// The measurements of one case.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub model: String,
    pub platform: String,
    pub default_mem: String,
    /// Set when the case could not be generated (the planner's error).
    pub error: Option<String>,
    /// Median wall time of import → lower → bind → check → plan → emit.
    pub generate_ms: Option<f64>,
    /// Peak resident memory of one `deploygen build` process.
    pub peak_rss_kb: Option<u64>,
    /// Per level: (arena bytes, lower bound bytes, efficiency).
    pub levels: BTreeMap<String, (u64, u64, f64)>,
    /// Weight bytes per supply mode.
    pub supply: BTreeMap<String, u64>,
    /// Bytes of weights the deployment carries (each weight once).
    pub deployed_constant_bytes: u64,
    /// Bytes of the model's weights: initializers, plus parameters fed as
    /// graph inputs (training artifacts).
    pub model_weight_bytes: u64,
    pub constants_ratio: Option<f64>,
    /// Generated sources (runtime copy excluded) and the whole project.
    pub source_bytes: u64,
    pub project_bytes: u64,
    /// One training step (or inference) of the generated code on the host.
    pub step_ms: Option<f64>,
    pub ort_step_ms: Option<f64>,
    pub ratio_to_ort: Option<f64>,
    /// L1 + L2 + L3 bytes of the deployment (test data excluded), the ONNX
    /// file's bytes, and their ratio.
    pub footprint_bytes: u64,
    pub onnx_bytes: u64,
    pub footprint_ratio: Option<f64>,
    /// The largest L2 buffer an L3 operand passes through.
    pub largest_l2_staging: u64,
    /// Bytes moved per step: L3<->L2 and L2<->L1 (both directions).
    pub moved_l3_l2: u64,
    pub moved_l2_l1: u64,
}

/// What to measure.
pub struct Options {
    pub runs: usize,
    /// Run the generated project on the host for the step time.
    pub run_host: bool,
    /// The deploygen executable, for the peak-memory measurement.
    pub exe: Option<PathBuf>,
    /// onnxruntime step times: `{model: {"seconds": s}}` (tools/ort_step_time.py).
    pub ort: BTreeMap<String, f64>,
    /// Where the runtime archive is cached (`Case::cache`).
    pub cache: Option<PathBuf>,
}

/// Where `report` looks for onnxruntime's step times unless told.
pub const DEFAULT_ORT: &str = "models/ort_step_times.json";

/// The longest onnxruntime step time `report --ort` accepts: an hour for
/// one step of a model sized for a microcontroller is a broken
/// measurement, and would make every ratio 0.
pub const MAX_ORT_SECONDS: f64 = 3600.0;

/// onnxruntime's step times, `{model: {"seconds": s}}` (tools/ort_step_time.py).
/// The default file may be absent (the report says there are none); a
/// file named with `--ort` must exist; any file read must be a regular
/// file of that form with times above 0 and at most [`MAX_ORT_SECONDS`].
pub fn ort_times(path: &Path, named: bool) -> crate::Result<BTreeMap<String, f64>> {
    if !named && !path.exists() {
        return Ok(BTreeMap::new());
    }
    let bad = |what: String| Error::Usage(format!("{}: {what}", path.display()));
    let text = crate::limits::read_text(path, crate::limits::ORT_JSON, "an onnxruntime step-time file")?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON of onnxruntime step times: {e}")))?;
    let o = v.as_object().ok_or_else(|| bad("not a JSON object {model: {\"seconds\": s}}".into()))?;
    let mut out = BTreeMap::new();
    for (k, e) in o {
        let s = e
            .get("seconds")
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| bad(format!("\"{k}\" has no number \"seconds\"")))?;
        if !(s.is_finite() && s > 0.0 && s <= MAX_ORT_SECONDS) {
            return Err(bad(format!(
                "\"{k}\": seconds {s} is not a step time (a number above 0, at most {MAX_ORT_SECONDS} s)"
            )));
        }
        out.insert(k.clone(), s);
    }
    Ok(out)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Peak RSS (KiB) of one `deploygen build` child process, as it reports
/// it itself (`--timings`: its own high-water mark). The child's rusage is
/// no use here: Linux carries the spawning process's peak into it.
fn peak_rss(exe: &Path, model: &Path, platform: &str, level: &str) -> Option<u64> {
    let out = tempfile::tempdir().ok()?;
    let o = std::process::Command::new(exe)
        .args(["build", &model.display().to_string(), "--platform", platform, "--default-mem", level, "--force"])
        .arg("--timings")
        .arg("--out")
        .arg(out.path().join("p"))
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    let kb = text.split("peak RSS ").nth(1)?.split_whitespace().next()?;
    o.status.success().then(|| kb.parse().ok()).flatten()
}

fn weight_bytes(m: &ir::Model) -> u64 {
    let g = &m.graph;
    let params: usize = m
        .roles
        .params
        .iter()
        .filter_map(|p| g.id(&p.name))
        .filter(|&t| !g.initializers.contains(&t))
        .filter_map(|t| g.tensor(t).ty.bytes())
        .sum();
    (g.initializer_bytes() + params) as u64
}

/// One training step (or inference) in ms from the host run's BENCH line
/// (the host emulation counts nanoseconds).
fn step_ms(o: &Outcome, steps: u64) -> Option<f64> {
    let bench = o.bench.as_deref()?;
    let total: u64 = bench
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| k.ends_with("cycles"))
        .filter_map(|(_, v)| v.parse::<u64>().ok())
        .sum();
    Some(total as f64 / 1e6 / steps.max(1) as f64)
}

/// Measure one case.
pub fn measure(name: &str, path: &Path, opts: &PlanOptions, o: &Options) -> Row {
    let mut row = Row {
        model: name.to_string(),
        platform: opts.platform.name.clone(),
        default_mem: opts.default_mem.to_string(),
        error: None,
        generate_ms: None,
        peak_rss_kb: None,
        levels: BTreeMap::new(),
        supply: BTreeMap::new(),
        deployed_constant_bytes: 0,
        model_weight_bytes: 0,
        constants_ratio: None,
        source_bytes: 0,
        project_bytes: 0,
        step_ms: None,
        ort_step_ms: o.ort.get(name).map(|s| s * 1e3),
        ratio_to_ort: None,
        footprint_bytes: 0,
        onnx_bytes: 0,
        footprint_ratio: None,
        largest_l2_staging: 0,
        moved_l3_l2: 0,
        moved_l2_l1: 0,
    };
    let mut times = vec![];
    let mut last = None;
    for _ in 0..o.runs.max(1) {
        let t = Instant::now();
        match pipeline::generate(path, &pipeline::Options::new(opts.clone())) {
            Ok(g) => {
                times.push(t.elapsed().as_secs_f64() * 1e3);
                last = Some(g);
            }
            Err(e) => {
                row.error = Some(e.error.to_string().lines().next().unwrap_or_default().to_string());
                return row;
            }
        }
    }
    let g = last.expect("at least one run");
    row.generate_ms = Some(median(times));
    row.peak_rss_kb = o.exe.as_deref().and_then(|e| peak_rss(e, path, &row.platform, &row.default_mem));
    for l in Level::ALL {
        let lp = g.plan.level(l);
        row.levels.insert(l.to_string(), (lp.arena_bytes, lp.lower_bound_bytes, lp.efficiency));
    }
    for w in &g.plan.weights {
        *row.supply.entry(w.supply.name().to_string()).or_insert(0) += w.bytes;
    }
    row.deployed_constant_bytes = g.plan.weights.iter().map(|w| w.bytes).sum();
    row.footprint_bytes = g.plan.footprint();
    row.onnx_bytes = std::fs::metadata(&g.model.path).map_or(0, |m| m.len());
    row.footprint_ratio = (row.onnx_bytes > 0).then(|| row.footprint_bytes as f64 / row.onnx_bytes as f64);
    row.largest_l2_staging = g.plan.largest_l2_staging();
    let m = g.plan.traffic();
    row.moved_l3_l2 = m.l3_to_l2 + m.l2_to_l3;
    row.moved_l2_l1 = m.l2_to_l1 + m.l1_to_l2;
    row.model_weight_bytes = weight_bytes(&g.model);
    row.constants_ratio =
        (row.model_weight_bytes > 0).then(|| row.deployed_constant_bytes as f64 / row.model_weight_bytes as f64);
    for (p, data) in &g.project.files {
        row.project_bytes += data.len() as u64;
        if !p.starts_with("runtime") {
            row.source_bytes += data.len() as u64;
        }
    }
    if o.run_host && opts.platform.runs_here() {
        let kind = if g.model.roles.is_training() { Kind::Training } else { Kind::Inference };
        let mut case = Case::new(path, name, &row.platform, &row.default_mem, kind);
        case.timeout = Duration::from_secs(300);
        case.cache = o.cache.clone();
        let steps = g.project.manifest.steps.max(1);
        let gen = |_: &Case, out: &Path| -> std::result::Result<(), StageError> {
            g.project.write(out, true).map_err(StageError::at(Stage::Emit))
        };
        let outcome = run_case(&case, &gen);
        if outcome.passed() {
            row.step_ms = step_ms(&outcome, steps);
        } else {
            row.error = Some(format!("host run: {} {}", outcome.class(), outcome.message));
        }
    }
    row.ratio_to_ort = match (row.step_ms, row.ort_step_ms) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    row
}

fn kb(b: u64) -> String {
    format!("{:.1}", b as f64 / 1024.0)
}

/// The rows as a Markdown table (and notes on what is missing).
pub fn markdown(rows: &[Row]) -> String {
    let header = [
        "model",
        "platform",
        "level",
        "gen ms",
        "peak RSS MB",
        "L1 arena/lb/eff",
        "L2 arena/lb/eff",
        "L3 arena/lb/eff",
        "weights baked/l3-hex/l3-staged kB",
        "constants ÷ model weights",
        "footprint kB ÷ ONNX",
        "largest L2 staging kB",
        "moved/step L3↔L2 / L2↔L1 kB",
        "sources kB",
        "host step ms",
        "ORT step ms",
        "÷ ORT",
    ];
    let mut body: Vec<Vec<String>> = vec![];
    let f = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |x| format!("{x:.d$}"));
    for r in rows {
        if let (Some(e), None) = (&r.error, r.generate_ms) {
            body.push(vec![r.model.clone(), r.platform.clone(), r.default_mem.clone(), format!("not generated: {e}")]);
            continue;
        }
        let lvl = |l: &str| {
            r.levels.get(l).map_or("-".into(), |(a, b, e)| {
                if *a == 0 {
                    "-".into()
                } else {
                    format!("{} / {} / {e:.3}", kb(*a), kb(*b))
                }
            })
        };
        let s = |k: &str| kb(*r.supply.get(k).unwrap_or(&0));
        body.push(vec![
            r.model.clone(),
            r.platform.clone(),
            r.default_mem.clone(),
            f(r.generate_ms, 1),
            r.peak_rss_kb.map_or("-".into(), |k| format!("{:.1}", k as f64 / 1024.0)),
            lvl("L1"),
            lvl("L2"),
            lvl("L3"),
            format!("{} / {} / {}", s("baked"), s("l3-hex"), s("l3-staged")),
            f(r.constants_ratio, 2),
            format!("{} ÷ {} = {}", kb(r.footprint_bytes), kb(r.onnx_bytes), f(r.footprint_ratio, 2)),
            kb(r.largest_l2_staging),
            format!("{} / {}", kb(r.moved_l3_l2), kb(r.moved_l2_l1)),
            kb(r.source_bytes),
            f(r.step_ms, 3),
            f(r.ort_step_ms, 3),
            f(r.ratio_to_ort, 1),
        ]);
    }
    let mut out = crate::text::markdown(&header, &body);
    let mut missing: Vec<&str> =
        rows.iter().filter(|r| r.step_ms.is_some() && r.ort_step_ms.is_none()).map(|r| r.model.as_str()).collect();
    missing.dedup();
    if !missing.is_empty() {
        out.push_str(&format!(
            "\nonnxruntime step time missing for: {} (make it with tools/ort_step_time.py; it needs Python and onnxruntime)\n",
            missing.join(", ")
        ));
    }
    out.push_str("\narena/lb/eff: arena kB / lower bound kB (most bytes live at one step) / efficiency = lower bound ÷ arena. Host step: the generated project on the host platform (its 8-core team emulated, see runtime/README.md), one training step (forward, backward, optimizer) or one inference.\n");
    out
}

/// Error for a model path that names nothing.
pub fn no_models(paths: &[PathBuf]) -> Error {
    Error::Usage(format!(
        "no model found in {}",
        paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    ))
}
