/*
 * dp.write_file(path, text): write a whole file, every error reported.
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
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
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

/* A device, a pipe: written where it is. */
static int write_in_place(const char *path, const char *s, size_t n) {
  int fd = open(path, O_WRONLY | O_TRUNC);
  if (fd < 0) return errno;
  int e = write_all(fd, s, n);
  if (close(fd) != 0 && !e) e = errno;
  return e;
}

/* A regular file or a new one: a temporary file beside it, renamed over
   it. target is the path to replace (a link's target already resolved).
   0, an errno, or -1 when out of memory. */
static int write_replacing(const char *target, int exists, mode_t mode, const char *s, size_t n) {
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
  if (!e) e = write_all(fd, s, n);
  if (close(fd) != 0 && !e) e = errno;
  if (!e && rename(tmp, target) != 0) e = errno;
  if (e) unlink(tmp);
  free(tmp);
  return e;
}

static int write_file(lua_State *L) {
  size_t n;
  const char *path = luaL_checkstring(L, 1);
  const char *s = luaL_checklstring(L, 2, &n);
  luaL_argcheck(L, *path != '\0', 1, "a file name expected, got an empty string");
  struct stat st;
  int e, exists = stat(path, &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) e = EISDIR;
  else if (exists && !S_ISREG(st.st_mode)) e = write_in_place(path, s, n);
  else {
    char real[PATH_MAX];
    const char *target = path;
    struct stat lst;
    if (exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) && realpath(path, real)) target = real;
    e = write_replacing(target, exists, exists ? st.st_mode : 0, s, n);
  }
  if (e == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  if (e < 0) return dp__lua_oom(L);
  dp_err *err = dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "cannot write %s: %s", path, strerror(e));
  return err ? dp__lua_error(L, err) : dp__lua_oom(L);
}

void dp__lua_open_file(lua_State *L) {
  lua_pushcfunction(L, write_file);
  lua_setfield(L, -2, "write_file");
}
