/*
 * Modules, ADT type definitions and primfn declarations from Lua
 * (dp.IRModule, dp.typedef, dp.primfn), their fields and methods, printing
 * (tostring, dp.astext) and structural equality (dp.structural_equal,
 * dp.assert_structural_equal).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "l_init.h"

/* ---------------- type definitions ---------------- */

typedef struct ctor_spec {
  const char *name;
  uint32_t ninputs;
  void **inputs;
  dp_span span;
} ctor_spec;

/* dp.typedef(name, {type_vars}, {{name =, inputs = {types}}, ...}, {span =}?) */
static int l_typedef(lua_State *L) {
  lua_settop(L, 4); /* fixed slots: scratch buffers go above */
  const char *name = luaL_checkstring(L, 1);
  void *sp[8];
  uint32_t np;
  void **tp = dp__lua_opt_type_params(L, 2, sp, 8, &np);
  luaL_checktype(L, 3, LUA_TTABLE);
  dp_span span = dp__lua_span_opts(L, 4);
  lua_Unsigned nc = lua_rawlen(L, 3);
  if (nc > 65536) luaL_argerror(L, 3, "too many constructors");
  ctor_spec *cs = lua_newuserdatauv(L, (nc ? nc : 1) * sizeof *cs, 0);
  lua_createtable(L, (int)nc, 0); /* anchors the input lists' scratch buffers */
  int anchors = lua_gettop(L);
  for (lua_Unsigned i = 0; i < nc; i++) {
    lua_rawgeti(L, 3, (lua_Integer)i + 1);
    int c = lua_gettop(L);
    if (!lua_istable(L, c))
      luaL_argerror(L, 3, lua_pushfstring(L, "constructors[%d] must be {name =, inputs =}", (int)i + 1));
    if (lua_getfield(L, c, "name") != LUA_TSTRING)
      luaL_argerror(L, 3, lua_pushfstring(L, "constructors[%d].name must be a string", (int)i + 1));
    cs[i].name = lua_tostring(L, -1);
    lua_rawseti(L, anchors, (lua_Integer)(2 * i + 1));
    cs[i].ninputs = 0;
    cs[i].inputs = NULL;
    if (lua_getfield(L, c, "inputs") != LUA_TNIL) {
      int in = lua_gettop(L);
      int top = in;
      cs[i].inputs = dp__lua_check_list(L, in, DP_OBJ_TYPE, 0, "inputs", NULL, 0, &cs[i].ninputs);
      if (lua_gettop(L) > top) lua_rawseti(L, anchors, (lua_Integer)(2 * i + 2));
      lua_pushvalue(L, in);
      lua_rawseti(L, anchors, (lua_Integer)(2 * nc + i + 1));
    }
    cs[i].span = dp__lua_opt_span(L, c);
    lua_settop(L, anchors);
  }
  /* No Lua error from here on until the references are handed over. */
  dp_ctor **ctors = lua_newuserdatauv(L, (nc ? nc : 1) * sizeof *ctors, 0);
  for (uint32_t i = 0; i < nc; i++) {
    ctors[i] = dp_ctor_new(cs[i].name, name, i, np, (dp_type *const *)tp, cs[i].ninputs,
                           (dp_type *const *)cs[i].inputs, cs[i].span);
    if (!ctors[i]) {
      for (uint32_t j = 0; j < i; j++) dp_release(ctors[j]);
      return dp__lua_oom(L);
    }
  }
  dp_typedef *td = dp_typedef_new(name, np, (dp_type *const *)tp, (uint32_t)nc, ctors, span);
  for (uint32_t i = 0; i < nc; i++) dp_release(ctors[i]);
  return dp__lua_push_new(L, td, NULL);
}

