//! Tiling in the memory plan: tile records, the verifier's tiling checks
//! (each seen failing on a corrupted plan), L3 operands streamed through
//! small L2 stages, and `--no-tiling`.

use crate::common;

use crate::common::*;
use deploygen::ir::Model;
use deploygen::plan::{self, Kind, Level, Plan, PlanOptions, Platform};

fn load(name: &str) -> Model {
    deploygen::load(&zoo(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn plan_with(m: &Model, platform: &str, level: Level, l1: Option<u64>, tiling: bool) -> Plan {
    let mut p = Platform::by_name(platform).unwrap();
    if let Some(b) = l1 {
        p = p.with_capacity(Level::L1, common::l1_with_budget(platform, b));
    }
    let mut o = PlanOptions::new(p, level);
    o.tiling = tiling;
    plan::plan(m, &o).unwrap_or_else(|e| panic!("{platform} {level}: {e}"))
}

/// The project of a zoo model for GAP9 at L2 with `l1` bytes of L1 above the stacks.
fn generate_gap9_l2(name: &str, l1: u64) -> deploygen::pipeline::Generated {
    let p = Platform::by_name("GAP9").unwrap().with_capacity(Level::L1, common::l1_with_budget("GAP9", l1));
    deploygen::pipeline::generate(&zoo(name), &deploygen::pipeline::Options::new(PlanOptions::new(p, Level::L2)))
        .unwrap_or_else(|e| panic!("{name}: {}: {}", e.stage, e.error))
}

/// The text of the generated file whose path ends with `file`.
fn project_file(g: &deploygen::pipeline::Generated, file: &str) -> String {
    let (_, bytes) = g.project.files.iter().find(|(p, _)| p.ends_with(file)).unwrap_or_else(|| panic!("no {file}"));
    String::from_utf8_lossy(bytes).into_owned()
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
    let mut p = plan_with(&m, "GAP9", Level::L2, Some(53248), true);
    let i = multi_tile(&p);
    let t = p.nodes[i].tiling.as_mut().unwrap();
    t.tiles = t.tiles[..t.tiles.len() - 1].into();
    t.count -= 1;
    let e = p.verify().unwrap_err().to_string();
    assert!(e.contains("stop at") || e.contains("exactly once"), "{e}");
}

#[test]
fn the_verifier_sees_a_tile_larger_than_its_buffer() {
    let m = load("resnet8");
    let mut p = plan_with(&m, "GAP9", Level::L2, Some(53248), true);
    let i = multi_tile(&p);
    let b = p.nodes[i].tiling.as_ref().unwrap().operands[0].l1[0];
    p.buffers[b].size = 4;
    let e = p.verify().unwrap_err().to_string();
    assert!(e.contains("needs") && e.contains("its buffer"), "{e}");
}

#[test]
fn the_verifier_sees_one_buffer_used_as_both_halves() {
    let m = load("resnet8");
    let mut p = plan_with(&m, "GAP9", Level::L2, Some(53248), true);
    let i = multi_tile(&p);
    let o = p.nodes[i].tiling.as_mut().unwrap().operands.iter_mut().find(|o| o.l1.len() == 2).unwrap();
    o.l1[1] = o.l1[0];
    let e = p.verify().unwrap_err().to_string();
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

/// Buffering is per operand: where the double buffers of every streamed
/// operand do not fit, some get two and the rest one, within the budget.
#[test]
fn buffering_is_chosen_per_operand() {
    let m = load("resnet8");
    let p = plan_with(&m, "GAP9", Level::L2, Some(20480), true);
    p.verify().unwrap();
    let budget = p.platform.budget(Level::L1);
    let mixed: Vec<_> = p.nodes.iter().filter_map(|n| n.tiling.as_ref()).filter(|t| t.buffering() == "mixed").collect();
    assert!(!mixed.is_empty(), "no node has some operands double-buffered and others single");
    for t in mixed {
        assert!(t.l1_bytes <= budget, "{} B over {budget}", t.l1_bytes);
        let singles: u64 = t.operands.iter().filter(|o| !o.whole && !o.double).map(|o| p.buffers[o.l1[0]].size).sum();
        assert!(t.l1_bytes + singles > budget, "every operand could have been double-buffered: {}", t.why);
        for o in &t.operands {
            assert_eq!(o.l1.len(), if o.double { 2 } else { 1 });
        }
    }
}

#[test]
fn the_verifier_sees_a_whole_operand_double_buffered() {
    let m = load("resnet8");
    let mut p = plan_with(&m, "GAP9", Level::L2, Some(53248), true);
    let i = p.nodes.iter().position(|n| n.tiling.as_ref().is_some_and(|t| t.operands.iter().any(|o| o.whole))).unwrap();
    let t = p.nodes[i].tiling.as_mut().unwrap();
    let o = t.operands.iter_mut().find(|o| o.whole).unwrap();
    o.double = true;
    let next = p.buffers.iter().map(|b| b.id).find(|&b| b > o.l1[0]).unwrap();
    o.l1.push(next);
    let e = p.verify().unwrap_err().to_string();
    assert!(e.contains("loaded once"), "{e}");
}

fn conformance_plan(test: &str, level: Level, l1: Option<u64>) -> Option<(Plan, u64)> {
    let dir = common::conformance(test, "CCT2_LP")?;
    let m = deploygen::load(&dir).unwrap_or_else(|e| panic!("CCT2_LP: {e}"));
    let onnx = std::fs::metadata(dir.join("network.onnx")).unwrap().len();
    Some((plan_with(&m, "GAP9", level, l1, true), onnx))
}

/// Issue 20's targets for CCT2_LP on GAP9 at L3: every node with code
/// but the loss pair runs in L1 tiles, the total footprint (L1 + L2 + L3)
/// is at most 1.5x the ONNX file, and no L2 stage exceeds twice the L1
/// budget.
#[test]
fn cct2_lp_on_gap9_l3_meets_the_memory_targets() {
    let Some((p, onnx)) = conformance_plan("cct2_lp_on_gap9_l3_meets_the_memory_targets", Level::L3, None) else {
        return;
    };
    p.verify().unwrap();
    let untiled: Vec<String> = p.nodes.iter().filter(|n| n.untiled.is_some()).map(|n| n.op.clone()).collect();
    assert_eq!(untiled, ["SoftmaxCrossEntropyLoss", "SoftmaxCrossEntropyLossGrad"]);
    let ratio = p.footprint() as f64 / onnx as f64;
    assert!(ratio <= 1.5, "footprint {} B is {ratio:.3}x the ONNX file's {onnx} B", p.footprint());
    let budget = p.platform.budget(Level::L1);
    assert!(p.largest_l2_staging() <= 2 * budget, "{} B", p.largest_l2_staging());
}

/// The rules' shapes on CCT2_LP with a 64 KiB L1: a Gemm on `[1, 64, 128]`
/// operands whose B (64 KiB) cannot stay whole takes column panels; the
/// second Conv (288 KiB of weights) takes runs of output channels; the
/// attention transposes tile over their output.
#[test]
fn gemm_columns_conv_channels_and_transposes_tile() {
    let Some((p, _)) = conformance_plan("gemm_columns_conv_channels_and_transposes_tile", Level::L2, Some(53248))
    else {
        return;
    };
    p.verify().unwrap();
    // the training step's nodes (the predict graph repeats the forward part)
    let tiled = |op: &'static str| {
        p.nodes.iter().filter(move |n| n.op == op && n.graph == plan::GraphSel::Main).filter_map(|n| n.tiling.as_ref())
    };
    let gemm = tiled("Gemm").find(|t| t.space == [64, 128]).expect("a tiled [1, 64, 128] Gemm");
    assert!(gemm.tile[1] < 128, "{gemm:?}");
    let conv = tiled("Conv").find(|t| t.space[1] == 128).expect("the second Conv is tiled");
    assert!(conv.tile[1] < 128, "{:?}", conv.tile);
    assert_eq!(tiled("Transpose").count(), 9);
}

/// Pointwise nodes overwrite an input no later node reads: CCT2_LP's first
/// Relu writes over the first Conv's output.
#[test]
fn pointwise_nodes_write_over_an_input_that_dies() {
    let Some((p, _)) = conformance_plan("pointwise_nodes_write_over_an_input_that_dies", Level::L3, None) else {
        return;
    };
    let relu = p.nodes.iter().find(|n| n.op == "Relu").unwrap();
    let t = relu.tiling.as_ref().unwrap();
    assert_eq!(t.operands.len(), 1, "{:?}", t.operands);
    assert_eq!(t.operands[0].access, plan::Access::ReadWrite);
    let b = &p.buffers[t.operands[0].buffer];
    assert!(b.aliases.iter().any(|a| a.why.contains("overwrites")), "{:?}", b.aliases);
}

/// Every zoo and test-fixture model that generates untiled also generates
/// tiled on GAP9 at L2 and L3 with small L1 budgets: the tiles of each node
/// bind to calls of one form (a short last tile of a broadcasting Add once
/// bound to the plain form and stopped emission).
#[test]
fn every_model_generates_tiled_at_small_l1_budgets() {
    use deploygen::pipeline::{generate, Options};
    let mut dirs: Vec<std::path::PathBuf> = vec![];
    for sub in ["models", "tests/fixtures"] {
        for e in std::fs::read_dir(common::root().join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.join("network.onnx").is_file() {
                dirs.push(p);
            }
        }
    }
    dirs.sort();
    let mut failures = vec![];
    for dir in &dirs {
        for level in [Level::L2, Level::L3] {
            let opts = |l1: Option<u64>, tiling: bool| {
                let mut p = Platform::by_name("GAP9").unwrap();
                if let Some(b) = l1 {
                    p = p.with_capacity(Level::L1, common::l1_with_budget("GAP9", b));
                }
                let mut o = PlanOptions::new(p, level);
                o.tiling = tiling;
                Options::new(o)
            };
            if generate(dir, &opts(None, false)).is_err() {
                continue;
            }
            for l1 in [4096, 53248] {
                if let Err(e) = generate(dir, &opts(Some(l1), true)) {
                    failures.push(format!(
                        "{} GAP9 {level}, {l1} B of L1 above the stacks: {}: {}",
                        dir.display(),
                        e.stage,
                        e.error
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// ConvGrad splits its batch: each tile's samples give their dX, and dW
/// and dB stay whole in L1, the first tile writing them and the later ones
/// adding to them (the kernels' `accumulate`, 0 then 1).
#[test]
fn conv_grad_splits_its_batch_and_accumulates_dw_and_db() {
    let g = generate_gap9_l2("conv1d_autoencoder_train", 4096);
    let node = g.plan.nodes.iter().find(|n| n.op == "ConvGrad" && n.tiling.as_ref().is_some_and(|t| t.count >= 2));
    let t = node.expect("a ConvGrad in two or more batch tiles").tiling.as_ref().unwrap();
    assert!(t.operands.iter().filter(|o| o.access == plan::Access::Write && o.whole).count() >= 1, "{:?}", t.operands);
    let text = project_file(&g, "TrainingNetwork.c");
    assert!(
        text.contains("_accumulate[2] = {\n            0u,\n            1u,\n        };"),
        "no 0, 1 accumulate table"
    );
}

/// MomentumSGD tiles pointwise: its velocity is read and written back
/// tile by tile, with the weight's. (e2e runs such a plan against the
/// references: `optimizer_state_tiles_and_trains`.)
#[test]
fn momentum_velocity_is_read_and_written_per_tile() {
    let m = load("cnn_derived_momentum");
    let p = plan_with(&m, "GAP9", Level::L2, Some(3712), true);
    p.verify().unwrap();
    let node = p.nodes.iter().find(|n| n.op == "MomentumSGD" && n.tiling.as_ref().is_some_and(|t| t.count > 1));
    let t = node.expect("a MomentumSGD in two or more tiles").tiling.as_ref().unwrap();
    let velocity = t.operands.iter().find(|o| o.slots.iter().any(|s| !s.output && s.index == 2));
    let velocity = velocity.expect("the velocity operand");
    assert_eq!(velocity.access, plan::Access::ReadWrite, "{velocity:?}");
    assert!(!velocity.whole, "streamed, not whole: {velocity:?}");
}

/// AdamW tiles pointwise; every tile but the last holds the step count
/// (the last advances it), so all of them use the same bias correction.
#[test]
fn adamw_tiles_hold_the_step_count_but_the_last() {
    let g = generate_gap9_l2("mlp_derived_adamw", 3712);
    let node = g.plan.nodes.iter().find(|n| n.op == "AdamW" && n.tiling.as_ref().is_some_and(|t| t.count > 1));
    let t = node.expect("an AdamW in two or more tiles").tiling.as_ref().unwrap();
    let step = t.operands.iter().find(|o| o.slots.iter().any(|s| !s.output && s.index == 4)).expect("the step");
    assert_eq!(step.access, plan::Access::ReadWrite, "{step:?}");
    let text = project_file(&g, "OptimizerNetwork.c");
    let mut table = format!("_hold_step[{}] = {{\n", t.count);
    for i in 0..t.count {
        table.push_str(if i + 1 < t.count { "            1u,\n" } else { "            0u,\n" });
    }
    table.push_str("        };");
    assert!(text.contains(&table), "no 1, …, 1, 0 hold_step table of {} tiles", t.count);
}

/// Training-mode BatchNorm (batch statistics) tiles over channels only: a
/// tile holds its channels' whole batch and map.
#[test]
fn training_batchnorm_tiles_over_channels() {
    let m = load("resnet8");
    let p = plan_with(&m, "GAP9", Level::L2, Some(20480), true);
    p.verify().unwrap();
    let bn: Vec<_> = p.nodes.iter().filter(|n| n.op == "BatchNormInternal").collect();
    assert!(!bn.is_empty());
    for n in bn {
        let t = n.tiling.as_ref().unwrap_or_else(|| panic!("'{}' untiled: {:?}", n.name, n.untiled));
        assert!(t.count > 1, "{t:?}");
        assert_eq!(t.tile[0], t.space[0], "the whole batch in every tile");
        assert_eq!(t.tile[2..], t.space[2..], "the whole map in every tile");
        assert!(t.tile[1] < t.space[1]);
    }
}

/// CCT2_FT1 on GAP9 at L2: its batched Gemms (`[1, 2, 64, 64]` operands,
/// onnxruntime's MatMul gradients) tile as batched matmuls, and its
/// ReduceSum over its kept axes; only the loss pair stays untiled.
#[test]
fn cct2_ft1_on_gap9_l2_tiles_its_batched_gemms() {
    let Some(dir) = common::conformance("cct2_ft1_on_gap9_l2_tiles_its_batched_gemms", "CCT2_FT1") else { return };
    let m = deploygen::load(&dir).unwrap_or_else(|e| panic!("CCT2_FT1: {e}"));
    let p = plan_with(&m, "GAP9", Level::L2, None, true);
    p.verify().unwrap();
    let mut untiled: Vec<String> = p.nodes.iter().filter(|n| n.untiled.is_some()).map(|n| n.op.clone()).collect();
    untiled.sort();
    assert_eq!(untiled, ["SoftmaxCrossEntropyLoss", "SoftmaxCrossEntropyLossGrad"]);
}

/// ConvGrad with a batch of 1 tiles over input channels: dY is whole in
/// every tile, X, dX and dW take the tile's channels (resnet8 at a 53 kB
/// L1, where no ConvGrad's operands fit whole).
#[test]
fn conv_grad_of_one_sample_tiles_over_input_channels() {
    let m = load("resnet8");
    let p = plan_with(&m, "GAP9", Level::L2, Some(53248), true);
    p.verify().unwrap();
    let grads: Vec<_> = p.nodes.iter().filter(|n| n.op == "ConvGrad").collect();
    assert!(!grads.is_empty());
    let mut split = 0;
    // A ConvGrad whose whole dY does not fit beside one channel's
    // operands stays whole-operand; the others split.
    for t in grads.iter().filter_map(|n| n.tiling.as_ref()) {
        assert_eq!(t.space[0], 1, "{t:?}");
        assert_eq!(t.tile[2..], t.space[2..], "the whole map in every tile");
        if t.count > 1 {
            split += 1;
            assert!(t.tile[1] < t.space[1], "{t:?}");
            let dy = t.operands.iter().find(|o| o.slots.iter().any(|s| !s.output && s.index == 0)).unwrap();
            assert!(dy.whole, "dY is loaded once: {dy:?}");
        }
    }
    assert!(split >= 3, "{split} ConvGrads in two or more tiles");
}

/// BatchNormalizationGrad tiles over channels (a channel's sums need its
/// whole batch and map); Sum, the reductions and the global pools tile too.
#[test]
fn batchnorm_grad_sum_reductions_and_global_pools_tile() {
    for (model, ops) in [
        ("resnet8", &["BatchNormalizationGrad", "Sum", "ReduceSum"][..]),
        ("kws_cnn_derived_sgd", &["GlobalAveragePool", "GlobalAveragePoolGrad", "BatchNormalizationGrad"][..]),
        ("max_ties_derived_sgd", &["GlobalMaxPool"][..]),
    ] {
        let m = load(model);
        let p = plan_with(&m, "GAP9", Level::L2, Some(20480), true);
        p.verify().unwrap();
        for op in ops {
            let nodes: Vec<_> = p.nodes.iter().filter(|n| n.op == *op).collect();
            assert!(!nodes.is_empty(), "{model}: no {op}");
            for n in nodes {
                let t = n.tiling.as_ref().unwrap_or_else(|| panic!("{model} '{}' untiled: {:?}", n.name, n.untiled));
                if n.op == "BatchNormalizationGrad" {
                    assert!(t.count > 1, "{t:?}");
                    assert_eq!(t.tile[0], t.space[0], "the whole batch in every tile");
                    assert_eq!(t.tile[2..], t.space[2..], "the whole map in every tile");
                }
            }
        }
    }
}

/// The tiler counts a tile's fixed cost: at the chip's L1, no Conv of
/// resnet8 is cut into tiles of fewer than 4 output channels when more fit
/// (the one-channel tiles ran at a third of the kernel's MAC rate), and a
/// node that fits L1 whole may still take a few double-buffered tiles.
#[test]
fn conv_tiles_keep_several_output_channels() {
    let m = load("resnet8");
    let p = plan_with(&m, "Siracusa", Level::L2, None, true);
    p.verify().unwrap();
    for n in p.nodes.iter().filter(|n| n.op == "Conv") {
        let t = n.tiling.as_ref().unwrap_or_else(|| panic!("'{}' untiled: {:?}", n.name, n.untiled));
        assert!(t.tile[1] >= t.space[1].min(4), "'{}': {t:?}", n.name);
        assert!(t.count <= 8, "'{}' in {} tiles", n.name, t.count);
    }
}
