/*
 * The Lua binding of the parser's C half (src/parse, parse.h), for the
 * LPeg grammar of lua/devplan/parser.lua:
 *
 *   dp._parser(text, source, metatable) -> a parser (the text lexed)
 *   parser:tokens()                     -> the token kinds, the grammar's subject
 *   dp._parse_actions[name]             -> the match-time capture of each action
 *   dp._parse_simple                    -> that of the simple statements' C reader
 *   dp._token_kinds[NAME], _token_texts -> each token kind's byte, its name in messages
 *   dp._parse_max_nest                  -> how deep brackets may nest
 *   dp._binary(text)                    -> whether text holds a control byte
 *                                          (not tab, newline, return): ONNX, not Relay
 *   parser:syntax_error(tok, expected), parser:error_here(message)
 *   parser:module(), parser:expr(h), parser:type(h), parser:close()
 *
 * An action is called by lpeg.Cmt as f(subject, position, parser,
 * events...): the events go to dp_parser_act (a token as the position after
 * it, becoming its index; the end of a block as 0; a value of an earlier
 * action as -h), and a value it makes goes back as -h.
 * Every error is a devplan.Error with the offending line and a caret.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "l_init.h"

#define PARSER_META "devplan.Parser"

typedef struct lparser {
  dp_parser *p;
  int64_t *ev;          /* the events of the action running */
  size_t cap;
  lua_State *L;         /* while an action runs: for the meta resolver */
} lparser;

static const char *const action_names[DP_ACT__COUNT] = {
  [DP_ACT_STMTS] = "stmts", [DP_ACT_LET_HEAD] = "let_head", [DP_ACT_BLOCK_OPEN] = "block_open",
  [DP_ACT_BLOCK_CLOSE] = "block_close", [DP_ACT_FN_OPEN] = "fn_open", [DP_ACT_FN_CLOSE] = "fn_close",
  [DP_ACT_DEF_CLOSE] = "def_close", [DP_ACT_CLAUSE_OPEN] = "clause_open",
  [DP_ACT_CLAUSE_CLOSE] = "clause_close", [DP_ACT_TYPE] = "type",
  [DP_ACT_TYPEDEF_OPEN] = "typedef_open", [DP_ACT_CTOR] = "ctor",
  [DP_ACT_TYPEDEF_CLOSE] = "typedef_close", [DP_ACT_PRIMFN] = "primfn",
  [DP_ACT_TPARAMS] = "tparams", [DP_ACT_MAIN_CLOSE] = "main_close",
};

static void close_parser(lparser *lp) {
  dp_parser_free(lp->p);
  free(lp->ev);
  lp->p = NULL;
  lp->ev = NULL;
  lp->cap = 0;
}

static int p_gc(lua_State *L) {
  close_parser(luaL_checkudata(L, 1, PARSER_META));
  return 0;
}

static lparser *check_parser(lua_State *L) {
  lparser *lp = luaL_checkudata(L, 1, PARSER_META);
  if (!lp->p) luaL_error(L, "devplan: parser used after it was finished");
  return lp;
}

/* Raise e with the source line and a caret under its column. */
static int raise(lua_State *L, lparser *lp, dp_err *e) {
  char *excerpt = lp->p && e ? dp_parser_excerpt(lp->p, e->span) : NULL;
  dp__lua_push_error(L, e);
  if (excerpt) {
    lua_getfield(L, -1, "formatted");
    lua_pushliteral(L, "\n");
    lua_pushstring(L, excerpt);
    lua_concat(L, 3);
    lua_setfield(L, -2, "formatted");
    free(excerpt);
  }
  return lua_error(L);
}

/* meta[kind][index]: the entry index + 1 of the list `kind` of the
   metatable (uservalue 2 of the parser at stack index 3), read raw. */
static dp_obj *resolve_meta(void *ud, const char *kind, int64_t index, dp_err **err) {
  lparser *lp = ud;
  lua_State *L = lp->L;
  lua_checkstack(L, 4);
  int top = lua_gettop(L);
  dp_obj *o = NULL;
  lua_getiuservalue(L, 3, 2);
  if (lua_type(L, -1) != LUA_TTABLE || lua_getfield(L, -1, kind) != LUA_TTABLE) {
    *err = NULL; /* no such list: the text's own metadata is asked */
  } else {
    lua_Unsigned n = lua_rawlen(L, -1);
    if (index >= 0 && (lua_Unsigned)index < n) lua_rawgeti(L, -1, (lua_Integer)index + 1);
    else lua_pushnil(L);
    o = dp__lua_testobj(L, -1);
    if (o) dp_retain(o);
    else if ((lua_Unsigned)index >= n || index < 0)
      *err = dp_err_new(DP_ERR_NAME, DP_NOSPAN,
                        "meta[%s][%lld] is out of range (the metatable has %llu %s entr%s)", kind,
                        (long long)index, (unsigned long long)n, kind, n == 1 ? "y" : "ies");
    else
      *err = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "meta[%s][%lld] is not a devplan object", kind,
                        (long long)index);
  }
  lua_settop(L, top);
  return o;
}

