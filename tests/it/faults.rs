//! Fault injection (docs/testing.md, "The test suite and CI": every check
//! is seen failing on the fault it guards against): for each
//! silent failure of the GAP9 training-checks seed, and a few more, produce
//! the faulty variant — by patching the generated project, the harness or
//! the test data — run the real build, run and judge of `deploygen test`,
//! and assert that it fails at the right stage for the right reason.
//!
//! Every patch asserts that the text it replaces is there, so a template
//! change cannot turn a fault test into a test of nothing.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use assert_cmd::cargo::CommandCargoExt;
use deploygen::verify::generate_case as pipeline;
use deploygen::verify::{run_case, Case, Kind, Outcome, Stage, StageError};

fn have_gcc() -> bool {
    common::have_gcc(module_path!())
}

fn case(model: &Path, platform: &str, level: &str) -> Case {
    let mut c = Case::new(model, "simple_mlp", platform, level, Kind::Training);
    c.timeout = Duration::from_secs(240);
    c
}

/// Generate the case's project with the real pipeline, apply `patch` to
/// it, then build, run and judge it as `deploygen test` does.
fn run_patched(case: &Case, patch: impl Fn(&Path) + Sync) -> Outcome {
    let gen = |c: &Case, dir: &Path| -> Result<(), StageError> {
        pipeline(c, dir)?;
        patch(dir);
        Ok(())
    };
    run_case(case, &gen)
}

/// Replace the first `from` in `dir/file` by `to`; `from` must be there.
fn replace(dir: &Path, file: &str, from: &str, to: &str) {
    let p = dir.join(file);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(text.contains(from), "the fault cannot be injected: {file} has no {from:?}");
    std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
}

fn all_text(o: &Outcome) -> String {
    format!("{}\n{}", o.message, o.details.join("\n"))
}

fn assert_fails(o: &Outcome, stage: Stage, needle: &str) {
    assert_eq!(o.stage, Some(stage), "expected {stage}, got {}: {}\n{}", o.class(), all_text(o), o.output);
    assert!(all_text(o).contains(needle), "expected {needle:?} in:\n{}\napp output:\n{}", all_text(o), o.output);
}

fn mlp() -> std::path::PathBuf {
    common::zoo("simple_mlp")
}

/// The clean project passes: every fault below is what makes its case fail.
#[test]
fn the_unpatched_project_passes() {
    if !have_gcc() {
        return;
    }
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), |_| {});
    assert!(o.passed(), "{}\n{}", all_text(&o), o.output);
    assert_eq!((o.compared, o.expected), (Some(3470), Some(3470)));
}

/// Seed: `if (pi_core_id() != 0) return;` at the top of the comparison,
/// which is sent without a fork and so runs on the GAP9 cluster controller,
/// core 8: nothing is compared, `Errors: 0 out of 0`.
#[test]
fn a_core_id_guard_in_the_comparison_is_a_vacuous_check() {
    if !have_gcc() {
        return;
    }
    let guard = |dir: &Path| {
        replace(
            dir,
            "main.c",
            "static void compare_task(void *arg)\n{\n    (void)arg;\n",
            "static void compare_task(void *arg)\n{\n    (void)arg;\n    if (pi_core_id() != 0)\n        return;\n",
        )
    };
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), guard);
    assert_fails(&o, Stage::Result, "vacuous check: the harness compared 0 values, the project has 3470 references");
    assert_eq!(o.compared, Some(0));
}