static int typedef_index(lua_State *L) {
  dp_typedef *td = dp__lua_check(L, 1, DP_OBJ_TYPEDEF);
  const char *k = lua_tostring(L, 2);
  if (!k) lua_pushnil(L);
  else if (strcmp(k, "name") == 0) lua_pushstring(L, td->name);
  else if (strcmp(k, "type_params") == 0) dp__lua_push_list(L, (void *const *)td->tparams, td->ntparams);
  else if (strcmp(k, "constructors") == 0) dp__lua_push_list(L, (void *const *)td->ctors, td->nctors);
  else if (strcmp(k, "span") == 0) dp__lua_push_span(L, td->span);
  else lua_pushnil(L);
  return 1;
}

static int typedef_tostring(lua_State *L) {
  return dp__lua_push_cstr(L, dp_print_typedef(dp__lua_check(L, 1, DP_OBJ_TYPEDEF)));
}

/* ---------------- primfns ---------------- */

/* A buffer: a Type, or {type, scope} / {type =, scope =}. Borrowed. */
static dp_buffer check_buffer(lua_State *L, int idx, int arg, const char *what) {
  dp_buffer b = {NULL, NULL};
  idx = lua_absindex(L, idx);
  b.type = dp__lua_test(L, idx, DP_OBJ_TYPE);
  if (b.type) {
    b.scope = (char *)"";
    return b;
  }
  if (lua_istable(L, idx)) {
    dp__lua_item(L, idx, 1, "type");
    dp__lua_item(L, idx, 2, "scope");
    b.type = dp__lua_test(L, -2, DP_OBJ_TYPE);
    b.scope = (char *)(lua_isnil(L, -1) ? "" : lua_tostring(L, -1));
    /* the scope string stays referenced by the table (or is a literal) */
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING) b.scope = NULL;
    lua_pop(L, 2);
  }
  if (!b.type || !b.scope)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s must be a Type or {type, scope = \"...\"}", what));
  return b;
}

/* dp.primfn(name, {buffers}, result_buffer, {span =}?) */
static int l_primfn(lua_State *L) {
  lua_settop(L, 4); /* fixed slots: scratch buffers go above */
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Unsigned n = lua_rawlen(L, 2);
  if (n > 65536) luaL_argerror(L, 2, "too many buffers");
  dp_buffer *args = lua_newuserdatauv(L, (n ? n : 1) * sizeof *args, 0);
  for (lua_Unsigned i = 0; i < n; i++) {
    lua_rawgeti(L, 2, (lua_Integer)i + 1);
    int at = lua_gettop(L);
    args[i] = check_buffer(L, at, 2, lua_pushfstring(L, "args[%d]", (int)i + 1));
    lua_pop(L, 2);
  }
  dp_buffer res = check_buffer(L, 3, 3, "result");
  dp_span span = dp__lua_span_opts(L, 4);
  return dp__lua_push_new(L, dp_primfn_new(name, (uint32_t)n, args, res, span), NULL);
}

static void push_buffer(lua_State *L, const dp_buffer *b) {
  lua_createtable(L, 0, 2);
  dp__lua_push(L, b->type);
  lua_setfield(L, -2, "type");
  lua_pushstring(L, b->scope ? b->scope : "");
  lua_setfield(L, -2, "scope");
}

