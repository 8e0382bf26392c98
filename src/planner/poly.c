/*
 * Device-polymorphic functions (include/devplan/move.h, dp_plan_polymorphic):
 * PlanDevices with a global function specialised per distinct device
 * signature its callers give it (TVM: "there is no 'device polymorphism'
 * for Relay functions", device_planner.cc's TODO).
 *
 *   1. expand: from @main, every call of a global function gets a copy of
 *      it of its own (an instance), and so on down the calls; a recursive
 *      cycle of functions is one unit, copied whole per call from outside
 *      it (its own calls stay in the copy: polymorphic recursion is not
 *      specialised, its iterations keep one signature), and a function
 *      used as a value, or past the budget of new functions, is not copied;
 *   2. plan the expanded module (PlanDevices with the given options): each
 *      copy gets the devices its call site gives it;
 *   3. merge, callees first: copies of a unit whose planned functions are
 *      the same (devices included, their calls to merged copies renamed)
 *      are one; the class of the first call met keeps the function's name,
 *      the others are named after the device their result is on
 *      (@f_cuda, then @f_cuda_2, ...).
 *
 * So a function called with one signature stays one function; one called
 * from the CPU and from the GPU becomes @f and @f_cuda, and no copy moves
 * values to a signature forced on both. The merged module is planned by
 * TVM's rules as it is (every copy of a class is identical).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

typedef struct pcall { uint32_t id, callee; } pcall;   /* a call site: node id, callee function */

typedef struct pfun {
  dp__mfun f;                /* analysis of the original */
  pcall *calls; uint32_t ncalls, capcalls;
  uint32_t unit;
  int indirect;              /* referenced other than as a callee */
} pfun;

typedef struct pinst {
  uint32_t unit;
  int original;              /* the functions as they are (their own names) */
  uint32_t first;            /* its member functions' slots: names[first + k] for member k */
  uint32_t cls;              /* its class after merging (the class's first instance) */
  uint32_t spare;
} pinst;

typedef struct pstate {
  dp_module *m;
  struct dp__plan_ops ops;
  pfun *fn; uint32_t nfn;
  /* units (strongly connected components of the call graph), callees first */
  uint32_t *umem, *uoff, nunit;     /* members of unit u: umem[uoff[u] .. uoff[u + 1]) */
  int *uspec;                       /* may the unit be specialised */
  uint32_t *uorig;                  /* its original instance, or MV_NONE */
  uint32_t *uinst;                  /* its instances */
  uint32_t *tgt, ntgt, captgt;      /* per instance, per member, per call: the instance called */
  uint32_t *tgtoff, captgtoff;      /* first target of each instance */
  uint32_t *slot_of;                /* function of the expanded module -> its slot */
  pinst *in; uint32_t nin, capin;
  char **names; uint32_t nnames, capnames;   /* per instance member: its function's name */
  dp__mtable *tab;                  /* per instance member: its rewrite (calls renamed) */
  uint32_t budget;
  dp_err *err;
} pstate;

static int oomerr(pstate *s) {
  /* (the first error stands) */
  if (!s->err) s->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  return -1;
}

static char *fmt2(const char *a, const char *b, uint32_t k) {
  size_t n = strlen(a) + strlen(b) + 16;
  char *s = dp_malloc(n);
  if (s) {
    if (k) snprintf(s, n, "%s%s%u", a, b, k);
    else snprintf(s, n, "%s%s", a, b);
  }
  return s;
}

/* ---------------------------------------------------------------- the call graph */

static int analyse(pstate *s) {
  dp_module *m = s->m;
  if (!(s->fn = dp_calloc(m->nfuncs ? m->nfuncs : 1, sizeof *s->fn))) return oomerr(s);
  s->nfn = m->nfuncs;
  for (uint32_t g = 0; g < s->nfn; g++) {
    pfun *p = &s->fn[g];
    if (dp__mfun_init(&p->f, &m->funcs[g].fn->e, m->funcs[g].global->name, &s->err) < 0) {
      s->nfn = g;
      return -1;
    }
  }
  for (uint32_t g = 0; g < s->nfn; g++) {
    dp__mfun *f = &s->fn[g].f;
    for (uint32_t id = 0; id < f->n; id++) {
      if (f->x[id]->h.kind != DP_GLOBAL) continue;
      int h = dp_module_func_index(m, ((dp_global *)f->x[id])->name);
      if (h < 0) continue;
      for (uint32_t u = f->uoff[id]; u < f->uoff[id + 1]; u++) {
        uint32_t q = f->upar[u];
        if (f->uslot[u] == 0 && f->x[q]->h.kind == DP_CALL) {
          pfun *p = &s->fn[g];
          if (dp_grow((void **)&p->calls, &p->capcalls, p->ncalls + 1, sizeof *p->calls) < 0) return oomerr(s);
          p->calls[p->ncalls++] = (pcall){q, (uint32_t)h};
        } else {
          s->fn[h].indirect = 1;
        }
      }
    }
  }
  return 0;
}