/// Seed: with `--default-mem L2` on GAP9 the bake was suppressed, no hex
/// was emitted and the init copy was skipped: every weight stays zero, so
/// the logits are all equal and the loss is ln(num_classes) exactly.
#[test]
fn weights_never_supplied_give_ln_classes_and_fail() {
    if !have_gcc() {
        return;
    }
    let zero_the_bake = |dir: &Path| {
        let p = dir.join("Weights.c");
        let text = std::fs::read_to_string(&p).unwrap();
        // Hex loading and the init copy are already off for this project
        // (every weight is baked): zeroing the baked arrays turns the
        // last supply path off too.
        let mut zeroed = 0;
        let out: Vec<String> = text
            .lines()
            .map(|l| {
                let vals: Vec<&str> = l.trim().trim_end_matches(',').split(", ").collect();
                let numeric = l.starts_with("    ")
                    && vals.iter().all(|v| v.trim_end_matches('f').parse::<f32>().is_ok() && v.ends_with('f'));
                if numeric {
                    zeroed += vals.len();
                    format!("    {},", vec!["0.0f"; vals.len()].join(", "))
                } else {
                    l.to_string()
                }
            })
            .collect();
        assert!(zeroed > 0, "no baked weight values found in Weights.c");
        std::fs::write(&p, out.join("\n") + "\n").unwrap();
        let inputs = std::fs::read_to_string(dir.join("testinputs.h")).unwrap();
        assert!(inputs.contains("#define TRAINING_SKIP_INITWEIGHT_COPY"), "the init copy is not skipped");
    };
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), zero_the_bake);
    // simple_mlp has 10 classes: ln(10).
    assert_fails(&o, Stage::Result, "loss 0: computed 2.302585");
    assert!(o.losses.iter().all(|l| (l.computed - 10f64.ln()).abs() < 1e-5), "{:?}", o.losses);
}

/// Seed: `num_data_inputs = 1` forced on a graph whose image and label both
/// change per mini-batch. `deploygen build` refuses it, explaining the
/// slot shift.
#[test]
fn a_forced_num_data_inputs_is_refused_with_the_slot_shift() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    let o = Command::cargo_bin("deploygen")
        .unwrap()
        .arg("build")
        .arg(mlp())
        .args(["--platform", "GAP9", "--default-mem", "L2", "--num-data-inputs", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for want in [
        "num_data_inputs = 1 contradicts the test data",
        "So num_data_inputs is 2",
        "shifting every weight 1 slot(s) against its gradient buffer",
        "Step 0 would still match the reference",
    ] {
        assert!(err.contains(want), "expected {want:?} in:\n{err}");
    }
    assert!(!out.exists(), "nothing is written for refused input");
}

/// The same fault in the harness: after mini-batch 0 it copies only the
/// first data input, so the labels stay those of mini-batch 0. Loss 0 still
/// matches; a later loss does not.
#[test]
fn a_harness_copying_one_data_input_fails_on_a_later_loss() {
    if !have_gcc() {
        return;
    }
    let one_input = |dir: &Path| {
        replace(
            dir,
            "main.c",
            "for (i = 0; i < TEST_NUM_DATA_SLOTS; i++)",
            "for (i = 0; i < (mb == 0 ? TEST_NUM_DATA_SLOTS : 1u); i++)",
        )
    };
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), one_input);
    assert_fails(&o, Stage::Result, "compared values are wrong");
    assert!(o.losses[0].within(), "loss 0 must still match: {:?}", o.losses[0]);
    assert!(o.losses[1..].iter().any(|l| !l.within()), "a later loss must differ: {:?}", o.losses);
}

/// Seed: a failed L1 allocation went unnoticed and the kernels computed
/// from a NULL base. Here L1 is too small for the arena: Init must say so
/// and the case fails at runtime with the harness's FATAL line.
#[test]
fn a_failing_l1_allocation_is_fatal_at_init() {
    if !have_gcc() {
        return;
    }
    let small_l1 = |dir: &Path| {
        let mk = std::fs::read_to_string(dir.join("Makefile.host")).unwrap();
        let start = mk.find("-DDG_L1_SIZE=").expect("Makefile.host sets DG_L1_SIZE");
        let end = start + mk[start..].find(' ').unwrap();
        let from = mk[start..end].to_string();
        replace(dir, "Makefile.host", &from, "-DDG_L1_SIZE=1024");
    };
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), small_l1);
    assert_fails(&o, Stage::Runtime, "FATAL: L1 allocation of 16400 B failed (L1 arena)");
}

