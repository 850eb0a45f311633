//! Memory planning: platforms as data, levels and supply with reasons,
//! aliasing, lifetimes, staging, offsets checked by the independent
//! verifier, capacity errors with numbers, and the inspect output.

use crate::common;

use std::path::PathBuf;

use crate::common::*;
use assert_cmd::Command;
use deploygen::diag::Hint;
use deploygen::ir::Model;
use deploygen::plan::{self, BufId, Kind, Level, Placement, Plan, PlanOptions, Platform, Supply};
use deploygen::Error;
use predicates::prelude::*;

fn load(name: &str) -> Model {
    deploygen::load(&zoo(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn opts(platform: &str, level: Level) -> PlanOptions {
    PlanOptions::new(Platform::by_name(platform).unwrap(), level)
}

fn plan_of(m: &Model, platform: &str, level: Level) -> Plan {
    plan::plan(m, &opts(platform, level)).unwrap_or_else(|e| panic!("{platform} {level}: {e}"))
}

fn buffer<'a>(p: &'a Plan, name: &str) -> &'a plan::Buffer {
    p.buffers
        .iter()
        .find(|b| b.name == name || b.aliases.iter().any(|a| a.tensor == name))
        .unwrap_or_else(|| panic!("no buffer holds '{name}'"))
}

/// Every model folder in the zoo, plus the conformance models next to the
/// checkout when they are there.
fn all_models() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("models"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("network.onnx").is_file() || p.join("training_model.onnx").is_file())
        .collect();
    v.sort();
    v.extend(["CCT2_LP", "CCT2_FT1"].iter().filter_map(|n| conformance("plan: all_models", n)));
    v
}

// ---------------------------------------------------------------- platforms

