/*
 * Dataflow patterns from Lua: the C half of dp.pattern (lua/devplan/pattern.lua
 * builds the pattern values and compiles them through this file).
 *
 *   core.pattern.compile(nodes, root, info) -> program   nodes: descriptors (below)
 *   program:match(e) -> nil | captures      program:find(e) -> {captures, ...}
 *   program:groups(body, opaque?, what?, graph?) -> groups   core.pattern.graph(body)
 *   groups:count(), :root(i), :inputs(i), :label(i), :captures(i),
 *   groups:composite(keep, name) -> body, groups:replace(f) -> body,
 *   groups:block(opaque, keep)
 *   core.pattern.opaque() -> opaque set
 *   core.pattern.annotate(body, {{groups, keep, vd}, ...}) -> body
 *   core.pattern.with_body(fn, body) -> fn   core.pattern.raise(code, message)
 *   core.pattern.check_attrs(t)   (has_attr's table: raises what dp.call would)
 *
 * A node descriptor is a table {kind =, kids = {i, ...} (1-based), any =,
 * name =, op = <op>, expr =, type =, dtype =, shape =, index =, attrs =,
 * kinds = <bit set of operator pattern kinds>, pred = <function>}. info = {values = {...}, names = {...}}: the Lua value
 * and capture name of each node, so that captures (a match's bindings) are
 * read back as a table pattern value -> expression and name -> expression.
 *
 * Predicates (`:where`) and replacement callbacks run under lua_pcall: an
 * error in one stops the C side, which releases what it built, and comes
 * back as a devplan.Error (code "callback") naming what failed.
 */
#include <stdlib.h>
#include <string.h>
#include "l_attrs.h"
#include "l_init.h"
#include "devplan/dfpattern.h"

static const char PROGRAM[] = "devplan.DFProgram";
static const char GROUPS[] = "devplan.DFGroups";
static const char OPAQUE[] = "devplan.DFOpaque";
static const char GRAPH[] = "devplan.DFGraph";

typedef struct lprog { dp_dfp *p; } lprog;
typedef struct lgroups { dp_dfp_groups g; int made; } lgroups;
typedef struct lopaque { dp_dfp_opaque *o; } lopaque;
typedef struct lgraph { dp_dfp_graph *g; } lgraph;

static int graph_gc(lua_State *L) {
  lgraph *u = luaL_checkudata(L, 1, GRAPH);
  dp_dfp_graph_free(u->g);
  u->g = NULL;
  return 0;
}

/* graph(body) -> the indexed graph of body, for several groupings over it
   (the userdata keeps the body alive: the graph holds borrowed nodes). */
static int l_graph(lua_State *L) {
  dp_expr *body = dp__lua_check_expr(L, 1);
  lgraph *u = lua_newuserdatauv(L, sizeof *u, 1);
  u->g = NULL;
  luaL_setmetatable(L, GRAPH);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  dp_err *err = NULL;
  if (!(u->g = dp_dfp_graph_new(body, &err))) return dp__lua_error(L, err);
  return 1;
}

static int prog_gc(lua_State *L) {
  lprog *u = luaL_checkudata(L, 1, PROGRAM);
  dp_dfp_free(u->p);
  u->p = NULL;
  return 0;
}

static int groups_gc(lua_State *L) {
  lgroups *u = luaL_checkudata(L, 1, GROUPS);
  if (u->made) dp_dfp_groups_clear(&u->g);
  u->made = 0;
  return 0;
}

static int opaque_gc(lua_State *L) {
  lopaque *u = luaL_checkudata(L, 1, OPAQUE);
  dp_dfp_opaque_free(u->o);
  u->o = NULL;
  return 0;
}

static const dp_dfp *check_prog(lua_State *L, int idx) {
  lprog *u = luaL_checkudata(L, idx, PROGRAM);
  if (!u->p) luaL_argerror(L, idx, "a compiled pattern expected");
  return u->p;
}

