/*
 * The expression reader: builds one expression from the events the grammar
 * marked, with explicit stacks, so that a call of a call of a call, nested
 * tuples and parentheses go as deep as the text does (nothing recurses on
 * the C stack).
 *
 * It is a shunting-yard over events. Values wait on p->vals; brackets open
 * frames (p->frames) that collect the values above their base until the
 * event that closes them; infix operators wait on p->ops until one of lower
 * precedence, a `,`, or the end of their frame. `expect` says whether an
 * operand comes next: a `(` there opens a parenthesised expression or a
 * tuple, after a value it opens a call of that value; a `-` there is the
 * prefix minus (negative), after a value the infix one (subtract). Infix
 * operators build the calls TVM's parser builds, with its precedence, all
 * left associative:
 *     *  /            multiply divide                 (tightest)
 *     +  -            add subtract
 *     <  >  <=  >=    less greater less_equal greater_equal
 *     ==  !=          equal not_equal                 (loosest)
 * and the prefix minus binds tighter than all of them, looser than calls
 * and projections (-%x.0 is negative(%x.0)).
 *
 * Events (the grammar's choice; parser.lua): operands (%x, @f, numbers,
 * True, False, identifiers, meta references, values of earlier actions),
 * `(` `,` `)` of calls, tuples and parentheses (a name's call opens with
 * the name: `name(` is one token), each attribute's key (`key=`, its
 * value's events after it, attrval.c), `.` of a projection (its index is the
 * next token), operators, `if` (its condition's parentheses, then two block
 * values: an if is complete with its third value), `match` (then the
 * condition's parentheses, clause values, and its `}`), ref/ref_read/
 * ref_write (up to their `)`), Constant (a type, its `[` and `)`), and the
 * terminator that ends a statement (`;`, the `}` of the block, the end).
 */
#include <stdlib.h>
#include <string.h>
#include "devplan/suggest.h"
#include "internal.h"

enum { F_ROOT = 1, F_GROUP, F_CALL, F_IF, F_MATCH, F_REF, F_REF_READ, F_REF_WRITE };

void dp__reader_reset(dp_parser *p) {
  while (p->nvals) dp_release(p->vals[--p->nvals].obj);
  while (p->nframes) dp_release(p->frames[--p->nframes].callee.obj);
  p->nops = 0;
  while (p->nattrs) dp_av_clear(&p->attrs[--p->nattrs].val);
  while (p->navs) dp_av_clear(&p->avs[--p->navs]);
  p->nmarks = 0;
}

dp_obj *dp__event_obj(dp_parser *p, int64_t e, uint32_t near_tok) {
  if (e >= 0 || -e > (int64_t)p->nobjs) {
    dp__fail(p, DP_ERR_GENERIC, near_tok, "parser: a value was expected");
    return NULL;
  }
  return dp__obj(p, (uint32_t)-e);
}

/* ---------------- stacks ---------------- */

int dp__push_val(dp_parser *p, dp_obj *obj, uint32_t tok, int callee) {
  if (!obj) return -1;
  if (dp__grow(p, (void **)&p->vals, &p->capvals, p->nvals + 1, sizeof *p->vals, tok) != 0) {
    dp_release(obj);
    return -1;
  }
  p->vals[p->nvals++] = (rval){obj, tok, (uint8_t)callee};
  return 0;
}

/* A value of the expression: its frame's last event is no longer a `,`. */
static int push_val(dp_parser *p, dp_obj *obj, uint32_t tok, int callee) {
  if (p->nframes) p->frames[p->nframes - 1].comma = 0;
  return dp__push_val(p, obj, tok, callee);
}

static int open_frame(dp_parser *p, int kind, uint32_t tok) {
  if (dp__grow(p, (void **)&p->frames, &p->capframes, p->nframes + 1, sizeof *p->frames, tok) != 0) return -1;
  p->frames[p->nframes++] = (rframe){(uint8_t)kind, 0, tok, p->nvals, p->nops, p->nattrs, {NULL, 0, 0}, 0, 0};
  return 0;
}

