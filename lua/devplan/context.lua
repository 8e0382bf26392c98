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

-- The text of a pass that is not made of passes.
local function leaf_text(self)
  local keys = {}
  for k in pairs(self.options) do keys[#keys + 1] = tostring(k) end
  if #keys == 0 then return self.name end
  table.sort(keys)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = k .. "=" .. option_text(self.options[k]) end
  return self.name .. "(" .. table.concat(parts, ", ") .. ")"
end

-- `Sequential{p1, Sequential{p2, p3}}`: an explicit stack, so passes
-- nested to any depth print (in time linear in the text). With levels,
-- Sequentials nested deeper than that print as `Sequential{...}` (the
-- timings name each pass this way: their lines show the nesting).
local function text(self, levels)
  local out, stack = {}, {{self, 0}}
  while #stack > 0 do
    local entry = table.remove(stack)
    local item, depth = entry[1], entry[2]
    if type(item) == "string" then
      out[#out + 1] = item
    elseif type(item.passes) == "table" and levels and depth >= levels then
      out[#out + 1] = tostring(item.name) .. "{...}"
    elseif type(item.passes) == "table" then
      out[#out + 1] = tostring(item.name) .. "{"
      stack[#stack + 1] = {"}"}
      for i = #item.passes, 1, -1 do
        stack[#stack + 1] = {item.passes[i], depth + 1}
        if i > 1 then stack[#stack + 1] = {", "} end
      end
    elseif M.is_pass(item) then
      out[#out + 1] = leaf_text(item)
    else
      out[#out + 1] = "<" .. type(item) .. ">"
    end
  end
  return table.concat(out)
end

function Pass.__tostring(self) return text(self) end

-- The text of p with Sequentials nested deeper than `levels` cut short.
function M.text(p, levels) return text(p, levels) end

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

-- The passes of each dp.Sequential (weak keys): a context runs them
-- itself, with a stack of its own, so Sequentials nest to any depth.
local sequentials = setmetatable({}, {__mode = "k"})

-- The list of passes of p when p is a dp.Sequential, else nil.
function M.sequence_of(p) return sequentials[p] end

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
  sequentials[seq] = list
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
    running = 0,    -- how many of them run from a pass's own run function
    planned = false, -- set once a planning pass ran: the verifier then checks the plan
  }, Context)
  local ok, list = pcall(instruments.from_options, opts, M.text)
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
  local ok, text = pcall(core._error_text, err) -- (an error object whose tostring raises)
  text = ok and text or ("a " .. type(err))
  return core.Error{
    message = when and ("an instrument failed " .. when .. tostring(p) .. ": " .. text)
      or ("pass " .. tostring(p) .. " failed: " .. text),
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

-- How deep passes may run passes from inside their own run function
-- (each such level is a protected call on the C stack); the passes of a
-- dp.Sequential do not count, they nest to any depth.
local MAX_RUN_NESTING = 64

-- Does every should_run instrument let p run on mod? Raises (named) when
-- one raises.
local function should_run(ctx, p, mod)
  for _, inst in ipairs(ctx.instruments) do
    if inst.should_run then
      local ok, r = pcall(inst.should_run, p, mod, ctx)
      if not ok then return nil, named(r, p, "deciding whether to run pass ") end
      if r == false then return false end
    end
  end
  return true
end

-- What running p from mod to res tells the context (the verifier's input).
local function note_planning(ctx, p, mod, res)
  if p.plans or p.name == "PlanDevices" then
    ctx.planned = true
    ctx.planned_config = p.config or ctx.config
    -- what the plan is checked against: the user's annotations of the
    -- module the planning pass was given hold in the module it made
    ctx.planned_input, ctx.planned_output = mod, res
  end
end

-- Runs a pass that is not a dp.Sequential: before, the pass, after.
-- Returns the new module, or nil and the error (named).
local function run_leaf(ctx, p, mod)
  local ok, err = pcall(each, ctx, "before", p, mod, ctx)
  if not ok then return nil, named(err, p, "before pass ") end
  if ctx.running >= MAX_RUN_NESTING then
    return nil, core.Error{message = ("passes run from inside passes nested more than %d deep "
      .. "(pass %s)"):format(MAX_RUN_NESTING, tostring(p)), code = "value", pass = p.name}
  end
  ctx.depth, ctx.running = ctx.depth + 1, ctx.running + 1
  local res
  ok, res = pcall(p.run, mod, ctx)
  ctx.depth, ctx.running = ctx.depth - 1, ctx.running - 1
  if ok and not ir.is_module(res) then
    ok, res = false, core.Error{message = "pass " .. tostring(p) .. " returned a "
      .. type(res) .. ", not an IRModule", code = "value"}
  end
  if not ok then
    res = named(res, p)
    pcall(each, ctx, "failed", p, res, ctx)
    return nil, res
  end
  note_planning(ctx, p, mod, res)
  ok, err = pcall(each, ctx, "after", p, mod, res, ctx)
  if not ok then return nil, named(err, p, "after pass ") end
  return res
end

-- An error err raised inside the Sequentials of `stack` (innermost last):
-- each is told it failed, innermost first, then err goes on.
local function unwind(ctx, stack, err)
  for i = #stack, 1, -1 do
    ctx.depth = ctx.depth - 1
    pcall(each, ctx, "failed", stack[i].p, err, ctx)
  end
  error(err, 0)
end

-- Runs pass p on mod in this context: should_run, before, the pass, after
-- (each instrument in order); returns the new module. The passes of a
-- dp.Sequential run here one after another from a stack of Sequentials
-- (instruments see each, with ctx.depth their nesting), not from the
-- Sequential's own run function, so nesting costs no C stack.
function Context:run(p, mod)
  if not M.is_pass(p) then
    error("devplan.PassContext:run: a pass expected, got " .. type(p), 2)
  end
  if not ir.is_module(mod) then
    error("devplan.PassContext:run: pass " .. tostring(p) .. " needs an IRModule, got " .. type(mod), 2)
  end
  self.running = self.running or 0
  local go, err = should_run(self, p, mod)
  if err then error(err, 0) end
  if not go then return mod end
  if not M.sequence_of(p) then
    local res, e = run_leaf(self, p, mod)
    if not res then error(e, 0) end
    return res
  end
  local stack = {}
  local function open(q, m) -- a Sequential starts: before, then its passes
    local ok, e = pcall(each, self, "before", q, m, self)
    if not ok then unwind(self, stack, named(e, q, "before pass ")) end
    self.depth = self.depth + 1
    stack[#stack + 1] = {p = q, list = M.sequence_of(q), input = m, mod = m, i = 0}
  end
  open(p, mod)
  while true do
    local top = stack[#stack]
    top.i = top.i + 1
    local q = top.list[top.i]
    if q == nil then -- the Sequential is done: after
      stack[#stack] = nil
      self.depth = self.depth - 1
      note_planning(self, top.p, top.input, top.mod)
      local ok, e = pcall(each, self, "after", top.p, top.input, top.mod, self)
      if not ok then unwind(self, stack, named(e, top.p, "after pass ")) end
      if #stack == 0 then return top.mod end
      stack[#stack].mod = top.mod
    else
      go, err = should_run(self, q, top.mod)
      if err then unwind(self, stack, err) end
      if go and M.sequence_of(q) then
        open(q, top.mod)
      elseif go then
        local res, e = run_leaf(self, q, top.mod)
        if not res then unwind(self, stack, e) end
        top.mod = res
      end
    end
  end
end

-- The timings as text: one line per pass run (nested ones indented),
-- seconds and share of the total of the outermost passes.
function Context:timing_report()
  return instruments.timing_text(self.timings)
end

return M