#[test]
fn platform_descriptors_are_data() {
    let all = Platform::all();
    let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["GAP9", "Siracusa", "host"]);
    for p in &all {
        p.validate().unwrap();
        assert!(p.alignment.is_power_of_two());
    }
    let gap9 = Platform::by_name("gap9").unwrap();
    assert_eq!(gap9.controller_core_id, 8);
    assert_eq!(gap9.cluster_cores, 8);
    assert_eq!(gap9.capacity(Level::L1), 128 * 1024);
    assert_eq!(gap9.capacity(Level::L2), 0x190000);
    assert!(gap9.capacity(Level::L3) >= 8 << 20);
    assert_eq!(gap9.level(Level::L2).window, Some([0x1C00_0000, 0x1C19_0000]));
    // Stacks are reserved explicitly, as main.c asks for them: the
    // controller's, core 0's and 7 more workers' in L1.
    let l1: Vec<(&str, u64)> = gap9.level(Level::L1).reserved.iter().map(|r| (r.name.as_str(), r.bytes)).collect();
    let s = gap9.stacks();
    assert!(l1.iter().any(|(n, b)| n.contains("controller") && *b == s.controller), "{l1:?}");
    assert!(l1.iter().any(|(n, b)| n.contains("7 worker") && *b == 7 * s.worker), "{l1:?}");

    let sir = Platform::by_name("Siracusa").unwrap();
    assert_eq!(sir.controller_core_id, 0);
    assert_eq!(sir.capacity(Level::L1), 256 * 1024);
    assert_eq!(sir.capacity(Level::L2), 2_000_000);

    let host = Platform::by_name("host").unwrap();
    assert!(host.cores_configurable);

    let o = gap9.clone().with_capacity(Level::L2, 1_000_000);
    assert_eq!(o.capacity(Level::L2), 1_000_000);
    assert_eq!(o.level(Level::L2).window, Some([0x1C00_0000, 0x1C00_0000 + 1_000_000]));
    assert_eq!(o.budget(Level::L2), 1_000_000 - gap9.level(Level::L2).reserved_bytes());

    match Platform::by_name("gap8") {
        Err(Error::Usage(m)) => assert!(m.contains("GAP9, Siracusa, host"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn flags_resolve_to_options() {
    use deploygen::cli::plan_args::PlanArgs;
    let flags = PlanArgs { l1: Some(128_000), ..Default::default() };
    let o = flags.options("siracusa", Some("l3")).unwrap();
    assert_eq!(o.platform.name, "Siracusa");
    assert_eq!(o.default_mem, Level::L3);
    assert_eq!(o.platform.capacity(Level::L1), 128_000);
    assert!(o.tiling);
    // L2 by default.
    let none = PlanArgs::default();
    assert_eq!(none.options("GAP9", None).unwrap().default_mem, Level::L2);
    assert!(none.given().is_empty());
    assert_eq!(PlanArgs { l2: Some(1), no_tiling: true, ..Default::default() }.given(), ["--l2", "--no-tiling"]);
    assert!(!PlanArgs { no_tiling: true, ..Default::default() }.options("GAP9", None).unwrap().tiling);
    assert!(matches!(none.options("GAP9", Some("L1")), Err(Error::Usage(_))));
    assert!(matches!(none.options("GAP9", Some("fast")), Err(Error::Usage(_))));
    let bad = PlanArgs { test_data: Some("L1".into()), ..Default::default() };
    assert!(matches!(bad.options("GAP9", None), Err(Error::Usage(_))));
}

// ------------------------------------------------------------------ matrix

/// Every zoo model and both conformance models × {GAP9, Siracusa} × {L2,
/// L3}: a plan that passes the verifier with every arena at efficiency
/// ≥ 0.98, or a capacity error with numbers.
#[test]
fn every_model_plans_on_both_chips_at_both_levels() {
    let models = all_models();
    assert!(models.len() >= 9, "zoo missing? {models:?}");
    let mut table = String::new();
    for path in &models {
        let m = deploygen::load(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        for platform in ["GAP9", "Siracusa"] {
            for level in [Level::L2, Level::L3] {
                match plan::plan(&m, &opts(platform, level)) {
                    Ok(p) => {
                        p.verify().unwrap_or_else(|e| panic!("{name} {platform} {level}: {e}"));
                        for l in Level::ALL {
                            let lp = p.level(l);
                            assert!(lp.fits && lp.needed_bytes <= lp.capacity, "{name} {platform} {level} {l}");
                            assert!(lp.arena_bytes >= lp.lower_bound_bytes);
                            assert!(
                                lp.efficiency >= 0.98 && lp.transient_efficiency >= 0.98,
                                "{name} {platform} {level}: {l} efficiency {:.4} (transient {:.4})",
                                lp.efficiency,
                                lp.transient_efficiency
                            );
                        }
                        let f = |l| {
                            let lp = p.level(l);
                            format!("{l} {}/{} {:.4}", lp.arena_bytes, lp.lower_bound_bytes, lp.efficiency)
                        };
                        table += &format!(
                            "{name:16} {platform:8} {level}  {}  {}  {}\n",
                            f(Level::L1),
                            f(Level::L2),
                            f(Level::L3)
                        );
                    }
                    Err(Error::Capacity { needed, available, message, .. }) => {
                        assert!(needed > available, "{message}");
                        assert!(message.contains("arena") && message.contains("stacks/reserved"), "{message}");
                        table += &format!(
                            "{name:16} {platform:8} {level}  capacity error: {}\n",
                            message.lines().next().unwrap()
                        );
                    }
                    Err(e) => panic!("{name} {platform} {level}: {e}"),
                }
            }
        }
    }
    println!("{table}");
}

#[test]
fn plans_are_deterministic() {
    let m = load("resnet8");
    let a = serde_json::to_string(&plan::report::Json(&plan_of(&m, "GAP9", Level::L2))).unwrap();
    let b = serde_json::to_string(&plan::report::Json(&plan_of(&m, "GAP9", Level::L2))).unwrap();
    assert_eq!(a, b);
}

// ------------------------------------------------------------------ supply

/// Every weight has exactly one supply, decided by where it lives.
fn check_supply(p: &Plan, m: &Model) {
    for param in &m.roles.params {
        let n = p.weights.iter().filter(|w| w.name == param.name).count();
        assert_eq!(n, 1, "trainable weight {} has {n} supplies", param.name);
    }
    for w in &p.weights {
        let b = &p.buffers[w.buffer];
        assert_eq!(w.level, b.level);
        match w.supply {
            Supply::L3Hex => {
                assert_eq!(b.level, Level::L3, "{}", w.name);
                assert!(matches!(b.placement, Placement::Arena { .. }));
                assert!(w.hex_index.is_some());
            }
            Supply::Baked => {
                assert_eq!(b.level, Level::L2, "{}", w.name);
                assert_eq!(b.placement, Placement::Static);
                assert!(w.hex_index.is_none());
            }
            Supply::L3Staged => {
                assert_eq!(b.level, Level::L2, "{}", w.name);
                assert!(matches!(b.placement, Placement::Arena { .. }), "staged weights have an arena slot");
                assert!(w.hex_index.is_some());
            }
        }
        assert!(!w.reason.is_empty());
    }
    let mut hex: Vec<u32> = p.weights.iter().filter_map(|w| w.hex_index).collect();
    hex.sort();
    assert_eq!(hex, (0..hex.len() as u32).collect::<Vec<_>>(), "hex files numbered densely");
}

#[test]
fn supply_follows_the_level_not_the_platform_name() {
    let m = load("ds_cnn");
    for platform in ["GAP9", "Siracusa", "host"] {
        let l2 = plan_of(&m, platform, Level::L2);
        check_supply(&l2, &m);
        assert!(l2.weights.iter().all(|w| w.supply == Supply::Baked), "{platform}");
        assert!(l2.skip_initweight_copy.skip);
        let l3 = plan_of(&m, platform, Level::L3);
        check_supply(&l3, &m);
        assert!(l3.weights.iter().all(|w| w.supply == Supply::L3Hex), "{platform}");
        assert!(l3.skip_initweight_copy.skip);
        assert!(l3.skip_initweight_copy.reason.contains("hex-loaded"));
        // The same decision on every platform: only the level matters.
        let sig = |p: &Plan| p.weights.iter().map(|w| (w.name.clone(), w.supply)).collect::<Vec<_>>();
        assert_eq!(sig(&l2), sig(&plan_of(&m, "GAP9", Level::L2)));
        assert_eq!(sig(&l3), sig(&plan_of(&m, "GAP9", Level::L3)));
    }
}

#[test]
fn a_small_l2_image_stages_weights_through_l3() {
    let m = load("ds_cnn");
    let mut o = opts("GAP9", Level::L2);
    o.l2_image_limit = Some(40_000);
    let p = plan::plan(&m, &o).unwrap();
    p.verify().unwrap();
    check_supply(&p, &m);
    let staged: Vec<_> = p.weights.iter().filter(|w| w.supply == Supply::L3Staged).collect();
    assert!(!staged.is_empty());
    let baked: u64 = p.weights.iter().filter(|w| w.supply == Supply::Baked).map(|w| p.buffers[w.buffer].size).sum();
    assert!(baked <= 40_000, "{baked}");
    assert!(!p.skip_initweight_copy.skip, "staged weights are copied at Init");
    assert!(staged[0].reason.contains("over its limit of 40000 B"), "{}", staged[0].reason);
    // The initial values are kept in L3 as static hex images.
    let hex_bytes: u64 = staged.iter().map(|w| p.buffers[w.buffer].size).sum();
    assert_eq!(p.level(Level::L3).static_bytes, hex_bytes);
}

/// ResNet-8 on GAP9 with the default L2 never bakes weights it cannot hold
/// (docs/architecture.md, "Memory planning": levels and weight supply): it
/// plans (every baked byte accounted for within 0x190000) or fails with the
/// numbers.
#[test]
fn resnet8_gap9_l2_holds_what_it_bakes_or_says_why_not() {
    let m = load("resnet8");
    let p = plan_of(&m, "GAP9", Level::L2);
    check_supply(&p, &m);
    let l2 = p.level(Level::L2);
    let baked: u64 = p.weights.iter().filter(|w| w.supply == Supply::Baked).map(|w| p.buffers[w.buffer].size).sum();
    assert!(baked > 300_000, "ResNet-8 has ~312 KB of weights");
    assert_eq!(l2.static_bytes, baked);
    assert_eq!(l2.needed_bytes, l2.reserved_bytes + l2.arena_bytes + baked);
    assert!(l2.needed_bytes <= 0x190000, "{}", l2.needed_bytes);
    // Everything at L2 does not fit: the plan moved what it had to, and says so.
    assert!(p.decisions.iter().any(|d| d.contains("with everything at L2 the plan needs")), "{:?}", p.decisions);
    let moved: Vec<_> = p.buffers.iter().filter(|b| b.level_reason.starts_with("moved to L3")).collect();
    assert!(!moved.is_empty());
    for b in &moved {
        assert!(b.persistent && b.level == Level::L3);
    }

    // With Deeploy's on-chip budget of 1,400,000 B nothing that size fits at
    // L2 without moving most of it; with 1,000,000 B it is an error with the
    // numbers and what to try.
    let mut o = opts("GAP9", Level::L2);
    o.platform = o.platform.with_capacity(Level::L2, 1_000_000);
    match plan::plan(&m, &o) {
        Err(Error::Capacity { level, needed, available, message, hints, .. }) => {
            assert_eq!(level, "L2");
            assert_eq!(available, 1_000_000);
            assert!(needed > available);
            for want in ["needs", "1,000,000 B", "arena", "weights, baked", "stacks/reserved"] {
                assert!(message.contains(want), "missing '{want}' in:\n{message}");
            }
            assert!(hints.contains(&Hint::DefaultMem { level: Level::L3 }), "{hints:?}");
            assert!(
                hints.iter().any(|h| matches!(h, Hint::Capacities(c) if c.iter().any(|&(l, _)| l == Level::L2))),
                "{hints:?}"
            );
        }
        Ok(p) => panic!("planned into 1,000,000 B of L2: {:?}", p.level(Level::L2)),
        Err(e) => panic!("{e}"),
    }
}

// ---------------------------------------------------------------- aliasing

#[test]
fn accumulators_and_optimizer_update_in_place() {
    let m = load("autoencoder");
    let p = plan_of(&m, "GAP9", Level::L2);
    for param in &m.roles.params {
        // SGD in the optimizer graph writes the weight's own buffer.
        let w = buffer(&p, &param.name);
        let upd = param.updated.as_deref().unwrap();
        assert!(w.aliases.iter().any(|a| a.tensor == upd && a.why.contains("in place")), "{upd}: {:?}", w.aliases);
        assert!(p.buffers.iter().all(|b| b.name != upd), "{upd} has a buffer of its own");
        // The gradient buffer is the accumulator's, persistent, not copied.
        let g = buffer(&p, param.grad_buffer.as_deref().unwrap());
        assert_eq!(g.kind, Kind::GradBuffer);
        assert!(g.persistent && g.start == 0 && g.end == p.steps - 1);
    }
    // SGDOptimizerV2 (simple_mlp): parameters updated through sequence views.
    let m = load("simple_mlp");
    let p = plan_of(&m, "GAP9", Level::L3);
    let opt = p.nodes.iter().find(|n| n.op == "SGDOptimizerV2").unwrap();
    let params: Vec<_> = opt.operands.iter().filter(|o| p.buffers[o.buffer].kind == Kind::Param).collect();
    assert_eq!(params.len(), m.roles.params.len());
    assert!(params.iter().all(|o| o.access == plan::Access::ReadWrite));
}

#[test]
fn inline_sgd_updates_in_place_unless_read_later() {
    // Single-graph flavor from the zoo: every updated weight aliases its weight.
    let m = load("cnn_inline_sgd");
    let p = plan_of(&m, "Siracusa", Level::L2);
    for param in &m.roles.params {
        let w = buffer(&p, &param.name);
        assert_eq!(w.kind, Kind::Param);
        assert!(w.aliases.iter().any(|a| Some(&a.tensor) == param.updated.as_ref()), "{:?}", w.aliases);
    }

    // A weight read after its SGD: the update must not overwrite it.
    let dir = tempfile::tempdir().unwrap();
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[4])
        .init("w", &[4], &[0.5; 4])
        .node("Mul", &["x", "w"], &["g"], vec![])
        .node("SGD", &["w", "g"], &["w_updated"], vec![attr_float("lr", 0.1)])
        .node("Add", &["w", "g"], &["late"], vec![])
        .output("w_updated", F32, &[4])
        .output("late", F32, &[4]);
    b.write(dir.path(), "network.onnx");
    let m = deploygen::load(dir.path()).unwrap();
    let p = plan_of(&m, "host", Level::L2);
    let w = buffer(&p, "w");
    assert!(w.aliases.iter().all(|a| a.tensor != "w_updated"));
    assert_ne!(buffer(&p, "w_updated").id, w.id);
    assert!(p.decisions.iter().any(|d| d.contains("does not update 'w' in place")), "{:?}", p.decisions);
    p.verify().unwrap();
}

#[test]
fn shape_only_nodes_alias_their_input() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[2, 8])
        .init_i64("shape", &[4, 4])
        .node("Relu", &["x"], &["r"], vec![])
        .node("Reshape", &["r", "shape"], &["v"], vec![])
        .node("Relu", &["v"], &["y"], vec![])
        .output("y", F32, &[4, 4]);
    b.write(dir.path(), "network.onnx");
    let m = deploygen::load(dir.path()).unwrap();
    let p = plan_of(&m, "GAP9", Level::L2);
    let r = buffer(&p, "r");
    assert_eq!(r.name, "r");
    assert!(r.aliases.iter().any(|a| a.tensor == "v" && a.why.contains("Reshape")));
    // The view's reader keeps the buffer alive.
    assert_eq!(r.end, 2);
    let reshape = p.nodes.iter().find(|n| n.op == "Reshape").unwrap();
    assert_eq!(reshape.exec, None, "a view runs no code");
    assert!(reshape.operands.is_empty());
    // The compile-time shape gets no buffer.
    assert!(p.buffers.iter().all(|b| b.name != "shape"));
    assert!(p.decisions.iter().any(|d| d.contains("compile time") && d.contains("shape")));
}

#[test]
fn a_view_read_after_an_in_place_write_is_a_copy() {
    // v = Reshape(w) is read after SGD updates w in place: v must hold the
    // old values, so it is copied.
    let dir = tempfile::tempdir().unwrap();
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[4])
        .init("w", &[4], &[0.5; 4])
        .init_i64("shape", &[2, 2])
        .node("Reshape", &["w", "shape"], &["v"], vec![])
        .node("Mul", &["x", "w"], &["g"], vec![])
        .node("SGD", &["w", "g"], &["w_updated"], vec![attr_float("lr", 0.1)])
        .node("Relu", &["v"], &["late"], vec![])
        .output("w_updated", F32, &[4])
        .output("late", F32, &[2, 2]);
    b.write(dir.path(), "network.onnx");
    let m = deploygen::load(dir.path()).unwrap();
    let p = plan_of(&m, "host", Level::L2);
    let w = buffer(&p, "w");
    assert!(w.aliases.iter().any(|a| a.tensor == "w_updated"), "SGD in place");
    assert_ne!(buffer(&p, "v").id, w.id, "the view must be a copy");
    assert!(p.decisions.iter().any(|d| d.contains("copies 'w' instead of viewing it")), "{:?}", p.decisions);
}

