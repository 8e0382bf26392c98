/*
 * Expressions and patterns from Lua: the constructors (dp.var, dp.call,
 * dp.fn, ..., dp.pat.*) and the fields of Expr and Pattern values.
 *
 * Each constructor checks every argument (which may raise) while holding
 * only borrowed pointers, then makes the node; the core retains children.
 * Each call costs one userdata and no Lua table beyond the arguments.
 */
#include <stdlib.h>
#include <string.h>
#include "l_attrs.h"
#include "l_const.h"
#include "l_init.h"

/* ---------------- constructors ---------------- */

/* dp.var(name, type_annotation?, {virtual_device =, span =}?); the
   annotation may be left out: dp.var("x", {virtual_device = vd}). */
static int l_var(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  int opts = 3;
  if (lua_type(L, 2) == LUA_TTABLE && lua_isnone(L, 3)) opts = 2;
  lua_settop(L, 3); /* fixed slots */
  dp_type *annot = opts == 3 ? dp__lua_opt_type(L, 2) : NULL;
  static const char *const keys[] = {"virtual_device", "span", NULL};
  dp__lua_check_opts(L, opts);
  dp__lua_check_opt_keys(L, opts, keys, "devplan.var");
  dp__lua_opt_field(L, opts, "virtual_device");
  dp_vdev *vd = dp__lua_opt_vdev(L, -1, "virtual_device");
  dp_span span = dp__lua_opt_span(L, opts);
  return dp__lua_push_new(L, dp_var_new(name, annot, vd, span), NULL);
}

static int l_global(lua_State *L) {
  lua_settop(L, 2); /* fixed slots: scratch buffers go above */
  const char *name = luaL_checkstring(L, 1);
  dp_span span = dp__lua_span_opts(L, 2);
  return dp__lua_push_new(L, dp_global_new(name, span), NULL);
}

static dp_expr *check_callee(lua_State *L, int idx) {
  if (lua_type(L, idx) == LUA_TSTRING) {
    dp_op *op = dp_op_get(dp__lua_ctx(L), lua_tostring(L, idx));
    if (!op)
      dp__lua_error(L, dp_err_new(DP_ERR_NAME, DP_NOSPAN, "unknown operator '%s'",
                                 lua_tostring(L, idx)));
    return &op->e;
  }
  dp_expr *e = dp__lua_test(L, idx, DP_OBJ_EXPR);
  if (!e) luaL_argerror(L, idx, "callee must be an expression or an operator name");
  return e;
}

/* TVM's OnDevice helper, which dp.call("on_device", ...) stands for: an
   on_device that constrains neither its body nor its result gets the fully
   unconstrained device (TVM's parser, and devplan's, keep the device
   written: a free on_device of a function body still names it). Takes
   attrs; a new set, or attrs itself when nothing changes. */
