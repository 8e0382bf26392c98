#!/usr/bin/python3
"""Prints the type ONNX's own shape inference (onnx.shape_inference) gives every
value of a model, one per line: NAME<TAB>DTYPE<TAB>D1,D2,... (values whose
shape it leaves unknown are left out). spec/onnx_models_spec.lua compares
devplan's types with these."""
import sys

import onnx
from onnx import TensorProto, shape_inference

DTYPES = {TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64", TensorProto.FLOAT16: "float16",
          TensorProto.INT64: "int64", TensorProto.INT32: "int32", TensorProto.INT16: "int16",
          TensorProto.INT8: "int8", TensorProto.UINT8: "uint8", TensorProto.BOOL: "bool"}

model = shape_inference.infer_shapes(onnx.load(sys.argv[1]), strict_mode=True)
g = model.graph
for vi in list(g.input) + list(g.value_info) + list(g.output):
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not t.HasField("shape") or t.elem_type not in DTYPES:
        continue
    dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    if None in dims:
        continue
    print("%s\t%s\t%s" % (vi.name, DTYPES[t.elem_type], ",".join(str(d) for d in dims)))
