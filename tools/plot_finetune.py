#!/usr/bin/env python3
"""docs/finetune-loss.svg: the loss curve of models/digits_finetune's
fine-tuning, the device's (host emulation, through dg_model.h) over
onnxruntime-training's.

    DG_FINETUNE_CURVE=/tmp/device.json cargo test --locked --test it finetune::
    python tools/plot_finetune.py /tmp/device.json      # writes docs/finetune-loss.svg

The device's losses come from the test's JSON (tests/it/finetune.rs), the
onnxruntime ones from models/digits_finetune/finetune.npz
(tools/make_finetune.py). Plain SVG, numpy only; the y axis is
logarithmic (the loss falls from about 10 to about 0.01).
"""

import argparse
import json
import math
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W, H = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 60


def svg(device, ort, acc_device, acc_ort):
    steps = len(ort)
    lo, hi = -3, 1.5  # log10 range of the y axis
    px = lambda k: LEFT + (k - 1) / (steps - 1) * (W - LEFT - RIGHT)  # noqa: E731
    py = lambda v: TOP + (hi - math.log10(max(v, 10.0 ** lo))) / (hi - lo) * (H - TOP - BOTTOM)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">Fine-tuning on digits 5-9 '
           f'(models/digits_finetune): training loss per step, batch 8, SGD</text>']
    for e in range(lo, math.floor(hi) + 1):
        y = py(10.0 ** e)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{10.0 ** e:g}</text>')
    for k in [1] + list(range(50, steps + 1, 50)):
        x = px(k)
        out.append(f'<line x1="{x:.1f}" y1="{H - BOTTOM}" x2="{x:.1f}" y2="{H - BOTTOM + 4}" stroke="black"/>')
        out.append(f'<text x="{x:.1f}" y="{H - BOTTOM + 18}" text-anchor="middle">{k}</text>')
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 20}" text-anchor="middle">step</text>')
    out.append(f'<text x="18" y="{(TOP + H - BOTTOM) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 18 {(TOP + H - BOTTOM) / 2})">cross-entropy loss (log scale)</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" '
               'fill="none" stroke="black"/>')
    line = lambda v: " ".join(f"{px(k + 1):.1f},{py(x):.1f}" for k, x in enumerate(v))  # noqa: E731
    out.append(f'<polyline points="{line(ort)}" fill="none" stroke="#1f77b4" stroke-width="1.2"/>')
    # the device's loss at step 1 and every 10th step (a line would hide onnxruntime's under it)
    for k in [1] + list(range(10, steps + 1, 10)):
        r = 3.5 if k == 1 or k % 50 == 0 else 2.2
        out.append(f'<circle cx="{px(k):.1f}" cy="{py(device[k - 1]):.1f}" r="{r}" fill="none" stroke="#d62728" '
                   'stroke-width="1.3"/>')
    lx, ly = W - RIGHT - 350, TOP + 16
    out += [f'<rect x="{lx - 8}" y="{ly - 14}" width="350" height="46" fill="white" stroke="#999"/>',
            f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 24}" y2="{ly - 4}" stroke="#1f77b4" stroke-width="2.5"/>',
            f'<text x="{lx + 30}" y="{ly}">onnxruntime-training 1.19.2, held-out {acc_ort:.2f} %</text>',
            f'<circle cx="{lx + 12}" cy="{ly + 18}" r="3.5" fill="none" stroke="#d62728" stroke-width="1.3"/>',
            f'<text x="{lx + 30}" y="{ly + 22}">dg_model.h (host), every 10th step, held-out {acc_device:.2f} %</text>',
            "</svg>"]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("device", help="the JSON tests/it/finetune.rs writes (DG_FINETUNE_CURVE)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "finetune-loss.svg"))
    a = ap.parse_args()
    with open(a.device) as f:
        dev = json.load(f)
    with np.load(os.path.join(ROOT, "models", "digits_finetune", "finetune.npz")) as z:
        ort, acc = z["loss"].astype(float), float(z["accuracy"])
    assert len(dev["loss"]) == len(ort), (len(dev["loss"]), len(ort))
    with open(a.out, "w") as f:
        f.write(svg(dev["loss"], ort, dev["accuracy"], acc))
    print(f"{a.out}: {len(ort)} steps")


if __name__ == "__main__":
    main()
