/*
 * devplan: the whole public C API, one header per concept, in the order a
 * reader learns the core (each layer uses only the ones above it):
 *
 *   core.h       objects and reference counts, object types, contexts,
 *                source spans, errors, memory
 *   device.h     targets, virtual devices, the compilation configuration
 *   suggest.h    "did you mean" for unknown names
 *   type.h       types (interned), dtypes
 *   scalar.h     tensor elements (float16, bfloat16) between C numbers and bits
 *   attrs.h      attribute values and sets
 *   expr.h       expressions and match patterns: all of Relay
 *   op.h         the operator registry of a context; the built-in operators
 *                (a layer above the context: dp_register_builtin_ops)
 *   module.h     modules: functions, type definitions, primfns
 *   visit.h      explicit-stack traversals and rewrites
 *   print.h      the text printer, structural equality
 *   infer.h      type inference
 *   meta.h       the #[metadata] section
 *   parse.h      the C half of the text parser
 *   plan.h       the device planner (PlanDevices), phase by phase
 *   move.h       copies where they belong: MoveCopies, per execution
 *   dfpattern.h  dataflow patterns (find, group, rewrite)
 *   partition.h  partitioning a planned module by device
 *   schedule.h   the modelled schedule of a plan (devices side by side),
 *                its cost model, memory, and the latency baselines (HEFT, bounds)
 *   latency.h    the latency placement: the plan whose schedule finishes first
 *   onnx.h       importing ONNX models (src/import)
 *
 * Names: dp_ is public (declared here); dp__ is internal to the library
 * (src/.../internal.h). A name ending in _str prints to a malloc'd string,
 * one ending in _name gives a name.
 */
#ifndef DEVPLAN_H
#define DEVPLAN_H
#include "core.h"
#include "device.h"
#include "suggest.h"
#include "type.h"
#include "scalar.h"
#include "attrs.h"
#include "expr.h"
#include "op.h"
#include "module.h"
#include "visit.h"
#include "print.h"
#include "infer.h"
#include "plan.h"
#include "move.h"
#include "parse.h"
#include "dfpattern.h"
#include "annotate.h"
#include "report.h"
#include "partition.h"
#include "meta.h"
#include "schedule.h"
#include "latency.h"
#include "onnx.h"
#endif
