//! docs/firmware.md's example loop is compiled against a generated
//! project and run on the host emulation: the C block under "An example
//! loop" is taken from the doc as written, with a driver that supplies
//! the application's functions. It must build warning-free against
//! `dg_model.h` (every name and constant it uses exists there), learn,
//! write a checkpoint, and load it again after a second init.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The first ```c block after the heading `## An example loop`.
fn doc_example() -> String {
    let doc = std::fs::read_to_string(root().join("docs/firmware.md")).unwrap();
    let at = doc.find("## An example loop").expect("docs/firmware.md has no 'An example loop' section");
    let rest = &doc[at..];
    let start = rest.find("```c\n").expect("no C block in 'An example loop'") + 5;
    let len = rest[start..].find("```").expect("unterminated C block");
    rest[start..start + len].to_string()
}

/// The application's side of the example: samples from a fixed
/// pseudo-random sequence, labels in range, a checkpoint kept in memory.
const DRIVER: &str = r#"
#include <stdio.h>
#include <math.h>
#include <string.h>

#define CLASSES (DG_MODEL_OUT_0_BYTES / sizeof(float) / DG_MODEL_PREDICT_BATCH)
static uint32_t seed = 12345u;
static float rnd(void) { seed = seed * 1664525u + 1013904223u; return (float)(seed >> 8) / 16777216.0f - 0.5f; }
void next_labelled_batch(float *s, int64_t *l)
{
    uint32_t i;
    for (i = 0; i < DG_MODEL_TRAIN_IN_0_BYTES / sizeof(float); i++) s[i] = rnd();
    for (i = 0; i < DG_MODEL_TRAIN_IN_1_BYTES / sizeof(int64_t); i++) l[i] = (int64_t)(i % CLASSES);
}
void next_sample(float *s)
{
    uint32_t i;
    for (i = 0; i < DG_MODEL_IN_0_BYTES / sizeof(float); i++) s[i] = rnd();
}
static uint8_t flash[DG_MODEL_WEIGHTS_BYTES];
static uint32_t flash_bytes, writes, used;
uint32_t flash_read_checkpoint(void *buf, uint32_t bytes)
{
    if (flash_bytes == 0 || bytes < flash_bytes) return 0;
    memcpy(buf, flash, flash_bytes);
    return flash_bytes;
}
void flash_write_checkpoint(const void *buf, uint32_t bytes) { memcpy(flash, buf, bytes); flash_bytes = bytes; writes++; }
void use_scores(const float *s)
{
    uint32_t i;
    for (i = 0; i < DG_MODEL_OUT_0_BYTES / sizeof(float); i++)
        if (!isfinite(s[i])) { printf("FAILED: score %u is %f\r\n", (unsigned)i, (double)s[i]); return; }
    used++;
}
static void entry(void)
{
    int r = learn(200);
    float first = dg_model_loss();
    int r2 = learn(100);
    printf("example: status %d then %d, loss %f, %u checkpoint(s) written, %u prediction(s)\r\n", r, r2,
           (double)first, (unsigned)writes, (unsigned)used);
    pmsis_exit(r != DG_MODEL_OK || r2 != DG_MODEL_OK || writes != 3u || used != 300u || !isfinite(first));
}
int main(void) { return pmsis_kickoff((void *)entry); }
"#;

fn run_example(work: &Path, model: &str, platform: &str, level: &str) -> String {
    let out = work.join(format!("{model}-{platform}-{level}"));
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(root().join("models").join(model))
        .args(["--platform", platform, "--default-mem", level, "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "build {model}: {}", String::from_utf8_lossy(&o.stderr));
    // The example and its driver in place of demo.c: the project's own
    // `make demo` builds them with dg_model.c and the network.
    std::fs::write(out.join("demo.c"), format!("{}\n{DRIVER}", doc_example())).unwrap();
    let o = Command::new("make").args(["-s", "-j2", "-f", "Makefile.host", "demo"]).current_dir(&out).output().unwrap();
    assert!(
        o.status.success(),
        "the doc's example does not build against {model}'s dg_model.h:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new("./demo").current_dir(&out).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{model} {platform} {level}: the doc's example failed:\n{text}");
    text
}

#[test]
fn the_example_loop_of_firmware_md_builds_and_runs() {
    if !common::have_gcc(module_path!()) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    for (model, platform, level) in [("simple_mlp", "GAP9", "L2"), ("cnn_derived_adamw", "Siracusa", "L3")] {
        let text = run_example(work.path(), model, platform, level);
        assert!(text.contains("example: status 0 then 0"), "{model}: {text}");
    }
}

#[test]
fn the_example_is_the_doc_s_own() {
    let c = doc_example();
    for call in ["dg_model_init", "dg_model_set_train_input", "dg_model_train_step", "dg_model_predict"] {
        assert!(c.contains(call), "the example loop does not call {call}");
    }
    // Statuses are checked, labels are an i64 batch, the stack size comes from dg_model.h.
    assert!(c.contains("!= DG_MODEL_OK") && c.contains("int64_t labels") && c.contains("CC_STACK_SIZE"));
}
