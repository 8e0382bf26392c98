-- Conflicting demands on values nobody annotated: branchy-naive of
-- ../shared/bench/gen_relay.py (text from bench/gen.lua), a DAG whose
-- unannotated values are demanded on the CPU and on the GPU. For each size:
-- parse, then strict planning (PlanDevices with {resolve_conflicts = false},
-- which must reject the module with a conflict naming both constraints with
-- positions) and default planning (TVM's semantics: phase 0b inserts
-- copies). Prints CPU seconds (os.clock), the outcome and the error's
-- first line. Strict planning must be "error (conflict)" at every size.
-- (TVM crashes in its conflict step from 1,000 calls; bench/README.md.)
--
-- Then every conflict at once: gen.conflicts(N), N independent conflicts (a
-- let chain of 2N lets), planned stopping at the first (PlanDevices, TVM's
-- behaviour) and with {all_conflicts = true}, which must list all N in
-- err.errors, in time linear in N.
--
-- Usage: bin/devplan bench/conflict.lua [N ...]   (default 1000 10000 100000)
local dp = require "devplan"
local gen = dofile((arg and arg[0] and arg[0]:match("^(.*/)") or "bench/") .. "gen.lua")

local testing = require "devplan.testing"

local META = testing.META
local config = testing.config("cuda")
local strict = dp.passes.PlanDevices(config, {resolve_conflicts = false})
local default = dp.passes.PlanDevices(config)

local function timed(f, ...)
  collectgarbage()
  local t0 = os.clock()
  local ok, res = pcall(f, ...)
  return os.clock() - t0, ok, res
end

local function copies(mod) return testing.count_calls(mod, "device_copy") end

local function first_line(err) return (tostring(err):match("^[^\n]*")) end

local sizes = {}
for _, s in ipairs(arg or {}) do sizes[#sizes + 1] = assert(tonumber(s), "sizes must be numbers") end
if #sizes == 0 then sizes = {1000, 10000, 100000} end

print("| N | planning | parse s | plan s | outcome | error's first line |")
print("|---:|---|---:|---:|---|---|")
for _, n in ipairs(sizes) do
  local text = gen["branchy-naive"](n)
  local tp, pok, mod = timed(dp.parse, text, META, {source_name = "branchy-naive-" .. n .. ".relay"})
  if not pok then error(mod, 0) end
  text = nil -- luacheck: ignore (frees the text before planning)
  for _, mode in ipairs{{"strict", strict}, {"default", default}} do
    local t, ok, res = timed(mode[2], mod)
    local outcome, line
    if ok then
      outcome, line = "planned, " .. copies(res) .. " copies", ""
    else
      outcome, line = "error (" .. tostring(type(res) == "table" and res.code or "lua") .. ")", first_line(res)
    end
    res = nil -- luacheck: ignore
    print(string.format("| %d | %s | %.3f | %.3f | %s | %s |", n, mode[1], tp, t, outcome, line))
    io.stdout:flush()
  end
end

print()
print("| N conflicts | parse s | first conflict s | all conflicts s | err.errors |")
print("|---:|---:|---:|---:|---:|")
local first = dp.passes.PlanDevices(config)
local all = dp.passes.PlanDevices(config, {all_conflicts = true})
for _, n in ipairs(sizes) do
  local tp, pok, mod = timed(dp.parse, gen.conflicts(n), META, {source_name = "conflicts-" .. n .. ".relay"})
  if not pok then error(mod, 0) end
  local t1, ok1 = timed(first, mod)
  local t2, ok2, err = timed(all, mod)
  assert(not ok1 and not ok2, "conflicts(n) must be rejected")
  local listed = type(err) == "table" and err.errors and #err.errors or 0
  print(string.format("| %d | %.3f | %.3f | %.3f | %d |", n, tp, t1, t2, listed))
  io.stdout:flush()
end
