#!/usr/bin/env python3
"""Cross-check the zoo's inference references with a newer onnxruntime.

    ~/.venvs/ort-current/bin/python tools/check_ort_current.py [MODEL ...]

The zoo's references come from the pinned onnxruntime 1.19.2, which has no
opset 23: `rmsnorm_transformer` was computed from the graph with
RMSNormalization decomposed. A current onnxruntime (tested: 1.31.1 with
onnx 1.23.2, in a venv of its own: `pip install onnxruntime onnx numpy`)
runs the committed opset-23 file as it is; this script runs every
inference folder of models/ (or the ones named) on it and prints the max
|difference| from the committed outputs.npz. Folders it refuses (the
default-domain RMSNorm, the legacy attribute forms) are listed as refused.
Exit status 1 if any difference exceeds --tol (default 1e-5). Not part of
make_models.py: it needs the second venv and its numbers depend on it.
"""

import argparse
import json
import os
import sys

import numpy as np
import onnxruntime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*")
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    onnxruntime.set_default_logger_severity(3)
    manifest = json.load(open(os.path.join(ROOT, "models", "manifest.json")))
    names = args.models or [n for n, f in manifest.items() if f["kind"] == "inference"]
    print(f"onnxruntime {onnxruntime.__version__}")
    bad = 0
    for name in names:
        d = os.path.join(ROOT, "models", name)
        so = onnxruntime.SessionOptions()
        so.intra_op_num_threads = 1
        try:
            sess = onnxruntime.InferenceSession(os.path.join(d, "network.onnx"), so,
                                                providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001
            print(f"refused  {name}: {str(e).splitlines()[0][:160]}")
            continue
        with np.load(os.path.join(d, "inputs.npz")) as ins, np.load(os.path.join(d, "outputs.npz")) as outs:
            data = [k for k in ins.files if not k.startswith("meta_") and not k.startswith("mb")]
            feeds = {i.name: ins[k] for i, k in zip(sess.get_inputs(), data)}
            got = sess.run(None, feeds)
            diff = max(float(np.max(np.abs(g.astype(np.float64) - outs[k]))) if g.size else 0.0
                       for g, k in zip(got, outs.files))
        ok = diff <= args.tol
        bad += not ok
        print(f"{'ok' if ok else 'DIFFERS':8} {name}: max |diff| {diff:.1e}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
