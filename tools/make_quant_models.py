#!/usr/bin/env python3
"""Generate the zoo's quantized models (models/*_int8_qdq, *_int8_qop, kws_cnn_uint8_qop).

The fp32 inference folders kws_cnn, mobilenet_v3_block and tiny_transformer
quantized with onnxruntime.quantization's quantize_static (tools/zoo/quant.py);
outputs.npz from onnxruntime on the graph's integer form (tools/zoo/qdq.py), inputs.npz
the fp32 folder's. Also writes their entries in models/manifest.json and
the "Quantized models (int8)" section of models/README.md, exactly as
tools/make_models.py (which runs the same code after the fp32 models) does.
Nothing here uses deploygen.

    python tools/make_quant_models.py            # rewrite the quantized folders, manifest entries, README section
    python tools/make_quant_models.py --check    # regenerate into a temp dir; compare byte for byte

Setup: the venv of tools/requirements.txt (models/README.md).
Output is byte-identical from run to run (fixed seed, fixed zip timestamps).
"""

import argparse
import filecmp
import json
import os
import shutil
import sys
import tempfile
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from zoo import quant  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = [m[0] for m in quant.MODELS]
NEXT_SECTION = "## File formats\n"


def splice_readme(text, section):
    """Replace (or insert before "File formats") the quantized-models section."""
    end = text.index(NEXT_SECTION)
    start = text.find(quant.HEADING)
    start = end if start < 0 else start
    return text[:start] + section + text[end:]


def splice_manifest(manifest, facts):
    """The manifest without old quantized entries, the new ones last (where make_models.py puts them)."""
    out = OrderedDict((k, v) for k, v in manifest.items() if k not in facts)
    out.update(facts)
    return out


def generate(models_root, out_models):
    """Write the folders, manifest.json and README.md into out_models, from models_root's fp32 folders."""
    for name in NAMES:
        if os.path.isdir(os.path.join(out_models, name)):
            shutil.rmtree(os.path.join(out_models, name))
    facts = quant.build_all(models_root, out_models)
    for name, f in facts.items():
        print(f"models/{name}: {sum(f['files'].values())} bytes "
              f"({', '.join(f'{k} {v}' for k, v in f['files'].items())}), "
              f"max |q - fp32| {f['quantized']['fp32_max_abs_diff']:.1e}")
    with open(os.path.join(models_root, "manifest.json")) as f:
        manifest = json.load(f, object_pairs_hook=OrderedDict)
    with open(os.path.join(out_models, "manifest.json"), "w") as f:
        json.dump(splice_manifest(manifest, facts), f, indent=1, sort_keys=False)
        f.write("\n")
    with open(os.path.join(models_root, "README.md")) as f:
        text = f.read()
    with open(os.path.join(out_models, "README.md"), "w") as f:
        f.write(splice_readme(text, quant.readme_section(facts)))


def written(models_dir):
    files = ["manifest.json", "README.md"]
    for name in NAMES:
        d = os.path.join(models_dir, name)
        if os.path.isdir(d):
            files += [os.path.join(name, n) for n in sorted(os.listdir(d))]
    return set(files)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary directory and compare with the committed files")
    ap.add_argument("--root", default=ROOT, help="repository root (default: this checkout)")
    args = ap.parse_args()
    models = os.path.join(args.root, "models")
    if not args.check:
        generate(models, models)
        return 0
    with tempfile.TemporaryDirectory() as work:
        generate(models, work)
        a, b = written(work), written(models)
        bad = sorted(a ^ b) + sorted(p for p in a & b if not filecmp.cmp(os.path.join(work, p),
                                                                          os.path.join(models, p), shallow=False))
        for p in bad:
            print(f"DIFFERS: models/{p}")
        print(f"{len(a)} files regenerated, {len(bad)} differ")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
