"""The zoo's int8 models: fp32 inference models quantized with onnxruntime.

Each folder `<model>_int8_qdq` / `<model>_int8_qop` (and `kws_cnn_uint8_qop`)
is the fp32 folder's `network.onnx` through onnxruntime.quantization 1.19.2:
`quant_pre_process` (shape inference, onnxruntime's basic optimizations:
BatchNormalization folded into Conv, HardSwish inlined as HardSigmoid and
Mul), then `quantize_static` (MinMax
calibration, per-channel weights) calibrated on the fp32 folder's input plus
seeded random inputs of its shape. `inputs.npz` is the fp32 folder's,
`outputs.npz` comes from tools/zoo/refs.py (onnxruntime, CPU, on the graph
with its QDQ patterns fused into integer operators by tools/zoo/qdq.py). Nothing here uses deploygen.
"""

import contextlib
import io
import logging
import os
import tempfile
import zipfile
from collections import Counter, OrderedDict

import numpy as np
import onnx
from onnx import helper, numpy_helper

from . import refs, train
from .npz import npz_bytes
from .ort import onnxruntime  # noqa: F401  (onnxruntime.training without torch, logger quiet)

from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static  # noqa: E402
from onnxruntime.quantization.shape_inference import quant_pre_process  # noqa: E402

CALIB_RANDOM = 15          # seeded random inputs besides the folder's own
CALIB_SEED = 4800
MAX_FP32_DIFF = 0.1        # a quantized output this far from the fp32 one means a broken quantization

# (folder, fp32 folder, format, activations, weights)
MODELS = [
    ("kws_cnn_int8_qdq", "kws_cnn", "qdq", "int8", "int8"),
    ("kws_cnn_int8_qop", "kws_cnn", "qop", "int8", "int8"),
    ("kws_cnn_uint8_qop", "kws_cnn", "qop", "uint8", "int8"),
    ("mobilenet_v3_block_int8_qdq", "mobilenet_v3_block", "qdq", "int8", "int8"),
    ("mobilenet_v3_block_int8_qop", "mobilenet_v3_block", "qop", "int8", "int8"),
    ("tiny_transformer_int8_qdq", "tiny_transformer", "qdq", "int8", "int8"),
    ("tiny_transformer_int8_qop", "tiny_transformer", "qop", "int8", "int8"),
]
FORMAT = {"qdq": QuantFormat.QDQ, "qop": QuantFormat.QOperator}
FORMAT_NAME = {"qdq": "QDQ", "qop": "QOperator"}
QTYPE = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8}

# op -> positions of its (scale, zero point) input pairs; the second tuple
# says which pair is the weight's and along which axis of the weight a 1-D
# scale runs (QGemm: the axis of B that is N, which depends on transB)
SCALE_INPUTS = {
    "QuantizeLinear": [(1, 2)],
    "DequantizeLinear": [(1, 2)],
    "QLinearConv": [(1, 2), (4, 5), (6, 7)],
    "QLinearMatMul": [(1, 2), (4, 5), (6, 7)],
    "QGemm": [(1, 2), (4, 5), (7, 8)],
    "QLinearAdd": [(1, 2), (4, 5), (6, 7)],
    "QLinearMul": [(1, 2), (4, 5), (6, 7)],
    "QLinearGlobalAveragePool": [(1, 2), (3, 4)],
    "QLinearAveragePool": [(1, 2), (3, 4)],
    "QLinearSoftmax": [(1, 2), (3, 4)],
    "QLinearSigmoid": [(1, 2), (3, 4)],
    "QLinearLeakyRelu": [(1, 2), (3, 4)],
}


class _Reader(CalibrationDataReader):
    def __init__(self, name, samples):
        self.it = iter([{name: x} for x in samples])

    def get_next(self):
        return next(self.it, None)


def calibration_samples(x0):
    """The folder's input, then CALIB_RANDOM standard-normal inputs of its shape (the zoo's data distribution)."""
    rng = np.random.default_rng(CALIB_SEED)
    return [x0] + [rng.standard_normal(x0.shape).astype(np.float32) for _ in range(CALIB_RANDOM)]


def _drop_unused_domains(model):
    """onnxruntime's optimizer writes every domain it knows into opset_import;
    keep the default one and those a node uses."""
    used = {n.domain for n in model.graph.node} | {""}
    keep = [o for o in model.opset_import if o.domain in used or o.domain == "ai.onnx"]
    del model.opset_import[:]
    model.opset_import.extend(keep)


