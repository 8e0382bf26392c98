/*
 * Short names of virtual devices, for reading (DP_PRINT_SHORT_DEVICES).
 *
 * A planned module repeats the full VirtualDevice(...) on every parameter,
 * annotation and copy. For reading, each device gets a short name made of
 * what tells devices apart on one machine: the device type, the virtual
 * device id when it is not 0, the memory scope when there is one
 * (`cpu`, `cuda`, `cuda:1`, `cuda:1.texture`); two devices that would get
 * the same name (they differ in target, or one leaves the id open) are
 * told apart by `#2`, `#3`, ... in order of first use. The printer prints
 * `@name` and puts one legend line per device at the top, so the full
 * device is still said once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "print_internal.h"
#include "textbuf.h"

static int taken(const dp__devnames *d, const char *name) {
  for (uint32_t i = 0; i < d->n; i++)
    if (strcmp(d->names[i], name) == 0) return 1;
  return 0;
}

/* The name vd would get if nothing else were named: `cuda:1.texture`. */
static void base_name(const dp_vdev *vd, char *out, size_t cap) {
  const char *type = vd->device_type ? dp_device_type_name(vd->device_type) : "any";
  int n = snprintf(out, cap, "%s", type ? type : "any");
  if (vd->virtual_device_id > 0 && n >= 0 && (size_t)n < cap)
    n += snprintf(out + n, cap - (size_t)n, ":%d", vd->virtual_device_id);
  if (vd->memory_scope[0] && n >= 0 && (size_t)n < cap)
    snprintf(out + n, cap - (size_t)n, ".%s", vd->memory_scope);
}

const char *dp__devname(dp__devnames *d, const dp_vdev *vd) {
  for (uint32_t i = 0; i < d->n; i++)
    if (d->vdevs[i] == vd) return d->names[i]; /* interned: one pointer per device */
  if (d->n == d->cap) {
    uint32_t cap = d->cap ? d->cap * 2 : 8;
    const dp_vdev **v = dp_realloc(d->vdevs, cap * sizeof *v);
    if (!v) return NULL;
    d->vdevs = v;
    char **s = dp_realloc(d->names, cap * sizeof *s);
    if (!s) return NULL;
    d->names = s;
    d->cap = cap;
  }
  char base[160], name[176];
  base_name(vd, base, sizeof base);
  snprintf(name, sizeof name, "%s", base);
  for (int k = 2; taken(d, name); k++) snprintf(name, sizeof name, "%s#%d", base, k);
  char *copy = dp_strdup(name);
  if (!copy) return NULL;
  d->vdevs[d->n] = vd;
  d->names[d->n++] = copy;
  return copy;
}

int dp__devlegend(dp__tb *b, const dp__devnames *d) {
  for (uint32_t i = 0; i < d->n; i++) {
    char *full = dp_vdev_str(d->vdevs[i]);
    if (!full) return -1;
    dp__tb_printf(b, "// @%s = %s\n", d->names[i], full);
    free(full);
  }
  return b->failed ? -1 : 0;
}

void dp__devnames_free(dp__devnames *d) {
  for (uint32_t i = 0; i < d->n; i++) free(d->names[i]);
  free(d->names);
  free(d->vdevs);
  memset(d, 0, sizeof *d);
}