/* The string at idx (a number is not one: no text is made of it). */
static const char *check_text(lua_State *L, int idx, size_t *len) {
  if (lua_type(L, idx) != LUA_TSTRING) luaL_typeerror(L, idx, "string");
  return lua_tolstring(L, idx, len);
}

/* dp._parser(text, source, metatable) */
static int p_new(lua_State *L) {
  size_t len;
  const char *text = check_text(L, 1, &len);
  const char *source = luaL_optstring(L, 2, "<string>");
  lparser *lp = lua_newuserdatauv(L, sizeof *lp, 3);
  memset(lp, 0, sizeof *lp);
  luaL_setmetatable(L, PARSER_META);
  lua_pushvalue(L, 1); /* the text lives as long as the parser */
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, 3);
  lua_setiuservalue(L, -2, 2);
  lp->p = dp_parser_new(dp__lua_ctx(L), text, len, source);
  if (!lp->p) return dp__lua_oom(L);
  if (lua_type(L, 3) == LUA_TTABLE) dp_parser_set_meta(lp->p, resolve_meta, lp);
  return 1;
}

/* dp._binary(text): a byte 0-8, 11, 12 or 14-31 anywhere in text, as the
   command line tells ONNX bytes from Relay text. Eight bytes at a time:
   a word with no byte below 32 (the common case, text) is passed with a
   few operations; the Lua pattern this replaces (a class tried at every
   byte) cost more than parsing the text (12k instructions a call on a
   let module). */
static int is_control(unsigned char c) { return c < 32 && c != '\t' && c != '\n' && c != '\r'; }

static int p_binary(lua_State *L) {
  size_t len, i = 0;
  const unsigned char *s = (const unsigned char *)check_text(L, 1, &len);
  const uint64_t highs = 0x8080808080808080u, space = 0x2020202020202020u;
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    /* (a byte below 32 sets its high bit in (w - 32 each) & ~w; bytes of
       128 and up never do) */
    if (((w - space) & ~w & highs) == 0) continue;
    for (size_t k = i; k < i + 8; k++)
      if (is_control(s[k])) {
        lua_pushboolean(L, 1);
        return 1;
      }
  }
  for (; i < len; i++)
    if (is_control(s[i])) {
      lua_pushboolean(L, 1);
      return 1;
    }
  lua_pushboolean(L, 0);
  return 1;
}

/* The kinds as a Lua string, which the parser then reads instead of its
   own copy (kept as uservalue 3: one copy of a large text's kinds). */
static int p_tokens(lua_State *L) {
  lparser *lp = check_parser(L);
  if (lua_getiuservalue(L, 1, 3) == LUA_TSTRING) return 1;
  lua_pop(L, 1);
  size_t n;
  const char *s = dp_parser_tokens(lp->p, &n);
  lua_pushlstring(L, s, n);
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, 1, 3);
  dp_parser_share_tokens(lp->p, lua_tostring(L, -1));
  return 1;
}

/* The parser a match-time capture gets as its third argument (LPeg's
   Carg(1)), checked against the parsers' metatable (upvalue 1); raises
   otherwise. */
static lparser *capture_parser(lua_State *L) {
  lparser *lp = lua_touserdata(L, 3);
  int ok = lp && lua_getmetatable(L, 3);
  if (ok) {
    ok = lua_rawequal(L, -1, lua_upvalueindex(1));
    lua_pop(L, 1);
  }
  if (!ok || !lp->p) luaL_error(L, "devplan: a parser action without its parser");
  return lp;
}

/* The match-time capture of an action (upvalues: the parsers' metatable,
   the action). */
static int p_action(lua_State *L) {
  lparser *lp = capture_parser(L);
  int top = lua_gettop(L);
  size_t n = top > 3 ? (size_t)(top - 3) : 0;
  if (n > lp->cap) {
    size_t cap = n + n / 2 + 64;
    int64_t *ev = dp_realloc(lp->ev, cap * sizeof *ev);
    if (!ev) return dp__lua_oom(L);
    lp->ev = ev;
    lp->cap = cap;
  }
  /* (positions after tokens: the grammar captures them there) */
  for (size_t i = 0; i < n; i++) {
    int64_t e = (int64_t)lua_tointeger(L, 4 + (int)i);
    lp->ev[i] = e > 0 ? e - 1 : e;
  }
  lp->L = L;
  int64_t r = dp_parser_act(lp->p, (dp_parse_action)lua_tointeger(L, lua_upvalueindex(2)), lp->ev, n);
  if (r < 0) return raise(L, lp, dp_parser_error(lp->p));
  lua_pushboolean(L, 1);
  if (r == 0) return 1;
  lua_pushinteger(L, -r);
  return 2;
}

/* The match-time capture of the simple statements' reader (upvalue: the
   parsers' metatable), as Cmt(P(1) * Carg(1), f): f(subject, position
   after the first token, parser) -> the position after the statements it
   read, or false when the first is not simple. */