@contextlib.contextmanager
def _quiet():
    """quantize_static logs advice (pre-processing, QDQ on x64) through the root logger."""
    level = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)
    try:
        yield
    finally:
        logging.getLogger().setLevel(level)


def quantize(fp32_path, fmt, act, weight, samples, input_name, work):
    pre = os.path.join(work, "pre.onnx")
    with _quiet():
        quant_pre_process(fp32_path, pre)
        m = onnx.load(pre)
        _drop_unused_domains(m)
        onnx.save(m, pre)
        out = os.path.join(work, "q.onnx")
        # uint8 activations with int8 weights: 7-bit weights (reduce_range), as
        # onnxruntime advises for x86 without VNNI, whose u8 x s8 kernels sum
        # product pairs in int16 (8-bit weights saturate it: the reference
        # would not be the model's arithmetic).
        quantize_static(pre, out, _Reader(input_name, samples), quant_format=FORMAT[fmt], per_channel=True,
                        activation_type=QTYPE[act], weight_type=QTYPE[weight],
                        reduce_range=(act, weight) == ("uint8", "int8"))
    return onnx.load(out), m


def op_changes(before, after):
    """How pre-processing changed the operator counts, e.g. `BatchNormalization -2`."""
    a = Counter(n.op_type for n in before.graph.node)
    b = Counter(n.op_type for n in after.graph.node)
    return ", ".join(f"{op} {b[op] - a[op]:+d}" for op in sorted(set(a) | set(b)) if a[op] != b[op]) or "none"


def _inits(model):
    return {i.name: i for i in model.graph.initializer}


def inventory(model):
    """What the importer meets: (op, domain, count), zero-point dtypes and scale shapes."""
    ops = Counter((n.op_type, n.domain or "ai.onnx") for n in model.graph.node)
    inits = _inits(model)
    qdq_zp, scales = Counter(), []
    for n in model.graph.node:
        pairs = SCALE_INPUTS.get(n.op_type)
        if pairs is None:
            continue
        for k, (si, zi) in enumerate(pairs):
            s = inits.get(n.input[si]) if si < len(n.input) else None
            z = inits.get(n.input[zi]) if zi < len(n.input) and n.input[zi] else None
            zdt = helper.tensor_dtype_to_np_dtype(z.data_type).name if z is not None else "none (default uint8)"
            if n.op_type in ("QuantizeLinear", "DequantizeLinear"):
                qdq_zp[(n.op_type, zdt)] += 1
            if s is None:
                scales.append((n.op_type, n.input[si], "computed", None, zdt))
            elif len(s.dims) == 0 or (len(s.dims) == 1 and s.dims[0] == 1):
                scales.append((n.op_type, n.input[si], "per-tensor", None, zdt))
            else:
                scales.append((n.op_type, n.input[si], "per-axis", _axis(n, k, inits), zdt))
    return OrderedDict(
        ops=[[op, dom, c] for (op, dom), c in sorted(ops.items(), key=lambda t: (t[0][1] != "ai.onnx", t[0]))],
        qdq_zero_points=[[op, dt, c] for (op, dt), c in sorted(qdq_zp.items())],
        per_axis_scales=sorted({(op, ax, dt) for op, _, kind, ax, dt in scales if kind == "per-axis"}),
        per_tensor_scales=sum(1 for s in scales if s[2] == "per-tensor"),
        zero_point_dtypes=sorted({s[4] for s in scales}),
        relu_left=ops.get(("Relu", "ai.onnx"), 0),
        microsoft_ops=sorted({op for (op, dom) in ops if dom == "com.microsoft"}),
    )


