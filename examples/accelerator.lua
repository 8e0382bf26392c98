-- An accelerator next to the CPU: resnet18's conv2d -> (bias_add | batch_norm)? -> relu
-- groups run on the accelerator, everything else on the CPU. Annotate with a pattern
-- rule (examples/rules/accelerator.lua: MergeAndAnnotate), plan, partition into one
-- global function per piece of code on one device, and list the functions per device.
-- Run: bin/devplan examples/accelerator.lua [MODEL.relay]
local dp = require "devplan"

local model = arg and arg[1] or (dp.root .. "/models/resnet18.relay")
local rules = dofile(dp.root .. "/examples/rules/accelerator.lua")

-- The machine: an llvm CPU (also the host) and an accelerator (TVM's ext_dev
-- device type); values nobody placed go to the CPU.
local config = dp.CompilationConfig{targets = {dp.Target("llvm"), dp.Target("ext_dev")},
                                    default_device_type = "cpu"}

local mod = dp.parse_file(model)
local annotated = rules(mod)
local planned = dp.passes.PlanDevices(config)(annotated)
local parted = dp.passes.PartitionByVirtualDevice{by = "virtual_device"}(planned)

-- The operators each function calls (not inside function literals).
local function operators(fn)
  local ops = {}
  dp.visit(fn.body, {
    pre = function(e) return e.kind ~= "fn" end,
    post = function(e)
      if e.kind == "call" and e.callee.kind == "op" then ops[#ops + 1] = e.callee.name end
    end,
  })
  return ops
end

local per_device, order = {}, {}
for _, f in ipairs(parted:functions()) do
  local name, fn = f[1], f[2]
  if name ~= "main" then
    local dev = fn.virtual_device.device_type_name
    if not per_device[dev] then
      per_device[dev] = {}
      order[#order + 1] = dev
    end
    table.insert(per_device[dev], {name = name, ops = operators(fn)})
  end
end

local copies = 0
dp.visit(planned, function(e)
  if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "device_copy" then copies = copies + 1 end
end)

print(("%s: %d functions besides @main, %d device_copy"):format(model:match("[^/]*$"),
  #parted:functions() - 1, copies))
for _, dev in ipairs(order) do
  print(("%s: %d functions"):format(dev, #per_device[dev]))
  for _, f in ipairs(per_device[dev]) do
    print(("  @%s: %s"):format(f.name, table.concat(f.ops, ", ")))
  end
end
