#!/usr/bin/env python3
"""References for training an inference model from its train.toml
(docs/training.md, "Training from an inference graph").

    python tools/make_train_refs.py MODEL_DIR...     # write MODEL_DIR/outputs.npz
    python tools/make_train_refs.py --zoo            # (re)make the models/*_derived* folders

Needs Python 3.11 with tools/requirements.txt (onnxruntime-training-cpu
1.19.2, onnx 1.17); no torch:

    python3.11 -m venv ~/.venvs/deploygen-tools && ~/.venvs/deploygen-tools/bin/pip install -r tools/requirements.txt
    ~/.venvs/deploygen-tools/bin/python tools/make_train_refs.py MODEL_DIR

MODEL_DIR holds an inference `network.onnx` (weights as initializers,
symbolic dims allowed), its `train.toml` and `inputs.npz` in the named
layout: the data inputs and the labels per mini-batch (`<name>`,
`mb<i>_<name>`). Nothing else is needed: initial weights and BatchNorm
statistics are the model's initializers (an inputs.npz entry of the same
name overrides one); a symbolic dim takes train.toml's `dims` value, else
the data's size; the schedule is every stored mini-batch once, with
train.toml's `accumulation_steps`. `meta_data_size`, `meta_n_batches` and
`meta_n_accum` change it where present (`meta_n_accum` must agree with
`accumulation_steps`). The references come from onnxruntime-training
alone, never from deploygen:

- `generate_artifacts` turns the inference graph into its training graph
  (requires_grad = the trainable weights of train.toml, frozen_params = the
  BatchNorm running statistics, which onnxruntime updates in place), with
  the loss of train.toml and its SGD or AdamW optimizer graph (AdamW with
  train.toml's betas, epsilon and weight decay);
- `onnxruntime.training.api` runs the schedule: pass mb reads mini-batch
  `mb % data_size`; after every `accumulation_steps` passes one optimizer
  step on the summed gradients, then `lazy_reset_grad`;
- SGD with momentum, which onnxruntime's artifacts lack, is one optimizer
  graph of standard ONNX ops (Mul, Add, Sub) run by onnxruntime on the
  gradients the training API accumulated:
  `v = momentum * v + (g + weight_decay * w)`, `w = w - lr * v`.

outputs.npz: `loss` (one per pass) and `<p>_updated` for every trainable
weight and every BatchNorm running statistic after the last step.
"""

import argparse
import os
import sys
import tempfile
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import numpy as np  # noqa: E402
    import onnx  # noqa: E402
    from onnx import TensorProto, helper, numpy_helper  # noqa: E402

    from zoo import ref_forms  # noqa: E402
    from zoo.npz import npz_bytes  # noqa: E402
    from zoo.ort import api, artifacts, onnxruntime  # noqa: E402

    from onnxruntime.training import onnxblock  # noqa: E402
except ImportError as e:
    print(f"make_train_refs.py: {e}: needs Python 3.11 with tools/requirements.txt (onnxruntime-training-cpu "
          "1.19.2, onnx 1.17): python3.11 -m venv VENV && VENV/bin/pip install -r tools/requirements.txt",
          file=sys.stderr)
    sys.exit(2)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def glob_match(pattern, name):
    import fnmatch
    return fnmatch.fnmatchcase(name, pattern)


