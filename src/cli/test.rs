//! `deploygen test MODEL… --platform P --default-mem L`: generate, build,
//! run and judge every (model, platform, level), print a verdict per case
//! and a summary, write JUnit on request, and return the exit code
//! (0 all pass, 1 a wrong result, 2 a case not run).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use sha2::Digest;

use crate::error::{Error, Result};
use crate::import;
use crate::verify::runner::{self, RunOptions, Summary};
use crate::verify::status::{self, StatusTable};
use crate::verify::{cache, Case, Kind, StageError};

#[derive(Args, Debug, Clone)]
pub struct TestArgs {
    /// Model folders, `.onnx` files, or folders of model folders (`models/`).
    #[arg(required = true, value_name = "MODEL")]
    pub models: Vec<PathBuf>,
    /// Target platform (GAP9, Siracusa, host); repeat for several.
    #[arg(long, required = true, value_name = "P")]
    pub platform: Vec<String>,
    /// Default memory level (L2 or L3); repeat for several (default: L2, as for build).
    #[arg(long, value_name = "LEVEL", default_value = "L2")]
    pub default_mem: Vec<String>,
    #[command(flatten)]
    pub plan: super::plan_args::PlanArgs,
    /// Absolute tolerance of the comparison, atol (default: the model's, else 5e-4).
    #[arg(long, value_name = "T")]
    pub tolerance: Option<f32>,
    /// Relative tolerance of the comparison: a float value passes when
    /// |computed - ref| <= atol + rtol * |ref| (default: the model's, else 1e-3).
    #[arg(long, value_name = "R")]
    pub rtol: Option<f32>,
    /// Build with AddressSanitizer and UndefinedBehaviorSanitizer.
    #[arg(long)]
    pub sanitize: bool,
    /// Write a JUnit XML report to this file.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Cases run in parallel (default: all cores).
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<usize>,
    /// Also run cases the status table marks NOT_SUPPORTED_SKIP.
    #[arg(long)]
    pub force_run: bool,
    /// Report the real outcome of KNOWN_FAILURE_XFAIL cases.
    #[arg(long)]
    pub runxfail: bool,
    /// The status table (default: ./status.toml when present).
    #[arg(long, value_name = "FILE")]
    pub status: Option<PathBuf>,
    /// Time limit in seconds for building a case and, separately, for running it.
    #[arg(long, value_name = "SECS", default_value_t = 300.0)]
    pub timeout: f64,
    /// Keep each generated project folder and print where it is.
    #[arg(long)]
    pub keep: bool,
    /// Ignore (with a warning) attributes the operator's schema does not
    /// define, instead of refusing the node.
    #[arg(long)]
    pub allow_unknown_attributes: bool,
    /// For each case with wrong results, rebuild it dumping every node's
    /// outputs, compare them with onnxruntime's (tools/make_refs.py; needs
    /// Python with onnxruntime) and name the first node whose output differs.
    #[arg(long)]
    pub bisect: bool,
    /// The folder of make_refs.py for --bisect (default: $DEPLOYGEN_TOOLS,
    /// else deploygen's own tools/; never the working directory's).
    #[arg(long, value_name = "DIR")]
    pub tools: Option<PathBuf>,
    /// Run only the K-th of N slices of the case matrix (1 ≤ K ≤ N), as
    /// `cargo nextest --partition`: `K/N` or `count:K/N` deals the cases in
    /// order round-robin, `hash:K/N` by a hash of each case's key (stable
    /// when cases are added). Merge the slices' JUnit files with
    /// `deploygen merge-junit`.
    #[arg(long, value_name = "K/N")]
    pub partition: Option<String>,
    /// Where the compiled runtime is cached (default: $DEPLOYGEN_CACHE_DIR,
    /// else $XDG_CACHE_HOME/deploygen, else ~/.cache/deploygen).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    #[command(flatten)]
    pub train: super::train::TrainArgs,
}

