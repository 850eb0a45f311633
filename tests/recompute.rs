//! Activation recompute (`plan::recompute`): the planner's choice lowers
//! the peak, the copies are ordinary nodes the arena verifier and the
//! harness check, and a copy that reads a stale input fails the case.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use deploygen::emit;
use deploygen::pipeline::{self, Data, Options};
use deploygen::plan::recompute::Mode;
use deploygen::plan::{Kind, Level, Placement, PlanOptions};
use deploygen::verify::{run_case, Case, Outcome, Stage, StageError};

fn have_gcc() -> bool {
    let ok = Command::new("gcc").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED: no gcc on this machine");
    }
    ok
}

fn options(platform: &str, mode: Mode) -> Options {
    let mut p = PlanOptions::named(platform, "L2", [None; 3]).unwrap();
    p.recompute = mode;
    let mut o = Options::new(p);
    o.data = Data::Required;
    o
}

fn planned(model: &str, platform: &str, mode: Mode) -> pipeline::Planned {
    pipeline::plan(&common::zoo(model), &options(platform, mode)).unwrap_or_else(|e| panic!("{model}: {}", e.error))
}

/// resnet8 on GAP9 at L2: training BatchNorm and Relu are remade from the
/// saved statistics before the backward reads; the L2 arena goes down, the
/// plan passes its own check, and the copies are in the generated code.
#[test]
fn resnet8_recomputes_and_its_l2_arena_goes_down() {
    let off = planned("resnet8", "GAP9", Mode::Off);
    let auto = planned("resnet8", "GAP9", Mode::Auto);
    assert!(off.plan.recompute.is_none());
    let r = auto.plan.recompute.as_ref().expect("a training model gets a recompute report");
    assert!(!r.chosen.is_empty(), "nothing recomputed: {:?}", r.rejected);
    assert!(r.peak_with < r.peak_without);
    assert!(r.cost_added * 100 <= r.cost_without * u64::from(r.budget_pct), "over the budget: {r:?}");
    let (a_off, a_auto) = (off.plan.level(Level::L2).arena_bytes, auto.plan.level(Level::L2).arena_bytes);
    eprintln!("resnet8 GAP9 L2 arena: off {a_off} B, auto {a_auto} B");
    assert!(a_auto < a_off, "auto {a_auto} B is not below off {a_off} B");
    auto.plan.verify().unwrap();
    // Training BatchNorm is never recomputed from fresh batch statistics.
    for c in r.chosen.iter().flat_map(|c| &c.nodes) {
        assert_ne!(c.op, "BatchNormInternal", "{c:?}");
    }
    let project = emit::generate(&auto.model, auto.binding.as_ref(), &auto.plan, &Default::default()).unwrap();
    let net: String = project
        .files
        .iter()
        .filter(|(p, _)| p.to_string_lossy().ends_with(".c"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    assert!(net.contains("recomputed: copy of 'BatchNormInternal_2'"), "no recomputed node in the code");
    assert!(net.contains("dg_batchnorm_saved_f32"));
}

/// An inference model and `--recompute off` leave the graph alone.
#[test]
fn off_and_inference_add_no_node() {
    let off = planned("resnet8", "GAP9", Mode::Off);
    let before = deploygen::pipeline::lowered(
        &common::zoo("resnet8"),
        &Default::default(),
        deploygen::import::UnknownAttrs::Refuse,
    )
    .unwrap();
    assert_eq!(off.model.graph.schedule.len(), before.graph.schedule.len());
}

fn case(model: &Path, mode: Mode) -> Case {
    let mut c = Case::new(model, "resnet8", "host", "L2", deploygen::verify::Kind::Training);
    c.timeout = Duration::from_secs(300);
    c.recompute = mode;
    c
}

/// The generation of a case with the plan patched by `fault` (which may
/// leave the plan failing its own check) before emission.
fn run_faulty(c: &Case, fault: impl Fn(&mut pipeline::Planned) + Sync) -> Outcome {
    let gen = |c: &Case, dir: &Path| -> Result<(), StageError> {
        let o = options(&c.platform, c.recompute);
        let mut p = pipeline::plan(&c.model, &o)?;
        fault(&mut p);
        let project = emit::generate(&p.model, p.binding.as_ref(), &p.plan, &o.emit).map_err(StageError::from)?;
        project.write(dir, true).map_err(StageError::from)
    };
    run_case(c, &gen)
}

/// The first recomputed BatchNorm copy's input 0 gets the bytes of a buffer
/// that is written after that input and before the copy runs: the copy
/// reads a stale value, as if it were scheduled after its input's buffer
/// was reused. The arena verifier names the overlap and the harness finds
/// wrong results; the unpatched plan passes.
#[test]
fn a_copy_reading_a_stale_input_gives_wrong_results() {
    if !have_gcc() {
        return;
    }
    let model = common::zoo("resnet8");
    let clean = run_faulty(&case(&model, Mode::Auto), |_| {});
    assert!(clean.passed(), "{}\n{}", clean.message, clean.output);

    let stale = |p: &mut pipeline::Planned| {
        let g = &p.model.graph;
        let (step, node) = g
            .nodes()
            .enumerate()
            .find(|(_, (_, n))| n.attr_str(deploygen::ops::RECOMPUTED).is_some() && n.op == "BatchNormalization")
            .map(|(i, (_, n))| (i as u32, n))
            .expect("a recomputed BatchNorm");
        let x = g.name_of(node.input(0).unwrap()).to_string();
        let bufs = &p.plan.buffers;
        let xb = bufs.iter().find(|b| b.name == x).expect("the copy's input has a buffer");
        let reuse = bufs
            .iter()
            .find(|b| {
                b.level == xb.level
                    && matches!(b.kind, Kind::Activation | Kind::Gradient)
                    && !b.persistent
                    && b.start > xb.start
                    && b.start < step
                    && b.size >= xb.size
                    && matches!(b.placement, Placement::Arena { .. })
            })
            .expect("a buffer written between the input and the copy");
        let (xi, at) = (xb.id, reuse.placement);
        p.plan.buffers[xi].placement = at;
        let e = p.plan.verify().expect_err("the arena verifier must see the overlap");
        assert!(e.contains("overlap"), "{e}");
    };
    let o = run_faulty(&case(&model, Mode::Auto), stale);
    assert_eq!(o.stage, Some(Stage::Result), "{}: {}\n{}", o.class(), o.message, o.output);
}
