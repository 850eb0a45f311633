"""A small ONNX graph builder with seeded parameter initialisation.

Forward graphs are written so that onnxruntime's gradient builder accepts
them:
- BatchNorm in training graphs is `com.microsoft.BatchNormInternal` with 5
  outputs and training_mode=1 (plain BatchNormalization has no gradient);
- MaxPool carries its second output (Indices);
- LayerNormalization in training graphs has 3 outputs (Y, mean, inv_std_var);
- Gelu in training graphs is `com.microsoft.Gelu`.
Every tensor name is unique (SSA).
"""

import numpy as np
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"


class Builder:
    def __init__(self, name, seed, opset=17, ir_version=8, training=True):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.opset = opset
        self.ir_version = ir_version
        self.training = training
        self.nodes = []
        self.inits = []
        self.inputs = []
        self.outputs = []
        self.trainable = []  # names, graph order of creation
        self.frozen = []
        self._used = set()
        self._node_count = 0
        self.uses_ms = False

    # ---- names, tensors -------------------------------------------------
    def uniq(self, base):
        name, i = base, 1
        while name in self._used:
            name = f"{base}_{i}"
            i += 1
        self._used.add(name)
        return name

    def input(self, name, shape, dtype=TensorProto.FLOAT):
        self._used.add(name)
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def output(self, name, shape, dtype=TensorProto.FLOAT):
        self.outputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def param(self, name, value, trainable=True):
        name = self.uniq(name)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value, dtype=np.float32), name))
        (self.trainable if trainable else self.frozen).append(name)
        return name

    def const(self, name, value):
        name = self.uniq(name)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op, inputs, outs=1, domain="", base=None, **attrs):
        """Add a node; `outs` is a count or a list of output base names."""
        base = base or op.lower()
        if isinstance(outs, int):
            outs = [base] if outs == 1 else [f"{base}_out{i}" for i in range(outs)]
        outputs = [self.uniq(o) for o in outs]
        self._node_count += 1
        if domain == MS:
            self.uses_ms = True
        self.nodes.append(
            helper.make_node(op, list(inputs), outputs, name=f"{op}_{self._node_count}", domain=domain, **attrs)
        )
        return outputs[0] if len(outputs) == 1 else outputs

    # ---- random init ----------------------------------------------------
    def he(self, shape, fan_in):
        return self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)

    def small(self, shape, scale=0.05):
        return self.rng.standard_normal(shape) * scale

    # ---- layers -----------------------------------------------------------
    def conv(self, x, cin, cout, k, prefix, stride=1, pads=None, group=1, bias=False):
        kh, kw = (k, k) if isinstance(k, int) else k
        if pads is None:
            pads = [kh // 2, kw // 2, kh // 2, kw // 2]
        w = self.param(f"{prefix}.weight", self.he((cout, cin // group, kh, kw), cin // group * kh * kw))
        ins = [x, w]
        if bias:
            ins.append(self.param(f"{prefix}.bias", self.small((cout,))))
        return self.node(
            "Conv", ins, base=f"{prefix}.out", kernel_shape=[kh, kw], strides=[stride, stride],
            pads=pads, group=group, dilations=[1, 1],
        )

    def conv1d(self, x, cin, cout, k, prefix, stride=1, pad=None, group=1, bias=False):
        pad = k // 2 if pad is None else pad
        w = self.param(f"{prefix}.weight", self.he((cout, cin // group, k), cin // group * k))
        ins = [x, w]
        if bias:
            ins.append(self.param(f"{prefix}.bias", self.small((cout,))))
        return self.node("Conv", ins, base=f"{prefix}.out", kernel_shape=[k], strides=[stride], pads=[pad, pad],
                         group=group, dilations=[1])

    def conv_transpose1d(self, x, cin, cout, k, prefix, stride=2, pad=1, bias=False):
        """ConvTranspose 1-D; weight [cin, cout, k]; L_out = (L - 1) * stride + k - 2 * pad."""
        w = self.param(f"{prefix}.weight", self.he((cin, cout, k), cin * k // stride))
        ins = [x, w]
        if bias:
            ins.append(self.param(f"{prefix}.bias", self.small((cout,))))
        return self.node("ConvTranspose", ins, base=f"{prefix}.out", kernel_shape=[k], strides=[stride],
                         pads=[pad, pad], dilations=[1], group=1)

    def hard_sigmoid(self, x, prefix, decomposed=False):
        """HardSigmoid as PyTorch exports it (alpha = 1/6, beta = 0.5), or the same as
        Clip(x * (1/6) + 0.5, 0, 1) (onnxruntime-training has no HardSigmoid gradient)."""
        if not decomposed:
            return self.node("HardSigmoid", [x], base=f"{prefix}.hsig", alpha=1.0 / 6.0, beta=0.5)
        sixth = self.const(f"{prefix}.sixth", np.array(1.0 / 6.0, np.float32))
        half = self.const(f"{prefix}.half", np.array(0.5, np.float32))
        zero = self.const(f"{prefix}.zero", np.array(0.0, np.float32))
        one = self.const(f"{prefix}.one", np.array(1.0, np.float32))
        h = self.node("Add", [self.node("Mul", [x, sixth], base=f"{prefix}.scaled"), half], base=f"{prefix}.shifted")
        return self.node("Clip", [h, zero, one], base=f"{prefix}.hsig")

    def hard_swish(self, x, prefix, decomposed=False):
        """HardSwish, or x * Clip(x / 6 + 0.5, 0, 1) (no HardSwish gradient in onnxruntime-training)."""
        if not decomposed:
            return self.node("HardSwish", [x], base=f"{prefix}.hswish")
        return self.node("Mul", [x, self.hard_sigmoid(x, prefix, True)], base=f"{prefix}.hswish")

    def rmsnorm(self, x, dim, prefix, form="RMSNormalization", eps=1e-5):
        """RMSNorm over the last axis. form: "RMSNormalization" (ai.onnx opset 23), "RMSNorm"
        (default-domain single op, no ONNX schema) or "decomposed" (Mul, ReduceMean, Add,
        Sqrt, Div, Mul: what onnxruntime 1.19 can run)."""
        g = self.param(f"{prefix}.weight", 1.0 + self.small((dim,), 0.1))
        if form == "RMSNormalization":
            return self.node("RMSNormalization", [x, g], base=f"{prefix}.out", axis=-1, epsilon=eps)
        if form == "RMSNorm":
            return self.node("RMSNorm", [x, g], base=f"{prefix}.out", axis=-1, epsilon=eps)
        axes = self.const(f"{prefix}.axes", np.array([-1], np.int64))
        e = self.const(f"{prefix}.eps", np.array(eps, np.float32))
        ms = self.node("ReduceMean", [self.node("Mul", [x, x], base=f"{prefix}.sq"), axes], base=f"{prefix}.ms",
                       keepdims=1)
        r = self.node("Sqrt", [self.node("Add", [ms, e], base=f"{prefix}.ms_eps")], base=f"{prefix}.rms")
        return self.node("Mul", [self.node("Div", [x, r], base=f"{prefix}.normed"), g], base=f"{prefix}.out")

    def bn(self, x, c, prefix):
        gamma = self.param(f"{prefix}.weight", 1.0 + self.small((c,), 0.1))
        beta = self.param(f"{prefix}.bias", self.small((c,), 0.1))
        mean = self.param(f"{prefix}.running_mean", self.small((c,), 0.1), trainable=False)
        var = self.param(f"{prefix}.running_var", 1.0 + np.abs(self.small((c,), 0.1)), trainable=False)
        if self.training:
            outs = [f"{prefix}.out", f"{prefix}.running_mean_out", f"{prefix}.running_var_out",
                    f"{prefix}.saved_mean", f"{prefix}.saved_inv_std"]
            return self.node("BatchNormInternal", [x, gamma, beta, mean, var], outs=outs, domain=MS,
                             epsilon=1e-5, momentum=0.9, training_mode=1)[0]
        return self.node("BatchNormalization", [x, gamma, beta, mean, var], base=f"{prefix}.out", epsilon=1e-5)

    def relu(self, x, prefix):
        return self.node("Relu", [x], base=f"{prefix}.relu")

    def gemm(self, x, fin, fout, prefix, relu_init=True, out=None):
        w = self.param(f"{prefix}.weight", self.he((fout, fin), fin) if relu_init else self.small((fout, fin), 1 / np.sqrt(fin)))
        b = self.param(f"{prefix}.bias", self.small((fout,)))
        return self.node("Gemm", [x, w, b], outs=[out or f"{prefix}.out"], transB=1)

    def linear(self, x, fin, fout, prefix):
        """MatMul with a [fin, fout] weight plus a bias Add (for rank-3 activations)."""
        w = self.param(f"{prefix}.weight", self.rng.standard_normal((fin, fout)) / np.sqrt(fin))
        b = self.param(f"{prefix}.bias", self.small((fout,)))
        y = self.node("MatMul", [x, w], base=f"{prefix}.mm")
        return self.node("Add", [y, b], base=f"{prefix}.out")

    def maxpool(self, x, k, s, pads, prefix):
        if self.training:
            return self.node("MaxPool", [x], outs=[f"{prefix}.out", f"{prefix}.indices"],
                             kernel_shape=[k, k], strides=[s, s], pads=pads)[0]
        return self.node("MaxPool", [x], base=f"{prefix}.out", kernel_shape=[k, k], strides=[s, s], pads=pads)

    def layernorm(self, x, dim, prefix):
        g = self.param(f"{prefix}.weight", 1.0 + self.small((dim,), 0.1))
        b = self.param(f"{prefix}.bias", self.small((dim,), 0.1))
        if self.training:
            return self.node("LayerNormalization", [x, g, b],
                             outs=[f"{prefix}.out", f"{prefix}.mean", f"{prefix}.inv_std"], axis=-1, epsilon=1e-5)[0]
        return self.node("LayerNormalization", [x, g, b], base=f"{prefix}.out", axis=-1, epsilon=1e-5)

    def gelu(self, x, prefix):
        if self.opset >= 20:
            return self.node("Gelu", [x], base=f"{prefix}.gelu")
        return self.node("Gelu", [x], base=f"{prefix}.gelu", domain=MS)

    def reshape(self, x, shape, prefix):
        s = self.const(f"{prefix}.shape", np.array(shape, dtype=np.int64))
        return self.node("Reshape", [x, s], base=f"{prefix}.out")

    def transpose(self, x, perm, prefix):
        return self.node("Transpose", [x], base=f"{prefix}.out", perm=perm)

    # ---- result -------------------------------------------------------------
    def model(self):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        opsets = [helper.make_opsetid("", self.opset)]
        if self.uses_ms:
            opsets.append(helper.make_opsetid(MS, 1))
        m = helper.make_model(graph, opset_imports=opsets, producer_name="deploygen-tools-make_models")
        m.ir_version = self.ir_version
        return m
