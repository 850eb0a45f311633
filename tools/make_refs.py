#!/usr/bin/env python3
"""Recompute a model folder's reference outputs with the zoo's pinned onnxruntime recipe.

    python tools/make_refs.py MODEL_DIR [--out FILE]

MODEL_DIR holds network.onnx, inputs.npz (named, positional `arr_NNNN` or
ordered `input_<k>` keys; `mb<i>_` keys and `meta_*` for the schedule) and,
for training artifacts, optimizer.onnx. Training folders are replayed over
the whole schedule (meta_n_batches passes over meta_data_size mini-batches,
an optimizer step every meta_n_accum passes): outputs.npz gets the loss of
every pass (`loss`) and every parameter after the last step
(`<param>_updated`, frozen BatchNorm statistics included); inference folders
get one key per graph output. Ordered folders get `output_<k>` keys. The
file is written like the zoo's (fixed zip timestamps, stored members, or
deflated when the folder's outputs.npz is). Without --out the result goes to
MODEL_DIR/outputs.npz.

How the replay works, and how graphs onnxruntime 1.19 cannot run (legacy
attribute forms, RMSNormalization, the default-domain RMSNorm) are handled:
tools/zoo/refs.py, tools/zoo/compat.py. Needs the venv of
tools/requirements.txt (onnxruntime-training-cpu 1.19.2, onnx 1.17).
"""

import argparse
import os
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SETUP = ("install the pinned tools first: python3.11 -m venv ~/.venvs/deploygen-tools && "
         "~/.venvs/deploygen-tools/bin/pip install -r tools/requirements.txt (see models/README.md)")


def require_onnxruntime():
    """Exit 2 with a clear message unless onnxruntime (with its training package) imports."""
    try:
        import onnxruntime  # noqa: F401
        import onnx  # noqa: F401
        from zoo import ort  # noqa: F401  (onnxruntime.training without torch)
    except ImportError as e:
        sys.stderr.write(f"make_refs.py: onnxruntime is not importable ({e}); {SETUP}\n")
        sys.exit(2)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--out", help="where to write the .npz (default: MODEL_DIR/outputs.npz)")
    ap.add_argument("--intermediates", metavar="FILE",
                    help="write every float value of the first pass (node outputs by tensor name) to FILE "
                         "instead (deploygen test --bisect)")
    args = ap.parse_args(argv)
    require_onnxruntime()
    from zoo import refs
    from zoo.npz import npz_bytes

    if not os.path.isfile(os.path.join(args.model_dir, "network.onnx")):
        sys.stderr.write(f"make_refs.py: {args.model_dir}/network.onnx does not exist\n")
        return 1
    if args.intermediates:
        try:
            values = refs.intermediates(args.model_dir)
        except Exception as e:  # noqa: BLE001  (as below: the reason, not a traceback)
            sys.stderr.write(f"make_refs.py: {args.model_dir}: {type(e).__name__}: {str(e).splitlines()[0]}\n")
            return 1
        with open(args.intermediates, "wb") as f:
            f.write(npz_bytes(values, False))
        print(f"{args.intermediates}: {len(values)} intermediate values")
        return 0
    try:
        outs, facts = refs.compute(args.model_dir)
    except refs.RefError as e:
        sys.stderr.write(f"make_refs.py: {args.model_dir}: {e}\n")
        return 1
    except Exception as e:  # noqa: BLE001  (a corrupt file, a graph onnxruntime refuses)
        sys.stderr.write(f"make_refs.py: {args.model_dir}: {type(e).__name__}: {str(e).splitlines()[0]}\n")
        return 1
    compressed = False
    old = os.path.join(args.model_dir, "outputs.npz")
    if os.path.exists(old):
        with zipfile.ZipFile(old) as z:
            compressed = any(i.compress_type != zipfile.ZIP_STORED for i in z.infolist())
    out = args.out or old
    with open(out, "wb") as f:
        f.write(npz_bytes(outs, compressed))
    what = ", ".join(f"{k}={v}" for k, v in facts.items() if v not in ([], None))
    print(f"{out}: {len(outs)} arrays ({what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
