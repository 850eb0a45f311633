"""onnxruntime-training side: artifacts, the reference schedule, and a replay.

Reference semantics (the ones deploygen must reproduce), per forward pass mb:
  lazy_reset_grad = (mb % n_accum == 0)
  InPlaceAccumulatorV2: buffer = grad if lazy_reset_grad else buffer + grad
and after every n_accum passes one optimizer step  w <- w - lr * buffer
(the *sum* of the accumulated gradients, not their mean).
Data of pass mb is mini-batch mb % data_size.
BatchNormInternal (training_mode=1) also updates the frozen running statistics
on every forward pass: onnxruntime writes its outputs 1 and 2 in place into
the running_mean / running_var inputs,
  running_mean = momentum * running_mean + (1 - momentum) * batch_mean
  running_var  = momentum * running_var  + (1 - momentum) * batch_var (biased)
so those change although no optimizer touches them.
"""

import copy
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .ort import api, artifacts, onnxruntime

GRAD_BUF = "_grad.accumulation.buffer"
SGD_DOMAIN_FOR_CHECKS = "deploygen.check"


def generate(spec, workdir):
    """Run ORT's generate_artifacts; returns the artifact directory."""
    os.makedirs(workdir, exist_ok=True)
    loss = artifacts.LossType.MSELoss if spec.loss == "mse" else artifacts.LossType.CrossEntropyLoss
    # the gradient builder logs every graph transformer at INFO level on the
    # C stderr, whatever the Python-side severity; keep it unless it fails
    with tempfile.TemporaryFile() as log:
        saved = os.dup(2)
        sys.stderr.flush()
        os.dup2(log.fileno(), 2)
        try:
            artifacts.generate_artifacts(
                spec.model,
                requires_grad=spec.trainable,
                frozen_params=spec.frozen,
                loss=loss,
                optimizer=artifacts.OptimType.SGD,
                artifact_directory=workdir,
            )
        except BaseException:
            os.dup2(saved, 2)
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    return workdir


def initial_params(spec):
    return {i.name: numpy_helper.to_array(i) for i in spec.model.graph.initializer
            if i.name in spec.trainable or i.name in spec.frozen}


def data_input_names(training_model, spec):
    """Graph inputs that are not parameters, buffers or lazy_reset_grad, in graph order."""
    skip = set(spec.trainable) | set(spec.frozen) | {"lazy_reset_grad"}
    return [i.name for i in training_model.graph.input if i.name not in skip and not i.name.endswith(GRAD_BUF)]


def run_reference(spec, art, batches):
    """The schedule on onnxruntime.training.api: losses and final parameters."""
    state = api.CheckpointState.load_checkpoint(os.path.join(art, "checkpoint"))
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    module = api.Module(os.path.join(art, "training_model.onnx"), state,
                        os.path.join(art, "eval_model.onnx"), session_options=so)
    opt = api.Optimizer(os.path.join(art, "optimizer_model.onnx"), module)
    opt.set_learning_rate(spec.lr)
    module.train()
    p0 = initial_params(spec)
    for name, value in p0.items():
        assert np.array_equal(state.parameters[name].data, value), f"checkpoint differs from model: {name}"
    losses = []
    for mb in range(spec.n_batches):
        losses.append(float(module(*batches[mb % spec.data_size])))
        if mb % spec.n_accum == spec.n_accum - 1:
            opt.step()
            module.lazy_reset_grad()
    params = {name: state.parameters[name].data.copy() for name in spec.trainable + spec.frozen}
    return np.array(losses, dtype=np.float32), params


def accumulators(training_model):
    """(param, grad tensor, buffer) per InPlaceAccumulatorV2, in node order."""
    out = []
    for n in training_model.graph.node:
        if n.op_type == "InPlaceAccumulatorV2":
            buf, grad = n.input[0], n.input[1]
            assert buf.endswith(GRAD_BUF), buf
            out.append((buf[: -len(GRAD_BUF)], grad, buf))
    return out


def bn_running_stats(training_model):
    """(running_mean input, running_mean_out, running_var input, running_var_out)
    per BatchNormInternal."""
    return [(n.input[3], n.output[1], n.input[4], n.output[2])
            for n in training_model.graph.node if n.op_type == "BatchNormInternal"]


