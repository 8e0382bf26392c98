/*
 * Traversals driven by Lua functions: dp.visit and dp.rewrite (on an
 * expression or every function of a module), plus dp.free_vars and
 * dp.children.
 *
 * The C core walks with its explicit stack (visit.h); each Lua callback
 * runs under lua_pcall, so an error inside one stops the walk, lets the
 * core release what it built, and is then raised again with its original
 * value. Depth is never a problem for the C stack.
 */
#include <stdlib.h>
#include <string.h>
#include "l_init.h"

#define NKINDS (DP_REF_WRITE + 1)

typedef struct cbstate {
  lua_State *L;
  int trampoline;   /* stack slot of the protected caller (call_cb) */
  int pre, post;    /* stack slots of the callbacks (0: none) */
  int errslot;      /* stack slot receiving a callback's error value */
  int failed;       /* 1: a Lua error is in errslot */
  int handlers[NKINDS]; /* rewrite: slot of the handler of each kind (0: none) */
} cbstate;

/* Runs under lua_pcall: (fn, node, [node2]) -> fn(Expr(node), [Expr(node2)]).
   Pushing the nodes here keeps an out-of-memory error protected too. */
static int call_cb(lua_State *L) {
  int n = lua_gettop(L);
  for (int i = 2; i <= n; i++) {
    void *p = lua_touserdata(L, i);
    dp__lua_push(L, p);
    lua_replace(L, i);
  }
  lua_call(L, n - 1, 1);
  return 1;
}

/* Calls the callback at `slot` with one or two nodes; leaves its result on
   the stack and returns 0, or stores the error and returns -1. */
static int run_cb(cbstate *s, int slot, dp_expr *a, dp_expr *b) {
  lua_State *L = s->L;
  lua_pushvalue(L, s->trampoline);
  lua_pushvalue(L, slot);
  lua_pushlightuserdata(L, a);
  if (b) lua_pushlightuserdata(L, b);
  if (lua_pcall(L, b ? 3 : 2, 1, 0) != LUA_OK) {
    lua_replace(L, s->errslot);
    s->failed = 1;
    return -1;
  }
  return 0;
}

/* ---------------- dp.visit ---------------- */

static int visit_pre(void *ud, dp_expr *e) {
  cbstate *s = ud;
  if (run_cb(s, s->pre, e, NULL) < 0) return -1;
  int descend = !(lua_isboolean(s->L, -1) && !lua_toboolean(s->L, -1));
  lua_pop(s->L, 1);
  return descend;
}

static int visit_post(void *ud, dp_expr *e) {
  cbstate *s = ud;
  if (run_cb(s, s->post, e, NULL) < 0) return -1;
  lua_pop(s->L, 1);
  return 0;
}

/* Slots for the callbacks of arg 2: a function (post) or {pre =, post =}. */
static void setup_state(lua_State *L, cbstate *s) {
  memset(s, 0, sizeof *s);
  s->L = L;
  lua_pushcfunction(L, call_cb);
  s->trampoline = lua_gettop(L);
  lua_pushnil(L);
  s->errslot = lua_gettop(L);
}

static void raise_failed(lua_State *L, cbstate *s) {
  lua_pushvalue(L, s->errslot);
  lua_error(L);
}

/* Argument 1 of dp.visit and dp.rewrite: an expression or a module. Fixes
   the stack at two slots (callback state goes above). */
static dp_obj *check_root(lua_State *L, cbstate *s) {
  lua_settop(L, 2);
  dp_obj *root = dp__lua_testobj(L, 1);
  if (!root || (root->type != DP_OBJ_EXPR && root->type != DP_OBJ_MODULE))
    luaL_typeerror(L, 1, "expression or IRModule");
  setup_state(L, s);
  return root;
}

static int l_visit(lua_State *L) {
  cbstate s;
  dp_obj *root = check_root(L, &s);
  if (lua_isfunction(L, 2)) {
    s.post = 2;
  } else if (lua_istable(L, 2)) {
    if (lua_getfield(L, 2, "pre") != LUA_TNIL) s.pre = lua_gettop(L);
    if (lua_getfield(L, 2, "post") != LUA_TNIL) s.post = lua_gettop(L);
    if (!s.pre && !s.post) luaL_argerror(L, 2, "needs pre or post");
  } else {
    luaL_typeerror(L, 2, "function or {pre =, post =}");
  }
  dp_visitor v = {s.pre ? visit_pre : NULL, s.post ? visit_post : NULL, &s};
  int rc = 0;
  if (root->type == DP_OBJ_EXPR) {
    rc = dp_visit((dp_expr *)root, &v);
  } else {
    dp_module *m = (dp_module *)root;
    for (uint32_t i = 0; i < m->nfuncs && rc == 0; i++) rc = dp_visit(&m->funcs[i].fn->e, &v);
  }
  if (s.failed) raise_failed(L, &s);
  if (rc < 0) return dp__lua_oom(L); /* stopped with no callback failing */
  return 0;
}

/* ---------------- dp.rewrite ---------------- */

