-- Passes, and the contexts they run in (dp.pass, dp.Sequential,
-- dp.PassContext; devplan.pass gives the first two their names). A pass is
-- a value: a name, the options it was made with, and a function from a
-- module to a module; calling it runs it in a context (a new one, or the
-- one given), and a context runs only passes: the two are one module.
--
-- dp.PassContext: where passes run. It carries the configuration, free
-- options for passes, and instruments: tables of callbacks around every
-- pass that runs in it (nested passes included).
--
--   local ctx = dp.PassContext{
--     config = config,               -- what planning passes use (ctx.config)
--     options = {...},               -- anything passes want to read (ctx.options)
--     time = true,                   -- seconds per pass: ctx.timings, ctx:timing_report()
--     print_before = "all" | {names},
--     print_after = "all" | "changed" | {names},
--     print_options = {short_devices = true, ...},   -- dp.astext options
--     output = io.stderr | function(text),           -- where printing goes
--     verify_each = true,            -- type check (and the planner's verifier once
--                                    --  planned) after every pass
--     instruments = { {should_run =, before =, after =, failed =}, ... },
--   }
--   local out = dp.Sequential{...}(mod, ctx)
--
-- An error raised in a pass (or by an instrument after it) comes out as a
-- devplan.Error with `pass` set to the name of the innermost pass that
-- failed and a note saying so; errors that were not devplan.Errors become
-- "callback" errors with the original message.
local core = require "devplan.core"
local ir = require "devplan.ir"
local instruments = require "devplan.instruments"

local error, getmetatable, ipairs, pairs, pcall, setmetatable = error, getmetatable, ipairs, pairs, pcall, setmetatable
local tostring, type = tostring, type
local math, table = math, table
_ENV = nil -- no global is read or written below this line

local M = {}

-- ---------------------------------------------------------------- passes

local Pass = {}
Pass.__index = Pass
Pass.__name = "devplan.Pass"

-- Calling a pass runs it in ctx, or in a new context.
function Pass.__call(self, mod, ctx)
  if ctx == nil then ctx = M.new() end
  if not M.is_context(ctx) then
    error("devplan.pass: '" .. self.name .. "' runs in a dp.PassContext, got a " .. type(ctx), 2)
  end
  return ctx:run(self, mod)
end

local function option_text(v)
  if type(v) == "string" then return v end
  if type(v) == "number" or type(v) == "boolean" then return tostring(v) end
  return "<" .. type(v) .. ">"
end

