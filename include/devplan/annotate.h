/*
 * The rewrite of AnnotateVirtualDevices (lua/devplan/passes/annotate_virtual_devices.lua):
 * every call a rule places is wrapped in on_device(call, virtual_device=vd).
 * The rules themselves are the caller's (written in Lua): this file walks
 * the module once, in C, and asks the caller only about the calls it may
 * annotate.
 */
#ifndef DEVPLAN_ANNOTATE_H
#define DEVPLAN_ANNOTATE_H

#include "module.h"

/* What a rule says of a call. */
enum { DP_ANNOT_NONE = 0, DP_ANNOT_DEVICE = 1, DP_ANNOT_LATER = 2, DP_ANNOT_KEEP = 3 };

typedef struct dp_annot_hooks {
  /* A call of the input module: DP_ANNOT_NONE (leave it), DP_ANNOT_DEVICE
     (wrap it on *vd, a new reference; with *soft >= 0 a soft annotation of
     that weight, on_device(..., soft=W); *soft starts at -1) or
     DP_ANNOT_LATER (the caller keeps its candidates: the rebuilt call is
     listed in the result's `later`); -1 with *err set stops. */
  int (*call)(void *ud, dp_call *call, dp_vdev **vd, double *soft, dp_err **err);
  /* A function literal with a Composite or Primitive attribute:
     DP_ANNOT_KEEP (one unit, not entered) or DP_ANNOT_NONE (entered); -1
     with *err set stops. NULL: every such literal is kept. */
  int (*unit)(void *ud, dp_func *fn, dp_err **err);
  void *ud;
} dp_annot_hooks;

typedef struct dp_annot_result {
  dp_module *mod;      /* the annotated module (new reference) */
  dp_expr **later;     /* the rebuilt calls answered DP_ANNOT_LATER, in the order asked (owned) */
  uint32_t nlater;
  int untyped;         /* a rebuilt node's original had no type: infer the module again */
} dp_annot_result;

/* The calls earlier annotations decided are never asked about: the body of
   an on_device that names a device and constrains its body, and an
   operator call (but of the memory and VM dialect) reading a value fixed on
   a device (an on_device with constrain_result=True, a device_copy to a
   device, another such call). Every other call (not inside a kept function
   literal) is asked about once, children first. Rebuilt nodes keep their
   original's type and an on_device its call's (the wrapper changes no
   type). 0, or -1 with *err set (nothing leaks). */
int dp_annotate_calls(dp_module *m, const dp_annot_hooks *h, dp_annot_result *out, dp_err **err);
void dp_annot_result_clear(dp_annot_result *r);
/* The calls of m earlier annotations placed (as above), in no particular
   order: *out a malloc'd array of borrowed nodes. 0, or -1 with *err set. */
int dp_annotate_placed(dp_module *m, dp_expr ***out, uint32_t *n, dp_err **err);

#endif
