"""The zoo: forward graphs and the training/test schedule of every model.

Each `make_*` returns a `Spec`. Training models give the *forward* graph
(logits or reconstruction as the only output); onnxruntime adds the loss,
the backward pass and the optimizer graph.
"""

from dataclasses import dataclass

import numpy as np

from .builder import Builder


@dataclass
class Spec:
    name: str
    model: object                      # onnx.ModelProto (forward / inference graph)
    trainable: list
    frozen: list
    kind: str                          # "train" | "infer"
    exercises: str
    data_shape: tuple = ()
    loss: str = "ce"                   # "ce" (SoftmaxCrossEntropyLoss) | "mse"
    num_classes: int = 0
    flavor: str = "artifacts"          # "artifacts" | "single_graph" | "inference"
    optimizer: str = "sgdv2"           # "sgdv2" (ORT SGDOptimizerV2) | "sgd_nodes" (one SGD per param)
    layout: str = "positional"         # "positional" | "named"
    data_size: int = 4                 # distinct mini-batches stored in inputs.npz
    n_batches: int = 4                 # forward passes in the schedule
    n_accum: int = 1                   # forward passes per optimizer step
    lr: float = 0.01
    compressed: bool = False           # np.savez_compressed-style members
    seed: int = 0
    # graph onnxruntime runs for the references when it cannot run `model` itself
    # (legacy attribute forms, ops newer than its opsets); same weights, same outputs
    ref_model: object = None
    ref_note: str = ""                 # how the references were made, if not by running `model`
    checker: str = "full"              # "full" | "lenient" (no strict shape inference) | "reference" (check ref_model)
    checker_note: str = ""


# --------------------------------------------------------------------------
# training models (artifacts flavor)
# --------------------------------------------------------------------------

def make_simple_mlp():
    b = Builder("simple_mlp", seed=101)
    x = b.input("input", [2, 64])
    h = b.relu(b.gemm(x, 64, 32, "fc1"), "fc1")
    h = b.relu(b.gemm(h, 32, 32, "fc2"), "fc2")
    y = b.gemm(h, 32, 10, "fc3", relu_init=False)
    b.output(y, [2, 10])
    return Spec("simple_mlp", b.model(), b.trainable, b.frozen, "train",
                "Gemm/Relu training step, named inputs.npz layout, numpy forward/backward cross-check",
                data_shape=(2, 64), num_classes=10, layout="named", lr=0.05, seed=101)


def make_autoencoder():
    b = Builder("autoencoder", seed=202)
    x = b.input("input", [2, 128])
    h = x
    dims = [128, 64, 16, 64]
    for i in range(len(dims) - 1):
        h = b.relu(b.gemm(h, dims[i], dims[i + 1], f"enc{i}" if i < 2 else f"dec{i - 2}"), f"l{i}")
    y = b.gemm(h, 64, 128, "dec_out", relu_init=False)
    b.output(y, [2, 128])
    return Spec("autoencoder", b.model(), b.trainable, b.frozen, "train",
                "MSE loss (ORT builds it from Sub/Pow/ReduceMean), float target input, "
                "per-parameter SGD optimizer graph (lr as attribute)",
                data_shape=(2, 128), loss="mse", optimizer="sgd_nodes", lr=0.05, seed=202)


def make_ds_cnn():
    """DS-CNN keyword spotting (MLPerf Tiny shape: 49x10 MFCC, 64 channels, 4 DS blocks, 12 classes)."""
    b = Builder("ds_cnn", seed=303)
    c = 64
    x = b.input("input", [1, 1, 49, 10])
    # 10x4 kernel, stride 2, "same" padding -> 25x5
    h = b.relu(b.bn(b.conv(x, 1, c, (10, 4), "conv1", stride=2, pads=[4, 1, 5, 1]), c, "bn1"), "bn1")
    for i in range(4):
        p = f"ds{i}"
        h = b.relu(b.bn(b.conv(h, c, c, 3, f"{p}.dw", group=c), c, f"{p}.dw_bn"), f"{p}.dw")
        h = b.relu(b.bn(b.conv(h, c, c, 1, f"{p}.pw"), c, f"{p}.pw_bn"), f"{p}.pw")
    h = b.node("AveragePool", [h], base="avgpool.out", kernel_shape=[25, 5], strides=[25, 5])
    h = b.node("Flatten", [h], base="flatten.out", axis=1)
    y = b.gemm(h, c, 12, "fc", relu_init=False)
    b.output(y, [1, 12])
    return Spec("ds_cnn", b.model(), b.trainable, b.frozen, "train",
                "depthwise (group=64) + pointwise Conv, BatchNormInternal, AveragePool; "
                "gradient accumulation (meta_n_accum = 2)",
                data_shape=(1, 1, 49, 10), num_classes=12, n_accum=2, lr=0.02, seed=303)


def make_resnet8():
    """ResNet-8 (MLPerf Tiny image classification: 32x32x3, 16/32/64 channels, 10 classes)."""
    b = Builder("resnet8", seed=404)
    x = b.input("input", [1, 3, 32, 32])
    h = b.relu(b.bn(b.conv(x, 3, 16, 3, "conv1"), 16, "bn1"), "bn1")
    cin = 16
    for s, cout in enumerate([16, 32, 64]):
        p = f"stack{s + 1}"
        stride = 1 if s == 0 else 2
        pads = [1, 1, 1, 1]
        y = b.relu(b.bn(b.conv(h, cin, cout, 3, f"{p}.conv1", stride=stride, pads=pads), cout, f"{p}.bn1"), f"{p}.bn1")
        y = b.bn(b.conv(y, cout, cout, 3, f"{p}.conv2"), cout, f"{p}.bn2")
        sc = h if s == 0 else b.conv(h, cin, cout, 1, f"{p}.shortcut", stride=2, pads=[0, 0, 0, 0], bias=True)
        h = b.relu(b.node("Add", [y, sc], base=f"{p}.add"), f"{p}.add")
        cin = cout
    h = b.node("AveragePool", [h], base="avgpool.out", kernel_shape=[8, 8], strides=[8, 8])
    h = b.node("Flatten", [h], base="flatten.out", axis=1)
    y = b.gemm(h, 64, 10, "fc", relu_init=False)
    b.output(y, [1, 10])
    return Spec("resnet8", b.model(), b.trainable, b.frozen, "train",
                "Conv (with and without bias), BatchNormInternal, residual Add, AveragePool; "
                "weights + live training tensors exceed GAP9's 1.5 MiB L2 (L3 paths)",
                data_shape=(1, 3, 32, 32), num_classes=10, lr=0.01, seed=404)


