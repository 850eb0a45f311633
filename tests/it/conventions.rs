//! Third-party conventions: each zoo model written in one exporter's or
//! test folder's style imports, binds and plans as it is.

use crate::common::*;

use assert_cmd::Command;
use deploygen::bind::{self, npz::Npz, BindOptions, Layout};
use deploygen::ir::{Flavor, TensorData};
use deploygen::plan::{self, Level, PlanOptions, Platform};
use deploygen::{ops, Error};

fn load(name: &str) -> deploygen::ir::Model {
    deploygen::load(&zoo(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn inspect_json(name: &str) -> serde_json::Value {
    let out = Command::cargo_bin("deploygen")
        .unwrap()
        .args(["inspect"])
        .arg(zoo(name))
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn inspect_text(name: &str) -> String {
    let out = Command::cargo_bin("deploygen").unwrap().arg("inspect").arg(zoo(name)).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn shape_of(m: &deploygen::ir::Model, name: &str) -> Vec<usize> {
    let g = &m.graph;
    g.tensor(g.id(name).unwrap()).ty.shape().unwrap()
}

#[test]
fn ordered_test_data_binds_in_graph_order() {
    let m = load("conv_ordered_npz");
    let b = bind::bind(&m, &BindOptions::default()).unwrap();
    assert_eq!(b.layout, Layout::Ordered);
    assert_eq!(b.outputs_layout, Layout::Ordered);
    assert_eq!(b.slots[0].input, "input");
    assert_eq!(b.slots[0].key(), Some("input_0"));
    let refs: Vec<(&str, &str)> = b.references.iter().map(|r| (r.key.as_str(), r.target.as_str())).collect();
    assert_eq!(refs, vec![("output_0", "logits"), ("output_1", "features")]);
    assert!(b.warnings.is_empty(), "{:?}", b.warnings);
    let j = inspect_json("conv_ordered_npz");
    assert_eq!(j["binding"]["layout"], "ordered");
    assert_eq!(j["binding"]["outputs_layout"], "ordered");
    let t = inspect_text("conv_ordered_npz");
    assert!(t.contains("inputs.npz (ordered layout), outputs.npz (ordered layout)"), "{t}");
    assert!(t.contains("'input_0' -> 'input'"), "{t}");
}

#[test]
fn ordered_training_outputs_are_the_loss_and_the_updated_weights() {
    let m = load("conv_ordered_npz_train");
    let b = bind::bind(&m, &BindOptions::default()).unwrap();
    assert_eq!(b.layout, Layout::Ordered);
    assert_eq!(b.num_data_inputs, 2);
    assert_eq!(b.slots[1].input, "labels");
    assert_eq!(b.slots[1].keys, vec!["input_1", "mb1_input_1", "mb2_input_1", "mb3_input_1"]);
    let loss = b.loss.as_ref().unwrap();
    assert_eq!((loss.key.as_str(), loss.data.numel()), ("output_0", 4));
    let updated: Vec<(&str, Option<&str>)> =
        b.params.iter().map(|p| (p.name.as_str(), p.reference.as_deref())).collect();
    assert_eq!(
        updated,
        vec![
            ("conv.weight", Some("output_1")),
            ("conv.bias", Some("output_2")),
            ("fc.weight", Some("output_3")),
            ("fc.bias", Some("output_4"))
        ]
    );
    assert!(b.warnings.is_empty(), "{:?}", b.warnings);
}

fn npz_of(arrays: &indexmap::IndexMap<String, TensorData>) -> Npz {
    let refs: Vec<(&str, &TensorData)> = arrays.iter().map(|(k, v)| (k.as_str(), v)).collect();
    Npz::from_arrays(std::path::Path::new("inputs.npz"), &refs).unwrap()
}

#[test]
fn an_ordered_slot_of_the_wrong_shape_is_an_error_naming_slot_expected_and_found() {
    let m = load("conv_ordered_npz");
    let mut arrays = indexmap::IndexMap::new();
    arrays.insert("input_0".to_string(), TensorData::from_f32(vec![1, 1, 4, 4], &[0.0; 16]));
    let npz = npz_of(&arrays);
    let e = bind::bind_data(&m, &npz, None, &BindOptions::default()).unwrap_err().to_string();
    assert!(e.contains("'input_0'") && e.contains("'input'") && e.contains("ordered"), "{e}");
    assert!(e.contains("[1, 1, 8, 8]") && e.contains("[1, 1, 4, 4]"), "{e}");
}

#[test]
fn named_keys_still_win_over_the_ordered_layout() {
    let m = load("conv_ordered_npz");
    let mut arrays = indexmap::IndexMap::new();
    arrays.insert("extra_0".to_string(), TensorData::from_f32(vec![1, 1, 8, 8], &[0.0; 64]));
    arrays.insert("input".to_string(), TensorData::from_f32(vec![1, 1, 8, 8], &[1.0; 64]));
    let npz = npz_of(&arrays);
    let b = bind::bind_data(&m, &npz, None, &BindOptions::default()).unwrap();
    assert_eq!(b.layout, Layout::Named);
    assert_eq!(b.slots[0].key(), Some("input"));
    assert!(b.warnings.iter().any(|w| w.contains("'extra_0'")), "{:?}", b.warnings);
}

#[test]
fn an_inference_input_without_data_is_a_binding_error_not_triage() {
    let m = load("conv_misc_forms");
    assert_eq!(m.roles.flavor, Flavor::Inference);
    let mut arrays = indexmap::IndexMap::new();
    arrays.insert("meta_n_batches".to_string(), TensorData::from_i64(vec![], &[1]));
    let npz = npz_of(&arrays);
    let e = bind::bind_data(&m, &npz, None, &BindOptions::default()).unwrap_err();
    assert!(matches!(e, Error::Binding { .. }), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("inference") && e.contains("'input'") && e.contains("keys found: 'meta_n_batches'"), "{e}");
    assert!(!e.contains("training"), "{e}");
}

#[test]
fn legacy_attribute_forms_import_at_opset_18() {
    let m = load("conv_legacy_attrs");
    assert_eq!(shape_of(&m, "out"), vec![1, 1, 3]);
    assert_eq!(shape_of(&m, "split.a"), vec![1, 1, 8, 8]);
    assert_eq!(shape_of(&m, "split.b"), vec![1, 3, 8, 8]);
    let b = bind::bind(&m, &BindOptions::default()).unwrap();
    assert_eq!(b.references.len(), 1);
}

#[test]
fn an_attribute_and_an_input_that_disagree_are_an_error_naming_the_node() {
    let mut mb = ModelBuilder::new();
    mb.input("x", F32, &[1, 4, 3, 3])
        .init_i64("axes", &[2])
        .node("ReduceMean", &["x", "axes"], &["y"], vec![attr_ints("axes", &[2, 3]), attr_int("keepdims", 1)])
        .output("y", F32, &[1, 4, 1, 1]);
    let dir = tempfile::tempdir().unwrap();
    let e = read_typed(&mb.write(dir.path(), "m.onnx")).unwrap_err().to_string();
    assert!(e.contains("ReduceMean_0") && e.contains("disagree"), "{e}");
    // Agreeing forms are fine.
    mb.graph.node[0].attribute = vec![attr_ints("axes", &[2]), attr_int("keepdims", 1)];
    mb.graph.output[0] = value("y", F32, &[1, 4, 1, 3]);
    read_typed(&mb.write(dir.path(), "m.onnx")).unwrap();
}

#[test]
fn declared_shapes_off_by_size1_dims_are_kept_at_outputs_with_warnings() {
    let m = load("conv_size1_dims");
    assert_eq!(shape_of(&m, "score"), vec![1]);
    assert_eq!(shape_of(&m, "features.out"), vec![1, 8]);
    assert_eq!(shape_of(&m, "logits"), vec![3]);
    // Inner values keep the computed shape.
    assert_eq!(shape_of(&m, "conv.relu"), vec![1, 8, 6, 6]);
    assert_eq!(shape_of(&m, "gap.out"), vec![1, 8, 1, 1]);
    assert_eq!(m.graph.warnings.len(), 5, "{:?}", m.graph.warnings);
    assert!(m.graph.warnings.iter().all(|w| w.contains("size-1") && !w.contains('\n')));
    // outputs.npz holds the computed shapes: they bind, with notes only.
    let b = bind::bind(&m, &BindOptions::default()).unwrap();
    assert_eq!(b.references.len(), 3);
    assert!(b.warnings.is_empty(), "{:?}", b.warnings);
    let j = inspect_json("conv_size1_dims");
    assert_eq!(j["warnings"].as_array().unwrap().len(), 5);
    assert!(inspect_text("conv_size1_dims")
        .contains("warning: 'ReduceMean_5' (ReduceMean): output 'score' is declared as [1]"));
}

#[test]
fn a_real_shape_disagreement_stays_an_error() {
    let mut mb = mlp();
    mb.graph.output[0] = value("y", F32, &[3, 2]);
    let dir = tempfile::tempdir().unwrap();
    let e = read_typed(&mb.write(dir.path(), "m.onnx")).unwrap_err().to_string();
    assert!(e.contains("declared as [3, 2]") && e.contains("[2, 3]"), "{e}");
}

#[test]
fn constant_log_prob_only_loss_and_outputs_that_are_inputs_or_initializers() {
    let m = load("conv_misc_forms");
    assert_eq!(m.roles.flavor, Flavor::Inference);
    assert!(m.graph.tensor(m.graph.id("half").unwrap_or_else(|| m.graph.id("half.out").unwrap())).data.is_some());
    let b = bind::bind(&m, &BindOptions::default()).unwrap();
    let mut targets: Vec<&str> = b.references.iter().map(|r| r.target.as_str()).collect();
    targets.sort_unstable();
    assert_eq!(targets, vec!["fc.bias", "input", "log_prob"]);
    for level in [Level::L2, Level::L3] {
        let p = plan::plan(&m, &PlanOptions::new(Platform::by_name("GAP9").unwrap(), level)).unwrap();
        p.verify().unwrap();
    }
}

/// The operator-family zoo models import, bind and plan on both chips at both
/// levels (or fails with the planner's capacity error).
#[test]
fn operator_family_models_import_bind_and_plan() {
    for name in [
        "mobilenet_v3_block",
        "mobilenet_v3_block_train",
        "rmsnorm_transformer",
        "rmsnorm_default_domain",
        "conv1d_autoencoder",
        "conv1d_autoencoder_train",
        "ops_mixed",
        "ops_mixed_train",
    ] {
        let m = load(name);
        let b = bind::bind(&m, &BindOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(b.warnings.is_empty(), "{name}: {:?}", b.warnings);
        for chip in ["GAP9", "Siracusa"] {
            for level in [Level::L2, Level::L3] {
                match plan::plan(&m, &PlanOptions::new(Platform::by_name(chip).unwrap(), level)) {
                    Ok(p) => p.verify().unwrap_or_else(|e| panic!("{name} {chip} {level}: {e}")),
                    Err(e @ Error::Capacity { .. }) => eprintln!("{name} {chip} {level}: {e}"),
                    Err(e) => panic!("{name} {chip} {level}: {e}"),
                }
            }
        }
    }
}

#[test]
fn registry_facts_of_the_operator_families() {
    let def = |n: &str| ops::lookup(n).unwrap_or_else(|| panic!("{n} is not registered"));
    for g in ["SigmoidGrad", "TanhGrad", "GatherGrad", "QuickGeluGrad"] {
        assert!(def(g).gradient, "{g}");
    }
    for f in
        ["Sign", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "ConcatTraining", "SplitTraining"]
    {
        assert!(!def(f).gradient, "{f} is a forward operator");
    }
    assert!(def("GlobalMaxPool").fixed_1x1.is_some() && def("ReduceMax").fixed_1x1.is_some());
    assert!(def("Pad").compile_time_input(1) && def("Pad").compile_time_input(2) && !def("Pad").compile_time_input(0));
    assert!(
        def("Split").compile_time_input(1) && def("Clip").compile_time_input(1) && def("Clip").compile_time_input(2)
    );
    assert!(def("ReduceMax").compile_time_input(1) && def("Gather").compile_time_input(1));
}

#[test]
fn help_and_docs_list_exactly_the_registry() {
    let out = Command::cargo_bin("deploygen").unwrap().arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let listed = |text: &str, start: &str, end: &str| -> Vec<String> {
        let from = text.find(start).unwrap_or_else(|| panic!("no '{start}'")) + start.len();
        let rest = &text[from..];
        let body = &rest[..rest.find(end).unwrap_or(rest.len())];
        body.split(',').map(|s| s.trim().trim_matches('`').to_string()).filter(|s| !s.is_empty()).collect()
    };
    let want: Vec<String> = ops::supported().iter().map(|s| s.to_string()).collect();
    assert_eq!(listed(&help, "Supported operators (matched by type, any domain):", "\n\n"), want);
    let doc = std::fs::read_to_string(root().join("docs/operators.md")).unwrap();
    assert_eq!(listed(&doc, "that the two agree):\n", "."), want);
}

/// The operators without a kernel binding: each is folded when generating
/// code (a value or a shape), so it never runs.
const FOLDED_ONLY: &[&str] = &["Constant", "Range", "Shape", "Size"];

#[test]
fn every_operator_that_runs_has_a_kernel_binding() {
    let def = |n: &str| ops::lookup(n).unwrap_or_else(|| panic!("{n} is not registered"));
    let without: Vec<&str> = ops::supported().into_iter().filter(|n| def(n).kernel.is_none()).collect();
    assert_eq!(without, FOLDED_ONLY, "operators without a kernel binding (OpDef::kernel)");
    for n in ops::supported() {
        let d = def(n);
        let needs = d.tile.is_some() || d.act.is_some() || d.fuses_act.is_some() || d.scratch.is_some();
        assert!(!needs || d.kernel.is_some(), "{n} has a tile rule, activation or scratch but no kernel binding");
    }
    // A C function (or stem) a registry entry names is one the runtime
    // declares: in dg_kernels.h or a family header it includes.
    let dir = root().join("runtime/kernels");
    let mut header = std::fs::read_to_string(dir.join("dg_kernels.h")).unwrap();
    let family: Vec<String> = header
        .lines()
        .filter_map(|l| l.strip_prefix("#include \"dg_k_"))
        .map(|l| format!("dg_k_{}", l.trim_end_matches('"')))
        .collect();
    assert!(!family.is_empty(), "dg_kernels.h includes no family header (dg_k_*.h)");
    for f in family {
        header.push_str(&std::fs::read_to_string(dir.join(&f)).unwrap());
    }
    for n in ops::supported() {
        let Some(func) = def(n).kernel.and_then(|k| k.func()) else { continue };
        assert!(
            func.starts_with("dg_")
                && (header.contains(&format!("void {func}(")) || header.contains(&format!("void {func}_"))),
            "{n}'s kernel binding names '{func}', which runtime/kernels/dg_kernels.h does not declare"
        );
    }
}

/// The registry's source files, item by item: (file, line of the item's
/// first line, the item's lines without comment lines). An item starts at
/// each line that begins in column 0 (the layout rustfmt writes).
fn ops_items() -> Vec<(String, usize, String)> {
    let (mut files, mut dirs) = (vec![], vec![root().join("src/ops")]);
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut items = vec![];
    for f in files {
        let name = f.strip_prefix(root()).unwrap().display().to_string();
        let (mut start, mut cur) = (0, String::new());
        for (i, line) in std::fs::read_to_string(&f).unwrap().lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let top = line.starts_with(|c: char| !c.is_whitespace() && !"})]".contains(c));
            if top && !cur.is_empty() {
                items.push((name.clone(), start + 1, std::mem::take(&mut cur)));
            }
            if cur.is_empty() {
                start = i;
            }
            cur.push_str(line);
            cur.push('\n');
        }
        if !cur.is_empty() {
            items.push((name, start + 1, cur));
        }
    }
    items
}

/// Kernel bindings (and tile rules) never ask which operator they bind:
/// the registry entry holds the binding and the C function it calls
/// (`OpDef::kernel`), so no item that names a kernel or reads a
/// `KernelCtx` reads the node's operator name, matches an operator name,
/// or names a kernel in a catch-all match arm (a fallback that would call
/// another operator's kernel).
#[test]
fn no_operator_name_picks_a_kernel() {
    let names = ops::supported();
    let mut faults = vec![];
    for (file, line, text) in ops_items() {
        if !(text.contains("\"dg_") || text.contains("KernelCtx")) {
            continue;
        }
        for (k, l) in text.lines().enumerate() {
            let at = format!("{file}:{}", line + k);
            let t = l.trim_start();
            let reads_op = l
                .match_indices(".op")
                .any(|(i, _)| !l[i + 3..].starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '('));
            if reads_op {
                faults.push(format!("{at}: reads the operator's name: {t}"));
            }
            let quoted = t.strip_prefix('"').and_then(|r| r.split('"').next());
            if quoted.is_some_and(|q| names.contains(&q)) && (t.contains("=>") || t.contains(" | ")) {
                faults.push(format!("{at}: matches an operator name: {t}"));
            }
            let arm = t.split("=>").next().unwrap_or("").trim();
            let catch_all = t.contains("=>")
                && !arm.is_empty()
                && arm.chars().all(|c| c == '_' || c.is_ascii_lowercase() || c.is_ascii_digit());
            if catch_all && t.contains("\"dg_") {
                faults.push(format!("{at}: a catch-all arm names a kernel: {t}"));
            }
        }
    }
    assert!(faults.is_empty(), "operator-name kernel choices in src/ops:\n{}", faults.join("\n"));
}