/* Tarjan's strongly connected components, with an explicit stack: units in
   the order they close, callees before callers. */
static int units(pstate *s) {
  uint32_t n = s->nfn;
  uint32_t *idx = dp_malloc((n ? n : 1) * sizeof *idx), *low = dp_malloc((n ? n : 1) * sizeof *low);
  uint32_t *stk = dp_malloc((n ? n : 1) * sizeof *stk), *cs = dp_malloc((n ? n : 1) * 2 * sizeof *cs);
  uint8_t *on = dp_calloc(n ? n : 1, 1);
  s->umem = dp_malloc((n ? n : 1) * sizeof *s->umem);
  s->uoff = dp_malloc(((size_t)n + 1) * sizeof *s->uoff);
  int rc = 0;
  if (!idx || !low || !stk || !cs || !on || !s->umem || !s->uoff) {
    rc = oomerr(s);
    goto done;
  }
  for (uint32_t i = 0; i < n; i++) idx[i] = MV_NONE;
  uint32_t counter = 0, nstk = 0, nm = 0;
  s->nunit = 0;
  for (uint32_t root = 0; root < n; root++) {
    if (idx[root] != MV_NONE) continue;
    uint32_t ncs = 0;
    cs[ncs++] = root;
    cs[ncs++] = 0;
    idx[root] = low[root] = counter++;
    stk[nstk++] = root;
    on[root] = 1;
    while (ncs) {
      uint32_t v = cs[ncs - 2], *k = &cs[ncs - 1];
      if (*k < s->fn[v].ncalls) {
        uint32_t w = s->fn[v].calls[(*k)++].callee;
        if (idx[w] == MV_NONE) {
          idx[w] = low[w] = counter++;
          stk[nstk++] = w;
          on[w] = 1;
          cs[ncs++] = w;
          cs[ncs++] = 0;
        } else if (on[w] && idx[w] < low[v]) {
          low[v] = idx[w];
        }
        continue;
      }
      ncs -= 2;
      if (ncs && low[v] < low[cs[ncs - 2]]) low[cs[ncs - 2]] = low[v];
      if (low[v] == idx[v]) {
        s->uoff[s->nunit] = nm;
        uint32_t w;
        do {
          w = stk[--nstk];
          on[w] = 0;
          s->fn[w].unit = s->nunit;
          s->umem[nm++] = w;
        } while (w != v);
        s->nunit++;
      }
    }
  }
  s->uoff[s->nunit] = nm;
  s->uspec = dp_calloc(s->nunit ? s->nunit : 1, sizeof *s->uspec);
  s->uorig = dp_malloc((s->nunit ? s->nunit : 1) * sizeof *s->uorig);
  s->uinst = dp_calloc(s->nunit ? s->nunit : 1, sizeof *s->uinst);
  if (!s->uspec || !s->uorig || !s->uinst) {
    rc = oomerr(s);
    goto done;
  }
  for (uint32_t u = 0; u < s->nunit; u++) {
    s->uorig[u] = MV_NONE;
    int ok = 1;
    for (uint32_t k = s->uoff[u]; k < s->uoff[u + 1]; k++) {
      uint32_t g = s->umem[k];
      ok &= !s->fn[g].indirect && !dp__is_primitive(s->m->funcs[g].fn) &&
            strcmp(s->m->funcs[g].global->name, "main") != 0;
    }
    s->uspec[u] = ok;
  }
done:
  free(idx);
  free(low);
  free(stk);
  free(cs);
  free(on);
  return rc;
}

/* ---------------------------------------------------------------- expanding */

static uint32_t nmembers(const pstate *s, uint32_t u) { return s->uoff[u + 1] - s->uoff[u]; }