def make_mobilenet_v1():
    """MobileNetV1, width 0.25, 64x64 input, depth cut to 8 DS blocks, 2 classes (VWW-like)."""
    b = Builder("mobilenet_v1", seed=505)
    x = b.input("input", [1, 3, 64, 64])
    h = b.relu(b.bn(b.conv(x, 3, 8, 3, "conv1", stride=2), 8, "bn1"), "bn1")
    cin = 8
    blocks = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2), (128, 1), (128, 1)]
    for i, (cout, s) in enumerate(blocks):
        p = f"block{i}"
        h = b.relu(b.bn(b.conv(h, cin, cin, 3, f"{p}.dw", stride=s, group=cin), cin, f"{p}.dw_bn"), f"{p}.dw")
        h = b.relu(b.bn(b.conv(h, cin, cout, 1, f"{p}.pw"), cout, f"{p}.pw_bn"), f"{p}.pw")
        cin = cout
    h = b.node("GlobalAveragePool", [h], base="gap.out")
    h = b.node("Flatten", [h], base="flatten.out", axis=1)
    y = b.gemm(h, 128, 2, "fc", relu_init=False)
    b.output(y, [1, 2])
    return Spec("mobilenet_v1", b.model(), b.trainable, b.frozen, "train",
                "strided depthwise Conv, GlobalAveragePool, 2 classes; schedule cycles the data "
                "(meta_data_size 4 < meta_n_batches 6)",
                data_shape=(1, 3, 64, 64), num_classes=2, data_size=4, n_batches=6, lr=0.01, seed=505)


