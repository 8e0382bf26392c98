/*
 * Lua binding of AnnotateVirtualDevices' rewrite (annotate.h, src/pattern/annotate_calls.c):
 *
 *   core.annotate_calls(mod, rules, rule_for, take, unit) -> mod, later, untyped
 *
 * rules: the pass's table (operator name, "kind:<kind>", ... -> function);
 * the rule of an operator call is found here (its own, its kind's unless
 * it is on_device or device_copy, "*"), the rule of any other call by
 * rule_for(rules, call) -> rule, key. A rule's answer nil leaves the call,
 * a VirtualDevice wraps it; any other answer goes to take(answer, key,
 * call) -> nil, a VirtualDevice (and a weight: a soft annotation,
 * on_device(..., soft=W)), or true (candidates: take keeps them, and the
 * rebuilt call is listed in `later`, in the same order). unit(fn) says
 * whether a function literal with a Composite or Primitive attribute is
 * one unit (never entered). untyped: the module needs inference again.
 *   core.annotate_placed(mod) -> {[call] = true, ...}: the calls earlier
 *   annotations placed (MergeAndAnnotate leaves them alone too)
 *
 * lua/devplan/passes/annotate_virtual_devices.lua makes the pass of it.
 */
#include <stdlib.h>
#include <string.h>
#include "l_init.h"
#include "devplan/annotate.h"

enum { A_MOD = 1, A_RULES, A_RULE_FOR, A_TAKE, A_UNIT, A_TRAMPOLINE, A_ERR, A_FIRST_FREE };

#define NOPS 64

typedef struct lstate {
  lua_State *L;
  int failed;
  struct { const dp_op *op; int rule, key, bare; } ops[NOPS]; /* rule, key: stack slots (0: no rule) */
  uint32_t nops;
} lstate;

/* Runs under lua_pcall: (fn, args...) -> fn(args...), each light userdata
   argument (a node) pushed as its Expr here, where running out of memory
   is protected too. */
static int trampoline(lua_State *L) {
  int n = lua_gettop(L);
  for (int i = 2; i <= n; i++) {
    if (lua_type(L, i) != LUA_TLIGHTUSERDATA) continue;
    dp__lua_push(L, lua_touserdata(L, i));
    lua_replace(L, i);
  }
  lua_call(L, n - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* Calls fn (below its nargs arguments on the stack) protected, with nres
   results; -1 with the error kept. */
static int pcall(lstate *s, int nargs, int nres, dp_err **err) {
  lua_State *L = s->L;
  lua_pushvalue(L, A_TRAMPOLINE);
  lua_insert(L, -(nargs + 2));
  if (lua_pcall(L, nargs + 1, nres, 0) == LUA_OK) return 0;
  lua_replace(L, A_ERR);
  s->failed = 1;
  *err = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "AnnotateVirtualDevices: a rule failed");
  return -1;
}

/* Calls the rule below no argument on the stack protected, with one
   result: without the trampoline, which has no node to push. */
static int pcall_bare(lstate *s, dp_err **err) {
  lua_State *L = s->L;
  if (lua_pcall(L, 0, 1, 0) == LUA_OK) return 0;
  lua_replace(L, A_ERR);
  s->failed = 1;
  *err = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "AnnotateVirtualDevices: a rule failed");
  return -1;
}

/* Does the function at idx take no argument (a Lua function without
   parameters or `...`)? Then a rule is called without its call, which
   would be made a Lua value for nothing: `add = function() return gpu end`
   on a million calls. */
static int takes_nothing(lua_State *L, int idx) {
  lua_Debug ar;
  if (lua_type(L, idx) != LUA_TFUNCTION || lua_iscfunction(L, idx)) return 0;
  lua_pushvalue(L, idx);
  if (!lua_getinfo(L, ">u", &ar)) return 0;
  return ar.nparams == 0 && !ar.isvararg;
}

/* Pushes rules[key] (nil when absent). */
static int rule_at(lua_State *L, const char *key) { return lua_getfield(L, A_RULES, key) != LUA_TNIL; }

/* The rule of an operator call: pushes rule and key (or nothing) and
   returns 1 (0: no rule). */
static int op_rule(lua_State *L, const dp_op *op) {
  if (rule_at(L, op->name)) {
    lua_pushstring(L, op->name);
    return 1;
  }
  lua_pop(L, 1);
  if (!strcmp(op->name, "on_device") || !strcmp(op->name, "device_copy")) return 0;
  const char *pattern = dp_oppattern_name(op->pattern);
  if (pattern) {
    lua_pushfstring(L, "kind:%s", pattern);
    if (rule_at(L, lua_tostring(L, -1))) {
      lua_insert(L, -2);
      return 1;
    }
    lua_pop(L, 2);
  }
  if (rule_at(L, "*")) {
    lua_pushliteral(L, "*");
    return 1;
  }
  lua_pop(L, 1);
  return 0;
}

/* Pushes the rule and key of call (nothing when it has none); 1 / 0 / -1;
   *bare: the rule takes no argument. */
