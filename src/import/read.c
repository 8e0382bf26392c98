/*
 * Reading ONNX bytes: protobuf-c decodes them with the code protoc-c
 * generated from onnx.proto (build/gen). protobuf-c descends into nested
 * messages by recursion, so a walk over the wire format (an explicit
 * stack, the generated descriptors saying which fields are messages) first
 * bounds the nesting and finds truncated or non-protobuf input, with the
 * byte offset where it goes wrong. Every allocation goes through
 * dp_malloc, so allocation failures are injected here too.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* Subgraphs nest a few levels in real models; Google's protobuf stops at 100. */
#define MAX_NESTING 64

typedef struct alloc_state {
  int oom;
} alloc_state;

static void *pb_alloc(void *ud, size_t size) {
  void *p = dp_malloc(size ? size : 1);
  if (!p) ((alloc_state *)ud)->oom = 1;
  return p;
}

static void pb_free(void *ud, void *p) { free(p); }

static int varint(const uint8_t *p, size_t end, size_t *pos, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (*pos >= end) return -1;
    uint8_t b = p[(*pos)++];
    if (shift == 63 && b > 1) return -2;
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return 0;
    }
  }
  return -2;
}

typedef struct frame {
  const ProtobufCMessageDescriptor *desc;
  size_t end;
} frame;

/* The wire format of bytes as message desc: 0, or -1 with *why and *at. */
static int walk(const uint8_t *p, size_t n, const char **why, size_t *at) {
  frame stack[MAX_NESTING + 1];
  int depth = 0;
  size_t pos = 0;
  stack[0] = (frame){&onnx__model_proto__descriptor, n};
  for (;;) {
    while (depth > 0 && pos == stack[depth].end) depth--;
    if (depth == 0 && pos == n) return 0;
    frame *f = &stack[depth];
    uint64_t tag, len;
    *at = pos;
    int r = varint(p, f->end, &pos, &tag);
    if (r < 0) {
      *why = r == -1 ? "a field's tag runs past the end of its message" : "a malformed varint";
      return -1;
    }
    uint64_t num = tag >> 3;
    if (num == 0 || num > 536870911u) {
      *why = "a field number of 0 (not protobuf)";
      return -1;
    }
    switch (tag & 7) {
    case 0:
      if ((r = varint(p, f->end, &pos, &len)) < 0) {
        *why = r == -1 ? "a number runs past the end of its message" : "a malformed varint";
        return -1;
      }
      break;
    case 1:
    case 5: {
      size_t w = (tag & 7) == 1 ? 8 : 4;
      if (f->end - pos < w) {
        *why = "a fixed-size number runs past the end of its message";
        return -1;
      }
      pos += w;
      break;
    }
    case 2: {
      if ((r = varint(p, f->end, &pos, &len)) < 0) {
        *why = r == -1 ? "a length runs past the end of its message" : "a malformed varint";
        return -1;
      }
      if (len > f->end - pos) {
        *why = "a field's bytes run past the end of its message (truncated)";
        return -1;
      }
      const ProtobufCFieldDescriptor *fd =
        protobuf_c_message_descriptor_get_field(f->desc, (unsigned)num);
      if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
        if (depth == MAX_NESTING) {
          *why = "messages nested more than 64 deep";
          return -1;
        }
        stack[++depth] = (frame){fd->descriptor, pos + len};
      } else {
        pos += len;
      }
      break;
    }
    default:
      *why = "a wire type protobuf does not have, or a group (not protobuf as ONNX writes it)";
      return -1;
    }
  }
}

static int starts_with(const uint8_t *p, size_t n, const char *s) {
  size_t k = strlen(s);
  return n >= k && memcmp(p, s, k) == 0;
}

/* Relay text given where ONNX was expected. */
static int looks_like_relay(const uint8_t *p, size_t n) {
  while (n && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++, n--;
  return starts_with(p, n, "#[version") || starts_with(p, n, "def @") || starts_with(p, n, "fn (") ||
         starts_with(p, n, "type ") || starts_with(p, n, "//");
}

Onnx__ModelProto *dp__onnx_decode(const void *bytes, size_t n, const char *source, dp_err **err) {
  const uint8_t *p = bytes;
  const char *why = NULL;
  size_t at = 0;
  if (n == 0) {
    dp_err_set(err, dp_err_new(DP_ERR_SYNTAX, DP_NOSPAN, "%s: empty: not an ONNX model", source));
    return NULL;
  }
  if (looks_like_relay(p, n)) {
    dp_err_set(err, dp_err_new(DP_ERR_SYNTAX, DP_NOSPAN,
                               "%s: Relay text, not an ONNX model (read it with devplan parse, dp.parse_file)", source));
    return NULL;
  }
  if (walk(p, n, &why, &at) < 0) {
    dp_err_set(err, dp_err_new(DP_ERR_SYNTAX, DP_NOSPAN, "%s: not a valid ONNX model: at byte %zu of %zu, %s",
                               source, at, n, why));
    return NULL;
  }
  alloc_state st = {0};
  ProtobufCAllocator a = {pb_alloc, pb_free, &st};
  Onnx__ModelProto *m = onnx__model_proto__unpack(&a, n, p);
  if (!m) {
    if (st.oom) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    else
      dp_err_set(err, dp_err_new(DP_ERR_SYNTAX, DP_NOSPAN,
                                 "%s: not a valid ONNX model: the bytes do not decode as an onnx.ModelProto", source));
    return NULL;
  }
  if (!m->graph || !m->has_ir_version) {
    dp_err_set(err, dp_err_new(DP_ERR_SYNTAX, DP_NOSPAN, "%s: not an ONNX model: it has no %s", source,
                               m->graph ? "ir_version" : "graph"));
    dp__onnx_free(m);
    return NULL;
  }
  return m;
}

void dp__onnx_free(Onnx__ModelProto *m) {
  if (!m) return;
  alloc_state st = {0};
  ProtobufCAllocator a = {pb_alloc, pb_free, &st};
  onnx__model_proto__free_unpacked(m, &a);
}

dp_dtype dp__onnx_dtype(int32_t elem) {
  switch (elem) {
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return DP_FLOAT32;
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return DP_DTYPE(DP_DT_UINT, 8, 1);
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return DP_DTYPE(DP_DT_INT, 8, 1);
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return DP_DTYPE(DP_DT_UINT, 16, 1);
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return DP_DTYPE(DP_DT_INT, 16, 1);
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return DP_INT32;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return DP_INT64;
  case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return DP_BOOL;
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return DP_DTYPE(DP_DT_FLOAT, 16, 1);
  case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return DP_DTYPE(DP_DT_FLOAT, 64, 1);
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return DP_DTYPE(DP_DT_UINT, 32, 1);
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return DP_DTYPE(DP_DT_UINT, 64, 1);
  case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return DP_DTYPE(DP_DT_BFLOAT, 16, 1);
  default: return 0;
  }
}

const char *dp__onnx_elem_name(int32_t elem) {
  static const char *const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32",
                                      "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32",
                                      "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  return elem >= 0 && elem < (int32_t)(sizeof names / sizeof names[0]) ? names[elem] : "an unknown type";
}
