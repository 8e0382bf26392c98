#!/usr/bin/python3
"""Makes the ONNX test models of spec/onnx_*_spec.lua (run from the project root:
/usr/bin/python3 spec/data/onnx/make_models.py [NAME ... | tiny]).

Real architectures are exported with Debian's python3-torch and python3-torchvision
(random weights: nothing is downloaded), then stripped: every float initializer of
more than 64 elements keeps its type and shape but loses its data, so the files
stay small (graph only) and the suite needs no torch; devplan imports them with
weights "none". Integer initializers and small ones (shapes, scalars the import
reads) keep their data. Small models with their weights are built with
python3-onnx's helper API (tiny_*.onnx). Each model's opset is in its file name's
table below; the exports are deterministic (torch.manual_seed).
"""
import io
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def strip(model):
    """Drop the data of float initializers larger than 64 elements."""
    for t in model.graph.initializer:
        if t.data_type in (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16):
            n = 1
            for d in t.dims:
                n *= d
            if n > 64:
                t.ClearField("raw_data")
                t.ClearField("float_data")
                t.ClearField("double_data")
                t.ClearField("int32_data")
    return model


def export(name, net, shape, opset, **kw):
    import torch
    torch.manual_seed(0)
    net.eval()
    buf = io.BytesIO()
    x = torch.randn(*shape)
    # with gradients on: nn.MultiheadAttention then takes the path ONNX can
    # export (under no_grad it calls the fused _native_multi_head_attention)
    torch.onnx.export(net, x, buf, opset_version=opset, input_names=["input"],
                      output_names=["output"], do_constant_folding=True, **kw)
    model = strip(onnx.load_from_string(buf.getvalue()))
    onnx.save(model, os.path.join(HERE, name + ".onnx"))


def torchvision_models():
    import torch
    import torchvision.models as tvm
    torch.manual_seed(0)
    img = (1, 3, 224, 224)
    small_vit = dict(image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128)
    return {
        # name: (constructor, input shape, opset)
        "resnet18": (lambda: tvm.resnet18(), img, 11),
        "mobilenet_v2": (lambda: tvm.mobilenet_v2(), img, 13),
        "mobilenet_v3_small": (lambda: tvm.mobilenet_v3_small(), img, 14),
        "squeezenet1_0": (lambda: tvm.squeezenet1_0(), img, 12),
        "densenet121": (lambda: tvm.densenet121(), img, 14),
        "inception_v3": (lambda: tvm.inception_v3(init_weights=False, aux_logits=False), (1, 3, 299, 299), 15),
        "efficientnet_b0": (lambda: tvm.efficientnet_b0(), img, 16),
        "vgg11": (lambda: tvm.vgg11(), img, 17),
        "shufflenet_v2_x1_0": (lambda: tvm.shufflenet_v2_x1_0(), img, 11),
        "regnet_y_400mf": (lambda: tvm.regnet_y_400mf(), img, 13),
        "vit_small": (lambda: tvm.VisionTransformer(**small_vit), (1, 3, 64, 64), 14),
        "transformer_encoder": (lambda: torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True),
            num_layers=2, enable_nested_tensor=False), (1, 16, 64), 14),
        "transformer_encoder_ln": (lambda: torch.nn.TransformerEncoderLayer(
            d_model=64, nhead=4, dim_feedforward=128, batch_first=True), (1, 16, 64), 17),
    }