def _axis(node, pair, inits):
    """The axis of the quantized tensor a 1-D scale runs along."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
        return int(attrs.get("axis", 1))
    if node.op_type == "QLinearConv" and pair == 1:
        return 0                                   # w [M, C/group, kH, kW]: per output channel
    if node.op_type == "QLinearMatMul" and pair == 1:
        return -1                                  # b [K, N]: per column
    if node.op_type == "QGemm" and pair == 1:
        return 0 if attrs.get("transB", 0) else 1  # B's N axis
    raise ValueError(f"{node.op_type} input pair {pair}: a 1-D scale where the op has none")


def _fp32_folder(models_root, src):
    with open(os.path.join(models_root, src, "inputs.npz"), "rb") as f:
        raw = f.read()
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        compressed = any(i.compress_type != zipfile.ZIP_STORED for i in z.infolist())
    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        ins = OrderedDict((k, z[k]) for k in z.files)
    with np.load(os.path.join(models_root, src, "outputs.npz"), allow_pickle=False) as z:
        outs = OrderedDict((k, z[k]) for k in z.files)
    return raw, ins, outs, compressed


def build(models_root, name, src, fmt, act, weight, out_dir):
    """Write out_dir (network.onnx, inputs.npz, outputs.npz); return the manifest facts."""
    fp32_path = os.path.join(models_root, src, "network.onnx")
    fp32 = onnx.load(fp32_path)
    in_raw, ins, fp32_outs, compressed = _fp32_folder(models_root, src)
    init = {i.name for i in fp32.graph.initializer}
    slots = [i.name for i in fp32.graph.input if i.name not in init]
    assert slots == ["input"] and list(ins) == ["arr_0000"], (src, slots, list(ins))
    with tempfile.TemporaryDirectory(prefix="zoo.quant.") as work:
        q, pre = quantize(fp32_path, fmt, act, weight, calibration_samples(ins["arr_0000"]), "input", work)
    assert [o.name for o in q.graph.output] == [o.name for o in fp32.graph.output], name
    data = q.SerializeToString()
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "network.onnx"), "wb") as f:
        f.write(data)
    with open(os.path.join(out_dir, "inputs.npz"), "wb") as f:
        f.write(in_raw)                            # the fp32 folder's, byte for byte
    outs, facts = refs.compute(out_dir)            # tools/make_refs.py's recipe
    out_raw = npz_bytes(outs, compressed)
    with open(os.path.join(out_dir, "outputs.npz"), "wb") as f:
        f.write(out_raw)
    diff = max(float(np.max(np.abs(outs[k].astype(np.float64) - fp32_outs[k]))) for k in fp32_outs)
    if not diff < MAX_FP32_DIFF:
        raise AssertionError(f"{name}: quantized output {diff:.3g} from the fp32 one")
    inv = inventory(q)
    if inv["relu_left"]:
        raise AssertionError(f"{name}: {inv['relu_left']} Relu left in the graph; models/README.md says none")
    m = OrderedDict()
    m["kind"] = "inference"
    m["flavor"] = "inference"
    m["files"] = OrderedDict([("network.onnx", len(data)), ("inputs.npz", len(in_raw)),
                              ("outputs.npz", len(out_raw))])
    m["inputs_layout"] = "positional"
    m["compressed_npz"] = compressed
    m["data_inputs"] = ["input"]
    m["graph_inputs"] = [i.name for i in q.graph.input]
    m["roles"] = OrderedDict(inputs=OrderedDict(input="data"),
                             outputs=OrderedDict((o.name, "output") for o in q.graph.output))
    m["weight_bytes"] = int(sum(numpy_helper.to_array(i).nbytes for i in q.graph.initializer))
    m["outputs"] = OrderedDict((k, list(v.shape)) for k, v in outs.items())
    m["ops"] = sorted({op if dom == "ai.onnx" else f"{dom}:{op}" for op, dom, _ in inv["ops"]})
    m["opset"] = OrderedDict((o.domain or "ai.onnx", o.version) for o in q.opset_import)
    m["ir_version"] = q.ir_version
    m["checker_relabelled_ops"] = train.check_model(q)
    m["quantized"] = OrderedDict(
        source=src, format=FORMAT_NAME[fmt], activations=act, weights=weight, per_channel=True,
        calibration=f"MinMax on {1 + CALIB_RANDOM} inputs: inputs.npz, then {CALIB_RANDOM} standard-normal "
                    f"(numpy default_rng({CALIB_SEED}))",
        pre_process=op_changes(fp32, pre),
        op_counts=inv["ops"], qdq_zero_points=inv["qdq_zero_points"],
        zero_point_dtypes=inv["zero_point_dtypes"], per_tensor_scales=inv["per_tensor_scales"],
        per_axis_scales=[list(t) for t in inv["per_axis_scales"]], relu_nodes=inv["relu_left"],
        microsoft_ops=inv["microsoft_ops"], fp32_max_abs_diff=diff)
    m["references"] = ("onnxruntime 1.19.2, CPU, one thread, QDQ patterns fused into integer operators (tools/zoo/qdq.py) "
                       "(tools/make_refs.py); inputs.npz is " + src + "'s")
    m["cross_checks_max_abs_diff"] = OrderedDict()
    assert facts["kind"] == "inference", facts
    return m


def build_all(models_root, out_root=None):
    """Every quantized folder under out_root/models (default: models_root); name -> manifest facts."""
    out_root = out_root or models_root
    facts = OrderedDict()
    for name, src, fmt, act, weight in MODELS:
        facts[name] = build(models_root, name, src, fmt, act, weight, os.path.join(out_root, name))
    return facts


HEADING = "## Quantized models (int8)\n"

INTRO = """`tools/make_quant_models.py` (also run by `tools/make_models.py`) quantizes
the fp32 inference models `kws_cnn`, `mobilenet_v3_block` and
`tiny_transformer` with onnxruntime 1.19.2's `onnxruntime.quantization`:
`quant_pre_process` first (shape inference and onnxruntime's basic graph
optimizations: BatchNormalization is folded into Conv, HardSwish, an ONNX
function, is inlined as HardSigmoid and Mul), then `quantize_static` with
MinMax calibration on the folder's own input and 15 seeded standard-normal
inputs of its shape, per-channel weights, `QuantType.QInt8` weights and
activations, in both formats: `<model>_int8_qdq` (`QuantFormat.QDQ`:
float operators between QuantizeLinear/DequantizeLinear pairs, weights and
int32 biases as initializers behind a DequantizeLinear) and
`<model>_int8_qop` (`QuantFormat.QOperator`: QLinearConv, QLinearMatMul
and the `com.microsoft` QGemm, QLinearAdd, QLinearMul,
QLinearGlobalAveragePool, QLinearSoftmax; a QuantizeLinear after the graph
input, a DequantizeLinear before each output and around the operators left
in float). `kws_cnn_uint8_qop` has uint8 activations (`QuantType.QUInt8`)
and int8 weights. `inputs.npz` is the fp32 folder's (same bytes), the graph
output stays float32 (after a DequantizeLinear), and `outputs.npz` is what
onnxruntime computes for the graph's integer form: its QDQ patterns
(DequantizeLinear -> Conv -> QuantizeLinear, ...) fused into QLinearConv and
the like by `tools/zoo/qdq.py`, the rules deploygen fuses by, written
independently; `tools/make_refs.py` does the same for every quantized graph. The models were not trained, so the last
column only bounds the quantization error on the folder's input (the
script requires < 0.1).