/* The member index of function g in its unit. */
static uint32_t member(const pstate *s, uint32_t g) {
  uint32_t u = s->fn[g].unit;
  for (uint32_t k = s->uoff[u]; k < s->uoff[u + 1]; k++)
    if (s->umem[k] == g) return k - s->uoff[u];
  return 0;
}

/* A new instance of unit u (original: the functions under their names). */
static uint32_t new_instance(pstate *s, uint32_t u, int original) {
  uint32_t nm = nmembers(s, u);
  if (dp_grow((void **)&s->in, &s->capin, s->nin + 1, sizeof *s->in) < 0 ||
      dp_grow((void **)&s->names, &s->capnames, s->nnames + nm, sizeof *s->names) < 0) {
    oomerr(s);
    return MV_NONE;
  }
  s->in[s->nin] = (pinst){u, original, s->nnames, MV_NONE, MV_NONE};
  for (uint32_t k = 0; k < nm; k++) {
    const char *name = s->m->funcs[s->umem[s->uoff[u] + k]].global->name;
    char *n = original ? dp_strdup(name) : fmt2(name, "__s", s->nin);
    if (!n) {
      oomerr(s);
      return MV_NONE;
    }
    s->names[s->nnames++] = n;
  }
  if (original) s->uorig[u] = s->nin;
  s->uinst[u]++;
  return s->nin++;
}

static uint32_t original_of(pstate *s, uint32_t u) {
  return s->uorig[u] != MV_NONE ? s->uorig[u] : new_instance(s, u, 1);
}

/* Every instance from main's down: each call of a function of another unit
   that may be specialised gets an instance of that unit of its own, while
   the budget lasts; the rest call the original. The instances array is the
   worklist; each call's target is recorded (tgt, from tgtoff[i] per
   instance: its members' calls in order). Units nothing reached keep their
   original, expanded the same way. */
static int expand(pstate *s) {
  for (uint32_t u = 0; u < s->nunit; u++)
    if (!s->uspec[u] && original_of(s, u) == MV_NONE) return -1;
  uint32_t i = 0;
  for (;;) {
    for (; i < s->nin; i++) {
      if (dp_grow((void **)&s->tgtoff, &s->captgtoff, i + 1, sizeof *s->tgtoff) < 0) return oomerr(s);
      s->tgtoff[i] = s->ntgt;
      uint32_t u = s->in[i].unit;
      for (uint32_t k = s->uoff[u]; k < s->uoff[u + 1]; k++) {
        pfun *p = &s->fn[s->umem[k]];
        for (uint32_t c = 0; c < p->ncalls; c++) {
          uint32_t v = s->fn[p->calls[c].callee].unit, t;
          if (v == u) t = i;
          else if (s->uspec[v] && s->budget >= nmembers(s, v)) {
            s->budget -= nmembers(s, v);
            t = new_instance(s, v, 0);
          } else {
            t = original_of(s, v);
          }
          if (t == MV_NONE) return -1;
          if (dp_grow((void **)&s->tgt, &s->captgt, s->ntgt + 1, sizeof *s->tgt) < 0) return oomerr(s);
          s->tgt[s->ntgt++] = t;
        }
      }
    }
    uint32_t before = s->nin;
    for (uint32_t u = 0; u < s->nunit; u++)
      if (!s->uinst[u] && original_of(s, u) == MV_NONE) return -1;
    if (s->nin == before) break;
  }
  return 0;
}

/* Each instance member's rewrite: its calls renamed to the instances they
   call (a clone of the original for a specialisation). */
