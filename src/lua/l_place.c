/*
 * Lua binding of the placement optimiser on its own (planner.h, dp_place_problem):
 * dp.planner.solve_placement(problem) -> labels, cost. The planner's
 * min_bytes placement builds such a problem from a module's domains; this
 * entry lets a script (and the specs, against brute force) pose one
 * directly. Everything is 1-based on the Lua side.
 */
#include <stdlib.h>
#include <string.h>
#include "l_init.h"

typedef struct pctx { dp_place_problem m; uint32_t *label, *readers; } pctx;

static uint32_t int_field(lua_State *L, int t, const char *k, lua_Integer lo, lua_Integer hi,
                          lua_Integer dflt) {
  lua_getfield(L, t, k);
  lua_Integer v = dflt;
  if (!lua_isnil(L, -1)) {
    if (!lua_isinteger(L, -1)) luaL_error(L, "solve_placement: '%s' must be an integer", k);
    v = lua_tointeger(L, -1);
  }
  if (v < lo || v > hi) luaL_error(L, "solve_placement: '%s' must be in [%I, %I]", k, lo, hi);
  lua_pop(L, 1);
  return (uint32_t)v;
}

/* t[k] as an index in [1, n], 0-based. */
static uint32_t index_at(lua_State *L, int t, lua_Integer k, uint32_t n, const char *what) {
  lua_geti(L, t, k);
  if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > n)
    luaL_error(L, "solve_placement: %s must be an integer in [1, %d]", what, (int)n);
  uint32_t v = (uint32_t)(lua_tointeger(L, -1) - 1);
  lua_pop(L, 1);
  return v;
}

static int64_t cost_at(lua_State *L, int idx, const char *what) {
  if (!lua_isinteger(L, idx) || lua_tointeger(L, idx) < 0 || lua_tointeger(L, idx) > (lua_Integer)1e15)
    luaL_error(L, "solve_placement: %s must be an integer in [0, 1e15]", what);
  return (int64_t)lua_tointeger(L, idx);
}

