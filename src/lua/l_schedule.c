/*
 * Lua binding of scheduling (schedule.h): core.schedule, which
 * lua/devplan/schedule.lua and lua/devplan/costs.lua wrap.
 *
 *   run(planned, config, opts) -> {makespan =, tasks =, resources =, critical =}
 *   problem(mod, config, opts) -> a devplan.SchedProblem (the module's task
 *       graph to place, with its cost matrix): :heft(), :single(i),
 *       :cheapest(), :lower_bound(), :devices(); placements are
 *       devplan.Placement values: :annotate(), :device(call), :table()
 *   model_seconds(call, vd, rates), flops(call), bytes(call), call_attrs(call)
 *
 * opts (checked by schedule.lua): cost = function(call, vd) -> seconds | nil
 * (nil: that device cannot run it), rates = {{device_type =, flops =, bytes
 * =, overhead =}, ...} (the default model, when there is no cost function),
 * bandwidth = number | function(src, dst), serial = boolean. The C state of
 * each call lives in a userdata whose __gc frees it, so an error raised
 * anywhere (a user's function included) leaks nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "l_attrs.h"
#include "l_init.h"
#include "devplan/schedule.h"
#include "devplan/latency.h"

#define RUN_META "devplan.ScheduleRun"
#define PROBLEM_META "devplan.SchedProblem"
#define PLACEMENT_META "devplan.Placement"
#define NONE DP_SCHED_NONE

/* ---- options and hooks ---- */

typedef struct hooks {
  dp_sched_costs c;
  lua_State *L;
  int cost, bw;           /* stack indices of the functions (0: none) */
  double bwconst;         /* bandwidth given as a number (0: none) */
  dp_cost_model model;    /* the rates (owned) */
} hooks;

static int h_cost(void *ud, dp_expr *call, dp_vdev *vd, double *s, dp_err **err) {
  hooks *h = ud;
  lua_State *L = h->L;
  if (dp__lua_call_hook(L, h->cost, call, vd, "cost", err) < 0) return -1;
  int t = lua_type(L, -1);
  *s = t == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
  lua_pop(L, 1);
  if (t == LUA_TNIL || (t == LUA_TBOOLEAN && !*s)) return 1;
  if (t == LUA_TNUMBER) return 0;
  *err = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "cost must return a number of seconds, or nil "
                    "where the device cannot run the call (got a %s)", lua_typename(L, t));
  return -1;
}

static int h_bandwidth(void *ud, dp_vdev *src, dp_vdev *dst, double *bps, dp_err **err) {
  hooks *h = ud;
  if (!h->bw) {
    *bps = h->bwconst;
    return 0;
  }
  if (dp__lua_call_hook(h->L, h->bw, src, dst, "bandwidth", err) < 0) return -1;
  return dp__lua_hook_number(h->L, "bandwidth", "a number of bytes per second", bps, err);
}

static double num_field(lua_State *L, int t, const char *k, double dflt) {
  lua_getfield(L, t, k);
  double v = lua_isnil(L, -1) ? dflt : lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

/* opts at idx into h: the functions, the rates table and the userdata
   holding the rates in C are pushed on the stack, where they stay while
   the caller runs. */
static void read_opts(lua_State *L, int idx, hooks *h) {
  *h = (hooks){.L = L};
  h->c.ud = h;
  if (lua_isnoneornil(L, idx)) return;
  luaL_checktype(L, idx, LUA_TTABLE);
  idx = lua_absindex(L, idx);
  if (lua_getfield(L, idx, "cost") == LUA_TFUNCTION) h->cost = lua_gettop(L);
  else lua_pop(L, 1);
  int ty = lua_getfield(L, idx, "bandwidth");
  if (ty == LUA_TFUNCTION) h->bw = lua_gettop(L);
  else {
    if (ty == LUA_TNUMBER) h->bwconst = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  if (lua_getfield(L, idx, "rates") == LUA_TTABLE) {
    int t = lua_gettop(L);
    lua_Integer n = luaL_len(L, t);
    dp_cost_rate *r = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *r, 0);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, t, i);
      int e = lua_gettop(L);
      r[i - 1] = (dp_cost_rate){(int)num_field(L, e, "device_type", 0), num_field(L, e, "flops", 1e10),
                                num_field(L, e, "bytes", 1e10), num_field(L, e, "overhead", 0)};
      lua_pop(L, 1);
    }
    h->model = (dp_cost_model){(uint32_t)n, r};
    h->c.model = &h->model;
  } else {
    lua_pop(L, 1);
  }
  h->c.call = h->cost ? h_cost : NULL;
  h->c.bandwidth = h->bw || h->bwconst > 0 ? h_bandwidth : NULL;
}

