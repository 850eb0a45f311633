//! `deploygen build` end to end: generated projects compile against the
//! host emulation, run, and really compare (a perturbed reference, a NaN
//! and a wrong reference count each make the run fail); bad input is exit
//! 2 with nothing written; `--check`, `--force` and byte-identical output.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use deploygen::cli::build::{generate, Args as BuildArgs};

fn deploygen() -> Command {
    Command::cargo_bin("deploygen").unwrap()
}

fn build(model: &Path, platform: &str, level: &str, out: &Path, extra: &[&str]) -> std::process::Output {
    deploygen()
        .arg("build")
        .arg(model)
        .args(["--platform", platform, "--default-mem", level, "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn have_gcc() -> bool {
    common::have_gcc(module_path!())
}

/// `make -f Makefile.host` with the runtime from the shared archive (the
/// golden test builds a project standalone; these tests are about what the
/// project computes).
fn make(dir: &Path) {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-cache");
    let vars = deploygen::verify::cache::MakeVars::default();
    let lib = deploygen::verify::cache::archive(&cache, dir, &vars, 2, std::time::Duration::from_secs(900));
    let mut cmd = Command::new("make");
    cmd.args(["-s", "-f", "Makefile.host"]).current_dir(dir);
    if let Ok(lib) = lib {
        cmd.arg(format!("RUNTIME_LIB={}", lib.display()));
    }
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "make -f Makefile.host failed in {}:\n{}{}",
        dir.display(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Run ./app; (exit code, stdout).
fn run(dir: &Path) -> (i32, String) {
    let o = Command::new("./app").current_dir(dir).env("DG_HOST_QUIET", "1").output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into_owned())
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("deploygen.json")).unwrap()).unwrap()
}

/// Replace the first element of the C array `name` in `file`.
fn perturb(file: &Path, array: &str, with: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    let start = text.find(&format!("{array}[")).unwrap_or_else(|| panic!("{array} not in {}", file.display()));
    let body = start + text[start..].find("{\n").unwrap() + 2;
    let first_end = body + text[body..].find(',').unwrap();
    let new = format!("{}    {with}{}", &text[..body], &text[first_end..]);
    std::fs::write(file, new).unwrap();
}

#[test]
fn simple_mlp_runs_to_errors_0_and_every_check_can_fail() {
    if !have_gcc() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    let o = build(&common::zoo("simple_mlp"), "GAP9", "L2", &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary = String::from_utf8_lossy(&o.stdout);
    for want in ["files:", "L2: arena", "weights: ", "baked", "compares: 4 loss(es)"] {
        assert!(summary.contains(want), "summary lacks {want:?}:\n{summary}");
    }
    let m = manifest(&out);
    let n = m["expected_compared"].as_u64().unwrap();
    assert_eq!(m["kind"], "training");
    assert_eq!(m["loss_refs"], 4);
    assert!(n > 4);
    make(&out);
    let (rc, stdout) = run(&out);
    assert_eq!(rc, 0, "{stdout}");
    assert!(stdout.contains(&format!("Errors: 0 out of {n}\r\n")), "{stdout}");
    assert!(stdout.contains("[loss 3] computed="), "{stdout}");
    assert!(stdout.contains("[check fc1.weight_updated] errors 0 out of 2048"), "{stdout}");
    assert!(stdout.contains("BENCH train_cycles="), "{stdout}");

    // An allocation that fails stops Init, is named, and fails the run.
    let o =
        Command::new("./app").current_dir(&out).env("DG_HOST_QUIET", "1").env("DG_L1_SIZE", "1024").output().unwrap();
    let so = String::from_utf8_lossy(&o.stdout);
    assert_ne!(o.status.code(), Some(0), "{so}");
    assert!(so.contains("FATAL: L1 allocation of ") && so.contains(" B failed (L1 arena)"), "{so}");
    assert!(!so.contains("[loss"), "nothing computes after a failed Init: {so}");

    // A loss reference off by one: that loss fails, the others pass.
    let outputs = out.join("testoutputs.h");
    let pristine = std::fs::read_to_string(&outputs).unwrap();
    perturb(&outputs, "testLossRef", "100.0f");
    make(&out);
    let (rc, stdout) = run(&out);
    assert_ne!(rc, 0, "{stdout}");
    assert!(stdout.contains(&format!("Errors: 1 out of {n}\r\n")), "{stdout}");

    // A NaN reference counts as an error.
    std::fs::write(&outputs, &pristine).unwrap();
    perturb(&outputs, "testRef_0", "NAN");
    make(&out);
    let (rc, stdout) = run(&out);
    assert_ne!(rc, 0, "{stdout}");
    assert!(stdout.contains(&format!("Errors: 1 out of {n}\r\n")), "{stdout}");
    assert!(stdout.contains("  mismatch fc1.weight_updated[0] computed="), "{stdout}");

    // Comparing fewer values than there are references fails.
    let more =
        pristine.replace(&format!("#define EXPECTED_COMPARED {n}u"), &format!("#define EXPECTED_COMPARED {}u", n + 1));
    assert_ne!(more, pristine);
    std::fs::write(&outputs, more).unwrap();
    make(&out);
    let (rc, stdout) = run(&out);
    assert_ne!(rc, 0, "{stdout}");
    assert!(stdout.contains(&format!("FAILED: compared {n} values, expected {}", n + 1)), "{stdout}");

    // A missing weight supply (all-zero weights) is caught by the losses.
    std::fs::write(&outputs, &pristine).unwrap();
    let weights = out.join("Weights.c");
    let w = std::fs::read_to_string(&weights).unwrap();
    let zeroed: String = w
        .lines()
        .map(|l| {
            if l.starts_with("    ") && l.ends_with(',') {
                let k = l.matches(',').count();
                format!("    {}", "0.0f, ".repeat(k).trim_end())
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&weights, zeroed).unwrap();
    make(&out);
    let (rc, stdout) = run(&out);
    assert_ne!(rc, 0, "{stdout}");
    assert!(stdout.contains("[loss 0] computed=2.302585"), "zero weights give ln(10): {stdout}");
}

#[test]
fn resnet8_with_l3_staged_weights_runs() {
    if !have_gcc() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    // 362,904 B of the image are test data, kept in L2: one weight is staged.
    let o = build(&common::zoo("resnet8"), "GAP9", "L2", &out, &["--l2-image", "420000", "--test-data", "L2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("l3-staged"));
    let m = manifest(&out);
    let supplies: Vec<&str> = m["weights"].as_array().unwrap().iter().map(|w| w["supply"].as_str().unwrap()).collect();
    assert!(supplies.contains(&"l3-staged") && supplies.contains(&"baked"), "{supplies:?}");
    assert!(out.join("hex/l3.bin").is_file());
    let ti = std::fs::read_to_string(out.join("testinputs.h")).unwrap();
    assert!(!ti.contains("#define TRAINING_SKIP_INITWEIGHT_COPY"), "staged weights are copied at Init");
    make(&out);
    let (rc, stdout) = run(&out);
    let n = m["expected_compared"].as_u64().unwrap();
    assert_eq!(rc, 0, "{stdout}");
    assert!(stdout.contains(&format!("Errors: 0 out of {n}\r\n")), "{stdout}");
}

#[test]
fn inference_at_l3_runs_from_the_packed_image() {
    if !have_gcc() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    let o = build(&common::zoo("kws_cnn"), "Siracusa", "L3", &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = manifest(&out);
    assert_eq!(m["kind"], "inference");
    assert!(m["weights"].as_array().unwrap().iter().all(|w| w["supply"] == "l3-hex"));
    let mk = std::fs::read_to_string(out.join("Makefile")).unwrap();
    for want in
        ["APP = ", "APP_SRCS", "APP_CFLAGS = -std=gnu99 -O2", "READFS_FILES", "include $(RULES_DIR)/pmsis_rules.mk"]
    {
        assert!(mk.contains(want), "{want}");
    }
    make(&out);
    let (rc, stdout) = run(&out);
    assert_eq!(rc, 0, "{stdout}");
    assert!(stdout.contains("BENCH cycles="), "{stdout}");
    // One file per buffer (--hex-files) works the same.
    let hexed = tmp.path().join("h");
    let o = build(&common::zoo("kws_cnn"), "Siracusa", "L3", &hexed, &["--hex-files"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(hexed.join("hex/0.hex").is_file() && !hexed.join("hex/l3.bin").exists());
    make(&hexed);
    let (rc, stdout) = run(&hexed);
    assert_eq!(rc, 0, "{stdout}");
    // Without its image the run cannot start, and says so.
    std::fs::remove_file(out.join("hex/l3.bin")).unwrap();
    let (rc, stdout) = run(&out);
    assert_ne!(rc, 0);
    assert!(stdout.contains("FATAL: cannot open l3.bin"), "{stdout}");
}

/// A model without test data: `build` says so up front (a warning), and
/// the harness compiles (for a training step, no `N_TRAIN_STEPS 0` loop
/// for `-Werror=type-limits`), compares nothing and fails saying why.
#[test]
fn a_model_without_test_data_warns_and_its_run_fails_saying_why() {
    if !have_gcc() {
        return;
    }
    for zoo_model in ["kws_cnn", "cnn_inline_sgd"] {
        let tmp = tempfile::tempdir().unwrap();
        let model = tmp.path().join("bare");
        std::fs::create_dir(&model).unwrap();
        std::fs::copy(common::zoo(zoo_model).join("network.onnx"), model.join("network.onnx")).unwrap();
        let out = tmp.path().join("p");
        let o = build(&model, "host", "L2", &out, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{zoo_model}: {err}");
        assert!(err.contains("warning:") && err.contains("no test data"), "{zoo_model}: {err}");
        assert_eq!(manifest(&out)["expected_compared"], 0);
        make(&out);
        let (rc, stdout) = run(&out);
        assert_ne!(rc, 0, "{zoo_model}: {stdout}");
        assert!(stdout.contains("Errors: 0 out of 0"), "{zoo_model}: {stdout}");
        assert!(stdout.contains("FAILED: model 'bare' has no inputs.npz"), "{zoo_model}: {stdout}");
        assert!(stdout.contains("no test data"), "{zoo_model}: {stdout}");
    }
}

#[test]
fn a_node_its_kernel_binding_refuses_is_exit_2_before_anything_is_written() {
    // The MatMul kernel has no batch transposes: FusedMatMul with
    // transBatchA is refused when generating code.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    std::fs::create_dir(&dir).unwrap();
    let mut b = common::ModelBuilder::new();
    b.opsets.push(("com.microsoft".into(), 1));
    b.input("a", common::F32, &[2, 3, 4]).input("b", common::F32, &[2, 4, 5]).output("y", common::F32, &[2, 3, 5]);
    b.node_in("FusedMatMul", "com.microsoft", &["a", "b"], &["y"], vec![common::attr_int("transBatchA", 1)]);
    b.write(&dir, "network.onnx");
    let out = tmp.path().join("p");
    let o = build(&dir, "GAP9", "L2", &out, &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("FusedMatMul") && err.contains("transBatchA"), "{err}");
    assert!(!out.exists());
}

#[test]
fn plan_errors_are_exit_2_and_leave_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    let o = build(&common::zoo("resnet8"), "GAP9", "L3", &out, &["--l3", "1000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not fit"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing written");
    let o = build(&common::fixture("missing_labels"), "GAP9", "L2", &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!out.exists());
}

#[test]
fn check_force_and_byte_identical_output() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let model = common::zoo("simple_mlp");
    assert!(build(&model, "Siracusa", "L3", &a, &[]).status.success());
    assert!(build(&model, "Siracusa", "L3", &b, &[]).status.success());
    let mut fa = vec![];
    let mut fb = vec![];
    list(&a, Path::new(""), &mut fa);
    list(&b, Path::new(""), &mut fb);
    assert_eq!(fa, fb);
    for f in &fa {
        assert_eq!(std::fs::read(a.join(f)).unwrap(), std::fs::read(b.join(f)).unwrap(), "{}", f.display());
    }
    // An existing folder is replaced only with --force.
    let o = build(&model, "Siracusa", "L3", &a, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
    // --check: identical → 0; a changed file → 1 and a diff; nothing written.
    let o = build(&model, "Siracusa", "L3", Path::new("unused"), &["--check", a.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let main = a.join("main.c");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, text.replacen("#include", "#include \"extra.h\"\n#include", 1)).unwrap();
    let o = build(&model, "Siracusa", "L3", Path::new("unused"), &["--check", a.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let diff = String::from_utf8_lossy(&o.stdout);
    assert!(diff.contains("--- a/main.c") && diff.contains("-#include \"extra.h\""), "{diff}");
    assert!(!Path::new("unused").exists());
    // --force does not replace a generated file someone edited: exit 2
    // naming it; put back as generated, the folder is replaced.
    let o = build(&model, "Siracusa", "L3", &a, &["--force"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("main.c"), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(&main, &text).unwrap();
    let o = build(&model, "Siracusa", "L3", &a, &["--force"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&main).unwrap(), std::fs::read(b.join("main.c")).unwrap());
}

fn list(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let mut es: Vec<_> = std::fs::read_dir(root.join(rel)).unwrap().flatten().collect();
    es.sort_by_key(|e| e.file_name());
    for e in es {
        let r = rel.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            list(root, &r, out);
        } else {
            out.push(r);
        }
    }
}

/// Every zoo model (and the conformance models, when present) generates on
/// every platform at L2 and L3, or fails with the plan's capacity error;
/// the harness compares exactly what the manifest promises.
#[test]
fn every_model_generates_on_every_platform_and_level() {
    let mut models: Vec<PathBuf> = std::fs::read_dir(common::root().join("models"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("network.onnx").is_file())
        .collect();
    models.sort();
    let test = "every_model_generates_on_every_platform_and_level";
    for name in ["CCT2_LP", "CCT2_FT1"] {
        models.extend(common::conformance(test, name));
    }
    for m in &models {
        for platform in ["GAP9", "Siracusa", "host"] {
            for level in ["L2", "L3"] {
                let args = BuildArgs {
                    model: m.clone(),
                    platform: platform.into(),
                    default_mem: Some(level.into()),
                    ..Default::default()
                };
                match generate(&args) {
                    Ok(b) => {
                        let man = &b.project.manifest;
                        assert!(man.expected_compared > 0, "{} {platform} {level}", m.display());
                        let main = b.project.files.iter().find(|(p, _)| p == Path::new("main.c")).unwrap();
                        let main = String::from_utf8_lossy(&main.1);
                        assert!(!main.contains("pi_core_id() != 0"), "no core-id guard");
                        let again = generate(&args).unwrap();
                        assert_eq!(b.project.files, again.project.files, "deterministic");
                    }
                    Err(deploygen::Error::Capacity { .. }) => {}
                    Err(e) => panic!("{} {platform} {level}: {e}", m.display()),
                }
            }
        }
    }
}

#[test]
fn the_test_data_is_counted_in_the_l2_plan() {
    // testinputs.h and testoutputs.h, kept in L2, are static L2 arrays: the
    // plan must count them in L2 (capacity and image), not only the weights.
    let args = BuildArgs {
        model: common::zoo("resnet8"),
        platform: "GAP9".into(),
        default_mem: Some("L2".into()),
        plan: deploygen::cli::plan_args::PlanArgs { test_data: Some("L2".into()), ..Default::default() },
        ..Default::default()
    };
    let b = generate(&args).unwrap();
    let l2 = b.plan.level(deploygen::plan::Level::L2);
    let baked: u64 =
        b.plan.weights.iter().filter(|w| w.supply == deploygen::plan::Supply::Baked).map(|w| w.bytes).sum();
    let model = deploygen::load(&args.model).unwrap();
    let binding = deploygen::bind::bind(&model, &Default::default()).unwrap();
    let data = binding.test_data_bytes(true);
    assert!(data > 300_000, "resnet8 carries {data} B of test vectors and references");
    assert!(
        l2.static_bytes >= baked + data,
        "L2 static {} B < weights {baked} B + test data {data} B",
        l2.static_bytes
    );
    // Too little L2 for weights, activations and test data is refused
    // rather than emitted (it would overflow the chip's L2 at boot).
    let tight = BuildArgs {
        plan: deploygen::cli::plan_args::PlanArgs { l2: Some(l2.needed_bytes - data / 2), ..args.plan.clone() },
        ..args
    };
    match generate(&tight) {
        Err(deploygen::Error::Capacity { .. }) => {}
        Err(e) => panic!("expected a capacity error, got {e}"),
        Ok(b) => assert!(
            b.plan.level(deploygen::plan::Level::L2).static_bytes >= data,
            "the test data is still counted when L2 is short"
        ),
    }
}
