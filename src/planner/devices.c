/*
 * The device table: the virtual devices a plan names, each once, by a
 * small index (0: the unconstrained device). Every device that enters
 * planning is canonicalised through the configuration first (planner.md),
 * and join and default are asked of indices. A program of a million nodes
 * names a handful of devices, so each question keeps its last answers:
 * canonicalising costs a lookup and an intern, a join or default an intern.
 */
#include <stdlib.h>
#include "planner.h"

int dp__devices_init(dp__devices *t, dp_ctx *ctx, const dp_config *cfg, dp_err **err) {
  *t = (dp__devices){.ctx = ctx, .cfg = dp_retain((dp_config *)cfg)};
  dp_vdev *free_vd = dp_vdev_unconstrained(ctx);
  if (!free_vd || dp_grow((void **)&t->v, &t->cap, 8, sizeof *t->v) < 0) {
    dp_release(free_vd);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  t->v[t->n++] = free_vd;
  t->host = dp__dev_index(t, cfg->host_vdev);
  t->dflt = dp__dev_index(t, cfg->default_vdev);
  if (t->oom) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  return 0;
}

void dp__devices_free(dp__devices *t) {
  for (uint32_t i = 0; i < t->n; i++) dp_release(t->v[i]);
  for (uint32_t i = 0; i < t->nc; i++) dp_release(t->ckey[i]);
  dp_release(t->cfg);
  free(t->v);
  *t = (dp__devices){0};
}

uint32_t dp__dev_index(dp__devices *t, dp_vdev *v) {
  if (!v) return 0;
  for (uint32_t i = t->n; i-- > 0;)
    if (t->v[i] == v) return i;
  if (dp_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v) < 0) {
    t->oom = 1;
    return 0;
  }
  t->v[t->n] = dp_retain(v);
  return t->n++;
}

uint32_t dp__dev_canon(dp__devices *t, dp_vdev *v, dp_err **err) {
  if (!v || dp_vdev_is_fully_unconstrained(v)) return 0;
  for (uint32_t k = 0; k < t->nc; k++)
    if (t->ckey[k] == v) return t->cval[k];
  dp_err *e = NULL;
  dp_vdev *c = dp_config_canonical(t->cfg, v, &e);
  if (!c) {
    /* callers that pass no err treat a failure as "no device": running out
       of memory must not pass for that (the phases fail on t->oom) */
    if (!e || e->code == DP_ERR_MEMORY) t->oom = 1;
    dp_err_set(err, e);
    return DP__NONE_ID;
  }
  uint32_t i = dp__dev_index(t, c);
  dp_release(c);
  if (t->nc < 8 && !t->oom) { /* (the key is held, so its address is not reused) */
    t->ckey[t->nc] = dp_retain(v);
    t->cval[t->nc++] = i;
  }
  return i;
}

/* A small table of (a, b) -> answer, replaced round robin. */
static uint32_t *recall(uint32_t (*tab)[3], uint32_t n, uint32_t a, uint32_t b) {
  for (uint32_t k = 0; k < n; k++)
    if (tab[k][0] == a && tab[k][1] == b) return &tab[k][2];
  return NULL;
}

static void keep(uint32_t (*tab)[3], uint32_t *n, uint32_t a, uint32_t b, uint32_t r) {
  uint32_t k = *n < 8 ? (*n)++ : (a * 31 + b) % 8;
  tab[k][0] = a;
  tab[k][1] = b;
  tab[k][2] = r;
}

/* The canonical form of a device a join or default made (new reference
   v consumed): through the configuration where it has one. */
static uint32_t intern_made(dp__devices *t, dp_vdev *v) {
  dp_vdev *c = dp_config_canonical(t->cfg, v, NULL);
  uint32_t i = dp__dev_index(t, c ? c : v);
  dp_release(c);
  dp_release(v);
  return i;
}

uint32_t dp__dev_join(dp__devices *t, uint32_t a, uint32_t b) {
  if (a == b || b == 0) return a;
  if (a == 0) return b;
  uint32_t *r = recall(t->djoin, t->njoin, a, b);
  if (r) return *r;
  dp_vdev *j = dp_vdev_join(t->v[a], t->v[b]);
  uint32_t i = j ? intern_made(t, j) : DP__NONE_ID;
  if (!t->oom) keep(t->djoin, &t->njoin, a, b, i);
  return i;
}

uint32_t dp__dev_default(dp__devices *t, uint32_t cur, uint32_t by) {
  if (cur == 0 || by == 0) return cur ? cur : by;
  uint32_t *r = recall(t->ddflt, t->ndflt, cur, by);
  if (r) return *r;
  dp_vdev *v = dp_vdev_default(t->v[cur], t->v[by]);
  if (!v) {
    t->oom = 1;
    return cur;
  }
  uint32_t i = intern_made(t, v);
  if (!t->oom) keep(t->ddflt, &t->ndflt, cur, by, i);
  return i;
}

int dp__dev_any_scope(const dp__devices *t) {
  for (uint32_t i = 1; i < t->n; i++)
    if (t->v[i]->memory_scope[0]) return 1;
  return 0;
}