static rframe *top_frame(dp_parser *p) { return &p->frames[p->nframes - 1]; }

/* ---------------- nodes ---------------- */

static dp_obj *op_named(dp_parser *p, const char *name, uint32_t tok) {
  dp_op *op = dp_op_get(p->ctx, name);
  if (!op) {
    dp_suggest s;
    char hint[DP_SUGGEST_HINT];
    dp_suggest_init(&s, name);
    for (uint32_t i = 0, n = dp_op_count(p->ctx); i < n; i++) dp_suggest_add(&s, dp_op_at(p->ctx, i)->name);
    dp__fail(p, DP_ERR_NAME, tok, "unknown operator '%s'%s", name, dp_suggest_hint(&s, hint, sizeof hint));
  }
  return (dp_obj *)op;
}

/* fn(args) with the attributes p->attrs[from..]: arity and attributes
   checked; a new reference or NULL. */
static dp_obj *make_call(dp_parser *p, dp_expr *fn, rval *args, uint32_t nargs, uint32_t from, uint32_t tok) {
  if (fn->h.kind == DP_OP) {
    const dp_op *op = (const dp_op *)fn;
    if (op->num_inputs >= 0 && (uint32_t)op->num_inputs != nargs) {
      dp__fail(p, DP_ERR_TYPE, tok, "operator '%s' takes %d argument%s, %u given", op->name, op->num_inputs,
               op->num_inputs == 1 ? "" : "s", nargs);
      return NULL;
    }
  } else if (fn->h.kind == DP_CTOR && ((dp_ctor *)fn)->ninputs != nargs) {
    const dp_ctor *c = (const dp_ctor *)fn;
    dp__fail(p, DP_ERR_TYPE, tok, "constructor '%s' takes %u argument%s, %u given", c->name, c->ninputs,
             c->ninputs == 1 ? "" : "s", nargs);
    return NULL;
  }
  dp_attrs *attrs;
  if (dp__attrs_take(p, fn, from, tok, &attrs) != 0) return NULL;
  dp_expr *small[8], **kids = nargs <= 8 ? small : dp_malloc(nargs * sizeof *kids);
  if (!kids) {
    dp_release(attrs);
    dp__oom(p, tok);
    return NULL;
  }
  for (uint32_t i = 0; i < nargs; i++) kids[i] = (dp_expr *)args[i].obj;
  dp_call *c = dp__call_new_in(p->nodes, fn, nargs, kids, attrs, dp__span(p, tok));
  if (kids != small) free(kids);
  dp_release(attrs);
  if (!c) dp__oom(p, tok);
  return (dp_obj *)c;
}

/* Replaces the top n values by obj (a new reference, or NULL: failed). */
static int replace_top(dp_parser *p, uint32_t n, dp_obj *obj, uint32_t tok) {
  while (n--) dp_release(p->vals[--p->nvals].obj);
  return push_val(p, obj, tok, 0);
}

/* ---------------- operators ---------------- */

static int precedence(char k, const char **name) {
  switch (k) {
  case DP_TOK_STAR: *name = "multiply"; return 10;
  case DP_TOK_SLASH: *name = "divide"; return 10;
  case DP_TOK_PLUS: *name = "add"; return 9;
  case DP_TOK_MINUS: *name = "subtract"; return 9;
  case DP_TOK_LT: *name = "less"; return 8;
  case DP_TOK_GT: *name = "greater"; return 8;
  case DP_TOK_LE: *name = "less_equal"; return 8;
  case DP_TOK_GE: *name = "greater_equal"; return 8;
  case DP_TOK_EQEQ: *name = "equal"; return 7;
  case DP_TOK_NE: *name = "not_equal"; return 7;
  default: return 0;
  }
}

#define UNARY_PREC 11

