-- Targets, virtual devices and a compilation configuration.
-- Run: bin/devplan examples/devices.lua
local dp = require "devplan"

-- Targets: a string, a table of fields, or JSON. Equal targets are one value.
local host = dp.Target("llvm -mcpu=skylake")
local gpu = dp.Target{kind = "cuda", arch = "sm_80", host = host}
local same = dp.Target('{"kind": "cuda", "arch": "sm_80", "host": "llvm -mcpu=skylake"}')
print("target:        ", gpu, "(device type " .. gpu.device_type .. ")")
print("interned:      ", rawequal(gpu, same))
-- TVM's string forms: "-key value", "--host", booleans, lists; tostring is TVM's
-- canonical string (keys and the kind's defaults included), and reads back.
local t = dp.Target("llvm -mcpu skylake -mattr=+avx2,+fma -fast-math --host c")
print("options:       ", t.options.mcpu, table.concat(t.options.mattr, " "), t.options["fast-math"])
print("canonical:     ", t, rawequal(t, dp.Target(tostring(t))))
-- A mistyped name gets a suggestion.
print("did you mean:  ", select(2, pcall(dp.Target, "cuda -max_num_thread=512")))

-- Virtual devices: (device type, virtual device id, target, memory scope).
local VD = dp.VirtualDevice
local cpu0 = VD{device_type = "cpu", virtual_device_id = 0}
local gpu_global = VD{target = gpu, memory_scope = "global"}
print("cpu0:          ", cpu0)
print("gpu global:    ", gpu_global)
print("join:          ", VD.join(VD{device_type = "cuda"}, VD{virtual_device_id = 1, memory_scope = "global"}))
print("no join:       ", VD.join(cpu0, gpu_global))
print("default:       ", VD.default(VD{memory_scope = "texture"}, gpu_global))

-- The configuration fixes the host, the primitive targets and the default device.
local config = dp.CompilationConfig{targets = {"llvm", gpu}, default_device_type = "cuda"}
-- tvmc's comma-separated list works where a list of targets is expected
print("tvmc list:     ", #dp.CompilationConfig{targets = "cuda, llvm -mcpu=skylake"}.primitive_targets)
print("config:        ", config)
print("canonical cpu: ", config:canonical(VD{device_type = "cpu"}))
print("canonical gpu: ", config:canonical(VD{device_type = "cuda", memory_scope = "global"}))

-- Errors are values with a message.
local ok, err = pcall(dp.CompilationConfig, {targets = {"llvm"}, default_device_type = "cuda"})
print("error:         ", ok, err)
