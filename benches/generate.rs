//! `cargo bench`: generation time, import → lower → bind → check → plan →
//! emit (the project rendered into memory, nothing written), per model for
//! GAP9.
//!
//! - `generate/<model>/GAP9-<level>`: the whole pipeline
//!   (`deploygen::pipeline::generate`, what `deploygen build` runs), for every zoo
//!   model in `models/` at L2 (the default `--default-mem`) and for the
//!   conformance models of `../shared/conformance` (CCT2_LP, CCT2_FT1) at
//!   L3, the level their Deeploy tests use.
//! - `stage/<model>/<stage>`: the same pipeline one stage at a time for the
//!   conformance models (`load` is import and lower; `bind` includes the
//!   training check), each stage fed the previous stages' results.
//!
//! Missing conformance models are not an error: a `SKIPPED:` line names
//! the folder. `cargo bench -- CCT2_LP` runs one model; `cargo test
//! --benches` runs every benchmark once, as a smoke test.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use deploygen::plan::{Level, PlanOptions, Platform};
use deploygen::{bind, check, emit, ir, pipeline, plan};

const PLATFORM: &str = "GAP9";
const CONFORMANCE: &[&str] = &["CCT2_LP", "CCT2_FT1"];

/// A model to time: name, folder, level.
struct Case {
    name: String,
    path: PathBuf,
    level: Level,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cases() -> Vec<Case> {
    let mut out = vec![];
    let mut zoo: Vec<PathBuf> = std::fs::read_dir(root().join("models"))
        .expect("models/ is readable")
        .map(|e| e.expect("models/ entry").path())
        .filter(|p| p.join("network.onnx").is_file() || p.join("training_model.onnx").is_file())
        .collect();
    zoo.sort();
    for path in zoo {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        out.push(Case { name, path, level: Level::L2 });
    }
    let conf = root().join("../shared/conformance");
    for name in CONFORMANCE {
        let path = conf.join(name);
        if path.is_dir() {
            out.push(Case { name: name.to_string(), path, level: Level::L3 });
        } else {
            println!("SKIPPED: generate/{name}: {} is not next to this checkout", path.display());
        }
    }
    out
}

fn options(level: Level) -> PlanOptions {
    PlanOptions::new(Platform::by_name(PLATFORM).expect("GAP9 is a platform"), level)
}

/// The binding of the model's test data, checked for training (the bind
/// stage of [`pipeline::generate`]); `None` without `inputs.npz`.
fn bind(model: &ir::Model) -> deploygen::Result<Option<bind::Binding>> {
    if bind::inputs_path(model)?.is_none() {
        return Ok(None);
    }
    let b = bind::bind(model, &bind::BindOptions::default())?;
    check::training(model, &b)?;
    Ok(Some(b))
}

/// The whole pipeline, as `deploygen build` runs it; the project stays in
/// memory.
fn generate(path: &Path, opts: &PlanOptions) -> Result<pipeline::Generated, pipeline::StageError> {
    pipeline::generate(path, &pipeline::Options::new(opts.clone()))
}

fn benches(c: &mut Criterion) {
    let cases = cases();
    let mut g = c.benchmark_group("generate");
    for case in &cases {
        let opts = options(case.level);
        // A model that does not generate is a bug the tests report; here it
        // is named and left out rather than timed as a fast failure.
        if let Err(e) = generate(&case.path, &opts) {
            println!("SKIPPED: generate/{}: does not generate ({}): {}", case.name, e.stage, e.error);
            continue;
        }
        let id = format!("{}/{PLATFORM}-{}", case.name, case.level);
        g.bench_function(id, |b| b.iter(|| generate(black_box(&case.path), &opts).expect("generates")));
    }
    g.finish();

    let mut g = c.benchmark_group("stage");
    for case in cases.iter().filter(|c| CONFORMANCE.contains(&c.name.as_str())) {
        let opts = options(case.level);
        let Ok(model) = deploygen::load(&case.path) else { continue };
        let Ok(binding) = bind(&model) else { continue };
        // The plan counts the test data the project carries, as in the pipeline.
        let opts = pipeline::plan_options(&model, binding.as_ref(), &opts);
        let Ok(plan) = plan::plan(&model, &opts) else { continue };
        let n = &case.name;
        g.bench_function(format!("{n}/load"), |b| b.iter(|| deploygen::load(black_box(&case.path)).expect("loads")));
        g.bench_function(format!("{n}/bind"), |b| b.iter(|| bind(black_box(&model)).expect("binds")));
        g.bench_function(format!("{n}/plan"), |b| b.iter(|| plan::plan(black_box(&model), &opts).expect("plans")));
        g.bench_function(format!("{n}/emit"), |b| {
            b.iter(|| {
                emit::generate(black_box(&model), binding.as_ref(), &plan, &emit::EmitOptions::default())
                    .expect("emits")
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = generate_benches;
    // A generation takes 2–100 ms: 20 samples over ~3 s per model keep the
    // whole run near two minutes on a 2-core machine.
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(generate_benches);
