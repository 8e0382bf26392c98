-- Pattern matching at scale: a 5-rule table (a BYOC-style pattern table) over
-- a module of about 1,000,000 calls, a CNN-like chain of
-- conv2d -> bias_add -> relu blocks with a residual add every fourth block.
-- Prints one table: what was timed, the groups found, seconds (CPU time).
--
--   bin/devplan bench/pattern.lua [CALLS]      (default 1000000)
--
-- Rows:
--   match 5 rules     the grouping of each rule over the body, one indexed
--                     graph shared by all rules (what MergeAndAnnotate does
--                     before annotating): the goal is under 1 s at 1,000,000
--   graph             building that indexed graph alone
--   find rule 1       every match of the first rule, each as a Lua table of captures
--   MergeAndAnnotate  the whole pass (grouping, annotation, type inference)
--   MergeComposite    the whole pass (a rewrite and type inference per rule)
local dp = require "devplan"
local P = dp.pattern

local CALLS = tonumber(arg and arg[1]) or 1000000

local function time(f)
  collectgarbage()
  local t0 = os.clock()
  local r = table.pack(f())
  return os.clock() - t0, table.unpack(r, 1, r.n)
end

-- The module: blocks of 3 calls (conv2d, bias_add, relu), a 4th (add) every
-- fourth block, about CALLS calls in all.
local function model(calls)
  local T = dp.type.tensor
  local x = dp.var("x", T({1, 4, 8, 8}, "float32"))
  local w = dp.var("w", T({4, 4, 1, 1}, "float32"))
  local b = dp.var("b", T({4}, "float32"))
  local e, skip, n, block = x, x, 0, 0
  while n < calls do
    e = dp.call("nn.relu", {dp.call("nn.bias_add", {dp.call("nn.conv2d", {e, w}), b})})
    n, block = n + 3, block + 1
    if block % 4 == 0 then
      e = dp.call("add", {e, skip})
      skip, n = e, n + 1
    end
  end
  return dp.infer_type(dp.IRModule{functions = {{"main", dp.fn({x, w, b}, e)}}}), n
end

local W = P.wild
local rules = {
  {name = "conv2d_bias_relu", pattern = P.op("nn.relu")(P.op("nn.bias_add")(P.op("nn.conv2d")(W(), W()), W()))},
  {name = "conv2d_bias", pattern = P.op("nn.bias_add")(P.op("nn.conv2d")(W(), W()), W())},
  {name = "add_relu", pattern = P.op("nn.relu")(P.op("add")(W(), W()))},
  {name = "dense", pattern = P.op("nn.dense")(W(), W())},
  {name = "elemwise", pattern = P.op_kind("elemwise")(W())},
}
local NPU = dp.VirtualDevice{device_type = "ext_dev"}
for _, r in ipairs(rules) do
  P.compile(r.pattern)
  r.device = NPU
end

local build_s, mod, calls = time(function() return model(CALLS) end)
local body = mod.main.body
local C = require("devplan.core").pattern

local rows = {}
local function row(what, groups, seconds) rows[#rows + 1] = {what, groups, seconds} end

local graph_s, graph = time(function() return C.graph(body) end)
local match_s, found = time(function()
  local g, n = C.graph(body), 0
  for _, r in ipairs(rules) do n = n + #P.compile(r.pattern):groups(body, nil, nil, g) end
  return n
end)
row("match 5 rules", found, match_s)
row("graph", "", graph_s)
graph = nil
local find_s, list = time(function() return rules[1].pattern:find(body) end)
row("find rule 1", #list, find_s)
list = nil
local ma_s = time(function() return dp.passes.MergeAndAnnotate(rules)(mod) end)
row("MergeAndAnnotate", "", ma_s)
local mc_s = time(function() return dp.passes.MergeComposite(rules)(mod) end)
row("MergeComposite", "", mc_s)

print(("module: %d calls (built and typed in %.2f s)"):format(calls, build_s))
print(("%-18s %10s %9s"):format("", "groups", "seconds"))
for _, r in ipairs(rows) do print(("%-18s %10s %9.3f"):format(r[1], tostring(r[2]), r[3])) end