static int rule_of(lstate *s, dp_call *call, int *bare, dp_err **err) {
  lua_State *L = s->L;
  if (call->fn->h.kind != DP_OP) {
    lua_pushvalue(L, A_RULE_FOR);
    lua_pushvalue(L, A_RULES);
    lua_pushlightuserdata(L, call);
    if (pcall(s, 2, 2, err) < 0) return -1;
    if (lua_isnil(L, -2)) {
      lua_pop(L, 2);
      return 0;
    }
    *bare = takes_nothing(L, -2);
    return 1;
  }
  const dp_op *op = (const dp_op *)call->fn;
  for (uint32_t i = 0; i < s->nops; i++) {
    if (s->ops[i].op != op) continue;
    if (!s->ops[i].rule) return 0;
    lua_pushvalue(L, s->ops[i].rule);
    lua_pushvalue(L, s->ops[i].key);
    *bare = s->ops[i].bare;
    return 1;
  }
  int has = op_rule(L, op);
  *bare = has && takes_nothing(L, -2);
  if (s->nops < NOPS) { /* keep the answer in two stack slots below the work */
    if (has) {
      lua_pushvalue(L, -2);
      lua_pushvalue(L, -2);
      s->ops[s->nops].rule = lua_gettop(L) - 1;
      s->ops[s->nops].key = lua_gettop(L);
      lua_rotate(L, -4, 2);
      s->ops[s->nops].rule -= 2;
      s->ops[s->nops].key -= 2;
      s->ops[s->nops].bare = *bare;
    } else {
      s->ops[s->nops].rule = s->ops[s->nops].key = 0;
    }
    s->ops[s->nops++].op = op;
  }
  return has;
}

static int on_call(void *ud, dp_call *call, dp_vdev **vd, double *soft, dp_err **err) {
  lstate *s = ud;
  lua_State *L = s->L;
  if (!lua_checkstack(L, 8)) {
    *err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    return -1;
  }
  int bare = 0;
  int has = rule_of(s, call, &bare, err);
  if (has <= 0) return has;
  int key = lua_gettop(L); /* rule at key - 1 */
  lua_pushvalue(L, key - 1);
  if (!bare) lua_pushlightuserdata(L, call);
  if ((bare ? pcall_bare(s, err) : pcall(s, 1, 1, err)) < 0) return -1;
  int r = DP_ANNOT_NONE;
  dp_vdev *v;
  if (lua_isnil(L, -1)) {
    /* (no device) */
  } else if ((v = dp__lua_test(L, -1, DP_OBJ_VDEV))) {
    *vd = dp_retain(v);
    r = DP_ANNOT_DEVICE;
  } else { /* take(answer, key, call) -> nil | vd, weight? | true (candidates kept) */
    lua_pushvalue(L, A_TAKE);
    lua_insert(L, -2);
    lua_pushvalue(L, key);
    lua_pushlightuserdata(L, call);
    if (pcall(s, 3, 2, err) < 0) return -1;
    if (lua_isnil(L, -2)) {
      r = DP_ANNOT_NONE;
    } else if ((v = dp__lua_test(L, -2, DP_OBJ_VDEV))) {
      *vd = dp_retain(v);
      if (lua_type(L, -1) == LUA_TNUMBER) *soft = lua_tonumber(L, -1);
      r = DP_ANNOT_DEVICE;
    } else {
      r = DP_ANNOT_LATER;
    }
  }
  lua_settop(L, key - 2);
  return r;
}

static int on_unit(void *ud, dp_func *fn, dp_err **err) {
  lstate *s = ud;
  lua_State *L = s->L;
  if (!lua_checkstack(L, 4)) {
    *err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    return -1;
  }
  lua_pushvalue(L, A_UNIT);
  lua_pushlightuserdata(L, fn);
  if (pcall(s, 1, 1, err) < 0) return -1;
  int keep = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return keep ? DP_ANNOT_KEEP : DP_ANNOT_NONE;
}

static int l_annotate_calls(lua_State *L) {
  dp_module *m = dp__lua_check(L, A_MOD, DP_OBJ_MODULE);
  luaL_checktype(L, A_RULES, LUA_TTABLE);
  luaL_checktype(L, A_RULE_FOR, LUA_TFUNCTION);
  luaL_checktype(L, A_TAKE, LUA_TFUNCTION);
  luaL_checktype(L, A_UNIT, LUA_TFUNCTION);
  lua_settop(L, A_UNIT);
  lua_pushcfunction(L, trampoline);
  lua_pushnil(L); /* A_ERR */
  lstate s;
  memset(&s, 0, sizeof s);
  s.L = L;
  dp_annot_hooks h = {on_call, on_unit, &s};
  dp_annot_result r;
  dp_err *err = NULL;
  if (dp_annotate_calls(m, &h, &r, &err) < 0) {
    if (s.failed) {
      dp_err_free(err);
      lua_pushvalue(L, A_ERR);
      return lua_error(L);
    }
    return dp__lua_error(L, err);
  }
  lua_settop(L, A_FIRST_FREE - 1);
  dp__lua_push_owned(L, r.mod);
  r.mod = NULL;
  dp__lua_push_list(L, (void *const *)r.later, r.nlater);
  lua_pushboolean(L, r.untyped);
  dp_annot_result_clear(&r);
  return 3;
}

static int l_annotate_placed(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_expr **placed = NULL;
  uint32_t n = 0;
  dp_err *err = NULL;
  if (dp_annotate_placed(m, &placed, &n, &err) < 0) return dp__lua_error(L, err);
  lua_createtable(L, 0, (int)n);
  for (uint32_t i = 0; i < n; i++) { /* (the module keeps the nodes; a Lua error here leaks the array) */
    dp__lua_push(L, placed[i]);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
  }
  free(placed);
  return 1;
}

void dp__lua_open_annotate(lua_State *L) {
  lua_pushcfunction(L, l_annotate_placed);
  lua_setfield(L, -2, "annotate_placed");
  lua_pushcfunction(L, l_annotate_calls);
  lua_setfield(L, -2, "annotate_calls");
}