def replay(training_model, spec, batches):
    """Second route to the references: the committed training graph on a plain
    InferenceSession, fed fresh copies (onnxruntime writes some inputs in place),
    with gradients and BatchNormInternal's running_mean/var outputs exposed as
    extra graph outputs; accumulation, SGD and the running-statistics write-back
    are done here in numpy, as documented at the top of this module.
    Returns losses, final parameters, and the frozen parameters after pass 0."""
    m = copy.deepcopy(training_model)
    acc = accumulators(m)
    bns = bn_running_stats(m)
    for name in [g for _, g, _ in acc] + [o for rm, rmo, rv, rvo in bns for o in (rmo, rvo)]:
        m.graph.output.append(helper.make_empty_tensor_value_info(name))
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 1
    sess = onnxruntime.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    params = {k: v.copy() for k, v in initial_params(spec).items()}
    data_names = data_input_names(training_model, spec)
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in training_model.graph.input}
    lr = np.float32(spec.lr)
    losses, buffers, after_first = [], {}, None
    loss_name = training_model.graph.output[0].name
    for mb in range(spec.n_batches):
        reset = mb % spec.n_accum == 0
        feeds = {k: v.copy() for k, v in zip(data_names, batches[mb % spec.data_size])}
        feeds.update({k: v.copy() for k, v in params.items()})
        for p, _, buf in acc:
            feeds[buf] = np.zeros(shapes[buf], np.float32)
        feeds["lazy_reset_grad"] = np.array([reset])
        outs = dict(zip([o.name for o in m.graph.output], sess.run(None, feeds)))
        losses.append(float(outs[loss_name]))
        for p, grad, _ in acc:
            buffers[p] = outs[grad].copy() if reset else buffers[p] + outs[grad]
        for rm, rmo, rv, rvo in bns:
            params[rm], params[rv] = outs[rmo], outs[rvo]
        if mb == 0:
            after_first = {k: params[k].copy() for k in spec.frozen}
        if mb % spec.n_accum == spec.n_accum - 1:
            for p, _, _ in acc:
                params[p] = params[p] - lr * buffers[p]
    return np.array(losses, dtype=np.float32), params, after_first


# ---------------------------------------------------------------------------
# optimizer graph with one SGD node per parameter
# ---------------------------------------------------------------------------

def sgd_optimizer(training_model, spec):
    """optimizer.onnx: `SGD(<p>, <p>_grad.accumulation.buffer){lr} -> <p>_updated` per
    trainable parameter; inputs interleaved (w0, g0, w1, g1, ...)."""
    ins = {i.name: i for i in training_model.graph.input}
    inputs, outputs, nodes = [], [], []
    for p, _, buf in accumulators(training_model):
        inputs += [copy.deepcopy(ins[p]), copy.deepcopy(ins[buf])]
        out = copy.deepcopy(ins[p])
        out.name = f"{p}_updated"
        outputs.append(out)
        nodes.append(helper.make_node("SGD", [p, buf], [out.name], name=f"{p}_sgd", lr=float(spec.lr)))
    g = helper.make_graph(nodes, f"{spec.name}_optimizer", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="deploygen-tools-make_models")
    m.ir_version = training_model.ir_version
    return m


def sgd_as_onnx(model):
    """Copy of `model` where each SGD(w, g){lr} -> u is Sub(w, Mul(g, lr)) -> u,
    so onnxruntime can run it (verification only)."""
    m = copy.deepcopy(model)
    nodes = []
    for n in m.graph.node:
        if n.op_type == "SGD" and n.domain == "":
            lr = helper.get_attribute_value(n.attribute[0])
            c = f"{n.name}.lr"
            m.graph.initializer.append(helper.make_tensor(c, TensorProto.FLOAT, [], [lr]))
            nodes.append(helper.make_node("Mul", [n.input[1], c], [f"{n.name}.step"]))
            nodes.append(helper.make_node("Sub", [n.input[0], f"{n.name}.step"], [n.output[0]]))
        else:
            nodes.append(n)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m


# ---------------------------------------------------------------------------
# single-graph flavor: forward + backward + inline SGD, weights as initializers
# ---------------------------------------------------------------------------

