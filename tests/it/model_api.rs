//! The application API of a training project (`dg_model.h`) and its
//! client `demo.c`: trained through the API, a checkpoint exported and
//! imported, the prediction compared with onnxruntime's (`predict.npz`).
//! Each check is also shown failing: without the import the prediction
//! is wrong, and a checkpoint of another model or with one byte changed
//! is refused.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn have_gcc() -> bool {
    common::have_gcc(module_path!())
}

/// `deploygen build` of a zoo model, then `make -f Makefile.host demo`.
fn demo_project(work: &Path, model: &str, platform: &str, level: &str, cflags: &str) -> PathBuf {
    demo_project_with(work, model, platform, level, cflags, &[])
}

fn demo_project_with(work: &Path, model: &str, platform: &str, level: &str, cflags: &str, args: &[&str]) -> PathBuf {
    demo_project_of(work, &root().join("models").join(model), platform, level, cflags, args)
}

/// `deploygen build` of a model folder, then `make -f Makefile.host demo`.
fn demo_project_of(work: &Path, folder: &Path, platform: &str, level: &str, cflags: &str, args: &[&str]) -> PathBuf {
    let model = folder.file_name().unwrap().to_string_lossy();
    let out = work.join(format!(
        "{model}-{platform}-{level}{}{}",
        if cflags.is_empty() { "" } else { "-x" },
        args.join("").replace('-', "")
    ));
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(folder)
        .args(["--platform", platform, "--default-mem", level, "--out"])
        .arg(&out)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "build {model}: {}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("make")
        .args(["-s", "-j2", "-f", "Makefile.host", "demo"])
        .arg(format!("EXTRA_CFLAGS={cflags}"))
        .current_dir(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "make demo {model}: {}", String::from_utf8_lossy(&o.stderr));
    out
}

fn run(dir: &Path, env: &[(&str, &Path)]) -> (Output, String) {
    let mut c = Command::new("./demo");
    c.current_dir(dir);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    (o, text)
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("deploygen.json")).unwrap()).unwrap()
}

/// What the manifest says the demo compares.
fn demo_compared(dir: &Path) -> u64 {
    manifest(dir)["model_api"]["demo_compared"].as_u64().unwrap()
}

/// `dg_model_predict` runs in eval mode: a BatchNorm normalises with the
/// running statistics the training steps updated, one sample at a time by
/// default, `--predict-batch N` at a time on request. The references are
/// onnxruntime's eval-mode prediction (tools/make_predict_refs.py); the
/// training-mode forward pass of the training batch gives other values.
#[test]
fn predict_is_eval_mode_at_its_own_batch() {
    if !have_gcc() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    for (model, platform, level, args, batch) in [
        ("cnn_derived_adamw", "GAP9", "L2", &[][..], 1),
        ("resnet8", "host", "L2", &[][..], 1),
        ("mobilenet_v3_block_train", "Siracusa", "L3", &[][..], 1),
        // Its Reshape spells out the training batch (2): it predicts at 2.
        ("conv1d_autoencoder_train", "GAP9", "L3", &[][..], 2),
        ("cnn_derived_sgd", "host", "L3", &["--predict-batch", "2"][..], 2),
    ] {
        let dir = demo_project_with(work.path(), model, platform, level, "", args);
        let m = manifest(&dir);
        assert_eq!(m["model_api"]["predict_batch"].as_u64(), Some(batch), "{model}");
        let h = std::fs::read_to_string(dir.join("dg_model.h")).unwrap();
        assert!(h.contains(&format!("#define DG_MODEL_PREDICT_BATCH {batch}u")), "{model}");
        let predict = std::fs::read_to_string(dir.join("PredictNetwork.c")).unwrap();
        assert!(
            predict.contains("dg_batchnorm_f32") && !predict.contains("dg_batchnorm_train_f32"),
            "{model}: predict does not normalise with the running statistics"
        );
        let n = demo_compared(&dir);
        assert!(n > 0, "{model}: the demo compares nothing");
        let (o, text) = run(&dir, &[]);
        assert!(o.status.success(), "{model} {platform} {level}: demo failed:\n{text}");
        assert!(text.contains(&format!("Errors: 0 out of {n}\r\n")), "{model}: {text}");
    }
    // A batch asked for that the model cannot run at: no prediction, and why.
    let dir = demo_project_with(work.path(), "conv1d_autoencoder_train", "host", "L2", "", &["--predict-batch", "1"]);
    let why = manifest(&dir)["model_api"]["no_predict"].as_str().unwrap_or_default().to_string();
    assert!(why.contains("batch 1") && why.contains("Reshape_8"), "{why}");
    let h = std::fs::read_to_string(dir.join("dg_model.h")).unwrap();
    assert!(h.contains("DG_MODEL_ENOPREDICT): the forward part does not run at batch 1"), "{h}");
}

