-- AnnotateVirtualDevices: per-operator device rules, written in Lua on top
-- of dp.rewrite. Each call of an operator named in `rules` is wrapped in
-- on_device(call, virtual_device=rules[name](call)); a rule may return nil
-- to leave that call alone. The planner then places everything else.
--
--   local annotate = dp.passes.AnnotateVirtualDevices{
--     ["nn.conv2d"] = function(call) return gpu end,
--     ["nn.dense"] = function(call) return gpu end,
--   }
--   local annotated = annotate(mod)
local core = require "devplan.core"
local pass = require "devplan.pass"

local M = {}

-- The pass for `rules` (operator name -> function(call) returning a
-- virtual device or nil).
function M.new(rules)
  if type(rules) ~= "table" then
    error("AnnotateVirtualDevices: a table of operator name -> function expected, got " .. type(rules), 2)
  end
  for name, rule in pairs(rules) do
    core.op.get(name) -- raises a "name" error for an unknown operator
    if type(rule) ~= "function" then
      error("AnnotateVirtualDevices: the rule for '" .. tostring(name) .. "' must be a function", 2)
    end
  end
  return pass.new("AnnotateVirtualDevices", function(mod)
    return core.infer_type(core.rewrite(mod, {
      call = function(call)
        local rule = call.callee.kind == "op" and rules[call.callee.name]
        local vd = rule and rule(call)
        if vd then return core.call("on_device", {call}, {virtual_device = vd}) end
      end,
    }))
  end)
end

return M
