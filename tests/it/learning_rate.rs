//! `dg_model_set_learning_rate` changes the rate every optimizer step
//! reads: a driver compiled against a generated project in place of
//! demo.c trains through the API after setting the rate, and the weights
//! in the checkpoint tell what the steps did. A rate of 0 keeps every
//! trainable weight where it was (SGD, momentum, AdamW, SGD inside the
//! training graph); a train.toml model given another rate through the API
//! ends bit for bit where the same model built with that rate in its
//! train.toml ends. Each run is also checked to move the weights when the
//! rate is left alone, so a driver that trains nothing cannot pass.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const DRIVER: &str = r#"
#include "pmsis.h"
#include "TrainingNetwork.h"
#include "dg_mem.h"
#include "dg_model.h"
#include "testinputs.h"
/* demoInput: the API training input of each test-data column; the
 * prediction references beside it are not used here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"
#include "testpredict.h"
#pragma GCC diagnostic pop
#include <stdio.h>
#include <stdlib.h>

static struct pi_device cluster;
static uint8_t ckpt[DG_MODEL_WEIGHTS_BYTES];

/* The checkpoint, into the file named by environment variable `var`. */
static int save(const char *var)
{
    const char *path = getenv(var);
    FILE *f;
    if (path == NULL || dg_model_export_weights(ckpt, sizeof ckpt) != DG_MODEL_OK)
        return -1;
    f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    if (fwrite(ckpt, 1, sizeof ckpt, f) != sizeof ckpt) {
        fclose(f);
        return -1;
    }
    return fclose(f);
}

static void entry(void)
{
    struct pi_cluster_conf conf;
    const char *rate = getenv("LR_SET");
    uint32_t mb, i;
    int r;
    pi_cluster_conf_init(&conf);
    pi_open_from_conf(&cluster, &conf);
    if (pi_cluster_open(&cluster) != 0 || dg_model_init(&cluster) != DG_MODEL_OK) {
        printf("FATAL: init\r\n");
        pmsis_exit(1);
    }
#ifdef TEST_DATA_L3_FILE
    if (dg_load_file_to_l3(DG_L3(TEST_DATA_L3_BASE), TEST_DATA_L3_FILE, TEST_DATA_L3_BYTES) != TEST_DATA_L3_BYTES) {
        printf("FATAL: test data\r\n");
        pmsis_exit(1);
    }
#endif
    if (save("LR_BEFORE") != 0) {
        printf("FATAL: export before\r\n");
        pmsis_exit(1);
    }
    if (rate != NULL)
        printf("set_learning_rate(%.9g): status %d\r\n", (double)strtof(rate, NULL),
               dg_model_set_learning_rate(strtof(rate, NULL)));
    for (mb = 0; mb < N_TRAIN_STEPS * N_ACCUM_STEPS; mb++) {
        r = DG_MODEL_OK;
        for (i = 0; i < TEST_NUM_DATA_SLOTS && r == DG_MODEL_OK; i++)
            r = dg_model_set_train_input(demoInput[i], TEST_DATA(mb % TRAINING_DATA_SIZE, i),
                                         dg_model_train_input_bytes(demoInput[i]));
        if (r == DG_MODEL_OK)
            r = dg_model_train_step();
        if (r != DG_MODEL_OK) {
            printf("FATAL: pass %u: status %d\r\n", (unsigned)mb, r);
            pmsis_exit(1);
        }
    }
    if (save("LR_AFTER") != 0) {
        printf("FATAL: export after\r\n");
        pmsis_exit(1);
    }
    printf("trained: %u pass(es)\r\n", (unsigned)(N_TRAIN_STEPS * N_ACCUM_STEPS));
    pmsis_exit(0);
}

int main(void) { return pmsis_kickoff((void *)entry); }
"#;