static dp_attrs *on_device_attrs(lua_State *L, const dp_op *op, dp_attrs *attrs) {
  const dp_aval *body = dp_op_attr(op, attrs, "constrain_body");
  const dp_aval *result = dp_op_attr(op, attrs, "constrain_result");
  const dp_aval *vd = dp_attrs_get(attrs, "virtual_device");
  if (!body || !result || body->u.i || result->u.i || !vd || vd->kind != DP_AV_VDEV ||
      dp_vdev_is_fully_unconstrained(vd->u.vdev))
    return attrs;
  dp_attr small[8], *items = attrs->n <= 8 ? small : dp_malloc(attrs->n * sizeof *items);
  dp_vdev *free_vd = items ? dp_vdev_unconstrained(dp__lua_ctx(L)) : NULL;
  dp_err *err = NULL;
  dp_attrs *r = NULL;
  if (free_vd) {
    for (uint32_t i = 0; i < attrs->n; i++) {
      items[i].key = attrs->items[i].key;
      items[i].val = strcmp(attrs->items[i].key, "virtual_device") ? dp_av_copy(&attrs->items[i].val)
                                                                    : dp_av_vdev(free_vd);
    }
    r = dp_op_attrs(op, attrs->n, items, &err);
  }
  dp_release(free_vd);
  if (items != small) free(items);
  dp_release(attrs);
  if (!r) dp__lua_error(L, err ? err : dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return r;
}

/* dp.call(callee, {args}, {attrs}?, {span =}?) */
static int l_call(lua_State *L) {
  lua_settop(L, 4); /* fixed slots: scratch buffers go above */
  dp_expr *fn = check_callee(L, 1);
  void *small[16];
  uint32_t n;
  void **args = dp__lua_check_list(L, 2, DP_OBJ_EXPR, 0, "args", small, 16, &n);
  const dp_op *op = fn->h.kind == DP_OP ? (const dp_op *)fn : NULL;
  if (op && op->num_inputs >= 0 && (uint32_t)op->num_inputs != n)
    dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                               "operator '%s' takes %d argument%s, got %u", op->name,
                               op->num_inputs, op->num_inputs == 1 ? "" : "s", n));
  dp_span span = dp__lua_span_opts(L, 4);
  dp_attrs *attrs = dp__lua_make_attrs(L, 3, op); /* last: takes C references */
  if (op && attrs && !strcmp(op->name, "on_device")) attrs = on_device_attrs(L, op, attrs);
  dp_call *c = dp_call_new(fn, n, (dp_expr *const *)args, attrs, span);
  dp_release(attrs);
  return dp__lua_push_new(L, c, NULL);
}

/* dp.fn({params}, body, {ret_type =, virtual_device =, attrs =, type_params =, span =}?) */
static int l_fn(lua_State *L) {
  lua_settop(L, 3); /* fixed slots: scratch buffers go above */
  void *small[16], *tsmall[8];
  uint32_t n, ntp;
  void **params = dp__lua_check_list(L, 1, DP_OBJ_EXPR, DP_VAR, "params", small, 16, &n);
  dp_expr *body = dp__lua_check_expr(L, 2);
  static const char *const keys[] = {"ret_type", "virtual_device", "attrs", "type_params", "span", NULL};
  dp__lua_check_opts(L, 3);
  dp__lua_check_opt_keys(L, 3, keys, "devplan.fn");
  dp__lua_opt_field(L, 3, "ret_type");
  dp_type *ret = lua_isnil(L, -1) ? NULL : dp__lua_test(L, -1, DP_OBJ_TYPE);
  if (!lua_isnil(L, -1) && !ret) luaL_argerror(L, 3, "ret_type must be a Type");
  dp__lua_opt_field(L, 3, "virtual_device");
  dp_vdev *vd = dp__lua_opt_vdev(L, -1, "virtual_device");
  dp_span span = dp__lua_opt_span(L, 3);
  dp__lua_opt_field(L, 3, "type_params");
  void **tps = dp__lua_opt_type_params(L, lua_gettop(L), tsmall, 8, &ntp);
  for (uint32_t i = 0; i < ntp; i++)
    for (uint32_t k = 0; k < i; k++)
      if (tps[k] == tps[i]) luaL_argerror(L, 3, "type_params: a type variable given twice");
  dp__lua_opt_field(L, 3, "attrs");
  dp_attrs *attrs = dp__lua_make_attrs(L, -1, NULL);
  dp_func *f = dp_func_new_generic(ntp, (dp_type *const *)tps, n, (dp_var *const *)params, body, ret, attrs, vd,
                                   span);
  dp_release(attrs);
  return dp__lua_push_new(L, f, NULL);
}

static int l_let(lua_State *L) {
  lua_settop(L, 4); /* fixed slots: scratch buffers go above */
  dp_var *v = dp__lua_check_var(L, 1);
  dp_expr *value = dp__lua_check_expr(L, 2);
  dp_expr *body = dp__lua_check_expr(L, 3);
  dp_span span = dp__lua_span_opts(L, 4);
  return dp__lua_push_new(L, dp_let_new(v, value, body, span), NULL);
}

