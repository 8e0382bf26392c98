-- A custom defaulting heuristic, written in Lua between the planner's
-- analysis and capture.
--
-- TVM's rule gives a function's unconstrained result the configuration's
-- default device. When the result is computed from a value that must live
-- elsewhere, that choice costs a device_copy at the end. This heuristic
-- first gives the result the device of the on_device annotation that
-- feeds it, so nothing is copied; the remaining free values then follow
-- TVM's rules as usual.
--
-- Run: bin/devplan examples/custom_default.lua
local dp = require "devplan"
local modname = ...

local M = {}

-- Plan mod with the heuristic: result of each function follows the device
-- of the first on_device annotation found in its body (if any).
function M.plan(mod, config)
  local rewritten = dp.planner.rewrite(mod, config)
  local domains = dp.planner.analyze(rewritten, config)
  for _, def in ipairs(rewritten:functions()) do
    local fn = def[2]
    if domains:lookup(fn.body):is_fully_unconstrained() then
      local wanted
      dp.visit(fn.body, function(e)
        if not wanted and e.kind == "call" and e.callee.kind == "op" and e.callee.name == "on_device" then
          wanted = domains:lookup(e.args[1])
        end
      end)
      if wanted and not wanted:is_fully_unconstrained() then domains:set_default(fn, wanted) end
    end
  end
  dp.planner.default(domains)
  return dp.planner.capture(domains)
end

M.example = [[
#[version = "0.0.5"]
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {
  %0 = add(%a, %b);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
  negative(%1)
}
]]

if modname ~= "custom_default" then -- run as a script, not required
  local config = dp.CompilationConfig{targets = {dp.Target("llvm"), dp.Target("cuda")}, default_device_type = "cuda"}
  local mod = dp.parse(M.example, {VirtualDevice = {dp.VirtualDevice{device_type = "cpu"}}})
  print("-- TVM's rules:")
  print(dp.passes.PlanDevices(config)(mod))
  print("-- with the custom default:")
  print(M.plan(mod, config))
end

return M
