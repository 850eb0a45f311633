#!/usr/bin/env python3
"""The fine-tuning run on real data: models/digits_finetune/.

    python tools/make_finetune.py                  # (re)write models/digits_finetune/
    python tools/make_finetune.py --out DIR        # write the folder elsewhere

Needs Python 3.11 with tools/requirements.txt (onnxruntime-training-cpu
1.19.2, onnx 1.17, scikit-learn for its bundled 8x8 digits); no torch
(tools/zoo/ort.py). Deterministic: fixed seeds, fixed data order,
onnxruntime on one thread.

The data is scikit-learn's `load_digits` (1797 grey 8x8 images, values
0..16), fed as value / 16 (exact in f32). A small CNN with BatchNorm

    input [batch,1,8,8] -> Conv 8x3x3 (pad 1) -> BatchNormalization -> Relu
        -> MaxPool 2x2 -> Flatten -> Gemm 128 -> 10 classes

is pre-trained with onnxruntime-training on digits 0-4 and written, with
its trained weights and BatchNorm running statistics as initializers, as
a model folder: network.onnx (batch symbolic), train.toml (the
fine-tuning's loss, optimizer and rate). The fine-tuning is onnxruntime-
training on digits 5-9 through tools/make_train_refs.py's own recipe
(the folder's train.toml, SGD, every weight, BatchNorm running statistics
updated with momentum 0.9): STEPS passes of BATCH samples, pass k reading
mini-batch k mod (TRAIN // BATCH) of the training split in its stored
order. Then the held-out split is predicted one sample at a time in eval
mode (an onnxruntime InferenceSession on network.onnx with the fine-tuned
weights and running statistics).

Files written besides network.onnx and train.toml:

- finetune.npz: the data and the reference. `train_x` u8 [TRAIN, 64] and
  `train_y` i64 in training order (mini-batch k is rows k*BATCH..), `test_x`
  u8 [TEST, 64] and `test_y` (held-out), `loss` f32 [STEPS] (onnxruntime's
  loss of every pass), `predicted` i64 [TEST] (onnxruntime's class per
  held-out sample), `accuracy` f32 (percent).
- finetune.json: the same figures to read: steps, batch, rate, the loss
  every 50 steps, the accuracy, the pre-training's figures.
- inputs.npz / outputs.npz: the first 4 mini-batches of the fine-tuning and
  their references (tools/make_train_refs.py), so `deploygen test` checks
  the folder like every training model of the zoo; predict.npz
  (tools/make_predict_refs.py) when a deploygen binary is at hand.

tests/it/finetune.rs fine-tunes through the generated dg_model.h on the host
emulation with the same data and order and compares against finetune.npz.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import numpy as np  # noqa: E402
    import onnx  # noqa: E402
    from onnx import TensorProto, helper, numpy_helper  # noqa: E402
    from sklearn.datasets import load_digits  # noqa: E402

    import make_train_refs  # noqa: E402
    from zoo.npz import npz_bytes  # noqa: E402
    from zoo.ort import onnxruntime  # noqa: E402
except ImportError as e:
    print(f"make_finetune.py: {e}: needs Python 3.11 with tools/requirements.txt (onnxruntime-training-cpu "
          "1.19.2, onnx 1.17, scikit-learn): python3.11 -m venv VENV && VENV/bin/pip install -r tools/requirements.txt",
          file=sys.stderr)
    sys.exit(2)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "digits_finetune"
BATCH = 8
STEPS = 500  # fine-tuning passes (one optimizer step each)
TRAIN = 640  # fine-tuning training split (digits 5-9): 80 mini-batches
TEST = 256  # held-out split (digits 5-9), predicted one sample at a time
PRETRAIN_STEPS = 400
LR = 0.05
REF_BATCHES = 4  # mini-batches in inputs.npz / outputs.npz (the harness's check)
SEED = 2026

TRAIN_TOML = f"""# Fine-tuning of a CNN pre-trained on digits 0-4 (tools/make_finetune.py),
# on digits 5-9: every weight, SGD; BatchNorm running statistics updated.
loss = "cross-entropy"
optimizer = "sgd"
learning_rate = {LR}
dims = {{ batch = {BATCH} }}
"""


def network(rng):
    """The inference graph (batch symbolic), weights uniform in +-1/sqrt(fan_in)."""
    inits = []

    def w(name, shape, value=None):
        if value is None:
            s = 1.0 / np.sqrt(int(np.prod(shape[1:])) if len(shape) > 1 else shape[0])
            value = rng.uniform(-s, s, size=shape)
        inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    conv = w("conv.weight", [8, 1, 3, 3])
    nodes = [
        helper.make_node("Conv", ["input", conv, w("conv.bias", [8], np.zeros(8))], ["conv"], name="conv",
                         pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv", w("bn.weight", [8], np.ones(8)),
                                                w("bn.bias", [8], np.zeros(8)),
                                                w("bn.running_mean", [8], np.zeros(8)),
                                                w("bn.running_var", [8], np.ones(8))],
                         ["bn"], name="bn", epsilon=1e-5, momentum=0.9),
        helper.make_node("Relu", ["bn"], ["relu"], name="relu"),
        helper.make_node("MaxPool", ["relu"], ["pool"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool"], ["flatten"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flatten", w("fc.weight", [10, 128]), w("fc.bias", [10])], ["logits"],
                         name="fc", transB=1),
    ]
    g = helper.make_graph(nodes, "digits_cnn",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 1, 8, 8])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                          producer_name="deploygen tools/make_finetune.py")
    onnx.checker.check_model(m, full_check=True)
    return m


def with_params(model, params):
    """A copy of `model` with the initializers `params` names replaced."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for i, init in enumerate(m.graph.initializer):
        if init.name in params:
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(params[init.name].astype(np.float32), init.name))
    return m


