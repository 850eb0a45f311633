"""Rewrite a graph into a form onnxruntime 1.19 runs, with the same values.

Used where a committed file is valid for deploygen but not for the pinned
onnxruntime (see models/README.md, "Second-wave operators and third-party
conventions"):
- opset-11 attribute forms in newer files: `axes` on Squeeze, Unsqueeze and
  the reductions, `split` on Split, `pads`/`value` on Pad, `min`/`max` on
  Clip become constant inputs;
- RMSNormalization (ai.onnx opset 23) and the default-domain `RMSNorm`
  become Mul, ReduceMean, Add, Sqrt, Div, Mul (the decomposition the zoo's
  references were computed with);
- a default opset above onnxruntime's (21) is lowered to 21 once no
  operator of a newer opset is left (the file's other operators must mean
  the same at 21; true for the zoo), with IR version 10.
"""

import copy

import numpy as np
from onnx import helper, numpy_helper

ORT_MAX_OPSET = 21
ORT_MAX_IR = 10

# op -> (attribute, input position, opset from which it is an input)
_LEGACY = {
    "Squeeze": ("axes", 1, 13),
    "Unsqueeze": ("axes", 1, 13),
    "ReduceSum": ("axes", 1, 13),
    "ReduceMean": ("axes", 1, 18),
    "ReduceMax": ("axes", 1, 18),
    "ReduceMin": ("axes", 1, 18),
    "ReduceProd": ("axes", 1, 18),
    "ReduceL1": ("axes", 1, 18),
    "ReduceL2": ("axes", 1, 18),
    "ReduceLogSumExp": ("axes", 1, 18),
    "ReduceSumSquare": ("axes", 1, 18),
    "Split": ("split", 1, 13),
}


def default_opset(model):
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


class _Rewriter:
    def __init__(self, model):
        self.m = copy.deepcopy(model)
        self.opset = default_opset(self.m)
        self.used = {n for node in self.m.graph.node for n in list(node.input) + list(node.output)}
        self.used |= {i.name for i in self.m.graph.initializer} | {i.name for i in self.m.graph.input}
        self.changes = []

    def name(self, base):
        n, i = base, 1
        while n in self.used:
            n, i = f"{base}_{i}", i + 1
        self.used.add(n)
        return n

    def const(self, base, value):
        n = self.name(base)
        self.m.graph.initializer.append(numpy_helper.from_array(np.asarray(value), n))
        return n

    def legacy(self, node):
        """Attribute -> input; returns the replacement node or None."""
        a = {x.name: x for x in node.attribute}
        op = node.op_type
        base = node.name or node.output[0]
        if op in _LEGACY:
            attr, pos, since = _LEGACY[op]
            if attr not in a or self.opset < since:
                return None
            value = np.array(helper.get_attribute_value(a[attr]), np.int64)
            inputs = list(node.input) + [""] * (pos + 1 - len(node.input))
            inputs[pos] = self.const(f"{base}.{attr}", value)
            attrs = {k: helper.get_attribute_value(v) for k, v in a.items() if k != attr}
            return helper.make_node(op, inputs, list(node.output), name=node.name, domain=node.domain, **attrs)
        if op == "Pad" and "pads" in a and self.opset >= 11:
            pads = self.const(f"{base}.pads", np.array(helper.get_attribute_value(a["pads"]), np.int64))
            inputs = [node.input[0], pads]
            if "value" in a:
                inputs.append(self.const(f"{base}.value", np.array(helper.get_attribute_value(a["value"]),
                                                                   np.float32)))
            attrs = {k: helper.get_attribute_value(v) for k, v in a.items() if k not in ("pads", "value")}
            return helper.make_node(op, inputs, list(node.output), name=node.name, domain=node.domain, **attrs)
        if op == "Clip" and ("min" in a or "max" in a) and self.opset >= 11:
            inputs = [node.input[0], "", ""]
            if "min" in a:
                inputs[1] = self.const(f"{base}.min", np.array(helper.get_attribute_value(a["min"]), np.float32))
            if "max" in a:
                inputs[2] = self.const(f"{base}.max", np.array(helper.get_attribute_value(a["max"]), np.float32))
            while inputs[-1] == "":
                inputs.pop()
            return helper.make_node(op, inputs, list(node.output), name=node.name, domain=node.domain)
        return None

    def rmsnorm(self, node):
        """RMSNormalization / RMSNorm -> [Mul, ReduceMean, Add, Sqrt, Div, Mul]."""
        a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        axis = int(a.get("axis", -1))
        if axis >= 0:
            raise NotImplementedError(f"{node.name}: {node.op_type} with axis {axis} >= 0 (rank needed)")
        eps = float(a.get("epsilon", 1e-5))
        x, scale = node.input[0], node.input[1]
        p = node.name or node.output[0]
        axes = np.arange(axis, 0, dtype=np.int64)
        sq = self.name(f"{p}.sq")
        ms = self.name(f"{p}.ms")
        mse = self.name(f"{p}.ms_eps")
        rms = self.name(f"{p}.rms")
        normed = self.name(f"{p}.normed")
        nodes = [helper.make_node("Mul", [x, x], [sq])]
        if self.opset >= 18:
            nodes.append(helper.make_node("ReduceMean", [sq, self.const(f"{p}.axes", axes)], [ms], keepdims=1))
        else:
            nodes.append(helper.make_node("ReduceMean", [sq], [ms], axes=[int(v) for v in axes], keepdims=1))
        nodes += [
            helper.make_node("Add", [ms, self.const(f"{p}.eps", np.array(eps, np.float32))], [mse]),
            helper.make_node("Sqrt", [mse], [rms]),
            helper.make_node("Div", [x, rms], [normed]),
            helper.make_node("Mul", [normed, scale], [node.output[0]]),
        ]
        return nodes

    def run(self):
        if self.opset > ORT_MAX_OPSET:
            # RMSNormalization decomposes into opset-18 forms; lower first so they are written for 21
            self.changes.append(f"default opset {self.opset} -> {ORT_MAX_OPSET}")
            self.opset = ORT_MAX_OPSET
            for o in self.m.opset_import:
                if o.domain in ("", "ai.onnx"):
                    o.version = ORT_MAX_OPSET
            self.m.ir_version = min(self.m.ir_version, ORT_MAX_IR)
        nodes = []
        for node in self.m.graph.node:
            if node.domain in ("", "ai.onnx") and node.op_type in ("RMSNormalization", "RMSNorm"):
                nodes += self.rmsnorm(node)
                self.changes.append(f"{node.name}: {node.op_type} decomposed")
                continue
            new = self.legacy(node) if node.domain in ("", "ai.onnx") else None
            if new is not None:
                self.changes.append(f"{node.name}: {node.op_type} attribute form -> input form")
                nodes.append(new)
            else:
                nodes.append(node)
        del self.m.graph.node[:]
        self.m.graph.node.extend(nodes)
        return self.m, self.changes


def for_onnxruntime(model):
    """(model onnxruntime 1.19 can run, list of the rewrites made)."""
    return _Rewriter(model).run()
