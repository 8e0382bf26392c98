-- dp.schedule: the modelled schedule of a plan (devices running side by
-- side) and the latency baselines, over the C core of src/planner/schedule_*.c
-- (include/devplan/schedule.h states the cost model).
--
--   local s = dp.planner.schedule(planned, config, {cost = C})   -- = dp.schedule.run
--   s.makespan, s.tasks, s.resources, s.critical; s:text(); s:svg()
--   local p = dp.schedule.problem(mod, config, {cost = C})       -- the module to place
--   p:heft(), p:cheapest(), p:single(i), p:lower_bound()         -- placements, the bound
--   dp.schedule.evaluate(mod, config, placement, {cost = C})     -- planned + its schedule
--   dp.schedule.baselines(mod, config, {cost = C})               -- all of them at once
--
-- C (`cost`) is a function(call, vd) -> seconds | nil (nil: vd cannot run
-- the call), a cost table (dp.costs.load) or a model (dp.costs.model);
-- without one, the default model (dp.costs.DEFAULT). Every gain these
-- numbers show is modelled: no device runs anything.
local core = require "devplan.core"
local ir = require "devplan.ir"
local costs = require "devplan.costs"

local M = {}

local Schedule = {}
Schedule.__index = Schedule
Schedule.__name = "devplan.Schedule"

-- ---------------------------------------------------------------- options

local OPTIONS = {cost = true, bandwidth = true, serial = true, verify = true}