No Relu is left: the Relu after a Conv is removed by `quantize_static` and
the Conv's output is quantized with the Relu output's range, so its zero
point is the lowest value (-128 for int8, 0 for uint8) and the saturation
of the quantized result is the Relu. In the
QOperator graphs the operators without a quantized form stay float
(LayerNormalization, Gelu, Div, ReduceMean, HardSigmoid), between a
DequantizeLinear and a QuantizeLinear. Per-axis scales: QDQ weights per
output channel (Conv, Gemm with transB: axis 0; MatMul `[K, N]`: axis 1) and
the int32 biases (axis 0); QLinearConv's `w_scale` and `w_zero_point`
per output channel, QLinearMatMul's `b_scale` per column of B, QGemm's
`b_scale` per row of B (`transB = 1`, B stored `[N, K]`); the weight zero
points are 0. Every other scale and zero point is a scalar (or a
one-element 1-D tensor for the int32 biases of LayerNormalization).
`manifest.json` (`quantized`) has the full inventory per model.

"""


def readme_section(facts):
    """The README's "Quantized models" section: heading, prose, table."""
    return HEADING + "\n" + INTRO + _table(facts) + "\n\n"


def _table(facts):
    rows = ["| model | from | format | activations / weights | nodes (op × count; `ms:` = com.microsoft) | "
            "Q/DQ zero points | per-axis scales (op, axis, zero point) | pre-processing (ops) | "
            "max \\|q − fp32\\| | folder |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for name, m in facts.items():
        q = m["quantized"]
        nodes = ", ".join(f"{'ms:' if d == 'com.microsoft' else ''}{op} ×{c}" for op, d, c in q["op_counts"])
        zps = ", ".join(f"{op[:-6] if op.endswith('Linear') else op} {dt} ×{c}" for op, dt, c in q["qdq_zero_points"])
        axes = ", ".join(f"{op} {ax} ({dt})" for op, ax, dt in q["per_axis_scales"]) or "-"
        rows.append(f"| `{name}` | `{q['source']}` | {q['format']} | {q['activations']} / {q['weights']} | {nodes} | "
                    f"{zps or '-'} | {axes} | {q['pre_process']} | {q['fp32_max_abs_diff']:.1e} | "
                    f"{sum(m['files'].values()) / 1000:.1f} kB |")
    return "\n".join(rows)