/* Applies the operator on top of p->ops to its operands. */
static int apply_op(dp_parser *p) {
  rop o = p->ops[--p->nops];
  const char *name = "negative";
  if (!o.unary) precedence(o.kind, &name);
  uint32_t arity = o.unary ? 1 : 2;
  dp_obj *op = op_named(p, name, o.tok);
  if (!op) return -1;
  dp_obj *c = make_call(p, (dp_expr *)op, p->vals + p->nvals - arity, arity, p->nattrs, o.tok);
  return replace_top(p, arity, c, o.tok);
}

/* Applies the waiting operators of the top frame of precedence >= prec. */
static int reduce(dp_parser *p, int prec) {
  uint32_t base = top_frame(p)->opbase;
  while (p->nops > base && p->ops[p->nops - 1].prec >= prec)
    if (apply_op(p) != 0) return -1;
  return 0;
}

static int push_op(dp_parser *p, char kind, int prec, int unary, uint32_t tok) {
  if (dp__grow(p, (void **)&p->ops, &p->capops, p->nops + 1, sizeof *p->ops, tok) != 0) return -1;
  p->ops[p->nops++] = (rop){kind, (uint8_t)prec, (uint8_t)unary, tok};
  return 0;
}

/* ---------------- frames ---------------- */

/* An if frame is complete with its third value (condition, then, else):
   the else branch of one if may be the next if of a chain. */
static int complete_ifs(dp_parser *p) {
  while (p->nframes && top_frame(p)->kind == F_IF && p->nvals - top_frame(p)->base == 3) {
    rframe f = p->frames[--p->nframes];
    rval *v = p->vals + f.base;
    dp_if *e = dp_if_new((dp_expr *)v[0].obj, (dp_expr *)v[1].obj, (dp_expr *)v[2].obj, dp__span(p, f.tok));
    if (!e) return dp__oom(p, f.tok);
    if (replace_top(p, 3, (dp_obj *)e, f.tok) != 0) return -1;
  }
  return 0;
}

static dp_obj *close_group(dp_parser *p, rframe *f, uint32_t m) {
  rval *v = p->vals + f->base;
  if (m == 1 && !f->comma) return dp_retain(v[0].obj); /* parentheses */
  dp_expr *small[8], **fields = m <= 8 ? small : dp_malloc(m * sizeof *fields);
  if (!fields) return NULL;
  for (uint32_t i = 0; i < m; i++) fields[i] = (dp_expr *)v[i].obj;
  dp_tuple *t = dp_tuple_new(m, fields, dp__span(p, f->tok));
  if (fields != small) free(fields);
  return (dp_obj *)t;
}

static dp_obj *close_match(dp_parser *p, rframe *f, uint32_t m) {
  rval *v = p->vals + f->base;
  uint32_t nc = (m - 1) / 2;
  dp_clause *cl = dp_malloc((nc ? nc : 1) * sizeof *cl);
  if (!cl) return NULL;
  for (uint32_t i = 0; i < nc; i++) {
    cl[i].pat = (dp_pattern *)v[1 + 2 * i].obj;
    cl[i].rhs = (dp_expr *)v[2 + 2 * i].obj;
  }
  int complete = dp__kind(p, f->tok + 1) != DP_TOK_QUESTION;
  dp_match *e = dp_match_new((dp_expr *)v[0].obj, nc, cl, complete, dp__span(p, f->tok));
  free(cl);
  return (dp_obj *)e;
}