local function check_options(opts, who, allowed, level)
  level = level + 1
  if opts == nil then return {} end
  if type(opts) ~= "table" then error(who .. ": options must be a table, got " .. type(opts), level) end
  for k, v in pairs(opts) do
    if not allowed[k] then
      local names = {}
      for n in pairs(allowed) do names[#names + 1] = n end
      table.sort(names)
      error(who .. ": unknown option '" .. tostring(k) .. "' (" .. table.concat(names, ", ") .. ")", level)
    end
  end
  if opts.cost ~= nil and not costs.is_costs(opts.cost) then
    error(who .. ": option 'cost' must be a function(call, vd) -> seconds | nil, a cost table "
      .. "(dp.costs.load) or a model (dp.costs.model), got " .. type(opts.cost), level)
  end
  local bw = opts.bandwidth
  if bw ~= nil and type(bw) ~= "function" and not (type(bw) == "number" and bw > 0 and bw < math.huge) then
    error(who .. ": option 'bandwidth' must be a number of bytes per second > 0 or a function(src, dst)", level)
  end
  for _, k in ipairs{"serial", "verify", "share_copies"} do
    if opts[k] ~= nil and type(opts[k]) ~= "boolean" then
      error(who .. ": option '" .. k .. "' must be a boolean", level)
    end
  end
  return opts
end

-- The options the C side reads.
local function core_options(opts)
  local c, cost = {bandwidth = opts.bandwidth, serial = opts.serial}, opts.cost
  if costs.is_model(cost) then
    c.rates = cost.rates
  elseif costs.is_table(cost) then
    c.cost = function(call, vd) return cost(call, vd) end
  elseif type(cost) == "function" then
    c.cost = cost
  else
    c.rates = costs.DEFAULT.rates
  end
  return c
end

local function typed(mod)
  for _, nf in ipairs(mod:functions()) do
    if nf[2].body.checked_type == nil then
      core.infer_type(mod)
      return
    end
  end
end

local function check_args(mod, config, who, level)
  if not ir.is_module(mod) then error(who .. ": a module expected, got " .. type(mod), level + 1) end
  if not ir.is_config(config) then
    error(who .. ": a CompilationConfig expected, got " .. type(config), level + 1)
  end
end

-- ---------------------------------------------------------------- the schedule of a plan

-- dp.planner.schedule(planned, config, {cost =, bandwidth =, serial =, verify =}?)
function M.run(planned, config, opts)
  check_args(planned, config, "devplan.planner.schedule", 2)
  opts = check_options(opts, "devplan.planner.schedule", OPTIONS, 2)
  typed(planned)
  if opts.verify then
    local planner = require "devplan.planner"
    planner.verify(planned, config, {raise = true})
  end
  local s = core.schedule.run(planned, config, core_options(opts))
  s.module, s.config = planned, config
  return setmetatable(s, Schedule)
end

-- Per device (not links): busy seconds, in the order of s.resources.
function Schedule:busy()
  local out = {}
  for _, r in ipairs(self.resources) do
    if r.kind == "device" then out[#out + 1] = {device = r.device, busy = r.busy, tasks = r.tasks} end
  end
  return out
end

-- ---------------------------------------------------------------- reading it

-- "12.3 ms" for seconds, in the unit of `scale` (the makespan).
local function unit_of(scale)
  if scale >= 1 then return 1, "s" end
  if scale >= 1e-3 then return 1e-3, "ms" end
  if scale >= 1e-6 then return 1e-6, "us" end
  return 1e-9, "ns"
end

function M.format_time(t, scale)
  local u, name = unit_of(scale or t)
  return string.format("%.3f %s", t / u, name)
end

-- "1.5 MiB" for bytes.
function M.format_bytes(b)
  local units = {"bytes", "KiB", "MiB", "GiB", "TiB"}
  local u = 1
  while b >= 1024 and u < #units do b, u = b / 1024, u + 1 end
  if u == 1 then return string.format("%d bytes", math.floor(b + 0.5)) end
  return string.format("%.3g %s", b, units[u])
end

local function grouped(n)
  local s = tostring(math.tointeger(n) or n)
  return (s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end

-- Names of a schedule's pieces: devices (short, as the printer writes them)
-- and tasks (their printed name where the module text has one).
function M.namer(s, with_names)
  local devname = require "devplan.devname"
  local dn = devname.namer()
  local printed = {}
  if with_names ~= false and s.module then
    local _, names = core.astext(s.module, {names = true})
    for fn, map in pairs(names) do
      for name, e in pairs(map) do
        if e.kind == "call" then printed[e] = (fn ~= "main" and "@" .. fn .. ":" or "") .. name end
      end
    end
  end
  local self = {}
  function self.device(vd) return "@" .. dn(vd) end
  function self.resource(r)
    if r.kind == "serial" then return "one at a time" end
    if r.kind == "link" then return self.device(r.src) .. "->" .. self.device(r.dst) end
    return self.device(r.device)
  end
  function self.task(t)
    local e = t.expr
    local what = t.kind == "copy" and "device_copy"
      or (e.callee.kind == "op" and e.callee.name or e.callee.kind == "fn" and "fused fn" or "call")
    local where = printed[e] or (e.span and (e.span.line .. ":" .. e.span.col))
    return what .. (where and (" " .. where) or "")
  end
  return self
end

-- The schedule as text: makespan, per resource its tasks and busy time,
-- the critical path (at most opts.path entries, default 30).
function Schedule:text(opts)
  opts = opts or {}
  local names = M.namer(self, opts.names)
  local ms = self.makespan
  local ncall, ncopy = 0, 0
  for _, t in ipairs(self.tasks) do
    if t.kind == "copy" then ncopy = ncopy + 1 else ncall = ncall + 1 end
  end
  local lines = {}
  local function add(s) lines[#lines + 1] = s end
  add(string.format("schedule%s: makespan %s, %s call%s, %s cop%s%s", opts.costs and (" (" .. opts.costs .. ")") or "",
                    M.format_time(ms), grouped(ncall), ncall == 1 and "" or "s", grouped(ncopy),
                    ncopy == 1 and "y" or "ies", self.serial and ", one task at a time" or ""))
  add(string.format("%-24s %8s %14s %6s", "resource", "tasks", "busy", "use"))
  for _, r in ipairs(self.resources) do
    add(string.format("%-24s %8s %14s %5.0f%%", names.resource(r), grouped(r.tasks), M.format_time(r.busy, ms),
                      ms > 0 and 100 * r.busy / ms or 0))
  end
  for _, m in ipairs(self.memory or {}) do
    if m.peak > 0 or m.budget then
      add(string.format("memory %-17s peak %s at %s%s", names.device(m.device), M.format_bytes(m.peak),
                        M.format_time(m.at, ms), m.budget and string.format(" (budget %s%s)", M.format_bytes(m.budget),
                          m.peak > m.budget and ", OVER" or "") or ""))
    end
  end
  local path = self.critical
  local limit = opts.path or 30
  add(string.format("critical path: %d task%s%s", #path, #path == 1 and "" or "s",
                    #path > limit and (" (the last " .. limit .. ")") or ""))
  for i = math.max(1, #path - limit + 1), #path do
    local c = path[i]
    local t = c.task
    add(string.format("  %14s %14s  %-18s %s%s", M.format_time(t.start, ms), M.format_time(t.finish, ms),
                      names.resource(t.resource), names.task(t),
                      c.waited == "resource" and "  (after the task before it there)" or ""))
  end
  add("(modelled: no device ran anything)")
  return table.concat(lines, "\n") .. "\n"
end

Schedule.__tostring = function(s) return s:text() end

-- The schedule as plain data (for JSON): makespan, resources, critical path.
function Schedule:summary()
  local names = M.namer(self, false)
  local res, path = {}, {}
  for i, r in ipairs(self.resources) do
    res[i] = {name = names.resource(r), kind = r.kind, tasks = r.tasks, busy = r.busy}
  end
  for i, c in ipairs(self.critical) do
    local t = c.task
    path[i] = {task = names.task(t), resource = names.resource(t.resource), start = t.start,
               finish = t.finish, waited = c.waited}
  end
  local mem = {}
  for i, m in ipairs(self.memory or {}) do
    mem[i] = {device = names.device(m.device), peak = m.peak, at = m.at, budget = m.budget}
  end
  return {makespan = self.makespan, serial = self.serial, resources = res, critical = path, memory = mem}
end

-- The values a device holds at its peak (s.memory): {{kind = "call" |
-- "copy" | "parameter", expr =, bytes =, from =, to =}, ...}.
function Schedule:live(device)
  if not ir.is_virtual_device(device) then
    error("devplan.Schedule:live: a VirtualDevice expected, got " .. type(device), 2)
  end
  return core.schedule.live(self._run, device)
end

-- The Gantt chart as SVG text (lua/devplan/gantt.lua), or written to path.
function Schedule:svg(opts) return require("devplan.gantt").svg(self, opts) end
function Schedule:write_svg(path, opts) return require("devplan.gantt").write(self, path, opts) end

-- ---------------------------------------------------------------- placing: the baselines

local PROBLEM_OPTIONS = {cost = true, bandwidth = true}

-- dp.schedule.problem(mod, config, {cost =, bandwidth =}?): the module's
-- calls to place (annotations fix theirs), with each call's cost on each
-- device of the configuration.
function M.problem(mod, config, opts)
  check_args(mod, config, "devplan.schedule.problem", 2)
  opts = check_options(opts, "devplan.schedule.problem", PROBLEM_OPTIONS, 2)
  typed(mod)
  return core.schedule.problem(mod, config, core_options(opts))
end

local EVAL_OPTIONS = {cost = true, bandwidth = true, serial = true, verify = true, share_copies = true}

-- dp.schedule.evaluate(mod, config, placement?, opts?) -> {annotated =,
-- planned =, schedule =}: the placement written as annotations (none: mod
-- as it is), planned by TVM's rules, then ShareCopies (unless share_copies
-- = false), then scheduled.
function M.evaluate(mod, config, placement, opts)
  check_args(mod, config, "devplan.schedule.evaluate", 2)
  opts = check_options(opts, "devplan.schedule.evaluate", EVAL_OPTIONS, 2)
  local passes = require "devplan.passes"
  local annotated = placement and placement:annotate() or mod
  local planned = passes.PlanDevices(config)(annotated)
  if opts.share_copies ~= false then planned = passes.ShareCopies()(planned) end
  local run_opts = {cost = opts.cost, bandwidth = opts.bandwidth, serial = opts.serial, verify = opts.verify}
  return {annotated = annotated, planned = planned, schedule = M.run(planned, config, run_opts)}
end

local BASE_OPTIONS = {cost = true, bandwidth = true, share_copies = true}

-- dp.schedule.baselines(mod, config, opts?) -> {
--   bound = {bound =, critical_path =, work =, devices =},
--   single = {{device =, planned =, schedule =}, ...}, best_single = one of them,
--   cheapest = {planned =, schedule = (one task at a time)},   serial per-call choice
--   heft = {planned =, schedule =, seconds = HEFT's CPU time}}
function M.baselines(mod, config, opts)
  check_args(mod, config, "devplan.schedule.baselines", 2)
  opts = check_options(opts, "devplan.schedule.baselines", BASE_OPTIONS, 2)
  local p = M.problem(mod, config, {cost = opts.cost, bandwidth = opts.bandwidth})
  local eval = {cost = opts.cost, bandwidth = opts.bandwidth, share_copies = opts.share_copies}
  local out = {bound = p:lower_bound(), single = {}}
  for i, vd in ipairs(p:devices()) do
    local r = M.evaluate(mod, config, p:single(i), eval)
    r.device = vd
    out.single[i] = r
    if not out.best_single or r.schedule.makespan < out.best_single.schedule.makespan then out.best_single = r end
  end
  local serial = {}
  for k, v in pairs(eval) do serial[k] = v end
  serial.serial = true
  out.cheapest = M.evaluate(mod, config, p:cheapest(), serial)
  local t0 = os.clock()
  local h = p:heft()
  local secs = os.clock() - t0
  out.heft = M.evaluate(mod, config, h, eval)
  out.heft.seconds = secs
  out.problem = p
  return out
end

-- ---------------------------------------------------------------- the latency placement

local PLACE_OPTIONS = {cost = true, bandwidth = true, objective = true, exact = true, full = true,
                       effort = true, resolve_conflicts = true, all_conflicts = true}

local function check_place_options(opts, who, level)
  opts = check_options(opts, who, PLACE_OPTIONS, level + 1)
  if opts.objective ~= nil and opts.objective ~= "time" and opts.objective ~= "bytes" then
    error(who .. ": option 'objective' must be \"time\" or \"bytes\", got " .. tostring(opts.objective), level + 1)
  end
  for _, k in ipairs{"exact", "full"} do
    local v = opts[k]
    if v ~= nil and (math.type(v) ~= "integer" or v < 0 or (k == "exact" and v > 64)) then
      error(who .. ": option '" .. k .. "' must be an integer >= 0" .. (k == "exact" and " and <= 64" or ""), level + 1)
    end
  end
  if opts.effort ~= nil and not (type(opts.effort) == "number" and opts.effort > 0 and opts.effort < math.huge) then
    error(who .. ": option 'effort' must be a number > 0", level + 1)
  end
  local rc = opts.resolve_conflicts
  if rc ~= nil and type(rc) ~= "boolean" and rc ~= "tvm" then
    error(who .. ": option 'resolve_conflicts' must be a boolean or \"tvm\"", level + 1)
  end
  if opts.all_conflicts ~= nil and type(opts.all_conflicts) ~= "boolean" then
    error(who .. ": option 'all_conflicts' must be a boolean", level + 1)
  end
  return opts
end

local function place_core_options(opts)
  local c = core_options(opts)
  for _, k in ipairs{"objective", "exact", "full", "effort", "resolve_conflicts", "all_conflicts"} do c[k] = opts[k] end
  return c
end

-- dp.schedule.place(mod, config, {cost =, bandwidth =, objective =, exact =, effort =, ...}?)
-- -> {planned =, makespan =, bytes =, bound =, candidates = {{name =, makespan =, model =, ...}},
--     winner =, exact =, evaluations =, calls =, decisions =, soft =, soft_broken =, soft_weight =}:
-- the latency placement (include/devplan/latency.h, docs/latency.md).
function M.place(mod, config, opts)
  check_args(mod, config, "devplan.schedule.place", 2)
  opts = check_place_options(opts, "devplan.schedule.place", 2)
  typed(mod)
  return core.schedule.latency(mod, config, place_core_options(opts))
end

-- The domains of the latency placement's plan (dp.planner.domains with
-- placement = "latency").
function M.place_domains(mod, config, opts)
  check_args(mod, config, "devplan.planner.domains", 2)
  opts = check_place_options(opts, "devplan.planner.domains", 2)
  typed(mod)
  return core.schedule.latency_domains(mod, config, place_core_options(opts))
end

M.Schedule = Schedule
return M
