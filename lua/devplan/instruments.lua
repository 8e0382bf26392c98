-- The instruments of a pass context (devplan.context): tables of callbacks
-- called around every pass that runs in it.
--
--   should_run(pass, mod, ctx)        false: the pass is skipped (mod kept)
--   before(pass, mod, ctx)
--   after(pass, mod, result, ctx)
--   failed(pass, err, ctx)            err: the devplan.Error naming the pass
--
-- Built in, from the context's options: verify_each (type check, and the
-- planner's verifier once a planning pass ran), print_before/print_after,
-- then a user's instruments in the order given, then time. `should_run`
-- and `before` are called in that order, `after` and `failed` in reverse,
-- so instruments nest like brackets around the pass.
local core = require "devplan.core"
local verify = require "devplan.verify"

local error, ipairs, pairs, rawequal, tostring, type = error, ipairs, pairs, rawequal, tostring, type
local io, os, string, table = io, os, string, table
_ENV = nil -- no global is read or written below this line

local M = {}

local EVENTS = {should_run = true, before = true, after = true, failed = true, name = true}

-- Passes made of other passes (dp.Sequential) are timed, but printing and
-- verifying them again after their last pass would say nothing new.
local function is_container(p) return p.passes ~= nil end

-- "PlanDevices" and "plan_devices" are one name: lower case, no underscores.
local function key_of(name) return (name:lower():gsub("_", "")) end

local function name_set(list, what)
  if type(list) ~= "table" then
    error(what .. " must be \"all\"" .. (what == "print_after" and ", \"changed\"" or "")
      .. " or a list of pass names, got " .. type(list), 0)
  end
  local set = {}
  for i, n in ipairs(list) do
    if type(n) ~= "string" then error(what .. "[" .. i .. "] must be a pass name", 0) end
    set[key_of(n)] = true
  end
  return set
end

-- Which passes `spec` asks for: a function(pass) -> boolean.
local function selector(spec, what)
  if spec == nil or spec == false then return nil end
  if spec == "all" or spec == true then return function() return true end end
  if spec == "changed" and what == "print_after" then return function() return true end end
  local set = name_set(spec, what)
  return function(p) return set[key_of(p.name)] == true end
end

local function writer(output)
  if output == nil then return function(s) io.stderr:write(s) end end
  if io.type(output) == "file" then return function(s) output:write(s) end end
  if type(output) == "function" then return output end
  error("output must be a file or a function(text), got " .. type(output), 0)
end

local function printer(opts)
  local before = selector(opts.print_before, "print_before")
  local after = selector(opts.print_after, "print_after")
  if not before and not after then return nil end
  local changed_only = opts.print_after == "changed"
  local write = writer(opts.output)
  local popts = opts.print_options or {}
  local function text(mod) return core.astext(mod, popts) end
  local function dump(label, p, mod)
    local t = text(mod)
    write("// ---- " .. label .. " " .. tostring(p) .. " ----\n" .. t .. (t:sub(-1) == "\n" and "" or "\n"))
  end
  return {
    name = "print",
    before = before and function(p, mod)
      if not is_container(p) and before(p) then dump("before", p, mod) end
    end,
    after = after and function(p, mod, res)
      if is_container(p) or not after(p) then return end
      if changed_only and (rawequal(mod, res) or text(mod) == text(res)) then return end
      dump("after", p, res)
    end,
  }
end

local function verifier()
  return {
    name = "verify",
    after = function(p, _, res, ctx)
      if is_container(p) then return end
      verify.check(res, {config = ctx.planned_config or ctx.config, planned = ctx.planned,
                         input = rawequal(res, ctx.planned_output) and ctx.planned_input or nil})
    end,
  }
end

-- An entry per pass, in the order passes started (so a Sequential comes
-- before the passes inside it), filled in when it finishes.
local function timer(pass_text)
  local started = {}
  local function stop()
    local s = table.remove(started)
    if s then s.entry.seconds = os.clock() - s.t end
  end
  return {
    name = "time",
    before = function(p, _, ctx)
      -- (a Sequential inside a Sequential as `Sequential{...}`: the passes in it
      -- have their own entries, and a text per level of deep nesting would
      -- make the timings quadratic in it)
      local entry = {pass = pass_text(p, 1), name = p.name, depth = ctx.depth, seconds = 0}
      table.insert(ctx.timings, entry)
      table.insert(started, {entry = entry, t = os.clock()})
    end,
    after = stop,
    failed = stop,
  }
end

local function check_user(inst, i)
  if type(inst) ~= "table" then error("instruments[" .. i .. "] must be a table of callbacks", 0) end
  for k, v in pairs(inst) do
    if not EVENTS[k] then
      error("instruments[" .. i .. "]: unknown callback '" .. tostring(k)
        .. "' (should_run, before, after, failed, name)", 0)
    end
    if k ~= "name" and type(v) ~= "function" then
      error("instruments[" .. i .. "]." .. k .. " must be a function", 0)
    end
  end
  return inst
end

-- The instrument list of a context made with `opts` (devplan.context).
function M.from_options(opts, pass_text)
  local list = {}
  if opts.verify_each then list[#list + 1] = verifier() end
  local pr = printer(opts)
  if pr then list[#list + 1] = pr end
  if opts.instruments ~= nil then
    if type(opts.instruments) ~= "table" then error("instruments must be a list of tables", 0) end
    for i, inst in ipairs(opts.instruments) do list[#list + 1] = check_user(inst, i) end
  end
  -- last: its `before` runs right before the pass and its `after` right
  -- after it (after and failed go in reverse order), so it times the pass alone
  if opts.time then list[#list + 1] = timer(pass_text) end
  return list
end

-- Text of a list of timings (context.timings).
function M.timing_text(timings)
  local total = 0
  for _, t in ipairs(timings) do
    if t.depth == 0 then total = total + t.seconds end
  end
  local lines = {"pass timings (CPU seconds)", string.format("%10s %7s  %s", "seconds", "share", "pass")}
  for _, t in ipairs(timings) do
    local share = total > 0 and 100 * t.seconds / total or 0
    lines[#lines + 1] = string.format("%10.4f %6.1f%%  %s%s", t.seconds, share,
                                      string.rep("  ", t.depth), t.pass)
  end
  lines[#lines + 1] = string.format("%10.4f %6.1f%%  total", total, total > 0 and 100 or 0)
  return table.concat(lines, "\n") .. "\n"
end

return M
