#!/usr/bin/env python3
"""Time one training step or one inference per model folder on onnxruntime (CPU, one thread).

    python tools/ort_step_time.py MODEL_DIR... [--json FILE] [--runs N] [--warmup N]

Per folder:
- training artifacts: one run of `network.onnx` (forward, backward,
  InPlaceAccumulatorV2 with lazy_reset_grad = true) plus one run of
  `optimizer.onnx` (onnxruntime's SGDOptimizerV2 over the parameter and
  gradient sequences, or the per-parameter SGD graph with SGD written as
  Sub/Mul), back to back;
- single-graph training step: one run of `network.onnx` (inline SGD written
  as Sub/Mul);
- inference: one run of `network.onnx`.
Graphs onnxruntime 1.19 cannot run as committed (legacy attribute forms,
RMSNormalization, the default-domain RMSNorm) are timed after the rewrite
tools/make_refs.py uses (tools/zoo/compat.py). Inputs are the folder's
mini-batch 0 and initial parameters from inputs.npz. Each session has
intra_op_num_threads = inter_op_num_threads = 1 and onnxruntime's default
graph optimizations; `--warmup` untimed runs, then the median wall time
(time.perf_counter) of `--runs` runs.

Output (stdout, and FILE with --json), keyed by folder name:
    {"resnet8": {"seconds": 0.0123, "kind": "training"}, ...}
The zoo's numbers are models/ort_step_times.json; they depend on the
machine, so make_models.py --check does not compare them.
"""

import argparse
import json
import os
import statistics
import sys
import time
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from make_refs import require_onnxruntime  # noqa: E402


def _timed(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def step_fn(folder):
    """(kind, a function running one step) for a model folder."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    from zoo import compat, refs, train

    model = onnx.load(os.path.join(folder, "network.onnx"))
    ins = refs._load_npz(os.path.join(folder, "inputs.npz"))
    flavor = refs.flavor(model)
    init = {i.name for i in model.graph.initializer}

    if flavor == "inference":
        slots = [i.name for i in model.graph.input if i.name not in init]
        bound, _ = refs._bind(ins, slots, model.graph)
        run, _ = compat.for_onnxruntime(model)
        sess = refs._session(run)
        feeds = {n: bound[n][0] for n in slots}
        return "inference", lambda: sess.run(None, feeds)

    if flavor == "single_graph":
        slots = [i.name for i in model.graph.input if i.name not in init]
        bound, _ = refs._bind(ins, slots, model.graph)
        sess = refs._session(train.sgd_as_onnx(model))
        feeds = {n: bound[n][0] for n in slots}
        return "training", lambda: sess.run(None, feeds)

    slots = [i.name for i in model.graph.input if not i.name.endswith(train.GRAD_BUF)]
    bound, _ = refs._bind(ins, slots, model.graph)
    shapes = refs._shapes(model.graph)
    feeds = {n: bound[n][0].copy() for n in slots}
    feeds["lazy_reset_grad"] = np.array([True])
    acc = train.accumulators(model)
    for _, _, buf in acc:
        feeds[buf] = np.zeros(shapes[buf], np.float32)
    net = refs._session(model)
    opt = onnx.load(os.path.join(folder, "optimizer.onnx"))
    ops = {n.op_type for n in opt.graph.node}
    params = [p for p, _, _ in acc]
    if ops == {"SGDOptimizerV2"}:
        osess = refs._session(opt)
        lr = np.array([float(ins.get("meta_learning_rate", 0.01))], np.float32)
        ofeeds = {"learning_rate": lr, "step": np.array([1], np.int64),
                  "params": [feeds[p] for p in params],
                  "gradients": [feeds[b] for _, _, b in acc],
                  "first_order_moments": [np.zeros_like(feeds[p]) for p in params]}
        names = {i.name for i in opt.graph.input}
        ofeeds = {k: v for k, v in ofeeds.items() if k in names}
    else:
        osess = refs._session(train.sgd_as_onnx(opt))
        ofeeds = {i.name: feeds[i.name] for i in opt.graph.input}

    def step():
        net.run(None, feeds)
        osess.run(None, ofeeds)
    return "training", step


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dirs", nargs="+")
    ap.add_argument("--json", help="also write the result to FILE")
    ap.add_argument("--runs", type=int, default=50, help="timed runs per model (median reported; default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed runs first (default 5)")
    args = ap.parse_args(argv)
    require_onnxruntime()
    out = OrderedDict()
    for folder in args.model_dirs:
        name = os.path.basename(os.path.normpath(folder))
        kind, fn = step_fn(folder)
        out[name] = OrderedDict(seconds=_timed(fn, args.runs, args.warmup), kind=kind)
        sys.stderr.write(f"{name}: {out[name]['seconds'] * 1e3:.3f} ms ({kind})\n")
    text = json.dumps(out, indent=1) + "\n"
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