/* problem.fixed, .allowed, .unary: tables keyed by variable. */
static void per_var(lua_State *L, pctx *c) {
  dp_place_problem *m = &c->m;
  uint32_t K = m->nlabels;
  if (lua_getfield(L, 1, "fixed") == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      lua_Integer v = lua_isinteger(L, -2) ? lua_tointeger(L, -2) : 0;
      if (v < 1 || v > m->nvars || !lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 ||
          lua_tointeger(L, -1) > K)
        luaL_error(L, "solve_placement: fixed maps variables to labels");
      m->fixed[v - 1] = (uint32_t)(lua_tointeger(L, -1) - 1);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "allowed") == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      lua_Integer v = lua_isinteger(L, -2) ? lua_tointeger(L, -2) : 0;
      if (v < 1 || v > m->nvars || !lua_istable(L, -1))
        luaL_error(L, "solve_placement: allowed maps variables to lists of labels");
      uint64_t mask = 0;
      lua_Integer n = luaL_len(L, -1);
      for (lua_Integer i = 1; i <= n; i++) mask |= (uint64_t)1 << index_at(L, -1, i, K, "a label");
      m->allowed[v - 1] = mask;
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "unary") == LUA_TTABLE) {
    m->unary = dp_calloc((size_t)m->nvars * K + 1, sizeof *m->unary);
    if (!m->unary) dp__lua_oom(L);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      lua_Integer v = lua_isinteger(L, -2) ? lua_tointeger(L, -2) : 0;
      if (v < 1 || v > m->nvars || !lua_istable(L, -1))
        luaL_error(L, "solve_placement: unary maps variables to a cost per label");
      for (uint32_t l = 0; l < K; l++) {
        lua_geti(L, -1, l + 1);
        m->unary[(size_t)(v - 1) * K + l] = cost_at(L, -1, "a unary cost");
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

static void pair_costs(lua_State *L, pctx *c) {
  dp_place_problem *m = &c->m;
  uint32_t K = m->nlabels;
  if (lua_getfield(L, 1, "pair") == LUA_TTABLE) {
    m->pair = dp_calloc((size_t)K * K, sizeof *m->pair);
    if (!m->pair) dp__lua_oom(L);
    for (uint32_t a = 0; a < K; a++) {
      if (lua_geti(L, -1, a + 1) != LUA_TTABLE) luaL_error(L, "solve_placement: pair is a K x K table");
      for (uint32_t b = 0; b < K; b++) {
        lua_geti(L, -1, b + 1);
        if (!lua_isnumber(L, -1) || lua_tonumber(L, -1) < 0)
          luaL_error(L, "solve_placement: pair costs are numbers >= 0");
        m->pair[(size_t)a * K + b] = a == b ? 0 : lua_tonumber(L, -1);
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

static void nets(lua_State *L, pctx *c) {
  dp_place_problem *m = &c->m;
  if (lua_getfield(L, 1, "nets") != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  lua_Integer n = luaL_len(L, -1);
  for (lua_Integer k = 1; k <= n; k++) {
    if (lua_geti(L, -1, k) != LUA_TTABLE) luaL_error(L, "solve_placement: a net is {from =, to = {...}, weight =}");
    lua_getfield(L, -1, "from");
    uint32_t src = 0;
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > m->nvars)
      luaL_error(L, "solve_placement: a net's from must be a variable");
    src = (uint32_t)(lua_tointeger(L, -1) - 1);
    lua_pop(L, 1);
    lua_getfield(L, -1, "weight");
    int64_t w = cost_at(L, -1, "a net's weight");
    lua_pop(L, 1);
    if (lua_getfield(L, -1, "to") != LUA_TTABLE) luaL_error(L, "solve_placement: a net's to is a list of variables");
    lua_Integer nr = luaL_len(L, -1);
    if (nr > m->nvars) luaL_error(L, "solve_placement: a net has more readers than variables");
    for (lua_Integer i = 1; i <= nr; i++) c->readers[i - 1] = index_at(L, -1, i, m->nvars, "a reader");
    lua_pop(L, 2);
    if (dp_place_net(m, src, c->readers, (uint32_t)nr, w) < 0) dp__lua_oom(L);
  }
  lua_pop(L, 1);
}

static int solve_body(lua_State *L) {
  pctx *c = lua_touserdata(L, 2);
  luaL_checktype(L, 1, LUA_TTABLE);
  uint32_t K = int_field(L, 1, "labels", 1, 64, 2);
  uint32_t n = int_field(L, 1, "vars", 0, 10000000, 0);
  uint32_t dflt = int_field(L, 1, "default", 1, K, 1) - 1;
  if (dp_place_init(&c->m, n, K, dflt) < 0) return dp__lua_oom(L);
  c->label = dp_malloc((n ? n : 1) * sizeof *c->label);
  c->readers = dp_malloc((n ? n : 1) * sizeof *c->readers);
  if (!c->label || !c->readers) return dp__lua_oom(L);
  per_var(L, c);
  pair_costs(L, c);
  nets(L, c);
  int64_t e = 0;
  int rc = dp_place_solve(&c->m, c->label, &e);
  if (rc < 0) return dp__lua_oom(L);
  if (rc > 0) {
    for (uint32_t v = 0; v < n; v++)
      if (c->label[v] == UINT32_MAX) return luaL_error(L, "solve_placement: variable %d may take no label", (int)v + 1);
  }
  lua_createtable(L, (int)n, 0);
  for (uint32_t v = 0; v < n; v++) {
    lua_pushinteger(L, (lua_Integer)c->label[v] + 1);
    lua_rawseti(L, -2, (lua_Integer)v + 1);
  }
  lua_pushinteger(L, (lua_Integer)e);
  return 2;
}

/* dp.planner.solve_placement{labels =, vars =, default =, fixed =, allowed =,
   unary =, pair =, nets = {{from =, to = {...}, weight =}, ...}} -> labels,
   cost. (Errors are raised after the C side's memory is freed.) */
static int l_solve_placement(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  pctx c = {0};
  lua_pushcfunction(L, solve_body);
  lua_pushvalue(L, 1);
  lua_pushlightuserdata(L, &c);
  int st = lua_pcall(L, 2, 2, 0);
  dp_place_free(&c.m);
  free(c.label);
  free(c.readers);
  if (st != LUA_OK) return lua_error(L);
  return 2;
}


/* ---- PlanDevices' options (plan.h, dp_plan_opts) ----

   {resolve_conflicts = true | false | "tvm", all_conflicts =, placement = "tvm" | "min_bytes",
    capability = function(call, vd) -> boolean, compute_cost = function(call,
    vd) -> seconds, bandwidth = bytes per second | function(src, dst) ->
    bytes per second}. The hooks call the Lua functions protected: an error
   a user's function throws becomes the planner's error, and planning
   frees what it made. */

typedef struct hooks {
  dp_place_hooks h;
  lua_State *L;
  int cap, comp, bw;      /* stack indices of the functions (0: none) */
  double bwconst;         /* bandwidth given as a number (0: none) */
} hooks;

static int h_can_run(void *ud, dp_expr *call, dp_vdev *vd, int *ok, dp_err **err) {
  hooks *h = ud;
  if (dp__lua_call_hook(h->L, h->cap, call, vd, "capability", err) < 0) return -1;
  *ok = lua_toboolean(h->L, -1);
  lua_pop(h->L, 1);
  return 0;
}

static int h_compute(void *ud, dp_expr *call, dp_vdev *vd, double *s, dp_err **err) {
  hooks *h = ud;
  if (dp__lua_call_hook(h->L, h->comp, call, vd, "compute_cost", err) < 0) return -1;
  return dp__lua_hook_number(h->L, "compute_cost", "a number", s, err);
}

static int h_bandwidth(void *ud, dp_vdev *src, dp_vdev *dst, double *bps, dp_err **err) {
  hooks *h = ud;
  if (!h->bw) {
    *bps = h->bwconst;
    return 0;
  }
  if (dp__lua_call_hook(h->L, h->bw, src, dst, "bandwidth", err) < 0) return -1;
  return dp__lua_hook_number(h->L, "bandwidth", "a number", bps, err);
}

int h_recomputable(void *ud, dp_expr *value); /* l_move.c */

/* A function option t[k] pushed (its stack index), or 0 when absent. */
static int fn_option(lua_State *L, int t, const char *k) {
  int ty = lua_getfield(L, t, k);
  if (ty == LUA_TFUNCTION) return lua_gettop(L);
  if (ty != LUA_TNIL) luaL_error(L, "option '%s' must be a function", k);
  lua_pop(L, 1);
  return 0;
}

static int bool_option(lua_State *L, int t, const char *k, int dflt) {
  int ty = lua_getfield(L, t, k), v = dflt;
  if (ty == LUA_TBOOLEAN) v = lua_toboolean(L, -1);
  else if (ty != LUA_TNIL) luaL_error(L, "option '%s' must be a boolean", k);
  lua_pop(L, 1);
  return v;
}

/* The options at idx (a table or nil) into o and h (whose functions are
   pushed on the stack, where they stay while planning). */
static void read_opts(lua_State *L, int idx, dp_plan_opts *o, hooks *h) {
  *o = (dp_plan_opts){0};
  *h = (hooks){.L = L};
  if (lua_isnoneornil(L, idx)) return;
  luaL_checktype(L, idx, LUA_TTABLE);
  idx = lua_absindex(L, idx);
  if (lua_getfield(L, idx, "resolve_conflicts") == LUA_TSTRING) {
    /* "tvm": phase 0b as TVM (a plain on_device read on two devices stays a conflict) */
    if (strcmp(lua_tostring(L, -1), "tvm") != 0)
      luaL_error(L, "option 'resolve_conflicts' must be a boolean or \"tvm\", got \"%s\"", lua_tostring(L, -1));
    o->tvm_conflicts = 1;
    lua_pop(L, 1);
  } else {
    lua_pop(L, 1);
    o->strict = !bool_option(L, idx, "resolve_conflicts", 1);
  }
  o->all_conflicts = bool_option(L, idx, "all_conflicts", 0);
  if (lua_getfield(L, idx, "placement") == LUA_TSTRING) {
    const char *p = lua_tostring(L, -1);
    if (strcmp(p, "min_bytes") == 0) o->placement = DP_PLACE_MIN_BYTES;
    else if (strcmp(p, "tvm") != 0) luaL_error(L, "option 'placement' must be \"tvm\" or \"min_bytes\", got \"%s\"", p);
  } else if (!lua_isnil(L, -1)) {
    luaL_error(L, "option 'placement' must be a string (\"tvm\" or \"min_bytes\")");
  }
  lua_pop(L, 1);
  h->cap = fn_option(L, idx, "capability");
  h->comp = fn_option(L, idx, "compute_cost");
  int ty = lua_getfield(L, idx, "bandwidth");
  if (ty == LUA_TNUMBER) {
    h->bwconst = lua_tonumber(L, -1);
    if (!dp_bandwidth_ok(h->bwconst))
      luaL_error(L, "option 'bandwidth' must be a number of bytes per second > 0 and finite, got %s",
                 h->bwconst != h->bwconst ? "nan" : lua_tostring(L, -1));
    lua_pop(L, 1);
  } else if (ty == LUA_TFUNCTION) {
    h->bw = lua_gettop(L);
  } else {
    if (ty != LUA_TNIL) luaL_error(L, "option 'bandwidth' must be a number or a function");
    lua_pop(L, 1);
  }
  if ((h->cap || h->comp || h->bw || h->bwconst) && o->placement == DP_PLACE_TVM)
    luaL_error(L, "options capability, compute_cost and bandwidth need placement = \"min_bytes\"");
  h->h.ud = h;
  h->h.can_run = h->cap ? h_can_run : NULL;
  h->h.compute = h->comp ? h_compute : NULL;
  h->h.bandwidth = h->bw || h->bwconst ? h_bandwidth : NULL;
  h->h.recomputable = bool_option(L, idx, "recompute", 0) ? h_recomputable : NULL; /* (l_move.c) */
  o->hooks = &h->h;
}

int dp__lua_raise_conflicts(lua_State *L, dp_err *err, dp_conflicts *all) {
  dp__lua_push_error(L, err);
  if (all->n) {
    lua_createtable(L, (int)all->n, 0);
    for (uint32_t i = 0; i < all->n; i++) {
      dp__lua_push_error(L, all->v[i]);
      all->v[i] = NULL;
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "errors");
  }
  dp_conflicts_clear(all);
  return lua_error(L);
}

/* The configuration at idx (a CompilationConfig). */
static dp_config *config_at(lua_State *L, int idx) {
  return dp__lua_check(L, idx, DP_OBJ_CONFIG);
}

int dp__lua_plan_polymorphic(lua_State *L, dp_module *m, dp_config *cfg, const dp_plan_opts *o,
                              int opts_idx); /* l_move.c */

/* planner.plan_with(mod, config, opts) -> planned module. */
static int l_plan_with(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = config_at(L, 2);
  dp_plan_opts o;
  hooks h;
  read_opts(L, 3, &o, &h);
  dp_err *err = NULL;
  dp_conflicts all = {0};
  /* polymorphic = true (issue 20, src/planner/poly.c): the module and a report */
  int poly = lua_istable(L, 3) && bool_option(L, 3, "polymorphic", 0);
  if (poly) return dp__lua_plan_polymorphic(L, m, cfg, &o, 3);
  /* consume = true: the caller gives mod up (its calls and lets may become
     the plan's; plan.h). Not for polymorphic, which plans it twice. */
  o.consume = lua_istable(L, 3) && bool_option(L, 3, "consume", 0);
  dp_module *r = dp_plan_devices_opts(m, cfg, &o, &all, &err);
  if (!r) return dp__lua_raise_conflicts(L, err, &all);
  dp__lua_push_owned(L, r);
  return 1;
}

/* The domains after phases 0-2 with the options at opts_idx (config at
   cfg_idx: a configuration; the caller made sure), raising on error. */
dp_domains *dp__lua_planned_domains(lua_State *L, dp_module *m, dp_config *cfg, int opts_idx) {
  dp_plan_opts o;
  hooks h;
  read_opts(L, opts_idx, &o, &h);
  dp_err *err = NULL;
  dp_conflicts all = {0};
  dp_domains *d = dp_plan_domains(m, cfg, &o, &all, &err);
  if (!d) dp__lua_raise_conflicts(L, err, &all);
  return d;
}

/* planner.domains_with(mod, config, opts) -> domains after defaulting. */
static int l_domains_with(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_domains *d = dp__lua_planned_domains(L, m, config_at(L, 2), 3);
  dp__lua_push_owned(L, d);
  return 1;
}

/* planner.share_copies(planned) -> module (dp.passes.ShareCopies). */
static int l_share_copies(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_err *err = NULL;
  dp_module *r = dp_plan_share_copies(m, &err);
  if (!r) return dp__lua_error(L, err);
  dp__lua_push_owned(L, r);
  return 1;
}

void dp__lua_open_place(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"solve_placement", l_solve_placement}, {"plan_with", l_plan_with},
    {"domains_with", l_domains_with}, {"share_copies", l_share_copies}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
