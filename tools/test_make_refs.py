#!/usr/bin/env python3
"""make_refs.py reproduces every committed zoo reference.

    python tools/test_make_refs.py [MODEL_DIR ...]     # default: every folder in models/

For each folder: recompute outputs.npz with tools/zoo/refs.py and compare
with the committed one: same keys in the same order, same dtypes and
shapes, values within 1e-6 (the script reports how many are bit-exact).
Also checks that make_refs.py exits non-zero with a clear message when
onnxruntime cannot be imported. Exit status 1 on any difference.
"""

import io
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOL = 1e-6


def model_dirs(root=ROOT):
    models = os.path.join(root, "models")
    return sorted(os.path.join(models, d) for d in os.listdir(models)
                  if os.path.isfile(os.path.join(models, d, "network.onnx")))


def check_refs(dirs, out=sys.stdout):
    """Returns the number of folders that differ."""
    import numpy as np
    from zoo import refs

    bad = 0
    for d in dirs:
        name = os.path.basename(d.rstrip("/"))
        with open(os.path.join(d, "outputs.npz"), "rb") as f:
            with np.load(io.BytesIO(f.read()), allow_pickle=False) as z:
                committed = {k: z[k] for k in z.files}
        try:
            new, facts = refs.compute(d)
        except Exception as e:  # noqa: BLE001  (report every folder)
            out.write(f"FAIL {name}: {type(e).__name__}: {e}\n")
            bad += 1
            continue
        problems = refs.compare(committed, new, TOL)
        exact = sum(1 for k in committed if k in new and np.array_equal(committed[k], new[k]))
        if problems:
            bad += 1
            out.write(f"FAIL {name}: " + "; ".join(problems) + "\n")
        else:
            out.write(f"ok   {name}: {len(committed)} arrays, {exact} bit-exact ({facts['kind']}, "
                      f"{facts['layout']})\n")
    return bad


def check_missing_onnxruntime(out=sys.stdout):
    """make_refs.py under a Python where `import onnxruntime` fails: exit 2 and say so."""
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "onnxruntime.py"), "w") as f:
            f.write("raise ImportError('No module named onnxruntime (test stub)')\n")
        env = dict(os.environ, PYTHONPATH=tmp)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_refs.py"),
                            os.path.join(ROOT, "models", "simple_mlp"), "--out", os.path.join(tmp, "o.npz")],
                           env=env, capture_output=True, text=True)
    ok = p.returncode == 2 and "onnxruntime is not importable" in p.stderr and not p.stdout
    out.write(f"{'ok  ' if ok else 'FAIL'} make_refs.py without onnxruntime: exit {p.returncode}, "
              f"{p.stderr.strip()[:100]}\n")
    return 0 if ok else 1


def main():
    dirs = sys.argv[1:] or model_dirs()
    bad = check_refs(dirs) + check_missing_onnxruntime()
    print(f"{len(dirs)} folders checked, {bad} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
