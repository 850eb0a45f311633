//! `build` on arbitrary names (cargo forbids a bin called `build`). The
//! input, split at 0xFF bytes (never part of UTF-8), gives the names of a
//! small `Add` model — graph input, weight, node, graph output — and the
//! bytes of its folder's name; the test data is keyed by those names.
//! Generation must refuse with exit 2 or give a project whose C holds no
//! trigraph (`??`) and no line splice, and whose build files hold the
//! project name only in its sanitised form. Never a panic.
#![no_main]

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use deploygen::bind::npz;
use deploygen::cli::build::{generate, Args};
use deploygen::import::pb;
use deploygen::ir::TensorData;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fn value(name: &str) -> pb::ValueInfoProto {
    let dim = |d| pb::tensor_shape_proto::Dimension {
        value: Some(pb::tensor_shape_proto::dimension::Value::DimValue(d)),
        ..Default::default()
    };
    pb::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type: Some(1),
                shape: Some(pb::TensorShapeProto { dim: vec![dim(2), dim(2)] }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `y = x + w` with the given names, and its test data, into `dir`.
fn write_model(dir: &Path, [x, w, node, y]: [&str; 4]) -> Option<()> {
    let graph = pb::GraphProto {
        name: Some("fuzz".into()),
        node: vec![pb::NodeProto {
            name: Some(node.into()),
            op_type: Some("Add".into()),
            input: vec![x.into(), w.into()],
            output: vec![y.into()],
            ..Default::default()
        }],
        initializer: vec![pb::TensorProto {
            name: Some(w.into()),
            dims: vec![2, 2],
            data_type: Some(1),
            raw_data: Some([0.5f32; 4].iter().flat_map(|v| v.to_le_bytes()).collect()),
            ..Default::default()
        }],
        input: vec![value(x)],
        output: vec![value(y)],
        ..Default::default()
    };
    let model = pb::ModelProto {
        ir_version: Some(8),
        opset_import: vec![pb::OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
        graph: Some(graph),
        ..Default::default()
    };
    std::fs::write(dir.join("network.onnx"), model.encode_to_vec()).ok()?;
    let xs = TensorData::from_f32(vec![2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let ys = TensorData::from_f32(vec![2, 2], &[1.5, 2.5, 3.5, 4.5]);
    std::fs::write(dir.join("inputs.npz"), npz::write_npz(&[(x, &xs)]).ok()?).ok()?;
    std::fs::write(dir.join("outputs.npz"), npz::write_npz(&[(y, &ys)]).ok()?).ok()
}

/// The project name a build file line holds after `prefix`, up to `end`.
fn after<'a>(text: &'a str, prefix: &str, end: char) -> Option<&'a str> {
    let rest = &text[text.find(prefix)? + prefix.len()..];
    Some(&rest[..rest.find(end)?])
}

fn sanitised(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fuzz_target!(|data: &[u8]| {
    let parts: Vec<&[u8]> = data.splitn(5, |&b| b == 0xff).collect();
    let name = |i: usize| String::from_utf8_lossy(parts.get(i).copied().unwrap_or(b"n")).into_owned();
    let names = [name(0), name(1), name(2), name(3)];
    let folder: Vec<u8> =
        parts.get(4).copied().unwrap_or(b"m").iter().map(|&b| if b == b'/' || b == 0 { b'_' } else { b }).collect();
    if folder.is_empty() || folder == b"." || folder == b".." {
        return;
    }
    let Ok(root) = tempfile::tempdir() else { return };
    let dir = root.path().join(std::ffi::OsStr::from_bytes(&folder));
    if std::fs::create_dir(&dir).is_err() || write_model(&dir, names.each_ref().map(String::as_str)).is_none() {
        return;
    }
    let args = Args {
        model: dir,
        platform: "GAP9".into(),
        default_mem: Some("L3".into()),
        hex_files: true,
        plan: deploygen::cli::plan_args::PlanArgs { l2_image: Some(0), ..Default::default() },
        ..Default::default()
    };
    let built = match generate(&args) {
        Ok(b) => b,
        // Every error is exit 2 (bad input or a request that cannot be met).
        Err(_) => return,
    };
    for (path, bytes) in &built.project.files {
        if path.starts_with("runtime") {
            continue;
        }
        let text = String::from_utf8_lossy(bytes);
        let file = path.display().to_string();
        if file.ends_with(".c") || file.ends_with(".h") {
            assert!(!text.contains("??"), "{file} holds a trigraph");
            assert!(!text.contains("\\\n") && !text.contains("\\\r"), "{file} holds a line splice");
        }
        if file == "CMakeLists.txt" {
            let p = after(&text, "set(TARGET_NAME \"", '"').expect("the target name");
            assert!(sanitised(p), "CMakeLists.txt names the project {p:?}");
        }
        if file == "Makefile.host" {
            let p = after(&text, "generated by deploygen for ", ' ').expect("the project name");
            assert!(sanitised(p), "Makefile.host names the project {p:?}");
        }
    }
});
