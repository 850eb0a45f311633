"""models/README.md, models/manifest.json and tests/fixtures/README.md."""

from collections import OrderedDict

FLAVOR = {
    "artifacts": "training artifacts",
    "single_graph": "single graph",
    "inference": "inference",
}
OPTIMIZER = {
    "sgdv2": "com.microsoft SGDOptimizerV2",
    "sgd_nodes": "SGD node per param",
}


def _optimizer(spec):
    if spec.kind == "infer":
        return None
    if spec.flavor == "single_graph":
        return "inline SGD"
    return OPTIMIZER[spec.optimizer]


def _kb(n):
    return f"{n / 1000:.1f} kB" if n < 1000 * 1000 else f"{n / 1e6:.3f} MB"


def manifest(models):
    out = OrderedDict()
    for name, (spec, f) in models.items():
        m = OrderedDict()
        m["kind"] = "training" if spec.kind == "train" else "inference"
        m["flavor"] = spec.flavor
        m["files"] = f["files"]
        m["inputs_layout"] = spec.layout
        m["compressed_npz"] = spec.compressed
        m["data_inputs"] = f["data_inputs"]
        m["graph_inputs"] = f["graph_inputs"]
        m["roles"] = f["roles"]
        if "npz_keys" in f:
            m["npz_keys"] = f["npz_keys"]
        if spec.kind == "train":
            m["optimizer"] = _optimizer(spec)
            m["loss"] = "SoftmaxCrossEntropyLoss" if spec.loss == "ce" else "MSE (Sub/Pow/ReduceMean)"
            m["loss_output"] = f["loss_output"]
            m["num_classes"] = spec.num_classes or None
            m["trainable"] = spec.trainable
            m["frozen"] = spec.frozen
            m["data_size"] = spec.data_size
            m["n_batches"] = spec.n_batches
            m["n_accum"] = spec.n_accum
            m["learning_rate"] = spec.lr
            m["losses"] = f["losses"]
            m["trainable_bytes"] = f["trainable_bytes"]
            m["frozen_bytes"] = f["frozen_bytes"]
            m["peak_live_bytes_estimate"] = f["peak_live_bytes"]
            m["optimizer_ops"] = f["optimizer_ops"]
        else:
            m["weight_bytes"] = f["weight_bytes"]
            m["outputs"] = f["outputs"]
            if f["declared_outputs"] != f["outputs"]:
                m["declared_outputs"] = f["declared_outputs"]
        m["ops"] = f["ops"]
        m["opset"] = f["opset"]
        m["ir_version"] = f["ir_version"]
        m["checker_relabelled_ops"] = f["checker_relabelled"]
        if spec.checker != "full":
            m["checker"] = spec.checker
            m["checker_note"] = spec.checker_note
        if spec.ref_note:
            m["references"] = spec.ref_note
        if "rounding_margin" in f:
            m["rounding_margin"] = f["rounding_margin"]
        m["cross_checks_max_abs_diff"] = OrderedDict((k[6:], v) for k, v in f.items() if k.startswith("check_"))
        out[name] = m
    return out


