/*
 * What the placement report counts (dp.planner.report, lua/devplan/report.lua
 * words it), gathered in C in one walk of a planned module
 * (src/planner/report.c).
 */
#ifndef DEVPLAN_REPORT_H
#define DEVPLAN_REPORT_H

#include "plan.h"

typedef struct dp_report_dev {
  dp_vdev *vd;            /* borrowed: held by the module or the domains */
  int64_t calls, bytes;   /* operator and constructor calls; bytes resident */
  int64_t unknown;        /* values of unknown size */
  int64_t too_large;      /* values left out of `bytes` (they would carry it past INT64_MAX) */
  uint32_t entered;       /* rank in the report's list of devices (UINT32_MAX: only named,
                             as a copy's source or destination) */
} dp_report_dev;

typedef struct dp_report_copy {
  dp_expr *copy;          /* the device_copy (borrowed) */
  dp_expr *value;         /* what it copies, under the on_device calls that mark where it is made */
  dp_vdev *src, *dst;     /* its written ends (borrowed; NULL: not written) */
  uint32_t src_dev, dst_dev; /* their indices in dev (UINT32_MAX: not written) */
  const char *fn, *name;  /* the copy's printed name and its function (NULL: none; owned by the data) */
  const char *value_fn, *value_name; /* the value's */
  const dp_type *type;    /* the copy's checked type (held) and position, read as it is counted
                             (the rows then need not go back to a node long out of the cache) */
  dp_span span;
} dp_report_copy;

typedef struct dp_report_data {
  dp_report_dev *dev;     /* every device met, in the order first met */
  uint32_t ndev, capdev;
  dp_report_copy *copies; /* every device_copy, in the order of the walk */
  uint32_t ncopies, capcopies;
  char **strings;         /* the names (owned) */
  uint32_t nstrings, capstrings;
  int64_t calls, copies_total, bytes_copied, bytes_resident, copies_too_large, too_large;
} dp_report_data;

/* Counts planned module `planned`, whose devices are d's (dp_plan_domains
   of it): the entry functions' parameters first, then each function's
   nodes in post order (definition order). The copies' names are the
   printer's (dp_print_module, no flags), found by its naming rules alone
   (dp_print_module_names: no text is kept) when the module has copies. 0, or -1 + error. */
int dp_report_scan(dp_module *planned, dp_domains *d, dp_report_data *out, dp_err **err);
/* dp_report_scan without planning again: the devices read from the planned
   module itself, as PlanDevices with cfg leaves it (capture's annotations:
   a function's virtual_device for its body, a fixed on_device's for its
   body, a device_copy's source for its argument, the parent's device for
   any other child), which are the devices planning it again finds. 0, -1
   + error, or 1 when the module does not say every device so (an
   annotation missing, not fixed, or one planning by cfg would change; a
   primitive function; the memory and VM dialect; references; a value
   shared by positions on two devices): then plan it (dp_plan_domains) and
   call dp_report_scan. */
int dp_report_scan_lexical(dp_module *planned, const dp_config *cfg, dp_report_data *out, dp_err **err);
void dp_report_data_clear(dp_report_data *r);

#endif
