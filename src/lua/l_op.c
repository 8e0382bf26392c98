/*
 * Operators and type inference from Lua: dp.op.get, dp.op.names,
 * dp.op.register (with a type relation written in Lua), dp.infer_type and
 * dp.infer_expr.
 *
 * A Lua type relation lives in the registry (luaL_ref) and is released by
 * the op's ud_free. The C trampoline (dp_type_rel) calls it under
 * lua_pcall with a list of argument types and the attributes table; an
 * error inside it, or a result that is not a Type, becomes a type error
 * naming the operator, which inference reports at the call.
 */
#include <stdlib.h>
#include <string.h>
#include "l_attrs.h"
#include "l_init.h"

typedef struct lua_rel {
  lua_State *main;   /* the state that owns the registry reference */
  int ref;
  const dp_op *op;   /* set once registered (borrowed: the op owns us) */
} lua_rel;

/* The thread running inference, so relations run on the running coroutine
   rather than a suspended main thread. NULL outside dp.infer_*. */
static _Thread_local lua_State *active_thread;

static void rel_free(void *ud) {
  lua_rel *r = ud;
  if (!r) return;
  luaL_unref(r->main, LUA_REGISTRYINDEX, r->ref);
  free(r);
}

typedef struct rel_call {
  lua_rel *rel;
  dp_type *const *args;
  uint32_t nargs;
  const dp_attrs *attrs;
} rel_call;

/* The attributes a relation sees: with a schema, every field that has a
   value (the call's own or the default); without, the call's own. */
static void push_rel_attrs(lua_State *L, const dp_op *op, const dp_attrs *attrs) {
  if (!op || !op->fields) {
    dp__lua_push_attrs(L, attrs);
    return;
  }
  lua_createtable(L, 0, (int)op->nfields);
  for (uint32_t i = 0; i < op->nfields; i++) {
    const dp_aval *v = dp_op_attr(op, attrs, op->fields[i].name);
    if (!v) continue;
    dp__lua_push_aval(L, v);
    lua_setfield(L, -2, op->fields[i].name);
  }
}

/* Runs under lua_pcall: calls the relation, leaves the result type. */
static int rel_body(lua_State *L) {
  rel_call *c = lua_touserdata(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->rel->ref);
  dp__lua_push_list(L, (void *const *)c->args, c->nargs);
  push_rel_attrs(L, c->rel->op, c->attrs);
  lua_call(L, 2, 1);
  if (!dp__lua_test(L, -1, DP_OBJ_TYPE))
    return luaL_error(L, "type_rel must return a Type, got %s", luaL_typename(L, -1));
  return 1;
}

static dp_type *lua_type_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                             const dp_attrs *attrs, void *ud, dp_err **err) {
  lua_rel *r = ud;
  lua_State *L = active_thread ? active_thread : r->main;
  const char *name = r->op ? r->op->name : "?";
  if (!lua_checkstack(L, 8)) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of Lua stack"));
    return NULL;
  }
  rel_call c = {r, args, nargs, attrs};
  lua_pushcfunction(L, rel_body);
  lua_pushlightuserdata(L, &c);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    const char *msg = dp__lua_errtext(L); /* inference is under way: nothing may raise here */
    dp_err_set(err, dp_err_new(DP_ERR_TYPE, DP_NOSPAN, "type relation of '%s' failed: %s", name,
                               msg ? msg : "error"));
    lua_pop(L, 1);
    return NULL;
  }
  dp_type *t = dp_retain(dp__lua_test(L, -1, DP_OBJ_TYPE));
  lua_pop(L, 1);
  return t;
}

/* ---------------- dp.op ---------------- */

static int l_get(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  dp_op *op = dp_op_get(dp__lua_ctx(L), name);
  if (!op) return dp__lua_error(L, dp_err_new(DP_ERR_NAME, DP_NOSPAN, "unknown operator '%s'", name));
  dp__lua_push(L, op);
  return 1;
}

