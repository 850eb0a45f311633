"""Build one model folder (in memory): files + facts for the README.

Every reference comes from onnxruntime and is cross-checked a second way;
any disagreement beyond TOL aborts the run.
"""

import math
import os
from collections import OrderedDict

import numpy as np
import onnx

from . import numpy_ref, train
from .data import inputs_npz, make_batches, meta
from .npz import npz_bytes, read_npz
from .ort import onnxruntime

TOL = 1e-5
GAP9_L2 = 1536 * 1024


class CheckFailed(AssertionError):
    pass


def expect_close(what, a, b, tol=None):
    tol = TOL if tol is None else tol
    if np.shape(a) != np.shape(b):
        raise CheckFailed(f"{what}: shapes {np.shape(a)} and {np.shape(b)}")
    d = float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
    if not d <= tol:
        raise CheckFailed(f"{what}: max |diff| = {d:.3e} > {tol:g}")
    return d


def max_param_diff(what, ref, other, names):
    return max(expect_close(f"{what} [{n}]", ref[n], other[n]) for n in names)


def op_list(model):
    ops = sorted({(n.domain or "ai.onnx", n.op_type) for n in model.graph.node})
    return [op if dom == "ai.onnx" else f"{dom}:{op}" for dom, op in ops]


def nbytes(arrays):
    return int(sum(np.asarray(a).nbytes for a in arrays))


def _npz(arrays, compressed):
    data = npz_bytes(arrays, compressed)
    back = read_npz(data)
    assert list(back) == list(arrays) and all(np.array_equal(back[k], np.asarray(arrays[k])) for k in arrays)
    return data


def graph_param_order(tm, spec):
    """Trainable and frozen parameters in the training graph's input order."""
    names = set(spec.trainable) | set(spec.frozen)
    return [i.name for i in tm.graph.input if i.name in names]