static int tables(pstate *s) {
  if (!(s->tab = dp_calloc(s->nnames ? s->nnames : 1, sizeof *s->tab))) return oomerr(s);
  for (uint32_t i = 0; i < s->nin; i++) {
    uint32_t u = s->in[i].unit, at = s->tgtoff[i];
    for (uint32_t k = s->uoff[u]; k < s->uoff[u + 1]; k++) {
      uint32_t g = s->umem[k], slot = s->in[i].first + (k - s->uoff[u]);
      pfun *p = &s->fn[g];
      if (dp__mtable_init(&s->tab[slot], &p->f, !s->in[i].original, &s->err) < 0) return -1;
      for (uint32_t c = 0; c < p->ncalls; c++) {
        uint32_t h = p->calls[c].callee, t = s->tgt[at++];
        const char *name = s->names[s->in[t].first + member(s, h)];
        if (strcmp(name, s->m->funcs[h].global->name) == 0) continue; /* (as it is) */
        dp_global *gl = dp_global_new(name, p->f.x[p->calls[c].id]->span);
        dp__mdec *d = gl ? dp__mtable_dec(&s->tab[slot], p->calls[c].id) : NULL;
        if (!d) {
          dp_release(gl);
          return oomerr(s);
        }
        dp_release(d->callee);
        d->callee = &gl->e;
      }
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- the module */

/* The expanded module: every instance's functions (originals in definition
   order, then the specialisations as made); slot_of[index in it] = slot. */
static dp_module *expanded(pstate *s) {
  dp_module *m = s->m, *out = dp_module_new(m->ctx);
  if (!out || !(s->slot_of = dp_malloc((s->nnames ? s->nnames : 1) * sizeof *s->slot_of))) {
    dp_release(out);
    oomerr(s);
    return NULL;
  }
  for (uint32_t i = 0; i < m->ntypedefs; i++)
    if (dp_module_add_typedef(out, m->typedefs[i], &s->err) < 0) goto fail;
  for (uint32_t i = 0; i < m->nprims; i++)
    if (dp_module_add_primfn(out, m->prims[i], &s->err) < 0) goto fail;
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t g = 0; g < s->nfn; g++)
      for (uint32_t i = 0; i < s->nin; i++) {
        if (s->in[i].unit != s->fn[g].unit || (pass == 0) != (s->in[i].original != 0)) continue;
        uint32_t slot = s->in[i].first + member(s, g);
        dp_expr *fn = s->tab[slot].any || !s->in[i].original
                          ? dp__mrewrite(&s->ops, &s->tab[slot], s->fn[g].f.n - 1, &s->err)
                          : dp_retain(&m->funcs[g].fn->e);
        dp_global *gl = fn ? dp_global_new(s->names[slot], fn->span) : NULL;
        int rc = gl ? dp_module_add_func(out, gl, (dp_func *)fn, &s->err) : -1;
        dp_release(gl);
        dp_release(fn);
        if (rc < 0) goto fail;
        s->slot_of[out->nfuncs - 1] = slot;
      }
  return out;
fail:
  if (!s->err) oomerr(s);
  dp_release(out);
  return NULL;
}

/* ---------------------------------------------------------------- merging */

/* fn with the globals it names renamed: a global naming a function of the
   expanded module (its slot) becomes map[slot] (NULL: kept). */
typedef struct prename { dp_module *exp; const uint32_t *slot_of; char *const *map; } prename;

static dp_expr *rename_post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  const prename *r = ud;
  if (!rebuilt->type && orig->type) rebuilt->type = dp_retain(orig->type);
  if (rebuilt->h.kind == DP_GLOBAL) {
    int i = dp_module_func_index(r->exp, ((dp_global *)rebuilt)->name);
    const char *to = i >= 0 ? r->map[r->slot_of[i]] : NULL;
    if (to && strcmp(to, ((dp_global *)rebuilt)->name) != 0) {
      dp_global *g = dp_global_new(to, rebuilt->span);
      if (!g) *err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
      return g ? &g->e : NULL;
    }
  }
  return dp_retain(rebuilt);
}

static dp_expr *renamed(dp_expr *fn, const prename *r, dp_err **err) {
  dp_rewriter rw = {NULL, rename_post, (void *)r};
  return dp_rewrite(fn, &rw, err);
}

/* A name for a class of a function whose base name is base: base itself
   for the first class, else base_DEVICE (the device its result is on),
   then base_DEVICE_2, ...: one no function of the module and no name given
   has. */
static char *class_name(pstate *s, const char *base, const dp_func *f, char *const *given, uint32_t ngiven,
                        int first) {
  const dp_vdev *v = f->vdev;
  const char *dt = v && v->device_type ? dp_device_type_name(v->device_type) : NULL;
  char id[64];
  snprintf(id, sizeof id, "_%s", dt ? dt : "dev");
  for (uint32_t k = first ? 0 : 1; k < 100000; k++) {
    char *n = k == 0 ? dp_strdup(base) : fmt2(base, id, k == 1 ? 0 : k);
    if (!n) return NULL;
    int clash = k > 0 && dp_module_func(s->m, n) != NULL;
    for (uint32_t i = 0; i < ngiven && !clash; i++) clash = given[i] && strcmp(given[i], n) == 0;
    if (!clash) return n;
    free(n);
  }
  return NULL;
}

/* The device_copy calls of m, or -1 (out of memory). */
static int64_t count_copies(const struct dp__plan_ops *ops, dp_module *m) {
  int64_t n = 0;
  for (uint32_t g = 0; g < m->nfuncs; g++) {
    dp__mfun f;
    if (dp__mfun_init(&f, &m->funcs[g].fn->e, m->funcs[g].global->name, NULL) < 0) return -1;
    for (uint32_t i = 0; i < f.n; i++) {
      dp_expr *b;
      dp_vdev *a, *c;
      n += dp__device_copy_props(ops, f.x[i], &b, &a, &c) ? 1u : 0u;
    }
    dp__mfun_free(&f);
  }
  return n;
}

static void pstate_free(pstate *s) {
  for (uint32_t i = 0; i < s->nnames; i++) {
    if (s->tab) dp__mtable_free(&s->tab[i]);
    free(s->names[i]);
  }
  for (uint32_t g = 0; g < s->nfn; g++) {
    dp__mfun_free(&s->fn[g].f);
    free(s->fn[g].calls);
  }
  free(s->fn);
  free(s->tab);
  free(s->names);
  free(s->in);
  free(s->umem);
  free(s->uoff);
  free(s->uspec);
  free(s->uorig);
  free(s->uinst);
  free(s->tgt);
  free(s->tgtoff);
  free(s->slot_of);
  dp__plan_ops_free(&s->ops);
  dp_err_free(s->err);
}

/* Merges the instances of each unit (callees first) whose planned
   functions are the same once their calls are renamed (calls of merged
   callees by their class's name, of the instance's own functions by the
   originals' names): the class of each instance (s->in[i].cls), the name of
   each class (given, per slot of its first instance), and map: every slot
   to its class's name. cmp holds the compared forms of the classes' first
   instances (per slot). */
static int merge(pstate *s, dp_module *exp, dp_module *planned, dp_func **cmp, char **given,
                 char **map, dp_poly_report *rep) {
  prename r = {exp, s->slot_of, map};
  for (uint32_t u = 0; u < s->nunit; u++) {
    uint32_t nm = nmembers(s, u), classes = 0, first = MV_NONE;
    for (uint32_t i = 0; i < s->nin; i++) {
      if (s->in[i].unit != u) continue;
      if (first == MV_NONE) first = i;
      for (uint32_t k = 0; k < nm; k++) map[s->in[i].first + k] = (char *)s->m->funcs[s->umem[s->uoff[u] + k]].global->name;
      for (uint32_t k = 0; k < nm; k++) {
        uint32_t slot = s->in[i].first + k;
        dp_func *pf = dp_module_func(planned, s->names[slot]);
        dp_expr *rn = pf ? renamed(&pf->e, &r, &s->err) : NULL;
        if (!rn) {
          if (!s->err) s->err = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "polymorphic: @%s was lost", s->names[slot]);
          return -1;
        }
        cmp[slot] = (dp_func *)rn;
      }
      for (uint32_t k = 0; k < nm; k++) map[s->in[i].first + k] = NULL;
      uint32_t cls = MV_NONE;
      for (uint32_t j = first; j < i && cls == MV_NONE; j++) {
        if (s->in[j].unit != u || s->in[j].cls != j) continue;
        int same = 1;
        for (uint32_t k = 0; k < nm && same == 1; k++)
          same = dp_expr_equal(&cmp[s->in[i].first + k]->e, &cmp[s->in[j].first + k]->e, NULL);
        if (same < 0) return oomerr(s);
        if (same) cls = j;
      }
      s->in[i].cls = cls == MV_NONE ? i : cls;
      if (cls != MV_NONE) { /* (only a class's first instance's form is compared again) */
        for (uint32_t k = 0; k < nm; k++) {
          dp_release(cmp[s->in[i].first + k]);
          cmp[s->in[i].first + k] = NULL;
        }
        continue;
      }
      classes++;
      for (uint32_t k = 0; k < nm; k++) {
        uint32_t slot = s->in[i].first + k;
        const char *base = s->m->funcs[s->umem[s->uoff[u] + k]].global->name;
        dp_func *pf = dp_module_func(planned, s->names[slot]);
        if (!(given[slot] = class_name(s, base, pf, given, s->nnames, i == first))) return oomerr(s);
      }
    }
    /* from here the unit's functions are called by their class's names */
    for (uint32_t i = first; first != MV_NONE && i < s->nin; i++)
      if (s->in[i].unit == u)
        for (uint32_t k = 0; k < nm; k++) map[s->in[i].first + k] = given[s->in[s->in[i].cls].first + k];
    if (rep && classes > 1) {
      rep->specialised += nm;
      rep->functions_added += (classes - 1) * nm;
    }
  }
  return 0;
}

