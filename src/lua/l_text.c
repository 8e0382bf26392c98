/*
 * Printed text made a Lua string without copying it (dp.astext, tostring
 * of modules and expressions).
 *
 * Lua 5.4 makes a string only by copying bytes into a block of its own
 * allocator (lua_pushlstring). A million-call module's text is 150-250 MB:
 * built in C and then copied, it costs two sets of fresh pages and the
 * copy (0.1-0.2 s of dp.astext at 1,000,000 calls). Here the printer
 * builds the text in a block of the state's own allocator, at the offset
 * where Lua keeps a long string's bytes (read from the Lua in use, once per
 * state: the size and place of a probe string's block), sized exactly at
 * the end. The allocator is then wrapped for one lua_pushlstring, and the
 * wrapper answers the string's allocation with that block: Lua's copy is
 * from the block to itself (memcpy with source and destination equal,
 * which glibc returns from at once and ASan allows), and the string owns
 * the block as any other. Whatever does not match exactly (another Lua,
 * another allocation first) falls back to Lua's own block and a copy; the
 * text is the same either way.
 *
 * dp__lua_sbuf is the same for a string a binding builds piece by piece
 * (the report's copies) or reads (dp._read_text, l_file.c: a file's text):
 * its block, held by a userdata until the string takes it, so that an
 * error while it is built frees it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "l_aux.h"

/* Texts below this are copied (few pages: no gain), and so are all under
   valgrind's memcheck, which reports a copy onto itself as an overlap. */
#define ADOPT_MIN ((size_t)1 << 20)

/* ---------------- where a long string's bytes lie ---------------- */

#define PROBE_LEN 64 /* longer than any short (interned) string */

typedef struct probe {
  lua_Alloc f;
  void *ud;
  void *p;   /* the first string block made */
  size_t ns; /* its size */
} probe;

static void *probe_alloc(void *ud, void *p, size_t os, size_t ns) {
  probe *r = ud;
  void *q = r->f(r->ud, p, os, ns);
  if (!p && os == LUA_TSTRING && !r->p) {
    r->p = q;
    r->ns = ns;
  }
  return q;
}

static int probe_push(lua_State *L) {
  char s[PROBE_LEN];
  memset(s, 'x', sizeof s);
  lua_pushlstring(L, s, sizeof s);
  return 1;
}

static const char HEAD_KEY = 0; /* the registry's cache of string_head */

/* The offset of a long string's bytes in its block (the block being the
   offset + length + 1 bytes), as this state's Lua makes them; 0 when that
   could not be read. Raises only what a failed allocation raises. */
static size_t string_head(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &HEAD_KEY) == LUA_TNUMBER) {
    size_t h = (size_t)lua_tointeger(L, -1);
    lua_pop(L, 1);
    return h;
  }
  lua_pop(L, 1);
  probe r = {0};
  r.f = lua_getallocf(L, &r.ud);
  lua_pushcfunction(L, probe_push);
  lua_setallocf(L, probe_alloc, &r);
  int rc = lua_pcall(L, 0, 1, 0); /* (protected: r must not outlive this frame) */
  lua_setallocf(L, r.f, r.ud);
  if (rc != LUA_OK) lua_error(L);
  const char *s = lua_tostring(L, -1);
  size_t h = 0;
  if (r.p && s > (const char *)r.p && r.ns == (size_t)(s - (const char *)r.p) + PROBE_LEN + 1)
    h = (size_t)(s - (const char *)r.p);
  lua_pop(L, 1);
  lua_pushinteger(L, (lua_Integer)h);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &HEAD_KEY);
  return h;
}

/* ---------------- the text's block ---------------- */

static void *block_alloc(void *ud, void *p, size_t os, size_t ns) {
  dp__lua_text *t = ud;
  return t->f(t->ud, p, os, ns);
}

void dp__lua_text_init(lua_State *L, dp__lua_text *t) {
  memset(t, 0, sizeof *t);
  size_t h = string_head(L);
  if (!h) return; /* the text is malloc'd and copied */
  t->f = lua_getallocf(L, &t->ud);
  t->blk = (dp_print_block){block_alloc, t, h};
  t->block = &t->blk;
}

/* The allocator while the string is made: the string's block is the text's. */
static void *adopt_alloc(void *ud, void *p, size_t os, size_t ns) {
  dp__lua_text *t = ud;
  if (!p && t->pending && os == LUA_TSTRING && ns == t->size) {
    void *b = t->pending;
    t->pending = NULL;
    t->taken = 1;
    return b;
  }
  return t->f(t->ud, p, os, ns);
}

