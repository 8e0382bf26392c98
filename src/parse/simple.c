/*
 * The C reader of simple statements: the grammar's hot path, read in C
 * instead of by LPeg.
 *
 * Nearly every statement of a large model is one of
 *     %n = E;        let %x = E;        E;
 * where E is made of variables, globals, names, numbers, True/False, meta
 * references, calls (with attributes whose values are those, or lists of
 * them), tuples, projections, prefix minus and infix operators. Matched by
 * LPeg, each such statement cost a few thousand instructions of the
 * engine's own (backtrack entries, a position capture per mark, the marks
 * copied to the Lua stack and back into C) before the builder saw it: more
 * than building it.
 *
 * This reader recognises exactly those statements over the token kinds,
 * with an explicit stack of open brackets (no recursion), and makes the
 * events the grammar's rules make for them (parser.lua: the same tokens
 * marked, in the same order: a list's `,` not, a projection's index not),
 * which then go to the same action, DP_ACT_STMTS. It accepts a statement
 * only if the grammar does, and reads it as the grammar does (each choice
 * is decided by one token, or two: a `,` before an attribute's key or the
 * closing `)`); anything else (a `{`, a type annotation, VirtualDevice(...),
 * Constant(...), if, match, fn, a syntax error) stops it before that
 * statement, where the grammar goes on: errors and their positions are the
 * grammar's and the builder's, as before. The statements it read go to the
 * builder in order, before it returns, in batches (a batch holds no scope:
 * parser.lua's batches of 64 say why any split builds the same).
 */
#include "internal.h"

enum { R_STMT, R_CALL, R_ATTRS, R_TUPLE, R_LIST }; /* open brackets */

enum { S_OPERAND, S_AFTER, S_END, S_ARGS, S_TUPLE, S_AVAL, S_LIST, S_AVAL_END }; /* states */

/* Events of this many statements at most go to the builder at once. */
#define BATCH 256

static int is_binop(char c) {
  switch (c) {
  case DP_TOK_STAR: case DP_TOK_SLASH: case DP_TOK_PLUS: case DP_TOK_MINUS: case DP_TOK_LT:
  case DP_TOK_GT: case DP_TOK_LE: case DP_TOK_GE: case DP_TOK_EQEQ: case DP_TOK_NE: return 1;
  default: return 0;
  }
}

/* Room for need more events and one more bracket (the test inline, the
   growth not: this runs at every token). */
static int grow(dp_parser *p, uint32_t nev, uint32_t need, uint32_t nr) {
  if (nev + need > p->capsev &&
      dp__grow(p, (void **)&p->sev, &p->capsev, nev + need, sizeof *p->sev, p->progress) != 0)
    return -1;
  if (nr + 1 > p->capsr &&
      dp__grow(p, (void **)&p->sr, &p->capsr, nr + 1, sizeof *p->sr, p->progress) != 0)
    return -1;
  return 0;
}

static inline int room(dp_parser *p, uint32_t nev, uint32_t need, uint32_t nr) {
  return nev + need <= p->capsev && nr + 1 <= p->capsr ? 0 : grow(p, nev, need, nr);
}

static int flush(dp_parser *p, uint32_t n) {
  return n && dp__act_statements(p, p->sev, n) < 0 ? -1 : 0;
}