def tiny_models():
    """Small graphs with their weights, from the helper API."""
    rng = np.random.default_rng(0)

    def w(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    def i64(name, values):
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g", "bt", "mu", "var"], ["n1"], name="bn1", epsilon=1e-3),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["p1"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1d"], name="unsq"),
        helper.make_node("Concat", ["n1d", "minus1"], ["newshape"], name="cat", axis=0),
        helper.make_node("Reshape", ["p1", "newshape"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fw", "fb"], ["y"], name="fc", transB=1),
    ]
    inits = [w("w1", 4, 3, 3, 3), w("b1", 4), w("g", 4), w("bt", 4), w("mu", 4),
             numpy_helper.from_array(np.abs(rng.standard_normal(4)).astype(np.float32) + 0.5, "var"),
             i64("zero", 0), i64("axes0", [0]), i64("minus1", [-1]), w("fw", 10, 64), w("fb", 10)]
    g = helper.make_graph(nodes, "tiny_cnn", [x], [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_models.py")
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, "tiny_cnn.onnx"))

    # a dynamic batch dimension: the import needs its size
    xd = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    yd = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "dynamic", [xd], [yd])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, os.path.join(HERE, "tiny_dynamic.onnx"))

    # a node that does not type-check: 3 channels into a convolution for 4
    xb = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    yb = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="bad_conv")], "badconv", [xb], [yb],
                          [w("w", 2, 4, 3, 3)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, os.path.join(HERE, "tiny_badconv.onnx"))

    # an operator devplan does not map
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="ok"),
                           helper.make_node("Hardmax", ["r"], ["y"], name="hm")], "unsupported", [xb], [yb])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, os.path.join(HERE, "tiny_unsupported.onnx"))

    # a new shape computed from a graph input: not known at import
    xr = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])
    sr = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
    g = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")], "dynreshape",
                          [xr, sr], [yb])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
              os.path.join(HERE, "tiny_dynamic_reshape.onnx"))

    # an opset devplan does not read, and nodes without names (OpType_k)
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "old", [xb], [yb])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)]), os.path.join(HERE, "tiny_opset9.onnx"))
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r0"]), helper.make_node("Relu", ["r0"], ["r1"]),
                           helper.make_node("Sigmoid", ["r1"], ["y"])], "unnamed", [xb], [yb])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(HERE, "tiny_unnamed.onnx"))

    # opset 18: Split into num_outputs parts, the last one smaller
    x7 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 7])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("a", "b", "c")]
    g = helper.make_graph([helper.make_node("Split", ["x"], ["a", "b", "c"], name="split", axis=1, num_outputs=3)],
                          "split18", [x7], outs)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), os.path.join(HERE, "tiny_split18.onnx"))

    # shape arithmetic as exporters of transformers write it: Range, Equal,
    # Where, Mod, Not, ScatterND, ConstantOfShape, Expand on shapes
    xs = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 8])
    ys = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 6])
    nodes = [
        helper.make_node("Shape", ["x"], ["sh"], name="sh"),
        helper.make_node("Gather", ["sh", "one"], ["seq"], name="seq", axis=0),
        helper.make_node("Range", ["zero", "seq", "one"], ["pos"], name="range"),
        helper.make_node("Mod", ["pos", "two"], ["odd"], name="mod"),
        helper.make_node("Equal", ["odd", "zero"], ["even"], name="eq"),
        helper.make_node("Not", ["even"], ["noteven"], name="not"),
        helper.make_node("Cast", ["noteven"], ["oddi"], name="cast", to=TensorProto.INT64),
        helper.make_node("ReduceSum", ["oddi"], ["nodd"], name="count", keepdims=0),
        helper.make_node("Where", ["even", "pos", "zero"], ["evens"], name="where"),
        helper.make_node("ConstantOfShape", ["dims2"], ["zeros3"], name="cos",
                         value=numpy_helper.from_array(np.array([0], dtype=np.int64))),
        helper.make_node("ScatterND", ["zeros3", "idx", "upd"], ["perm"], name="scatter"),
        helper.make_node("Transpose", ["x"], ["xt"], name="transpose", perm=[0, 2, 1]),
        helper.make_node("Shape", ["xt"], ["sht"], name="sht"),
        helper.make_node("Expand", ["xt", "sht"], ["xe"], name="expand"),
        helper.make_node("Add", ["nodd", "seq"], ["nine"], name="add"),
        helper.make_node("Sub", ["nine", "nodd"], ["six"], name="sub"),
        helper.make_node("Unsqueeze", ["six", "axes0"], ["six1"], name="unsq"),
        helper.make_node("Slice", ["sht", "zero1", "two1"], ["head"], name="slice"),
        helper.make_node("Concat", ["head", "six1"], ["newshape"], name="concat", axis=0),
        helper.make_node("Reshape", ["xe", "newshape"], ["y"], name="reshape"),
    ]
    inits = [i64("zero", 0), i64("one", 1), i64("two", 2), i64("axes0", [0]), i64("dims2", [3]),
             i64("idx", [[0], [2]]), i64("upd", [5, 7]), i64("zero1", [0]), i64("two1", [2])]
    g = helper.make_graph(nodes, "shapes", [xs], [ys], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, "tiny_shapes.onnx"))


def main():
    wanted = set(sys.argv[1:])
    tiny_models()
    if wanted == {"tiny"}:  # the helper-API models alone (no torch needed)
        return
    for name, (make, shape, opset) in torchvision_models().items():
        if not wanted or name in wanted:
            print("exporting", name, "opset", opset, flush=True)
            export(name, make(), shape, opset)


if __name__ == "__main__":
    main()