/// `deploygen build` of `model` for the host, with the driver as demo.c.
fn project(model: &Path, out: &Path) -> PathBuf {
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(model)
        .args(["--platform", "host", "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "build {}: {}", model.display(), String::from_utf8_lossy(&o.stderr));
    std::fs::write(out.join("demo.c"), DRIVER).unwrap();
    let o = Command::new("make").args(["-s", "-j2", "-f", "Makefile.host", "demo"]).current_dir(out).output().unwrap();
    assert!(o.status.success(), "make {}: {}", out.display(), String::from_utf8_lossy(&o.stderr));
    out.to_path_buf()
}

struct Run {
    text: String,
    before: Vec<u8>,
    after: Vec<u8>,
}

/// Trains the project's test-data schedule through the API, the rate set
/// to `rate` first when given; the checkpoints before and after.
fn train(dir: &Path, rate: Option<&str>) -> Run {
    let (b, a) = (dir.join("before.ckpt"), dir.join("after.ckpt"));
    let mut c = Command::new("./demo");
    c.current_dir(dir).env("LR_BEFORE", &b).env("LR_AFTER", &a);
    if let Some(r) = rate {
        c.env("LR_SET", r);
    }
    let o = c.output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}: {text}", dir.display());
    Run { text, before: std::fs::read(&b).unwrap(), after: std::fs::read(&a).unwrap() }
}

/// Bytes of the checkpoint's trainable weights: after its 20-byte header,
/// the weights come first (dg_model.c's state table says which entries).
fn weights(dir: &Path) -> std::ops::Range<usize> {
    let c = std::fs::read_to_string(dir.join("dg_model.c")).unwrap();
    let lines: Vec<&str> = c.lines().collect();
    let mut n = 0usize;
    for (i, l) in lines.iter().enumerate() {
        if l.contains("dg_state[") && l.ends_with("trainable weight */") {
            let b = lines[i + 1].trim().trim_start_matches(|ch| ch != '=').trim_start_matches("= ");
            n += b.trim_end_matches("u;").parse::<usize>().unwrap();
        }
    }
    assert!(n > 0, "{}: no trainable weight in the checkpoint", dir.display());
    20..20 + n
}

/// Rate 0 through the API: the weights stay; left alone they move.
fn zero_rate_keeps_the_weights(dir: &Path) {
    let w = weights(dir);
    let plain = train(dir, None);
    assert_ne!(plain.before[w.clone()], plain.after[w.clone()], "{}: training moved no weight", dir.display());
    let zero = train(dir, Some("0"));
    assert!(zero.text.contains("set_learning_rate(0): status 0\r\n"), "{}: {}", dir.display(), zero.text);
    assert!(zero.before == plain.before, "{}: the runs start apart", dir.display());
    assert!(
        zero.before[w.clone()] == zero.after[w.clone()],
        "{}: with the learning rate set to 0 the weights moved\n{}",
        dir.display(),
        zero.text
    );
}

/// Every optimizer of a derived training step (SGD, momentum with
/// accumulation, AdamW): rate 0 keeps the weights; another rate through
/// the API gives exactly what that rate in train.toml gives.
#[test]
fn the_rate_set_through_the_api_is_the_rate_the_optimizer_uses() {
    if !common::have_gcc(module_path!()) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    for (model, rate) in
        [("cnn_derived_sgd", "0.03125"), ("cnn_derived_momentum", "0.125"), ("cnn_derived_adamw", "0.0625")]
    {
        let src = root().join("models").join(model);
        let a = project(&src, &work.path().join(model));
        zero_rate_keeps_the_weights(&a);

        // The same model with `rate` in its train.toml.
        let copy_dir = common::copy_model(&src);
        let copy = copy_dir.path();
        let toml = std::fs::read_to_string(src.join("train.toml")).unwrap();
        let changed: String = toml
            .lines()
            .map(
                |l| if l.starts_with("learning_rate") { format!("learning_rate = {rate}\n") } else { format!("{l}\n") },
            )
            .collect();
        assert_ne!(changed, toml, "{model}: train.toml has no learning_rate");
        std::fs::write(copy.join("train.toml"), changed).unwrap();
        let b = project(copy, &work.path().join(format!("{model}-lr")));

        let reference = train(&b, None);
        let plain = train(&a, None);
        let set = train(&a, Some(rate));
        assert!(set.text.contains(&format!("set_learning_rate({rate}): status 0\r\n")), "{model}: {}", set.text);
        // The payloads (the header's layout hash names the project).
        let p = 20..set.after.len();
        assert!(set.before[p.clone()] == reference.before[p.clone()], "{model}: the builds start apart");
        assert!(reference.after[p.clone()] != plain.after[p.clone()], "{model}: train.toml's rate changed nothing");
        assert!(
            set.after[p.clone()] == reference.after[p.clone()],
            "{model}: trained at {rate} through dg_model_set_learning_rate, the checkpoint is not the one of \
             train.toml's learning_rate = {rate}\n{}",
            set.text
        );
    }
}

/// A rate that is NaN, infinite or negative is refused (DG_MODEL_ERATE)
/// and the training goes on at the rate it had.
#[test]
fn a_rate_that_is_not_a_finite_positive_number_is_refused() {
    if !common::have_gcc(module_path!()) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let a = project(&root().join("models").join("cnn_derived_sgd"), &work.path().join("sgd"));
    let h = std::fs::read_to_string(a.join("dg_model.h")).unwrap();
    assert!(h.contains("#define DG_MODEL_ERATE (-10)"), "{h}");
    let plain = train(&a, None);
    for bad in ["nan", "inf", "-inf", "-0.5"] {
        let run = train(&a, Some(bad));
        assert!(run.text.contains("): status -10\r\n"), "{bad}: {}", run.text);
        assert!(run.after == plain.after, "{bad}: a refused rate changed the training");
    }
    // The smallest positive rate is a rate.
    let tiny = train(&a, Some("1e-45"));
    assert!(tiny.text.contains("): status 0\r\n"), "{}", tiny.text);
}

/// SGD inside the training graph, its rate an attribute of every SGD node
/// (one shared value): the rate is run-time too.
#[test]
fn the_rate_of_sgd_in_the_training_graph_can_be_set() {
    if !common::have_gcc(module_path!()) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    for model in ["cnn_inline_sgd", "conv_ordered_npz_train"] {
        let a = project(&root().join("models").join(model), &work.path().join(model));
        zero_rate_keeps_the_weights(&a);
        // Doubling the rate trains elsewhere than the graph's own rate.
        let h = std::fs::read_to_string(a.join("TrainingNetwork.c")).unwrap();
        let lit = h
            .lines()
            .find_map(|l| l.strip_prefix("float DeeployNetwork_learning_rate = "))
            .unwrap_or_else(|| panic!("{model}: no run-time learning rate in TrainingNetwork.c"));
        let lr: f32 = lit.trim_end_matches(';').trim_end_matches('f').parse().unwrap();
        let plain = train(&a, None);
        let same = train(&a, Some(&format!("{lr:e}")));
        let double = train(&a, Some(&format!("{:e}", lr * 2.0)));
        assert!(same.after == plain.after, "{model}: setting the graph's own rate changed the training");
        assert!(double.after != plain.after, "{model}: a doubled rate trained as the graph's own");
    }
}

/// SGD steps of one training graph with different rates: no one float
/// holds the rate, so the call says it cannot change it
/// (DG_MODEL_ENORATE) and the steps keep their own rates.
#[test]
fn a_rate_that_cannot_change_is_refused_not_ignored() {
    use deploygen::import::pb;
    use prost::Message;
    if !common::have_gcc(module_path!()) {
        return;
    }
    let model = common::copy_model(&root().join("models").join("cnn_inline_sgd"));
    let path = model.path().join("network.onnx");
    let mut m = pb::ModelProto::decode(std::fs::read(&path).unwrap().as_slice()).unwrap();
    let sgd = m.graph.as_mut().unwrap().node.iter_mut().find(|n| n.op_type() == "SGD").expect("an SGD node");
    sgd.attribute.retain(|a| a.name() != "lr");
    sgd.attribute.push(common::attr_float("lr", 0.02));
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let a = project(model.path(), &work.path().join("two-rates"));
    let h = std::fs::read_to_string(a.join("dg_model.h")).unwrap();
    assert!(h.contains("#define DG_MODEL_ENORATE (-9)"), "{h}");
    let w = weights(&a);
    let plain = train(&a, None);
    let zero = train(&a, Some("0"));
    assert!(zero.text.contains("set_learning_rate(0): status -9\r\n"), "{}", zero.text);
    assert!(zero.after[w.clone()] != zero.before[w.clone()], "the refused rate 0 stopped the training");
    assert!(zero.after == plain.after, "a refused rate changed the training");
}