def build_training(spec, work, label_value=None):
    art = train.generate(spec, os.path.join(work, spec.name))
    with open(os.path.join(art, "training_model.onnx"), "rb") as f:
        training_bytes = f.read()
    tm = onnx.load_from_string(training_bytes)
    data_names = train.data_input_names(tm, spec)
    batches = make_batches(spec, data_names, label_value)
    assert spec.n_batches % spec.n_accum == 0
    p0 = train.initial_params(spec)

    # the references: onnxruntime.training.api over the whole schedule
    losses, params = train.run_reference(spec, art, batches)
    facts = OrderedDict(losses=[float(x) for x in losses])

    # weights really random: the first loss is not ln(num_classes)
    if spec.loss == "ce":
        gap = abs(float(losses[0]) - math.log(spec.num_classes))
        if not gap > 1e-3:
            raise CheckFailed(f"{spec.name}: first loss {losses[0]} is ln({spec.num_classes})")
        facts["ln_classes"] = math.log(spec.num_classes)

    # check 1: numpy (float64) forward of the forward graph -> losses before the first update
    #          (and the BatchNorm running statistics after pass 0)
    np_first, np_stats = [], {}
    for mb in range(spec.n_accum):
        x, t = batches[mb % spec.data_size]
        y = next(iter(numpy_ref.forward(spec.model, {"input": x}, p0, np_stats if mb == 0 else None).values()))
        np_first.append(numpy_ref.cross_entropy(y, t) if spec.loss == "ce" else numpy_ref.mse(y, t))
    facts["check_numpy_forward"] = expect_close(f"{spec.name}: numpy forward loss", np_first, losses[: spec.n_accum])

    # check 2: the training graph on a plain InferenceSession + numpy accumulation/SGD
    r_losses, r_params, r_first = train.replay(tm, spec, batches)
    facts["check_replay"] = max(expect_close(f"{spec.name}: replay losses", r_losses, losses),
                                max_param_diff(f"{spec.name}: replay", params, r_params, spec.trainable + spec.frozen))
    if spec.frozen:
        assert sorted(np_stats) == sorted(spec.frozen)
        facts["check_numpy_bn_stats"] = max_param_diff(f"{spec.name}: numpy BN statistics", np_stats, r_first,
                                                       spec.frozen)

    # check 3 (Gemm/Relu stacks): numpy forward/backward/SGD over the whole schedule
    if all(n.op_type in ("Gemm", "Relu") for n in spec.model.graph.node):
        n_losses, n_params = numpy_ref.mlp_schedule(spec.model, p0, batches, spec.loss,
                                                    float(np.float32(spec.lr)), spec.n_batches, spec.n_accum)
        facts["check_numpy_schedule"] = max(expect_close(f"{spec.name}: numpy losses", n_losses, losses),
                                            max_param_diff(f"{spec.name}: numpy", params, n_params, spec.trainable))

    files = OrderedDict()
    if spec.flavor == "single_graph":
        net = train.single_graph(tm, spec)
        s_losses, s_params = train.replay_single_graph(net, spec, batches)
        facts["check_single_graph"] = max(expect_close(f"{spec.name}: single-graph losses", s_losses, losses),
                                          max_param_diff(f"{spec.name}: single graph", params, s_params, spec.trainable))
        files["network.onnx"] = net.SerializeToString()
        graph_inputs = [i.name for i in net.graph.input]
        with_lr = False
    else:
        net = tm
        files["network.onnx"] = training_bytes
        graph_inputs = [i.name for i in tm.graph.input]
        if spec.optimizer == "sgdv2":
            with open(os.path.join(art, "optimizer_model.onnx"), "rb") as f:
                files["optimizer.onnx"] = f.read()
            with_lr = True
        else:
            opt = train.sgd_optimizer(tm, spec)
            facts["check_sgd_optimizer"] = _check_sgd_optimizer(opt, spec, p0)
            files["optimizer.onnx"] = opt.SerializeToString()
            with_lr = False
    facts["checker_relabelled"] = train.check_model(net)
    if "optimizer.onnx" in files:
        facts["optimizer_checker_relabelled"] = train.check_model(onnx.load_from_string(files["optimizer.onnx"]))

    ins = inputs_npz(spec.layout, graph_inputs, data_names, p0, batches, meta(spec, with_lr))
    outs = OrderedDict(loss=losses.astype(np.float32))
    if spec.layout == "ordered":
        # graph-output order: output_0 the loss (one per pass), output_k the k-th updated parameter
        assert spec.flavor == "single_graph"
        outs = OrderedDict(output_0=losses.astype(np.float32))
        for k, o in enumerate(net.graph.output[1:], start=1):
            assert o.name.endswith("_updated")
            outs[f"output_{k}"] = params[o.name[: -len("_updated")]]
        facts["npz_keys"] = OrderedDict(
            inputs=OrderedDict((f"input_{i}", n) for i, n in enumerate(graph_inputs)),
            outputs=OrderedDict((f"output_{k}", o.name) for k, o in enumerate(net.graph.output)))
    else:
        for name in graph_param_order(tm, spec):
            outs[f"{name}_updated"] = params[name]
    files["inputs.npz"] = _npz(ins, spec.compressed)
    files["outputs.npz"] = _npz(outs, spec.compressed)

    feeds = dict(zip(data_names, batches[0]))
    feeds.update(p0)
    feeds["lazy_reset_grad"] = np.array([True])
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in tm.graph.input}
    for _, _, buf in train.accumulators(tm):
        feeds[buf] = np.zeros(shapes[buf], np.float32)
    peak, in_bytes = train.live_bytes_peak(tm, feeds)

    facts.update(
        data_inputs=data_names,
        graph_inputs=graph_inputs,
        roles=training_roles(net, spec, data_names),
        trainable_bytes=nbytes(p0[n] for n in spec.trainable),
        frozen_bytes=nbytes(p0[n] for n in spec.frozen),
        n_trainable=len(spec.trainable),
        n_frozen=len(spec.frozen),
        ops=op_list(net),
        optimizer_ops=op_list(onnx.load_from_string(files["optimizer.onnx"])) if "optimizer.onnx" in files else [],
        peak_live_bytes=peak,
        graph_input_bytes=in_bytes,
        opset={o.domain or "ai.onnx": o.version for o in net.opset_import},
        ir_version=net.ir_version,
        loss_output=net.graph.output[0].name,
    )
    return files, facts, batches


def training_roles(net, spec, data_names):
    """Role of every graph input and output (names as in deploygen's `Role::name`)."""
    def role(name):
        if name in data_names:
            return "labels" if name == data_names[-1] else "data"
        if name in spec.trainable:
            return "param"
        if name in spec.frozen:
            return "frozen"
        if name.endswith(train.GRAD_BUF):
            return "grad_buffer"
        assert name == "lazy_reset_grad", name
        return "lazy_reset_grad"
    outs = OrderedDict()
    for k, o in enumerate(net.graph.output):
        if k == 0:
            outs[o.name] = "loss"
        elif o.name.endswith("_updated"):
            outs[o.name] = "updated_param"
        else:
            assert o.name.endswith("_grad.accumulation.out"), o.name
            outs[o.name] = "grad_flag"
    r = OrderedDict(inputs=OrderedDict((i.name, role(i.name)) for i in net.graph.input), outputs=outs)
    if spec.flavor == "single_graph":
        r["initializers"] = OrderedDict((i.name, "param") for i in net.graph.initializer if i.name in spec.trainable)
    return r