/// A model folder's name in keys: the folder's name (for a `.onnx` file
/// not named like a model folder's main file, its stem).
fn model_name(path: &Path) -> String {
    crate::import::model_name(path).map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The model folders named by the arguments: a model folder or `.onnx`
/// file stands for itself, any other folder for the model folders in it.
pub fn expand_models(args: &[PathBuf], notes: &mut Vec<String>) -> Result<Vec<(String, PathBuf)>> {
    let mut out: Vec<(String, PathBuf)> = vec![];
    for a in args {
        let meta = std::fs::metadata(a).map_err(|e| Error::io(a, e))?;
        if !meta.is_dir() || import::locate(a).is_ok() {
            out.push((model_name(a), a.clone()));
            continue;
        }
        let mut subs: Vec<PathBuf> = std::fs::read_dir(a)
            .map_err(|e| Error::io(a, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        subs.sort();
        let mut found = 0;
        for s in subs {
            if import::locate(&s).is_ok() {
                out.push((model_name(&s), s));
                found += 1;
            } else {
                notes.push(format!("{}: no model file, not a case", s.display()));
            }
        }
        if found == 0 {
            return Err(Error::Usage(format!(
                "{} holds no model (network.onnx or training_model.onnx) and no model folders",
                a.display()
            )));
        }
    }
    let mut seen = std::collections::BTreeMap::new();
    for (name, path) in &out {
        if let Some(prev) = seen.insert(name.clone(), path.clone()) {
            return Err(Error::Usage(format!(
                "two models named '{name}' ({} and {}): cases and status-table keys are named by folder, so they would collide",
                prev.display(),
                path.display()
            )));
        }
    }
    Ok(out)
}

/// The cases of a `deploygen test` call: every model × platform × level.
pub fn cases(args: &TestArgs, notes: &mut Vec<String>) -> Result<Vec<Case>> {
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(Error::Usage(format!("--timeout {}: a time limit is a positive number of seconds", args.timeout)));
    }
    super::check_tolerance(args.tolerance, args.rtol)?;
    if args.jobs == Some(0) {
        return Err(Error::Usage("-j 0: at least one case runs at a time".into()));
    }
    let mut targets = vec![];
    for p in &args.platform {
        for l in &args.default_mem {
            let o = args.plan.options(p, Some(l))?;
            super::runnable(&o)?;
            targets.push((o.platform.name.clone(), o.default_mem.name().to_string()));
        }
    }
    targets.dedup();
    let models = expand_models(&args.models, notes)?;
    let mut out = vec![];
    for (name, path) in &models {
        let kind = Kind::detect(path);
        for (p, l) in &targets {
            let mut c = Case::new(path, name, p, l, kind);
            c.capacities = args.plan.capacities();
            c.l2_image = args.plan.l2_image;
            c.test_data = args.plan.test_data_level()?;
            c.tolerance = args.tolerance;
            c.rtol = args.rtol;
            c.sanitize = args.sanitize;
            c.timeout = Duration::from_secs_f64(args.timeout);
            c.keep = args.keep;
            c.unknown_attrs = super::unknown_attrs(args.allow_unknown_attributes);
            c.cache = args.cache_dir.clone().or_else(cache::default_dir);
            c.train = args.train.request();
            (c.recompute, c.recompute_budget) = args.plan.recompute()?;
            out.push(c);
        }
    }
    Ok(out)
}

/// How `--partition` deals cases to slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partition {
    /// The i-th case (from 0) goes to slice i mod N + 1.
    Count { k: usize, n: usize },
    /// A case goes to slice (SHA-256 of its key) mod N + 1.
    Hash { k: usize, n: usize },
}

impl Partition {
    pub fn parse(spec: &str) -> Result<Partition> {
        let bad = |why: &str| Error::Usage(format!("--partition {spec}: {why} (K/N, count:K/N or hash:K/N)"));
        let (how, kn) = match spec.split_once(':') {
            Some((how, kn)) => (how, kn),
            None => ("count", spec),
        };
        let (k, n) = kn.split_once('/').ok_or_else(|| bad("expected K/N"))?;
        let num = |v: &str| v.trim().parse::<usize>().map_err(|_| bad(&format!("'{v}' is not a whole number")));
        let (k, n) = (num(k)?, num(n)?);
        if n == 0 || k == 0 || k > n {
            return Err(bad("K and N must satisfy 1 <= K <= N"));
        }
        match how {
            "count" => Ok(Partition::Count { k, n }),
            "hash" => Ok(Partition::Hash { k, n }),
            other => Err(bad(&format!("unknown partition kind '{other}'"))),
        }
    }

    /// The cases of this slice, in their order.
    pub fn select(self, cases: Vec<Case>) -> Vec<Case> {
        let slice = |key: &str| {
            let h = sha2::Sha256::digest(key.as_bytes());
            u64::from_le_bytes(h[..8].try_into().expect("8 bytes"))
        };
        cases
            .into_iter()
            .enumerate()
            .filter(|(i, c)| match self {
                Partition::Count { k, n } => i % n + 1 == k,
                Partition::Hash { k, n } => (slice(&c.key()) % n as u64) as usize + 1 == k,
            })
            .map(|(_, c)| c)
            .collect()
    }
}

/// The status table: `--status FILE`, else `./status.toml` when present,
/// else the empty table (every case expected to pass).
pub fn status_table(arg: Option<&Path>) -> Result<StatusTable> {
    match arg {
        Some(p) => StatusTable::read(p),
        None if Path::new(status::FILE).is_file() => StatusTable::read(Path::new(status::FILE)),
        None => Ok(StatusTable::empty()),
    }
}

/// `deploygen test` with a given generation step; verdicts and the summary
/// go to `out`. Returns the exit code.
pub fn run_with<E>(
    args: &TestArgs,
    gen: &(dyn Fn(&Case, &Path) -> std::result::Result<(), E> + Sync),
    out: &mut (dyn Write + Send),
) -> Result<i32>
where
    E: Into<StageError>,
{
    let partition = args.partition.as_deref().map(Partition::parse).transpose()?;
    let table = status_table(args.status.as_deref())?;
    let mut notes = vec![];
    let mut cases = cases(args, &mut notes)?;
    if let (Some(p), Some(spec)) = (partition, &args.partition) {
        let all = cases.len();
        cases = p.select(cases);
        notes.push(format!("partition {spec}: {} of {all} case(s)", cases.len()));
    }
    let io = |e| Error::io("<stdout>", e);
    for n in &notes {
        writeln!(out, "note: {n}").map_err(io)?;
    }
    let source = match &table.path {
        Some(p) => format!("status table {} ({} entries)", p.display(), table.entries.len()),
        None => "no status table: every case is expected to pass".into(),
    };
    writeln!(out, "{} case(s), {source}", cases.len()).map_err(io)?;
    let mut opts = RunOptions { force_run: args.force_run, runxfail: args.runxfail, ..RunOptions::default() };
    if let Some(j) = args.jobs {
        opts.jobs = j;
    }
    let summary = runner::run(&cases, &table, gen, &opts, out);
    if args.bisect {
        if let Some(t) = &args.tools {
            crate::verify::tools::set_dir(t.clone());
        }
        bisect_wrong_results(&summary, gen, out)?;
    }
    finish(&summary, args, out)
}

/// `--bisect`: the first differing node of every case that computed wrong
/// values.
fn bisect_wrong_results<E>(
    summary: &Summary,
    gen: &(dyn Fn(&Case, &Path) -> std::result::Result<(), E> + Sync),
    out: &mut (dyn Write + Send),
) -> Result<()>
where
    E: Into<StageError>,
{
    let io = |e| Error::io("<stdout>", e);
    let wrong = summary
        .results
        .iter()
        .filter(|r| r.verdict == runner::Verdict::Failed && r.class() == crate::verify::Stage::Result.name());
    for r in wrong {
        eprintln!("deploygen test: bisecting {} (rebuilt with tensor dumps)", r.key);
        let found = crate::verify::bisect::bisect(&r.case, gen).unwrap_or_else(|e| format!("cannot bisect: {e}\n"));
        write!(out, "\nbisect {}:\n  {}", r.key, found.trim_end().replace('\n', "\n  ")).map_err(io)?;
        writeln!(out).map_err(io)?;
    }
    Ok(())
}

fn finish(summary: &Summary, args: &TestArgs, out: &mut (dyn Write + Send)) -> Result<i32> {
    let io = |e| Error::io("<stdout>", e);
    if summary.results.len() > 1 {
        writeln!(out, "\n{}", summary.table()).map_err(io)?;
    }
    writeln!(out, "{}", summary.totals()).map_err(io)?;
    if let Some(path) = &args.junit {
        crate::verify::junit::write(summary, path)?;
        writeln!(out, "JUnit report: {}", path.display()).map_err(io)?;
    }
    Ok(summary.exit_code())
}

/// `deploygen test`.
pub fn run(args: &TestArgs) -> Result<i32> {
    let mut stdout = super::output::Terminal(std::io::stdout());
    run_with(args, &crate::verify::generate_case, &mut stdout)
}

/// `deploygen merge-junit --out FILE PART…`.
#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// The JUnit files of the slices (`deploygen test --partition K/N --junit PART`).
    #[arg(required = true, value_name = "PART")]
    pub parts: Vec<PathBuf>,
    /// The merged report.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// Merge the slices' JUnit files; says how many cases the report holds.
pub fn merge_junit(a: &MergeArgs) -> Result<()> {
    let n = crate::verify::junit::merge(&a.parts, &a.out)?;
    println!("{}: {n} test case(s) from {} report(s)", a.out.display(), a.parts.len());
    Ok(())
}