static int l_tuple(lua_State *L) {
  lua_settop(L, 2); /* fixed slots: scratch buffers go above */
  void *small[16];
  uint32_t n;
  void **f = dp__lua_check_list(L, 1, DP_OBJ_EXPR, 0, "fields", small, 16, &n);
  dp_span span = dp__lua_span_opts(L, 2);
  return dp__lua_push_new(L, dp_tuple_new(n, (dp_expr *const *)f, span), NULL);
}

static int l_proj(lua_State *L) {
  lua_settop(L, 3); /* fixed slots: scratch buffers go above */
  dp_expr *t = dp__lua_check_expr(L, 1);
  lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 0 || i > (lua_Integer)UINT32_MAX) luaL_argerror(L, 2, "index must be >= 0");
  dp_span span = dp__lua_span_opts(L, 3);
  return dp__lua_push_new(L, dp_proj_new(t, (uint32_t)i, span), NULL);
}

static int l_if(lua_State *L) {
  lua_settop(L, 4); /* fixed slots: scratch buffers go above */
  dp_expr *c = dp__lua_check_expr(L, 1);
  dp_expr *t = dp__lua_check_expr(L, 2);
  dp_expr *e = dp__lua_check_expr(L, 3);
  dp_span span = dp__lua_span_opts(L, 4);
  return dp__lua_push_new(L, dp_if_new(c, t, e, span), NULL);
}

/* One clause {pattern, rhs} or {pattern =, rhs =} of the list at idx. */
static void check_clause(lua_State *L, int idx, lua_Integer i, dp_clause *out) {
  lua_rawgeti(L, idx, i);
  int c = lua_gettop(L);
  if (!lua_istable(L, c))
    luaL_argerror(L, idx, lua_pushfstring(L, "clauses[%d] must be {pattern, rhs}", (int)i));
  dp__lua_item(L, c, 1, "pattern");
  dp__lua_item(L, c, 2, "rhs");
  out->pat = dp__lua_test(L, -2, DP_OBJ_PATTERN);
  out->rhs = dp__lua_test(L, -1, DP_OBJ_EXPR);
  if (!out->pat || !out->rhs)
    luaL_argerror(L, idx, lua_pushfstring(L, "clauses[%d] must be {Pattern, expression}", (int)i));
  lua_pop(L, 3); /* the clause table still holds both */
}

/* dp.match(data, {{pattern, rhs}, ...}, complete?, {span =}?) */
static int l_match(lua_State *L) {
  lua_settop(L, 4); /* fixed slots: scratch buffers go above */
  dp_expr *data = dp__lua_check_expr(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int opts = 4, complete = 1;
  if (lua_type(L, 3) == LUA_TTABLE) opts = 3;
  else if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TBOOLEAN);
    complete = lua_toboolean(L, 3);
  }
  lua_Unsigned n = lua_rawlen(L, 2);
  if (n > UINT32_MAX / sizeof(dp_clause)) luaL_argerror(L, 2, "too many clauses");
  dp_clause *cl = lua_newuserdatauv(L, (n ? n : 1) * sizeof *cl, 0);
  for (lua_Unsigned i = 0; i < n; i++) check_clause(L, 2, (lua_Integer)i + 1, &cl[i]);
  dp_span span = dp__lua_span_opts(L, opts);
  return dp__lua_push_new(L, dp_match_new(data, (uint32_t)n, cl, complete, span), NULL);
}

static int l_ref(lua_State *L) {
  lua_settop(L, 2); /* fixed slots: scratch buffers go above */
  dp_expr *v = dp__lua_check_expr(L, 1);
  return dp__lua_push_new(L, dp_ref_create_new(v, dp__lua_span_opts(L, 2)), NULL);
}

