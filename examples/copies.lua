-- Copies where they belong (docs/copies.md): a loop on the GPU over a tensor
-- the CPU holds, a function that takes its argument and returns its result
-- on the CPU but computes on the GPU, and a function called from the CPU and
-- from the GPU. PlanDevices plans them as TVM does; MoveCopies moves the
-- copies to where they run least, the polymorphic option specialises the
-- function per device. Each plan is counted as a program pays for it: the
-- copies that run.
--
--   bin/devplan examples/copies.lua
local dp = require "devplan"

local config = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}
local CPU = dp.VirtualDevice{device_type = "cpu"}
local GPU = dp.VirtualDevice{device_type = "cuda"}
local meta = {VirtualDevice = {CPU, GPU}}

local function copies_in(fn)
  local n = 0
  dp.visit(fn, function(e)
    if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "device_copy" then n = n + 1 end
  end)
  return n
end

-- The copies a module runs in all: each function's copies times the calls
-- made of it (calls: function name -> how many times it runs).
local function copies_run(mod, calls)
  local n = 0
  for _, nf in ipairs(mod:functions()) do n = n + copies_in(nf[2]) * (calls[nf[1]] or 0) end
  return n
end

local LOOP = [[
#[version = "0.0.5"]
def @loop(%i {virtual_device=meta[VirtualDevice][1]}: int32, %n {virtual_device=meta[VirtualDevice][1]}: int32,
          %x {virtual_device=meta[VirtualDevice][1]}: Tensor[(16), float32],
          %w {virtual_device=meta[VirtualDevice][0]}: Tensor[(16), float32], virtual_device=meta[VirtualDevice][1]) {
  if (less(%i, %n)) {
    %0 = on_device(multiply(%x, device_copy(%w, src_virtual_device=meta[VirtualDevice][0],
                                            dst_virtual_device=meta[VirtualDevice][1])), virtual_device=meta[VirtualDevice][1]);
    @loop(add(%i, 1), %n, %0, %w)
  } else {
    %x
  }
}
def @main(%n {virtual_device=meta[VirtualDevice][1]}: int32, %x {virtual_device=meta[VirtualDevice][1]}: Tensor[(16), float32],
          %w {virtual_device=meta[VirtualDevice][0]}: Tensor[(16), float32], virtual_device=meta[VirtualDevice][1]) {
  @loop(0, %n, %x, %w)
}
]]

local planned = dp.passes.PlanDevices(config)(dp.parse(LOOP, meta))
local moved = dp.passes.MoveCopies(config)(planned)
-- 100 iterations: as planned @loop runs 100 times with its copy (and once
-- more to stop); after MoveCopies @loop runs the first iteration, @loop_cuda
-- the other 99 and the stop (the copies of both are in the recursive branch)
print(("a loop of 100 iterations over %%w: %d copies run as planned, %d after MoveCopies"):format(
  copies_run(planned, {main = 1, loop = 100}), copies_run(moved, {main = 1, loop = 1, loop_cuda = 99})))
for _, m in ipairs(dp.planner.moves(moved)) do print("  " .. m.text) end
print()

-- device_planner.cc's worked example: @f executes on the CPU around a GPU computation.
local WORKED = [[
#[version = "0.0.5"]
def @f(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(16), float32], virtual_device=meta[VirtualDevice][0]) {
  let %x = on_device(negative(%a), virtual_device=meta[VirtualDevice][1]);
  %0 = on_device(add(%x, %x), virtual_device=meta[VirtualDevice][1]);
  device_copy(%0, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0])
}
def @main(%p {virtual_device=meta[VirtualDevice][1]}: Tensor[(16), float32], virtual_device=meta[VirtualDevice][1]) {
  %1 = device_copy(%p, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]);
  %2 = @f(%1);
  device_copy(%2, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1])
}
]]
planned = dp.passes.PlanDevices(config)(dp.parse(WORKED, meta))
moved = dp.passes.MoveCopies(config)(planned)
print(("@f called from the GPU: %d copies as planned, %d after MoveCopies; @f now runs on %s:"):format(
  copies_run(planned, {main = 1, f = 1}), copies_run(moved, {main = 1, f = 1}),
  moved:get("f").virtual_device.device_type_name))
print(dp.astext(moved, {short_devices = true}))

-- A function called from the CPU and from the GPU: a conflict for TVM's rules.
local TWO = [[
#[version = "0.0.5"]
def @f(%x: Tensor[(16), float32]) { add(%x, %x) }
def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(16), float32], %b {virtual_device=meta[VirtualDevice][1]}: Tensor[(16), float32]) {
  %0 = on_device(multiply(@f(%a), %a), virtual_device=meta[VirtualDevice][0]);
  %1 = on_device(multiply(@f(%b), %b), virtual_device=meta[VirtualDevice][1]);
  add(%0, device_copy(%1, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0]))
}
]]
local ok, err = pcall(dp.passes.PlanDevices(config), dp.parse(TWO, meta))
print("TVM's rules: " .. (ok and "planned" or err.code))
local poly = dp.passes.PlanDevices(config, {polymorphic = true})(dp.parse(TWO, meta))
local rep = dp.planner.specialisations(poly)
print(("polymorphic: %d function specialised, %d device_copy: @f on %s, @f_cuda on %s"):format(
  rep.specialised, rep.copies_after, poly:get("f").virtual_device.device_type_name,
  poly:get("f_cuda").virtual_device.device_type_name))