/* The `)` (or a match's `}`) that closes the top frame. */
static int close_frame(dp_parser *p, uint32_t tok) {
  if (reduce(p, 0) != 0) return -1;
  rframe f = p->frames[--p->nframes];
  uint32_t m = p->nvals - f.base, start = f.tok;
  rval *v = p->vals + f.base;
  dp_obj *r = NULL;
  switch (f.kind) {
  case F_GROUP: r = close_group(p, &f, m); break;
  case F_CALL:
    if (f.callee.callee) start = f.callee.tok; /* a named call starts at its name */
    r = make_call(p, (dp_expr *)f.callee.obj, v, m, f.attrbase, start);
    dp_release(f.callee.obj);
    if (!r) return -1;
    break;
  case F_MATCH: r = close_match(p, &f, m); break;
  case F_REF: r = (dp_obj *)dp_ref_create_new((dp_expr *)v[0].obj, dp__span(p, f.tok)); break;
  case F_REF_READ: r = (dp_obj *)dp_ref_read_new((dp_expr *)v[0].obj, dp__span(p, f.tok)); break;
  case F_REF_WRITE:
    r = (dp_obj *)dp_ref_write_new((dp_expr *)v[0].obj, (dp_expr *)v[1].obj, dp__span(p, f.tok));
    break;
  default: return dp__fail(p, DP_ERR_GENERIC, tok, "parser: unbalanced events");
  }
  if (!r) return p->err ? -1 : dp__oom(p, tok);
  if (replace_top(p, m, r, start) != 0) return -1;
  return complete_ifs(p);
}

/* `(` after a value: a call of it. */
static int open_call(dp_parser *p, uint32_t tok) {
  rval callee = p->vals[--p->nvals];
  if (open_frame(p, F_CALL, tok) != 0) {
    dp_release(callee.obj);
    return -1;
  }
  top_frame(p)->callee = callee;
  return 0;
}

/* ---------------- operands ---------------- */

static dp_obj *variable(dp_parser *p, uint32_t tok) {
  size_t len;
  const char *name = dp__tok_text(p, tok, &len);
  uint32_t h = dp__scope_get(&p->names, name, len);
  if (!h) {
    char hint[DP_SUGGEST_HINT];
    const char *cn = dp__cname(p, name, len);
    dp__fail(p, DP_ERR_NAME, tok, "unknown variable %.*s%s", (int)len, name, cn ? dp__hint(p, HINT_VAR, cn, hint) : "");
    return NULL;
  }
  if (p->npend && h <= p->pend[p->npend - 1] && dp__pending_let(p, h)) p->scopes_unsure = 1;
  return dp_retain(dp__obj(p, h));
}

static dp_obj *global(dp_parser *p, uint32_t tok) {
  size_t len;
  const char *name = dp__tok_text(p, tok, &len);
  int64_t slot = dp__tok_slot(p, &p->names, tok);
  if (slot < 0) return NULL;
  if (!p->names.slots[slot].handle) {
    const char *cn = dp__cname(p, name + 1, len - 1);
    uint32_t h = cn ? dp__keep(p, dp_global_new(cn, dp__span(p, tok)), NULL, tok) : 0;
    if (!h) return NULL;
    p->names.slots[slot].handle = h;
  }
  if (!p->names.slots[slot].block) { /* not defined yet: remember the first use */
    if (dp__grow(p, (void **)&p->grefs, &p->capgrefs, p->ngrefs + 1, sizeof *p->grefs, tok) != 0) return NULL;
    p->grefs[p->ngrefs++] = (struct pgref){(uint32_t)slot, tok};
  }
  return dp_retain(dp__obj(p, p->names.slots[slot].handle));
}

/* An identifier: an operator, or a constructor of this text (capitalised
   names without a dot are constructors, so a missing one is named so). */