/* dp.op.names() -> names in registration order. */
static int l_names(lua_State *L) {
  dp_ctx *ctx = dp__lua_ctx(L);
  uint32_t n = dp_op_count(ctx);
  lua_createtable(L, (int)n, 0);
  for (uint32_t i = 0; i < n; i++) {
    lua_pushstring(L, dp_op_at(ctx, i)->name);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* Pushes t[name] of the table at idx without metamethods: both passes
   over spec.attrs must see the same values, and pass 2 must not raise. */
static int raw_field(lua_State *L, int idx, const char *name) {
  lua_pushstring(L, name);
  return lua_rawget(L, idx < 0 ? idx - 1 : idx);
}

/* Pass 1 over spec.attrs (at idx): checks, and anchors strings in place. */
static uint32_t check_fields(lua_State *L, int idx) {
  if (lua_isnil(L, idx)) return 0;
  if (!lua_istable(L, idx)) luaL_error(L, "dp.op.register: attrs must be a list");
  lua_Unsigned n = lua_rawlen(L, idx);
  if (n > 1024) luaL_error(L, "dp.op.register: too many attributes");
  for (lua_Unsigned i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, (lua_Integer)i);
    int f = lua_gettop(L);
    if (!lua_istable(L, f)) luaL_error(L, "dp.op.register: attrs[%d] must be {name =, kind =}", (int)i);
    if (raw_field(L, f, "name") != LUA_TSTRING)
      luaL_error(L, "dp.op.register: attrs[%d].name must be a string", (int)i);
    int kt = raw_field(L, f, "kind");
    const char *kind = kt == LUA_TNIL ? "any" : kt == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (!kind || dp__lua_attrkind(kind) < 0)
      luaL_error(L, "dp.op.register: attrs[%d].kind: unknown kind '%s'", (int)i,
                 kind ? kind : luaL_typename(L, -1));
    if (raw_field(L, f, "default") != LUA_TNIL) dp__lua_check_aval(L, -1, lua_tostring(L, f + 1));
    lua_settop(L, f - 1);
  }
  return (uint32_t)n;
}

/* Pass 2: the fields (names borrowed from the tables, defaults owned). */
static int build_fields(lua_State *L, int idx, dp_attr_field *fs, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    lua_rawgeti(L, idx, (lua_Integer)i + 1);
    raw_field(L, -1, "name");
    fs[i].name = lua_tostring(L, -1); /* held by the spec table */
    raw_field(L, -2, "kind");
    fs[i].kind = (dp_attrkind)(lua_isnil(L, -1) ? 0 : dp__lua_attrkind(lua_tostring(L, -1)));
    raw_field(L, -3, "default");
    fs[i].has_default = !lua_isnil(L, -1);
    int rc = fs[i].has_default ? dp__lua_to_aval(L, -1, fs[i].kind, &fs[i].dflt) : 0;
    if (!fs[i].has_default) fs[i].dflt = dp_av_none();
    lua_pop(L, 4);
    if (rc < 0) {
      for (uint32_t j = 0; j < i; j++) dp_av_clear(&fs[j].dflt);
      return -1;
    }
  }
  return 0;
}

/* spec.pattern (at idx): nil, or an operator pattern kind name. */
static int check_pattern(lua_State *L, int idx) {
  if (lua_isnil(L, idx)) return DP_OPP_NONE;
  const char *name = lua_tostring(L, idx);
  int k = lua_type(L, idx) == LUA_TSTRING ? dp_oppattern_parse(name) : -2;
  if (k == -2)
    luaL_argerror(L, 2, "pattern must be an operator pattern kind: \"elemwise\", \"broadcast\", "
                        "\"injective\", \"comm_reduce\", \"out_elemwise_fusable\", \"tuple\" or \"opaque\"");
  return k;
}

/* dp.op.register(name, {num_inputs =, attrs = {{name =, kind =, default =}...},
   type_rel = function(arg_types, attrs) return Type end, pattern = "elemwise"?}) -> op */