def _check_sgd_optimizer(opt, spec, p0):
    """Run the per-parameter SGD graph (SGD rewritten to Mul/Sub) on made-up
    gradients and compare with w - lr * g computed in numpy."""
    rng = np.random.default_rng(spec.seed + 2000)
    feeds = {}
    for i in opt.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        feeds[i.name] = p0[i.name] if i.name in p0 else rng.standard_normal(shape).astype(np.float32)
    sess = onnxruntime.InferenceSession(train.sgd_as_onnx(opt).SerializeToString(), providers=["CPUExecutionProvider"])
    outs = dict(zip([o.name for o in opt.graph.output], sess.run(None, feeds)))
    lr = np.float32(spec.lr)
    return max(expect_close(f"{spec.name}: optimizer {p}", outs[f"{p}_updated"],
                            p0[p] - lr * feeds[f"{p}{train.GRAD_BUF}"]) for p in spec.trainable)


ROUNDING_MARGIN = 1e-3


def _session(model):
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def input_key(layout, i, name):
    return {"positional": f"arr_{i:04d}", "ordered": f"input_{i}", "named": name}[layout]


def output_key(layout, i, name):
    return f"output_{i}" if layout == "ordered" else name


def inference_roles(model):
    init = {i.name for i in model.graph.initializer}
    return OrderedDict(
        inputs=OrderedDict((i.name, "data") for i in model.graph.input if i.name not in init),
        outputs=OrderedDict((o.name, "output") for o in model.graph.output))


def check_graph(spec, model):
    """onnx.checker as the spec asks; returns the relabelled ops."""
    if spec.checker == "reference":
        return train.check_model(spec.ref_model)
    if spec.checker == "lenient":
        view, moved = train.checker_view(model)
        onnx.checker.check_model(view, full_check=False)
        return moved
    return train.check_model(model)


def build_inference(spec):
    batches = make_batches(spec, ["input"])
    x = batches[0][0]
    run = spec.ref_model if spec.ref_model is not None else spec.model
    names = [o.name for o in spec.model.graph.output]
    assert [o.name for o in run.graph.output] == names
    outs = OrderedDict(zip(names, _session(run).run(None, {"input": x})))
    env = {}
    ref = numpy_ref.forward(spec.model, {"input": x}, env_out=env)
    facts = OrderedDict()
    facts["check_numpy_forward"] = max(expect_close(f"{spec.name}: numpy {n}", ref[n], outs[n]) for n in names)
    margin = numpy_ref.rounding_margin(spec.model, env)
    if margin != np.inf:
        if not margin > ROUNDING_MARGIN:
            raise CheckFailed(f"{spec.name}: a Floor/Ceil/Cast input is {margin:.2e} from an integer")
        facts["rounding_margin"] = margin
    facts["checker_relabelled"] = check_graph(spec, spec.model)
    files = OrderedDict()
    files["network.onnx"] = spec.model.SerializeToString()
    graph_inputs = [i.name for i in spec.model.graph.input]
    files["inputs.npz"] = _npz(OrderedDict([(input_key(spec.layout, 0, "input"), x)]), spec.compressed)
    files["outputs.npz"] = _npz(OrderedDict((output_key(spec.layout, i, n), outs[n]) for i, n in enumerate(names)),
                                spec.compressed)
    facts.update(
        data_inputs=["input"],
        graph_inputs=graph_inputs,
        roles=inference_roles(spec.model),
        trainable_bytes=0,
        weight_bytes=int(sum(np.prod(i.dims) * 4 for i in spec.model.graph.initializer if i.data_type == 1)),
        ops=op_list(spec.model),
        outputs={n: list(outs[n].shape) for n in names},
        declared_outputs={o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in spec.model.graph.output},
        opset={o.domain or "ai.onnx": o.version for o in spec.model.opset_import},
        ir_version=spec.model.ir_version,
    )
    if spec.layout == "ordered":
        facts["npz_keys"] = OrderedDict(inputs={"input_0": "input"},
                                        outputs=OrderedDict((f"output_{i}", n) for i, n in enumerate(names)))
    return files, facts, batches