/* ---- run: the schedule of a planned module ----

   The task tables are made when first read (a million of them cost four
   times the schedule itself): result.tasks and result.critical are lists
   whose entries the C state fills in on access (index, ipairs, #), kept
   once made. The C state keeps what a task table needs; the rest is freed
   once scheduled. */

typedef struct runctx {
  dp_sched_graph g;
  dp_schedule s;
  dp_sched_memory mem;     /* what each device holds (begin and end per node kept) */
  double *dur;
  uint32_t *path, *order;  /* order: the tasks by start (then number) */
  uint8_t *why;
  uint32_t ntasks, npath;
} runctx;

static void run_free(runctx *r) {
  dp_sched_graph_free(&r->g);
  dp_schedule_free(&r->s);
  dp_sched_memory_free(&r->mem);
  free(r->dur);
  free(r->path);
  free(r->order);
  free(r->why);
  memset(r, 0, sizeof *r);
}

static int run_gc(lua_State *L) {
  run_free(luaL_checkudata(L, 1, RUN_META));
  return 0;
}

static runctx *new_run(lua_State *L) {
  runctx *r = lua_newuserdatauv(L, sizeof *r, 0);
  memset(r, 0, sizeof *r);
  luaL_setmetatable(L, RUN_META);
  return r;
}

