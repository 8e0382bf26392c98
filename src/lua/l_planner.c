/*
 * Lua binding of the planner (plan.h): dp.passes.PlanDevices(config), the
 * phases one by one under dp.planner (rewrite, conflicts, analyze, default,
 * capture), the domains userdata (lookup, unify, constrain, set_default,
 * fully_constrained, explain), dp.planner.explain / virtual_devices and
 * dp.planner.verify.
 */
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

static int l_rewrite(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = opt_config(L, 2);
  dp_err *err = NULL;
  dp_module *r = dp_plan_rewrite(m, cfg, &err);
  dp_release(cfg);
  if (!r) return dp__lua_error(L, err);
  dp__lua_push_owned(L, r);
  return 1;
}

static int l_conflicts(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = opt_config(L, 2);
  dp_err *err = NULL;
  dp_module *r = dp_plan_conflicts(m, cfg, &err);
  dp_release(cfg);
  if (!r) return dp__lua_error(L, err);
  dp__lua_push_owned(L, r);
  return 1;
}

static int l_analyze(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = opt_config(L, 2);
  dp_err *err = NULL;
  dp_domains *d = dp_plan_analyze(m, cfg, &err);
  dp_release(cfg);
  if (!d) return dp__lua_error(L, err);
  dp__lua_push_owned(L, d);
  return 1;
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
  if (!m) return dp__lua_error(L, err);
  dp__lua_push_owned(L, m);
  return 1;
}

/* planner.plan(mod, config): every phase in order (dp_plan_devices). */
static int l_plan(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = check_config(L, 2);
  dp_err *err = NULL;
  dp_module *r = dp_plan_devices(m, cfg, &err);
  if (!r) return dp__lua_error(L, err);
  dp__lua_push_owned(L, r);
  return 1;
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

/* report_scan(planned, config?) -> {devices = {{vd =, calls =, bytes =,
   unknown =, too_large =, entered =}, ...} (in the order first met;
   entered: rank in the report's list, nil when only named), copies = {the
   device_copy nodes}, totals = {...}}: what dp.planner.report counts
   (report.h), for lua/devplan/report.lua to word. */
static void set_int(lua_State *L, const char *k, int64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

static int l_report_scan(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_domains *d = planned_domains(L, m, 2);
  dp__lua_push_owned(L, d); /* (held on the stack: the devices are borrowed from it) */
  dp_report_data r;
  dp_err *err = NULL;
  if (dp_report_scan(m, d, &r, &err) < 0) return dp__lua_error(L, err);
  lua_createtable(L, 0, 3);
  lua_createtable(L, (int)r.ndev, 0);
  for (uint32_t i = 0; i < r.ndev; i++) {
    const dp_report_dev *v = &r.dev[i];
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
  lua_setfield(L, -2, "devices");
  /* each copy as the report lists it, its ends as devices (the report names them) */
  lua_createtable(L, (int)r.ncopies, 0);
  int types = lua_gettop(L) + 1; /* checked type -> its text (types are interned) */
  lua_newtable(L);
  for (uint32_t i = 0; i < r.ncopies; i++) {
    const dp_report_copy *c = &r.copies[i];
    dp_expr *e = c->copy;
    lua_createtable(L, 0, 11);
    const char *fn = c->fn ? c->fn : c->value_fn, *value = c->value_name ? c->value_name : c->name;
    if (fn) set_str(L, "fn", fn);
    if (c->name) set_str(L, "name", c->name);
    if (value) set_str(L, "value", value);
    dp__lua_push(L, c->src);
    lua_setfield(L, -2, "src");
    dp__lua_push(L, c->dst);
    lua_setfield(L, -2, "dst");
    if (!e->type) lua_pushliteral(L, "nil");
    else if (lua_rawgetp(L, types, e->type) == LUA_TNIL) {
      lua_pop(L, 1);
      dp__lua_push_cstr(L, dp_type_str(e->type));
      lua_pushvalue(L, -1);
      lua_rawsetp(L, types, e->type);
    }
    lua_setfield(L, -2, "type");
    int64_t b = 0;
    int k = e->type ? dp_type_bytes(e->type, &b) : DP_BYTES_UNKNOWN;
    if (k < 0) return dp__lua_oom(L);
    if (k == DP_BYTES_KNOWN) set_int(L, "bytes", b);
    else set_str(L, "size", k == DP_BYTES_UNKNOWN ? "unknown" : "too large");
    if (e->span.line) {
      set_int(L, "line", e->span.line);
      set_int(L, "col", e->span.col);
      set_str(L, "source", dp_ctx_source_name(dp__lua_ctx(L), e->span.source));
    }
    lua_rawseti(L, -3, (lua_Integer)i + 1);
  }
  lua_pop(L, 1);
  lua_setfield(L, -2, "copies");
  lua_createtable(L, 0, 6);
  set_int(L, "calls", r.calls);
  set_int(L, "copies", r.copies_total);
  set_int(L, "bytes_copied", r.bytes_copied);
  set_int(L, "bytes_resident", r.bytes_resident);
  set_int(L, "copies_too_large", r.copies_too_large);
  set_int(L, "too_large", r.too_large);
  lua_setfield(L, -2, "totals");
  dp_report_data_clear(&r);
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
  lua_setfield(L, -2, "planner");
}
