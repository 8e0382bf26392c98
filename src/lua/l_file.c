/*
 * dp.write_file(path, text): write a whole file, every error reported.
 * dp.write_file(path, module, print_options?): the module's text (the
 * options of dp.astext), written out as it is printed (dp_print_module_to):
 * the text of a large module is never held whole, in C or in Lua.
 * dp.write_file(file, ...): an open Lua file (io.stdout), written where
 * it is. Option newline = true: the text ends with a newline (one is
 * added when the printed text has none: a metadata section's JSON).
 *
 * A failed run must never leave half a file, and a full disk must never
 * pass for success. So a regular file (or a path that does not exist yet)
 * is written as a new temporary file beside it (same folder: the rename
 * stays on one file system), checked at every write and at close, then
 * renamed over the target: the target is the old file or the whole new
 * one, never a part. The new file gets the old one's permissions (a new
 * one: 0666 less the umask, as fopen would). A symbolic link is followed:
 * the file it names is replaced, the link stays. Anything else that exists
 * (a device such as /dev/full or /dev/stdout, a pipe) cannot be replaced
 * and is written in place, every write and the close checked.
 *
 * Returns true, or raises the devplan.Error "cannot write PATH: reason".
 *
 * dp._read_text(path): a regular file's text as a Lua string, read into a
 * block Lua then takes as the string (l_text.c): a large input is in memory
 * once, where io's read makes it twice while it reads (its buffer, then
 * the string copied from it).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "devplan/print.h"
#include "l_aux.h"
#include "l_init.h"

/* Writes n bytes of s to fd; 0 or an errno. */
static int write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

/* What goes into the file: text s (n bytes), or module m printed with o. */
typedef struct content {
  const char *s;
  size_t n;
  const dp_module *m;
  dp_print_opts o;
  int newline;  /* a module's text ends with a newline (added when it has none) */
  char last;    /* the last byte written */
  int fd, err; /* (the sink's: the file, the errno of a failed write) */
  off_t base;  /* where the text starts in the file */
} content;

static int sink_write(void *ud, const char *s, size_t n) {
  content *c = ud;
  c->err = write_all(c->fd, s, n);
  if (n) c->last = s[n - 1];
  return c->err ? -1 : 0;
}

static int sink_rewind(void *ud, uint64_t offset) {
  content *c = ud;
  off_t at = c->base + (off_t)offset;
  if (lseek(c->fd, at, SEEK_SET) < 0 || ftruncate(c->fd, at) != 0) {
    c->err = errno;
    return -1;
  }
  return 0;
}

/* Writes c to fd (seekable: a file of our own); 0, an errno, or -1 when
   out of memory. */
static int put_content(int fd, content *c, int seekable) {
  if (!c->m) return write_all(fd, c->s, c->n);
  c->fd = fd;
  c->err = 0;
  dp_print_sink sink = {sink_write, seekable ? sink_rewind : NULL, c};
  if (dp_print_module_to(c->m, &c->o, &sink) == 0)
    return c->newline && c->last != '\n' ? write_all(fd, "\n", 1) : 0;
  return c->err ? c->err : -1;
}

/* A device, a pipe: written where it is. */
static int write_in_place(const char *path, content *c) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  if (fd < 0) return errno;
  int e = put_content(fd, c, 0);
  if (close(fd) != 0 && !e) e = errno;
  return e;
}

/* A regular file or a new one: a temporary file beside it, renamed over
   it. target is the path to replace (a link's target already resolved).
   0, an errno, or -1 when out of memory. */
static int write_replacing(const char *target, int exists, mode_t mode, content *c) {
  size_t len = strlen(target);
  char *tmp = dp_malloc(len + 16);
  if (!tmp) return -1;
  const char *slash = strrchr(target, '/');
  size_t dir = slash ? (size_t)(slash - target) + 1 : 0;
  /* "dir/.name.XXXXXX": hidden while it is being written */
  memcpy(tmp, target, dir);
  tmp[dir] = '.';
  memcpy(tmp + dir + 1, target + dir, len - dir);
  memcpy(tmp + len + 1, ".XXXXXX", 8);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    free(tmp);
    return e;
  }
  if (!exists) {
    mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  int e = fchmod(fd, mode & 07777) != 0 ? errno : 0;
  if (!e) e = put_content(fd, c, 1);
  if (close(fd) != 0 && !e) e = errno;
  if (!e && rename(tmp, target) != 0) e = errno;
  if (e) unlink(tmp);
  free(tmp);
  return e;
}

/* An open Lua file (io.stdout): written where it is, after what its
   buffer holds; a text goes through its buffer, a module straight to its
   descriptor (going back only in a regular file not opened to append). */