/* (qsort has no context: the start times of the schedule being sorted) */
static const double *sort_start;
static int by_start(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (sort_start[x] != sort_start[y]) return sort_start[x] < sort_start[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

static void set_num(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

/* The resources list; resource r's Lua table is resources[r + 1]. */
static void push_resources(lua_State *L, runctx *r, int serial) {
  const dp_schedule *s = &r->s;
  lua_createtable(L, (int)s->nres, 0);
  for (uint32_t i = 0; i < s->nres; i++) {
    lua_createtable(L, 0, 6);
    lua_pushstring(L, serial ? "serial" : s->res_link[i] ? "link" : "device");
    lua_setfield(L, -2, "kind");
    if (!serial) {
      dp__lua_push(L, r->g.devs[s->res_src[i]]);
      lua_setfield(L, -2, s->res_link[i] ? "src" : "device");
      if (s->res_link[i]) {
        dp__lua_push(L, r->g.devs[s->res_dst[i]]);
        lua_setfield(L, -2, "dst");
      }
    }
    set_num(L, "busy", s->busy[i]);
    lua_pushinteger(L, s->ntask[i]);
    lua_setfield(L, -2, "tasks");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

/* The memory list: per physical device (in device order) {device =, peak
   = bytes, at = seconds, budget = bytes (nil: none)}. */
static void push_memory(lua_State *L, runctx *r, const dp_config *cfg) {
  const dp_sched_graph *g = &r->g;
  lua_createtable(L, (int)g->ndevs, 0);
  lua_Integer k = 0;
  for (uint32_t d = 0; d < g->ndevs; d++) {
    if (g->phys[d] != d) continue;
    lua_createtable(L, 0, 4);
    dp__lua_push(L, g->devs[d]);
    lua_setfield(L, -2, "device");
    set_num(L, "peak", r->mem.peak[d]);
    set_num(L, "at", r->mem.at[d]);
    double b = dp_config_memory(cfg, g->devs[d]->device_type);
    if (b > 0) set_num(L, "budget", b);
    lua_rawseti(L, -2, ++k);
  }
}

/* core.schedule.live(run, device) -> the values device holds at its peak:
   {{kind = "call" | "copy" | "parameter", expr =, bytes =, from =, to =}, ...} */
static int l_live(lua_State *L) {
  runctx *r = luaL_checkudata(L, 1, RUN_META);
  dp_vdev *vd = dp__lua_check(L, 2, DP_OBJ_VDEV);
  const dp_sched_graph *g = &r->g;
  uint32_t d = NONE;
  for (uint32_t i = 0; i < g->ndevs && d == NONE; i++)
    if (g->devs[i]->device_type == vd->device_type && g->devs[i]->virtual_device_id == vd->virtual_device_id)
      d = g->phys[i];
  lua_newtable(L);
  if (d == NONE || !r->mem.begin) return 1;
  uint32_t *nodes = NULL, n = 0;
  dp_err *err = NULL;
  if (dp_sched_memory_live(g, &r->mem, d, r->mem.at[d], &nodes, &n, &err) < 0) return dp__lua_error(L, err);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t v = nodes[i];
    lua_createtable(L, 0, 5);
    lua_pushstring(L, g->kind[v] == DP_TASK_COPY ? "copy" : g->kind[v] == DP_TASK_CALL ? "call" : "parameter");
    lua_setfield(L, -2, "kind");
    dp__lua_push(L, g->expr[v]);
    lua_setfield(L, -2, "expr");
    set_num(L, "bytes", g->bytes[v]);
    set_num(L, "from", r->mem.begin[v]);
    set_num(L, "to", r->mem.end[v]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  free(nodes);
  return 1;
}

/* Pushes the table of the task at position i (0-based, in start order);
   upvalue 1: the run state, 2: the resources list. */
static void push_task(lua_State *L, runctx *r, uint32_t i) {
  const dp_sched_graph *g = &r->g;
  uint32_t v = r->order[i];
  int copy = g->kind[v] == DP_TASK_COPY;
  lua_createtable(L, 0, copy ? 10 : 6);
  lua_pushstring(L, copy ? "copy" : "call");
  lua_setfield(L, -2, "kind");
  dp__lua_push(L, g->expr[v]);
  lua_setfield(L, -2, "expr");
  dp__lua_push(L, g->devs[g->dev[v]]);
  lua_setfield(L, -2, "device");
  if (copy) {
    dp__lua_push(L, g->devs[g->src[v]]);
    lua_setfield(L, -2, "src");
    dp__lua_push(L, g->devs[g->dev[v]]);
    lua_setfield(L, -2, "dst");
    set_num(L, "bytes", g->bytes[v]);
    if (g->approx[v]) {
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, "bytes_unknown");
    }
  }
  set_num(L, "start", r->s.start[v]);
  set_num(L, "finish", r->s.finish[v]);
  lua_rawgeti(L, lua_upvalueindex(2), (lua_Integer)r->s.res[v] + 1);
  lua_setfield(L, -2, "resource");
}

/* tasks[i] (__index of the list): made, kept, returned. */
static int tasks_index(lua_State *L) {
  runctx *r = lua_touserdata(L, lua_upvalueindex(1));
  if (!lua_isinteger(L, 2)) return 0;
  lua_Integer i = lua_tointeger(L, 2);
  if (i < 1 || i > (lua_Integer)r->ntasks || !r->order) return 0;
  push_task(L, r, (uint32_t)(i - 1));
  lua_pushvalue(L, -1);
  lua_rawseti(L, 1, i);
  return 1;
}

static int tasks_len(lua_State *L) {
  runctx *r = lua_touserdata(L, lua_upvalueindex(1));
  lua_pushinteger(L, r->ntasks);
  return 1;
}

/* critical[i] (__index of the list): {task = tasks[k], waited = "data" |
   "resource" (nil for the first)}; upvalues: the run state, the tasks. */
static int path_index(lua_State *L) {
  runctx *r = lua_touserdata(L, lua_upvalueindex(1));
  if (!lua_isinteger(L, 2)) return 0;
  lua_Integer i = lua_tointeger(L, 2);
  if (i < 1 || i > (lua_Integer)r->npath || !r->path) return 0;
  lua_createtable(L, 0, 2);
  lua_geti(L, lua_upvalueindex(2), (lua_Integer)r->path[i - 1] + 1);
  lua_setfield(L, -2, "task");
  if (i > 1) {
    lua_pushstring(L, r->why[i - 1] ? "resource" : "data");
    lua_setfield(L, -2, "waited");
  }
  lua_pushvalue(L, -1);
  lua_rawseti(L, 1, i);
  return 1;
}

static int path_len(lua_State *L) {
  runctx *r = lua_touserdata(L, lua_upvalueindex(1));
  lua_pushinteger(L, r->npath);
  return 1;
}

/* What the task tables do not need, freed: edges, durations, the path. */
static void run_trim(runctx *r) {
  dp_sched_graph *g = &r->g;
  free(g->poff);
  free(g->pred);
  free(g->soff);
  free(g->succ);
  g->poff = g->pred = g->soff = g->succ = NULL;
  free(r->s.prev);
  r->s.prev = NULL;
  free(r->dur);
  r->dur = NULL;
}

/* core.schedule.run(planned, config, opts) */
static int l_run(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = dp__lua_check(L, 2, DP_OBJ_CONFIG);
  lua_settop(L, 3);
  int serial = 0;
  if (lua_istable(L, 3)) {
    lua_getfield(L, 3, "serial");
    serial = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  hooks h;
  read_opts(L, 3, &h);
  runctx *r = new_run(L);
  int rix = lua_gettop(L);
  dp_err *err = NULL;
  if (dp_sched_graph_build(&r->g, m, cfg, DP_GRAPH_PLANNED | DP_GRAPH_PARAMS, &err) < 0)
    return dp__lua_error(L, err);
  r->dur = dp_malloc(((size_t)r->g.n + 1) * sizeof *r->dur);
  if (!r->dur) return dp__lua_oom(L);
  if (dp_sched_durations(&r->g, &h.c, r->dur, &err) < 0) return dp__lua_error(L, err);
  if (dp_sched_list(&r->g, r->dur, serial, &r->s, &err) < 0) return dp__lua_error(L, err);
  uint32_t npath = 0;
  if (dp_sched_critical(&r->g, &r->s, &r->path, &r->why, &npath, &err) < 0) return dp__lua_error(L, err);
  if (dp_sched_memory_profile(&r->g, &r->s, &r->mem, &err) < 0) return dp__lua_error(L, err);
  const dp_sched_graph *g = &r->g;
  r->order = dp_malloc(((size_t)g->ntasks + 1) * sizeof *r->order);
  if (!r->order) return dp__lua_oom(L);
  for (uint32_t v = 0; v < g->n; v++)
    if (g->kind[v] != DP_TASK_JOIN) r->order[r->ntasks++] = v;
  sort_start = r->s.start;
  qsort(r->order, r->ntasks, sizeof *r->order, by_start);
  run_trim(r);
  lua_createtable(L, 0, 5);
  int res = lua_gettop(L);
  set_num(L, "makespan", r->s.makespan);
  lua_pushboolean(L, serial);
  lua_setfield(L, res, "serial");
  push_resources(L, r, serial);
  int resources = lua_gettop(L);
  lua_pushvalue(L, resources);
  lua_setfield(L, res, "resources");
  push_memory(L, r, cfg);
  lua_setfield(L, res, "memory");
  lua_pushvalue(L, rix);
  lua_setfield(L, res, "_run");
  /* the tasks: a list filled in on access */
  lua_createtable(L, 0, 0);
  int tasks = lua_gettop(L);
  lua_createtable(L, 0, 2);
  lua_pushvalue(L, rix);
  lua_pushvalue(L, resources);
  lua_pushcclosure(L, tasks_index, 2);
  lua_setfield(L, -2, "__index");
  lua_pushvalue(L, rix);
  lua_pushcclosure(L, tasks_len, 1);
  lua_setfield(L, -2, "__len");
  lua_setmetatable(L, tasks);
  lua_pushvalue(L, tasks);
  lua_setfield(L, res, "tasks");
  /* the critical path, through the list (the same task tables) */
  uint32_t *pos = dp_malloc(((size_t)g->n + 1) * sizeof *pos);
  if (!pos) return dp__lua_oom(L);
  for (uint32_t i = 0; i < r->ntasks; i++) pos[r->order[i]] = i;
  for (uint32_t i = 0; i < npath; i++) r->path[i] = pos[r->path[i]];
  free(pos);
  r->npath = npath;
  lua_createtable(L, 0, 0);
  lua_createtable(L, 0, 2);
  lua_pushvalue(L, rix);
  lua_pushvalue(L, tasks);
  lua_pushcclosure(L, path_index, 2);
  lua_setfield(L, -2, "__index");
  lua_pushvalue(L, rix);
  lua_pushcclosure(L, path_len, 1);
  lua_setfield(L, -2, "__len");
  lua_setmetatable(L, -2);
  lua_setfield(L, res, "critical");
  lua_settop(L, res);
  return 1;
}

/* ---- problems: a module's task graph to place ---- */

typedef struct problem {
  dp_sched_graph g;
  double *cost, *bw;
  int built;
} problem;

static int problem_gc(lua_State *L) {
  problem *p = luaL_checkudata(L, 1, PROBLEM_META);
  if (p->built) dp_sched_graph_free(&p->g);
  free(p->cost);
  free(p->bw);
  memset(p, 0, sizeof *p);
  return 0;
}

static problem *check_problem(lua_State *L, int idx) {
  problem *p = luaL_checkudata(L, idx, PROBLEM_META);
  if (!p->built) luaL_argerror(L, idx, "a scheduling problem that was built");
  return p;
}

/* core.schedule.problem(mod, config, opts) */
static int l_problem(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = dp__lua_check(L, 2, DP_OBJ_CONFIG);
  lua_settop(L, 3);
  hooks h;
  read_opts(L, 3, &h);
  problem *p = lua_newuserdatauv(L, sizeof *p, 0);
  memset(p, 0, sizeof *p);
  luaL_setmetatable(L, PROBLEM_META);
  dp_err *err = NULL;
  if (dp_sched_graph_build(&p->g, m, cfg, DP_GRAPH_DAG, &err) < 0) return dp__lua_error(L, err);
  p->built = 1;
  size_t K = p->g.nchoice, nd = p->g.ndevs;
  p->cost = dp_malloc(((size_t)p->g.n * K + 1) * sizeof *p->cost);
  p->bw = dp_malloc((nd * nd + 1) * sizeof *p->bw);
  if (!p->cost || !p->bw) return dp__lua_oom(L);
  if (dp_sched_cost_matrix(&p->g, &h.c, p->cost, &err) < 0 ||
      dp_sched_bandwidths(&p->g, &h.c, p->bw, &err) < 0)
    return dp__lua_error(L, err);
  return 1;
}

/* A placement: one device index per node (NONE: not a call). Its user
   value is its problem. */
typedef struct placement { uint32_t n; uint32_t dev[]; } placement;

static uint32_t *new_placement(lua_State *L, int pidx, problem *p) {
  placement *pl = lua_newuserdatauv(L, sizeof *pl + ((size_t)p->g.n + 1) * sizeof *pl->dev, 1);
  pl->n = p->g.n;
  luaL_setmetatable(L, PLACEMENT_META);
  lua_pushvalue(L, pidx);
  lua_setiuservalue(L, -2, 1);
  return pl->dev;
}

static int p_heft(lua_State *L) {
  problem *p = check_problem(L, 1);
  uint32_t *dev = new_placement(L, 1, p);
  dp_err *err = NULL;
  if (dp_sched_heft(&p->g, p->cost, p->bw, dev, &err) < 0) return dp__lua_error(L, err);
  return 1;
}

static int p_single(lua_State *L) {
  problem *p = check_problem(L, 1);
  lua_Integer d = luaL_checkinteger(L, 2);
  luaL_argcheck(L, d >= 1 && d <= (lua_Integer)p->g.nchoice, 2, "a device number of :devices()");
  uint32_t *dev = new_placement(L, 1, p);
  dp_sched_single(&p->g, p->cost, (uint32_t)d - 1, dev);
  return 1;
}

static int p_cheapest(lua_State *L) {
  problem *p = check_problem(L, 1);
  uint32_t *dev = new_placement(L, 1, p);
  dp_sched_cheapest(&p->g, p->cost, dev);
  return 1;
}

static int p_lower_bound(lua_State *L) {
  problem *p = check_problem(L, 1);
  dp_sched_bound b;
  dp_err *err = NULL;
  if (dp_sched_lower_bound(&p->g, p->cost, &b, &err) < 0) return dp__lua_error(L, err);
  lua_createtable(L, 0, 4);
  set_num(L, "bound", b.bound);
  set_num(L, "critical_path", b.critical_path);
  set_num(L, "work", b.work);
  lua_pushinteger(L, b.devices);
  lua_setfield(L, -2, "devices");
  return 1;
}

/* :devices() -> the configuration's devices the placements choose from. */
static int p_devices(lua_State *L) {
  problem *p = check_problem(L, 1);
  dp__lua_push_list(L, (void *const *)p->g.devs, p->g.nchoice);
  return 1;
}

/* :calls() -> the number of calls to place, of them fixed by annotations. */
static int p_calls(lua_State *L) {
  problem *p = check_problem(L, 1);
  lua_Integer n = 0, fixed = 0;
  for (uint32_t v = 0; v < p->g.n; v++)
    if (p->g.kind[v] == DP_TASK_CALL) {
      n++;
      fixed += p->g.dev[v] != NONE;
    }
  lua_pushinteger(L, n);
  lua_pushinteger(L, fixed);
  return 2;
}

static problem *placement_problem(lua_State *L, int idx, placement **pl) {
  *pl = luaL_checkudata(L, idx, PLACEMENT_META);
  lua_getiuservalue(L, idx, 1);
  problem *p = check_problem(L, lua_gettop(L));
  lua_pop(L, 1); /* (the placement keeps it alive) */
  return p;
}

/* :annotate(opts?) -> the module with the placement written as
   annotations; opts.lean: no annotation where TVM's rules put the value
   there anyway (the latency placement's own form: the same plan). */
static int pl_annotate(lua_State *L) {
  placement *pl;
  problem *p = placement_problem(L, 1, &pl);
  int lean = 0;
  if (lua_istable(L, 2)) {
    lua_getfield(L, 2, "lean");
    lean = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  dp_err *err = NULL;
  dp_module *m = lean ? dp_sched_annotate_lean(&p->g, pl->dev, &err) : dp_sched_annotate(&p->g, pl->dev, &err);
  return dp__lua_push_new(L, m, err);
}

/* The device a placement gives a node (its fixed one when annotated). */
static dp_vdev *node_device(const problem *p, const placement *pl, uint32_t v) {
  uint32_t d = p->g.dev[v] != NONE ? p->g.dev[v] : pl->dev[v];
  return d == NONE ? NULL : p->g.devs[d];
}

/* :device(call) -> vd (nil when the call is not one of the module's). */
static int pl_device(lua_State *L) {
  placement *pl;
  problem *p = placement_problem(L, 1, &pl);
  dp_expr *e = dp__lua_check_expr(L, 2);
  for (uint32_t v = 0; v < p->g.n; v++)
    if (p->g.kind[v] == DP_TASK_CALL && p->g.expr[v] == e) {
      dp__lua_push(L, node_device(p, pl, v));
      return 1;
    }
  lua_pushnil(L);
  return 1;
}

/* :table() -> {[call] = vd, ...} for every call. */
static int pl_table(lua_State *L) {
  placement *pl;
  problem *p = placement_problem(L, 1, &pl);
  lua_createtable(L, 0, (int)p->g.ntasks);
  for (uint32_t v = 0; v < p->g.n; v++) {
    if (p->g.kind[v] != DP_TASK_CALL) continue;
    dp__lua_push(L, p->g.expr[v]);
    dp__lua_push(L, node_device(p, pl, v));
    lua_rawset(L, -3);
  }
  return 1;
}

/* :placement({[call] = vd, ...}) -> a placement of the calls the table
   names (each device one of :devices(), or of the same type and id); the
   free calls it leaves out on their cheapest device. */
static int p_placement(lua_State *L) {
  problem *p = check_problem(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  uint32_t *dev = new_placement(L, 1, p);
  dp_sched_cheapest(&p->g, p->cost, dev);
  for (uint32_t v = 0; v < p->g.n; v++) {
    if (p->g.kind[v] != DP_TASK_CALL || p->g.dev[v] != NONE) continue;
    dp__lua_push(L, p->g.expr[v]);
    if (lua_rawget(L, 2) == LUA_TNIL) {
      lua_pop(L, 1);
      continue;
    }
    dp_vdev *vd = dp__lua_test(L, -1, DP_OBJ_VDEV);
    if (!vd) return luaL_error(L, "placement: the devices are VirtualDevices");
    uint32_t d = NONE;
    for (uint32_t k = 0; k < p->g.nchoice && d == NONE; k++)
      if (p->g.devs[k]->device_type == vd->device_type &&
          (p->g.devs[k]->virtual_device_id == vd->virtual_device_id || vd->virtual_device_id < 0))
        d = k;
    if (d == NONE) return luaL_error(L, "placement: %s is none of the problem's devices", lua_tostring(L, -1) ? lua_tostring(L, -1) : "a device");
    if (!isfinite(p->cost[(size_t)v * p->g.nchoice + d]))
      return luaL_error(L, "placement: the cost model says a call cannot run where the placement puts it");
    dev[v] = d;
    lua_pop(L, 1);
  }
  return 1;
}

/* :fixed() -> {[call] = vd, ...} for the calls annotations fix (and the
   memory and VM operators, on the host), which no placement moves. */
static int p_fixed(lua_State *L) {
  problem *p = check_problem(L, 1);
  lua_createtable(L, 0, 0);
  for (uint32_t v = 0; v < p->g.n; v++) {
    if (p->g.kind[v] != DP_TASK_CALL || p->g.dev[v] == NONE) continue;
    dp__lua_push(L, p->g.expr[v]);
    dp__lua_push(L, p->g.devs[p->g.dev[v]]);
    lua_rawset(L, -3);
  }
  return 1;
}

/* :counts() -> {n per device of :devices(), in order} (fixed calls too). */
static int pl_counts(lua_State *L) {
  placement *pl;
  problem *p = placement_problem(L, 1, &pl);
  lua_createtable(L, (int)p->g.nchoice, 0);
  for (uint32_t d = 0; d < p->g.nchoice; d++) {
    lua_Integer n = 0;
    for (uint32_t v = 0; v < p->g.n; v++) {
      if (p->g.kind[v] != DP_TASK_CALL) continue;
      uint32_t at = p->g.dev[v] != NONE ? p->g.dev[v] : pl->dev[v];
      n += at != NONE && p->g.phys[at] == p->g.phys[d];
    }
    lua_pushinteger(L, n);
    lua_rawseti(L, -2, (lua_Integer)d + 1);
  }
  return 1;
}

/* ---- the latency placement (latency.h) ---- */

/* The planning options of opts at idx: resolve_conflicts (true | false |
   "tvm"), all_conflicts (schedule.lua checked them). */
static void plan_opts(lua_State *L, int idx, dp_plan_opts *po) {
  *po = (dp_plan_opts){0};
  if (!lua_istable(L, idx)) return;
  int t = lua_getfield(L, idx, "resolve_conflicts");
  if (t == LUA_TSTRING) po->tvm_conflicts = 1;
  else if (t == LUA_TBOOLEAN) po->strict = !lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, idx, "all_conflicts");
  po->all_conflicts = lua_toboolean(L, -1);
  lua_pop(L, 1);
}

static void latency_opts(lua_State *L, int idx, hooks *h, dp_latency_opts *lo) {
  *lo = (dp_latency_opts){.costs = &h->c};
  if (!lua_istable(L, idx)) return;
  lua_getfield(L, idx, "objective");
  if (lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "bytes") == 0) lo->objective = DP_LATENCY_BYTES;
  lua_pop(L, 1);
  lo->exact = (uint32_t)num_field(L, idx, "exact", 0);
  lo->full = (uint32_t)num_field(L, idx, "full", 0);
  lo->effort = num_field(L, idx, "effort", 0);
}

/* core.schedule.latency(mod, config, opts) -> {planned =, makespan =, ...} */
static int l_latency(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = dp__lua_check(L, 2, DP_OBJ_CONFIG);
  lua_settop(L, 3);
  hooks h;
  read_opts(L, 3, &h);
  dp_latency_opts lo;
  dp_plan_opts po;
  latency_opts(L, 3, &h, &lo);
  plan_opts(L, 3, &po);
  dp_conflicts all = {0};
  lo.plan = &po;
  lo.all = &all;
  dp_latency_result r;
  dp_err *err = NULL;
  if (dp_plan_latency(m, cfg, &lo, &r, &err) < 0) return dp__lua_raise_conflicts(L, err, &all);
  dp_conflicts_clear(&all);
  lua_createtable(L, 0, 16);
  int t = lua_gettop(L);
  dp__lua_push(L, r.planned);
  lua_setfield(L, t, "planned");
  set_num(L, "makespan", r.makespan);
  set_num(L, "bytes", r.bytes);
  set_num(L, "bound", r.bound);
  set_num(L, "soft_weight", r.soft_weight);
  lua_pushinteger(L, r.soft_broken);
  lua_setfield(L, t, "soft_broken");
  lua_pushinteger(L, r.nsoft);
  lua_setfield(L, t, "soft");
  lua_pushinteger(L, r.calls);
  lua_setfield(L, t, "calls");
  lua_pushinteger(L, r.decisions);
  lua_setfield(L, t, "decisions");
  lua_pushinteger(L, r.evaluations);
  lua_setfield(L, t, "evaluations");
  lua_pushboolean(L, r.exact);
  lua_setfield(L, t, "exact");
  lua_createtable(L, (int)r.ncand, 0);
  for (uint32_t i = 0; i < r.ncand; i++) {
    const dp_latency_candidate *c = &r.cand[i];
    lua_createtable(L, 0, 8);
    lua_pushstring(L, c->name);
    lua_setfield(L, -2, "name");
    if (strcmp(c->name, "single") == 0) {
      lua_pushinteger(L, (lua_Integer)c->device + 1);
      lua_setfield(L, -2, "device");
    }
    set_num(L, "makespan", c->makespan);
    set_num(L, "bytes", c->bytes);
    set_num(L, "soft", c->soft);
    set_num(L, "excess", c->excess);
    set_num(L, "objective", c->objective);
    if (c->model >= 0) set_num(L, "model", c->model);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, t, "candidates");
  lua_pushstring(L, r.cand[r.winner].name);
  lua_setfield(L, t, "winner");
  dp_latency_result_clear(&r);
  lua_settop(L, t);
  return 1;
}

/* core.schedule.latency_domains(mod, config, opts) -> the domains of the
   latency placement's plan (dp.planner.domains). */
static int l_latency_domains(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = dp__lua_check(L, 2, DP_OBJ_CONFIG);
  lua_settop(L, 3);
  hooks h;
  read_opts(L, 3, &h);
  dp_plan_opts po;
  plan_opts(L, 3, &po);
  po.placement = DP_PLACE_LATENCY;
  po.costs = &h.c;
  dp_conflicts all = {0};
  dp_err *err = NULL;
  dp_domains *d = dp_plan_domains(m, cfg, &po, &all, &err);
  if (!d) return dp__lua_raise_conflicts(L, err, &all);
  dp__lua_push_owned(L, d);
  return 1;
}

/* ---- the default model and what cost tables match on ---- */

static int l_model_seconds(lua_State *L) {
  dp_expr *e = dp__lua_check_expr(L, 1);
  dp_vdev *vd = dp__lua_check(L, 2, DP_OBJ_VDEV);
  lua_settop(L, 3);
  lua_newtable(L);
  lua_pushvalue(L, 3);
  lua_setfield(L, -2, "rates");
  hooks h;
  read_opts(L, lua_gettop(L), &h);
  lua_pushnumber(L, dp_cost_model_seconds(h.c.model, e, vd->device_type));
  return 1;
}

static int l_flops(lua_State *L) {
  lua_pushnumber(L, dp_call_flops(dp__lua_check_expr(L, 1)));
  return 1;
}

static int l_bytes(lua_State *L) {
  lua_pushnumber(L, dp_call_bytes(dp__lua_check_expr(L, 1)));
  return 1;
}

/* call_attrs(call) -> every attribute of an operator call, its defaults
   included (a table), or nil for a call of anything but an operator. */
static int l_call_attrs(lua_State *L) {
  dp_expr *e = dp__lua_check_expr(L, 1);
  if (e->h.kind != DP_CALL || ((dp_call *)e)->fn->h.kind != DP_OP) return 0;
  const dp_call *c = (const dp_call *)e;
  const dp_op *op = (const dp_op *)c->fn;
  if (!op->fields) {
    dp__lua_push_attrs(L, c->attrs);
    return 1;
  }
  lua_createtable(L, 0, (int)op->nfields);
  for (uint32_t i = 0; i < op->nfields; i++) {
    const dp_aval *v = dp_op_attr(op, c->attrs, op->fields[i].name);
    if (!v) continue;
    dp__lua_push_aval(L, v);
    lua_setfield(L, -2, op->fields[i].name);
  }
  return 1;
}

void dp__lua_open_schedule(lua_State *L) {
  luaL_newmetatable(L, RUN_META);
  lua_pushcfunction(L, run_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  static const luaL_Reg pmethods[] = {
    {"heft", p_heft}, {"single", p_single}, {"cheapest", p_cheapest},
    {"lower_bound", p_lower_bound}, {"devices", p_devices}, {"calls", p_calls}, {"fixed", p_fixed}, {"placement", p_placement},
    {NULL, NULL}};
  luaL_newmetatable(L, PROBLEM_META);
  lua_pushcfunction(L, problem_gc);
  lua_setfield(L, -2, "__gc");
  luaL_newlib(L, pmethods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg lmethods[] = {
    {"annotate", pl_annotate}, {"device", pl_device}, {"table", pl_table}, {"counts", pl_counts},
    {NULL, NULL}};
  luaL_newmetatable(L, PLACEMENT_META);
  luaL_newlib(L, lmethods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    {"run", l_run}, {"live", l_live}, {"problem", l_problem}, {"latency", l_latency},
    {"latency_domains", l_latency_domains},
    {"model_seconds", l_model_seconds},
    {"flops", l_flops}, {"bytes", l_bytes}, {"call_attrs", l_call_attrs}, {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_setfield(L, -2, "schedule");
}