static dp_obj *callee(dp_parser *p, uint32_t tok) {
  size_t len;
  const char *name = dp__tok_text(p, tok, &len);
  uint32_t known = dp__scope_get(&p->names, name, len);
  if (known) return dp_retain(dp__obj(p, known));
  int64_t slot = dp__tok_slot(p, &p->names, tok);
  if (slot < 0) return NULL;
  if (!p->names.slots[slot].handle) {
    const char *cn = dp__cname(p, name, len);
    if (!cn) {
      dp__oom(p, tok);
      return NULL;
    }
    if (cn[0] >= 'A' && cn[0] <= 'Z' && !memchr(cn, '.', len)) {
      char hint[DP_SUGGEST_HINT];
      dp__fail(p, DP_ERR_NAME, tok, "unknown constructor '%s'%s", cn, dp__hint(p, HINT_CTOR, cn, hint));
      return NULL;
    }
    dp_obj *op = op_named(p, cn, tok);
    uint32_t h = op ? dp__keep(p, dp_retain(op), NULL, tok) : 0;
    if (!h) return NULL;
    dp__scope_set(&p->names, (uint32_t)slot, h, 0);
  }
  return dp_retain(dp__obj(p, p->names.slots[slot].handle));
}

static dp_obj *meta_expr(dp_parser *p, uint32_t tok) {
  dp_aval v;
  p->scopes_unsure = 1; /* (an expression made elsewhere: its variables are its own) */
  if (dp__meta_value(p, tok, &v) != 0) return NULL;
  if (v.kind != DP_AV_EXPR) {
    size_t len;
    const char *t = dp__tok_text(p, tok, &len);
    dp__fail(p, DP_ERR_VALUE, tok, "%.*s is not an expression", (int)len, t);
    dp_av_clear(&v);
    return NULL;
  }
  return (dp_obj *)v.u.expr; /* (the value's reference) */
}

static dp_obj *projection(dp_parser *p, uint32_t tok) {
  int64_t index;
  if (dp__number_index(p, tok + 1, INT32_MAX, "tuple index", &index) != 0) return NULL;
  dp_proj *e = dp_proj_new((dp_expr *)p->vals[p->nvals - 1].obj, (uint32_t)index, dp__span(p, tok));
  if (!e) dp__oom(p, tok);
  return (dp_obj *)e;
}

/* Constant(TYPE, [...]): the events CONSTANT, the type, `[`, `)`. */
static dp_obj *constant(dp_parser *p, const int64_t *ev, size_t n, size_t *i) {
  uint32_t tok = (uint32_t)ev[*i];
  dp_obj *t = *i + 3 < n ? dp__event_obj(p, ev[*i + 1], tok) : NULL;
  if (!t || t->type != DP_OBJ_TYPE) {
    if (!p->err) dp__fail(p, DP_ERR_GENERIC, tok, "parser: constant events");
    return NULL;
  }
  dp_obj *c = dp__const_literal(p, (dp_type *)t, tok, (uint32_t)ev[*i + 2]);
  *i += 3;
  return c;
}

/* ---------------- the reader ---------------- */

/* An event that puts a value on the stack: 0; 2 when it opened a call of
   it; 1 if e is not one. */
static int operand(dp_parser *p, const int64_t *ev, size_t n, size_t *i) {
  int64_t e = ev[*i];
  if (e < 0) {
    dp_obj *o = dp__event_obj(p, e, p->progress);
    return o ? push_val(p, dp_retain(o), p->progress, 0) : -1;
  }
  uint32_t tok = (uint32_t)e;
  switch (dp__kind(p, tok)) {
  case DP_TOK_VAR: return push_val(p, variable(p, tok), tok, 0);
  case DP_TOK_GLOBAL: return push_val(p, global(p, tok), tok, 0);
  case DP_TOK_NUMBER: case DP_TOK_TRUE: case DP_TOK_FALSE: return push_val(p, dp__scalar(p, tok), tok, 0);
  case DP_TOK_IDENT: {
    dp_obj *c = callee(p, tok);
    if (c && c->kind == DP_CTOR && ((dp_ctor *)c)->ninputs == 0) { /* `Nil`: a call, as TVM reads it */
      dp_obj *call = make_call(p, (dp_expr *)c, NULL, 0, p->nattrs, tok);
      dp_release(c);
      return push_val(p, call, tok, 0);
    }
    return push_val(p, c, tok, 1);
  }
  case DP_TOK_CALLEE: /* a name and its `(`: a call opens (2: an operand is expected) */
    if (push_val(p, callee(p, tok), tok, 1) != 0) return -1;
    return open_call(p, tok) == 0 ? 2 : -1;
  case DP_TOK_META: return push_val(p, meta_expr(p, tok), tok, 0);
  case DP_TOK_CONSTANT: return push_val(p, constant(p, ev, n, i), tok, 0);
  default: return 1;
  }
}

