//! Every family of kernel bindings, end to end on the host
//! emulation: a few zoo models that together use every binding family
//! (unary and parameterised activations, Clip with constant bounds,
//! Max / Min, Where, Cast, Gather, Split, Pad, the group / instance / RMS
//! normalizations, GlobalMaxPool, ReduceMax, ConvTranspose, and the
//! training graphs' SigmoidGrad, TanhGrad, GatherGrad, SplitTraining,
//! ConcatTraining, Sign and the comparisons) are generated, compiled, run
//! and must print `Errors: 0 out of N` with N the number of references.

use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

use crate::common;

fn have_gcc() -> bool {
    common::have_gcc(module_path!())
}

#[test]
fn operator_family_models_compute_their_references_on_host() {
    if !have_gcc() {
        return;
    }
    let models = ["ops_mixed", "ops_mixed_train", "mobilenet_v3_block", "rmsnorm_transformer", "conv1d_autoencoder"];
    let mut cmd = Command::cargo_bin("deploygen").unwrap();
    cmd.arg("test");
    for m in models {
        cmd.arg(common::zoo(m));
    }
    let o = cmd
        .args(["--platform", "host", "--default-mem", "L2", "--status"])
        .arg(common::root().join("status.toml"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "deploygen test failed:\n{out}\n{err}");
    for m in models {
        let line = out.lines().find(|l| l.starts_with("PASSED") && l.contains(&format!("{m}/host-L2-")));
        let line = line.unwrap_or_else(|| panic!("{m} did not pass:\n{out}"));
        assert!(line.contains("Errors: 0 out of "), "{line}");
    }
    assert!(out.contains(&format!("{} cases: {} passed, 0 failed", models.len(), models.len())), "{out}");
}