def _cct(b, img, classes, blocks=2, embed=32, heads=2, mlp=64):
    """Compact Convolutional Transformer: conv tokenizer, pre-LN blocks, sequence pooling."""
    x = b.input("input", [1, 3, img, img])
    h = b.maxpool(b.relu(b.conv(x, 3, 16, 3, "tok.conv1"), "tok.conv1"), 3, 2, [1, 1, 1, 1], "tok.pool1")
    h = b.maxpool(b.relu(b.conv(h, 16, embed, 3, "tok.conv2"), "tok.conv2"), 3, 2, [1, 1, 1, 1], "tok.pool2")
    t = (img // 4) ** 2
    h = b.reshape(h, [1, embed, t], "tok.flatten")
    h = b.transpose(h, [0, 2, 1], "tok.tokens")                          # [1, T, E]
    pos = b.param("pos_embedding", b.small((1, t, embed), 0.1))
    h = b.node("Add", [h, pos], base="pos.out")
    d = embed // heads
    scale = b.const("attn.scale", np.array(1.0 / np.sqrt(d), dtype=np.float32))
    for i in range(blocks):
        p = f"blk{i}"
        n = b.layernorm(h, embed, f"{p}.ln1")
        q = b.transpose(b.reshape(b.linear(n, embed, embed, f"{p}.q"), [1, t, heads, d], f"{p}.q_heads"), [0, 2, 1, 3], f"{p}.q_t")
        k = b.transpose(b.reshape(b.linear(n, embed, embed, f"{p}.k"), [1, t, heads, d], f"{p}.k_heads"), [0, 2, 3, 1], f"{p}.k_t")
        v = b.transpose(b.reshape(b.linear(n, embed, embed, f"{p}.v"), [1, t, heads, d], f"{p}.v_heads"), [0, 2, 1, 3], f"{p}.v_t")
        s = b.node("Mul", [b.node("MatMul", [q, k], base=f"{p}.qk"), scale], base=f"{p}.scores")
        a = b.node("Softmax", [s], base=f"{p}.attn", axis=-1)
        o = b.transpose(b.node("MatMul", [a, v], base=f"{p}.av"), [0, 2, 1, 3], f"{p}.av_t")
        o = b.linear(b.reshape(o, [1, t, embed], f"{p}.merge"), embed, embed, f"{p}.proj")
        h = b.node("Add", [h, o], base=f"{p}.res1")
        n = b.layernorm(h, embed, f"{p}.ln2")
        m = b.linear(b.gelu(b.linear(n, embed, mlp, f"{p}.fc1"), f"{p}.fc1"), mlp, embed, f"{p}.fc2")
        h = b.node("Add", [h, m], base=f"{p}.res2")
    h = b.layernorm(h, embed, "norm")
    w = b.linear(h, embed, 1, "seqpool")                                 # [1, T, 1]
    w = b.node("Softmax", [b.transpose(w, [0, 2, 1], "seqpool.t")], base="seqpool.attn", axis=-1)
    h = b.reshape(b.node("MatMul", [w, h], base="seqpool.out"), [1, embed], "seqpool.flat")
    y = b.gemm(h, embed, classes, "fc", relu_init=False)
    b.output(y, [1, classes])


def make_cct():
    b = Builder("cct", seed=606)
    _cct(b, 32, 10)
    return Spec("cct", b.model(), b.trainable, b.frozen, "train",
                "conv tokenizer with MaxPool(+Indices), Reshape/Transpose, LayerNormalization, "
                "MatMul attention, Softmax, com.microsoft Gelu, sequence pooling; compressed npz",
                data_shape=(1, 3, 32, 32), num_classes=10, lr=0.01, compressed=True, seed=606)


# --------------------------------------------------------------------------
# single-graph training step (forward + backward + inline SGD)
# --------------------------------------------------------------------------

def make_cnn_inline_sgd():
    b = Builder("cnn_inline_sgd", seed=707)
    x = b.input("input", [2, 1, 12, 12])
    h = b.maxpool(b.relu(b.conv(x, 1, 4, 3, "conv", bias=True), "conv"), 2, 2, [0, 0, 0, 0], "pool")
    h = b.node("Flatten", [h], base="flatten.out", axis=1)
    y = b.gemm(h, 144, 10, "fc", relu_init=False)
    b.output(y, [2, 10])
    return Spec("cnn_inline_sgd", b.model(), b.trainable, b.frozen, "train",
                "single-graph training step: weights as initializers, inline SGD(w, g){lr} -> w_updated, "
                "graph outputs = loss + updated weights",
                data_shape=(2, 1, 12, 12), num_classes=10, flavor="single_graph", optimizer="sgd_nodes",
                lr=0.01, seed=707)


# --------------------------------------------------------------------------
# inference models
# --------------------------------------------------------------------------

def make_kws_cnn():
    b = Builder("kws_cnn", seed=808, training=False)
    x = b.input("input", [1, 1, 49, 10])
    h = b.relu(b.bn(b.conv(x, 1, 16, 3, "conv1"), 16, "bn1"), "bn1")
    h = b.maxpool(h, 2, 2, [0, 0, 0, 0], "pool1")                        # [1,16,24,5]
    h = b.relu(b.bn(b.conv(h, 16, 32, 3, "conv2"), 32, "bn2"), "bn2")
    h = b.node("GlobalAveragePool", [h], base="gap.out")
    h = b.node("Flatten", [h], base="flatten.out", axis=1)
    h = b.gemm(h, 32, 12, "fc", relu_init=False)
    y = b.node("Softmax", [h], outs=["probs"], axis=-1)
    b.output(y, [1, 12])
    return Spec("kws_cnn", b.model(), [], [], "infer",
                "inference: Conv, BatchNormalization (inference form), MaxPool, GlobalAveragePool, Gemm, Softmax; "
                "compressed npz",
                data_shape=(1, 1, 49, 10), flavor="inference", data_size=1, n_batches=1, compressed=True, seed=808)


def make_tiny_transformer():
    b = Builder("tiny_transformer", seed=909, opset=20, ir_version=9, training=False)
    t, e, heads, d = 16, 32, 2, 16
    x = b.input("input", [1, t, e])
    n = b.layernorm(x, e, "ln1")
    q = b.transpose(b.reshape(b.linear(n, e, e, "q"), [1, t, heads, d], "q_heads"), [0, 2, 1, 3], "q_t")
    k = b.transpose(b.reshape(b.linear(n, e, e, "k"), [1, t, heads, d], "k_heads"), [0, 2, 3, 1], "k_t")
    v = b.transpose(b.reshape(b.linear(n, e, e, "v"), [1, t, heads, d], "v_heads"), [0, 2, 1, 3], "v_t")
    s = b.node("Div", [b.node("MatMul", [q, k], base="qk"), b.const("sqrt_d", np.array(np.sqrt(d), np.float32))], base="scores")
    a = b.node("Softmax", [s], base="attn", axis=-1)
    o = b.transpose(b.node("MatMul", [a, v], base="av"), [0, 2, 1, 3], "av_t")
    o = b.linear(b.reshape(o, [1, t, e], "merge"), e, e, "proj")
    h = b.node("Add", [x, o], base="res1")
    n = b.layernorm(h, e, "ln2")
    m = b.linear(b.gelu(b.linear(n, e, 64, "fc1"), "fc1"), 64, e, "fc2")
    h = b.node("Add", [h, m], base="res2")
    axes = b.const("pool.axes", np.array([1], dtype=np.int64))
    h = b.node("ReduceMean", [h, axes], base="pool.out", keepdims=0)
    y = b.gemm(h, e, 4, "head", relu_init=False, out="logits")
    b.output(y, [1, 4])
    return Spec("tiny_transformer", b.model(), [], [], "infer",
                "inference, opset 20: LayerNormalization (1 output), MatMul attention, Div, Softmax, "
                "ai.onnx Gelu, ReduceMean (axes input)",
                data_shape=(1, t, e), flavor="inference", data_size=1, n_batches=1, seed=909)


# --------------------------------------------------------------------------
# more operator families: MobileNetV3 block, RMSNorm, 1-D convolution, one
# graph of mixed operators
# --------------------------------------------------------------------------

def _mbv3(b, x, cin, decomposed):
    """MobileNetV3-style: stem Conv/BN/HardSwish, one inverted residual with
    squeeze-excite (GlobalAveragePool, 1x1 Convs, Relu, HardSigmoid, Mul),
    GlobalAveragePool head. `decomposed`: HardSwish/HardSigmoid written as Clip forms."""
    h = b.hard_swish(b.bn(b.conv(x, cin, 16, 3, "stem", stride=2), 16, "stem_bn"), "stem", decomposed)
    e = b.hard_swish(b.bn(b.conv(h, 16, 32, 1, "block.expand"), 32, "block.expand_bn"), "block.expand", decomposed)
    d = b.hard_swish(b.bn(b.conv(e, 32, 32, 3, "block.dw", group=32), 32, "block.dw_bn"), "block.dw", decomposed)
    s = b.node("GlobalAveragePool", [d], base="block.se.pool")
    s = b.relu(b.conv(s, 32, 8, 1, "block.se.fc1", pads=[0, 0, 0, 0], bias=True), "block.se.fc1")
    s = b.hard_sigmoid(b.conv(s, 8, 32, 1, "block.se.fc2", pads=[0, 0, 0, 0], bias=True), "block.se", decomposed)
    d = b.node("Mul", [d, s], base="block.se.out")
    p = b.bn(b.conv(d, 32, 16, 1, "block.project"), 16, "block.project_bn")
    h = b.node("Add", [h, p], base="block.res")
    h = b.node("GlobalAveragePool", [h], base="gap.out")
    return b.node("Flatten", [h], base="flatten.out", axis=1)


def make_mobilenet_v3_block():
    b = Builder("mobilenet_v3_block", seed=1301, training=False)
    x = b.input("input", [1, 3, 32, 32])
    y = b.gemm(_mbv3(b, x, 3, decomposed=False), 16, 10, "fc", relu_init=False, out="logits")
    b.output(y, [1, 10])
    return Spec("mobilenet_v3_block", b.model(), [], [], "infer",
                "inference: HardSwish, HardSigmoid (alpha 1/6), squeeze-excite (GlobalAveragePool, 1x1 Conv with "
                "bias, Relu, HardSigmoid, broadcast Mul), depthwise Conv, BatchNormalization, residual Add",
                data_shape=(1, 3, 32, 32), flavor="inference", data_size=1, n_batches=1, seed=1301)


def make_mobilenet_v3_block_train():
    b = Builder("mobilenet_v3_block_train", seed=1302)
    x = b.input("input", [2, 3, 16, 16])
    y = b.gemm(_mbv3(b, x, 3, decomposed=True), 16, 4, "fc", relu_init=False)
    b.output(y, [2, 4])
    return Spec("mobilenet_v3_block_train", b.model(), b.trainable, b.frozen, "train",
                "mobilenet_v3_block trained: onnxruntime-training has no HardSwish/HardSigmoid gradient, so they "
                "are written as x * Clip(x * (1/6) + 0.5, 0, 1); squeeze-excite Mul gradient, Clip gradient "
                "(GreaterOrEqual/LessOrEqual/And/Cast)",
                data_shape=(2, 3, 16, 16), num_classes=4, lr=0.01, seed=1302)


def _rms_transformer(b, form, t=8, e=16, heads=2, mlp=32):
    x = b.input("input", [1, t, e])
    d = e // heads
    h = x
    for i in range(2):
        p = f"blk{i}"
        n = b.rmsnorm(h, e, f"{p}.norm1", form)
        q = b.transpose(b.reshape(b.linear(n, e, e, f"{p}.q"), [1, t, heads, d], f"{p}.q_heads"), [0, 2, 1, 3], f"{p}.q_t")
        k = b.transpose(b.reshape(b.linear(n, e, e, f"{p}.k"), [1, t, heads, d], f"{p}.k_heads"), [0, 2, 3, 1], f"{p}.k_t")
        v = b.transpose(b.reshape(b.linear(n, e, e, f"{p}.v"), [1, t, heads, d], f"{p}.v_heads"), [0, 2, 1, 3], f"{p}.v_t")
        sc = b.const(f"{p}.scale", np.array(1.0 / np.sqrt(d), np.float32))
        a = b.node("Softmax", [b.node("Mul", [b.node("MatMul", [q, k], base=f"{p}.qk"), sc], base=f"{p}.scores")],
                   base=f"{p}.attn", axis=-1)
        o = b.transpose(b.node("MatMul", [a, v], base=f"{p}.av"), [0, 2, 1, 3], f"{p}.av_t")
        h = b.node("Add", [h, b.linear(b.reshape(o, [1, t, e], f"{p}.merge"), e, e, f"{p}.proj")], base=f"{p}.res1")
        n = b.rmsnorm(h, e, f"{p}.norm2", form)
        u = b.linear(n, e, mlp, f"{p}.fc1")
        u = b.node("Mul", [u, b.node("Sigmoid", [u], base=f"{p}.fc1.sig")], base=f"{p}.fc1.silu")   # SiLU
        h = b.node("Add", [h, b.linear(u, mlp, e, f"{p}.fc2")], base=f"{p}.res2")
    h = b.rmsnorm(h, e, "norm", form)
    axes = b.const("pool.axes", np.array([1], dtype=np.int64))
    h = b.node("ReduceMean", [h, axes], base="pool.out", keepdims=0)
    y = b.gemm(h, e, 4, "head", relu_init=False, out="logits")
    b.output(y, [1, 4])


def make_rmsnorm_transformer():
    b = Builder("rmsnorm_transformer", seed=1401, opset=23, ir_version=11, training=False)
    _rms_transformer(b, "RMSNormalization")
    r = Builder("rmsnorm_transformer", seed=1401, opset=20, ir_version=9, training=False)
    _rms_transformer(r, "decomposed")
    return Spec("rmsnorm_transformer", b.model(), [], [], "infer",
                "inference, ai.onnx opset 23 (IR 11): RMSNormalization (axis -1), MatMul attention, SiLU as "
                "x * Sigmoid(x), ReduceMean pooling",
                data_shape=(1, 8, 16), flavor="inference", data_size=1, n_batches=1, seed=1401, ref_model=r.model(),
                ref_note="onnxruntime 1.19 has no opset 23 (and onnx 1.17 no RMSNormalization): the references "
                         "are onnxruntime's outputs for the same graph with every RMSNormalization decomposed "
                         "(Mul, ReduceMean, Add, Sqrt, Div, Mul) at opset 20",
                checker="reference",
                checker_note="onnx 1.17 knows neither opset 23 nor IR 11; checked: the decomposed reference graph")


def make_rmsnorm_default_domain():
    b = Builder("rmsnorm_default_domain", seed=1402, opset=18, training=False)
    _rms_transformer(b, "RMSNorm")
    r = Builder("rmsnorm_default_domain", seed=1402, opset=18, training=False)
    _rms_transformer(r, "decomposed")
    return Spec("rmsnorm_default_domain", b.model(), [], [], "infer",
                "inference, opset 18: the default-domain single-op `RMSNorm(X, scale){axis, epsilon}` "
                "(no ONNX schema, as Deeploy-style exporters write it) in the rmsnorm_transformer graph",
                data_shape=(1, 8, 16), flavor="inference", data_size=1, n_batches=1, seed=1402, ref_model=r.model(),
                ref_note="onnxruntime cannot run the default-domain RMSNorm: the references are its outputs for "
                         "the same graph with every RMSNorm decomposed (Mul, ReduceMean, Add, Sqrt, Div, Mul)")


def _conv1d_ae(b, x, n):
    h = b.relu(b.bn(b.conv1d(x, 4, 8, 3, "enc1", stride=2), 8, "enc1_bn"), "enc1")        # [n, 8, 16]
    h = b.relu(b.bn(b.conv1d(h, 8, 16, 3, "enc2", stride=2), 16, "enc2_bn"), "enc2")      # [n, 16, 8]
    h = b.relu(b.bn(b.conv_transpose1d(h, 16, 8, 4, "dec1"), 8, "dec1_bn"), "dec1")       # [n, 8, 16]
    y = b.conv_transpose1d(h, 8, 4, 4, "dec2", bias=True)                                 # [n, 4, 32]
    b.output(y, [n, 4, 32])


def _shuffle1d(b, x, n, c, length, prefix):
    """Sub-pixel upsampling over L: [n, 2c, L] -> [n, c, 2L] (Reshape, Transpose, Reshape)."""
    h = b.reshape(x, [n, c, 2, length], f"{prefix}.split")
    h = b.transpose(h, [0, 1, 3, 2], f"{prefix}.interleave")
    return b.reshape(h, [n, c, 2 * length], f"{prefix}.merge")


def make_conv1d_autoencoder_train():
    b = Builder("conv1d_autoencoder_train", seed=1501)
    n = 2
    x = b.input("input", [n, 4, 32])
    h = b.relu(b.bn(b.conv1d(x, 4, 8, 3, "enc1", stride=2), 8, "enc1_bn"), "enc1")        # [n, 8, 16]
    h = b.relu(b.bn(b.conv1d(h, 8, 16, 3, "enc2", stride=2), 16, "enc2_bn"), "enc2")      # [n, 16, 8]
    h = _shuffle1d(b, b.conv1d(h, 16, 16, 3, "dec1"), n, 8, 8, "dec1.up")                 # [n, 8, 16]
    h = b.relu(b.bn(h, 8, "dec1_bn"), "dec1")
    y = _shuffle1d(b, b.conv1d(h, 8, 8, 3, "dec2", bias=True), n, 4, 16, "dec2.up")       # [n, 4, 32]
    b.output(y, [n, 4, 32])
    return Spec("conv1d_autoencoder_train", b.model(), b.trainable, b.frozen, "train",
                "training, MSE reconstruction: Conv 1-D (stride 2, with and without bias), BatchNormInternal on "
                "[N, C, L], sub-pixel upsampling (Conv 1-D, Reshape, Transpose). The decoder is not ConvTranspose: "
                "generate_artifacts emits com.microsoft:ConvTransposeGrad, which has no CPU kernel in "
                "onnxruntime 1.19 (NOT_IMPLEMENTED), so there is no reference for it",
                data_shape=(n, 4, 32), loss="mse", lr=0.01, seed=1501)


def make_conv1d_autoencoder():
    b = Builder("conv1d_autoencoder", seed=1502, training=False)
    _conv1d_ae(b, b.input("input", [1, 4, 32]), 1)
    return Spec("conv1d_autoencoder", b.model(), [], [], "infer",
                "inference: Conv 1-D, ConvTranspose 1-D, BatchNormalization (inference form) on [N, C, L]",
                data_shape=(1, 4, 32), flavor="inference", data_size=1, n_batches=1, seed=1502)


def make_ops_mixed():
    """One inference graph over many operators at once: Pad in every mode, Split,
    Group/InstanceNormalization, elementwise math, Floor/Ceil/Cast, Pow, Clip,
    max reductions, Gather, Concat, Where."""
    b = Builder("ops_mixed", seed=1601, opset=21, ir_version=10, training=False)
    from onnx import TensorProto
    x = b.input("input", [1, 4, 8, 8])
    h = b.conv(x, 4, 8, 3, "conv", bias=True)                                            # [1, 8, 8, 8]

    def pad(v, mode, pads, value=None, base=""):
        ins = [v, b.const(f"{base}.pads", np.array(pads, np.int64))]
        if value is not None:
            ins.append(b.const(f"{base}.value", np.array(value, np.float32)))
        return b.node("Pad", ins, base=base, mode=mode)

    r = pad(h, "reflect", [0, 0, 1, 1, 0, 0, 1, 1], base="pad_reflect")                 # [1, 8, 10, 10]
    e = pad(h, "edge", [0, 0, 2, 0, 0, 0, 0, 2], base="pad_edge")
    c = pad(h, "constant", [0, 0, 0, 2, 0, 0, 2, 0], 0.5, base="pad_constant")
    s = b.node("Add", [b.node("Add", [r, e], base="pads.sum"), c], base="pads.out")
    s1, s2 = b.node("Split", [s, b.const("split.sizes", np.array([4, 4], np.int64))], outs=["split.a", "split.b"],
                    axis=1)
    g = b.node("GroupNormalization", [s1, b.param("gn.weight", 1.0 + b.small((4,), 0.1)),
                                      b.param("gn.bias", b.small((4,), 0.1))], base="gn.out", num_groups=2,
               epsilon=1e-5)
    i = b.node("InstanceNormalization", [s2, b.param("in.weight", 1.0 + b.small((4,), 0.1)),
                                         b.param("in.bias", b.small((4,), 0.1))], base="in.out", epsilon=1e-5)
    t = b.node("Tanh", [g], base="tanh")
    sg = b.node("Sigmoid", [i], base="sigmoid")
    mx = b.node("Max", [t, sg], base="max")
    mn = b.node("Min", [t, sg], base="min")
    cond = b.const("where.cond", b.rng.random((1, 4, 1, 10)) < 0.5)
    w = b.node("Where", [cond, mx, mn], base="where")
    u = b.node("Sqrt", [b.node("Abs", [w], base="abs")], base="sqrt")
    one = b.const("one", np.array(1.0, np.float32))
    v = b.node("Log", [b.node("Add", [b.node("Exp", [b.node("Neg", [u], base="neg")], base="exp"), one],
                              base="exp_p1")], base="log")                                # softplus(-u)
    z = b.node("Erf", [b.node("Mul", [v, b.const("erf.scale", np.array(3.0, np.float32))], base="erf.in")],
               base="erf")
    z4 = b.node("Mul", [z, b.const("q.scale", np.array(4.0, np.float32))], base="q.in")
    fc = b.node("Add", [b.node("Floor", [z4], base="floor"), b.node("Ceil", [z4], base="ceil")], base="floor_ceil")
    ints = b.node("Cast", [b.node("Mul", [w, b.const("cast.scale", np.array(8.0, np.float32))], base="cast.in")],
                  base="cast.int", to=TensorProto.INT32)
    back = b.node("Cast", [ints], base="cast.float", to=TensorProto.FLOAT)
    q = b.node("Add", [b.node("Mul", [fc, b.const("fc.scale", np.array(0.125, np.float32))], base="fc.scaled"),
                       b.node("Mul", [back, b.const("cast.inv", np.array(0.125, np.float32))], base="cast.scaled")],
               base="quant")
    q = b.node("Add", [q, b.node("Pow", [u, b.const("pow.exp", np.array(2.0, np.float32))], base="pow")],
               base="quant_pow")
    cl = b.node("Clip", [q, b.const("clip.min", np.array(1.0, np.float32)),
                         b.const("clip.max", np.array(2.2, np.float32))], base="clip")   # clips at both ends
    gm = b.node("GlobalMaxPool", [q], base="gmp")                                        # [1, 4, 1, 1]
    rm = b.node("ReduceMax", [b.node("Add", [v, z], base="vz"), b.const("rmax.axes", np.array([2, 3], np.int64))],
                base="rmax", keepdims=1)                                                 # [1, 4, 1, 1]
    gi = b.const("gather.idx", np.array([3, 0, 2], np.int64))
    ga = b.node("Gather", [gm, gi], base="gather.gmp", axis=1)                           # [1, 3, 1, 1]
    gb = b.node("Gather", [rm, gi], base="gather.rmax", axis=1)
    o = b.node("Concat", [ga, gb], base="concat", axis=1)                                # [1, 6, 1, 1]
    o = b.node("Flatten", [o], outs=["pooled"], axis=1)
    b.output(o, [1, 6])
    b.output(cl, [1, 4, 10, 10])
    return Spec("ops_mixed", b.model(), [], [], "infer",
                "inference, opset 21 (IR 10): Pad constant/reflect/edge (pads input), Split (split input), "
                "GroupNormalization (opset 21, per-channel scale), InstanceNormalization, Tanh, Sigmoid, Max, Min, "
                "Where (constant condition), Abs, Sqrt, Neg, Exp, Log, Erf, Floor, Ceil, Cast f32->i32->f32, Pow, "
                "Clip (min/max inputs), GlobalMaxPool, ReduceMax (axes input), Gather (constant indices), Concat; "
                "two outputs",
                data_shape=(1, 4, 8, 8), flavor="inference", data_size=1, n_batches=1, seed=1601)


def make_ops_mixed_train():
    """The operators of make_ops_mixed that onnxruntime-training can differentiate,
    in one training graph."""
    b = Builder("ops_mixed_train", seed=1602)
    c = lambda name, v, dt=np.float32: b.const(name, np.array(v, dt))                    # noqa: E731
    x = b.input("input", [2, 4, 6, 6])
    h = b.conv(x, 4, 4, 3, "conv", bias=True)                                            # [2, 4, 6, 6]
    p = b.node("Pad", [h, c("pad.pads", [0, 0, 1, 1, 0, 0, 1, 1], np.int64), c("pad.value", 0.1)],
               base="pad", mode="constant")                                              # [2, 4, 8, 8]
    s1, s2 = b.node("Split", [p, c("split.sizes", [2, 2], np.int64)], outs=["split.a", "split.b"], axis=1)
    t = b.node("Tanh", [s1], base="tanh")
    sg = b.node("Sigmoid", [s2], base="sigmoid")
    mx = b.node("Max", [t, sg], base="max")
    mn = b.node("Min", [t, sg], base="min")
    cat = b.node("Concat", [mx, mn], base="concat", axis=1)                              # [2, 4, 8, 8]
    g = b.node("Gather", [cat, c("gather.idx", [3, 0, 2, 1], np.int64)], base="gather", axis=1)
    w = b.node("Where", [b.const("where.cond", b.rng.random((1, 4, 1, 8)) < 0.5), g, b.node("Neg", [g], base="neg")],
               base="where")
    e = b.node("Erf", [b.node("Mul", [w, c("erf.scale", 2.0)], base="erf.in")], base="erf")
    sq = b.node("Sqrt", [b.node("Add", [b.node("Abs", [e], base="abs"), c("sqrt.eps", 0.1)], base="sqrt.in")],
                base="sqrt")
    lg = b.node("Log", [b.node("Add", [b.node("Exp", [b.node("Neg", [sq], base="neg_sq")], base="exp"),
                                       c("one", 1.0)], base="exp_p1")], base="log")      # softplus(-sqrt)
    q = b.node("Add", [lg, b.node("Pow", [w, c("pow.exp", 2.0)], base="pow")], base="sum")
    q = b.node("Clip", [q, c("clip.min", 0.35), c("clip.max", 0.9)], base="clip")
    h = b.node("Flatten", [b.node("GlobalAveragePool", [q], base="gap.out")], base="flatten.out", axis=1)
    y = b.gemm(h, 4, 4, "fc", relu_init=False)
    b.output(y, [2, 4])
    return Spec("ops_mixed_train", b.model(), b.trainable, b.frozen, "train",
                "training with the differentiable operators of ops_mixed: Pad (constant), Split, Tanh, Sigmoid, Max, Min, "
                "Concat, Gather, Where, Neg, Erf, Abs, Sqrt, Exp, Log, Pow, Clip. ORT turns the forward Concat into "
                "com.microsoft ConcatTraining (second output per_input_length) and emits SigmoidGrad, TanhGrad, "
                "GatherGrad, SplitTraining, Pad with negated pads, Sign, Equal, GreaterOrEqual/LessOrEqual/And, Cast",
                data_shape=(2, 4, 6, 6), num_classes=4, lr=0.02, seed=1602)


# --------------------------------------------------------------------------
# third-party conventions (each model written in one exporter's style)
# --------------------------------------------------------------------------

def make_conv_ordered_npz():
    b = Builder("conv_ordered_npz", seed=1701, training=False)
    x = b.input("input", [1, 1, 8, 8])
    h = b.relu(b.conv(x, 1, 4, 3, "conv", bias=True), "conv")
    f = b.node("Flatten", [b.node("GlobalAveragePool", [h], base="gap.out")], outs=["features"], axis=1)
    y = b.gemm(f, 4, 3, "fc", relu_init=False, out="logits")
    b.output(y, [1, 3])
    b.output(f, [1, 4])
    return Spec("conv_ordered_npz", b.model(), [], [], "infer",
                "ordered test data: inputs.npz `input_0`, outputs.npz `output_0` (logits), `output_1` (features) "
                "in graph order, no key names a graph tensor",
                data_shape=(1, 1, 8, 8), flavor="inference", layout="ordered", data_size=1, n_batches=1, seed=1701)


def make_conv_ordered_npz_train():
    b = Builder("conv_ordered_npz_train", seed=1702)
    x = b.input("input", [2, 1, 8, 8])
    h = b.maxpool(b.relu(b.conv(x, 1, 4, 3, "conv", bias=True), "conv"), 2, 2, [0, 0, 0, 0], "pool")
    h = b.node("Flatten", [h], base="flatten.out", axis=1)
    y = b.gemm(h, 64, 4, "fc", relu_init=False)
    b.output(y, [2, 4])
    return Spec("conv_ordered_npz_train", b.model(), b.trainable, b.frozen, "train",
                "ordered test data for a single-graph training step: `input_0` (input), `input_1` (labels), "
                "`mb<i>_input_<k>` per mini-batch; outputs.npz `output_0` = graph output 0 (the loss, one per "
                "pass), `output_<k>` = graph output k (`<p>_updated` after the last pass)",
                data_shape=(2, 1, 8, 8), num_classes=4, flavor="single_graph", optimizer="sgd_nodes",
                layout="ordered", lr=0.02, seed=1702)


def _legacy_attrs(b, legacy):
    x = b.input("input", [1, 2, 6, 6])
    h = b.conv(x, 2, 4, 3, "conv", bias=True)                                            # [1, 4, 6, 6]
    c = lambda name, v, dt=np.float32: b.const(name, np.array(v, dt))                    # noqa: E731
    if legacy:
        p = b.node("Pad", [h], base="pad", mode="constant", pads=[0, 0, 1, 1, 0, 0, 1, 1], value=0.25)
        p = b.node("Clip", [p], base="clip", min=-0.5, max=0.8)
        s1, s2 = b.node("Split", [p], outs=["split.a", "split.b"], axis=1, split=[1, 3])
        m = b.node("ReduceMean", [s1], base="rmean", axes=[2, 3], keepdims=1)            # [1, 1, 1, 1]
        r = b.node("ReduceMax", [s2], base="rmax", axes=[2], keepdims=0)                 # [1, 3, 8]
        r = b.node("ReduceSum", [r], base="rsum", axes=[2], keepdims=1)                  # [1, 3, 1]
        m = b.node("Squeeze", [m], base="squeeze_m", axes=[2, 3])                        # [1, 1]
        r = b.node("Squeeze", [r], base="squeeze_r", axes=[2])                           # [1, 3]
        y = b.node("Unsqueeze", [b.node("Add", [r, m], base="add")], outs=["out"], axes=[1])   # [1, 1, 3]
    else:
        i64 = np.int64
        p = b.node("Pad", [h, c("pad.pads", [0, 0, 1, 1, 0, 0, 1, 1], i64), c("pad.value", 0.25)], base="pad",
                   mode="constant")
        p = b.node("Clip", [p, c("clip.min", -0.5), c("clip.max", 0.8)], base="clip")
        s1, s2 = b.node("Split", [p, c("split.sizes", [1, 3], i64)], outs=["split.a", "split.b"], axis=1)
        m = b.node("ReduceMean", [s1, c("rmean.axes", [2, 3], i64)], base="rmean", keepdims=1)
        r = b.node("ReduceMax", [s2, c("rmax.axes", [2], i64)], base="rmax", keepdims=0)
        r = b.node("ReduceSum", [r, c("rsum.axes", [2], i64)], base="rsum", keepdims=1)
        m = b.node("Squeeze", [m, c("squeeze_m.axes", [2, 3], i64)], base="squeeze_m")
        r = b.node("Squeeze", [r, c("squeeze_r.axes", [2], i64)], base="squeeze_r")
        y = b.node("Unsqueeze", [b.node("Add", [r, m], base="add"), c("unsqueeze.axes", [1], i64)], outs=["out"])
    b.output(y, [1, 1, 3])


def make_conv_legacy_attrs():
    b = Builder("conv_legacy_attrs", seed=1801, opset=18, training=False)
    _legacy_attrs(b, legacy=True)
    r = Builder("conv_legacy_attrs", seed=1801, opset=18, training=False)
    _legacy_attrs(r, legacy=False)
    return Spec("conv_legacy_attrs", b.model(), [], [], "infer",
                "opset 18 file with opset-11 attribute forms: `pads`/`value` on Pad, `min`/`max` on Clip, "
                "`split` on Split, `axes` on ReduceMean, ReduceMax, ReduceSum, Squeeze, Unsqueeze",
                data_shape=(1, 2, 6, 6), flavor="inference", data_size=1, n_batches=1, seed=1801,
                ref_model=r.model(),
                ref_note="onnxruntime refuses the legacy attributes at opset 18 (INVALID_GRAPH: `Unrecognized "
                         "attribute: axes for operator ReduceMean`, `input size 1 not in range [min=2, max=4]` "
                         "for Pad): the references are its outputs for the same graph with the values as inputs "
                         "(the opset-18 forms); the numpy cross-check runs the committed legacy-form file",
                checker="reference",
                checker_note="onnx.checker rejects the legacy attributes at opset 18; checked: the input-form graph")


def make_conv_size1_dims():
    from onnx import helper, TensorProto
    b = Builder("conv_size1_dims", seed=1901, training=False)
    x = b.input("input", [1, 2, 6, 6])
    h = b.relu(b.conv(x, 2, 8, 3, "conv", bias=True), "conv")                           # [1, 8, 6, 6]
    g = b.node("GlobalAveragePool", [h], base="gap.out")                                 # [1, 8, 1, 1]
    f = b.reshape(g, [8], "features")                                                    # [8]
    score = b.node("ReduceMean", [h], outs=["score"], keepdims=0)                        # [] (all axes)
    y = b.gemm(b.reshape(g, [1, 8], "flat"), 8, 3, "fc", relu_init=False, out="logits")  # [1, 3]
    b.output(score, [1])
    b.output(f, [1, 8])
    b.output(y, [3])
    m = b.model()
    m.graph.value_info.append(helper.make_tensor_value_info(g, TensorProto.FLOAT, [1, 8]))
    m.graph.value_info.append(helper.make_tensor_value_info(h, TensorProto.FLOAT, [8, 6, 6]))
    return Spec("conv_size1_dims", m, [], [], "infer",
                "declared shapes that differ from the computed ones only by size-1 dims: outputs `score` declared "
                "[1] (scalar ReduceMean), `features.out` [1, 8] (Reshape gives [8]), `logits` [3] (Gemm gives [1, 3]); "
                "value_info `gap.out` [1, 8] (is [1, 8, 1, 1]), `conv.relu` [8, 6, 6] (is [1, 8, 6, 6]). "
                "outputs.npz holds the computed shapes",
                data_shape=(1, 2, 6, 6), flavor="inference", data_size=1, n_batches=1, seed=1901,
                checker="lenient",
                checker_note="onnx.checker without strict shape inference (strict mode rejects the declared shapes)")


def make_conv_misc_forms():
    from onnx import helper, TensorProto
    b = Builder("conv_misc_forms", seed=2001, training=False)
    x = b.input("input", [1, 2, 6, 6])
    h = b.relu(b.conv(x, 2, 4, 3, "conv", bias=True), "conv")
    f = b.node("Flatten", [b.node("GlobalAveragePool", [h], base="gap.out")], base="flat", axis=1)   # [1, 4]
    half = b.node("Constant", [], base="half", value=helper.make_tensor("half", TensorProto.FLOAT, [], [0.5]))
    f = b.node("Mul", [f, half], base="scaled")
    y = b.gemm(f, 4, 3, "fc", relu_init=False)
    labels = b.const("labels", np.array([2], np.int64))
    b.node("SoftmaxCrossEntropyLoss", [y, labels], outs=["loss", "log_prob"], reduction="mean")
    b.output("log_prob", [1, 3])
    b.output("input", [1, 2, 6, 6])
    b.output("fc.bias", [3])
    return Spec("conv_misc_forms", b.model(), [], [], "infer",
                "a `Constant` node (scalar 0.5), SoftmaxCrossEntropyLoss with constant labels whose graph keeps "
                "only output 1 (`log_prob`; output 0 `loss` is produced but no graph output), a graph output that "
                "is the graph input (`input`) and one that is an initializer (`fc.bias`)",
                data_shape=(1, 2, 6, 6), flavor="inference", data_size=1, n_batches=1, seed=2001)


ZOO = [
    make_simple_mlp,
    make_autoencoder,
    make_ds_cnn,
    make_resnet8,
    make_mobilenet_v1,
    make_cct,
    make_cnn_inline_sgd,
    make_kws_cnn,
    make_tiny_transformer,
]

# Built after tests/fixtures/: onnxruntime's onnxblock numbers the names it
# creates (`onnx::loss::N`) with one process-wide counter, so the build order
# is part of the output; appending here leaves the earlier files unchanged.
LATER = [
    make_mobilenet_v3_block,
    make_mobilenet_v3_block_train,
    make_rmsnorm_transformer,
    make_rmsnorm_default_domain,
    make_conv1d_autoencoder,
    make_conv1d_autoencoder_train,
    make_ops_mixed,
    make_conv_ordered_npz,
    make_conv_ordered_npz_train,
    make_conv_legacy_attrs,
    make_conv_size1_dims,
    make_conv_misc_forms,
    make_ops_mixed_train,
]
