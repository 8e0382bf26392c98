/*
 * The metadata section of the text format (`#[metadata]` after a module):
 * what TVM's printer writes with show_meta_data=True, the JSON object
 * graph of tvm.ir.save_json:
 *
 *   {"root": 1, "nodes": [{"type_key": ""}, {"type_key": "Map", "keys":
 *    ["VirtualDevice", ...], "data": [2, ...]}, {"type_key": "Array",
 *    "data": [3]}, {"type_key": "VirtualDevice", "attrs": {...}}, ...],
 *    "b64ndarrays": ["P6G0lvBAXt0AAAAA..."], "attrs": {"tvm_version": ...}}
 *
 * The root is a Map from kinds ("VirtualDevice", "relay.Constant", ...) to
 * Arrays: `meta[KIND][i]` is the i-th item of KIND's array. Each node is
 * read into what devplan represents:
 *   VirtualDevice     a virtual device (device_type_int, -1 or 0 for none;
 *                     virtual_device_id; target; memory_scope)
 *   relay.Constant    a constant (its array: b64ndarrays[data], TVM's
 *                     NDArray file format, little-endian)
 *   Target            a target (kind, tag, keys, attrs, host), inside a
 *                     virtual device
 *   runtime.String, IntImm, FloatImm, runtime.BoxInt, runtime.BoxFloat,
 *   runtime.BoxBool, Array
 *                     attribute values (a string, a number, a boolean, a list)
 * A node of any other type key, or a field that holds something devplan
 * cannot represent, is an error naming the type key and pointing at the
 * node in the text; nothing is dropped silently.
 *
 * The writer (the printer's DP_PRINT_META, print.h) makes the same format:
 * what it writes reads back to the same objects, here and in TVM.
 */
#ifndef DEVPLAN_META_H
#define DEVPLAN_META_H

#include "attrs.h"

typedef struct dp_meta dp_meta;

/* Reads the section text[start..len) of a text named `source` (errors are
   positioned in the whole text: line and column from its start). NULL +
   error on malformed JSON, an unknown type key, or an unrepresentable
   value. */
dp_meta *dp_meta_read(dp_ctx *ctx, const char *text, size_t start, size_t len, uint32_t source,
                      dp_err **err);
void dp_meta_free(dp_meta *m);
/* meta[kind][index]: 1 with *out (borrowed: lives as long as m); 0 when m
   has no list `kind`; -1 + error when index is out of its range. */
int dp_meta_get(const dp_meta *m, const char *kind, int64_t index, const dp_aval **out, dp_err **err);
/* The kinds, in the section's order: the i-th name (NULL past the last)
   and the number of its entries. */
const char *dp_meta_kind(const dp_meta *m, uint32_t i, uint32_t *count);

#endif
