-- require "devplan": the whole module, one table.
--
-- The C half (`devplan.core`: targets, virtual devices, configuration, the
-- IR, type inference, printing, the planner's phases) and the parts written
-- in Lua are separate modules; this file puts their public names together.
-- Lua modules of devplan require "devplan.core" and each other, never
-- "devplan" itself, so that loading this file has no cycle.
local core = require "devplan.core"

local dp = {}
for name, value in pairs(core) do dp[name] = value end

-- The project root the Lua files were loaded from (lua/devplan/init.lua
-- two folders down), e.g. to find lua/devplan/API.md.
do
  local file = debug.getinfo(1, "S").source:match("^@(.*)$") or ""
  if file:sub(1, 1) ~= "/" and os.getenv("PWD") then file = os.getenv("PWD") .. "/" .. file end
  file = file:gsub("/%./", "/")
  dp.root = file:match("^(.*)/lua/devplan/init%.lua$")
end

local ir = require "devplan.ir"
dp.is_expr, dp.is_type, dp.is_pattern = ir.is_expr, ir.is_type, ir.is_pattern
dp.is_module, dp.is_typedef, dp.is_primfn = ir.is_module, ir.is_typedef, ir.is_primfn
dp.is_target, dp.is_virtual_device, dp.is_config = ir.is_target, ir.is_virtual_device, ir.is_config

local parser = require "devplan.parser"
dp.parse, dp.parse_file = parser.parse, parser.parse_file
dp.parse_expr, dp.parse_type = parser.parse_expr, parser.parse_type

dp.planner = require "devplan.planner"
dp.pattern = require "devplan.pattern"   -- replaces core.pattern, its C half
dp.pass = require("devplan.pass").new
dp.passes = require "devplan.passes"

return dp