#[test]
fn demo_trains_exports_imports_and_predicts() {
    if !have_gcc() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    for (model, platform, level) in
        [("simple_mlp", "host", "L2"), ("cnn_derived_adamw", "GAP9", "L3"), ("mlp_derived_accum3", "Siracusa", "L2")]
    {
        let dir = demo_project(work.path(), model, platform, level, "");
        let n = demo_compared(&dir);
        assert!(n > 0, "{model}: the demo compares nothing");
        let (o, text) = run(&dir, &[]);
        assert!(o.status.success(), "{model} {platform} {level}: demo failed:\n{text}");
        assert!(text.contains(&format!("Errors: 0 out of {n}\r\n")), "{model}: {text}");
    }
    // A batch asked for that the model cannot run at: no prediction, and why.
    let dir = demo_project_with(work.path(), "conv1d_autoencoder_train", "host", "L2", "", &["--predict-batch", "1"]);
    let why = manifest(&dir)["model_api"]["no_predict"].as_str().unwrap_or_default().to_string();
    assert!(why.contains("batch 1") && why.contains("Reshape_8"), "{why}");
    let h = std::fs::read_to_string(dir.join("dg_model.h")).unwrap();
    assert!(h.contains("DG_MODEL_ENOPREDICT): the forward part does not run at batch 1"), "{h}");
}

#[test]
fn without_the_import_the_prediction_is_wrong() {
    if !have_gcc() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = demo_project(work.path(), "cnn_derived_adamw", "host", "L2", "-DDG_DEMO_SKIP_IMPORT");
    let (o, text) = run(&dir, &[]);
    assert!(!o.status.success(), "the demo passed without importing its checkpoint:\n{text}");
    assert!(text.contains("Errors: ") && !text.contains("Errors: 0 out of"), "{text}");
}

#[test]
fn a_checkpoint_of_another_model_or_changed_is_refused() {
    if !have_gcc() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let cnn = demo_project(work.path(), "cnn_derived_adamw", "host", "L2", "");
    let mlp = demo_project(work.path(), "simple_mlp", "host", "L2", "");
    let saved = work.path().join("cnn.ckpt");
    let (o, text) = run(&cnn, &[("DG_DEMO_SAVE", &saved)]);
    assert!(o.status.success(), "{text}");

    // Its own checkpoint, read back from the file, loads and predicts.
    let (o, text) = run(&cnn, &[("DG_DEMO_LOAD", &saved)]);
    assert!(o.status.success() && text.contains("import of DG_DEMO_LOAD: status 0"), "{text}");

    // Another model's is refused, and nothing runs on it.
    let (o, text) = run(&mlp, &[("DG_DEMO_LOAD", &saved)]);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(text.contains("import of DG_DEMO_LOAD: status -5"), "{text}");

    // One changed byte, in the header or in the payload, is refused.
    let bytes = std::fs::read(&saved).unwrap();
    for at in [2, 9, 20, bytes.len() / 2, bytes.len() - 1] {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x01;
        let f = work.path().join(format!("flipped-{at}.ckpt"));
        std::fs::write(&f, &flipped).unwrap();
        let (o, text) = run(&cnn, &[("DG_DEMO_LOAD", &f)]);
        assert_eq!(o.status.code(), Some(3), "byte {at} changed was loaded:\n{text}");
    }
    // A truncated one too.
    let f = work.path().join("short.ckpt");
    std::fs::write(&f, &bytes[..bytes.len() - 4]).unwrap();
    let (o, text) = run(&cnn, &[("DG_DEMO_LOAD", &f)]);
    assert_eq!(o.status.code(), Some(3), "{text}");
}

