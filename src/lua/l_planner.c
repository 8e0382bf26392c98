/*
 * Lua binding of the planner (plan.h): dp.passes.PlanDevices(config), the
 * phases one by one under dp.planner (rewrite, conflicts, analyze, default,
 * capture), the domains userdata (lookup, unify, constrain, set_default,
 * fully_constrained, explain), dp.planner.explain / virtual_devices and
 * dp.planner.verify.
 */
#include <stdio.h>
#include <string.h>
#include "l_init.h"

#define DOMAINS_META "devplan.Domains"

static dp_config *check_config(lua_State *L, int idx) {
  return dp__lua_check(L, idx, DP_OBJ_CONFIG);
}

/* The configuration at idx, or (nil) one with llvm and cuda targets and
   default device type cpu, for quick exploration. New reference. */
static dp_config *opt_config(lua_State *L, int idx) {
  if (!lua_isnoneornil(L, idx)) return dp_retain(check_config(L, idx));
  dp_ctx *ctx = dp__lua_ctx(L);
  dp_err *err = NULL;
  dp_target *t[2] = {dp_target_parse(ctx, "llvm", &err), NULL};
  if (t[0]) t[1] = dp_target_parse(ctx, "cuda", &err);
  dp_config *c = t[1] ? dp_config_make(ctx, t, 2, NULL, DP_DEV_CPU, &err) : NULL;
  dp_release(t[0]);
  dp_release(t[1]);
  if (!c) dp__lua_error(L, err);
  return c;
}

static dp_domains *check_domains(lua_State *L, int idx) {
  return dp__lua_check(L, idx, dp_domains_objtype());
}

/* dp.planner.default(domains) or (mod, domains): the sketch's spelling. */
static int domains_arg(lua_State *L) {
  return dp__lua_test(L, 1, dp_domains_objtype()) ? 1 : 2;
}

/* What a phase made, pushed, or its error raised. */
static int push_made(lua_State *L, void *made, dp_err *err) {
  if (!made) return dp__lua_error(L, err);
  dp__lua_push_owned(L, made);
  return 1;
}

/* planner.rewrite / conflicts (mod [, config]): a phase that makes a module. */
static int module_phase(lua_State *L, dp_module *(*phase)(dp_module *, const dp_config *, dp_err **)) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = opt_config(L, 2);
  dp_err *err = NULL;
  dp_module *r = phase(m, cfg, &err);
  dp_release(cfg);
  return push_made(L, r, err);
}

static int l_rewrite(lua_State *L) { return module_phase(L, dp_plan_rewrite); }
static int l_conflicts(lua_State *L) { return module_phase(L, dp_plan_conflicts); }

static int l_analyze(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = opt_config(L, 2);
  dp_err *err = NULL;
  dp_domains *d = dp_plan_analyze(m, cfg, &err);
  dp_release(cfg);
  return push_made(L, d, err);
}

static int l_default(lua_State *L) {
  dp_domains *d = check_domains(L, domains_arg(L));
  dp_err *err = NULL;
  if (dp_plan_default(d, &err) < 0) return dp__lua_error(L, err);
  lua_pushvalue(L, domains_arg(L));
  return 1;
}

static int l_capture(lua_State *L) {
  dp_domains *d = check_domains(L, domains_arg(L));
  dp_err *err = NULL;
  dp_module *m = dp_plan_capture(d, &err);
  return push_made(L, m, err);
}

/* planner.plan(mod, config): every phase in order (dp_plan_devices). */
static int l_plan(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = check_config(L, 2);
  dp_err *err = NULL;
  dp_module *r = dp_plan_devices(m, cfg, &err);
  return push_made(L, r, err);
}

/* ---- domains methods ---- */

static int d_lookup(lua_State *L) {
  dp_domains *d = check_domains(L, 1);
  dp_expr *e = dp__lua_check(L, 2, DP_OBJ_EXPR);
  dp_err *err = NULL;
  dp_vdev *v = dp_domains_lookup(d, e, &err);
  if (!v) return dp__lua_error(L, err);
  dp__lua_push_owned(L, v);
  return 1;
}

static int d_unify(lua_State *L) {
  dp_domains *d = check_domains(L, 1);
  dp_err *err = NULL;
  if (dp_domains_unify(d, dp__lua_check(L, 2, DP_OBJ_EXPR), dp__lua_check(L, 3, DP_OBJ_EXPR), &err) < 0)
    return dp__lua_error(L, err);
  lua_settop(L, 1);
  return 1;
}