static int l_ref_read(lua_State *L) {
  lua_settop(L, 2); /* fixed slots: scratch buffers go above */
  dp_expr *r = dp__lua_check_expr(L, 1);
  return dp__lua_push_new(L, dp_ref_read_new(r, dp__lua_span_opts(L, 2)), NULL);
}

static int l_ref_write(lua_State *L) {
  lua_settop(L, 3); /* fixed slots: scratch buffers go above */
  dp_expr *r = dp__lua_check_expr(L, 1);
  dp_expr *v = dp__lua_check_expr(L, 2);
  return dp__lua_push_new(L, dp_ref_write_new(r, v, dp__lua_span_opts(L, 3)), NULL);
}

/* ---------------- patterns ---------------- */

static int p_wild(lua_State *L) {
  lua_settop(L, 1); /* fixed slots: scratch buffers go above */
  return dp__lua_push_new(L, dp_pat_wild(dp__lua_span_opts(L, 1)), NULL);
}

static int p_var(lua_State *L) {
  lua_settop(L, 2); /* fixed slots: scratch buffers go above */
  dp_var *v = dp__lua_check_var(L, 1);
  return dp__lua_push_new(L, dp_pat_var(v, dp__lua_span_opts(L, 2)), NULL);
}

static int p_ctor(lua_State *L) {
  lua_settop(L, 3); /* fixed slots: scratch buffers go above */
  dp_expr *c = dp__lua_check_expr(L, 1);
  if (c->h.kind != DP_CTOR) luaL_argerror(L, 1, "constructor expected");
  void *small[8];
  uint32_t n;
  void **sub = dp__lua_opt_list(L, 2, DP_OBJ_PATTERN, 0, "patterns", small, 8, &n);
  if (n != ((dp_ctor *)c)->ninputs)
    luaL_argerror(L, 2, lua_pushfstring(L, "constructor %s takes %d pattern(s), got %d",
                                        ((dp_ctor *)c)->name, (int)((dp_ctor *)c)->ninputs, (int)n));
  dp_span span = dp__lua_span_opts(L, 3);
  return dp__lua_push_new(L, dp_pat_ctor((dp_ctor *)c, n, (dp_pattern *const *)sub, span), NULL);
}

static int p_tuple(lua_State *L) {
  lua_settop(L, 2); /* fixed slots: scratch buffers go above */
  void *small[8];
  uint32_t n;
  void **sub = dp__lua_check_list(L, 1, DP_OBJ_PATTERN, 0, "patterns", small, 8, &n);
  dp_span span = dp__lua_span_opts(L, 2);
  return dp__lua_push_new(L, dp_pat_tuple(n, (dp_pattern *const *)sub, span), NULL);
}

/* ---------------- fields ---------------- */

#define IS(k, s) (strcmp((k), (s)) == 0)

static void push_exprs(lua_State *L, dp_expr *const *items, uint32_t n) {
  dp__lua_push_list(L, (void *const *)items, n);
}

static int field_call_fn(lua_State *L, dp_expr *e, const char *k) {
  if (e->h.kind == DP_CALL) {
    dp_call *c = (dp_call *)e;
    if (IS(k, "callee")) dp__lua_push(L, c->fn);
    else if (IS(k, "args")) push_exprs(L, c->args, c->nargs);
    else if (IS(k, "attrs")) dp__lua_push_attrs(L, c->attrs);
    else return 0;
    return 1;
  }
  dp_func *f = (dp_func *)e;
  if (IS(k, "params")) dp__lua_push_list(L, (void *const *)f->params, f->nparams);
  else if (IS(k, "body")) dp__lua_push(L, f->body);
  else if (IS(k, "ret_type")) dp__lua_push(L, f->ret);
  else if (IS(k, "type_params")) dp__lua_push_list(L, (void *const *)f->tparams, f->ntparams);
  else if (IS(k, "virtual_device")) dp__lua_push(L, f->vdev);
  else if (IS(k, "attrs")) dp__lua_push_attrs(L, f->attrs);
  else return 0;
  return 1;
}