#[test]
fn inplace_accumulator_output_is_the_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = ModelBuilder::new();
    // The buffer of weight `w`, accumulating w's gradient.
    let buf_name = "w_grad.accumulation.buffer";
    b.input("x", F32, &[8])
        .input("w", F32, &[8])
        .input(buf_name, F32, &[8])
        .input("reset", BOOL, &[1])
        .node("Mul", &["x", "w"], &["w_grad"], vec![])
        .node_in("InPlaceAccumulatorV2", "com.microsoft", &[buf_name, "w_grad", "reset"], &["flag", "buf_out"], vec![])
        .output("flag", BOOL, &[1]);
    b.write(dir.path(), "network.onnx");
    let m = deploygen::load(dir.path()).unwrap();
    let p = plan_of(&m, "GAP9", Level::L2);
    let buf = buffer(&p, buf_name);
    assert!(buf.aliases.iter().any(|a| a.tensor == "buf_out"));
    let acc = p.nodes.iter().find(|n| n.op == "InPlaceAccumulatorV2").unwrap();
    let op = acc.operands.iter().find(|o| o.buffer == buf.id).unwrap();
    assert_eq!(op.access, plan::Access::ReadWrite);
}

// --------------------------------------------------------------- lifetimes

#[test]
fn forward_activations_live_until_their_backward_use() {
    let m = load("resnet8");
    let p = plan_of(&m, "GAP9", Level::L3);
    let g = &m.graph;
    let step: std::collections::HashMap<_, _> = g.schedule.iter().enumerate().map(|(i, n)| (*n, i as u32)).collect();
    let first_backward = g.nodes().position(|(_, n)| n.op.ends_with("Grad")).unwrap() as u32;
    let mut checked = 0;
    // the training graph's activations (the predict graph has its own,
    // under the same names)
    for b in p.buffers.iter().filter(|b| b.kind == Kind::Activation && b.graph == plan::GraphSel::Main) {
        let Some(t) = g.id(&b.name) else { continue };
        let last = g.consumers(t).iter().map(|c| step[c]).max();
        let Some(last) = last else { continue };
        assert!(b.end >= last, "{} ends at {} but is read at {last}", b.name, b.end);
        if g.consumers(t).iter().any(|&c| g.node(c).op.ends_with("Grad")) {
            assert!(b.start < first_backward && b.end >= first_backward, "{} lives into the backward pass", b.name);
            checked += 1;
        }
    }
    assert!(checked > 5, "forward activations reaching the backward pass: {checked}");
}

