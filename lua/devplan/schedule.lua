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
local devname = require "devplan.devname"
local gantt = require "devplan.gantt"
local passes = require "devplan.passes"
local latency = require "devplan.latency"

local error, getmetatable, ipairs, pairs, setmetatable, tostring, type =
  error, getmetatable, ipairs, pairs, setmetatable, tostring, type
local math, os, string, table = math, os, string, table
_ENV = nil -- no global is read or written below this line

local M = {}

local Schedule = {}
Schedule.__index = Schedule
Schedule.__name = "devplan.Schedule"

-- ---------------------------------------------------------------- options

local OPTIONS = {cost = true, bandwidth = true, serial = true, verify = true}
local check_options, core_options, typed, check_args =
  latency.check_options, latency.core_options, latency.typed, latency.check_args

-- ---------------------------------------------------------------- the schedule of a plan

-- dp.planner.schedule(planned, config, {cost =, bandwidth =, serial =, verify =}?)
function M.run(planned, config, opts)
  check_args(planned, config, "devplan.planner.schedule", 2)
  opts = check_options(opts, "devplan.planner.schedule", OPTIONS, 2)
  typed(planned)
  if opts.verify then core.planner.verify(planned, config, {raise = true}) end
  local s = core.schedule.run(planned, config, core_options(opts))
  s.module, s.config = planned, config
  return setmetatable(s, Schedule)
end

-- A method called on something else (Schedule.text(x)) is an error naming it.
local function check_self(self, method)
  if getmetatable(self) ~= Schedule then
    error("devplan.Schedule:" .. method .. ": a schedule expected (dp.planner.schedule), got " .. type(self), 3)
  end
end

-- Per device (not links): busy seconds, in the order of s.resources.
function Schedule:busy()
  check_self(self, "busy")
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
  if type(t) ~= "number" or (scale ~= nil and type(scale) ~= "number") then
    error("devplan.schedule.format_time: seconds (a number) and an optional scale (a number) expected, got "
      .. type(t) .. (scale ~= nil and (", " .. type(scale)) or ""), 2)
  end
  local u, name = unit_of(scale or t)
  return string.format("%.3f %s", t / u, name)
end

-- "1.5 MiB" for bytes.
function M.format_bytes(b)
  if type(b) ~= "number" then
    error("devplan.schedule.format_bytes: bytes (a number) expected, got " .. type(b), 2)
  end
  local units = {"bytes", "KiB", "MiB", "GiB", "TiB"}
  local u = 1
  while b >= 1024 and u < #units do b, u = b / 1024, u + 1 end
  local whole = u == 1 and math.tointeger(math.floor(b + 0.5))
  if whole then return string.format("%d bytes", whole) end
  if u == 1 then return tostring(b) .. " bytes" end
  return string.format("%.3g %s", b, units[u])
end

local function grouped(n)
  local s = tostring(math.tointeger(n) or n)
  return (s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end

-- Names of a schedule's pieces: devices (short, as the printer writes them)
-- and tasks (their printed name where the module text has one).
function M.namer(s, with_names)
  if getmetatable(s) ~= Schedule then
    error("devplan.schedule.namer: a schedule expected (dp.planner.schedule), got " .. type(s), 2)
  end
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
  check_self(self, "text")
  if opts ~= nil and type(opts) ~= "table" then
    error("devplan.Schedule:text: options must be a table {names =, path =, costs =}, got " .. type(opts), 2)
  end
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

Schedule.__tostring = function(s) return Schedule.text(s) end

-- The schedule as plain data (for JSON): makespan, resources, critical path.
function Schedule:summary()
  check_self(self, "summary")
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
  check_self(self, "live")
  if not ir.is_virtual_device(device) then
    error("devplan.Schedule:live: a VirtualDevice expected, got " .. type(device), 2)
  end
  return core.schedule.live(self._run, device)
end

-- The Gantt chart as SVG text (lua/devplan/gantt.lua), or written to path.
local function chart_text(s) return {names = M.namer(s, #s.tasks <= 5000), time = M.format_time} end
function Schedule:svg(opts)
  check_self(self, "svg")
  return gantt.svg(self, chart_text(self), opts)
end
function Schedule:write_svg(path, opts)
  check_self(self, "write_svg")
  return gantt.write(self, chart_text(self), path, opts)
end

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

-- dp.schedule.place and the domains of its plan (devplan.latency).
M.place, M.place_domains = latency.place, latency.place_domains

M.Schedule = Schedule
return M