/// A NaN loss (a NaN in the last layer's bias, so every logit is NaN)
/// must count as an error: the comparison is `!(|diff| <= tol)`, which NaN
/// fails, and the judge does not take a NaN loss line as within tolerance.
#[test]
fn a_nan_loss_fails() {
    if !have_gcc() {
        return;
    }
    let dir = common::copy_model(&mlp());
    common::edit_inputs(dir.path(), |arrays| {
        let (_, t) = arrays.iter_mut().find(|(k, _)| k == "fc3.bias").expect("fc3.bias");
        t.bytes[..4].copy_from_slice(&f32::NAN.to_le_bytes());
    });
    let o = run_patched(&case(dir.path(), "GAP9", "L2"), |_| {});
    assert_fails(&o, Stage::Result, "compared values are wrong");
    assert!(o.losses[0].computed.is_nan(), "{:?}", o.losses);
    assert!(all_text(&o).contains("loss 0: computed NaN"), "{}", all_text(&o));
}

/// Zero references: test data without any reference is not a pass.
#[test]
fn zero_references_fail() {
    if !have_gcc() {
        return;
    }
    let dir = common::copy_model(&mlp());
    std::fs::write(dir.path().join("outputs.npz"), deploygen::bind::npz::write_npz(&[]).unwrap()).unwrap();
    let o = run_patched(&case(dir.path(), "GAP9", "L2"), |_| {});
    assert_fails(&o, Stage::Bind, "outputs.npz holds no reference for this model: nothing is compared; make the references with `python tools/make_refs.py");
    // And a project whose harness was told there are 0 references: with
    // its tensor checks it compares more than that, without any it has
    // nothing to compare (0 values pass only for zero-size references).
    let zero = |dir: &Path| {
        replace(dir, "testoutputs.h", "#define EXPECTED_COMPARED 3470u", "#define EXPECTED_COMPARED 0u");
    };
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), zero);
    assert!(!o.passed(), "{}", all_text(&o));
    assert!(o.output.contains("FAILED: compared 3470 values, expected 0"), "{}", o.output);
    assert_ne!(o.stage, Some(Stage::Emit), "the manifest still promises 3470 values: it is the harness that fails");
    let none = |dir: &Path| {
        zero(dir);
        replace(dir, "testoutputs.h", "#define N_TENSOR_CHECKS 6\n", "#define N_TENSOR_CHECKS 0\n");
    };
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), none);
    assert!(!o.passed(), "{}", all_text(&o));
    assert!(o.output.contains("FAILED: there are no references: nothing was compared"), "{}", o.output);
}

/// A strict known failure that passes fails the run, naming the entry.
#[test]
fn an_xfail_entry_that_passes_fails_the_run() {
    if !have_gcc() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let table = tmp.path().join("status.toml");
    std::fs::write(
        &table,
        "[\"simple_mlp/GAP9-L2-training\"]\nstatus = \"KNOWN_FAILURE_XFAIL\"\nstage = \"INCORRECT_RESULT\"\n\
         reason = \"injected: recorded as failing although it passes\"\nevidence = \"none: a fault test\"\n",
    )
    .unwrap();
    let o = Command::cargo_bin("deploygen")
        .unwrap()
        .arg("test")
        .arg(mlp())
        .args(["--platform", "GAP9", "--default-mem", "L2", "--status"])
        .arg(&table)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("XPASS   simple_mlp/GAP9-L2-training"), "{out}");
    assert!(out.contains("unexpected pass of strict xfail \"simple_mlp/GAP9-L2-training\""), "{out}");
    assert!(out.contains("1 xpass"), "{out}");
}