static int adopt_push(lua_State *L) {
  dp__lua_text *t = lua_touserdata(L, 1);
  lua_pushlstring(L, t->src, t->len);
  return 1;
}

static int under_memcheck(void) {
  const char *pre = getenv("LD_PRELOAD");
  return pre && strstr(pre, "vgpreload_memcheck");
}

int dp__lua_text_push(lua_State *L, dp__lua_text *t, char *s, size_t len) {
  if (!s) return dp__lua_oom(L);
  if (!t->block) return dp__lua_push_lstr(L, s, len);
  void *raw = s - t->blk.head;
  t->src = s;
  t->len = len;
  t->size = t->blk.head + len + 1;
  t->taken = 0;
  t->pending = len >= ADOPT_MIN && !under_memcheck() ? raw : NULL;
  lua_pushcfunction(L, adopt_push);
  lua_pushlightuserdata(L, t);
  lua_setallocf(L, adopt_alloc, t);
  int rc = lua_pcall(L, 1, 1, 0); /* (protected: t must not outlive this frame) */
  lua_setallocf(L, t->f, t->ud);
  t->pending = NULL;
  if (!t->taken) t->f(t->ud, raw, t->size, 0); /* copied by Lua (or failed) */
  if (rc != LUA_OK) return lua_error(L);
  return 1;
}

/* ---------------- a string built in C ---------------- */

#define SBUF "devplan.TextBlock"

static int sbuf_gc(lua_State *L) {
  dp__lua_sbuf_drop(lua_touserdata(L, 1));
  return 0;
}

dp__lua_sbuf *dp__lua_sbuf_new(lua_State *L, size_t cap) {
  dp__lua_sbuf *b = lua_newuserdatauv(L, sizeof *b, 0);
  memset(b, 0, sizeof *b);
  if (luaL_newmetatable(L, SBUF)) {
    lua_pushcfunction(L, sbuf_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  dp__lua_text_init(L, &b->t);
  if (!b->t.block) { /* (this Lua's strings unknown: a block all the same, copied at the end) */
    b->t.f = lua_getallocf(L, &b->t.ud);
    b->t.blk.head = 0;
  }
  if (cap) dp__lua_sbuf_room(L, b, cap);
  return b;
}

int dp__lua_sbuf_try_grow(dp__lua_sbuf *b, size_t extra) {
  size_t h = b->t.blk.head;
  if (extra > SIZE_MAX / 4 - h - b->n - 1) return -1; /* (the doubling below stays in range) */
  size_t need = b->n + extra + 1, cap = b->cap ? b->cap : 256;
  if (!b->cap && cap < need) cap = need; /* (the first block as asked: a file's size) */
  while (cap < need) cap *= 2;
  char *raw = b->s ? b->s - h : NULL;
  char *r = b->t.f(b->t.ud, raw, raw ? h + b->cap : 0, h + cap);
  if (!r) return -1;
  b->s = r + h;
  b->cap = cap;
  return 0;
}

void dp__lua_sbuf_grow(lua_State *L, dp__lua_sbuf *b, size_t extra) {
  if (dp__lua_sbuf_try_grow(b, extra) != 0) dp__lua_oom(L);
}

void dp__lua_sbuf_drop(dp__lua_sbuf *b) {
  if (b->s) b->t.f(b->t.ud, b->s - b->t.blk.head, b->t.blk.head + b->cap, 0);
  b->s = NULL;
  b->n = b->cap = 0;
}

int dp__lua_sbuf_push(lua_State *L, dp__lua_sbuf *b) {
  dp__lua_sbuf_room(L, b, 0);
  size_t h = b->t.blk.head;
  char *s = b->s;
  b->s[b->n] = 0;
  if (b->cap != b->n + 1) { /* the block exactly the string's */
    char *r = b->t.f(b->t.ud, s - h, h + b->cap, h + b->n + 1);
    if (!r) dp__lua_oom(L);
    s = r + h;
  }
  b->s = NULL; /* (the text's now: taken or freed) */
  if (!b->t.block) {
    lua_pushlstring(L, s, b->n); /* (a failed allocation leaks the block: as dp__lua_push_lstr) */
    b->t.f(b->t.ud, s - h, h + b->n + 1, 0);
    return 1;
  }
  return dp__lua_text_push(L, &b->t, s, b->n);
}
