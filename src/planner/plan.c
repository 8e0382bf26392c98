/*
 * PlanDevices: the phases in order (plan.h, planner.md), composed once.
 *
 * plan() below is the whole pipeline, as QBE's main.c shows its own: the
 * module is numbered once (index.c); phases 0 and 0b hand the same index
 * on when they change nothing (the usual case), and a new module's when
 * they insert something; analysis takes the index into the domains, which
 * placement by cost and defaulting complete and capture writes back. The
 * options are branches of that one composition: which phase 0b, whether
 * analysis stops at the first conflict, whether placement by cost runs.
 * A conflict comes back from a phase as data; only here (and in the
 * planner's state, domains_api.c, for a script's changes) is explain.c
 * asked to word it. Every phase drops what it was given on an error, so
 * nothing is left behind.
 *
 * The public phases one by one (dp_plan_rewrite, ...) are each one step
 * of it on a module of its own, for scripts that change the domains
 * between analysis and capture; PartitionByVirtualDevice (partition.c)
 * reads its devices from plan()'s phases 0 to 2.
 *
 * The latency placement (placement = "latency"; min_bytes with soft
 * annotations or memory budgets) is one more branch: its search
 * (latency.c) proposes placements and judges each by the plan this
 * composition makes of it, handed to it as dp_plan_devices_opts.
 */
#include <stdlib.h>
#include "planner.h"
#include "devplan/print.h"

void dp_conflicts_clear(dp_conflicts *c) {
  for (uint32_t i = 0; i < c->n; i++) dp_err_free(c->v[i]);
  free(c->v);
  *c = (dp_conflicts){0};
}

/* rc (0, 1: a conflict, -1) as 0 or -1 + error: a conflict worded. */
static int worded(dp_domains *s, int rc, dp_err **err) {
  if (rc > 0) dp_err_set(err, dp__conflict_error(s));
  return rc ? -1 : 0;
}

/* Placement by cost on the domains of s, from analysis' flows (their
   memory taken by it): its decisions kept in s (for explanations and
   replays; lean: capture alone reads s, and no decision is kept), and
   logged. */
static int place(dp_domains *s, dp__flows *flows, const dp_place_hooks *h, int lean, dp_err **err) {
  if (dp__place(&s->uf, flows, h, lean, &s->place, err) < 0) return -1;
  if (dp__log_add(&s->log, (dp__op_log){LOG_PLACE, R_PLACEMENT, NULL, NULL, 0}) == 0) return 0;
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return -1;
}

/* Phase 2 for domains capture alone reads (below). */
static int default_for_capture(dp_domains *s, dp_err **err);

/* The index of m; with `soft` (min_bytes, whose soft annotations are
   not counted yet), NULL and *soft = 1 without an error where m has any:
   the latency search plans it (dp__placed_by_search), the index's walk
   telling so instead of a walk of its own over the module. */
static dp__index *index_of(dp_module *m, const dp_config *cfg, int *soft, dp_err **err) {
  dp_err *e = NULL;
  dp__index *ix = dp__index_new(m, cfg, &e);
  uint32_t found = ix ? ix->nsoft : 0;
  /* (the index failed: the search's answer as if asked first, by the count) */
  if (!ix && soft && dp__soft_count(m, &found, NULL) < 0) found = 0;
  if (soft && found) {
    dp__index_free(ix);
    dp_err_free(e);
    *soft = 1;
    return NULL;
  }
  dp_err_set(err, e);
  return ix;
}

/* Phases 0 to 2 with options: the domains capture writes back. With
   `captured`, capture alone reads them (then they go): phase 2 is skipped
   where it would change no device (default.c). soft: as index_of's. */