def _table(models):
    rows = ["| model | flavor | optimizer | inputs.npz | data inputs | trainable params | frozen | "
            "mini-batches (stored / passes / n_accum) | lr | first loss (ln C) | exercises |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, (spec, f) in models.items():
        if spec.kind == "train":
            ntr = sum(1 for _ in spec.trainable)
            loss0 = f"{f['losses'][0]:.4f}" + (f" ({f['ln_classes']:.4f})" if "ln_classes" in f else " (MSE)")
            rows.append(
                f"| `{name}` | {FLAVOR[spec.flavor]} | {_optimizer(spec)} | {spec.layout}"
                f"{', compressed' if spec.compressed else ''} | {', '.join(f['data_inputs'])} | "
                f"{_kb(f['trainable_bytes'])} ({ntr} tensors) | "
                f"{_kb(f['frozen_bytes']) + f' ({len(spec.frozen)})' if spec.frozen else '-'} | "
                f"{spec.data_size} / {spec.n_batches} / {spec.n_accum} | {spec.lr:g} | {loss0} | {spec.exercises} |")
        else:
            outs = ", ".join(f"`{k}` {v}" for k, v in f["outputs"].items())
            rows.append(
                f"| `{name}` | inference | - | {spec.layout}{', compressed' if spec.compressed else ''} | "
                f"input | {_kb(f['weight_bytes'])} (initializers) | - | 1 / 1 / - | - | outputs {outs} | "
                f"{spec.exercises} |")
    return "\n".join(rows)


def _ops(models):
    rows = ["| model | opsets (IR) | ops in network.onnx (`domain:` prefix unless ai.onnx) | optimizer.onnx |",
            "|---|---|---|---|"]
    for name, (spec, f) in models.items():
        ops = ", ".join(f["ops"])
        opset = f"ai.onnx {f['opset']['ai.onnx']} (IR {f['ir_version']})"
        rows.append(f"| `{name}` | {opset} | {ops} | {', '.join(f.get('optimizer_ops', [])) or '-'} |")
    return "\n".join(rows)


def _checks(models):
    rows = ["| model | numpy forward | replay on InferenceSession | numpy full schedule | numpy BN stats | "
            "other | onnx.checker (ops relabelled first) | folder |",
            "|---|---|---|---|---|---|---|---|"]
    for name, (spec, f) in models.items():
        def c(k):
            return f"{f[k]:.1e}" if k in f else "-"
        other = []
        if "check_single_graph" in f:
            other.append(f"single graph on ORT {f['check_single_graph']:.1e}")
        if "check_sgd_optimizer" in f:
            other.append(f"SGD optimizer.onnx {f['check_sgd_optimizer']:.1e}")
        rel = ", ".join(f["checker_relabelled"] + [f"optimizer: {o}" for o in f.get("optimizer_checker_relabelled", [])])
        rows.append(f"| `{name}` | {c('check_numpy_forward')} | {c('check_replay')} | {c('check_numpy_schedule')} | "
                    f"{c('check_numpy_bn_stats')} | {'; '.join(other) or '-'} | pass{' (' + rel + ')' if rel else ''} | "
                    f"{_kb(f['folder_bytes'])} |")
    return "\n".join(rows)


def _memory(models):
    rows = ["| model | trainable | grad buffers | peak live (estimate) | + baked initial weights |",
            "|---|---|---|---|---|"]
    for name, (spec, f) in models.items():
        if spec.kind != "train" or spec.flavor != "artifacts":
            continue
        rows.append(f"| `{name}` | {f['trainable_bytes']:,} B | {f['trainable_bytes']:,} B | "
                    f"{f['peak_live_bytes']:,} B | {f['peak_live_bytes'] + f['trainable_bytes']:,} B |")
    return "\n".join(rows)


MODELS_README = """# Model zoo

Models, test data and references for deploygen's tests. Everything in this
folder (this README and `manifest.json` included) is written by
`tools/make_models.py`; do not edit it by hand, change the script and
regenerate. The references come from onnxruntime / numpy only, never from
deploygen.

## Regenerate

```sh
python3.11 -m venv ~/.venvs/deploygen-tools      # outside the checkout
~/.venvs/deploygen-tools/bin/pip install -r tools/requirements.txt
~/.venvs/deploygen-tools/bin/python tools/make_models.py          # rewrites models/ and tests/fixtures/
~/.venvs/deploygen-tools/bin/python tools/make_models.py --check  # regenerates in a temp dir, compares byte for byte
~/.venvs/deploygen-tools/bin/python tools/make_models.py --check-refs  # make_refs.py reproduces every outputs.npz
```

torch is not needed: `onnxruntime/training/__init__.py` imports it, so the
script puts a bare `onnxruntime.training` package into `sys.modules` first
(`tools/zoo/ort.py`). onnx must stay at 1.17: newer onnx (1.23) writes
models with an IR version above 10, which onnxruntime 1.19 refuses. Runs
offline, in a few seconds.

Output is byte-identical from run to run: fixed seeds, `.npz` files written
with fixed zip timestamps and attributes (`tools/zoo/npz.py`), onnxruntime
with one thread. It was checked with `--check` and by comparing the sha256 of
every file over two runs. A different CPU can change onnxruntime's float
results in the last bit (its kernels are picked per instruction set), and a
different zlib can change the compressed `.npz` members; `--check` shows it.

## References and timings for any folder

`tools/make_refs.py MODEL_DIR [--out FILE]` recomputes one folder's
`outputs.npz` from its committed files alone (`network.onnx`,
`optimizer.onnx`, `inputs.npz` in any of the three layouts): training
folders are replayed over the `meta_*` schedule on an onnxruntime
InferenceSession (gradients read from the graph, accumulation and the
BatchNorm write-back as below, the optimizer step through the committed
per-parameter `SGD` graph or `w - lr * g` for `SGDOptimizerV2`); graphs
onnxruntime 1.19 cannot run are rewritten first (`tools/zoo/compat.py`:
legacy attributes to inputs, RMSNormalization / RMSNorm decomposed). It
exits with status 2 and says so when onnxruntime is not importable.
`--check-refs` (`tools/test_make_refs.py`) runs it on every folder here: all
of them come out bit-exact (the test allows 1e-6).

`tools/ort_step_time.py MODEL_DIR... [--json FILE]` times one training step
(forward + backward + optimizer) or one inference per folder on
onnxruntime, CPU, one thread (median of `--runs` runs); its output for
this zoo is `ort_step_times.json` (machine-dependent, not part of
`--check`).

`tools/check_ort_current.py`, run with a newer onnxruntime in a venv of its
own, runs every inference folder's `network.onnx` as committed and compares
with `outputs.npz`. With onnxruntime 1.31.1 (onnx 1.23.2) all agree within
1e-6, `rmsnorm_transformer` (real opset-23 RMSNormalization against the
decomposed reference) within 1.2e-7; it still refuses the default-domain
`RMSNorm` and the legacy attribute forms.

## Models

{table}

- **flavor** (the three kinds of ONNX file of `docs/cli.md`, "The model
  folder"): *training artifacts*: `network.onnx` is
  onnxruntime's `training_model.onnx` (forward + backward +
  `InPlaceAccumulatorV2`, parameters as graph inputs), `optimizer.onnx` its
  `optimizer_model.onnx` or a graph of per-parameter `SGD` nodes; *single
  graph*: forward, backward and inline `SGD` in one graph (as
  `../shared/conformance/`); *inference*: an inference graph.
  Eval models and ORT checkpoints are not committed: initial parameters are
  in `inputs.npz`.
- **trainable params**: fp32 bytes of the trained parameters (the gradient
  accumulation buffers take the same again). **frozen**: BatchNorm running
  mean/var (graph inputs that no optimizer updates).
- **first loss**: loss of pass 0 with the initial (random) weights; the
  script asserts it differs from ln(num_classes) by more than 1e-3.

### Ops

{ops}

onnxruntime emits `AveragePoolGrad` and `MaxPoolGrad` in the default domain,
where ONNX defines no such op, and no `GlobalAveragePoolGrad` at all
(`mobilenet_v1` gets `Shape` + `com.microsoft:Scale` + `Expand`). MatMul
gradients are `com.microsoft:FusedMatMul` (attributes `transA`, `transB`,
`transBatchA`, `transBatchB`, `alpha`), fan-outs are summed with `Sum` (up
to 3 inputs), and `Flatten`'s gradient is `Shape` + `Reshape`. The MSE loss
is `Sub`, `Pow`, `ReduceMean`; its gradient uses `Shape`, `Size`, `Expand`,
`Div`, `Mul`, `Pow` and `com.microsoft:Scale` (`scale_down` attribute).
The training graphs import eight opset domains (`ai.onnx.ml`,
`ai.onnx.training`, `ai.onnx.preview.training`, `com.microsoft`,
`com.microsoft.experimental`, `com.microsoft.nchwc`, `org.pytorch.aten`),
most of them unused.

{quant}## File formats

`inputs.npz`
- *positional* layout (the training models but `simple_mlp` and
  `conv_ordered_npz_train`): `arr_NNNN` for
  every graph input of `network.onnx` in graph order except the
  `*_grad.accumulation.buffer` inputs: data inputs, parameters,
  `lazy_reset_grad`. onnxruntime keeps the forward model's initializer
  order, so trainable and frozen parameters are interleaved (`bn1.weight,
  bn1.bias, bn1.running_mean, bn1.running_var, ...`); the graph inputs are
  data, parameters, then all `<p>_grad.accumulation.buffer`, then
  `lazy_reset_grad`. `mb<i>_arr_NNNN` (i = 1 .. data_size-1)
  hold the data slots (input and labels/target) of mini-batch i.
- *named* layout (`simple_mlp`): the same arrays keyed by graph-input name,
  `mb<i>_<name>` for further mini-batches.
- `meta_data_size` (distinct mini-batches stored), `meta_n_batches` (forward
  passes), `meta_n_accum` (passes per optimizer step): int64 0-d;
  `meta_learning_rate` (float32 0-d) only where the optimizer takes the rate
  as an input (`SGDOptimizerV2`); `SGD` nodes carry it as attribute `lr`.
- dtypes: data f32, labels i64 `[batch]`, `lazy_reset_grad` bool `[1]`
  (stored `True`: its value on the first pass of every optimizer step, as
  onnxruntime declares it).
- inference models: `arr_0000` (the `input`).
- *ordered* layout (`conv_ordered_npz`, `conv_ordered_npz_train`; the test
  folders of other tools): `input_<k>` is graph input k, `mb<i>_input_<k>`
  its value in mini-batch i, and `outputs.npz` has `output_<k>` for graph
  output k; no key names a graph tensor. For the training step `output_0`
  is the loss of every pass (f32 `[n_batches]`) and `output_<k>` the
  `<p>_updated` output after the last pass. `manifest.json` (`npz_keys`)
  maps every key to its tensor.
- `.npz` members are stored (zip method 0) except for the models marked
  *compressed* (deflate), so both forms are covered.

`outputs.npz`
- `loss`: f32 `[n_batches]`, the loss of every forward pass.
- `<param>_updated`: every parameter after the whole schedule, in graph
  order: trainable ones and **also the BatchNorm running mean/var** (see
  below). Which keys are frozen is in `manifest.json` (`frozen`).
- inference models: one key per graph output (`probs`, `logits`), with the
  shape onnxruntime computes (which `conv_size1_dims` declares differently).

`manifest.json`: per model the flavor, layout, data inputs, trainable and
frozen names, schedule, learning rate, loss output name, losses, ops, opsets,
sizes and the cross-check results, for tests that want them without Python.
`roles` gives the role of every graph input and output with deploygen's
role names (`data`, `labels` — the loss target, also the MSE target —,
`param`, `frozen`, `grad_buffer`, `lazy_reset_grad`; `loss`, `grad_flag`,
`updated_param`, `output`; single graphs also list their parameter
initializers). `references` says how the references were made where
onnxruntime could not run the committed file; `declared_outputs` appears
where the declared output shapes differ from the computed ones.

## Second-wave operators and third-party conventions

What onnxruntime 1.19.2 (training, CPU) refused, and what the zoo does instead:
- **HardSwish, HardSigmoid**: no gradient (`GetGradientForOp` fails in
  `generate_artifacts`). `mobilenet_v3_block` (inference) uses the ops;
  `mobilenet_v3_block_train` writes them as `x * Clip(x * (1/6) + 0.5, 0, 1)`
  and `Clip(x * (1/6) + 0.5, 0, 1)`, whose gradients onnxruntime builds from
  `GreaterOrEqual`, `LessOrEqual`, `And`, `Cast` and `Mul`.
- **No gradient builder** in `generate_artifacts` either: GlobalMaxPool,
  ReduceMax, InstanceNormalization, GroupNormalization, Floor, Ceil, and Pad
  in `reflect` or `edge` mode (`Pad gradient currently supports constant
  mode only`). These are inference-only (`ops_mixed`);
  `ops_mixed_train` trains the rest. There onnxruntime turns the
  forward `Concat` into `com.microsoft:ConcatTraining` (extra output
  `per_input_length`), differentiates Split with `Concat` and Concat with
  `com.microsoft:SplitTraining`, Pad with a `Pad` of the negated pads
  (`Neg` of the pads input: negative pads crop), Gather with
  `com.microsoft:GatherGrad`, Sigmoid/Tanh with
  `com.microsoft:SigmoidGrad`/`TanhGrad`, Abs with `Sign`, Max/Min with
  `Equal` + `Cast` + `Sum` + `Div` masks, Clip with `GreaterOrEqual`,
  `LessOrEqual`, `And`, `Cast`, and Where with `Where` against a zero
  constant. Its constant-sharing pass may also merge equal scalar
  initializers (`Pad`'s value input becomes `sqrt.eps`, both 0.1).
- **ConvTranspose**: `generate_artifacts` emits
  `com.microsoft:ConvTransposeGrad`, but onnxruntime has no CPU kernel for it
  (`NOT_IMPLEMENTED` when the training session is created), so there is no
  training reference. `conv1d_autoencoder` (inference) has the
  ConvTransposes; `conv1d_autoencoder_train` upsamples with Conv 1-D +
  Reshape/Transpose (sub-pixel) instead.
- **RMSNormalization** (opset 23) is in neither onnx 1.17 nor onnxruntime
  1.19, and onnxruntime cannot run the default-domain `RMSNorm`: see
  `references` below.
- **Legacy attribute forms** at opset 18: onnxruntime (and onnx.checker)
  reject the file; see `references` below.
- **SoftmaxCrossEntropyLoss** with an empty output-0 name (only `log_prob`)
  is rejected (`output 0 is marked single but has an empty string`), so
  `conv_misc_forms` names output 0 (`loss`) and leaves it out of the graph
  outputs.
- Declared shapes differing by size-1 dims: onnxruntime warns (`Error merging
  shape info for output ... Falling back to lenient merge`) and runs.

Per model:

{notes}

## Training steps derived from inference graphs (`*_derived*`)

Each folder holds an inference `network.onnx` (weights as initializers:
they are the initial values), a `train.toml` and `inputs.npz` holding only
what changes per mini-batch (the data input and the labels; `meta_n_batches`
where the schedule cycles the data); deploygen derives the training step
itself, and
`tools/make_train_refs.py` (run by this script) computes `outputs.npz`
with onnxruntime-training 1.19.2 from the same graph and spec (its
offline artifacts and training API), or from an equivalent graph where
onnxruntime-training cannot differentiate an operator of it. Every zoo
inference model trains this way. `max_ties_derived_sgd` holds maxima that
tie in every pass (an edge-padded 2×2 map under GlobalMaxPool and
ReduceMax): the gradient of a maximum is shared equally among its tied
elements, in deploygen's rule and in the reference graph's form.
The `small_cnn_*` folders are laid out as a user exports a model: the
batch dim is symbolic (`batch`, from the data's size); in
`small_cnn_bn_behind_frozen_derived_adamw` the Conv is frozen, so the
BatchNorm behind it trains without computing dX. `mlp_derived_accum3`
accumulates 3 forward passes per step from `accumulation_steps` alone.
`digits_finetune` (`tools/make_finetune.py`, run by this script) is a
BatchNorm CNN pre-trained on digits 0–4 of scikit-learn's 8×8 digits, to be
fine-tuned on 5–9: `finetune.npz` holds the data and onnxruntime-training's
500-step fine-tuning, `tests/it/finetune.rs` runs it through `dg_model.h`
(docs/training.md, "Fine-tuning on real data").
`frozen_splits/<folder>/<group>/` holds a `train.toml` (the folder's, with
one weight group frozen) and its `outputs.npz`, for every weight group of
`cnn_derived_sgd`, `dscnn_derived_sgd` and
`small_cnn_dynamic_batch_derived_sgd` (`tests/derive.rs` runs them with
the folder's `network.onnx` and `inputs.npz`).

{derived}

## Training-step semantics (what the references assume)

For forward pass `mb` = 0 .. n_batches-1:
1. data = mini-batch `mb % data_size` (`mobilenet_v1` cycles: 6 passes over
   4 stored mini-batches);
2. `lazy_reset_grad = (mb % n_accum == 0)`; each
   `InPlaceAccumulatorV2(buffer, grad, lazy_reset_grad)` sets
   `buffer = grad` if it is true, else `buffer += grad`;
3. after every `n_accum` passes one optimizer step
   `w = w - lr * buffer` for each trainable parameter: the **sum** of the
   accumulated gradients, not their mean (`ds_cnn`, n_accum = 2).

The loss is graph output 0 of `network.onnx`; onnxruntime names it (for
example `onnx::loss::2`, and `onnx::reducemean_output::12` for the MSE
model); the other outputs are the bool `<p>_grad.accumulation.out`.

BatchNorm running statistics: `BatchNormInternal` (training_mode=1) uses the
batch statistics for its output, and its outputs 1 and 2 (`*.running_mean_out`,
`*.running_var_out`) are not graph outputs, but onnxruntime writes them in
place into the `running_mean` / `running_var` inputs on every forward pass:
`running = momentum * running + (1 - momentum) * batch_stat` with
`momentum = 0.9` and the **biased** batch variance. So the frozen parameters
change during the run although no optimizer touches them, and
`outputs.npz` holds their final values as `<name>_updated`. A deployment
that does not write them back still gets every loss and trainable parameter
right; only those keys differ.

Optimizer graphs:
- onnxruntime's: one node `com.microsoft:SGDOptimizerV2(learning_rate,
  params, gradients) -> update_completed` (bool); graph inputs
  `learning_rate` f32[1], `step` i64[1] and the sequences `params`,
  `gradients`, `first_order_moments` (seq(tensor(float)), unused by SGD).
  It updates each trainable parameter with its accumulation buffer,
  `w -= lr * g`; the graph names no parameter, so pair them by name from
  `network.onnx` (`<p>` with `<p>_grad.accumulation.buffer`).
- `autoencoder`: one `SGD(<p>, <p>_grad.accumulation.buffer){{lr}} -> <p>_updated`
  per trainable parameter (default domain, as in the Deeploy formats; not an
  ONNX op), inputs interleaved `w0, g0, w1, g1, ...`, outputs in the same order.
- `cnn_inline_sgd` (single graph): parameters are initializers, the graph
  inputs are only `input` and `labels`; outputs are the loss, then
  `<p>_updated` per parameter; each pass's `<p>_updated` is the next pass's
  `<p>` (4 passes, 4 steps).

## Cross-checks

Run by the script on every generation; a difference above 1e-5 (absolute)
aborts it. Numbers are the max |difference| against the references.
- *numpy forward*: the forward graph interpreted in float64 numpy
  (`tools/zoo/numpy_ref.py`), loss of the passes before the first update
  (inference: every output).
- *replay*: the committed `network.onnx` on a plain `InferenceSession`, fed
  fresh copies, gradients and BatchNorm statistics read from the graph, with
  accumulation, SGD and the statistics write-back done in numpy following
  the semantics above; every loss and every final parameter.
- *numpy full schedule*: hand-written forward/backward/SGD for the Gemm/Relu
  models over the whole schedule.
- *numpy BN stats*: running mean/var after pass 0 from the numpy forward.
- *single graph on ORT*: `cnn_inline_sgd/network.onnx` run pass by pass with
  `SGD` rewritten to `Sub(w, Mul(g, lr))`. *SGD optimizer.onnx*: the
  per-parameter SGD graph, rewritten the same way, against `w - lr * g`.
- onnx.checker: `check_model(full_check=True)` on every `network.onnx` and
  `optimizer.onnx`, after moving the default-domain ops that ONNX does not
  define (listed) to a private domain; `com.microsoft` ops are not checked by
  onnx.

{checks}

## Memory

Estimate for one training step in graph order: a tensor lives from its
producer to its last consumer, graph inputs (data, parameters, frozen,
gradient buffers) for the whole step, no in-place reuse. GAP9's L2 is
1,572,864 B. `resnet8` is the MLPerf Tiny ResNet-8 at batch 1 (78k
parameters, 312 kB): its step needs about 1.5 MB live with weights and
gradient buffers inside, so it fits GAP9's L2 only if the initial weights are
not baked into L2 as well (the last column), and L3 is where its weights go
otherwise.

{memory}
"""


FIXTURES_README = """# Test fixtures

Small model folders for the checks that must reject or triage bad input.
Each folder is complete (`network.onnx`, `optimizer.onnx`, `inputs.npz`,
`outputs.npz`, training-artifacts flavor) so that exactly one thing is
wrong in it.
Written by `tools/make_models.py` together with `models/` (see
`models/README.md` for the formats and how to regenerate); do not edit by
hand.

| folder | what is wrong |
|---|---|
{rows}
"""


def _notes(models):
    rows = []
    for name, (spec, f) in models.items():
        extra = []
        if spec.ref_note:
            extra.append(f"references: {spec.ref_note}")
        if spec.checker_note:
            extra.append(spec.checker_note)
        if "rounding_margin" in f:
            extra.append(f"every Floor/Ceil/Cast-to-int input is at least {f['rounding_margin']:.1e} from an "
                         "integer (the script requires 1e-3), so last-bit float differences cannot flip a step")
        if extra:
            rows.append(f"- `{name}`: " + "; ".join(extra) + ".")
    return "\n".join(rows)


def _derived(rows):
    """One line per folder tools/make_train_refs.py made: (name, train.toml
    text, losses, operators onnxruntime trains rewritten)."""
    out = ["| model | train.toml | losses (onnxruntime-training) | onnxruntime trains |", "|---|---|---|---|"]
    for name, toml, losses, rewritten in rows:
        keys = "; ".join(line.strip() for line in toml.splitlines() if line.strip() and not line.startswith("#"))
        how = "the same graph" if rewritten is None or not rewritten else \
            "the graph with " + ", ".join(rewritten) + " rewritten (`tools/zoo/ref_forms.py`)"
        if rewritten is None:
            how = "— (simple_mlp's artifact references, copied)"
        loss = ", ".join(f"{x:.4f}" for x in losses)
        out.append(f"| `{name}` | `{keys}` | {loss} | {how} |")
    return "\n".join(out)


def models_readme(models, derived_rows=(), quant_section=""):
    """`quant_section`: the "Quantized models" section (tools/zoo/quant.py), placed before "File formats"."""
    return MODELS_README.format(table=_table(models), ops=_ops(models), checks=_checks(models),
                                memory=_memory(models), notes=_notes(models), derived=_derived(derived_rows),
                                quant=quant_section)


def fixtures_readme(fixtures):
    rows = "\n".join(f"| `{name}/` | {desc} |" for name, (_, desc) in fixtures.items())
    return FIXTURES_README.format(rows=rows)
