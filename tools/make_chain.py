#!/usr/bin/env python3
"""A training step of N (MatMul + Relu) blocks, for timing the planner on
long steps (docs/performance.md, "Recompute's choice against the step's
length"): writes OUT/network.onnx and OUT/train.toml. The same chain as
tests/common's `matmul_relu_chain`.

    python3 tools/make_chain.py 4000 /tmp/chain-4000
    deploygen inspect /tmp/chain-4000 --platform GAP9
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def chain(n: int) -> onnx.ModelProto:
    nodes, inits, prev = [], [], "x"
    for i in range(n):
        w = np.array([((k * 7 + i) % 13) * 0.01 - 0.06 for k in range(64)], dtype=np.float32).reshape(8, 8)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"]))
        prev = f"r{i}"
    nodes.append(helper.make_node("Identity", [prev], ["logits"]))
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 8])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("blocks", type=int)
    ap.add_argument("out")
    a = ap.parse_args()
    if a.blocks < 1:
        ap.error("blocks must be at least 1")
    os.makedirs(a.out, exist_ok=True)
    onnx.save(chain(a.blocks), os.path.join(a.out, "network.onnx"))
    with open(os.path.join(a.out, "train.toml"), "w") as f:
        f.write('loss = "mse"\noptimizer = "sgd"\nlearning_rate = 0.1\n')


if __name__ == "__main__":
    main()