dp_module *dp_plan_polymorphic(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                               const dp_poly_opts *po, dp_poly_report *rep, dp_conflicts *all,
                               dp_err **err) {
  pstate s = {0};
  dp_module *exp = NULL, *planned = NULL, *out = NULL;
  char **given = NULL, **map = NULL;
  dp_func **cmp = NULL;
  if (rep) *rep = (dp_poly_report){0};
  if (dp__plan_ops(m->ctx, &s.ops, err) < 0) return NULL;
  s.m = m;
  s.budget = po && po->max_new_functions ? po->max_new_functions : 64;
  if (analyse(&s) < 0 || units(&s) < 0 || expand(&s) < 0 || tables(&s) < 0 || !(exp = expanded(&s)))
    goto fail;
  planned = dp_plan_devices_opts(exp, cfg, o, all, &s.err);
  if (!planned) goto fail;
  uint32_t nn = s.nnames ? s.nnames : 1;
  if (!(given = dp_calloc(nn, sizeof *given)) || !(cmp = dp_calloc(nn, sizeof *cmp)) ||
      !(map = dp_calloc(nn, sizeof *map))) {
    oomerr(&s);
    goto fail;
  }
  if (merge(&s, exp, planned, cmp, given, map, rep) < 0) goto fail;
  /* the module: each class once, under its name, with its calls renamed */
  prename r = {exp, s.slot_of, map};
  if (!(out = dp_module_new(m->ctx))) {
    oomerr(&s);
    goto fail;
  }
  for (uint32_t i = 0; i < m->ntypedefs; i++)
    if (dp_module_add_typedef(out, m->typedefs[i], &s.err) < 0) goto fail;
  for (uint32_t i = 0; i < planned->nprims; i++)
    if (dp_module_add_primfn(out, planned->prims[i], &s.err) < 0) goto fail;
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t g = 0; g < s.nfn; g++)
      for (uint32_t i = 0; i < s.nin; i++) {
        if (s.in[i].unit != s.fn[g].unit || s.in[i].cls != i) continue;
        uint32_t slot = s.in[i].first + member(&s, g);
        if ((pass == 0) != (strcmp(given[slot], s.m->funcs[g].global->name) == 0)) continue;
        dp_expr *fn = renamed(&dp_module_func(planned, s.names[slot])->e, &r, &s.err);
        dp_global *gl = fn ? dp_global_new(given[slot], fn->span) : NULL;
        int rc = gl ? dp_module_add_func(out, gl, (dp_func *)fn, &s.err) : -1;
        dp_release(gl);
        dp_release(fn);
        if (rc < 0) goto fail;
      }
  if (rep) {
    int64_t after = count_copies(&s.ops, out), before = -1;
    dp_err *e2 = NULL;
    dp_module *plain = after >= 0 ? dp_plan_devices_opts(m, cfg, o, NULL, &e2) : NULL;
    if (plain && (before = count_copies(&s.ops, plain)) < 0) after = -1;
    dp_release(plain);
    if (after < 0 || (!plain && (!e2 || e2->code == DP_ERR_MEMORY))) {
      dp_err_free(e2);
      oomerr(&s);
      goto fail;
    }
    dp_err_free(e2);
    rep->copies_after = (uint32_t)after;
    rep->copies_before = before; /* (-1: TVM's rules find a conflict) */
  }
  goto done;
fail:
  dp_release(out);
  out = NULL;
  if (!s.err) oomerr(&s);
  dp_err_set(err, s.err);
  s.err = NULL;
done:
  for (uint32_t i = 0; i < s.nnames; i++) {
    if (given) free(given[i]);
    if (cmp) dp_release(cmp[i]);
  }
  free(given);
  free(cmp);
  free(map);
  dp_release(exp);
  dp_release(planned);
  pstate_free(&s);
  return out;
}