#[test]
fn a_model_without_predict_refs_fails_its_demo() {
    if !have_gcc() {
        return;
    }
    // A copy of a zoo model without predict.npz.
    let work = tempfile::tempdir().unwrap();
    let m = work.path().join("models").join("mlp_copy");
    std::fs::create_dir_all(&m).unwrap();
    for f in ["network.onnx", "inputs.npz", "outputs.npz", "train.toml"] {
        std::fs::copy(root().join("models/mlp_derived_sgd").join(f), m.join(f)).unwrap();
    }
    let out = work.path().join("p");
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(&m)
        .args(["--platform", "host", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("make").args(["-s", "-j2", "-f", "Makefile.host", "demo"]).current_dir(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (o, text) = run(&out, &[]);
    assert!(!o.status.success(), "{text}");
    assert!(text.contains("FAILED: no references of the trained model's prediction"), "{text}");
}

#[test]
fn a_predict_file_for_another_tensor_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let m = work.path().join("mlp_copy");
    std::fs::create_dir_all(&m).unwrap();
    for f in ["network.onnx", "inputs.npz", "outputs.npz", "train.toml"] {
        std::fs::copy(root().join("models/mlp_derived_sgd").join(f), m.join(f)).unwrap();
    }
    // predict.npz of another model: its key is no forward output here.
    std::fs::copy(root().join("models/simple_mlp/predict.npz"), m.join("predict.npz")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(&m)
        .args(["--platform", "host", "--out"])
        .arg(work.path().join("p"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("predict.npz") && err.contains("fc3.out") && err.contains("not a forward output"), "{err}");
    assert!(!work.path().join("p").exists());
}

#[test]
fn inspect_says_what_predict_runs() {
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("inspect")
        .arg(root().join("models/cnn_derived_adamw"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    let line = text.lines().find(|l| l.starts_with("predict ")).unwrap_or_else(|| panic!("no predict line:\n{text}"));
    assert!(
        line.contains("outputs logits")
            && line.contains("eval mode, 1 BatchNorm on running statistics")
            && line.contains("batch 1"),
        "{line}"
    );
    // An inference model has no such line.
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("inspect")
        .arg(root().join("models/kws_cnn"))
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stdout).lines().any(|l| l.starts_with("predict ")));
}

/// After `make demo` (and `make`), `build --check` finds the folder as
/// generated and `build --force` may replace it: what make builds is not
/// the user's.
#[test]
fn make_outputs_are_no_difference_and_no_obstacle() {
    if !have_gcc() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = demo_project(work.path(), "simple_mlp", "host", "L2", "");
    let o = Command::new("make").args(["-s", "-j2", "-f", "Makefile.host"]).current_dir(&dir).output().unwrap();
    assert!(o.status.success() && dir.join("app").is_file() && dir.join("demo").is_file());
    let model = root().join("models/simple_mlp");
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(&model)
        .args(["--platform", "host", "--check"])
        .arg(&dir)
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{said}");
    assert!(!said.contains("only in"), "{said}");
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(&model)
        .args(["--platform", "host", "--force", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!dir.join("demo").exists(), "the replaced folder still holds the old demo");
}

/// A one-weight model `x[1,IN] · W[IN,OUT]` with a train.toml: two of
/// them with IN and OUT swapped hold a weight of the same name and bytes.
fn one_weight_model(dir: &Path, inp: i64, out: i64) {
    use common::F32;
    std::fs::create_dir_all(dir).unwrap();
    let mut b = common::ModelBuilder::new();
    let w: Vec<f32> = (0..inp * out).map(|i| (i as f32 * 0.37).sin() * 0.5).collect();
    b.input("x", F32, &[1, inp]).init("W", &[inp, out], &w).node("MatMul", &["x", "W"], &["logits"], vec![]).output(
        "logits",
        F32,
        &[1, out],
    );
    b.write(dir, "network.onnx");
    std::fs::write(dir.join("train.toml"), "loss = \"cross-entropy\"\noptimizer = \"sgd\"\nlearning_rate = 0.1\n")
        .unwrap();
    use deploygen::ir::TensorData;
    let x = TensorData::from_f32(vec![1, inp as usize], &vec![0.25; inp as usize]);
    let labels = TensorData::from_i64(vec![1], &[1]);
    let npz = deploygen::bind::npz::write_npz(&[("x", &x), ("labels", &labels)]).unwrap();
    std::fs::write(dir.join("inputs.npz"), npz).unwrap();
}

/// The layout hash covers dtype and full shape, not only names and byte
/// counts: W[8,4]'s checkpoint is refused by the model whose only weight
/// is W[4,8] (it loaded before), and each model still loads its own.
#[test]
fn a_checkpoint_of_a_same_sized_weight_of_another_shape_is_refused() {
    if !have_gcc() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let mut dirs = vec![];
    for (name, inp, out) in [("w48", 4, 8), ("w84", 8, 4)] {
        let m = work.path().join("models").join(name);
        one_weight_model(&m, inp, out);
        let p = work.path().join(format!("{name}-p"));
        let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
            .arg("build")
            .arg(&m)
            .args(["--platform", "host", "--out"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let h = std::fs::read_to_string(p.join("dg_model.h")).unwrap();
        assert!(h.contains("#define DG_MODEL_WEIGHTS_BYTES 148u"), "{name}: {h}");
        let o =
            Command::new("make").args(["-s", "-j2", "-f", "Makefile.host", "demo"]).current_dir(&p).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        dirs.push(p);
    }
    let saved = work.path().join("w84.ckpt");
    let (_, text) = run(&dirs[1], &[("DG_DEMO_SAVE", &saved)]);
    assert!(saved.is_file(), "{text}");
    let (o, text) = run(&dirs[0], &[("DG_DEMO_LOAD", &saved)]);
    assert_eq!(o.status.code(), Some(3), "W[8,4] loaded into W[4,8]:\n{text}");
    assert!(text.contains("import of DG_DEMO_LOAD: status -5"), "{text}");
    let (_, text) = run(&dirs[1], &[("DG_DEMO_LOAD", &saved)]);
    assert!(text.contains("import of DG_DEMO_LOAD: status 0"), "{text}");
}

/// A fuzz driver for `dg_model_import_weights`, built against a generated
/// project in place of demo.c: random and mutated checkpoints (bytes
/// flipped, header fields replaced, truncated, extended, random sizes,
/// NULL) must come back as a status, never a crash; and the import must
/// accept exactly the checkpoints whose header and payload hash agree
/// (the driver recomputes them as an oracle) and then hold their payload.
const IMPORT_FUZZ: &str = r#"
#include "pmsis.h"
#include "dg_model.h"
#include <stdio.h>
#include <string.h>

#define N DG_MODEL_WEIGHTS_BYTES
static struct pi_device cluster;
static uint8_t good[N], buf[2 * N + 64], back[N];
static uint32_t seed = 0x9e3779b9u;
static uint32_t rnd(void) { seed ^= seed << 13; seed ^= seed >> 17; seed ^= seed << 5; return seed; }
static uint32_t fnv(const uint8_t *p, uint32_t n) { uint32_t h = 0x811c9dc5u, i; for (i = 0; i < n; i++) h = (h ^ p[i]) * 0x01000193u; return h; }
static uint32_t get(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void put(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }
/* What an import of (buf, n) must say. */
static int expected(uint32_t n)
{
    if (n != N || get(buf) != 0x4B434744u || get(buf + 4) != DG_MODEL_CHECKPOINT_VERSION ||
        get(buf + 8) != DG_MODEL_LAYOUT_HASH || get(buf + 12) != N - 20u || get(buf + 16) != fnv(buf + 20, N - 20u))
        return DG_MODEL_ECHECKPOINT;
    return DG_MODEL_OK;
}
static void entry(void)
{
    uint32_t it, n, i, bad = 0, accepted = 0, refused = 0;
    int r;
    struct pi_cluster_conf conf;
    pi_cluster_conf_init(&conf);
    pi_open_from_conf(&cluster, &conf);
    if (pi_cluster_open(&cluster) != 0 || dg_model_init(&cluster) != DG_MODEL_OK ||
        dg_model_export_weights(good, N) != DG_MODEL_OK) {
        printf("FATAL: setup\r\n");
        pmsis_exit(1);
    }
    if (dg_model_import_weights(NULL, N) != DG_MODEL_ECHECKPOINT) bad++;
    for (it = 0; it < FUZZ_RUNS; it++) {
        uint32_t kind = rnd() % 6;
        memcpy(buf, good, N);
        n = N;
        if (kind == 0) { for (i = 0; i < N; i++) buf[i] = (uint8_t)rnd(); }
        else if (kind == 1) { for (i = rnd() % 4 + 1; i > 0; i--) buf[rnd() % N] ^= (uint8_t)(1u << (rnd() % 8)); }
        else if (kind == 2) { put(buf + 4 * (rnd() % 5), rnd()); }
        else if (kind == 3) { n = rnd() % (2 * N + 64); for (i = N; i < n; i++) buf[i] = (uint8_t)rnd(); }
        else if (kind == 4) { for (i = 20; i < N; i++) buf[i] = (uint8_t)rnd(); put(buf + 16, fnv(buf + 20, N - 20u)); }
        else { for (i = 20; i < N; i++) buf[i] = (uint8_t)rnd(); }
        r = dg_model_import_weights(buf, n);
        if (r != expected(n)) {
            printf("FAILED: run %u (kind %u, %u B): status %d, expected %d\r\n", (unsigned)it, (unsigned)kind, (unsigned)n, r, expected(n));
            bad++;
        }
        if (r == DG_MODEL_OK) {
            accepted++;
            if (dg_model_export_weights(back, N) != DG_MODEL_OK || memcmp(back + 20, buf + 20, N - 20u) != 0) {
                printf("FAILED: run %u: the imported payload is not what export gives back\r\n", (unsigned)it);
                bad++;
            }
        } else if (r == DG_MODEL_ECHECKPOINT) {
            refused++;
        }
    }
    printf("fuzz: %u runs, %u accepted, %u refused, %u wrong\r\n", (unsigned)FUZZ_RUNS, (unsigned)accepted,
           (unsigned)refused, (unsigned)bad);
    pmsis_exit(bad != 0);
}
int main(void) { return pmsis_kickoff((void *)entry); }
"#;

#[test]
fn import_weights_fuzz_only_returns_statuses() {
    if !have_gcc() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    for (model, platform, level) in [("cnn_derived_adamw", "host", "L2"), ("mlp_derived_accum3", "GAP9", "L3")] {
        let dir = work.path().join(format!("{model}-{platform}-{level}"));
        let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
            .arg("build")
            .arg(root().join("models").join(model))
            .args(["--platform", platform, "--default-mem", level, "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::write(dir.join("demo.c"), IMPORT_FUZZ).unwrap();
        let o = Command::new("make")
            .args([
                "-s",
                "-j2",
                "-f",
                "Makefile.host",
                "demo",
                "EXTRA_CFLAGS=-DFUZZ_RUNS=20000u -fsanitize=address,undefined -fno-sanitize-recover=all",
                "EXTRA_LDFLAGS=-fsanitize=address,undefined",
            ])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let o = Command::new("./demo").current_dir(&dir).env("ASAN_OPTIONS", "detect_leaks=0").output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{model}: {text}\n{}", String::from_utf8_lossy(&o.stderr));
        assert!(text.contains("fuzz: 20000 runs") && text.contains(" 0 wrong"), "{text}");
        let accepted: u32 = text.split(" accepted").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
        assert!(accepted > 1000, "the fuzz hardly reached the load path: {text}");
    }
}

/// Inference projects have `dg_model.h` too: its demo sets the inputs,
/// predicts and compares every output with the harness's references.
#[test]
fn inference_projects_have_the_api_and_its_demo_passes() {
    if !have_gcc() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    for (model, platform, level) in [("kws_cnn", "host", "L2"), ("mobilenet_v3_block", "GAP9", "L3")] {
        let dir = demo_project(work.path(), model, platform, level, "");
        let h = std::fs::read_to_string(dir.join("dg_model.h")).unwrap();
        assert!(h.contains("#define DG_MODEL_TRAINING 0") && h.contains("#define CC_STACK_SIZE"), "{h}");
        let n = demo_compared(&dir);
        assert!(n > 0, "{model}: the demo compares nothing");
        let (o, text) = run(&dir, &[]);
        assert!(o.status.success() && text.contains(&format!("Errors: 0 out of {n}\r\n")), "{model}: {text}");
    }
}

/// The demo compares floats as the harness does,
/// `|computed - ref| <= atol + rtol * |ref|`, with the same atol and rtol
/// (`--tolerance`, `--rtol`): references 1.0005 times onnxruntime's pass
/// with atol 1e-6 and rtol 1e-3, and fail with rtol 0.
#[test]
fn the_demo_compares_with_the_harness_rtol() {
    if !have_gcc() {
        return;
    }
    use deploygen::ir::TensorData;
    let copy = common::copy_model(&root().join("models/kws_cnn"));
    let folder = copy.path().join("kws_cnn");
    std::fs::create_dir(&folder).unwrap();
    for f in ["network.onnx", "inputs.npz", "outputs.npz"] {
        std::fs::rename(copy.path().join(f), folder.join(f)).unwrap();
    }
    let path = folder.join("outputs.npz");
    let arrays = deploygen::bind::npz::read_all(&path).unwrap().arrays;
    let scaled: Vec<(String, TensorData)> = arrays
        .into_iter()
        .map(|(k, v)| {
            let x: Vec<f32> = v.to_f32().unwrap().iter().map(|x| x * 1.0005).collect();
            (k, TensorData::from_f32(v.shape.clone(), &x))
        })
        .collect();
    let refs: Vec<(&str, &TensorData)> = scaled.iter().map(|(k, v)| (k.as_str(), v)).collect();
    std::fs::write(&path, deploygen::bind::npz::write_npz(&refs).unwrap()).unwrap();
    let work = tempfile::tempdir().unwrap();
    for (rtol, pass) in [("1e-3", true), ("0", false)] {
        let dir = demo_project_of(work.path(), &folder, "host", "L2", "", &["--tolerance", "1e-6", "--rtol", rtol]);
        let n = demo_compared(&dir);
        let (o, text) = run(&dir, &[]);
        let clean = text.contains(&format!("Errors: 0 out of {n}\r\n"));
        assert_eq!(o.status.success() && clean, pass, "rtol {rtol}: the demo printed\n{text}");
    }
}