def as_input(x):
    return (x.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)


def train(model, toml, x, y, steps, work):
    """onnxruntime-training over `steps` passes, pass k on mini-batch
    k mod (len(x) // BATCH), through make_train_refs.py's recipe.
    Returns (losses, {param: value after training})."""
    d = os.path.join(work, "run")
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    with open(os.path.join(d, "network.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    with open(os.path.join(d, "train.toml"), "w") as f:
        f.write(toml)
    arrays = {}
    n_mb = len(x) // BATCH
    for mb in range(n_mb):
        pre = "" if mb == 0 else f"mb{mb}_"
        arrays[pre + "input"] = as_input(x[mb * BATCH:(mb + 1) * BATCH])
        arrays[pre + "labels"] = y[mb * BATCH:(mb + 1) * BATCH].astype(np.int64)
    arrays["meta_n_batches"] = np.array(steps, np.int64)
    with open(os.path.join(d, "inputs.npz"), "wb") as f:
        f.write(npz_bytes(arrays))
    losses, params, rewritten = make_train_refs.references(d)
    assert not rewritten, rewritten
    return losses, params


def predict(model, x):
    """Eval-mode classes, one sample at a time."""
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    s = onnxruntime.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return np.array([int(np.argmax(s.run(["logits"], {"input": as_input(x[i:i + 1])})[0])) for i in range(len(x))],
                    np.int64)


def split(rng, x, y, n_train, n_test):
    """A fixed shuffle of (x, y), cut into n_train and n_test rows."""
    order = rng.permutation(len(x))
    assert n_train + n_test <= len(x)
    tr, te = order[:n_train], order[n_train:n_train + n_test]
    return x[tr], y[tr], x[te], y[te]


def write(out):
    rng = np.random.default_rng(SEED)
    digits = load_digits()
    x = digits.data.astype(np.uint8)  # 0..16
    y = digits.target.astype(np.int64)
    old, new = y < 5, y >= 5
    pre_x, pre_y, pre_tx, pre_ty = split(rng, x[old], y[old], 800, len(x[old]) - 800)
    ft_x, ft_y, test_x, test_y = split(rng, x[new], y[new], TRAIN, TEST)
    model = network(rng)
    pre_toml = f'loss = "cross-entropy"\noptimizer = "sgd"\nlearning_rate = {LR}\n'
    with tempfile.TemporaryDirectory() as work:
        pre_losses, pre_params = train(model, pre_toml, pre_x, pre_y, PRETRAIN_STEPS, work)
        pretrained = with_params(model, pre_params)
        pre_acc = float(np.mean(predict(pretrained, pre_tx) == pre_ty) * 100)
        before = float(np.mean(predict(pretrained, test_x) == test_y) * 100)
        losses, params = train(pretrained, TRAIN_TOML, ft_x, ft_y, STEPS, work)
    tuned = with_params(pretrained, params)
    predicted = predict(tuned, test_x)
    acc = float(np.mean(predicted == test_y) * 100)

    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with open(os.path.join(out, "network.onnx"), "wb") as f:
        f.write(pretrained.SerializeToString())
    with open(os.path.join(out, "train.toml"), "w") as f:
        f.write(TRAIN_TOML)
    with open(os.path.join(out, "finetune.npz"), "wb") as f:
        f.write(npz_bytes({"train_x": ft_x, "train_y": ft_y, "test_x": test_x, "test_y": test_y,
                           "loss": losses.astype(np.float32), "predicted": predicted,
                           "accuracy": np.array(acc, np.float32)}))
    every = [1] + list(range(50, STEPS + 1, 50))
    summary = {
        "data": "scikit-learn load_digits (8x8, values 0..16, fed as value/16)",
        "pretraining": {"digits": "0-4", "samples": len(pre_x), "steps": PRETRAIN_STEPS, "batch": BATCH,
                        "learning_rate": LR, "first_loss": round(float(pre_losses[0]), 6),
                        "last_loss": round(float(pre_losses[-1]), 6),
                        "held_out_samples": len(pre_tx), "held_out_accuracy": round(pre_acc, 2)},
        "finetuning": {"digits": "5-9", "train_samples": TRAIN, "held_out_samples": TEST, "steps": STEPS,
                       "batch": BATCH, "optimizer": "sgd", "learning_rate": LR,
                       "held_out_accuracy_before": round(before, 2),
                       "loss": {str(k): round(float(losses[k - 1]), 6) for k in every},
                       "held_out_accuracy": round(acc, 2)},
    }
    with open(os.path.join(out, "finetune.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    # The harness's references: the first mini-batches of the fine-tuning.
    arrays = {}
    for mb in range(REF_BATCHES):
        pre = "" if mb == 0 else f"mb{mb}_"
        arrays[pre + "input"] = as_input(ft_x[mb * BATCH:(mb + 1) * BATCH])
        arrays[pre + "labels"] = ft_y[mb * BATCH:(mb + 1) * BATCH]
    with open(os.path.join(out, "inputs.npz"), "wb") as f:
        f.write(npz_bytes(arrays))
    make_train_refs.write_refs(out)
    print(f"{out}: pre-training on 0-4: loss {pre_losses[0]:.4f} -> {pre_losses[-1]:.4f}, held-out {pre_acc:.1f}%; "
          f"fine-tuning on 5-9: held-out {before:.1f}% before, loss {losses[0]:.4f} -> {losses[STEPS // 2 - 1]:.4f} "
          f"-> {losses[-1]:.4f}, held-out {acc:.2f}% after")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "models", NAME))
    ap.add_argument("--deploygen", help="the deploygen binary for predict.npz (default: target/*/deploygen, PATH)")
    a = ap.parse_args()
    out = write(a.out)
    import make_predict_refs
    try:
        make_predict_refs.write(out, make_predict_refs.deploygen_binary(a.deploygen))
    except SystemExit:
        print("make_finetune.py: no deploygen binary: predict.npz not written "
              "(tools/make_predict_refs.py makes it)", file=sys.stderr)


if __name__ == "__main__":
    main()