class Spec:
    """train.toml with deploygen's defaults (src/ir/train.rs)."""

    def __init__(self, path, model):
        with open(path, "rb") as f:
            k = tomllib.load(f)
        self.loss = k["loss"]
        self.labels = k.get("labels", "labels")
        floats = [o.name for o in model.graph.output if o.type.tensor_type.elem_type == TensorProto.FLOAT]
        self.logits = k.get("logits") or (floats[0] if len(floats) == 1 else None)
        assert self.logits, "train.toml must name 'logits': the graph has several float outputs"
        self.optimizer = k.get("optimizer", "sgd")
        self.lr = float(k["learning_rate"])
        self.momentum = float(k.get("momentum", 0.9 if self.optimizer == "momentum" else 0.0))
        self.weight_decay = float(k.get("weight_decay", 0.0))
        self.beta1 = float(k.get("beta1", 0.9))
        self.beta2 = float(k.get("beta2", 0.999))
        self.epsilon = float(k.get("epsilon", 1e-6))
        self.n_accum_key = int(k.get("accumulation_steps", 1))
        self.dims = {n: int(v) for n, v in k.get("dims", {}).items()}
        floats = [i.name for i in model.graph.initializer if i.data_type == TensorProto.FLOAT]
        bn_stats = {n.input[i] for n in model.graph.node if n.op_type == "BatchNormalization" for i in (3, 4)}
        if "trainable" in k:
            chosen = [n for n in floats if any(glob_match(g, n) for g in k["trainable"])]
        elif "frozen" in k:
            chosen = [n for n in floats if not any(glob_match(g, n) for g in k["frozen"])]
        else:
            chosen = floats
        # BatchNorm statistics have no gradient: onnxruntime keeps them as
        # frozen parameters it updates in place.
        self.trainable = [n for n in chosen if n not in bn_stats]
        self.frozen = [n for n in floats if n in bn_stats]


def ort_loss(spec):
    return artifacts.LossType.MSELoss if spec.loss == "mse" else artifacts.LossType.CrossEntropyLoss


def ort_optimizer(spec):
    if spec.optimizer == "adamw":
        return onnxblock.optim.AdamW(betas=(spec.beta1, spec.beta2), eps=spec.epsilon,
                                     weight_decay=spec.weight_decay)
    return artifacts.OptimType.SGD


def generate(model, spec, workdir):
    quiet = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            artifacts.generate_artifacts(model, requires_grad=spec.trainable, frozen_params=spec.frozen,
                                         loss=ort_loss(spec), optimizer=ort_optimizer(spec),
                                         artifact_directory=workdir)
        finally:
            os.dup2(quiet, 2)
            os.close(quiet)