function Pass.__tostring(self)
  if self.passes then
    local parts = {}
    for i, p in ipairs(self.passes) do parts[i] = tostring(p) end
    return self.name .. "{" .. table.concat(parts, ", ") .. "}"
  end
  local keys = {}
  for k in pairs(self.options) do keys[#keys + 1] = tostring(k) end
  if #keys == 0 then return self.name end
  table.sort(keys)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = k .. "=" .. option_text(self.options[k]) end
  return self.name .. "(" .. table.concat(parts, ", ") .. ")"
end

-- A new pass. name: a string; run(mod, ctx) returns the new module;
-- options: a table shown by tostring (not copied).
function M.pass(name, run, options)
  if type(name) ~= "string" or name == "" then
    error("devplan.pass: the name must be a non-empty string, got " .. type(name), 2)
  end
  if type(run) ~= "function" then
    error("devplan.pass: '" .. name .. "' needs a function(mod, ctx), got " .. type(run), 2)
  end
  if options ~= nil and type(options) ~= "table" then
    error("devplan.pass: the options of '" .. name .. "' must be a table, got " .. type(options), 2)
  end
  return setmetatable({name = name, run = run, options = options or {}}, Pass)
end

-- Is v a pass?
function M.is_pass(v)
  return getmetatable(v) == Pass
end

-- dp.Sequential{p1, p2, ...}: one pass running each in turn, in the
-- context it runs in. `passes` is copied; p.passes lists them.
function M.Sequential(passes)
  if type(passes) ~= "table" then
    error("devplan.Sequential: a list of passes expected, got " .. type(passes), 2)
  end
  local list = {}
  for k in pairs(passes) do
    if math.type(k) ~= "integer" or k < 1 or k > #passes then
      error("devplan.Sequential: a list of passes expected, got the key '" .. tostring(k) .. "'", 2)
    end
  end
  for i, p in ipairs(passes) do
    if not M.is_pass(p) then
      error("devplan.Sequential: item " .. i .. " is a " .. type(p) .. ", not a pass (dp.pass)", 2)
    end
    list[i] = p
  end
  local seq = M.pass("Sequential", function(mod, ctx)
    for _, p in ipairs(list) do mod = ctx:run(p, mod) end
    return mod
  end)
  seq.passes = list
  return seq
end


-- ---------------------------------------------------------------- contexts

local Context = {}
Context.__index = Context
Context.__name = "devplan.PassContext"

local OPTIONS = {
  config = true, options = true, time = true, print_before = true, print_after = true,
  print_options = true, output = true, verify_each = true, instruments = true,
}

local function check_options(opts)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    error("devplan.PassContext: options must be a table, got " .. type(opts), 3)
  end
  for k in pairs(opts) do
    if not OPTIONS[k] then
      local names = {}
      for n in pairs(OPTIONS) do names[#names + 1] = n end
      table.sort(names)
      error("devplan.PassContext: unknown option '" .. tostring(k) .. "' (options: "
        .. table.concat(names, ", ") .. ")", 3)
    end
  end
  if opts.config ~= nil and not ir.is_config(opts.config) then
    error("devplan.PassContext: config must be a CompilationConfig, got " .. type(opts.config), 3)
  end
  if opts.options ~= nil and type(opts.options) ~= "table" then
    error("devplan.PassContext: options.options must be a table, got " .. type(opts.options), 3)
  end
  return opts
end

-- A new context.
function M.new(opts)
  opts = check_options(opts)
  local ctx = setmetatable({
    config = opts.config,
    options = opts.options or {},
    timings = {},   -- {pass =, seconds =, depth =} in the order passes finished
    depth = 0,      -- how many passes are running (nesting)
    planned = false, -- set once a planning pass ran: the verifier then checks the plan
  }, Context)
  local ok, list = pcall(instruments.from_options, opts)
  if not ok then error("devplan.PassContext: " .. tostring(list), 2) end
  ctx.instruments = list
  return ctx
end

function M.is_context(v)
  return getmetatable(v) == Context
end

-- The error err raised in (or right after) pass p, made a devplan.Error
-- naming p; an error that already names an inner pass is kept as it is.
local function named(err, p, when)
  if core.is_error(err) then
    if err.pass then return err end
    err.pass = p.name
    err.notes = err.notes or {}
    table.insert(err.notes, {message = (when or "in pass ") .. tostring(p)})
    return core.Error(err)
  end
  return core.Error{
    message = "pass " .. tostring(p) .. " failed: " .. core._error_text(err),
    code = "callback",
    pass = p.name,
    cause = err,
  }
end

-- before: in order; after and failed: in reverse (brackets around the pass)
local function each(ctx, event, ...)
  local list, n = ctx.instruments, #ctx.instruments
  for i = 1, n do
    local inst = event == "before" and list[i] or list[n + 1 - i]
    local f = inst[event]
    if f then f(...) end
  end
end

-- Runs pass p on mod in this context: should_run, before, the pass, after
-- (each instrument in order); returns the new module.
function Context:run(p, mod)
  if not M.is_pass(p) then
    error("devplan.PassContext:run: a pass expected, got " .. type(p), 2)
  end
  if not ir.is_module(mod) then
    error("devplan.PassContext:run: pass " .. tostring(p) .. " needs an IRModule, got " .. type(mod), 2)
  end
  for _, inst in ipairs(self.instruments) do
    if inst.should_run and inst.should_run(p, mod, self) == false then return mod end
  end
  local ok, err = pcall(each, self, "before", p, mod, self)
  if not ok then error(named(err, p, "before pass "), 0) end
  self.depth = self.depth + 1
  local res
  ok, res = pcall(p.run, mod, self)
  self.depth = self.depth - 1
  if ok and not ir.is_module(res) then
    ok, res = false, core.Error{message = "pass " .. tostring(p) .. " returned a "
      .. type(res) .. ", not an IRModule", code = "value"}
  end
  if not ok then
    res = named(res, p)
    pcall(each, self, "failed", p, res, self)
    error(res, 0)
  end
  if p.plans or p.name == "PlanDevices" then
    self.planned = true
    self.planned_config = p.config or self.config
    -- what the plan is checked against: the user's annotations of the
    -- module the planning pass was given hold in the module it made
    self.planned_input, self.planned_output = mod, res
  end
  ok, err = pcall(each, self, "after", p, mod, res, self)
  if not ok then error(named(err, p, "after pass "), 0) end
  return res
end

-- The timings as text: one line per pass run (nested ones indented),
-- seconds and share of the total of the outermost passes.
function Context:timing_report()
  return instruments.timing_text(self.timings)
end

return M