static int write_handle(lua_State *L, luaL_Stream *h, content *c) {
  if (!h->closef) return luaL_error(L, "attempt to use a closed file");
  errno = 0;
  if (!c->m) {
    size_t done = fwrite(c->s, 1, c->n, h->f);
    return done == c->n && fflush(h->f) == 0 ? 0 : errno ? errno : EIO;
  }
  if (fflush(h->f) != 0) return errno ? errno : EIO;
  int fd = fileno(h->f);
  off_t at = lseek(fd, 0, SEEK_CUR);
  int fl = fcntl(fd, F_GETFL);
  c->base = at;
  return put_content(fd, c, at >= 0 && fl >= 0 && !(fl & O_APPEND));
}

static int write_file(lua_State *L) {
  content c = {0};
  luaL_Stream *h = luaL_testudata(L, 1, LUA_FILEHANDLE);
  const char *path = h ? "<file>" : luaL_checkstring(L, 1);
  dp_obj *o = dp__lua_testobj(L, 2);
  if (o && o->type == DP_OBJ_MODULE) {
    c.m = (const dp_module *)o;
    static const char *const keys[] = {"types", "short_devices", "param_lines", "spans", "meta",
                                       "newline", NULL};
    dp__lua_check_opts(L, 3);
    dp__lua_check_opt_keys(L, 3, keys, "devplan.write_file");
    c.o = (dp_print_opts){dp__lua_print_flags(L, 3, NULL), NULL, NULL, dp__lua_ctx(L), NULL};
    c.newline = dp__lua_opt_field(L, 3, "newline") != LUA_TNIL && lua_toboolean(L, -1);
    lua_pop(L, 1);
  } else {
    if (o) return luaL_typeerror(L, 2, "string or IRModule");
    c.s = luaL_checklstring(L, 2, &c.n);
  }
  if (h) {
    if (h->f == stdout) path = "to standard output";
    else if (h->f == stderr) path = "to standard error";
  }
  luaL_argcheck(L, *path != '\0', 1, "a file name expected, got an empty string");
  struct stat st;
  int e, exists = !h && stat(path, &st) == 0;
  if (h) e = write_handle(L, h, &c);
  else if (exists && S_ISDIR(st.st_mode)) e = EISDIR;
  else if (exists && !S_ISREG(st.st_mode)) e = write_in_place(path, &c);
  else {
    char real[PATH_MAX];
    const char *target = path;
    struct stat lst;
    if (exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) && realpath(path, real)) target = real;
    e = write_replacing(target, exists, exists ? st.st_mode : 0, &c);
  }
  if (e == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  if (e < 0) return dp__lua_oom(L);
  dp_err *err = dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "cannot write %s: %s", path, strerror(e));
  return err ? dp__lua_error(L, err) : dp__lua_oom(L);
}

/* dp._release_heap(): gives the pages of the freed heap back to the system
   (glibc's malloc_trim; elsewhere nothing). The command line calls it once
   the input's text and the parser are freed, before planning, and once the
   input module is: freed small blocks otherwise stay resident, and
   planning's and the printer's large arrays (each mapped on its own, see
   src/cli/main.c) come on top of them. */
static int release_heap(lua_State *L) {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  (void)L;
  return 0;
}

/* ---- reading ---- */

/* Reads fd (a regular file of `size` bytes, as fstat said) into b: up to
   its end, which may have moved since (the block made `size` bytes first:
   one more read finds the end). 0, or an errno (ENOMEM). */
static int read_fd(int fd, size_t size, dp__lua_sbuf *b) {
  if (dp__lua_sbuf_try_grow(b, size) != 0) return ENOMEM;
  char more[4096]; /* (the block full: whether the file goes on) */
  for (;;) {
    size_t room = b->cap - b->n - 1;
    char *to = room ? b->s + b->n : more;
    ssize_t r = read(fd, to, room ? room : sizeof more);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) return 0;
    if (to == more) { /* (the file grew: on to its new end) */
      if (dp__lua_sbuf_try_grow(b, (size_t)r) != 0) return ENOMEM;
      memcpy(b->s + b->n, more, (size_t)r);
    }
    b->n += (size_t)r;
  }
}

/* dp._read_text(path): the text of a regular file, a Lua string made from
   the block it is read into (dp__lua_sbuf); nil for anything else, or
   when it cannot be read (the caller then reads it as before, with Lua's
   io and its messages). Raises "out of memory". */
static int read_text(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  dp__lua_sbuf *b = dp__lua_sbuf_new(L, 0); /* (made before the file is open: it may raise) */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  int e = fd < 0 ? errno : fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL
         : read_fd(fd, (size_t)st.st_size, b);
  if (fd >= 0) close(fd);
  if (!e) return dp__lua_sbuf_push(L, b);
  dp__lua_sbuf_drop(b);
  if (e == ENOMEM) return dp__lua_oom(L);
  lua_pushnil(L);
  return 1;
}

void dp__lua_open_file(lua_State *L) {
  lua_pushcfunction(L, read_text);
  lua_setfield(L, -2, "_read_text");
  lua_pushcfunction(L, write_file);
  lua_setfield(L, -2, "write_file");
  lua_pushcfunction(L, release_heap);
  lua_setfield(L, -2, "_release_heap");
}