static dp_domains *plan(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                        dp_conflicts *all, int captured, int *soft, dp_err **err) {
  int placing = o->placement != DP_PLACE_TVM;
  dp__index *ix = index_of(m, cfg, soft, err);   /* every node numbered, once */
  if (ix) ix = dp__rewrite(ix, err);             /* phase 0: fixed annotations */
  if (ix && placing) ix = dp__conflicts(ix, DP__0B_RELAX, err); /* phase 0b: a place for each copy */
  else if (ix && !o->strict)                     /* phase 0b: conflicting demands */
    ix = dp__conflicts(ix, o->tvm_conflicts ? DP__0B_TVM : DP__0B_ANYWHERE, err);
  if (!ix) return NULL;
  ix->relax = (uint8_t)placing;                  /* (placing reads copies as flows) */
  /* (the walk's smaller spare block waits for capture's new nodes, whose
     pages it is, resident, instead of fresh ones: without consume, where
     the peak is capture's and not the phases' plateau) */
  ix->keep_spare = (uint8_t)(captured && !o->consume);
  dp_domains *s = dp__state_new(ix, err);
  if (!s) return NULL;
  dp__flows flows = {0};
  dp__analysis how = {.collect = o->all_conflicts != 0, .flows = placing ? &flows : NULL};
  int rc = dp__analyze(&s->uf, &how, err);      /* phase 1: the domains */
  if (rc == 0) dp__index_drop_map(ix);           /* (the phases after it go by id) */
  if (rc > 0) rc = worded(s, rc, err);           /* the first conflict, worded */
  else if (rc == 0 && how.nconf) rc = dp__conflict_errors(s, all, err); /* every one */
  else if (rc == 0 && placing) rc = place(s, &flows, o->hooks, captured, err); /* placement by cost */
  free(flows.v);
  if (rc == 0 && captured) {                     /* (only explanations and replays read the */
    dp__place_free(s->place);                    /* placement, and a lean one replays nothing: */
    s->place = NULL;                             /* defaulting's and capture's peaks are lower without) */
  }
  if (rc == 0) rc = captured ? default_for_capture(s, err) : dp_plan_default(s, err); /* phase 2 */
  if (rc < 0) {
    dp_release(s);
    return NULL;
  }
  dp__domains_trim(&s->uf);                      /* (analysis' room is not kept) */
  return s;
}

/* The latency placement (latency.c): its search proposes placements and
   judges each by its plan, which this composition makes (handed to it as
   dp_plan_devices_opts); the answer is planned once more here for its
   domains, from what it was planned from, without the budgets it already
   kept. placement = "latency", and min_bytes with soft annotations or
   memory budgets, go this way. */
int dp_plan_latency(dp_module *m, const dp_config *cfg, const dp_latency_opts *o, dp_latency_result *out,
                    dp_err **err) {
  return dp__latency(m, cfg, o, dp_plan_devices_opts, out, err);
}

static dp_module *searched(dp_module *m, const dp_config *cfg, const dp_plan_opts *o, dp_conflicts *all,
                           dp_err **err) {
  dp_latency_result r;
  dp_plan_opts kept = *o; /* (the search plans m many times: it is not given up) */
  kept.consume = 0;
  if (dp__latency_of_plan(m, cfg, &kept, all, dp_plan_devices_opts, &r, err) < 0) return NULL;
  dp_module *out = dp_retain(r.planned);
  dp_latency_result_clear(&r);
  return out;
}

static dp_domains *search_domains(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                                  dp_conflicts *all, int captured, dp_err **err) {
  dp_latency_result r;
  if (dp__latency_of_plan(m, cfg, o, all, dp_plan_devices_opts, &r, err) < 0) return NULL;
  dp_plan_opts by = {.placement = r.from_placement};
  dp_config *plain = cfg->nmemory ? dp_config_with_memory(cfg, NULL, 0, err) : dp_retain((dp_config *)cfg);
  dp_domains *s = plain ? plan(r.from, plain, &by, all, captured, NULL, err) : NULL;
  dp_release(plain);
  dp_latency_result_clear(&r);
  return s;
}

/* dp__placed_by_search's answer for m (latency, soft annotations,
   budgets), or SOFT_BY_INDEX: min_bytes without budgets, whose answer is
   whether m has soft annotations, which plan()'s index counts (a walk of
   the module fewer). */
#define SOFT_BY_INDEX 2
static int by_search(dp_module *m, const dp_config *cfg, const dp_plan_opts *o, dp_err **err) {
  if (o && o->placement == DP_PLACE_MIN_BYTES && !cfg->nmemory) return SOFT_BY_INDEX;
  return dp__placed_by_search(m, cfg, o, err);
}

/* search: by_search's answer for m (the caller that asked it already
   passes it on). *soft = 1 (NULL, no error): SOFT_BY_INDEX, and m has
   soft annotations: the search's, which the caller asks. */
static dp_domains *domains(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                           dp_conflicts *all, int captured, int search, int *soft, dp_err **err) {
  static const dp_plan_opts tvm = {0};
  if (all) *all = (dp_conflicts){0};
  *soft = 0;
  if (search == 1) return search_domains(m, cfg, o, all, captured, err);
  if (search < 0) return NULL;
  return plan(m, cfg, o ? o : &tvm, all, captured, search == SOFT_BY_INDEX ? soft : NULL, err);
}

dp_domains *dp_plan_domains(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                            dp_conflicts *all, dp_err **err) {
  int soft;
  dp_domains *s = domains(m, cfg, o, all, 0, by_search(m, cfg, o, err), &soft, err);
  return soft ? search_domains(m, cfg, o, all, 0, err) : s;
}

/* Placement by cost decides devices; where the module names memory scopes
   TVM's rules then decide them: its plan is planned once more by TVM's
   rules, which keep every copy it made between devices and fill in the
   memory scopes left open (a copy whose two ends they join goes). To the
   optimiser a device with its scope open and the same device in a scope
   are two devices, to TVM's rules one: without this last step a plan
   could change when planned again. */
