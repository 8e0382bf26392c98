-- require "devplan": the whole module, one table.
--
-- The C half (`devplan.core`: targets, virtual devices, configuration, the
-- IR, type inference, printing, the planner's phases) and the parts written
-- in Lua are separate modules; this file puts their public names together.
-- Lua modules of devplan require "devplan.core" and each other, never
-- "devplan" itself, so that loading this file has no cycle.
local core = require "devplan.core"

local loadfile, pairs, pcall, require, type = loadfile, pairs, pcall, require, type
local debug, os = debug, os
_ENV = nil -- no global is read or written below this line

local dp = {}
for name, value in pairs(core) do dp[name] = value end

-- Where devplan's own files are: the source tree the Lua files were loaded
-- from (lua/devplan/init.lua two folders down), or when installed
-- (PREFIX/share/lua/5.4/devplan/init.lua) PREFIX/share/devplan, which holds
-- the examples, models, docs and README.md; a rock names its folder in
-- devplan/site.lua (scripts/install.sh writes it).
do
  local file = debug.getinfo(1, "S").source:match("^@(.*)$") or ""
  if file:sub(1, 1) ~= "/" and os.getenv("PWD") then file = os.getenv("PWD") .. "/" .. file end
  file = file:gsub("/%./", "/")
  -- (site.lua beside this file only: never another installation's)
  local site_chunk, ok, site = loadfile((file:gsub("init%.lua$", "site.lua")), "t", {}), false, nil
  if site_chunk then ok, site = pcall(site_chunk) end
  local prefix = file:match("^(.*)/share/lua/5%.4/devplan/init%.lua$")
  if ok and type(site) == "table" and type(site.root) == "string" then dp.root = site.root
  else dp.root = prefix and (prefix .. "/share/devplan") or file:match("^(.*)/lua/devplan/init%.lua$") end
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
dp.soft = require("devplan.passes.annotate_virtual_devices").soft   -- a rule's soft annotation: dp.soft(vd, weight)

-- ---- the framework: pipelines, pass contexts, reports, graphs ----
dp.Sequential = require("devplan.pass").Sequential
dp.PassContext = require("devplan.context").new
dp.pipeline = require "devplan.pipeline"
dp.graph = require "devplan.graph"

-- ---- the modelled schedule of a plan, costs, the latency baselines ----
dp.costs = require "devplan.costs"
dp.schedule = require "devplan.schedule"

return dp