static int field_leaf(lua_State *L, dp_expr *e, const char *k) {
  switch (e->h.kind) {
  case DP_VAR: {
    dp_var *v = (dp_var *)e;
    if (IS(k, "name")) lua_pushstring(L, v->name);
    else if (IS(k, "type_annotation")) dp__lua_push(L, dp_var_annot(v));
    else if (IS(k, "virtual_device")) dp__lua_push(L, dp_var_vdev(v));
    else return 0;
    return 1;
  }
  case DP_GLOBAL:
    if (!IS(k, "name")) return 0;
    lua_pushstring(L, ((dp_global *)e)->name);
    return 1;
  case DP_CONST: {
    dp_const *c = (dp_const *)e;
    char buf[32];
    if (IS(k, "dtype")) lua_pushstring(L, dp_dtype_name(c->dtype, buf));
    else if (IS(k, "value")) dp__lua_push_const_value(L, c);
    else if (IS(k, "ndim")) lua_pushinteger(L, c->ndim);
    else if (IS(k, "shape")) {
      lua_createtable(L, (int)c->ndim, 0);
      for (uint32_t i = 0; i < c->ndim; i++) {
        lua_pushinteger(L, c->shape[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
      }
    } else return 0;
    return 1;
  }
  case DP_OP: {
    dp_op *op = (dp_op *)e;
    if (IS(k, "name")) lua_pushstring(L, op->name);
    else if (IS(k, "num_inputs")) lua_pushinteger(L, op->num_inputs);
    else if (IS(k, "pattern")) lua_pushstring(L, dp_oppattern_name(op->pattern));
    else return 0;
    return 1;
  }
  case DP_CTOR: {
    dp_ctor *c = (dp_ctor *)e;
    if (IS(k, "name")) lua_pushstring(L, c->name);
    else if (IS(k, "adt")) lua_pushstring(L, c->adt_name);
    else if (IS(k, "tag")) lua_pushinteger(L, c->tag);
    else if (IS(k, "inputs")) dp__lua_push_list(L, (void *const *)c->items + c->ntparams, c->ninputs);
    else if (IS(k, "type_params")) dp__lua_push_list(L, (void *const *)c->items, c->ntparams);
    else return 0;
    return 1;
  }
  default:
    return 0;
  }
}

static void push_clauses(lua_State *L, const dp_match *m) {
  lua_createtable(L, (int)m->n, 0);
  for (uint32_t i = 0; i < m->n; i++) {
    lua_createtable(L, 0, 2);
    dp__lua_push(L, m->clauses[i].pat);
    lua_setfield(L, -2, "pattern");
    dp__lua_push(L, m->clauses[i].rhs);
    lua_setfield(L, -2, "rhs");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

static int field_inner(lua_State *L, dp_expr *e, const char *k) {
  switch (e->h.kind) {
  case DP_CALL: case DP_FUNC:
    return field_call_fn(L, e, k);
  case DP_LET: {
    dp_let *l = (dp_let *)e;
    if (IS(k, "var")) dp__lua_push(L, l->var);
    else if (IS(k, "value")) dp__lua_push(L, l->value);
    else if (IS(k, "body")) dp__lua_push(L, l->body);
    else return 0;
    return 1;
  }
  case DP_TUPLE:
    if (!IS(k, "fields")) return 0;
    push_exprs(L, ((dp_tuple *)e)->fields, ((dp_tuple *)e)->n);
    return 1;
  case DP_PROJ:
    if (IS(k, "tuple")) dp__lua_push(L, ((dp_proj *)e)->tuple);
    else if (IS(k, "index")) lua_pushinteger(L, ((dp_proj *)e)->index);
    else return 0;
    return 1;
  case DP_IF: {
    dp_if *i = (dp_if *)e;
    if (IS(k, "cond")) dp__lua_push(L, i->cond);
    else if (IS(k, "then_branch")) dp__lua_push(L, i->then_);
    else if (IS(k, "else_branch")) dp__lua_push(L, i->else_);
    else return 0;
    return 1;
  }
  case DP_MATCH: {
    dp_match *m = (dp_match *)e;
    if (IS(k, "data")) dp__lua_push(L, m->data);
    else if (IS(k, "clauses")) push_clauses(L, m);
    else if (IS(k, "complete")) lua_pushboolean(L, m->complete);
    else return 0;
    return 1;
  }
  case DP_REF_CREATE:
    if (!IS(k, "value")) return 0;
    dp__lua_push(L, ((dp_ref_create *)e)->value);
    return 1;
  case DP_REF_READ:
    if (!IS(k, "ref")) return 0;
    dp__lua_push(L, ((dp_ref_read *)e)->ref);
    return 1;
  case DP_REF_WRITE:
    if (IS(k, "ref")) dp__lua_push(L, ((dp_ref_write *)e)->ref);
    else if (IS(k, "value")) dp__lua_push(L, ((dp_ref_write *)e)->value);
    else return 0;
    return 1;
  default:
    return field_leaf(L, e, k);
  }
}

static int expr_index(lua_State *L) {
  dp_expr *e = dp__lua_check(L, 1, DP_OBJ_EXPR);
  const char *k = lua_tostring(L, 2);
  if (!k) lua_pushnil(L);
  else if (IS(k, "kind")) lua_pushstring(L, dp_exprkind_name(e->h.kind));
  else if (IS(k, "span")) dp__lua_push_span(L, e->span);
  else if (IS(k, "checked_type")) dp__lua_push(L, e->type);
  else if (!field_inner(L, e, k)) lua_pushnil(L);
  return 1;
}

static int expr_tostring(lua_State *L) {
  dp__lua_check(L, 1, DP_OBJ_EXPR);
  return dp__lua_push_printed(L, 1, 0);
}

static const char *const pat_kinds[] = {NULL, "wild", "var", "ctor", "tuple"};

static int pattern_index(lua_State *L) {
  dp_pattern *p = dp__lua_check(L, 1, DP_OBJ_PATTERN);
  const char *k = lua_tostring(L, 2);
  if (!k) lua_pushnil(L);
  else if (IS(k, "kind")) lua_pushstring(L, pat_kinds[p->h.kind]);
  else if (IS(k, "span")) dp__lua_push_span(L, p->span);
  else if (IS(k, "var")) dp__lua_push(L, p->var);
  else if (IS(k, "ctor")) dp__lua_push(L, p->ctor);
  else if (IS(k, "patterns")) dp__lua_push_list(L, (void *const *)p->sub, p->n);
  else lua_pushnil(L);
  return 1;
}

static int pattern_tostring(lua_State *L) {
  return dp__lua_push_cstr(L, dp_print_pattern(dp__lua_check(L, 1, DP_OBJ_PATTERN)));
}

void dp__lua_open_expr(lua_State *L) {
  dp__lua_newclass(L, DP_OBJ_EXPR, "devplan.Expr", expr_index, expr_tostring);
  dp__lua_newclass(L, DP_OBJ_PATTERN, "devplan.Pattern", pattern_index, pattern_tostring);
  static const luaL_Reg fns[] = {
    {"var", l_var}, {"global", l_global}, {"call", l_call}, {"fn", l_fn}, {"let", l_let},
    {"tuple", l_tuple}, {"proj", l_proj}, {"if_", l_if}, {"match", l_match}, {"ref", l_ref},
    {"ref_read", l_ref_read}, {"ref_write", l_ref_write}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  static const luaL_Reg pats[] = {
    {"wild", p_wild}, {"var", p_var}, {"ctor", p_ctor}, {"tuple", p_tuple}, {NULL, NULL}};
  luaL_newlib(L, pats);
  lua_setfield(L, -2, "pat");
}
