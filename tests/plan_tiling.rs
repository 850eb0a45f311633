//! Tiling in the memory plan: tile records, the verifier's tiling checks
//! (each seen failing on a corrupted plan), L3 operands streamed through
//! small L2 stages, and `--no-tiling`.

mod common;

use common::*;
use deploygen::ir::Model;
use deploygen::plan::{self, Kind, Level, Plan, PlanOptions, Platform};

fn load(name: &str) -> Model {
    deploygen::load(&zoo(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn plan_with(m: &Model, platform: &str, level: Level, l1: Option<u64>, tiling: bool) -> Plan {
    let mut p = Platform::by_name(platform).unwrap();
    if let Some(b) = l1 {
        p = p.with_capacity(Level::L1, b);
    }
    let mut o = PlanOptions::new(p, level);
    o.tiling = tiling;
    plan::plan(m, &o).unwrap_or_else(|e| panic!("{platform} {level}: {e}"))
}

/// The first node tiled in more than one double-buffered tile.
fn multi_tile(p: &Plan) -> usize {
    p.nodes
        .iter()
        .position(|n| n.tiling.as_ref().is_some_and(|t| t.count > 1 && t.double_buffered))
        .expect("a node with several double-buffered tiles")
}

#[test]
fn nodes_record_tiles_buffering_and_traffic() {
    let m = load("resnet8");
    let p = plan_with(&m, "GAP9", Level::L2, Some(65536), true);
    p.verify().unwrap();
    let conv = p.nodes.iter().find(|n| n.op == "Conv").unwrap();
    let t = conv.tiling.as_ref().expect("Conv is tiled");
    assert!(t.count >= 2, "{t:?}");
    assert_eq!(t.tiles.len(), t.count as usize);
    assert!(t.moved.l2_to_l1 > 0 && t.moved.l1_to_l2 > 0);
    assert!(t.why.contains("cost"), "{}", t.why);
    // Every node with code is either tiled or says why not.
    for n in p.nodes.iter().filter(|n| n.exec.is_some()) {
        assert!(n.tiling.is_some() != n.untiled.is_some(), "node '{}'", n.name);
    }
    let json = serde_json::to_value(&p).unwrap();
    let tiled = json["nodes"].as_array().unwrap().iter().filter(|n| n.get("tiling").is_some()).count();
    assert!(tiled > 10, "{tiled}");
}

#[test]
fn no_tiling_keeps_the_untiled_plan() {
    let m = load("resnet8");
    let p = plan_with(&m, "GAP9", Level::L2, None, false);
    assert!(p.nodes.iter().all(|n| n.tiling.is_none() && n.untiled.is_none()));
    assert!(p.buffers.iter().filter(|b| b.kind == Kind::L1Operand).all(|b| !b.name.contains(".t")));
}

#[test]
fn the_verifier_sees_a_missing_tile() {
    let m = load("resnet8");
    let mut p = plan_with(&m, "GAP9", Level::L2, Some(65536), true);
    let i = multi_tile(&p);
    let t = p.nodes[i].tiling.as_mut().unwrap();
    t.tiles.pop();
    t.count -= 1;
    let e = p.verify().unwrap_err();
    assert!(e.contains("stop at") || e.contains("exactly once"), "{e}");
}

#[test]
fn the_verifier_sees_a_tile_larger_than_its_buffer() {
    let m = load("resnet8");
    let mut p = plan_with(&m, "GAP9", Level::L2, Some(65536), true);
    let i = multi_tile(&p);
    let b = p.nodes[i].tiling.as_ref().unwrap().operands[0].l1[0];
    p.buffers[b].size = 4;
    let e = p.verify().unwrap_err();
    assert!(e.contains("needs") && e.contains("its buffer"), "{e}");
}

#[test]
fn the_verifier_sees_one_buffer_used_as_both_halves() {
    let m = load("resnet8");
    let mut p = plan_with(&m, "GAP9", Level::L2, Some(65536), true);
    let i = multi_tile(&p);
    let o = p.nodes[i].tiling.as_mut().unwrap().operands.iter_mut().find(|o| o.l1.len() == 2).unwrap();
    o.l1[1] = o.l1[0];
    let e = p.verify().unwrap_err();
    assert!(e.contains("distinct"), "{e}");
}

/// L3 operands of tiled nodes pass through L2 stages of one tile each:
/// no L2 staging buffer is larger than twice the L1 budget.
#[test]
fn l3_operands_stream_through_small_l2_stages() {
    let m = load("cct");
    let p = plan_with(&m, "GAP9", Level::L3, None, true);
    p.verify().unwrap();
    let budget = p.platform.budget(Level::L1);
    let stages: Vec<_> = p.buffers.iter().filter(|b| b.kind == Kind::Staging && b.name.contains(".s")).collect();
    assert!(!stages.is_empty());
    for s in stages {
        assert!(s.size <= 2 * budget, "'{}' {} B", s.name, s.size);
    }
}