// ------------------------------------------------------- execution model

#[test]
fn l3_operands_are_staged_per_node() {
    let m = load("mobilenet_v1");
    for platform in ["GAP9", "Siracusa"] {
        let p = plan_of(&m, platform, Level::L3);
        for n in p.nodes.iter().filter(|n| n.exec.is_some()) {
            if let Some(t) = &n.tiling {
                // Tiled: every L3 operand passes through its own L2 stages.
                for o in &t.operands {
                    assert_eq!(o.home, Level::L3);
                    assert_eq!(o.l2_stage.len(), o.l1.len(), "node '{}'", n.name);
                    for &s in &o.l2_stage {
                        let sb = &p.buffers[s];
                        assert_eq!((sb.level, sb.kind, sb.start, sb.end), (Level::L2, Kind::Staging, n.step, n.step));
                    }
                }
                continue;
            }
            for o in &n.operands {
                assert_eq!(o.home, Level::L3);
                match n.exec {
                    Some(Level::L1) => assert!(o.l1_copy.is_some() && o.at == Level::L1),
                    _ => {
                        let s = o.l2_staging.expect("an L3 operand of an L2 node is staged");
                        let sb = &p.buffers[s];
                        assert_eq!((sb.level, sb.kind, sb.start, sb.end), (Level::L2, Kind::Staging, n.step, n.step));
                        assert!(sb.size >= p.buffers[o.buffer].bytes);
                    }
                }
            }
        }
        // Only per-node buffers in L1 and L2.
        for b in p.buffers.iter().filter(|b| b.level != Level::L3) {
            assert!(b.kind.is_per_node(), "{} ({:?}) in {}", b.name, b.kind, b.level);
        }
        // L1 holds each node's operands only when they all fit.
        let budget = p.platform.budget(Level::L1);
        assert!(p.level(Level::L1).arena_bytes <= budget);
    }
}