static lgroups *check_groups(lua_State *L, int idx) {
  lgroups *u = luaL_checkudata(L, idx, GROUPS);
  if (!u->made) luaL_argerror(L, idx, "groups expected");
  return u;
}

/* ---------------- compiling ---------------- */

static const char *const KINDS[] = {"wild", "var", "const", "expr", "op", "call", "tuple", "proj",
                                    "fn", "if", "let", "alt", "attr", "type", "dtype", "shape",
                                    "dominates", "where", "use", "opkind", NULL};

/* Field `key` of the descriptor at d, as an object of `type` (NULL when absent). */
static void *opt_obj(lua_State *L, int d, const char *key, dp_objtype type, int i) {
  lua_getfield(L, d, key);
  void *o = lua_isnil(L, -1) ? NULL : dp__lua_test(L, -1, type);
  if (!lua_isnil(L, -1) && !o) luaL_error(L, "pattern node %d: bad field '%s'", i, key);
  lua_pop(L, 1); /* the descriptor keeps it alive */
  return o;
}

static uint32_t *kid_list(lua_State *L, int d, uint32_t n, uint32_t *nk, int i) {
  *nk = 0;
  if (lua_getfield(L, d, "kids") == LUA_TNIL) {
    lua_pop(L, 1);
    return NULL;
  }
  if (!lua_istable(L, -1)) luaL_error(L, "pattern node %d: kids must be a list", i);
  lua_Unsigned len = lua_rawlen(L, -1);
  uint32_t *kids = lua_newuserdatauv(L, (len ? len : 1) * sizeof *kids, 0); /* scratch */
  for (lua_Unsigned k = 0; k < len; k++) {
    lua_rawgeti(L, -2, (lua_Integer)k + 1);
    lua_Integer v = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
    if (v < 1 || (lua_Unsigned)v > n) luaL_error(L, "pattern node %d: a kid index is out of range", i);
    kids[k] = (uint32_t)v - 1;
    lua_pop(L, 1);
  }
  lua_replace(L, -2); /* keep the scratch, drop the list */
  *nk = (uint32_t)len;
  return kids;
}