static int l_register(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_getfield(L, 2, "num_inputs"); /* 3 */
  int isint = 0;
  lua_Integer ni = lua_isnil(L, 3) ? -1 : lua_tointegerx(L, 3, &isint);
  if (!lua_isnil(L, 3) && (!isint || ni < -1 || ni > 65536))
    luaL_argerror(L, 2, "num_inputs must be an integer >= 0 (or -1: variadic)");
  lua_getfield(L, 2, "type_rel"); /* 4 */
  if (!lua_isfunction(L, 4)) luaL_argerror(L, 2, "type_rel must be a function");
  lua_getfield(L, 2, "attrs"); /* 5 */
  uint32_t nf = check_fields(L, 5);
  lua_getfield(L, 2, "pattern");
  int pattern = check_pattern(L, -1);
  lua_pop(L, 1);
  if (dp_op_get(dp__lua_ctx(L), name))
    return dp__lua_error(L, dp_err_new(DP_ERR_NAME, DP_NOSPAN, "operator '%s' is already registered", name));
  dp_attr_field *fs = nf ? lua_newuserdatauv(L, nf * sizeof *fs, 0) : NULL;
  lua_rel *r = lua_newuserdatauv(L, sizeof *r, 0); /* scratch until malloc'd below */
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  r->main = lua_tothread(L, -1);
  lua_pushvalue(L, 4);
  r->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  /* No Lua error from here until registered: C memory is being taken. */
  lua_rel *ud = dp_malloc(sizeof *ud);
  if (!ud || (nf && build_fields(L, 5, fs, nf) < 0)) {
    free(ud);
    luaL_unref(L, LUA_REGISTRYINDEX, r->ref);
    return dp__lua_oom(L);
  }
  *ud = *r;
  ud->op = NULL;
  dp_err *err = NULL;
  dp_op *op = dp_op_register(dp__lua_ctx(L), name, (int)ni, 0, fs, nf, lua_type_rel, ud, rel_free, &err);
  if (!op) return dp__lua_error(L, err); /* the registry freed fs defaults and ud */
  ud->op = op;
  dp_op_set_pattern(op, pattern); /* checked above: cannot fail */
  dp__lua_push(L, op);
  return 1;
}

/* ---------------- inference ---------------- */

/* Infers the types of m (e NULL) or of e in m (m may be NULL) with Lua
   relations running on L; raises a type error. */
static void infer(lua_State *L, dp_module *m, dp_expr *e) {
  lua_State *saved = active_thread;
  active_thread = L;
  dp_err *err = NULL;
  int rc = e ? dp_infer_expr(m, e, &err) : dp_infer_module(m, &err);
  active_thread = saved;
  if (rc < 0) dp__lua_error(L, err ? err : dp_err_new(DP_ERR_TYPE, DP_NOSPAN, "type error"));
}

static int l_infer_type(lua_State *L) {
  infer(L, dp__lua_check(L, 1, DP_OBJ_MODULE), NULL);
  lua_settop(L, 1);
  return 1;
}

/* dp.infer_expr(e, mod?) -> e's checked type */
static int l_infer_expr(lua_State *L) {
  dp_expr *e = dp__lua_check_expr(L, 1);
  infer(L, lua_isnoneornil(L, 2) ? NULL : dp__lua_check(L, 2, DP_OBJ_MODULE), e);
  dp__lua_push(L, e->type);
  return 1;
}

void dp__lua_open_op(lua_State *L) {
  static const luaL_Reg ops[] = {
    {"get", l_get}, {"names", l_names}, {"register", l_register}, {NULL, NULL}};
  luaL_newlib(L, ops);
  lua_setfield(L, -2, "op");
  lua_pushcfunction(L, l_infer_type);
  lua_setfield(L, -2, "infer_type");
  lua_pushcfunction(L, l_infer_expr);
  lua_setfield(L, -2, "infer_expr");
}