/// A tolerance applied in one direction only (the signed difference
/// instead of its magnitude): a loss far below its reference counts as no
/// error, and the harness prints `Errors: 0`. The judge recomputes
/// |computed - ref| from the loss lines and does not believe it.
#[test]
fn a_one_sided_tolerance_is_caught_from_the_loss_lines() {
    if !have_gcc() {
        return;
    }
    let one_sided = |dir: &Path| {
        replace(dir, "runtime/harness/dg_check.c", "diff = dg_diff(computed[i], r);", "diff = computed[i] - r;");
        // Raise reference loss 0 by 0.5: computed - ref is about -0.5.
        let p = dir.join("testoutputs.h");
        let text = std::fs::read_to_string(&p).unwrap();
        let start = text.find("testLossRef[N_LOSS_REFS] = {").expect("testLossRef");
        let body = start + text[start..].find('{').unwrap() + 1;
        let first = body + text[body..].find(|c: char| c == '-' || c.is_ascii_digit()).unwrap();
        let end = first + text[first..].find('f').unwrap();
        let v: f32 = text[first..end].parse().unwrap();
        std::fs::write(&p, format!("{}{}{}", &text[..first], v + 0.5, &text[end..])).unwrap();
    };
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), one_sided);
    assert_eq!(o.errors, Some(0), "the faulty harness reports no error: {}", o.output);
    assert_fails(&o, Stage::Result, "but its own lines show 1 loss(es) out of tolerance");
}

/// A forked kernel without its barrier: the loss kernel's core 0 sums the
/// per-sample log-probabilities the other cores write. The emulation runs
/// real worker threads; the patch makes the workers slow (as a DMA wait
/// would), so without the barrier core 0 reads values not yet written.
/// With the barrier, the same slow workers pass.
#[test]
fn a_missing_barrier_in_a_forked_kernel_shows_on_real_threads() {
    if !have_gcc() {
        return;
    }
    let slow_workers = |dir: &Path| {
        replace(
            dir,
            "runtime/kernels/loss.c",
            "#include \"dg_internal.h\"\n",
            "#include \"dg_internal.h\"\n#include <time.h>\n",
        );
        replace(
            dir,
            "runtime/kernels/loss.c",
            "    /* phase 1: log_softmax over classes, per sample */\n",
            "    /* phase 1: log_softmax over classes, per sample */\n    if (pi_core_id() != 0) {\n        \
             struct timespec ts = {0, 20000000};\n        nanosleep(&ts, NULL);\n    }\n",
        );
    };
    let with_barrier = run_patched(&case(&mlp(), "GAP9", "L2"), slow_workers);
    assert!(
        with_barrier.passed(),
        "slow workers alone must not fail: {}\n{}",
        all_text(&with_barrier),
        with_barrier.output
    );
    let no_barrier = |dir: &Path| {
        slow_workers(dir);
        replace(
            dir,
            "runtime/kernels/loss.c",
            "    if (p->loss == NULL)\n        return;\n    pi_cl_team_barrier();\n",
            "    if (p->loss == NULL)\n        return;\n",
        );
    };
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), no_barrier);
    assert_fails(&o, Stage::Result, "compared values are wrong");
    assert!(o.losses.iter().any(|l| !l.within()), "{:?}", o.losses);
}