/* A bracket, operator or keyword event. */
static int structure(dp_parser *p, const int64_t *ev, size_t n, size_t *i, int *expect) {
  uint32_t tok = (uint32_t)ev[*i];
  char k = dp__kind(p, tok);
  const char *name;
  int prec = precedence(k, &name);
  if (prec) {
    if (k == DP_TOK_MINUS && *expect) return push_op(p, k, UNARY_PREC, 1, tok);
    *expect = 1;
    return reduce(p, prec) != 0 ? -1 : push_op(p, k, prec, 0, tok);
  }
  switch (k) {
  case DP_TOK_LPAREN:
    if (*expect) return open_frame(p, F_GROUP, tok);
    *expect = 1;
    return open_call(p, tok);
  case DP_TOK_RPAREN:
    *expect = 0;
    return close_frame(p, tok);
  case DP_TOK_COMMA:
    *expect = 1;
    if (reduce(p, 0) != 0) return -1;
    top_frame(p)->comma = 1;
    return 0;
  case DP_TOK_KEY: { /* key = value */
    if (dp__grow(p, (void **)&p->attrs, &p->capattrs, p->nattrs + 1, sizeof *p->attrs, tok) != 0) return -1;
    dp_aval v;
    (*i)++;
    if (dp__read_aval(p, ev, n, i, &v) != 0) return -1;
    p->attrs[p->nattrs++] = (pattr){tok, v};
    return 0;
  }
  case DP_TOK_DOT:
    return replace_top(p, 1, projection(p, tok), tok);
  case DP_TOK_IF: case DP_TOK_MATCH: case DP_TOK_REF: case DP_TOK_REF_READ: case DP_TOK_REF_WRITE:
    *expect = 1; /* (a chain's next if comes after a value: its condition is no call) */
    return open_frame(p, k == DP_TOK_IF ? F_IF : k == DP_TOK_MATCH ? F_MATCH : k == DP_TOK_REF ? F_REF
                           : k == DP_TOK_REF_READ ? F_REF_READ : F_REF_WRITE, tok);
  case DP_TOK_RBRACE: /* (only a match's: a block's ends the expression) */
    *expect = 0;
    return close_frame(p, tok);
  default:
    return dp__fail(p, DP_ERR_GENERIC, tok, "parser: unexpected event '%c'", k);
  }
}

/* `;`, or 0: the end of the block (a `}` is a match's). */
static int is_terminator(dp_parser *p, int64_t e) {
  return e == 0 || (e > 0 && dp__kind(p, (uint32_t)e) == DP_TOK_SEMI);
}

/* Arguments a call read by flat_call may have. */
#define FLAT_MAX 8

/* The events of `name(%a, %b, ...)` and its terminator from ev[*i] (the
   name's token), the statement of nearly every line of a large model: an
   operator's call on variables, no attributes. Made here at once, with
   the checks and the node of the general way (make_call), instead of
   through the stacks, frames and values' references that way pays for at
   every event. It takes nothing but that form, with a name already bound
   to an operator and every variable bound: anything else (another event,
   an operator's first use, a constructor, an unknown name) is left to the
   general way, which reads it as before and says what is wrong (*done 0;
   nothing was changed). Else *done is 1: the call's handle, or 0 on an
   error of make_call's, as the general way's. */