#[test]
fn the_largest_node_must_fit_l2_staging() {
    let m = load("cct");
    let mut o = opts("GAP9", Level::L3);
    o.platform =
        o.platform.with_capacity(Level::L2, 150_000).with_capacity(Level::L1, common::l1_with_budget("GAP9", 7712));
    match plan::plan(&m, &o) {
        Err(Error::Capacity { level, message, hints, .. }) => {
            assert_eq!(level, "L2");
            assert!(message.contains("largest L2 staging of one node"), "{message}");
            // The largest node's staging is part of the arena, counted once.
            let num = |line: &str| -> u64 {
                line.split_whitespace().filter_map(|w| w.replace(',', "").parse::<u64>().ok()).next_back().unwrap_or(0)
            };
            let staging = num(message.lines().find(|l| l.contains("largest L2 staging")).unwrap());
            let arena = message
                .lines()
                .find(|l| l.trim_start().starts_with("arena"))
                .and_then(|l| l.split_whitespace().nth(1))
                .map(|w| w.replace(',', "").parse::<u64>().unwrap())
                .unwrap();
            assert!(staging > 0 && staging <= arena, "staging {staging} vs arena {arena}:\n{message}");
            assert!(
                hints.iter().any(|h| matches!(h, Hint::Capacities(c) if c.iter().any(|&(l, _)| l == Level::L2))),
                "{hints:?}"
            );
            assert!(!hints.iter().any(|h| matches!(h, Hint::DefaultMem { .. })), "already at L3: {hints:?}");
        }
        other => panic!("{:?}", other.map(|p| p.level(Level::L2).clone())),
    }
}