/* The handler's result (at the top) as a new reference; pops it. */
static dp_expr *take_result(cbstate *s, dp_expr *keep, const char *kind, dp_err **err) {
  lua_State *L = s->L;
  dp_expr *r = NULL;
  if (lua_isnil(L, -1)) r = keep ? dp_retain(keep) : NULL;
  else if ((r = dp__lua_test(L, -1, DP_OBJ_EXPR))) dp_retain(r);
  else
    *err = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN,
                      "rewrite handler for '%s' must return an expression or nil, got %s", kind,
                      luaL_typename(L, -1));
  lua_pop(L, 1);
  return r;
}

static dp_expr *rw_pre(void *ud, dp_expr *orig, dp_err **err) {
  cbstate *s = ud;
  if (run_cb(s, s->pre, orig, NULL) < 0) {
    *err = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "error in rewrite handler 'pre'");
    return NULL;
  }
  return take_result(s, NULL, "pre", err);
}

static dp_expr *rw_post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  cbstate *s = ud;
  int kind = rebuilt->h.kind;
  int slot = kind > 0 && kind < NKINDS ? s->handlers[kind] : 0;
  if (!slot) slot = s->handlers[0];
  if (!slot) return dp_retain(rebuilt);
  if (run_cb(s, slot, rebuilt, orig) < 0) {
    *err = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "error in rewrite handler for '%s'",
                      dp_exprkind_name(kind));
    return NULL;
  }
  return take_result(s, rebuilt, dp_exprkind_name(kind), err);
}

/* Handler slots from the table at arg 2: kind names, "any" and "pre". */
static void setup_handlers(lua_State *L, cbstate *s) {
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    lua_pop(L, 1);
    const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    int ok = k && (strcmp(k, "any") == 0 || strcmp(k, "pre") == 0);
    for (int i = 1; k && !ok && i < NKINDS; i++) ok = strcmp(k, dp_exprkind_name(i)) == 0;
    if (!ok)
      luaL_argerror(L, 2, lua_pushfstring(L, "unknown handler key '%s' (use an expression kind, "
                                             "'any' or 'pre')", k ? k : luaL_typename(L, -1)));
  }
  for (int i = 0; i < NKINDS; i++) {
    const char *k = i ? dp_exprkind_name(i) : "any";
    if (lua_getfield(L, 2, k) == LUA_TNIL) {
      lua_pop(L, 1);
      continue;
    }
    if (!lua_isfunction(L, -1))
      luaL_argerror(L, 2, lua_pushfstring(L, "handler '%s' must be a function", k));
    s->handlers[i] = lua_gettop(L);
  }
  if (lua_getfield(L, 2, "pre") != LUA_TNIL) s->pre = lua_gettop(L);
}

/* Rewrites root; on failure raises (the core has released everything). */
static dp_expr *rewrite_one(lua_State *L, cbstate *s, dp_expr *root) {
  dp_rewriter rw = {s->pre ? rw_pre : NULL, rw_post, s};
  dp_err *err = NULL;
  dp_expr *r = dp_rewrite(root, &rw, &err);
  if (r) return r;
  if (s->failed) {
    dp_err_free(err);
    raise_failed(L, s);
  }
  dp__lua_error(L, err ? err : dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return NULL;
}

/* Every function of m rewritten into a new module; functions whose
   rewrite is not a fn are an error. */
static int rewrite_module(lua_State *L, cbstate *s, dp_module *m) {
  /* A Lua error may come from any function's handlers: hold the new module
     in a userdata so it is released by the GC in that case. */
  dp_module *c = dp_module_copy(m);
  if (!c) return dp__lua_oom(L);
  dp__lua_push_owned(L, c);
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_expr *r = rewrite_one(L, s, &m->funcs[i].fn->e);
    dp_err *err = NULL;
    if (r->h.kind != DP_FUNC)
      err = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "rewrite of @%s gave a %s, not a fn",
                       m->funcs[i].global->name, dp_exprkind_name(r->h.kind));
    else if (r != &m->funcs[i].fn->e)
      dp_module_set_func(c, m->funcs[i].global->name, (dp_func *)r, &err);
    dp_release(r);
    if (err) dp__lua_error(L, err);
  }
  return 1;
}

static int l_rewrite(lua_State *L) {
  cbstate s;
  dp_obj *root = check_root(L, &s);
  setup_handlers(L, &s);
  if (root->type == DP_OBJ_MODULE) return rewrite_module(L, &s, (dp_module *)root);
  dp__lua_push_owned(L, rewrite_one(L, &s, (dp_expr *)root));
  return 1;
}

/* ---------------- helpers ---------------- */

static int l_free_vars(lua_State *L) {
  dp_expr *e = dp__lua_check_expr(L, 1);
  uint32_t n = 0;
  dp_var **vs = dp_free_vars(e, &n);
  if (!vs) return dp__lua_oom(L);
  dp__lua_push_list(L, (void *const *)vs, n);
  free(vs);
  return 1;
}

/* dp.children(e): the children in the order of expr.h. */
static int l_children(lua_State *L) {
  dp_expr *e = dp__lua_check_expr(L, 1);
  uint32_t n = dp_expr_nchildren(e);
  lua_createtable(L, (int)n, 0);
  for (uint32_t i = 0; i < n; i++) {
    dp__lua_push(L, dp_expr_child(e, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

void dp__lua_open_visit(lua_State *L) {
  static const luaL_Reg fns[] = {{"visit", l_visit}, {"rewrite", l_rewrite},
                                 {"free_vars", l_free_vars}, {"children", l_children},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