/// A weight with two copies: fc1.weight is loaded from the L3 hex image
/// into its buffer (which the optimizer updates) and also baked into an L2
/// array that the forward pass reads. Step 0 sees the right values in both;
/// after the first update the copies diverge, and a later loss is wrong.
#[test]
fn a_weight_loaded_twice_baked_and_hex_fails_after_the_first_update() {
    if !have_gcc() {
        return;
    }
    let two_copies = |dir: &Path| {
        let image = std::fs::read(dir.join("hex/l3.bin")).expect("an L3 image");
        let net = std::fs::read_to_string(dir.join("TrainingNetwork.c")).unwrap();
        // fc1.weight's segment: `{ DG_L3(dst), offset, bytes }, /* fc1.weight */`.
        let seg = net.lines().find(|l| l.trim_end().ends_with("}, /* fc1.weight */")).expect("fc1.weight segment");
        let nums: Vec<u64> = seg[..seg.find("/*").unwrap()]
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse().ok())
            .collect();
        let [dst, offset, bytes] = nums[nums.len() - 3..] else { panic!("{seg}") };
        let baked: Vec<String> = image[offset as usize..(offset + bytes) as usize]
            .chunks(4)
            .map(|b| format!("{:?}f", f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect();
        let mut weights = std::fs::read_to_string(dir.join("Weights.c")).unwrap();
        weights.push_str(&format!(
            "\n/* fc1.weight, baked as well */\nPI_L2 float dg_fc1_baked[{}] = {{ {} }};\n",
            baked.len(),
            baked.join(", ")
        ));
        std::fs::write(dir.join("Weights.c"), weights).unwrap();
        let read = format!("dg_copy(DG_L1(0), DG_L3({dst}), {bytes}u); /* fc1.weight L3->L1 */");
        replace(dir, "TrainingNetwork.c", &read, &format!("dg_copy(DG_L1(0), (void *)dg_fc1_baked, {bytes}u);"));
        replace(
            dir,
            "TrainingNetwork.c",
            "void CopyInitialWeights(void)",
            "extern float dg_fc1_baked[];\n\nvoid CopyInitialWeights(void)",
        );
    };
    // Untiled, so that fc1.weight reaches L1 in one copy the patch can redirect.
    let mut c = case(&mlp(), "GAP9", "L3");
    c.tiling = false;
    let o = run_patched(&c, two_copies);
    assert_fails(&o, Stage::Result, "compared values are wrong");
    assert!(o.losses[0].within(), "step 0 reads equal copies: {:?}", o.losses[0]);
    assert!(o.losses[1..].iter().any(|l| !l.within()), "{:?}", o.losses);
}

/// simple_mlp on GAP9 with 16 KiB of L1 above the stacks: its gradient
/// accumulators run in double-buffered tiles (the host emulation moves DMA
/// data only when it is waited for).
fn tiled_case() -> Case {
    let mut c = case(&mlp(), "GAP9", "L2");
    c.capacities = [Some(common::l1_with_budget("GAP9", 16384)), None, None];
    c
}

#[test]
fn the_unpatched_tiled_project_passes() {
    if !have_gcc() {
        return;
    }
    let o = run_patched(&tiled_case(), |dir| {
        let net = std::fs::read_to_string(dir.join("TrainingNetwork.c")).unwrap();
        assert!(net.contains("const uint32_t cur = t & 1u"), "no double-buffered tile loop to test");
    });
    assert!(o.passed(), "{}\n{}", all_text(&o), o.output);
}

/// A tile's DMA never waited for: the kernel reads the buffer's old bytes.
#[test]
fn a_missing_dma_wait_gives_wrong_results() {
    if !have_gcc() {
        return;
    }
    let o = run_patched(&tiled_case(), |dir| {
        replace(dir, "TrainingNetwork.c", "            dg_dma_wait(&o0_q[cur]);\n", "")
    });
    assert_fails(&o, Stage::Result, "compared values are wrong");
}

/// The kernel reading the buffer the next tile is being fetched into.
#[test]
fn a_swapped_double_buffer_index_gives_wrong_results() {
    if !have_gcc() {
        return;
    }
    let o = run_patched(&tiled_case(), |dir| replace(dir, "TrainingNetwork.c", "= o0_l1[cur],", "= o0_l1[nxt],"));
    assert_fails(&o, Stage::Result, "compared values are wrong");
}

/// L3 tiles: the stage's DMA into L1 issued and waited before the stage's
/// RAM read is (the overlap of L3 reads with compute done wrong): L1
/// receives the stage's old bytes.
#[test]
fn an_l3_stage_copied_before_its_ram_read_gives_wrong_results() {
    if !have_gcc() {
        return;
    }
    let mut c = tiled_case();
    c.default_mem = "L3".into();
    let o = run_patched(&c, |dir| {
        let net = std::fs::read_to_string(dir.join("TrainingNetwork.c")).unwrap();
        assert!(net.contains("DG_L3("), "no L3 operand to test");
        replace(dir, "runtime/mem/dg_mem.c", "    dg_ram_wait(q);\n    if (bytes != 0) {", "    if (bytes != 0) {");
        replace(
            dir,
            "runtime/mem/dg_mem.c",
            "        pi_cl_dma_cmd_wait(&q->cmd[i]);\n    q->n = 0;\n",
            "        pi_cl_dma_cmd_wait(&q->cmd[i]);\n    q->n = 0;\n    dg_ram_wait(q);\n",
        );
    });
    assert_fails(&o, Stage::Result, "compared values are wrong");
}

// ---------------------------------------------------------------- the harness as dg_model.h's client

/// The harness feeds the model only through `dg_model.h`: when
/// `dg_model_set_train_input` copies nothing into the data input (the
/// labels still arrive), the losses are wrong.
#[test]
fn an_api_that_copies_no_training_input_fails() {
    if !have_gcc() {
        return;
    }
    let no_copy = |dir: &Path| {
        replace(
            dir,
            "dg_model.c",
            "    return set_port(dg_train_inputs, dg_n_train_inputs, input, src, bytes);",
            "    return input == 0u ? DG_MODEL_OK : set_port(dg_train_inputs, dg_n_train_inputs, input, src, bytes);",
        )
    };
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), no_copy);
    assert_fails(&o, Stage::Result, "compared values are wrong");
    assert!(o.losses.iter().any(|l| !l.within()), "{:?}", o.losses);
}

