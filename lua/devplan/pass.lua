-- Passes are values: a name, the options they were made with, and a
-- function from a module to a module.
--
--   local p = dp.pass("my_pass", function(mod, ctx) ... return mod end)
--   local out = p(mod)            -- run it (ctx: a pass context, or {})
--   p.name, p.options, tostring(p) --> "my_pass"
--
-- Every pass of dp.passes is one of these. Options are shown by tostring
-- as name(key=value, ...) in key order, so a pass prints the same way
-- every time.
local M = {}

local Pass = {}
Pass.__index = Pass
Pass.__name = "devplan.Pass"

function Pass.__call(self, mod, ctx)
  return self.run(mod, ctx or {})
end

local function option_text(v)
  if type(v) == "string" then return v end
  if type(v) == "number" or type(v) == "boolean" then return tostring(v) end
  return "<" .. type(v) .. ">"
end

function Pass.__tostring(self)
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

return M