def momentum_graph(names, shapes):
    """v' = momentum * v + (g + wd * w); w' = w - lr * v' per weight, as ONNX ops."""
    nodes, inputs, outputs = [], [], []
    scal = [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in ("lr", "mu", "wd")]
    for k, (n, s) in enumerate(zip(names, shapes)):
        for p in ("w", "g", "v"):
            inputs.append(helper.make_tensor_value_info(f"{p}{k}", TensorProto.FLOAT, s))
        nodes += [
            helper.make_node("Mul", ["wd", f"w{k}"], [f"dw{k}"]),
            helper.make_node("Add", [f"g{k}", f"dw{k}"], [f"gr{k}"]),
            helper.make_node("Mul", ["mu", f"v{k}"], [f"mv{k}"]),
            helper.make_node("Add", [f"mv{k}", f"gr{k}"], [f"vo{k}"]),
            helper.make_node("Mul", ["lr", f"vo{k}"], [f"st{k}"]),
            helper.make_node("Sub", [f"w{k}", f"st{k}"], [f"wo{k}"]),
        ]
        outputs += [helper.make_tensor_value_info(f"wo{k}", TensorProto.FLOAT, s),
                    helper.make_tensor_value_info(f"vo{k}", TensorProto.FLOAT, s)]
    g = helper.make_graph(nodes, "momentum_sgd", inputs + scal, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def load_inputs(model_dir):
    with np.load(os.path.join(model_dir, "inputs.npz")) as z:
        return {k: z[k] for k in z.files}


def batches_of(inputs, data_names, data_size):
    key = lambda n, mb: n if mb == 0 else f"mb{mb}_{n}"  # noqa: E731
    return [[inputs[key(n, mb)] for n in data_names] for mb in range(data_size)]


def fail(msg):
    print(f"make_train_refs.py: {msg}", file=sys.stderr)
    sys.exit(2)


def stored_mini_batches(inputs, names):
    """1 + the highest mini-batch index of the named inputs' keys."""
    top = 0
    for k in inputs:
        if k.startswith("mb") and "_" in k:
            i, rest = k[2:].split("_", 1)
            if i.isdigit() and rest in names:
                top = max(top, int(i))
    return top + 1


def schedule(inputs, names, spec):
    """(data_size, n_batches, n_accum): the meta_* keys where present, else
    every stored mini-batch once with train.toml's accumulation_steps."""
    stored = stored_mini_batches(inputs, names)
    meta = {k: int(inputs[f"meta_{k}"]) for k in ("data_size", "n_batches", "n_accum") if f"meta_{k}" in inputs}
    n_accum = meta.get("n_accum", spec.n_accum_key)
    if n_accum != spec.n_accum_key:
        fail(f"inputs.npz's meta_n_accum is {n_accum} but train.toml's accumulation_steps is {spec.n_accum_key}")
    data_size, n_batches = meta.get("data_size", stored), meta.get("n_batches", stored)
    if n_batches % n_accum:
        fail(f"{n_batches} forward passes are not a multiple of accumulation_steps = {n_accum}")
    return data_size, n_batches, n_accum


def specialise(model, inputs, spec):
    """The model with every symbolic dim of its inputs and outputs made the
    value deploygen gives it: train.toml's dims, else the data's size."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    values = dict(spec.dims)
    for v in m.graph.input:
        if v.name in inputs:
            for d, n in zip(v.type.tensor_type.shape.dim, inputs[v.name].shape):
                if d.dim_param and d.dim_param not in values:
                    values[d.dim_param] = n
    for v in list(m.graph.input) + list(m.graph.output):
        for d in v.type.tensor_type.shape.dim:
            if d.dim_param in values:
                d.dim_value = values[d.dim_param]
            elif d.dim_param:
                fail(f"symbolic dim '{d.dim_param}' of '{v.name}' has no value: add {v.name} to inputs.npz "
                     f"or dims = {{ {d.dim_param} = N }} to train.toml")
    del m.graph.value_info[:]
    return m


def initial_values(model, inputs):
    """The model with each initializer an inputs.npz entry of the same name
    overrides replaced by that entry."""
    for i, init in enumerate(model.graph.initializer):
        if init.name in inputs:
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(inputs[init.name], init.name))
    return model


def references(model_dir):
    """(losses, {param: final value}, operators rewritten for onnxruntime)
    for one model folder."""
    for f in ("network.onnx", "train.toml", "inputs.npz"):
        if not os.path.isfile(os.path.join(model_dir, f)):
            fail(f"{model_dir} has no {f}")
    model = onnx.load(os.path.join(model_dir, "network.onnx"))
    spec = Spec(os.path.join(model_dir, "train.toml"), model)
    inputs = load_inputs(model_dir)
    model = initial_values(specialise(model, inputs, spec), inputs)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    data_names = [i.name for i in model.graph.input if i.name not in inits] + [spec.labels]
    missing = [n for n in data_names if n not in inputs]
    if missing:
        fail(f"{model_dir}/inputs.npz has no {', '.join(repr(n) for n in missing)} (keys: {', '.join(inputs)})")
    data_size, n_batches, n_accum = schedule(inputs, data_names, spec)
    # onnxruntime trains an equivalent graph where it cannot take this one
    # (zoo/ref_forms.py), with the loss on the one output the spec names.
    first_labels = inputs[spec.labels]
    shape = first_labels.shape if spec.loss == "mse" else declared_shape(model, spec.logits)
    ref_model, rewritten = ref_forms.reference_graph(model, spec.logits, shape)
    if rewritten:
        print(f"{model_dir}: onnxruntime trains the graph with {', '.join(rewritten)} rewritten (zoo/ref_forms.py)")
    with tempfile.TemporaryDirectory() as art:
        generate(ref_model, spec, art)
        state = api.CheckpointState.load_checkpoint(os.path.join(art, "checkpoint"))
        so = onnxruntime.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        module = api.Module(os.path.join(art, "training_model.onnx"), state,
                            os.path.join(art, "eval_model.onnx"), session_options=so)
        # onnxruntime's training graph takes the model's inputs, then the
        # loss target (which it names itself): npz keys in that order.
        batches = batches_of(inputs, data_names, data_size)
        opt = None
        if spec.optimizer != "momentum":
            opt = api.Optimizer(os.path.join(art, "optimizer_model.onnx"), module)
            opt.set_learning_rate(spec.lr)
        else:
            shapes = [list(inits[n].shape) for n in spec.trainable]
            mom = momentum_graph(spec.trainable, shapes)
            velocity = [np.zeros_like(inits[n]) for n in spec.trainable]
        module.train()
        losses = []
        for mb in range(n_batches):
            losses.append(float(module(*batches[mb % data_size])))
            if mb % n_accum != n_accum - 1:
                continue
            if opt is not None:
                opt.step()
            else:
                feeds = {"lr": np.array(spec.lr, np.float32), "mu": np.array(spec.momentum, np.float32),
                         "wd": np.array(spec.weight_decay, np.float32)}
                for k, n in enumerate(spec.trainable):
                    feeds[f"w{k}"] = state.parameters[n].data
                    feeds[f"g{k}"] = state.parameters[n].grad
                    feeds[f"v{k}"] = velocity[k]
                outs = mom.run(None, feeds)
                for k, n in enumerate(spec.trainable):
                    state.parameters[n].data = outs[2 * k]
                    velocity[k] = outs[2 * k + 1]
            module.lazy_reset_grad()
        params = {n: state.parameters[n].data.copy() for n in spec.trainable + spec.frozen}
    return np.array(losses, dtype=np.float32), params, rewritten


def declared_shape(model, name):
    out = next((o for o in model.graph.output if o.name == name), None)
    if out is None or not out.type.tensor_type.HasField("shape"):
        inferred = onnx.shape_inference.infer_shapes(model)
        out = next(v for v in list(inferred.graph.output) + list(inferred.graph.value_info) if v.name == name)
    return [d.dim_value for d in out.type.tensor_type.shape.dim]


def write_refs(model_dir):
    """Write outputs.npz; returns (losses, operators rewritten)."""
    losses, params, rewritten = references(model_dir)
    arrays = {"loss": losses}
    arrays.update({f"{n}_updated": v.astype(np.float32) for n, v in params.items()})
    with open(os.path.join(model_dir, "outputs.npz"), "wb") as f:
        f.write(npz_bytes(arrays))
    print(f"{model_dir}: losses {np.array2string(losses, precision=5)}")
    return losses, rewritten


def write_splits(models_root):
    """models/frozen_splits/: each weight group of the zoo CNNs frozen in
    turn (tools/zoo/derived.py's SPLITS), train.toml and outputs.npz."""
    import shutil

    from zoo import derived

    out = os.path.join(models_root, "frozen_splits")
    if os.path.isdir(out):
        shutil.rmtree(out)
    with tempfile.TemporaryDirectory() as work:
        for tmp, dest in derived.splits(models_root, work):
            write_refs(tmp)
            os.makedirs(dest)
            for name in ("train.toml", "outputs.npz"):
                shutil.copyfile(os.path.join(tmp, name), os.path.join(dest, name))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--zoo", action="store_true", help="(re)make the models/*_derived_* folders first")
    a = ap.parse_args()
    dirs = list(a.dirs)
    if a.zoo:
        from zoo import derived
        dirs += derived.write_all(os.path.join(ROOT, "models"))
        # references copied from simple_mlp's artifacts, not recomputed
        derived.imported_twin(os.path.join(ROOT, "models"))
    for d in dirs:
        write_refs(d)
    if a.zoo:
        write_splits(os.path.join(ROOT, "models"))


if __name__ == "__main__":
    main()