static int primfn_index(lua_State *L) {
  dp_primfn *pf = dp__lua_check(L, 1, DP_OBJ_PRIMFN);
  const char *k = lua_tostring(L, 2);
  if (!k) lua_pushnil(L);
  else if (strcmp(k, "name") == 0) lua_pushstring(L, pf->name);
  else if (strcmp(k, "result") == 0) push_buffer(L, &pf->result);
  else if (strcmp(k, "span") == 0) dp__lua_push_span(L, pf->span);
  else if (strcmp(k, "args") == 0) {
    lua_createtable(L, (int)pf->nargs, 0);
    for (uint32_t i = 0; i < pf->nargs; i++) {
      push_buffer(L, &pf->args[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
  } else lua_pushnil(L);
  return 1;
}

static int primfn_tostring(lua_State *L) {
  return dp__lua_push_cstr(L, dp_print_primfn(dp__lua_check(L, 1, DP_OBJ_PRIMFN)));
}

/* ---------------- modules ---------------- */

/* A function entry {name, fn}: name is a string or a global. */
static void check_func_entry(lua_State *L, int list, lua_Integer i, const char **name, dp_func **fn) {
  lua_rawgeti(L, list, i);
  int e = lua_gettop(L);
  if (!lua_istable(L, e))
    luaL_error(L, "IRModule: functions[%d] must be {name, fn}", (int)i);
  lua_rawgeti(L, e, 1);
  dp_global *g = dp__lua_test(L, -1, DP_OBJ_EXPR);
  if (g && g->e.h.kind == DP_GLOBAL) *name = g->name;
  else if (lua_type(L, -1) == LUA_TSTRING) *name = lua_tostring(L, -1); /* held by the entry */
  else luaL_error(L, "IRModule: functions[%d][1] must be a name", (int)i);
  lua_rawgeti(L, e, 2);
  dp_expr *f = dp__lua_test(L, -1, DP_OBJ_EXPR);
  if (!f || f->h.kind != DP_FUNC)
    luaL_error(L, "IRModule: functions[%d][2] must be a fn", (int)i);
  *fn = (dp_func *)f;
  lua_settop(L, e - 1);
}

static void **opt_list(lua_State *L, int t, const char *key, dp_objtype type, uint32_t *n) {
  *n = 0;
  if (lua_getfield(L, t, key) == LUA_TNIL) return NULL;
  void **items = dp__lua_check_list(L, lua_gettop(L), type, 0, key, NULL, 0, n);
  return items; /* the table (and scratch buffer) stay on the stack */
}

/* dp.IRModule{functions = {{"main", fn}, ...}, typedefs = {...}, primfns = {...}} */
static int l_module(lua_State *L) {
  lua_settop(L, 1);
  if (lua_isnil(L, 1)) {
    lua_newtable(L);
    lua_replace(L, 1);
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  uint32_t ntd, npf;
  void **tds = opt_list(L, 1, "typedefs", DP_OBJ_TYPEDEF, &ntd);
  void **pfs = opt_list(L, 1, "primfns", DP_OBJ_PRIMFN, &npf);
  lua_getfield(L, 1, "functions");
  int fl = lua_gettop(L);
  if (!lua_isnil(L, fl) && !lua_istable(L, fl)) luaL_error(L, "IRModule: functions must be a list");
  lua_Unsigned nf = lua_isnil(L, fl) ? 0 : lua_rawlen(L, fl);
  if (nf > UINT32_MAX / sizeof(dp_defn)) luaL_error(L, "IRModule: too many functions");
  const char **names = lua_newuserdatauv(L, (nf ? nf : 1) * sizeof *names, 0);
  dp_func **fns = lua_newuserdatauv(L, (nf ? nf : 1) * sizeof *fns, 0);
  for (lua_Unsigned i = 0; i < nf; i++) check_func_entry(L, fl, (lua_Integer)i + 1, &names[i], &fns[i]);
  /* Build: errors from here are dp_err values, raised after cleaning up. */
  dp_module *m = dp_module_new(dp__lua_ctx(L));
  if (!m) return dp__lua_oom(L);
  dp_err *err = NULL;
  for (uint32_t i = 0; i < ntd && !err; i++) dp_module_add_typedef(m, tds[i], &err);
  for (uint32_t i = 0; i < npf && !err; i++) dp_module_add_primfn(m, pfs[i], &err);
  for (uint32_t i = 0; i < nf && !err; i++) {
    dp_global *g = dp_global_new(names[i], DP_NOSPAN);
    if (!g) err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    else dp_module_add_func(m, g, fns[i], &err);
    dp_release(g);
  }
  return dp__lua_push_new(L, m, err);
}

static int m_functions(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  lua_createtable(L, (int)m->nfuncs, 0);
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    lua_createtable(L, 2, 0);
    lua_pushstring(L, m->funcs[i].global->name);
    lua_rawseti(L, -2, 1);
    dp__lua_push(L, m->funcs[i].fn);
    lua_rawseti(L, -2, 2);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* The lookups by name: mod:get, mod:global, mod:ctor, mod:typedef,
   mod:primfn are one method whose upvalue says which (nil when absent). */
enum { BY_FUNC, BY_GLOBAL, BY_CTOR, BY_TYPEDEF, BY_PRIMFN };
static const char *const lookup_names[] = {"get", "global", "ctor", "typedef", "primfn", NULL};

static void *lookup(const dp_module *m, int what, const char *name) {
  switch (what) {
  case BY_FUNC: return dp_module_func(m, name);
  case BY_GLOBAL: return dp_module_global(m, name);
  case BY_CTOR: return dp_module_ctor(m, name);
  case BY_TYPEDEF: return dp_module_typedef(m, name);
  default: return dp_module_primfn(m, name);
  }
}

static int m_lookup(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  int what = (int)lua_tointeger(L, lua_upvalueindex(1));
  dp__lua_push(L, lookup(m, what, luaL_checkstring(L, 2)));
  return 1;
}

static int m_typedefs(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp__lua_push_list(L, (void *const *)m->typedefs, m->ntypedefs);
  return 1;
}

static int m_primfns(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp__lua_push_list(L, (void *const *)m->prims, m->nprims);
  return 1;
}

/* mod:with_function(name, fn): a new module where name is fn (replaced in
   place, or added at the end). */
static int m_with_function(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  const char *name = luaL_checkstring(L, 2);
  dp_expr *f = dp__lua_check_expr(L, 3);
  if (f->h.kind != DP_FUNC) luaL_argerror(L, 3, "fn expected");
  dp_module *c = dp_module_copy(m);
  if (!c) return dp__lua_oom(L);
  dp_err *err = NULL;
  if (dp_module_func(c, name)) {
    dp_module_set_func(c, name, (dp_func *)f, &err);
  } else {
    dp_global *g = dp_global_new(name, DP_NOSPAN);
    if (!g) err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    else dp_module_add_func(c, g, (dp_func *)f, &err);
    dp_release(g);
  }
  return dp__lua_push_new(L, c, err);
}

/* mod:with_primfn(pf): a new module with pf added or replacing its namesake. */
static int m_with_primfn(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_primfn *pf = dp__lua_check(L, 2, DP_OBJ_PRIMFN);
  dp_module *c = dp_module_copy(m);
  if (!c) return dp__lua_oom(L);
  dp_err *err = NULL;
  if (dp_module_primfn(c, pf->name)) dp_module_set_primfn(c, pf, &err);
  else dp_module_add_primfn(c, pf, &err);
  return dp__lua_push_new(L, c, err);
}

static const luaL_Reg module_methods[] = {
  {"functions", m_functions}, {"typedefs", m_typedefs}, {"primfns", m_primfns},
  {"with_function", m_with_function}, {"with_primfn", m_with_primfn}, {NULL, NULL}};

/* The table of module methods, pushed. */
static void push_module_methods(lua_State *L) {
  luaL_newlib(L, module_methods);
  for (int i = 0; lookup_names[i]; i++) {
    lua_pushinteger(L, i);
    lua_pushcclosure(L, m_lookup, 1);
    lua_setfield(L, -2, lookup_names[i]);
  }
}

/* mod.name: a method, else the function of that name (mod:get avoids
   the clash for a function named like a method). */
static int module_index(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  const char *k = lua_tostring(L, 2);
  if (k && strcmp(k, "ctx") != 0) dp__lua_push(L, lookup(m, BY_FUNC, k));
  else lua_pushnil(L);
  return 1;
}

static int module_tostring(lua_State *L) {
  dp__lua_check(L, 1, DP_OBJ_MODULE);
  return dp__lua_push_printed(L, 1, 0);
}

/* The names a print reported (dp_print_opts.on_name), kept in a userdata
   whose __gc frees them, so that a Lua error while they become a table
   leaks nothing. */
typedef struct printed_names {
  struct pname { char *fn, *name; const dp_expr *e; } *items;
  size_t n, cap;
  int failed;
} printed_names;

static void free_names(printed_names *pn) {
  for (size_t i = 0; i < pn->n; i++) {
    free(pn->items[i].fn);
    free(pn->items[i].name);
  }
  free(pn->items);
  pn->items = NULL;
  pn->n = 0;
}

static int names_gc(lua_State *L) {
  free_names(lua_touserdata(L, 1));
  return 0;
}

static void on_name(void *ud, const char *fn, const dp_expr *e, const char *name) {
  printed_names *pn = ud;
  if (pn->failed) return;
  if (pn->n == pn->cap) {
    size_t cap = pn->cap ? pn->cap * 2 : 64;
    struct pname *it = dp_realloc(pn->items, cap * sizeof *it);
    if (!it) {
      pn->failed = 1;
      return;
    }
    pn->items = it;
    pn->cap = cap;
  }
  struct pname *it = &pn->items[pn->n];
  it->fn = dp_strdup(fn);
  it->name = dp_strdup(name);
  it->e = e;
  if (it->fn && it->name) pn->n++;
  else {
    free(it->fn);
    free(it->name);
    pn->failed = 1;
  }
}

/* {fn = {["%3"] = expr, ["%x"] = var}}: names of a bare expression under "". */
static void push_names(lua_State *L, printed_names *pn) {
  lua_newtable(L);
  for (size_t i = 0; i < pn->n; i++) {
    if (lua_getfield(L, -1, pn->items[i].fn) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, -1);
      lua_setfield(L, -3, pn->items[i].fn);
    }
    dp__lua_push(L, (void *)pn->items[i].e);
    lua_setfield(L, -2, pn->items[i].name);
    lua_pop(L, 1);
  }
}

static const char *const ASTEXT_OPTIONS[] = {"types", "short_devices", "param_lines", "names", "spans", "meta", NULL};
static const char *const PRINT_OPTIONS[] = {"types", "short_devices", "param_lines", "spans", "meta", NULL};

int dp__lua_print_flags(lua_State *L, int idx, const char *who) {
  static const struct { const char *key; int flag; } flags[] = {
    {"types", DP_PRINT_TYPES}, {"short_devices", DP_PRINT_SHORT_DEVICES},
    {"param_lines", DP_PRINT_PARAM_LINES}, {"spans", DP_PRINT_SPANS}, {"meta", DP_PRINT_META}};
  if (who) {
    dp__lua_check_opts(L, idx);
    dp__lua_check_opt_keys(L, idx, PRINT_OPTIONS, who);
  }
  int f = 0;
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    if (dp__lua_opt_field(L, idx, flags[i].key) != LUA_TNIL && lua_toboolean(L, -1)) f |= flags[i].flag;
    lua_pop(L, 1);
  }
  return f;
}

/* dp.astext(module_or_expr, {types =, short_devices =, param_lines =, names =}?)
   -> text (, names when opts.names) */
static int l_astext(lua_State *L) {
  lua_settop(L, 2); /* fixed slots: scratch buffers go above */
  dp__lua_check_opts(L, 2);
  dp__lua_check_opt_keys(L, 2, ASTEXT_OPTIONS, "devplan.astext");
  dp_print_opts o = {dp__lua_print_flags(L, 2, NULL), NULL, NULL, dp__lua_ctx(L), NULL};
  int want_names = dp__lua_opt_field(L, 2, "names") != LUA_TNIL && lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!want_names) return dp__lua_push_printed(L, 1, o.flags);
  dp_obj *obj = dp__lua_testobj(L, 1);
  if (!obj || (obj->type != DP_OBJ_MODULE && obj->type != DP_OBJ_EXPR))
    return luaL_typeerror(L, 1, "IRModule or expression");
  printed_names *pn = lua_newuserdatauv(L, sizeof *pn, 0); /* slot 3 */
  memset(pn, 0, sizeof *pn);
  lua_newtable(L);
  lua_pushcfunction(L, names_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  o.on_name = on_name;
  o.ud = pn;
  dp__lua_text t;
  dp__lua_text_init(L, &t);
  o.block = t.block;
  size_t len = 0;
  char *s = obj->type == DP_OBJ_MODULE ? dp_print_module_with((dp_module *)obj, &o, &len)
                                       : dp_print_expr_with((dp_expr *)obj, &o, &len);
  if (s && pn->failed) {
    if (t.block) t.f(t.ud, s - t.blk.head, t.blk.head + len + 1, 0);
    else free(s);
    s = NULL;
  }
  dp__lua_text_push(L, &t, s, len);
  push_names(L, pn);
  free_names(pn);
  return 2;
}

/* ---------------- structural equality ---------------- */

/* 1 equal, 0 not, -1 out of memory; diff filled for modules and expressions. */
static int equal_objs(lua_State *L, dp_diff *diff) {
  dp_obj *a = dp__lua_testobj(L, 1), *b = dp__lua_testobj(L, 2);
  if (!a || !b) return lua_rawequal(L, 1, 2) || (lua_compare(L, 1, 2, LUA_OPEQ));
  if (a->type != b->type) return 0;
  switch (a->type) {
  case DP_OBJ_EXPR: return dp_expr_equal((dp_expr *)a, (dp_expr *)b, diff);
  case DP_OBJ_MODULE: return dp_module_equal((dp_module *)a, (dp_module *)b, diff);
  case DP_OBJ_TYPE: return dp_type_equal((dp_type *)a, (dp_type *)b);
  default: return a == b;
  }
}

static int l_structural_equal(lua_State *L) {
  lua_settop(L, 2); /* fixed slots: scratch buffers go above */
  luaL_checkany(L, 2);
  int same = equal_objs(L, NULL);
  if (same < 0) return dp__lua_oom(L);
  lua_pushboolean(L, same);
  return 1;
}

static void describe_side(lua_State *L, int idx) {
  luaL_tolstring(L, idx, NULL);
}

/* Raises a devplan.Error whose message has the path of the first difference
   and both sides; fields path, lhs, rhs hold them too. */
static int l_assert_structural_equal(lua_State *L) {
  lua_settop(L, 3); /* fixed slots: scratch buffers go above */
  luaL_checkany(L, 2);
  /* arguments first: nothing may raise while the diff's C strings are held */
  const char *msg = luaL_optstring(L, 3, NULL);
  dp_diff d = {NULL, NULL, NULL};
  int same = equal_objs(L, &d);
  if (same != 0) {
    dp_diff_clear(&d);
    return same < 0 ? dp__lua_oom(L) : 0;
  }
  if (!d.lhs) {
    lua_pushstring(L, d.path ? d.path : "");
    dp_diff_clear(&d);
    describe_side(L, 1);
    describe_side(L, 2);
  } else {
    lua_pushstring(L, d.path ? d.path : "");
    lua_pushstring(L, d.lhs);
    lua_pushstring(L, d.rhs ? d.rhs : "");
    dp_diff_clear(&d);
  }
  const char *path = lua_tostring(L, -3);
  dp_err *e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                         "%s%snot structurally equal%s%s\n  lhs: %s\n  rhs: %s", msg ? msg : "",
                         msg ? ": " : "", path[0] ? " at " : "", path, lua_tostring(L, -2),
                         lua_tostring(L, -1));
  dp__lua_push_error(L, e);
  lua_pushvalue(L, -4);
  lua_setfield(L, -2, "path");
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "lhs");
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, "rhs");
  return lua_error(L);
}

void dp__lua_open_module(lua_State *L) {
  dp__lua_newmeta(L, DP_OBJ_MODULE, "devplan.IRModule");
  push_module_methods(L); /* module_index's upvalue */
  lua_pushcclosure(L, module_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, module_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  dp__lua_newclass(L, DP_OBJ_TYPEDEF, "devplan.TypeDef", typedef_index, typedef_tostring);
  dp__lua_newclass(L, DP_OBJ_PRIMFN, "devplan.PrimFn", primfn_index, primfn_tostring);
  static const luaL_Reg fns[] = {
    {"IRModule", l_module}, {"typedef", l_typedef}, {"primfn", l_primfn}, {"astext", l_astext},
    {"structural_equal", l_structural_equal},
    {"assert_structural_equal", l_assert_structural_equal}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