int64_t dp_parser_simple_stmts(dp_parser *p, size_t first) {
  if (p->failed || !p->kinds || first < 1 || first > p->ntok) return (int64_t)first;
  const char *k = p->kinds - 1; /* k[t]: the kind of token t; k[ntok + 1] is NUL */
  uint32_t t = (uint32_t)first, done = t; /* done: the token after the last statement read */
  uint32_t nev = 0, nevdone = 0, nstmts = 0;
  for (;;) {
    /* one statement from t: at most 2 events a token */
    uint32_t nr = 0;
    int st = S_OPERAND;
    if (room(p, nev, 4, nr) != 0) goto fail;
    if (k[t] == DP_TOK_LET) {
      if (k[t + 1] != DP_TOK_BIND) break; /* (a let with attributes or a type: the grammar's) */
      p->sev[nev++] = t;
      t += 2;
    } else if (k[t] == DP_TOK_BIND) {
      p->sev[nev++] = t++;
    }
    p->sr[nr++] = R_STMT;
    for (;;) {
      if (room(p, nev, 3, nr) != 0) goto fail;
      int64_t *ev = p->sev;
      char c = k[t];
      switch (st) {
      case S_OPERAND: /* -* primary */
        while (c == DP_TOK_MINUS) {
          ev[nev++] = t++;
          if (room(p, nev, 3, nr) != 0) goto fail;
          ev = p->sev;
          c = k[t];
        }
        switch (c) {
        case DP_TOK_VAR: case DP_TOK_IDENT: case DP_TOK_GLOBAL: case DP_TOK_NUMBER: case DP_TOK_TRUE:
        case DP_TOK_FALSE: case DP_TOK_META:
          ev[nev++] = t++;
          st = S_AFTER;
          break;
        case DP_TOK_CALLEE:
          ev[nev++] = t++;
          p->sr[nr++] = R_CALL;
          st = S_ARGS;
          break;
        case DP_TOK_LPAREN:
          ev[nev++] = t++;
          p->sr[nr++] = R_TUPLE;
          st = S_TUPLE;
          break;
        default: goto stop;
        }
        break;
      case S_AFTER: /* suffixes: a call, a projection; then an operator, or the end */
        if (c == DP_TOK_LPAREN) {
          ev[nev++] = t++;
          p->sr[nr++] = R_CALL;
          st = S_ARGS;
        } else if (c == DP_TOK_DOT) {
          if (k[t + 1] != DP_TOK_INDEX) goto stop;
          ev[nev++] = t;
          t += 2;
        } else if (is_binop(c)) {
          ev[nev++] = t++;
          st = S_OPERAND;
        } else {
          st = S_END;
        }
        break;
      case S_ARGS: /* after a call's `(` */
        if (c == DP_TOK_RPAREN) {
          ev[nev++] = t++;
          nr--;
          st = S_AFTER;
        } else if (c == DP_TOK_KEY) {
          ev[nev++] = t++;
          p->sr[nr - 1] = R_ATTRS;
          st = S_AVAL;
        } else {
          st = S_OPERAND;
        }
        break;
      case S_TUPLE: /* after a tuple's (or parentheses') `(` */
        if (c == DP_TOK_RPAREN) {
          ev[nev++] = t++;
          nr--;
          st = S_AFTER;
        } else {
          st = S_OPERAND;
        }
        break;
      case S_END: /* an expression ended: its bracket says what may follow */
        switch (p->sr[nr - 1]) {
        case R_STMT:
          if (c != DP_TOK_SEMI) goto stop;
          ev[nev++] = t++;
          goto statement;
        case R_CALL: case R_TUPLE:
          if (c == DP_TOK_COMMA) {
            ev[nev++] = t++;
            if (k[t] == DP_TOK_RPAREN) { /* a trailing `,` */
              ev[nev++] = t++;
              nr--;
              st = S_AFTER;
            } else if (k[t] == DP_TOK_KEY && p->sr[nr - 1] == R_CALL) {
              ev[nev++] = t++;
              p->sr[nr - 1] = R_ATTRS;
              st = S_AVAL;
            } else {
              st = S_OPERAND;
            }
          } else if (c == DP_TOK_RPAREN) {
            ev[nev++] = t++;
            nr--;
            st = S_AFTER;
          } else {
            goto stop;
          }
          break;
        default: goto stop;
        }
        break;
      case S_AVAL: /* an attribute value */
        switch (c) {
        case DP_TOK_NUMBER: case DP_TOK_STRING: case DP_TOK_TRUE: case DP_TOK_FALSE: case DP_TOK_NONE:
        case DP_TOK_META:
          ev[nev++] = t++;
          st = S_AVAL_END;
          break;
        case DP_TOK_LBRACK:
          ev[nev++] = t++;
          p->sr[nr++] = R_LIST;
          st = S_LIST;
          break;
        default: goto stop; /* (VirtualDevice(...), Constant(...): the grammar's) */
        }
        break;
      case S_LIST: /* after a list's `[` */
        if (c == DP_TOK_RBRACK) {
          ev[nev++] = t++;
          nr--;
          st = S_AVAL_END;
        } else {
          st = S_AVAL;
        }
        break;
      case S_AVAL_END: /* an attribute value ended: in a list, or a call's attributes */
        if (p->sr[nr - 1] == R_LIST) {
          if (c == DP_TOK_COMMA) { /* (a list's `,` is not an event) */
            t++;
            if (k[t] == DP_TOK_RBRACK) {
              ev[nev++] = t++;
              nr--;
            } else {
              st = S_AVAL;
            }
          } else if (c == DP_TOK_RBRACK) {
            ev[nev++] = t++;
            nr--;
          } else {
            goto stop;
          }
        } else { /* R_ATTRS */
          if (c == DP_TOK_COMMA && k[t + 1] == DP_TOK_KEY) {
            ev[nev++] = t++;
            ev[nev++] = t++;
            st = S_AVAL;
          } else if (c == DP_TOK_COMMA && k[t + 1] == DP_TOK_RPAREN) {
            ev[nev++] = t++;
            ev[nev++] = t++;
            nr--;
            st = S_AFTER;
          } else if (c == DP_TOK_RPAREN) {
            ev[nev++] = t++;
            nr--;
            st = S_AFTER;
          } else {
            goto stop;
          }
        }
        break;
      }
    }
  statement:
    done = t;
    nevdone = nev;
    if (++nstmts == BATCH) {
      if (flush(p, nevdone) != 0) return -1;
      nev = nevdone = nstmts = 0;
    }
  }
stop:
  if (flush(p, nevdone) != 0) return -1;
  return done;
fail:
  p->failed = 1;
  return -1;
}
