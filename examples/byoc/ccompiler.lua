-- A BYOC toolchain as a target kind: "ccompiler" runs on ext_dev and takes
-- an optimisation level. Load it before naming it:
--   devplan plan model.relay --load examples/byoc/ccompiler.lua --target llvm --target ccompiler ...
-- (dp.register_target_kind raises when the kind is known already, so a
-- script that loads this file twice checks first.)
local dp = require "devplan"

for _, k in ipairs(dp.target_kinds()) do
  if k.name == "ccompiler" then return k end
end
return dp.register_target_kind("ccompiler", {
  device_type = "ext_dev",
  options = {
    {name = "opt_level", type = "int", default = 2},
    {name = "fast_math", type = "bool"},
  },
})
