#!/usr/bin/env python3
"""Generate deploygen's model zoo (models/) and bad-input fixtures (tests/fixtures/).

Every model is written from seeded numpy weights with onnx.helper; training
graphs and optimizer graphs come from onnxruntime-training's
generate_artifacts, and every reference (losses, updated parameters,
inference outputs) from onnxruntime, cross-checked a second way (numpy
forward/backward, a replay of the committed graph on a plain
InferenceSession). The *_derived* folders (inference graph + train.toml)
come from tools/zoo/derived.py with tools/make_train_refs.py's references;
models/digits_finetune from tools/make_finetune.py, the *_int8_* / *_uint8_*
folders from tools/zoo/quant.py (tools/make_quant_models.py). Nothing here
uses deploygen.

    python tools/make_models.py            # rewrite models/ and tests/fixtures/
    python tools/make_models.py --check    # regenerate into a temp dir; compare byte for byte
    python tools/make_models.py --check-refs   # tools/make_refs.py reproduces every committed outputs.npz

Setup (see models/README.md): a Python 3.11 venv with tools/requirements.txt.
Output is byte-identical from run to run (fixed seeds, fixed zip timestamps).
"""

import argparse
import filecmp
import json
import os
import shutil
import sys
import tempfile
from collections import OrderedDict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from zoo import build, quant, readme  # noqa: E402
from zoo.fixtures import build_fixtures  # noqa: E402
from zoo.models import LATER, ZOO  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_FOLDER_BYTES = 2 * 1000 * 1000


def write_folder(path, files):
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)
    for name, data in files.items():
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)


def build_models(makes, root, work, models):
    for make in makes:
        spec = make()
        if spec.kind == "train":
            files, facts, _ = build.build_training(spec, work)
        else:
            files, facts, _ = build.build_inference(spec)
        size = sum(len(d) for d in files.values())
        assert size < MAX_FOLDER_BYTES, f"{spec.name}: {size} bytes"
        facts["folder_bytes"] = size
        facts["files"] = {k: len(v) for k, v in files.items()}
        if spec.name == "resnet8":
            # weights + live training tensors + a baked copy of the initial weights do not fit GAP9's L2
            assert facts["peak_live_bytes"] + facts["trainable_bytes"] > build.GAP9_L2, facts["peak_live_bytes"]
        write_folder(os.path.join(root, "models", spec.name), files)
        models[spec.name] = (spec, facts)
        print(f"models/{spec.name}: {size} bytes, checks "
              + ", ".join(f"{k[6:]}={v:.1e}" for k, v in facts.items() if k.startswith("check_")))


def build_derived(models_root):
    """The *_derived* folders (tools/zoo/derived.py) with their references
    (tools/make_train_refs.py); one README row each."""
    import make_train_refs
    from zoo import derived

    rows = []
    for d in derived.write_all(models_root):
        losses, rewritten = make_train_refs.write_refs(d)
        with open(os.path.join(d, "train.toml")) as f:
            rows.append((os.path.basename(d), f.read(), losses, rewritten))
    make_train_refs.write_splits(models_root)
    twin = derived.imported_twin(models_root)
    with np.load(os.path.join(twin, "outputs.npz")) as z, open(os.path.join(twin, "train.toml")) as f:
        rows.append((os.path.basename(twin), f.read(), z["loss"], None))
    # the fine-tuning run on real data (its own script; predict.npz, like
    # every folder's, from tools/make_predict_refs.py)
    import make_finetune

    d = make_finetune.write(os.path.join(models_root, make_finetune.NAME))
    with np.load(os.path.join(d, "outputs.npz")) as z, open(os.path.join(d, "train.toml")) as f:
        rows.append((make_finetune.NAME, f.read(), z["loss"], []))
    return rows


def generate(root, work):
    models = OrderedDict()
    # order matters for onnxruntime's generated names, see zoo.models.LATER
    build_models(ZOO, root, work, models)
    fixtures = build_fixtures(work)
    for name, (files, _) in fixtures.items():
        write_folder(os.path.join(root, "tests", "fixtures", name), files)
        print(f"tests/fixtures/{name}: {sum(len(d) for d in files.values())} bytes")
    build_models(LATER, root, work, models)
    derived_rows = build_derived(os.path.join(root, "models"))
    # int8 forms of the inference models just written (tools/make_quant_models.py)
    quant_facts = quant.build_all(os.path.join(root, "models"))
    for name, facts in quant_facts.items():
        print(f"models/{name}: {sum(facts['files'].values())} bytes")

    with open(os.path.join(root, "models", "README.md"), "w") as f:
        f.write(readme.models_readme(models, derived_rows, quant.readme_section(quant_facts)))
    with open(os.path.join(root, "models", "manifest.json"), "w") as f:
        json.dump(OrderedDict(list(readme.manifest(models).items()) + list(quant_facts.items())), f, indent=1,
                  sort_keys=False)
        f.write("\n")
    with open(os.path.join(root, "tests", "fixtures", "README.md"), "w") as f:
        f.write(readme.fixtures_readme(fixtures))


# written by tools/ort_step_time.py (timings, machine-dependent), not by this script
NOT_GENERATED = {os.path.join("models", "ort_step_times.json")}


def tree(root):
    out = set()
    for sub in ("models", os.path.join("tests", "fixtures")):
        for d, _, names in os.walk(os.path.join(root, sub)):
            for n in names:
                out.add(os.path.relpath(os.path.join(d, n), root))
    return out - NOT_GENERATED


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary directory and compare with the committed files")
    ap.add_argument("--check-refs", action="store_true",
                    help="recompute every committed outputs.npz with tools/make_refs.py's recipe and compare "
                         "(tools/test_make_refs.py)")
    ap.add_argument("--root", default=ROOT, help="repository root to write into (default: this checkout)")
    args = ap.parse_args()
    if args.check_refs:
        import test_make_refs
        dirs = test_make_refs.model_dirs(args.root)
        bad = test_make_refs.check_refs(dirs) + test_make_refs.check_missing_onnxruntime()
        print(f"{len(dirs)} folders checked, {bad} failures")
        return 1 if bad else 0
    with tempfile.TemporaryDirectory() as work:
        if not args.check:
            generate(args.root, os.path.join(work, "artifacts"))
            return 0
        fresh = os.path.join(work, "fresh")
        generate(fresh, os.path.join(work, "artifacts"))
        a, b = tree(fresh), tree(args.root)
        bad = sorted(a ^ b) + sorted(p for p in a & b if not filecmp.cmp(os.path.join(fresh, p),
                                                                          os.path.join(args.root, p), shallow=False))
        for p in bad:
            print(f"DIFFERS: {p}")
        print(f"{len(a)} files regenerated, {len(bad)} differ")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