static int d_constrain(lua_State *L) {
  dp_domains *d = check_domains(L, 1);
  dp_err *err = NULL;
  if (dp_domains_constrain(d, dp__lua_check(L, 2, DP_OBJ_EXPR), dp__lua_check(L, 3, DP_OBJ_VDEV), &err) < 0)
    return dp__lua_error(L, err);
  lua_settop(L, 1);
  return 1;
}

static int d_set_default(lua_State *L) {
  dp_domains *d = check_domains(L, 1);
  dp_err *err = NULL;
  if (dp_domains_set_default(d, dp__lua_check(L, 2, DP_OBJ_EXPR), dp__lua_check(L, 3, DP_OBJ_VDEV),
                             &err) < 0)
    return dp__lua_error(L, err);
  lua_settop(L, 1);
  return 1;
}

static int d_fully_constrained(lua_State *L) {
  dp_domains *d = check_domains(L, 1);
  lua_pushboolean(L, dp_domains_fully_constrained(d, dp__lua_check(L, 2, DP_OBJ_EXPR)));
  return 1;
}

/* Fields line, col and source of the table at the top, when span has a line. */
static void set_position(lua_State *L, dp_ctx *ctx, dp_span span) {
  if (!span.line) return;
  lua_pushinteger(L, span.line);
  lua_setfield(L, -2, "line");
  lua_pushinteger(L, span.col);
  lua_setfield(L, -2, "col");
  if (span.source) {
    lua_pushstring(L, dp_ctx_source_name(ctx, span.source));
    lua_setfield(L, -2, "source");
  }
}

/* ---- reasons an annotation carries (dp.planner.reason) ---- */

/* The registry's table of reasons: [1] annotation -> text, [2] module ->
   list of its annotations (which keeps them, as Lua values, as long as the
   module; [1] forgets an annotation nothing keeps). Both weak-keyed. */
static const char REASONS_KEY[] = "devplan.planner.reasons";

static void push_reasons(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, REASONS_KEY) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_createtable(L, 2, 0);
  for (int i = 1; i <= 2; i++) {
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_rawseti(L, -2, i);
  }
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, REASONS_KEY);
}

/* dp.planner.reason(mod, annotation, text): the annotation (an expression
   of mod) was written for this reason; explanations whose constraint it is
   say so (field reason). A pass that decides devices (AnnotateVirtualDevices'
   candidates) records its decisions with it. */
static int l_reason(lua_State *L) {
  dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp__lua_check(L, 2, DP_OBJ_EXPR);
  luaL_checkstring(L, 3);
  push_reasons(L);
  lua_rawgeti(L, -1, 1);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_rawgeti(L, -1, 2);
  if (lua_pushvalue(L, 1), lua_rawget(L, -2) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  lua_pushvalue(L, 2);
  lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
  lua_pop(L, 3);
  return 0;
}

/* The reason recorded for expression e, pushed (nil when none). */
static void push_reason_of(lua_State *L, dp_expr *e) {
  push_reasons(L);
  lua_rawgeti(L, -1, 1);
  dp__lua_push(L, e);
  lua_rawget(L, -2);
  lua_replace(L, -3);
  lua_pop(L, 1);
}

static void push_explain(lua_State *L, dp_domains *d, dp_explain *x) {
  lua_createtable(L, 0, 6);
  dp__lua_push(L, x->vdev);
  lua_setfield(L, -2, "device");
  lua_pushstring(L, x->rule);
  lua_setfield(L, -2, "rule");
  if (x->why) {
    dp__lua_push(L, x->why);
    lua_setfield(L, -2, "constraint");
    push_reason_of(L, x->why);
  } else {
    lua_pushnil(L);
  }
  if (lua_isstring(L, -1)) { /* the text says the annotation's reason too */
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "reason");
    lua_pushfstring(L, "%s; %s", x->text, lua_tostring(L, -1));
    lua_setfield(L, -3, "text");
    lua_pop(L, 1);
  } else {
    lua_pop(L, 1);
    lua_pushstring(L, x->text);
    lua_setfield(L, -2, "text");
  }
  set_position(L, dp_domains_module(d)->ctx, x->span);
  lua_createtable(L, (int)x->nsteps, 0);
  for (uint32_t i = 0; i < x->nsteps; i++) {
    lua_createtable(L, 0, 3);
    lua_pushstring(L, x->steps[i].msg);
    lua_setfield(L, -2, "message");
    if (x->steps[i].span.line) {
      lua_pushinteger(L, x->steps[i].span.line);
      lua_setfield(L, -2, "line");
      lua_pushinteger(L, x->steps[i].span.col);
      lua_setfield(L, -2, "col");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "steps");
}

static int d_explain(lua_State *L) {
  dp_domains *d = check_domains(L, 1);
  dp_err *err = NULL;
  dp_explain *x = dp_domains_explain(d, dp__lua_check(L, 2, DP_OBJ_EXPR), &err);
  if (!x) return dp__lua_error(L, err);
  push_explain(L, d, x);
  dp_explain_free(x);
  return 1;
}

/* d:placements() -> {{expr =, device =, text =}, ...}: placement by cost's
   decisions (dp_domains_placements). */
static int push_placement(void *ud, dp_expr *e, dp_vdev *vd, const char *text) {
  lua_State *L = ud;
  lua_createtable(L, 0, 3);
  dp__lua_push(L, e);
  lua_setfield(L, -2, "expr");
  dp__lua_push(L, vd);
  lua_setfield(L, -2, "device");
  lua_pushstring(L, text);
  lua_setfield(L, -2, "text");
  lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
  return 0;
}

static int d_placements(lua_State *L) {
  dp_domains *d = check_domains(L, 1);
  dp_err *err = NULL;
  lua_newtable(L);
  if (dp_domains_placements(d, push_placement, L, &err) < 0) return dp__lua_error(L, err);
  return 1;
}

static int d_index(lua_State *L) {
  dp_domains *d = check_domains(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "module") == 0) {
    dp__lua_push(L, dp_domains_module(d));
    return 1;
  }
  if (strcmp(k, "config") == 0) {
    dp__lua_push(L, (void *)dp_domains_config(d));
    return 1;
  }
  luaL_getmetatable(L, DOMAINS_META);
  lua_getfield(L, -1, "methods");
  lua_getfield(L, -1, k);
  return 1;
}