def single_graph(training_model, spec):
    """Turn ORT's training graph into one training-step graph: parameters become
    initializers, accumulation buffers and lazy_reset_grad disappear, and every
    InPlaceAccumulatorV2(buf, g, reset) becomes SGD(w, g){lr} -> w_updated.
    Outputs: the loss, then w_updated per parameter."""
    m = copy.deepcopy(training_model)
    g = m.graph
    p0 = initial_params(spec)
    acc = accumulators(m)
    keep_inputs = [i for i in g.input if i.name not in p0 and not i.name.endswith(GRAD_BUF)
                   and i.name != "lazy_reset_grad"]
    ins = {i.name: i for i in g.input}
    for name in [i.name for i in g.input if i.name in p0]:
        g.initializer.append(numpy_helper.from_array(p0[name], name))
    del g.input[:]
    g.input.extend(keep_inputs)
    by_buf = {buf: p for p, _, buf in acc}
    nodes = []
    for n in g.node:
        if n.op_type == "InPlaceAccumulatorV2":
            p = by_buf[n.input[0]]
            nodes.append(helper.make_node("SGD", [p, n.input[1]], [f"{p}_updated"], name=f"{p}_sgd", lr=float(spec.lr)))
        else:
            nodes.append(n)
    del g.node[:]
    g.node.extend(nodes)
    loss = g.output[0]
    outs = [loss]
    for p, _, _ in acc:
        o = copy.deepcopy(ins[p])
        o.name = f"{p}_updated"
        outs.append(o)
    del g.output[:]
    g.output.extend(outs)
    return m


def replay_single_graph(model, spec, batches):
    """Run the committed single graph step by step on onnxruntime (SGD rewritten
    to Mul/Sub, weights turned into feedable inputs); w_updated feeds the next pass."""
    m = sgd_as_onnx(model)
    params = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer if i.name in spec.trainable}
    keep = [i for i in m.graph.initializer if i.name not in params]
    for i in m.graph.initializer:
        if i.name in params:
            m.graph.input.append(helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)))
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 1
    sess = onnxruntime.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    data_names = [i.name for i in model.graph.input]
    out_names = [o.name for o in m.graph.output]
    losses = []
    for mb in range(spec.n_batches):
        feeds = dict(zip(data_names, batches[mb % spec.data_size]))
        feeds.update(params)
        outs = dict(zip(out_names, sess.run(None, feeds)))
        losses.append(float(outs[out_names[0]]))
        params = {p: outs[f"{p}_updated"] for p in params}
    return np.array(losses, dtype=np.float32), params


# ---------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------

def checker_view(model):
    """onnx.checker rejects default-domain ops that ONNX does not define but
    onnxruntime emits there (AveragePoolGrad, MaxPoolGrad) and the SGD of the
    Deeploy formats. Return a copy with exactly those moved to a private domain
    (com.microsoft ops are skipped by the checker already), plus their names."""
    m = copy.deepcopy(model)
    opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    moved = set()
    for n in m.graph.node:
        if n.domain in ("", "ai.onnx"):
            try:
                onnx.defs.get_schema(n.op_type, opset, "")
            except onnx.defs.SchemaError:
                moved.add(n.op_type)
                n.domain = SGD_DOMAIN_FOR_CHECKS
    if moved:
        m.opset_import.append(helper.make_opsetid(SGD_DOMAIN_FOR_CHECKS, 1))
    return m, sorted(moved)


def check_model(model):
    """Full onnx.checker pass (with strict shape inference) on the checker view."""
    view, moved = checker_view(model)
    onnx.checker.check_model(view, full_check=True)
    return moved


def live_bytes_peak(training_model, feeds):
    """A lower-bound style estimate of the training step's memory: run the graph
    with every intermediate exposed, then sweep node order keeping each tensor
    alive from its producer to its last consumer; graph inputs and outputs live
    for the whole step. Returns (peak bytes, bytes of graph inputs)."""
    m = copy.deepcopy(training_model)
    known = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o and o not in known:
                m.graph.output.append(helper.make_empty_tensor_value_info(o))
                known.add(o)
    so = onnxruntime.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = onnxruntime.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in m.graph.output]
    size = {n: v.nbytes for n, v in zip(names, sess.run(None, feeds))}
    size.update({k: np.asarray(v).nbytes for k, v in feeds.items()})
    last = {}
    for idx, n in enumerate(m.graph.node):
        for i in n.input:
            last[i] = idx
    inputs = {i.name for i in training_model.graph.input}
    outputs = {o.name for o in training_model.graph.output}
    peak = 0
    for idx, n in enumerate(m.graph.node):
        live = sum(size[i] for i in inputs)
        for j, node in enumerate(m.graph.node[: idx + 1]):
            for o in node.output:
                if o and (o in outputs or last.get(o, j) >= idx):
                    live += size.get(o, 0)
        peak = max(peak, live)
    return peak, sum(size[i] for i in inputs)
