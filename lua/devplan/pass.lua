-- Passes are values: a name, the options they were made with, and a
-- function from a module to a module.
--
--   local p = dp.pass("my_pass", function(mod, ctx) ... return mod end)
--   local out = p(mod)             -- run it in a fresh dp.PassContext
--   local out = p(mod, ctx)        -- run it in ctx (instruments, configuration)
--   p.name, p.options, tostring(p) --> "my_pass"
--
--   local both = dp.Sequential{annotate, dp.passes.PlanDevices(config)}
--   both(mod)                      -- each pass in turn, in one context
--
-- Every pass of dp.passes is one of these. Options are shown by tostring
-- as name(key=value, ...) in key order, so a pass prints the same way
-- every time. Running goes through a pass context (devplan.context), so
-- instruments see every pass, nested ones included, and an error names
-- the pass that raised it.
local M = {}

local Pass = {}
Pass.__index = Pass
Pass.__name = "devplan.Pass"

-- context requires this file for is_pass: it is required when first run
local function context() return require "devplan.context" end

function Pass.__call(self, mod, ctx)
  local c = context()
  if ctx == nil then ctx = c.new() end
  if not c.is_context(ctx) then
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
function M.new(name, run, options)
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
  local seq = M.new("Sequential", function(mod, ctx)
    for _, p in ipairs(list) do mod = ctx:run(p, mod) end
    return mod
  end)
  seq.passes = list
  sequentials[seq] = list
  return seq
end

return M