static int64_t *shape_list(lua_State *L, int d, uint32_t *ndim, int i) {
  *ndim = 0;
  if (lua_getfield(L, d, "shape") == LUA_TNIL) {
    lua_pop(L, 1);
    return NULL;
  }
  lua_Unsigned len = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
  int64_t *dims = lua_newuserdatauv(L, (len ? len : 1) * sizeof *dims, 0);
  for (lua_Unsigned k = 0; k < len; k++) {
    lua_rawgeti(L, -2, (lua_Integer)k + 1);
    if (!lua_isinteger(L, -1)) luaL_error(L, "pattern node %d: a shape is a list of integers", i);
    dims[k] = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  lua_replace(L, -2);
  *ndim = (uint32_t)len;
  return dims;
}

/* One descriptor (at d) into node i of p; preds collects `pred` functions. */
static void set_node(lua_State *L, dp_dfp *p, int d, uint32_t n, int i, int preds) {
  int top = lua_gettop(L);
  dp_dfp_node x;
  memset(&x, 0, sizeof x);
  lua_getfield(L, d, "kind");
  x.kind = (uint8_t)(luaL_checkoption(L, -1, NULL, KINDS) + 1);
  lua_getfield(L, d, "any");
  if (lua_toboolean(L, -1)) x.flags = DP_DFPF_ANY;
  if (lua_getfield(L, d, "name") == LUA_TSTRING) x.name = (char *)lua_tostring(L, -1);
  x.kids = kid_list(L, d, n, &x.nkids, i);
  x.shape = shape_list(L, d, &x.ndim, i);
  x.expr = opt_obj(L, d, "expr", DP_OBJ_EXPR, i);
  x.type = opt_obj(L, d, "type", DP_OBJ_TYPE, i);
  x.index = -1;
  if (lua_getfield(L, d, "index") != LUA_TNIL) x.index = luaL_checkinteger(L, -1);
  if (lua_getfield(L, d, "dtype") == LUA_TSTRING && !(x.dtype = dp_dtype_parse(lua_tostring(L, -1))))
    luaL_error(L, "pattern node %d: unknown dtype '%s'", i, lua_tostring(L, -1));
  if (lua_getfield(L, d, "kinds") == LUA_TNUMBER) x.kinds = (uint32_t)lua_tointeger(L, -1);
  if (lua_getfield(L, d, "pred") == LUA_TFUNCTION) {
    x.pred = (uint32_t)lua_rawlen(L, preds) + 1;
    lua_pushvalue(L, -1);
    lua_rawseti(L, preds, x.pred);
  }
  lua_getfield(L, d, "attrs");
  dp_attrs *attrs = x.kind == DP_DFP_ATTR ? dp__lua_make_attrs(L, -1, NULL) : NULL; /* last: a C reference */
  x.attrs = attrs;
  dp_err *err = NULL;
  int rc = dp_dfp_set(p, (uint32_t)i - 1, &x, &err);
  dp_release(attrs);
  if (rc < 0) dp__lua_error(L, err);
  lua_settop(L, top);
}

/* compile(nodes, root, info) -> program */
static int l_compile(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer root = luaL_checkinteger(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_settop(L, 3);
  lua_Unsigned n = lua_rawlen(L, 1);
  if (n == 0 || n > (1u << 24)) luaL_argerror(L, 1, "between 1 and 16777216 pattern nodes expected");
  if (root < 1 || (lua_Unsigned)root > n) luaL_argerror(L, 2, "root out of range");
  lua_newtable(L); /* 4: predicates */
  lua_pushvalue(L, -1);
  lua_setfield(L, 3, "preds");
  lprog *u = lua_newuserdatauv(L, sizeof *u, 1); /* 5 */
  u->p = NULL;
  luaL_setmetatable(L, PROGRAM);
  lua_pushvalue(L, 3);
  lua_setiuservalue(L, 5, 1);
  if (!(u->p = dp_dfp_new((uint32_t)n))) return dp__lua_oom(L);
  for (lua_Unsigned i = 1; i <= n; i++) {
    if (lua_rawgeti(L, 1, (lua_Integer)i) != LUA_TTABLE) luaL_error(L, "pattern node %d: a table expected", (int)i);
    set_node(L, u->p, lua_gettop(L), (uint32_t)n, (int)i, 4);
    lua_pop(L, 1);
  }
  dp_err *err = NULL;
  if (dp_dfp_finish(u->p, (uint32_t)root - 1, &err) < 0) return dp__lua_error(L, err);
  lua_settop(L, 5);
  return 1;
}

/* ---------------- predicates ---------------- */

typedef struct lhost {
  lua_State *L;
  int info;          /* stack slot of the program's info table */
  const char *what;  /* what is matching, for messages */
} lhost;

/* Runs under lua_pcall: (info, pred, node) -> info.preds[pred](Expr(node)). */
static int pred_body(lua_State *L) {
  lua_getfield(L, 1, "preds");
  lua_rawgeti(L, -1, lua_tointeger(L, 2));
  dp__lua_push(L, lua_touserdata(L, 3));
  lua_call(L, 1, 1);
  return 1;
}

static int host_pred(void *ud, uint32_t pred, dp_expr *e, dp_err **err) {
  lhost *h = ud;
  lua_State *L = h->L;
  if (!lua_checkstack(L, 8)) {
    *err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of Lua stack");
    return -1;
  }
  lua_pushcfunction(L, pred_body);
  lua_pushvalue(L, h->info);
  lua_pushinteger(L, pred);
  lua_pushlightuserdata(L, e);
  if (lua_pcall(L, 3, 1, 0) != LUA_OK) {
    const char *msg = dp__lua_errtext(L); /* (its __tostring may raise: never past the matcher) */
    *err = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "%s: the :where predicate raised an error: %s",
                      h->what, msg ? msg : "error");
    lua_pop(L, 1);
    return -1;
  }
  int r = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return r;
}

/* The host for the program at prog (its info table pushed at the top,
   which must stay there while the host is used). */
static dp_dfp_host make_host(lua_State *L, int prog, lhost *h, const char *what) {
  lua_getiuservalue(L, prog, 1);
  h->L = L;
  h->info = lua_gettop(L);
  h->what = what ? what : "pattern";
  return (dp_dfp_host){host_pred, h};
}

/* Pushes captures: pattern value -> expression and name -> expression
   (the last binding of each node wins: the outermost). */
static void push_captures(lua_State *L, int info, const dp_dfp_bind *b, uint32_t n) {
  lua_getfield(L, info, "values");
  lua_getfield(L, info, "names");
  lua_createtable(L, 0, (int)(n < 64 ? n : 64));
  int t = lua_gettop(L);
  for (uint32_t i = 0; i < n; i++) {
    lua_Integer node = (lua_Integer)b[i].node + 1;
    if (lua_rawgeti(L, t - 2, node) != LUA_TNIL) {
      dp__lua_push(L, b[i].expr);
      lua_rawset(L, t);
    } else {
      lua_pop(L, 1);
    }
    if (lua_rawgeti(L, t - 1, node) == LUA_TSTRING) {
      dp__lua_push(L, b[i].expr);
      lua_rawset(L, t);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_replace(L, t - 2);
  lua_pop(L, 1);
}

/* ---------------- matching ---------------- */

/* program:match(e, what?) -> nil | captures */
static int prog_match(lua_State *L) {
  const dp_dfp *p = check_prog(L, 1);
  dp_expr *e = dp__lua_check_expr(L, 2);
  lua_settop(L, 3);
  lhost h;
  dp_dfp_host host = make_host(L, 1, &h, luaL_optstring(L, 3, NULL));
  dp_dfp_bind *binds = NULL;
  uint32_t n = 0;
  dp_err *err = NULL;
  int r = dp_dfp_match(p, e, &host, &binds, &n, &err);
  if (r < 0) return dp__lua_error(L, err);
  if (r == 0) {
    lua_pushnil(L);
    return 1;
  }
  /* pushing may raise (out of memory): keep the bindings in a userdata */
  dp_dfp_bind *kept = lua_newuserdatauv(L, (n ? n : 1) * sizeof *kept, 0);
  if (n) memcpy(kept, binds, n * sizeof *kept);
  free(binds);
  push_captures(L, h.info, kept, n);
  return 1;
}

typedef struct findud {
  lua_State *L;
  int info, list;   /* stack slots of prog_find */
} findud;

/* Runs under lua_pcall: (info, list, binds, n) appends captures to the list. */
static int found_body(lua_State *L) {
  push_captures(L, 1, lua_touserdata(L, 3), (uint32_t)lua_tointeger(L, 4));
  lua_rawseti(L, 2, (lua_Integer)lua_rawlen(L, 2) + 1);
  return 0;
}

static int on_found(void *ud, dp_expr *e, const dp_dfp_bind *b, uint32_t n, dp_err **err) {
  findud *f = ud;
  lua_State *L = f->L;
  if (!lua_checkstack(L, 8)) {
    *err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of Lua stack");
    return -1;
  }
  lua_pushcfunction(L, found_body);
  lua_pushvalue(L, f->info);
  lua_pushvalue(L, f->list);
  lua_pushlightuserdata(L, (void *)b);
  lua_pushinteger(L, n);
  if (lua_pcall(L, 4, 0, 0) != LUA_OK) {
    *err = dp__lua_toerr(L, "pattern find");
    return -1;
  }
  return 0;
}

/* program:find(e, what?) -> {captures, ...} (post order) */
static int prog_find(lua_State *L) {
  const dp_dfp *p = check_prog(L, 1);
  dp_expr *e = dp__lua_check_expr(L, 2);
  lua_settop(L, 3);
  lhost h;
  dp_dfp_host host = make_host(L, 1, &h, luaL_optstring(L, 3, NULL));
  lua_newtable(L);
  findud f = {L, h.info, lua_gettop(L)};
  dp_err *err = NULL;
  if (dp_dfp_find(p, e, &host, on_found, &f, &err) < 0) return dp__lua_error(L, err);
  return 1;
}

/* ---------------- groups ---------------- */

/* program:groups(body, opaque?, what?, graph?) -> groups */
static int prog_groups(lua_State *L) {
  const dp_dfp *p = check_prog(L, 1);
  dp_expr *body = dp__lua_check_expr(L, 2);
  const dp_dfp_opaque *o = lua_isnoneornil(L, 3) ? NULL : ((lopaque *)luaL_checkudata(L, 3, OPAQUE))->o;
  dp_dfp_graph *graph = lua_isnoneornil(L, 5) ? NULL : ((lgraph *)luaL_checkudata(L, 5, GRAPH))->g;
  if (graph && dp_dfp_graph_root(graph) != body) luaL_argerror(L, 5, "the graph of another body");
  lua_settop(L, 5);
  lua_pushnil(L); /* 6: the groups */
  lgroups *u = lua_newuserdatauv(L, sizeof *u, 1);
  lua_replace(L, 6);
  memset(u, 0, sizeof *u);
  luaL_setmetatable(L, GROUPS);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, 6, 1); /* the program: captures read its info */
  lhost h;
  dp_dfp_host host = make_host(L, 1, &h, luaL_optstring(L, 4, NULL));
  dp_err *err = NULL;
  if (dp_dfp_group_matches(p, body, &host, o, graph, &u->g, &err) < 0) return dp__lua_error(L, err);
  u->made = 1;
  lua_settop(L, 6);
  return 1;
}

static const dp_dfp_group *group_at(lua_State *L, lgroups *u, int idx) {
  lua_Integer i = luaL_checkinteger(L, idx);
  if (i < 1 || (lua_Unsigned)i > u->g.n) luaL_argerror(L, idx, "group index out of range");
  return &u->g.items[i - 1];
}

static int groups_count(lua_State *L) {
  lua_pushinteger(L, check_groups(L, 1)->g.n);
  return 1;
}

static int groups_root(lua_State *L) {
  dp__lua_push(L, group_at(L, check_groups(L, 1), 2)->root);
  return 1;
}

static int groups_inputs(lua_State *L) {
  const dp_dfp_group *g = group_at(L, check_groups(L, 1), 2);
  dp__lua_push_list(L, (void *const *)g->inputs, g->ninputs);
  return 1;
}

static int groups_label(lua_State *L) {
  return dp__lua_push_cstr(L, dp_dfp_group_label(group_at(L, check_groups(L, 1), 2)));
}

static int groups_captures(lua_State *L) {
  const dp_dfp_group *g = group_at(L, check_groups(L, 1), 2);
  lua_getiuservalue(L, 1, 1);
  lua_getiuservalue(L, -1, 1);
  push_captures(L, lua_gettop(L), g->binds, g->nbinds);
  return 1;
}

/* The keep flags of a Lua list (nil: every group), as a scratch userdata. */
static uint8_t *keep_flags(lua_State *L, int idx, uint32_t n) {
  uint8_t *keep = lua_newuserdatauv(L, n ? n : 1, 0);
  for (uint32_t i = 0; i < n; i++) {
    if (lua_isnoneornil(L, idx)) {
      keep[i] = 1;
      continue;
    }
    lua_rawgeti(L, idx, (lua_Integer)i + 1);
    keep[i] = (uint8_t)lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  return keep;
}

/* groups:composite(keep, name) -> body */
static int groups_composite(lua_State *L) {
  lgroups *u = check_groups(L, 1);
  if (!lua_isnil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  const char *name = luaL_checkstring(L, 3);
  uint8_t *keep = keep_flags(L, 2, u->g.n);
  dp_err *err = NULL;
  dp_expr *r = dp_dfp_composite(&u->g, keep, name, &err);
  return dp__lua_push_new(L, r, err);
}

typedef struct replud {
  lua_State *L;
  int fn, info, errslot;
  int failed;
} replud;

/* Runs under lua_pcall: (fn, info, group, rebuilt, binds, n) -> fn(group, rebuilt, captures) */
static int replace_body(lua_State *L) {
  lua_pushvalue(L, 1);
  lua_pushinteger(L, lua_tointeger(L, 3) + 1);
  dp__lua_push(L, lua_touserdata(L, 4));
  push_captures(L, 2, lua_touserdata(L, 5), (uint32_t)lua_tointeger(L, 6));
  lua_call(L, 3, 1);
  if (!lua_isnil(L, -1) && !dp__lua_test(L, -1, DP_OBJ_EXPR))
    return luaL_error(L, "a rewrite callback must return an expression or nil, got %s",
                      luaL_typename(L, -1));
  return 1;
}

static dp_expr *on_replace(void *ud, uint32_t group, dp_expr *rebuilt, const dp_dfp_bind *post,
                           uint32_t nbinds, dp_err **err) {
  replud *r = ud;
  lua_State *L = r->L;
  if (!lua_checkstack(L, 10)) {
    *err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of Lua stack");
    return NULL;
  }
  lua_pushcfunction(L, replace_body);
  lua_pushvalue(L, r->fn);
  lua_pushvalue(L, r->info);
  lua_pushinteger(L, group);
  lua_pushlightuserdata(L, rebuilt);
  lua_pushlightuserdata(L, (void *)post);
  lua_pushinteger(L, nbinds);
  if (lua_pcall(L, 6, 1, 0) != LUA_OK) {
    lua_replace(L, r->errslot);
    r->failed = 1;
    *err = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "rewrite callback failed");
    return NULL;
  }
  dp_expr *e = dp_retain(dp__lua_test(L, -1, DP_OBJ_EXPR));
  lua_pop(L, 1);
  return e;
}

/* groups:replace(f) -> body; f(i, rebuilt, captures) returns the
   replacement of group i's root or nil. An error in f is raised again
   with its own value. */
static int groups_replace(lua_State *L) {
  lgroups *u = check_groups(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_settop(L, 2);
  lua_getiuservalue(L, 1, 1);
  lua_getiuservalue(L, -1, 1); /* 4: info */
  lua_pushnil(L);              /* 5: error slot */
  replud r = {L, 2, 4, 5, 0};
  dp_err *err = NULL;
  dp_expr *body = dp_dfp_replace(&u->g, on_replace, &r, &err);
  if (r.failed) {
    dp_release(body);
    dp_err_free(err);
    lua_pushvalue(L, 5);
    return lua_error(L);
  }
  return dp__lua_push_new(L, body, err);
}

/* groups:block(opaque, keep): the kept groups become opaque to later patterns. */
static int groups_block(lua_State *L) {
  lgroups *u = check_groups(L, 1);
  lopaque *o = luaL_checkudata(L, 2, OPAQUE);
  if (!lua_isnil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  uint8_t *keep = keep_flags(L, 3, u->g.n);
  for (uint32_t i = 0; i < u->g.n; i++)
    if (keep[i] && dp_dfp_opaque_add(o->o, &u->g.items[i]) < 0) return dp__lua_oom(L);
  return 0;
}

static int l_opaque(lua_State *L) {
  lopaque *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->o = NULL;
  luaL_setmetatable(L, OPAQUE);
  if (!(u->o = dp_dfp_opaque_new())) return dp__lua_oom(L);
  return 1;
}

/* annotate(body, {{groups, keep, vd}, ...}) -> body */
static int l_annotate(lua_State *L) {
  dp_expr *body = dp__lua_check_expr(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_Unsigned n = lua_rawlen(L, 2);
  if (n > 65536) luaL_argerror(L, 2, "too many group sets");
  dp_dfp_placed *sets = lua_newuserdatauv(L, (n ? n : 1) * sizeof *sets, 0);
  for (lua_Unsigned k = 0; k < n; k++) {
    lua_rawgeti(L, 2, (lua_Integer)k + 1);
    int s = lua_gettop(L);
    luaL_checktype(L, s, LUA_TTABLE);
    lua_rawgeti(L, s, 1);
    lgroups *u = check_groups(L, -1);
    lua_rawgeti(L, s, 3);
    dp_vdev *vd = dp__lua_opt_vdev(L, -1, "a group set's device");
    if (!vd) luaL_error(L, "a group set needs a VirtualDevice");
    lua_rawgeti(L, s, 2);
    sets[k] = (dp_dfp_placed){&u->g, keep_flags(L, lua_gettop(L), u->g.n), vd};
    /* the set table (kept by arg 2) holds groups and vd; the flags stay on the stack */
  }
  dp_err *err = NULL;
  dp_expr *r = dp_dfp_annotate(body, sets, (uint32_t)n, &err);
  return dp__lua_push_new(L, r, err);
}

/* with_body(fn, body) -> fn with that body, everything else kept (its
   parameters, attributes, result type, virtual device, span). */
static int l_with_body(lua_State *L) {
  dp_expr *f = dp__lua_check_expr(L, 1);
  dp_expr *body = dp__lua_check_expr(L, 2);
  if (f->h.kind != DP_FUNC) luaL_argerror(L, 1, "a function expected");
  const dp_func *fn = (const dp_func *)f;
  dp_expr *small[17], **kids = fn->nparams < 16 ? small : lua_newuserdatauv(L, (fn->nparams + 1) * sizeof *kids, 0);
  for (uint32_t i = 0; i < fn->nparams; i++) kids[i] = &fn->params[i]->e;
  kids[fn->nparams] = body;
  return dp__lua_push_new(L, dp_expr_with_children(f, kids), NULL);
}

/* check_attrs(t): raises the error dp.call would give attribute table t
   (names, kinds of values, nesting), so has_attr checks when built. */
static int l_check_attrs(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  dp_release(dp__lua_make_attrs(L, 1, NULL));
  return 0;
}

/* raise(code, message): a devplan.Error, for the Lua passes. */
static int l_raise(lua_State *L) {
  static const char *const codes[] = {"callback", "value", "name", "type", NULL};
  static const dp_errcode values[] = {DP_ERR_CALLBACK, DP_ERR_VALUE, DP_ERR_NAME, DP_ERR_TYPE};
  int c = luaL_checkoption(L, 1, NULL, codes);
  return dp__lua_error(L, dp_err_new(values[c], DP_NOSPAN, "%s", luaL_checkstring(L, 2)));
}

void dp__lua_open_dfpattern(lua_State *L) {
  static const luaL_Reg prog_methods[] = {
    {"match", prog_match}, {"find", prog_find}, {"groups", prog_groups}, {NULL, NULL}};
  static const luaL_Reg groups_methods[] = {
    {"count", groups_count}, {"root", groups_root}, {"inputs", groups_inputs},
    {"label", groups_label}, {"captures", groups_captures}, {"composite", groups_composite},
    {"replace", groups_replace}, {"block", groups_block}, {NULL, NULL}};
  luaL_newmetatable(L, PROGRAM);
  lua_pushcfunction(L, prog_gc);
  lua_setfield(L, -2, "__gc");
  luaL_newlib(L, prog_methods);
  lua_setfield(L, -2, "__index");
  luaL_newmetatable(L, GROUPS);
  lua_pushcfunction(L, groups_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, groups_count);
  lua_setfield(L, -2, "__len");
  luaL_newlib(L, groups_methods);
  lua_setfield(L, -2, "__index");
  luaL_newmetatable(L, OPAQUE);
  lua_pushcfunction(L, opaque_gc);
  lua_setfield(L, -2, "__gc");
  luaL_newmetatable(L, GRAPH);
  lua_pushcfunction(L, graph_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 4);
  static const luaL_Reg fns[] = {
    {"compile", l_compile}, {"opaque", l_opaque}, {"annotate", l_annotate}, {"raise", l_raise},
    {"with_body", l_with_body}, {"graph", l_graph},
    {"check_attrs", l_check_attrs}, {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_setfield(L, -2, "pattern");
}