static int d_tostring(lua_State *L) {
  dp_domains *d = check_domains(L, 1);
  lua_pushfstring(L, "devplan.Domains(%d functions)", (int)dp_domains_module(d)->nfuncs);
  return 1;
}

/* ---- explain / virtual_devices on a module ---- */

/* Phases 0-2 of mod: the domains a question about mod is answered from. */
/* (l_place.c: the options of PlanDevices at opts_idx) */
dp_domains *dp__lua_planned_domains(lua_State *L, dp_module *m, dp_config *cfg, int opts_idx);

static dp_domains *planned_domains(lua_State *L, dp_module *m, int cfg_idx) {
  lua_settop(L, cfg_idx + 1); /* (the options' slot, nil when not given) */
  dp_config *cfg = opt_config(L, cfg_idx);
  /* (the configuration stays on the stack: the options may raise) */
  dp__lua_push_owned(L, cfg);
  return dp__lua_planned_domains(L, m, cfg, cfg_idx + 1);
}

static int l_explain(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_expr *e = dp__lua_check(L, 2, DP_OBJ_EXPR);
  dp_domains *d = planned_domains(L, m, 3);
  dp_err *err = NULL;
  dp_explain *x = dp_domains_explain(d, e, &err);
  if (!x) {
    dp_release(d);
    return dp__lua_error(L, err);
  }
  push_explain(L, d, x);
  dp_explain_free(x);
  dp_release(d);
  return 1;
}

static int each_vd(void *ud, const char *global, dp_expr *e, dp_vdev *vd) {
  lua_State *L = ud;
  (void)global;
  dp__lua_push(L, e);
  dp__lua_push(L, vd);
  lua_rawset(L, -3);
  return 0;
}

static int l_virtual_devices(lua_State *L) {
  dp_domains *d = dp__lua_test(L, 1, dp_domains_objtype());
  if (d) dp_retain(d);
  else d = planned_domains(L, dp__lua_check(L, 1, DP_OBJ_MODULE), 2);
  lua_newtable(L);
  dp_err *err = NULL;
  if (dp_domains_each(d, each_vd, L, &err) < 0) {
    dp_release(d);
    return dp__lua_error(L, err);
  }
  dp_release(d);
  return 1;
}

/* report_scan(planned, config?) -> scan: what dp.planner.report counts
   (report.h, src/planner/report.c), for lua/devplan/report.lua to word:
     scan:devices()  {{vd =, calls =, bytes =, unknown =, too_large =, entered =}, ...}
                     every device in the order met (entered: its rank in the
                     report's list; nil when it is only a copy's end)
     scan:totals()   {calls =, copies =, bytes_copied =, ...}
     scan:count()    the number of copies
     scan:replanned()  true when the devices came from planning the module
                     again (report.h: a module whose annotations do not say
                     them all), false when read from the module itself
     scan:copies(names)       the copies as the report's rows (names: each
                              device's name, in the order of devices())
     scan:copies_text(names, before?, after?)  their lines of the text
                              report, joined by "\n", between before and after
     scan:copies_json(names, before?, after?)  their JSON array as dkjson
                              writes it at the report's depth, between before
                              and after, or nil when a string needs escaping
                              (the caller encodes the rows then)
   A report lists one copy per value and device it crosses to, often half
   the calls of a module: the rows are made only when a script reads them. */