static uint32_t flat_call(dp_parser *p, const int64_t *ev, size_t n, size_t *i, uint32_t *term, int *done) {
  uint32_t tok = (uint32_t)ev[*i], nargs = 0;
  rval args[FLAT_MAX];
  int unsure = 0;
  size_t j = *i + 1, len;
  *done = 0;
  while (j < n && ev[j] > 0 && dp__kind(p, (uint32_t)ev[j]) == DP_TOK_VAR) {
    uint32_t vt = (uint32_t)ev[j];
    const char *name = dp__tok_text(p, vt, &len);
    uint32_t h = nargs < FLAT_MAX ? dp__scope_get(&p->names, name, len) : 0;
    if (!h) return 0;
    if (p->npend && h <= p->pend[p->npend - 1] && dp__pending_let(p, h)) unsure = 1; /* (as variable()) */
    args[nargs++] = (rval){dp__obj(p, h), vt, 0};
    if (j + 2 < n && ev[j + 1] > 0 && ev[j + 2] > 0 && dp__kind(p, (uint32_t)ev[j + 1]) == DP_TOK_COMMA &&
        dp__kind(p, (uint32_t)ev[j + 2]) == DP_TOK_VAR)
      j += 2;
    else
      j++;
  }
  if (j + 1 >= n || ev[j] <= 0 || dp__kind(p, (uint32_t)ev[j]) != DP_TOK_RPAREN || !is_terminator(p, ev[j + 1]))
    return 0;
  const char *name = dp__tok_text(p, tok, &len);
  uint32_t known = dp__scope_get(&p->names, name, len);
  dp_obj *fn = known ? dp__obj(p, known) : NULL;
  if (!fn || fn->type != DP_OBJ_EXPR || fn->kind != DP_OP ||
      (((dp_op *)fn)->num_inputs >= 0 && (uint32_t)((dp_op *)fn)->num_inputs != nargs))
    return 0;
  *done = 1;
  if (unsure) p->scopes_unsure = 1;
  dp_obj *c = make_call(p, (dp_expr *)fn, args, nargs, p->nattrs, tok);
  if (!c) return 0;
  *term = (uint32_t)ev[j + 1];
  *i = j + 2;
  return dp__keep(p, c, NULL, tok);
}

uint32_t dp__read_expr(dp_parser *p, const int64_t *ev, size_t n, size_t *i, uint32_t *term) {
  if (*i < n && ev[*i] > 0 && dp__kind(p, (uint32_t)ev[*i]) == DP_TOK_CALLEE) {
    int done;
    uint32_t h = flat_call(p, ev, n, i, term, &done);
    if (done) return h;
  }
  uint32_t start = *i < n && ev[*i] > 0 ? (uint32_t)ev[*i] : p->progress;
  if (open_frame(p, F_ROOT, start) != 0) return 0;
  uint32_t root = p->nframes - 1, base = p->nvals;
  int expect = 1;
  *term = 0;
  for (; *i < n; (*i)++) {
    if (is_terminator(p, ev[*i])) {
      *term = (uint32_t)ev[(*i)++];
      break;
    }
    int r = operand(p, ev, n, i);
    if (r == 0) {
      expect = 0;
      r = complete_ifs(p);
    } else if (r == 2) {
      expect = 1;
      r = 0;
    } else if (r > 0) {
      r = structure(p, ev, n, i, &expect);
    }
    if (r != 0) return 0;
  }
  if (reduce(p, 0) != 0) return 0;
  if (p->nframes != root + 1) {
    dp__fail(p, DP_ERR_GENERIC, start, "parser: an expression's events end inside brackets");
    return 0;
  }
  if (p->nvals != base + 1) {
    dp__fail(p, DP_ERR_GENERIC, start, "parser: %u values where one expression was expected",
             p->nvals - base);
    return 0;
  }
  p->nframes--;
  rval v = p->vals[--p->nvals];
  if (v.obj->type != DP_OBJ_EXPR) {
    dp_release(v.obj);
    dp__fail(p, DP_ERR_GENERIC, start, "parser: not an expression");
    return 0;
  }
  return dp__keep(p, v.obj, NULL, v.tok);
}