#[test]
fn reservations_larger_than_a_level_are_an_error() {
    let m = load("simple_mlp");
    let mut o = opts("Siracusa", Level::L2);
    let stacks = o.platform.level(Level::L1).reserved_bytes();
    o.platform = o.platform.with_capacity(Level::L1, stacks - 1000);
    match plan::plan(&m, &o) {
        Err(Error::Capacity { level, message, hints, .. }) => {
            assert_eq!(level, "L1");
            assert!(message.contains(&format!("{} B", deploygen::plan::thousands(stacks))), "{message}");
            assert!(
                matches!(&hints[..], [Hint::Capacities(c)] if c.len() == 1 && c[0].0 == Level::L1 && c[0].1 > stacks),
                "{hints:?}"
            );
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    let mut o = opts("GAP9", Level::L3);
    o.platform = o.platform.with_capacity(Level::L3, 10_000);
    match plan::plan(&m, &o) {
        Err(Error::Capacity { level, hints, .. }) => {
            assert_eq!(level, "L3");
            assert!(matches!(&hints[..], [Hint::Capacities(c)] if c.len() == 1 && c[0].0 == Level::L3), "{hints:?}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn static_requests_are_placed_and_stay_where_asked() {
    let m = load("ds_cnn");
    let mut o = opts("GAP9", Level::L2);
    o.statics.push(plan::StaticRequest { name: "testData".into(), bytes: 200_000, level: Level::L2, movable: false });
    let p = plan::plan(&m, &o).unwrap();
    let s = buffer(&p, "testData");
    assert_eq!((s.kind, s.level, s.placement), (Kind::Static, Level::L2, Placement::Static));
    let baked: u64 = p.weights.iter().map(|w| p.buffers[w.buffer].size).sum();
    assert_eq!(p.level(Level::L2).static_bytes, baked + 200_000);

    // Squeezed: the static buffer (the test data, which emission writes
    // as L2 arrays) stays in L2; other persistent buffers move to L3.
    o.platform = o.platform.with_capacity(Level::L2, 1_100_000);
    let p = plan::plan(&m, &o).unwrap();
    p.verify().unwrap();
    let s = buffer(&p, "testData");
    assert_eq!((s.level, s.placement), (Level::L2, Placement::Static));
    assert!(p.buffers.iter().any(|b| b.level == Level::L3), "something else moved to L3");
}

// ---------------------------------------------------------------- verifier

#[test]
fn the_verifier_catches_overlap_and_overflow() {
    let m = load("resnet8");
    let good = plan_of(&m, "GAP9", Level::L3);
    good.verify().unwrap();

    // Two buffers live at the same step put at the same offset.
    let mut bad = good.clone();
    let l3: Vec<BufId> = bad
        .buffers
        .iter()
        .filter(|b| b.level == Level::L3 && !b.persistent && b.kind == Kind::Activation)
        .map(|b| b.id)
        .collect();
    let (a, b) = l3
        .iter()
        .flat_map(|&a| l3.iter().map(move |&b| (a, b)))
        .find(|&(a, b)| {
            a != b && bad.buffers[a].start <= bad.buffers[b].end && bad.buffers[b].start <= bad.buffers[a].end
        })
        .unwrap();
    bad.buffers[b].placement = bad.buffers[a].placement;
    let e = bad.verify().unwrap_err().to_string();
    assert!(e.contains("overlap"), "{e}");

    // A buffer past the arena's end.
    let mut bad = good.clone();
    let arena = bad.level(Level::L3).arena_bytes;
    bad.buffers[a].placement = Placement::Arena { offset: arena };
    assert!(bad.verify().unwrap_err().to_string().contains("past the arena"));

    // A weight with no supply.
    let mut bad = good.clone();
    bad.weights.pop();
    assert!(bad.verify().unwrap_err().to_string().contains("no supply"));
}

// ---------------------------------------------------------------- the CLI

fn deploygen() -> Command {
    Command::cargo_bin("deploygen").unwrap()
}

fn model_arg(name: &str) -> String {
    root().join("models").join(name).display().to_string()
}

#[test]
fn inspect_json_carries_the_plan() {
    let out = deploygen()
        .args(["inspect", &model_arg("ds_cnn"), "--platform", "GAP9", "--default-mem", "L3", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let plan = &v["plan"];
    for l in ["L1", "L2", "L3"] {
        for k in ["capacity", "arena_bytes", "lower_bound_bytes", "efficiency", "weights_bytes"] {
            assert!(plan["levels"][l][k].is_number(), "plan.levels.{l}.{k}");
        }
    }
    let w = plan["weights"].as_array().unwrap();
    assert!(!w.is_empty());
    for x in w {
        for k in ["name", "bytes", "level", "supply", "reason"] {
            assert!(!x[k].is_null(), "plan.weights[].{k}");
        }
        assert_eq!(x["supply"], "l3-hex");
        assert_eq!(x["level"], "L3");
    }
    assert_eq!(plan["platform"]["controller_core_id"], 8);
    assert_eq!(v["model"].as_str().map(|s| s.contains("ds_cnn")), Some(true), "the import report is still there");
}

#[test]
fn inspect_text_shows_the_plan_and_svg_draws_it() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("map.svg");
    let out = deploygen()
        // Without recompute: the count below plans the model as it is.
        .args([
            "inspect",
            &model_arg("resnet8"),
            "--platform",
            "GAP9",
            "--default-mem",
            "L2",
            "--recompute",
            "off",
            "--svg",
        ])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for want in ["memory plan  GAP9", "lower bound", "efficiency", "baked", "TRAINING_SKIP_INITWEIGHT_COPY", "moved"] {
        assert!(text.contains(want), "missing '{want}'");
    }
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
    for l in ["L1 arena", "L2 arena", "L3 arena"] {
        assert!(s.contains(l), "panel {l}");
    }
    // One rectangle (with a tooltip) per arena buffer.
    let m = load("resnet8");
    let b = deploygen::bind::bind(&m, &Default::default()).unwrap();
    let p = plan::plan(&m, &deploygen::pipeline::plan_options(&m, Some(&b), &opts("GAP9", Level::L2))).unwrap();
    let placed: usize = Level::ALL.iter().map(|&l| p.arena(l).len()).sum();
    let cells = p.nodes.iter().filter(|n| n.tiling.is_some() || n.untiled.is_some()).count();
    assert_eq!(
        s.matches("<title>").count(),
        placed + 3 + cells,
        "one per buffer + one live curve per non-empty panel + one tiling cell per node with code"
    );
    // Tile buffers name their node's tiling; the strip says why a node is untiled.
    let tile_bufs: usize = p
        .nodes
        .iter()
        .filter_map(|n| n.tiling.as_ref())
        .flat_map(|t| t.operands.iter().map(|o| o.l1.len() + o.l2_stage.len()))
        .sum();
    assert!(tile_bufs > 0);
    assert_eq!(s.matches("tile buffer of '").count(), tile_bufs);
    assert!(
        s.contains("): tiled, ") && s.contains("): untiled, operator SoftmaxCrossEntropyLoss has no tile rule"),
        "tiling strip"
    );
    assert!(!dir.path().join("map.deploygen-tmp").exists());
}

#[test]
fn inspect_errors_exit_2_with_numbers() {
    deploygen()
        .args(["inspect", &model_arg("resnet8"), "--platform", "GAP9", "--default-mem", "L2", "--l2", "600000"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("needs")
                .and(predicate::str::contains("600,000 B"))
                .and(predicate::str::contains("--default-mem L3")),
        );
    deploygen()
        .args(["inspect", &model_arg("resnet8"), "--platform", "GAP10"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown platform"));
    deploygen().args(["inspect", &model_arg("resnet8"), "--default-mem", "L3"]).assert().code(2);
    deploygen().args(["inspect", &model_arg("resnet8"), "--platform", "GAP9", "--default-mem", "L1"]).assert().code(2);
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("x.svg");
    deploygen().args(["inspect", &model_arg("resnet8"), "--svg"]).arg(&svg).assert().code(2);
    // A capacity error leaves no SVG behind.
    deploygen()
        .args(["inspect", &model_arg("resnet8"), "--platform", "GAP9", "--l2", "500000", "--svg"])
        .arg(&svg)
        .assert()
        .code(2);
    assert!(!svg.exists());
}

/// The C runtime's chip facts are platforms.json's, in one generated
/// header (`UPDATE_GOLDEN=1` rewrites it).
#[test]
fn the_runtime_chip_header_is_written_from_the_platform_data() {
    let path = root().join("runtime/mem/dg_chips.h");
    let want = deploygen::target::chips_header();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "runtime/mem/dg_chips.h is not what platforms.json says; UPDATE_GOLDEN=1 rewrites it:\n{}",
        deploygen::emit::unified_diff(std::path::Path::new("dg_chips.h"), have.as_bytes(), want.as_bytes())
    );
}

/// A per-node buffer's level reason is its node, told by the plan when
/// asked (it stores none): every such buffer of the zoo names the node at
/// its step, and each kind of per-node buffer is met.
#[test]
fn per_node_buffers_are_explained_by_their_node() {
    // (No zoo model has kernel scratch; its reason names the node too.)
    let forms = ["L1 tile buffer", "L2 stage of L1 tile buffer", "L1 copy of", "L2 staging of", "shared by every"];
    let mut met = [false; 5];
    let mut planned = 0;
    for dir in all_models().into_iter().filter(|d| d.starts_with(root().join("models"))) {
        let Ok(m) = deploygen::pipeline::lowered(&dir, &Default::default(), Default::default()) else { continue };
        let plans = [Level::L2, Level::L3].map(|l| plan::plan(&m, &opts("GAP9", l)));
        for b in plans.iter().flatten().flat_map(|p| p.buffers.iter().map(move |b| (p, b))) {
            let (p, b) = b;
            let reason = p.level_reason(b);
            assert!(!reason.is_empty(), "{}: '{}' has no level reason", dir.display(), b.name);
            let Some(step) = b.step else { continue };
            assert!(b.level_reason.is_empty(), "a per-node buffer stores no reason: '{}'", b.name);
            let n = p.nodes.iter().find(|n| n.step == step).unwrap();
            assert!(reason.contains(&format!("node '{}' ({})", n.name, n.op)), "'{}': {reason}", b.name);
            for (i, f) in forms.iter().enumerate() {
                met[i] |= reason.starts_with(f) || (i == 4 && reason.contains(f));
            }
            planned += 1;
        }
    }
    assert!(planned > 1000, "only {planned} buffers planned");
    assert_eq!(met, [true; 5], "forms met: {forms:?}");
}