#define REPORT_SCAN "devplan.ReportScan"

typedef struct lscan {
  dp_report_data r;
  dp_domains *d;   /* the devices are borrowed from it */
  dp_module *m;    /* the copies from it */
  int ok;
} lscan;

static int scan_gc(lua_State *L) {
  lscan *u = luaL_checkudata(L, 1, REPORT_SCAN);
  if (u->ok) dp_report_data_clear(&u->r);
  u->ok = 0;
  dp_release(u->d);
  dp_release(u->m);
  u->d = NULL;
  u->m = NULL;
  return 0;
}

static lscan *check_scan(lua_State *L) {
  lscan *u = luaL_checkudata(L, 1, REPORT_SCAN);
  if (!u->ok) luaL_error(L, "a report scan that failed");
  return u;
}

static void set_int(lua_State *L, const char *k, int64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

static int scan_devices(lua_State *L) {
  lscan *u = check_scan(L);
  lua_createtable(L, (int)u->r.ndev, 0);
  for (uint32_t i = 0; i < u->r.ndev; i++) {
    const dp_report_dev *v = &u->r.dev[i];
    lua_createtable(L, 0, 6);
    dp__lua_push(L, v->vd);
    lua_setfield(L, -2, "vd");
    set_int(L, "calls", v->calls);
    set_int(L, "bytes", v->bytes);
    set_int(L, "unknown", v->unknown);
    set_int(L, "too_large", v->too_large);
    if (v->entered != UINT32_MAX) set_int(L, "entered", (int64_t)v->entered + 1);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static int scan_totals(lua_State *L) {
  lscan *u = check_scan(L);
  lua_createtable(L, 0, 6);
  set_int(L, "calls", u->r.calls);
  set_int(L, "copies", u->r.copies_total);
  set_int(L, "bytes_copied", u->r.bytes_copied);
  set_int(L, "bytes_resident", u->r.bytes_resident);
  set_int(L, "copies_too_large", u->r.copies_too_large);
  set_int(L, "too_large", u->r.too_large);
  return 1;
}

/* scan:replanned() -> whether the devices came from planning the module
   again (its domains) rather than from its own annotations */
static int scan_replanned(lua_State *L) {
  lua_pushboolean(L, check_scan(L)->d != NULL);
  return 1;
}

static int scan_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_scan(L)->r.ncopies);
  return 1;
}

/* What the report says of one copy (the row's fields). */
typedef struct crow {
  const char *fn, *name, *value, *src, *dst, *type, *size, *source;
  int64_t bytes;
  int has_bytes, has_span;
  uint32_t line, col;
} crow;

/* What the rows of one call share: the stack slots of the devices' names
   (arg 2) and of a table caching each checked type's text (types are
   interned), and the last type, source and devices met with their text (a
   module's copies are of a few types between a few devices: looking each
   up again per copy was a third of the text report). */
typedef struct rowctx {
  lua_State *L;
  lscan *u;
  int types;
  const dp_ctx *ctx;
  const dp_type *type;     /* the last type met: its text, bytes and kind */
  const char *type_text;
  int64_t bytes;
  int kind;
  uint32_t source;         /* the last source met (0: none yet) and its name */
  const char *source_name;
  uint32_t dev[2];         /* the last source and destination device met, and their names */
  const char *dev_name[2];
} rowctx;

static void rowctx_init(lua_State *L, lscan *u, int types, rowctx *x) {
  memset(x, 0, sizeof *x);
  x->L = L;
  x->u = u;
  x->types = types;
  x->ctx = dp__lua_ctx(L);
  x->dev[0] = x->dev[1] = UINT32_MAX;
}

/* The name of device i (end: 0 source, 1 destination) as the names table says. */
static const char *dev_name(rowctx *x, uint32_t i, int end) {
  if (i != UINT32_MAX && i == x->dev[end]) return x->dev_name[end];
  lua_State *L = x->L;
  if (i == UINT32_MAX || lua_rawgeti(L, 2, (lua_Integer)i + 1) != LUA_TSTRING)
    luaL_error(L, end ? "report: no name for a copy's destination device" : "report: no name for a copy's source device");
  x->dev[end] = i;
  x->dev_name[end] = lua_tostring(L, -1);
  lua_pop(L, 1); /* (the names table keeps the string) */
  return x->dev_name[end];
}

/* The text, bytes and kind of t (not NULL), into x's last type. */
static void type_of(rowctx *x, const dp_type *t) {
  if (t == x->type) return;
  lua_State *L = x->L;
  if (lua_rawgetp(L, x->types, t) == LUA_TNIL) {
    lua_pop(L, 1);
    dp__lua_push_cstr(L, dp_type_str(t));
    lua_pushvalue(L, -1);
    lua_rawsetp(L, x->types, t);
  }
  x->type_text = lua_tostring(L, -1);
  lua_pop(L, 1); /* (the types table keeps it) */
  x->bytes = 0;
  x->kind = dp_type_bytes(t, &x->bytes);
  if (x->kind < 0) dp__lua_oom(L);
  x->type = t;
}

static void row_of(rowctx *x, uint32_t i, crow *w) {
  const dp_report_copy *c = &x->u->r.copies[i];
  /* (the copy's type and position as the scan read them: the node itself
     is long out of the cache in a large module) */
  memset(w, 0, sizeof *w);
  w->fn = c->fn ? c->fn : c->value_fn;
  w->name = c->name;
  w->value = c->value_name ? c->value_name : c->name;
  w->src = dev_name(x, c->src_dev, 0);
  w->dst = dev_name(x, c->dst_dev, 1);
  int k = DP_BYTES_UNKNOWN;
  w->type = "nil";
  if (c->type) {
    type_of(x, c->type);
    w->type = x->type_text;
    k = x->kind;
  }
  if (k == DP_BYTES_KNOWN) w->bytes = x->bytes, w->has_bytes = 1;
  else w->size = k == DP_BYTES_UNKNOWN ? "unknown" : "too large";
  if (c->span.line) {
    w->has_span = 1;
    w->line = c->span.line;
    w->col = c->span.col;
    if (!x->source || x->source != c->span.source) {
      x->source = c->span.source;
      x->source_name = dp_ctx_source_name(x->ctx, c->span.source);
    }
    w->source = x->source_name;
  }
}

static int scan_copies(lua_State *L) {
  lscan *u = check_scan(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_newtable(L); /* 3: types */
  rowctx x;
  rowctx_init(L, u, 3, &x);
  lua_createtable(L, (int)u->r.ncopies, 0);
  for (uint32_t i = 0; i < u->r.ncopies; i++) {
    crow w;
    row_of(&x, i, &w);
    lua_createtable(L, 0, 11);
    if (w.fn) set_str(L, "fn", w.fn);
    if (w.name) set_str(L, "name", w.name);
    if (w.value) set_str(L, "value", w.value);
    set_str(L, "src", w.src);
    set_str(L, "dst", w.dst);
    set_str(L, "type", w.type);
    if (w.has_bytes) set_int(L, "bytes", w.bytes);
    else set_str(L, "size", w.size);
    if (w.has_span) {
      set_int(L, "line", w.line);
      set_int(L, "col", w.col);
      if (w.source) set_str(L, "source", w.source);
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* The copies' text and JSON, gathered in a block of their own and added to
   the Lua buffer a block at a time (a dozen pieces per copy: adding each
   to the Lua buffer on its own was most of the report's time). */
typedef struct block {
  lua_State *L;
  dp__lua_sbuf *b;
  char p[1024];
  size_t n;
  int first;    /* (JSON: no comma before the row's first key) */
} block;

static void bflush(block *r) {
  dp__lua_sbuf_add(r->L, r->b, r->p, r->n);
  r->n = 0;
}

/* badd of what does not fit in the block. */
static void bspill(block *r, const char *s, size_t len) {
  bflush(r);
  if (len > sizeof r->p) dp__lua_sbuf_add(r->L, r->b, s, len);
  else {
    memcpy(r->p, s, len);
    r->n = len;
  }
}

/* (inline: most pieces are literals, whose copy the compiler unrolls) */
static inline void badd(block *r, const char *s, size_t len) {
  if (r->n + len > sizeof r->p) {
    bspill(r, s, len);
    return;
  }
  memcpy(r->p + r->n, s, len);
  r->n += len;
}

#define BLIT(r, s) badd((r), (s), sizeof(s) - 1)

static void bstr(block *r, const char *s) { badd(r, s, strlen(s)); }

/* v in decimal, and with a comma between groups of three digits when
   grouped (report.grouped: 1234567 -> "1,234,567"). */
static void bint(block *r, int64_t v, int grouped) {
  char num[32], *q = num + sizeof num;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  int digits = 0;
  do {
    if (grouped && digits && digits % 3 == 0) *--q = ',';
    *--q = (char)('0' + u % 10);
    digits++;
  } while (u /= 10);
  if (v < 0) *--q = '-';
  badd(r, q, (size_t)(num + sizeof num - q));
}

/* The text around the copies (args 3 and 4, optional strings) goes
   before and after them in the one string returned: the report's text
   made once, not again by each concatenation (12 MB at 100,000 branchy
   calls). */
static void get_around(lua_State *L, const char *around[2], size_t len[2]) {
  for (int i = 0; i < 2; i++) around[i] = luaL_optlstring(L, 3 + i, "", &len[i]);
}

static int scan_copies_text(lua_State *L) {
  lscan *u = check_scan(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *around[2];
  size_t alen[2];
  get_around(L, around, alen);
  lua_settop(L, 4);
  lua_newtable(L); /* 5: types */
  rowctx x;
  rowctx_init(L, u, 5, &x);
  block r;
  r.L = L;
  r.b = dp__lua_sbuf_new(L, alen[0] + alen[1] + (size_t)u->r.ncopies * 96); /* (about 80 bytes a line) */
  r.n = 0;
  dp__lua_sbuf_add(L, r.b, around[0], alen[0]);
  for (uint32_t i = 0; i < u->r.ncopies; i++) {
    crow w;
    row_of(&x, i, &w);
    if (i) BLIT(&r, "\n");
    BLIT(&r, "  ");
    if (w.fn) {
      BLIT(&r, "@");
      bstr(&r, w.fn);
      BLIT(&r, " ");
    }
    bstr(&r, w.name ? w.name : "(inline)");
    BLIT(&r, " = copy of ");
    bstr(&r, w.value ? w.value : "(inline)");
    BLIT(&r, "  @");
    bstr(&r, w.src);
    BLIT(&r, " -> @");
    bstr(&r, w.dst);
    BLIT(&r, "  ");
    bstr(&r, w.type);
    BLIT(&r, "  ");
    if (w.has_bytes) {
      bint(&r, w.bytes, 1);
      BLIT(&r, " bytes");
    } else if (strcmp(w.size, "too large")) {
      BLIT(&r, "unknown bytes");
    } else {
      BLIT(&r, "more bytes than a 64-bit count holds");
    }
    if (w.has_span && w.col == 0 && w.source) { /* an imported ONNX node by its name */
      BLIT(&r, "  (ONNX node ");
      bstr(&r, w.source);
      BLIT(&r, ")");
    }
    if (r.n > sizeof r.p / 2) bflush(&r);
  }
  bflush(&r);
  dp__lua_sbuf_add(L, r.b, around[1], alen[1]);
  return dp__lua_sbuf_push(L, r.b);
}

/* Would dkjson escape s (or look at it closely)? Its quotestring's bytes. */
static int json_plain(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (*p < 32 || *p == '"' || *p == '\\' || *p == 127 || *p == 194 || *p == 216 || *p == 220 ||
        *p == 225 || *p == 226 || *p == 239)
      return 0;
  return 1;
}

/* A key and what follows it, `piece` (",\n      \"key\":" and more),
   without its comma when it is the row's first. */
static void add_json_piece(block *r, const char *piece, size_t len) {
  if (r->first) piece++, len--;
  r->first = 0;
  badd(r, piece, len);
}

#define JKEY_(k) ",\n      \"" k "\":"

/* Key and string value (none when v is NULL); 0 when the value needs
   dkjson's escapes. `plain`: known plain already. */
static int add_json_str(block *r, const char *piece, size_t len, const char *v, int plain) {
  if (!v) return 1;
  if (!plain && !json_plain(v)) return 0;
  add_json_piece(r, piece, len);
  bstr(r, v);
  BLIT(r, "\"");
  return 1;
}

#define JSTR_PLAIN(r, k, v, plain) add_json_str((r), JKEY_(k) "\"", sizeof(JKEY_(k) "\"") - 1, (v), (plain))
#define JSTR(r, k, v) JSTR_PLAIN(r, k, v, 0)
#define JINT(r, k, v) (add_json_piece((r), JKEY_(k), sizeof(JKEY_(k)) - 1), bint((r), (v), 0))

/* Is s the string last found plain (*last)? Else checks it and remembers it when plain. */
static int plain_as(const char **last, const char *s) {
  if (s && s == *last) return 1;
  if (!s || !json_plain(s)) return 0;
  *last = s;
  return 1;
}

static int scan_copies_json(lua_State *L) {
  lscan *u = check_scan(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *around[2];
  size_t alen[2];
  get_around(L, around, alen);
  lua_settop(L, 4);
  lua_newtable(L); /* 5: types */
  rowctx x;
  rowctx_init(L, u, 5, &x);
  /* (room for them all at once, each about 250 bytes: the pages not
     written are never touched, and the block is cut to the text at the end) */
  block r;
  r.L = L;
  r.b = dp__lua_sbuf_new(L, alen[0] + alen[1] + 2 + (size_t)u->r.ncopies * 256);
  r.n = 0;
  dp__lua_sbuf_add(L, r.b, around[0], alen[0]);
  dp__lua_sbuf_add(L, r.b, "[", 1);
  int plain = 1;
  /* (the strings found plain last: the names of functions and devices, types
     and sources are the same strings from copy to copy) */
  const char *fn_ok = NULL, *src_ok = NULL, *dst_ok = NULL, *type_ok = NULL, *source_ok = NULL;
  for (uint32_t i = 0; i < u->r.ncopies && plain; i++) {
    crow w;
    row_of(&x, i, &w);
    r.first = 1;
    badd(&r, i ? ",{" : "{", i ? 2 : 1);
    /* the keys in the report's key order: name, bytes, size, fn, value, src, dst, type, line, col, source */
    plain = JSTR(&r, "name", w.name);
    if (w.has_bytes) JINT(&r, "bytes", w.bytes);
    plain = plain && JSTR(&r, "size", w.size) && JSTR_PLAIN(&r, "fn", w.fn, plain_as(&fn_ok, w.fn)) && JSTR(&r, "value", w.value) &&
            JSTR_PLAIN(&r, "src", w.src, plain_as(&src_ok, w.src)) &&
            JSTR_PLAIN(&r, "dst", w.dst, plain_as(&dst_ok, w.dst)) &&
            JSTR_PLAIN(&r, "type", w.type, plain_as(&type_ok, w.type));
    if (plain && w.has_span) {
      JINT(&r, "line", w.line);
      JINT(&r, "col", w.col);
      plain = JSTR_PLAIN(&r, "source", w.source, plain_as(&source_ok, w.source));
    }
    BLIT(&r, "\n    }");
    if (r.n > sizeof r.p / 2) bflush(&r);
  }
  if (!plain) {
    lua_pushnil(L); /* (the holder frees the block) */
    return 1;
  }
  bflush(&r);
  dp__lua_sbuf_add(L, r.b, "]", 1);
  dp__lua_sbuf_add(L, r.b, around[1], alen[1]);
  return dp__lua_sbuf_push(L, r.b);
}

static int l_report_scan(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  /* (3: "replan" reads the devices through planning again, as the quick
     reading is checked against) */
  int replan = lua_type(L, 3) == LUA_TSTRING && !strcmp(lua_tostring(L, 3), "replan");
  lua_settop(L, 2);
  dp_config *cfg = opt_config(L, 2);
  dp__lua_push_owned(L, cfg); /* (3) */
  lscan *u = lua_newuserdatauv(L, sizeof *u, 0);
  memset(u, 0, sizeof *u);
  u->m = dp_retain(m);
  if (luaL_newmetatable(L, REPORT_SCAN)) {
    static const luaL_Reg methods[] = {
      {"devices", scan_devices}, {"totals", scan_totals}, {"count", scan_count}, {"replanned", scan_replanned}, {"copies", scan_copies},
      {"copies_text", scan_copies_text}, {"copies_json", scan_copies_json}, {NULL, NULL}};
    lua_pushcfunction(L, scan_gc);
    lua_setfield(L, -2, "__gc");
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
  }
  lua_setmetatable(L, -2);
  dp_err *err = NULL;
  int rc = replan ? 1 : dp_report_scan_lexical(m, cfg, &u->r, &err);
  if (rc < 0) return dp__lua_error(L, err);
  if (rc > 0) { /* the devices of the domains of the module planned again */
    lua_pushnil(L); /* (the options' slot of planned_domains) */
    u->d = dp__lua_planned_domains(L, m, cfg, lua_gettop(L));
    lua_pop(L, 1);
    if (dp_report_scan(m, u->d, &u->r, &err) < 0) return dp__lua_error(L, err);
  }
  u->ok = 1;
  return 1;
}

/* ---- the verifier ---- */

/* opts of dp.planner.verify: input (module), raise (boolean), limit (integer >= 1). */
typedef struct vopts { dp_module *input; int raise; lua_Integer limit; } vopts;

static vopts verify_opts(lua_State *L, int idx) {
  vopts o = {NULL, 0, 100};
  if (lua_isnoneornil(L, idx)) return o;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?";
    if (strcmp(k, "input") == 0) {
      o.input = dp__lua_test(L, -1, DP_OBJ_MODULE);
      if (!o.input) luaL_error(L, "bad option 'input' to 'verify' (a module expected)");
    } else if (strcmp(k, "raise") == 0) {
      if (!lua_isboolean(L, -1)) luaL_error(L, "bad option 'raise' to 'verify' (a boolean expected)");
      o.raise = lua_toboolean(L, -1);
    } else if (strcmp(k, "limit") == 0) {
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
        luaL_error(L, "bad option 'limit' to 'verify' (an integer >= 1 expected)");
      o.limit = lua_tointeger(L, -1);
    } else {
      luaL_error(L, "bad option '%s' to 'verify' (input, raise or limit expected)", k);
    }
    lua_pop(L, 1);
  }
  return o;
}

static void push_violation(lua_State *L, dp_module *m, const dp_violation *v) {
  lua_createtable(L, 0, 8);
  lua_pushstring(L, v->kind);
  lua_setfield(L, -2, "kind");
  lua_pushstring(L, v->msg);
  lua_setfield(L, -2, "message");
  if (v->expr) {
    dp__lua_push(L, v->expr);
    lua_setfield(L, -2, "expr");
  }
  set_position(L, m->ctx, v->span);
  if (v->expected) {
    dp__lua_push(L, v->expected);
    lua_setfield(L, -2, "expected");
  }
  if (v->actual) {
    dp__lua_push(L, v->actual);
    lua_setfield(L, -2, "actual");
  }
}

/* The violations as one "verify" error: the first in the message, each in
   a note with its position. */
static dp_err *violations_error(dp_module *m, const dp_violations *vs) {
  const dp_violation *f = &vs->v[0];
  dp_err *e = dp_err_at(m->ctx, DP_ERR_VERIFY, f->span, "the planned module is not consistent "
                        "(%llu violation%s): %s", (unsigned long long)vs->total,
                        vs->total == 1 ? "" : "s", f->msg);
  for (uint32_t i = 0; i < vs->n; i++) dp_err_note(e, vs->v[i].span, "%s", vs->v[i].msg);
  if (vs->total > vs->n)
    dp_err_note(e, DP_NOSPAN, "... and %llu more", (unsigned long long)(vs->total - vs->n));
  return e;
}

/* dp.planner.verify(planned, config?, {input =, raise =, limit =}?) ->
   list of violations (empty when consistent), total found. */
static int l_verify(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  vopts o = verify_opts(L, 3);
  dp_config *cfg = opt_config(L, 2);
  dp_err *err = NULL;
  dp_violations vs;
  int rc = dp_plan_verify(m, cfg, o.input, (uint32_t)(o.limit > UINT32_MAX ? UINT32_MAX : o.limit),
                          &vs, &err);
  dp_release(cfg);
  if (rc < 0) return dp__lua_error(L, err);
  if (o.raise && vs.n) {
    dp_err *e = violations_error(m, &vs);
    dp_violations_clear(&vs);
    return dp__lua_error(L, e);
  }
  lua_createtable(L, (int)vs.n, 0);
  for (uint32_t i = 0; i < vs.n; i++) {
    push_violation(L, m, &vs.v[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_pushinteger(L, (lua_Integer)vs.total);
  dp_violations_clear(&vs);
  return 2;
}

void dp__domains_free_fn(dp_obj *o, dp_worklist *wl);
void dp__lua_open_place(lua_State *L); /* l_place.c */
void dp__lua_open_move(lua_State *L);  /* l_move.c */

void dp__lua_open_planner(lua_State *L) {
  dp__lua_newmeta(L, dp_domains_objtype(), DOMAINS_META);
  static const luaL_Reg methods[] = {
    {"lookup", d_lookup}, {"unify", d_unify}, {"constrain", d_constrain},
    {"set_default", d_set_default}, {"fully_constrained", d_fully_constrained},
    {"explain", d_explain}, {"placements", d_placements}, {NULL, NULL}};
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "methods");
  lua_pushcfunction(L, d_index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, d_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);

  static const luaL_Reg planner[] = {
    {"plan", l_plan}, {"rewrite", l_rewrite}, {"conflicts", l_conflicts}, {"analyze", l_analyze},
    {"default", l_default}, {"capture", l_capture}, {"explain", l_explain},
    {"virtual_devices", l_virtual_devices}, {"verify", l_verify}, {"reason", l_reason},
    {"report_scan", l_report_scan}, {NULL, NULL}};
  luaL_newlib(L, planner);
  dp__lua_open_place(L);
  dp__lua_open_move(L);
  lua_setfield(L, -2, "planner");
}
