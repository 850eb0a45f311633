#!/usr/bin/env python3
"""References of a training model's prediction after its training run.

    python tools/make_predict_refs.py MODEL_DIR...   # write MODEL_DIR/predict.npz
    python tools/make_predict_refs.py --zoo          # every training folder of models/

The generated `demo.c` of a training project trains through `dg_model.h`,
then predicts mini-batch 0 with `dg_model_predict` (a few samples at a
time), which runs the forward part of the training step in eval mode.
predict.npz holds what that prediction must be: one array per forward
output (the outputs `dg_model.h` lists) for the whole mini-batch 0,
computed by onnxruntime alone from

- the training graph: the folder's own (onnxruntime-training artifacts,
  or one graph with inline SGD), or for a `train.toml` folder the one
  onnxruntime-training derives from network.onnx (tools/make_train_refs.py);
- mini-batch 0 of inputs.npz;
- the weights and BatchNorm running statistics after training:
  outputs.npz's `<p>_updated` (make it first with tools/make_refs.py or
  tools/make_train_refs.py).

Eval mode, as PyTorch's eval(): the forward part of the training graph
(the nodes the outputs depend on) with every training BatchNorm
(BatchNormInternal, or BatchNormalization with training_mode=1) rewritten
to inference BatchNormalization on its running mean and variance. Each
sample's prediction then depends on that sample alone, so one prediction
of the whole mini-batch serves any --predict-batch.
The names of the forward outputs come from deploygen (`deploygen build
--platform host`, the project's deploygen.json): names, never values.
Needs Python 3.11 with tools/requirements.txt, like the other tools.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import numpy as np  # noqa: E402
    import onnx  # noqa: E402
    from onnx import helper, numpy_helper  # noqa: E402

    from zoo import refs  # noqa: E402
    from zoo.npz import npz_bytes  # noqa: E402
except ImportError as e:
    print(f"make_predict_refs.py: {e}: needs Python 3.11 with tools/requirements.txt (onnxruntime-training-cpu "
          "1.19.2, onnx 1.17): python3.11 -m venv VENV && VENV/bin/pip install -r tools/requirements.txt",
          file=sys.stderr)
    sys.exit(2)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPDATED = "_updated"


class Skip(Exception):
    """The folder is not a training model with references."""


def fail(msg):
    print(f"make_predict_refs.py: {msg}", file=sys.stderr)
    sys.exit(2)


def deploygen_binary(given):
    for c in [given, os.path.join(ROOT, "target/release/deploygen"), os.path.join(ROOT, "target/debug/deploygen"),
              shutil.which("deploygen")]:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    fail("no deploygen binary: build it (cargo build --release) or pass --deploygen BIN")


def forward_outputs(model_dir, deploygen):
    """The predict outputs of the model's training project, in API order."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "p")
        r = subprocess.run([deploygen, "build", model_dir, "--platform", "host", "--out", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise Skip(f"deploygen build failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
        with open(os.path.join(out, "deploygen.json")) as f:
            manifest = json.load(f)
    api = manifest.get("model_api")
    if manifest.get("kind") != "training" or api is None:
        raise Skip("not a training model")
    if api.get("no_predict"):
        raise Skip(f"no prediction: {api['no_predict']}")
    return api["outputs"]


def load(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def from_train_toml(model_dir, ins):
    """(training graph, feeds) of mini-batch 0 for a train.toml folder: the
    graph onnxruntime-training derives, with its parameters as inputs."""
    import make_train_refs as mt

    model = onnx.load(os.path.join(model_dir, "network.onnx"))
    spec = mt.Spec(os.path.join(model_dir, "train.toml"), model)
    model = mt.initial_values(mt.specialise(model, ins, spec), ins)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    shape = ins[spec.labels].shape if spec.loss == "mse" else mt.declared_shape(model, spec.logits)
    ref_model, _ = mt.ref_forms.reference_graph(model, spec.logits, shape)
    with tempfile.TemporaryDirectory() as art:
        mt.generate(ref_model, spec, art)
        train = onnx.load(os.path.join(art, "training_model.onnx"))
    feeds = {}
    for i in train.graph.input:
        n = i.name
        if n in ins:
            feeds[n] = ins[n]
        elif n in inits:
            feeds[n] = inits[n]
        elif n == "lazy_reset_grad":
            feeds[n] = np.array([True])
        elif n.endswith("_grad.accumulation.buffer"):
            p = n[: -len("_grad.accumulation.buffer")]
            feeds[n] = np.zeros_like(inits[p])
        elif spec.labels in ins and spec.labels not in feeds and spec.labels not in names_of(train):
            # The loss target, which onnxruntime names itself.
            feeds[n] = ins[spec.labels]
        else:
            raise Skip(f"onnxruntime's training graph takes '{n}', which the folder does not give")
    return train, feeds


def names_of(model):
    return {i.name for i in model.graph.input}


def with_updated(model, feeds, updated):
    """Every parameter at its value after training: a feed, or an initializer."""
    for name, value in updated.items():
        if name in feeds:
            feeds[name] = value.astype(feeds[name].dtype)
    for i, init in enumerate(model.graph.initializer):
        if init.name in updated:
            arr = updated[init.name].astype(numpy_helper.to_array(init).dtype)
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(arr, init.name))


def training_bn(node):
    if node.op_type == "BatchNormInternal":
        return True
    if node.op_type != "BatchNormalization":
        return False
    mode = next((a.i for a in node.attribute if a.name == "training_mode"), None)
    return mode == 1 if mode is not None else len([o for o in node.output if o]) > 1


def eval_forward(model, names):
    """The nodes `names` depend on, training BatchNorms in eval form, with
    `names` as the graph's outputs."""
    g = model.graph
    producer = {o: n for n in g.node for o in n.output if o}
    keep, stack = [], [producer[n] for n in names if n in producer]
    seen = set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        keep.append(n)
        stack.extend(producer[i] for i in n.input if i in producer)
    order = [n for n in g.node if id(n) in seen]
    nodes = []
    for n in order:
        if training_bn(n):
            eps = [a for a in n.attribute if a.name == "epsilon"]
            n = helper.make_node("BatchNormalization", list(n.input[:5]), [n.output[0]], name=n.name)
            n.attribute.extend(eps)
        nodes.append(n)
    read = {i for n in nodes for i in n.input}
    inputs = [i for i in g.input if i.name in read]
    inits = [i for i in g.initializer if i.name in read]
    outputs = [helper.make_empty_tensor_value_info(n) for n in names]
    graph = helper.make_graph(nodes, g.name or "forward", inputs, outputs, inits)
    opsets = [o for o in model.opset_import]
    out = helper.make_model(graph, opset_imports=opsets, ir_version=model.ir_version)
    return out


def predictions(model_dir, deploygen):
    for f in ("network.onnx", "inputs.npz", "outputs.npz"):
        if not os.path.isfile(os.path.join(model_dir, f)):
            raise Skip(f"no {f}")
    outs = load(os.path.join(model_dir, "outputs.npz"))
    if all(k.startswith("output_") for k in outs):
        # The ordered layout: output_<k> is the graph's k-th output.
        graph_outputs = [o.name for o in onnx.load(os.path.join(model_dir, "network.onnx")).graph.output]
        outs = {graph_outputs[int(k[7:])]: v for k, v in outs.items()
                if k[7:].isdigit() and int(k[7:]) < len(graph_outputs)}
    updated = {k[: -len(UPDATED)]: v for k, v in outs.items() if k.endswith(UPDATED)}
    if not updated:
        raise Skip("outputs.npz holds no '<param>_updated' (training references)")
    names = forward_outputs(model_dir, deploygen)
    ins = load(os.path.join(model_dir, "inputs.npz"))
    if os.path.isfile(os.path.join(model_dir, "train.toml")):
        model, feeds = from_train_toml(model_dir, ins)
    else:
        model, feeds = refs._first_pass(model_dir, onnx.load(os.path.join(model_dir, "network.onnx")), ins)
    model = onnx.ModelProto.FromString(model.SerializeToString())
    with_updated(model, feeds, updated)
    model = eval_forward(model, names)
    read = {i.name for i in model.graph.input}
    feeds = {k: v for k, v in feeds.items() if k in read}
    values = refs._session(model).run(names, feeds)
    return {n: np.asarray(v, np.float32) for n, v in zip(names, values)}


def write(model_dir, deploygen):
    preds = predictions(model_dir, deploygen)
    with open(os.path.join(model_dir, "predict.npz"), "wb") as f:
        f.write(npz_bytes(preds))
    shown = ", ".join(f"{k} {list(v.shape)}" for k, v in preds.items())
    print(f"{model_dir}: predict.npz ({shown})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dirs", nargs="*")
    ap.add_argument("--zoo", action="store_true", help="every training folder of models/")
    ap.add_argument("--deploygen", help="the deploygen binary (default: target/release/deploygen, then PATH)")
    args = ap.parse_args()
    deploygen = deploygen_binary(args.deploygen)
    dirs = list(args.model_dirs)
    if args.zoo:
        base = os.path.join(ROOT, "models")
        dirs += sorted(os.path.join(base, d) for d in os.listdir(base)
                       if os.path.isfile(os.path.join(base, d, "network.onnx")))
    if not dirs:
        fail("name a model folder, or --zoo")
    failed = 0
    for d in dirs:
        try:
            write(d, deploygen)
        except Skip as e:
            if not args.zoo:
                print(f"make_predict_refs.py: {d}: {e}", file=sys.stderr)
                failed += 1
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
