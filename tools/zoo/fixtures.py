"""Bad-input fixtures (tests/fixtures/): small, self-contained model folders
that later checks must reject or triage. Each is derived from a tiny model
whose good version is committed next to them (tiny_classifier)."""

from collections import OrderedDict

from .build import _npz, build_training
from .builder import Builder
from .models import Spec
from .npz import read_npz


def make_tiny_classifier(layout="positional"):
    b = Builder("tiny_classifier", seed=1101)
    x = b.input("input", [2, 16])
    h = b.relu(b.gemm(x, 16, 8, "fc1"), "fc1")
    y = b.gemm(h, 8, 4, "fc2", relu_init=False)
    b.output(y, [2, 4])
    return Spec("tiny_classifier", b.model(), b.trainable, b.frozen, "train", "good baseline for the fixtures",
                data_shape=(2, 16), num_classes=4, layout=layout, lr=0.05, seed=1101)


def make_bn_single_value():
    """Batch 1, GlobalAveragePool -> BatchNormInternal sees [1, 8, 1, 1]."""
    b = Builder("bn_single_value", seed=1202)
    x = b.input("input", [1, 3, 8, 8])
    h = b.relu(b.conv(x, 3, 8, 3, "conv"), "conv")
    h = b.node("GlobalAveragePool", [h], base="gap.out")              # [1, 8, 1, 1]
    h = b.relu(b.bn(h, 8, "bn"), "bn")
    h = b.node("Flatten", [h], base="flatten.out", axis=1)
    y = b.gemm(h, 8, 4, "fc", relu_init=False)
    b.output(y, [1, 4])
    return Spec("bn_single_value", b.model(), b.trainable, b.frozen, "train",
                "BatchNorm in training mode on a [1, 8, 1, 1] input", data_shape=(1, 3, 8, 8), num_classes=4,
                lr=0.05, seed=1202)


def build_fixtures(work):
    """name -> (files, description)."""
    out = OrderedDict()

    good, facts, _ = build_training(make_tiny_classifier(), work)
    out["tiny_classifier"] = (good, "nothing: the good baseline the others are made from (Gemm/Relu, 16 -> 8 -> "
                                    "4 classes, batch 2, 4 mini-batches, positional inputs.npz, SGDOptimizerV2)")

    # missing labels: named layout, every `labels` key dropped; the references in
    # outputs.npz were computed with labels = 1 for every sample, i.e. with the
    # synthetic targets a triage fix would add (one label per sample in [1, classes))
    named, _, _ = build_training(make_tiny_classifier(layout="named"), work, label_value=1)
    ins = read_npz(named["inputs.npz"])
    dropped = [k for k in ins if k == "labels" or k.endswith("_labels")]
    ins = OrderedDict((k, v) for k, v in ins.items() if k not in dropped)
    files = OrderedDict(named)
    files["inputs.npz"] = _npz(ins, False)
    out["missing_labels"] = (files, f"named inputs.npz without {dropped}; the graph input `labels` has no data. "
                                    "outputs.npz holds references for labels = 1 everywhere")

    # positional slots swapped: arr_0002 (fc1.weight [8, 16]) <-> arr_0003 (fc1.bias [8])
    ins = read_npz(good["inputs.npz"])
    assert facts["graph_inputs"][2:4] == ["fc1.weight", "fc1.bias"], facts["graph_inputs"]
    assert ins["arr_0002"].shape != ins["arr_0003"].shape
    swapped = OrderedDict()
    for k, v in ins.items():
        swapped[k] = ins["arr_0003"] if k == "arr_0002" else ins["arr_0002"] if k == "arr_0003" else v
    files = OrderedDict(good)
    files["inputs.npz"] = _npz(swapped, False)
    out["swapped_slots"] = (files, "positional inputs.npz with arr_0002 (fc1.weight, f32[8,16]) and arr_0003 "
                                   "(fc1.bias, f32[8]) swapped; everything else as tiny_classifier")

    # truncated network.onnx: the first half of tiny_classifier's
    files = OrderedDict(good)
    files["network.onnx"] = good["network.onnx"][: len(good["network.onnx"]) // 2]
    out["truncated_onnx"] = (files, f"network.onnx cut to its first {len(files['network.onnx'])} of "
                                    f"{len(good['network.onnx'])} bytes; other files as tiny_classifier")

    bn, bn_facts, _ = build_training(make_bn_single_value(), work)
    out["bn_single_value"] = (bn, "training graph (artifacts flavor), batch 1: GlobalAveragePool -> "
                                  "BatchNormInternal(training_mode=1) sees f32[1, 8, 1, 1]. onnxruntime runs it "
                                  "(batch variance 0, so the BN output is its bias); PyTorch refuses it with "
                                  "`Expected more than 1 value per channel when training`. Repeating the batch "
                                  "to 2 would fix it (the 1x1 comes from a global pool). outputs.npz: ORT's values")
    return out
