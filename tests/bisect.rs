//! `deploygen test --bisect`: the dump format, the comparison that finds
//! the first differing tensor, and a real run that names the node a
//! broken kernel computes wrong.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use deploygen::bind::npz;
use deploygen::ir::TensorData;
use deploygen::verify::bisect::{compare, read_dumps, Dumped};
use deploygen::verify::{generate_case, Case, Kind, StageError};

fn record(name: &str, v: &[f32]) -> Vec<u8> {
    let mut b = (name.len() as u32).to_le_bytes().to_vec();
    b.extend(name.as_bytes());
    b.extend((v.len() as u32).to_le_bytes());
    b.extend(v.iter().flat_map(|x| x.to_le_bytes()));
    b
}

fn refs(pairs: &[(&str, &[f32])]) -> npz::Npz {
    let arrays: Vec<(&str, TensorData)> =
        pairs.iter().map(|(k, v)| (*k, TensorData::from_f32(vec![v.len()], v))).collect();
    let refs: Vec<(&str, &TensorData)> = arrays.iter().map(|(k, v)| (*k, v)).collect();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.npz");
    std::fs::write(&p, npz::write_npz(&refs).unwrap()).unwrap();
    npz::read(&p).unwrap()
}

/// The first tensor that differs is named, not a later one; a tensor
/// dumped again (a later step) is not compared; equal infinities match.
#[test]
fn the_first_differing_tensor_is_the_one_named() {
    let mut bytes = record("a", &[1.0, f32::NEG_INFINITY]);
    bytes.extend(record("b", &[2.0, 3.0]));
    bytes.extend(record("c", &[9.0]));
    bytes.extend(record("a", &[5.0, 5.0]));
    let d = read_dumps(&bytes).unwrap();
    assert_eq!(d.len(), 4);
    assert_eq!(d[1], Dumped { name: "b".into(), values: vec![2.0, 3.0] });
    let r = refs(&[("a", &[1.0, f32::NEG_INFINITY]), ("b", &[2.0, 3.5]), ("c", &[0.0])]);
    let f = compare(&d, &r, 1e-3, 0.0).unwrap();
    assert_eq!(f.matching, vec!["a".to_string()]);
    let (t, why) = f.first_bad.unwrap();
    assert_eq!(t, "b");
    assert!(why.contains("1 of 2 values differ") && why.contains("first [1]: computed 3, reference 3.5"), "{why}");
    assert!(read_dumps(&bytes[..bytes.len() - 3]).unwrap_err().to_string().contains("cut off"));
}

/// A Python with onnxruntime for tools/make_refs.py, if there is one.
fn python_with_onnxruntime() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("DEPLOYGEN_PYTHON").map(PathBuf::from),
        Some(PathBuf::from("/root/.venvs/deploygen-tools/bin/python")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| Command::new(p).args(["-c", "import onnxruntime, onnx"]).output().is_ok_and(|o| o.status.success()))
}

/// conv1d_autoencoder with a Relu kernel that leaks negative values: the
/// case fails, and bisecting names its one Relu node (the others fuse into
/// their Conv, after its BatchNorm folds), with every output before it
/// matching onnxruntime.
#[test]
fn bisect_names_the_node_a_broken_kernel_computes_wrong() {
    const TEST: &str = "bisect_names_the_node_a_broken_kernel_computes_wrong";
    let Some(py) = python_with_onnxruntime() else {
        return common::skip(TEST, "no Python with onnxruntime (set DEPLOYGEN_PYTHON)");
    };
    std::env::set_var("DEPLOYGEN_PYTHON", py);
    let leaky = |c: &Case, dir: &Path| -> Result<(), StageError> {
        generate_case(c, dir)?;
        let f = dir.join("runtime/kernels/elementwise.c");
        let text = std::fs::read_to_string(&f).unwrap();
        let broken = text.replace("v > 0.0f ? v : 0.0f", "v > 0.0f ? v : 0.5f * v");
        assert_ne!(text, broken, "the patch applies");
        std::fs::write(&f, broken).unwrap();
        Ok(())
    };
    let mut case = Case::new(common::zoo("conv1d_autoencoder"), "conv1d_autoencoder", "host", "L2", Kind::Inference);
    case.cache = Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-cache"));
    let o = deploygen::verify::run_case(&case, &leaky);
    assert!(!o.passed(), "the leaky Relu must fail the case");
    let report = deploygen::verify::bisect::bisect(&case, &leaky).unwrap();
    assert!(report.starts_with("first differing node: node '"), "{report}");
    assert!(report.contains("(Relu) writes 'dec1.relu'"), "{report}");
    assert!(report.contains("the 4 output(s) before it match"), "{report}");
    common::ran(TEST);
}

/// `test --bisect` in a folder that has its own `tools/make_refs.py` (a
/// downloaded repository) never runs it: the tools come from deploygen's
/// installation, `--tools DIR` or DEPLOYGEN_TOOLS.
#[test]
fn bisect_never_runs_the_working_directorys_tools() {
    let Some(py) = which_python() else {
        common::skip_unless_ci(
            "bisect_never_runs_the_working_directorys_tools",
            "no python3 to run a planted script with",
        );
        return;
    };
    common::ran("bisect_never_runs_the_working_directorys_tools");
    let cwd = tempfile::tempdir().unwrap();
    let marker = cwd.path().join("planted-script-ran");
    std::fs::create_dir(cwd.path().join("tools")).unwrap();
    let planted = format!("open({:?}, 'w').write('ran')\n", marker.display().to_string());
    std::fs::write(cwd.path().join("tools/make_refs.py"), &planted).unwrap();
    std::fs::write(cwd.path().join("status.toml"), "").unwrap();
    // Wrong results: the inputs changed after the references were made.
    let model = common::copy_model(&common::zoo("simple_mlp"));
    common::edit_inputs(model.path(), |arrays| {
        let (_, t) = arrays.iter_mut().find(|(_, t)| t.to_f32().is_some()).unwrap();
        let v: Vec<f32> = t.to_f32().unwrap().iter().map(|x| x * 3.0 + 1.0).collect();
        *t = TensorData::from_f32(t.shape.clone(), &v);
    });
    let run = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
            .arg("test")
            .arg(model.path())
            .args(["--platform", "host", "--bisect"])
            .args(extra)
            .env("DEPLOYGEN_PYTHON", &py)
            .env_remove("DEPLOYGEN_TOOLS")
            .current_dir(cwd.path())
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
    };
    let out = run(&[]);
    assert!(out.contains("bisect"), "{out}");
    assert!(!marker.exists(), "the working directory's tools/make_refs.py ran:\n{out}");
    // Named explicitly, it is the one used.
    let out = run(&["--tools", cwd.path().join("tools").to_str().unwrap()]);
    assert!(marker.exists(), "--tools DIR was not used:\n{out}");
}

fn which_python() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("python3")).find(|p| p.is_file())
}