/// An inference harness runs the network through `dg_model_predict`:
/// when `dg_model_set_input` copies nothing, the outputs are wrong.
#[test]
fn an_api_that_copies_no_input_fails_an_inference_model() {
    if !have_gcc() {
        return;
    }
    let mut c = Case::new(common::zoo("kws_cnn"), "kws_cnn", "Siracusa", "L2", Kind::Inference);
    c.timeout = Duration::from_secs(240);
    let no_copy = |dir: &Path| replace(dir, "dg_model.c", "    dg_copy(ports[input].buf, src, bytes);\n", "");
    let o = run_patched(&c, no_copy);
    assert_fails(&o, Stage::Result, "compared values are wrong");
}

/// `dg_model_train_step` without its optimizer step (and saying so):
/// the losses after the first step and the updated weights are wrong.
#[test]
fn a_train_step_without_the_optimizer_fails() {
    if !have_gcc() {
        return;
    }
    let no_opt = |dir: &Path| {
        replace(
            dir,
            "dg_model.c",
            "    return send(DG_RUN_OPTIMIZER, DG_MODEL_CYCLES_OPTIMIZER);",
            "    return DG_MODEL_OK;",
        )
    };
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), no_opt);
    assert_fails(&o, Stage::Result, "compared values are wrong");
    assert!(o.losses[0].within(), "loss 0 comes before any optimizer step: {:?}", o.losses[0]);
}

/// A `dg_model.h` call that fails is a FATAL line naming the call and the
/// status, and the run fails (never `Errors: 0`).
#[test]
fn a_failing_api_call_is_fatal() {
    if !have_gcc() {
        return;
    }
    let refuse = |dir: &Path| {
        replace(
            dir,
            "dg_model.c",
            "    return send(DG_RUN_OPTIMIZER, DG_MODEL_CYCLES_OPTIMIZER);",
            "    return DG_MODEL_ECLUSTER;",
        )
    };
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), refuse);
    assert_fails(&o, Stage::Runtime, "FATAL: dg_model_train_step returned -4 (DG_MODEL_ECLUSTER");
    assert!(o.output.contains("Errors: 1 out of 0"), "{}", o.output);
}

/// The harness's schedule and the API's accumulation agree, or main.c
/// does not compile.
#[test]
fn a_schedule_the_api_does_not_accumulate_does_not_compile() {
    if !have_gcc() {
        return;
    }
    let other =
        |dir: &Path| replace(dir, "dg_model.h", "#define DG_MODEL_ACCUM_STEPS 1u", "#define DG_MODEL_ACCUM_STEPS 2u");
    let o = run_patched(&case(&mlp(), "GAP9", "L2"), other);
    assert_fails(&o, Stage::CCompile, "is not DG_MODEL_ACCUM_STEPS");
}
