/*
 * What each task of a task graph costs (schedule.h): a call's seconds on
 * its device from the caller's cost model (a hook, else the default model
 * of schedule_cost.c), a copy's bytes over the bandwidth of its pair of
 * devices (the hook, else the configuration's, else DP_SCHED_BANDWIDTH).
 * A cost model that says a device cannot run a call makes the call's
 * placement there an error (a planned module) or that device INFINITY for
 * it (a module to place).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "planner.h"
#include "devplan/schedule.h"

#define NONE DP_SCHED_NONE

static char *vd_name(const dp_vdev *v) {
  char *s = dp__vdev_short(v);
  return s ? s : dp_strdup("?");
}

/* An error about call e on vd: fmt reads the call, the device (two %s),
   then with_num a number (%g). */
static dp_err *call_error(const dp_sched_graph *g, const dp_expr *e, const dp_vdev *vd,
                          const char *fmt, int with_num, double x) {
  char *d = dp__describe(g->mod->ctx, e), *n = vd_name(vd);
  dp_err *err = with_num
    ? dp_err_at(g->mod->ctx, DP_ERR_VALUE, e->span, fmt, d ? d : "a call", n ? n : "?", x)
    : dp_err_at(g->mod->ctx, DP_ERR_VALUE, e->span, fmt, d ? d : "a call", n ? n : "?");
  free(d);
  free(n);
  return err;
}

/* The seconds of call e on vd: 0 (*s set), 1 (vd cannot run it), -1 + err. */
static int call_seconds(const dp_sched_graph *g, const dp_sched_costs *c, dp_expr *e, dp_vdev *vd,
                        double *s, dp_err **err) {
  if (!c || !c->call) {
    *s = dp_cost_model_seconds(c ? c->model : NULL, e, vd->device_type);
    return 0;
  }
  dp_err *e2 = NULL;
  int rc = c->call(c->ud, e, vd, s, &e2);
  if (rc < 0) {
    dp_err_set(err, e2 ? e2 : dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "cost model failed"));
    return -1;
  }
  if (rc == 0 && !(*s >= 0 && isfinite(*s))) {
    dp_err_set(err, call_error(g, e, vd, "schedule: the cost of %s on %s must be a number of "
                               "seconds >= 0, got %g", 1, *s));
    return -1;
  }
  return rc;
}

/* The bandwidth from device a to device b into *v: 0 or -1 + err. (A hook
   is not asked about a device and itself.) */
static int bandwidth(const dp_sched_graph *g, const dp_sched_costs *c, uint32_t a, uint32_t b,
                     double *out, dp_err **err) {
  double v = 0;
  if (c && c->bandwidth && a != b) {
    if (c->bandwidth(c->ud, g->devs[a], g->devs[b], &v, err) < 0) return -1;
    if (!(v > 0 && isfinite(v))) {
      char *x = vd_name(g->devs[a]), *y = vd_name(g->devs[b]);
      dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "schedule: the bandwidth from %s to "
                                 "%s must be a number of bytes per second > 0, got %g", x, y, v));
      free(x);
      free(y);
      return -1;
    }
  } else {
    v = dp_config_bandwidth(g->cfg, g->devs[a], g->devs[b]);
    if (!(v > 0)) v = DP_SCHED_BANDWIDTH;
  }
  *out = v;
  return 0;
}

int dp_sched_bandwidths(const dp_sched_graph *g, const dp_sched_costs *c, double *bw, dp_err **err) {
  uint32_t n = g->ndevs;
  for (uint32_t a = 0; a < n; a++)
    for (uint32_t b = 0; b < n; b++)
      if (bandwidth(g, c, a, b, &bw[(size_t)a * n + b], err) < 0) return -1;
  return 0;
}

int dp_sched_durations(const dp_sched_graph *g, const dp_sched_costs *c, double *dur, dp_err **err) {
  size_t nd = g->ndevs;
  double *bw = dp_calloc(nd * nd + 1, sizeof *bw); /* 0: not asked yet (the pairs copies use) */
  if (!bw) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  for (uint32_t v = 0; v < g->n; v++) {
    dur[v] = 0;
    if (g->kind[v] == DP_TASK_COPY) {
      double *b = &bw[(size_t)g->src[v] * nd + g->dev[v]];
      if (*b == 0 && bandwidth(g, c, g->src[v], g->dev[v], b, err) < 0) {
        free(bw);
        return -1;
      }
      dur[v] = g->bytes[v] / *b;
    } else if (g->kind[v] == DP_TASK_CALL) {
      dp_vdev *vd = g->devs[g->dev[v]];
      int rc = call_seconds(g, c, g->expr[v], vd, &dur[v], err);
      if (rc == 1)
        dp_err_set(err, call_error(g, g->expr[v], vd, "schedule: the plan runs %s on %s, but the "
                                   "cost model says that device cannot run it", 0, 0));
      if (rc != 0) {
        free(bw);
        return -1;
      }
    }
  }
  free(bw);
  return 0;
}

/* The configuration device (in devs[0 .. nchoice)) of fixed device f: the
   one of the same device type and id. */
static uint32_t choice_of(const dp_sched_graph *g, uint32_t f) {
  if (f < g->nchoice) return f;
  int id = g->devs[f]->virtual_device_id;
  for (uint32_t d = 0; d < g->nchoice; d++)
    if (g->devs[d]->device_type == g->devs[f]->device_type &&
        (g->devs[d]->virtual_device_id == id || id < 0))
      return d;
  return NONE;
}

int dp_sched_cost_matrix(const dp_sched_graph *g, const dp_sched_costs *c, double *cost,
                         dp_err **err) {
  uint32_t K = g->nchoice;
  for (uint32_t v = 0; v < g->n; v++) {
    double *row = cost + (size_t)v * K;
    for (uint32_t d = 0; d < K; d++) row[d] = g->kind[v] == DP_TASK_CALL ? INFINITY : 0;
    if (g->kind[v] != DP_TASK_CALL) continue;
    uint32_t f = g->dev[v], any = 0;
    if (f != NONE) {
      uint32_t d = choice_of(g, f);
      if (d == NONE) {
        dp_err_set(err, call_error(g, g->expr[v], g->devs[f], "schedule: %s is annotated on %s, "
                                   "which is none of the configuration's devices", 0, 0));
        return -1;
      }
      int rc = call_seconds(g, c, g->expr[v], g->devs[f], &row[d], err);
      if (rc < 0) return -1;
      if (rc == 1) {
        dp_err_set(err, call_error(g, g->expr[v], g->devs[f], "schedule: %s is annotated on %s, "
                                   "but the cost model says that device cannot run it", 0, 0));
        return -1;
      }
      continue;
    }
    for (uint32_t d = 0; d < K; d++) {
      int rc = call_seconds(g, c, g->expr[v], g->devs[d], &row[d], err);
      if (rc < 0) return -1;
      if (rc == 1) row[d] = INFINITY;
      else any++;
    }
    if (!any) {
      char *dsc = dp__describe(g->mod->ctx, g->expr[v]);
      dp_err_set(err, dp_err_at(g->mod->ctx, DP_ERR_VALUE, g->expr[v]->span, "schedule: the cost "
                                "model says no device of the configuration can run %s",
                                dsc ? dsc : "a call"));
      free(dsc);
      return -1;
    }
  }
  return 0;
}