static int p_simple(lua_State *L) {
  lparser *lp = capture_parser(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  if (pos < 2) return luaL_error(L, "devplan: the simple statements' reader at position %d", (int)pos);
  lp->L = L;
  int64_t r = dp_parser_simple_stmts(lp->p, (size_t)(pos - 1));
  if (r < 0) return raise(L, lp, dp_parser_error(lp->p));
  if (r == pos - 1) lua_pushboolean(L, 0);
  else lua_pushinteger(L, (lua_Integer)r);
  return 1;
}

/* parser:syntax_error(tok, expected) */
static int p_syntax_error(lua_State *L) {
  lparser *lp = check_parser(L);
  return raise(L, lp, dp_parser_syntax_error(lp->p, (size_t)luaL_checkinteger(L, 2), luaL_checkstring(L, 3)));
}

/* parser:error_here(message) */
static int p_error_here(lua_State *L) {
  lparser *lp = check_parser(L);
  return raise(L, lp, dp_parser_error_here(lp->p, "%s", luaL_checkstring(L, 2)));
}

/* A parser closed by a method (at stack index 1): its text is let go at
   once, not when the parser itself is collected (an object with a
   finalizer keeps what it refers to for one more cycle, and the text of a
   large module would stay resident while the module is planned). */
static void close_at_1(lua_State *L, lparser *lp) {
  close_parser(lp);
  lua_pushnil(L);
  lua_setiuservalue(L, 1, 1);
  lua_pushnil(L);
  lua_setiuservalue(L, 1, 3);
}

/* The result of a finished parse; the parser is closed after. */
static int finish(lua_State *L, lparser *lp, void *obj, dp_err *err) {
  if (!obj) raise(L, lp, err);
  dp__lua_push_owned(L, obj);
  close_at_1(L, lp);
  return 1;
}

static int p_module(lua_State *L) {
  lparser *lp = check_parser(L);
  dp_err *err = NULL;
  dp_module *m = dp_parser_module(lp->p, &err);
  return finish(L, lp, m, err);
}

/* The object number of argument 2, an action's result (a negative
   integer: object k is -k); 0 (no object) for anything else, without
   negating math.mininteger. */
static int64_t object_arg(lua_State *L) {
  lua_Integer h = luaL_checkinteger(L, 2);
  return h < 0 && h != LUA_MININTEGER ? -(int64_t)h : 0;
}

static int p_expr(lua_State *L) {
  lparser *lp = check_parser(L);
  dp_err *err = NULL;
  dp_expr *e = dp_parser_expr(lp->p, object_arg(L), &err);
  return finish(L, lp, e, err);
}

static int p_type(lua_State *L) {
  lparser *lp = check_parser(L);
  dp_err *err = NULL;
  dp_type *t = dp_parser_type(lp->p, object_arg(L), &err);
  return finish(L, lp, t, err);
}

static int p_close(lua_State *L) {
  close_at_1(L, luaL_checkudata(L, 1, PARSER_META));
  return 0;
}

static const luaL_Reg parser_methods[] = {
  {"tokens", p_tokens}, {"syntax_error", p_syntax_error}, {"error_here", p_error_here},
  {"module", p_module}, {"expr", p_expr}, {"type", p_type}, {"close", p_close}, {NULL, NULL}};

void dp__lua_open_parse(lua_State *L) {
  luaL_newmetatable(L, PARSER_META);
  lua_pushcfunction(L, p_gc);
  lua_setfield(L, -2, "__gc");
  luaL_newlib(L, parser_methods);
  lua_setfield(L, -2, "__index");
  /* dp._parse_actions */
  lua_createtable(L, 0, DP_ACT__COUNT);
  for (int a = 1; a < DP_ACT__COUNT; a++) {
    lua_pushvalue(L, -2);
    lua_pushinteger(L, a);
    lua_pushcclosure(L, p_action, 2);
    lua_setfield(L, -2, action_names[a]);
  }
  lua_setfield(L, -3, "_parse_actions");
  lua_pushcclosure(L, p_simple, 1);
  lua_setfield(L, -2, "_parse_simple");
  /* dp._token_kinds */
  lua_newtable(L);
  char kind;
  for (int i = 0; dp_token_kind_name(i, &kind); i++) {
    lua_pushlstring(L, &kind, 1);
    lua_setfield(L, -2, dp_token_kind_name(i, &kind));
  }
  lua_setfield(L, -2, "_token_kinds");
  /* dp._token_texts: how a diagnostic names each kind ("')'", "a name") */
  lua_newtable(L);
  for (int i = 0; dp_token_kind_name(i, &kind); i++) {
    lua_pushstring(L, dp_token_kind_text(kind));
    lua_setfield(L, -2, dp_token_kind_name(i, &kind));
  }
  lua_setfield(L, -2, "_token_texts");
  lua_pushinteger(L, DP_PARSE_MAX_NEST);
  lua_setfield(L, -2, "_parse_max_nest");
  lua_pushcfunction(L, p_new);
  lua_setfield(L, -2, "_parser");
  lua_pushcfunction(L, p_binary);
  lua_setfield(L, -2, "_binary");
}