static dp_module *scopes_by_tvm(dp_module *planned, const dp_config *cfg, dp_err **err) {
  dp_module *out = planned ? dp_plan_devices(planned, cfg, err) : NULL;
  dp_release(planned);
  return out;
}

/* One round: phases 0 to 2, capture (phase 3), and on a module with
   memory scopes TVM's rules' scopes. consume: the caller gave m up (the
   first round only: a later one's input is compared with its plan).
   search: by_search's answer for m, -2 when not yet asked (a later round
   plans another module). NULL and *soft = 1: as domains'. */
static dp_module *plan_round(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                             dp_conflicts *all, int consume, int search, int *soft, int *scoped,
                             dp_err **err) {
  if (search == -2) search = dp__placed_by_search(m, cfg, o, err);
  dp_domains *s = domains(m, cfg, o, all, 1, search, soft, err);
  dp_module *out = s ? dp__capture_last(&s->uf, consume, err) : NULL; /* (then s goes) */
  *scoped = out && o && o->placement != DP_PLACE_TVM && dp__dev_any_scope(s->uf.dev);
  dp_release(s);
  return *scoped ? scopes_by_tvm(out, cfg, err) : out;
}

dp_module *dp_plan_devices_opts(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                                dp_conflicts *all, dp_err **err) {
  if (all) *all = (dp_conflicts){0};
  int search = by_search(m, cfg, o, err), soft, scoped;
  if (search == 1 || search < 0) return search < 0 ? NULL : searched(m, cfg, o, all, err);
  dp_module *out = plan_round(m, cfg, o, all, o && o->consume, search, &soft, &scoped, err);
  if (soft) return searched(m, cfg, o, all, err);
  /* With memory scopes the optimiser may also meet that plan differently
     (a copy TVM's rules wrote out is a new place for one, a primfn
     argument's scope is now written): it is planned again until it no
     longer changes, so that placement by cost plans its own output to
     itself. Generated programs settle in one more round; a few more are
     allowed, and the last plan (valid, verified like any) stands. */
  for (int round = 0; out && scoped && round < 4; round++) {
    dp_module *again = plan_round(out, cfg, o, NULL, 0, -2, &soft, &scoped, err);
    if (!again) {
      dp_release(out);
      return NULL;
    }
    int same = dp_module_equal(again, out, NULL);
    dp_release(out);
    out = again;
    if (same) break;
  }
  return out;
}

dp_module *dp_plan_devices(dp_module *m, const dp_config *cfg, dp_err **err) {
  return dp_plan_devices_opts(m, cfg, NULL, NULL, err);
}

/* ---- the phases one by one (plan.h), each on a module of its own ---- */

static dp_module *one(dp_module *m, const dp_config *cfg, dp__index *(*phase)(dp__index *, dp_err **),
                      dp_err **err) {
  dp__index *ix = dp__index_new(m, cfg, err);
  if (ix) ix = phase(ix, err);
  dp_module *out = ix ? dp_retain(ix->mod) : NULL;
  dp__index_free(ix);
  return out;
}

dp_module *dp_plan_rewrite(dp_module *m, const dp_config *cfg, dp_err **err) {
  return one(m, cfg, dp__rewrite, err);
}

static dp__index *conflicts(dp__index *ix, dp_err **err) {
  return dp__conflicts(ix, DP__0B_ANYWHERE, err);
}

dp_module *dp_plan_conflicts(dp_module *m, const dp_config *cfg, dp_err **err) {
  return one(m, cfg, conflicts, err);
}

dp_domains *dp_plan_analyze(dp_module *m, const dp_config *cfg, dp_err **err) {
  dp__index *ix = dp__index_new(m, cfg, err);
  dp_domains *s = ix ? dp__state_new(ix, err) : NULL;
  if (!s) return NULL;
  dp__analysis how = {0};
  int rc = dp__analyze(&s->uf, &how, err);
  if (rc == 0) dp__index_drop_map(ix);
  if (worded(s, rc, err) < 0) {
    dp_release(s);
    return NULL;
  }
  return s;
}

static int logged_default(dp_domains *s, int (*phase)(dp__domains *, dp_err **), dp_err **err) {
  if (dp__log_add(&s->log, (dp__op_log){LOG_DEFAULT, 0, NULL, NULL, 0}) < 0) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  return worded(s, phase(&s->uf, err), err);
}

int dp_plan_default(dp_domains *s, dp_err **err) {
  return logged_default(s, dp__default, err);
}

static int default_for_capture(dp_domains *s, dp_err **err) {
  return logged_default(s, dp__default_for_capture, err);
}

dp_module *dp_plan_capture(dp_domains *s, dp_err **err) {
  return dp__capture(&s->uf, err);
}
