-- The properties every input must have, checked on Relay text by the
-- program generator's runner (fuzz/gen_run.lua), the coverage-guided
-- fuzzer's harness (fuzz/fuzz_text.c) and the suite's specs:
--
--   local props = require "props"                 -- fuzz/ on package.path
--   local checker = props.checker()               -- the palette below, or {meta =, config =}
--   local failure = checker:check(text, {orders = {text2, ...}})
--   -- nil when every property holds, else {property =, detail =}
--
-- Properties (the names failures carry):
--   raw-error        parsing, printing and planning give a result or a devplan.Error,
--                    never another error (a raw Lua error is a bug)
--   error-position   a syntax, name or type error in text names its line and column
--   roundtrip-input  the parsed module prints, re-parses without a metatable to a
--                    structurally equal module, and prints the same again
--   strict-default   where strict planning ({resolve_conflicts = false}) succeeds,
--                    default planning succeeds with the same module
--   idempotence      planning a planned module again changes nothing (both modes)
--   roundtrip-output the planned module re-parses to itself and prints the same
--   determinism      parsing and planning the text again gives the same text (the
--                    planned module's or the error's), whether or not Lua holds
--                    every node of the module, or some of them
--   order            the same program with its definitions in another order plans
--                    every function the same (or fails the same way)
--   read-anywhere    where TVM's phase 0b alone ({resolve_conflicts = "tvm"}) plans,
--                    the default plans the same text ("computed here, read anywhere"
--                    only turns conflicts into plans)
--   conflict         a conflict error names two distinct positions
--   plan-error       (opts.only_conflicts: texts that use the palette's devices only, as
--                    generated ones) planning a module that parsed fails only with a conflict
--   verify           dp.planner.verify(planned, config, input) accepts the planned
--                    module, and every annotation of the input holds in it
--   min-bytes        placement by cost (PlanDevices {placement = "min_bytes"}) gives a
--                    plan or a conflict; the plan verifies against the input, TVM's
--                    rules and min_bytes both plan it to itself, and the same text
--                    plans the same again (also with Lua holding every node)
local dp = require "devplan"

local M = {}

-- ------------------------------------------------------------ the palette

-- The conformance palette (devplan.testing), plus an opencl device so that
-- programs can use three device types.
local testing = require "devplan.testing"
local T, P = testing.TARGET, testing.PALETTE
local OPENCL_T = dp.Target("opencl"):with_host(T.HOST)

-- meta[VirtualDevice][i] as fuzz/relaygen.lua writes them (0 cpu, 1 cuda, 2 and 3 scoped, 4 opencl).
M.META = {
  VirtualDevice = {
    P.CPU, P.GPU, P.CPU_SCOPE_A, P.GPU_SCOPE_GLOBAL,
    dp.VirtualDevice{device_type = "opencl", virtual_device_id = 0, target = OPENCL_T},
  },
  ["relay.Constant"] = {dp.const({{1, 2}, {3, 4}}, "float32"), dp.const({5, 7}, "int64")},
}

M.CONFIG = testing.config("cuda", {"CPU", "GPU", OPENCL_T})

-- ------------------------------------------------------------ helpers

local function is_error(v)
  return type(v) == "table" and type(v.code) == "string" and type(v.message) == "string"
end

local function describe(v)
  if is_error(v) then return "devplan.Error(" .. v.code .. "): " .. tostring(v) end
  return type(v) .. ": " .. tostring(v)
end

-- Runs f(...) protected: "ok", result | "error", devplan.Error | raises a failure.
local Fail = {}
local function fail(property, detail)
  error(setmetatable({property = property, detail = detail}, Fail), 0)
end

local function attempt(what, f, ...)
  local ok, res = pcall(f, ...)
  if ok then return "ok", res end
  if getmetatable(res) == Fail then error(res, 0) end
  if not is_error(res) then fail("raw-error", what .. ": " .. describe(res)) end
  return "error", res
end

local function positions(err)
  local seen, n = {}, 0
  local function add(line, col)
    if line and col and line > 0 then
      local k = line .. ":" .. col
      if not seen[k] then seen[k] = true; n = n + 1 end
    end
  end
  add(err.line, err.col)
  for _, note in ipairs(err.notes or {}) do add(note.line, note.col) end
  for l, c in tostring(err):gmatch(":(%d+):(%d+)") do add(tonumber(l), tonumber(c)) end
  return n
end

local function same_error(a, b)
  return a.code == b.code
end

-- ------------------------------------------------------------ the checker

local Checker = {}
Checker.__index = Checker

-- opts.meta, opts.config (default: the palette above); opts.verify, a
-- function(planned, input) raising or returning a list of violations
-- (default: dp.planner.verify with the configuration and the input).
function M.checker(opts)
  opts = opts or {}
  local self = setmetatable({}, Checker)
  self.meta = opts.meta or M.META
  self.config = opts.config or M.CONFIG
  self.plan = dp.passes.PlanDevices(self.config)
  self.plan_strict = dp.passes.PlanDevices(self.config, {resolve_conflicts = false})
  self.plan_min_bytes = dp.passes.PlanDevices(self.config, {placement = "min_bytes"})
  self.plan_tvm = dp.passes.PlanDevices(self.config, {resolve_conflicts = "tvm"})
  self.verify = opts.verify
  if self.verify == nil then
    local config = self.config
    self.verify = function(planned, input) return (dp.planner.verify(planned, config, {input = input})) end
  end
  return self
end

function Checker:parse(what, text, meta)
  local kind, res = attempt(what, dp.parse, text, meta)
  if kind == "error" and (res.code == "syntax" or res.code == "name" or res.code == "type")
      and not (res.line and res.line > 0) then
    fail("error-position", what .. ": " .. describe(res))
  end
  return kind, res
end

function Checker:print(what, mod)
  local _, s = attempt(what, tostring, mod)
  if type(s) ~= "string" then fail("raw-error", what .. " printed as " .. type(s)) end
  return s
end

-- m prints, re-parses (no metatable) to an equal module, which prints the same.
function Checker:roundtrip(property, mod)
  local s1 = self:print(property .. " print", mod)
  local kind, m2 = self:parse(property .. " re-parse", s1, nil)
  if kind == "error" then fail(property, "printed text does not parse: " .. tostring(m2) .. "\n" .. s1) end
  if not dp.structural_equal(mod, m2) then
    local _, diff = pcall(dp.assert_structural_equal, m2, mod)
    fail(property, "re-parsed module differs: " .. tostring(diff))
  end
  local s2 = self:print(property .. " print again", m2)
  if s1 ~= s2 then fail(property, "prints differently after re-parsing:\n" .. s1 .. "\n---\n" .. s2) end
  return s1
end

function Checker:verified(planned, input, what)
  local ok, res = pcall(self.verify, planned, input)
  if not ok then fail("verify", what .. ": " .. describe(res)) end
  if type(res) == "table" and not is_error(res) and #res > 0 then
    local lines = {}
    for i, v in ipairs(res) do lines[i] = tostring(type(v) == "table" and (v.message or v.text) or v) end
    fail("verify", what .. ": " .. table.concat(lines, "\n"))
  end
end

function Checker:idempotent(pass, planned, what)
  local kind, again = attempt(what .. " re-plan", pass, planned)
  if kind == "error" then fail("idempotence", what .. ": planning the output again fails: " .. tostring(again)) end
  if not dp.structural_equal(again, planned) then
    local _, diff = pcall(dp.assert_structural_equal, again, planned)
    fail("idempotence", what .. ": planning the output again changes it: " .. tostring(diff))
  end
end

-- Plans mod in one mode: "ok", planned | "error", err; checks the output.
function Checker:plan_mode(pass, mod, what)
  local kind, res = attempt(what, pass, mod)
  if kind == "error" then
    if res.code == "conflict" and positions(res) < 2 then
      fail("conflict", what .. ": a conflict naming fewer than two positions: " .. tostring(res))
    end
    return kind, res
  end
  self:roundtrip("roundtrip-output", res)
  self:idempotent(pass, res, what)
  self:verified(res, mod, what)
  return kind, res
end

-- Placement by cost: a plan or a conflict; the plan verified, a fixed point
-- of TVM's rules and of itself, the same from the same text.
function Checker:min_bytes(mod, text)
  local kind, planned = attempt("plan min_bytes", self.plan_min_bytes, mod)
  if kind == "error" then
    if planned.code ~= "conflict" then
      fail("min-bytes", "a " .. planned.code .. " error, not a conflict: " .. tostring(planned))
    end
    return
  end
  local ok, why = pcall(self.verified, self, planned, mod, "plan min_bytes")
  if not ok then fail("min-bytes", tostring(type(why) == "table" and why.detail or why)) end
  for _, p in ipairs{{self.plan, "TVM's rules"}, {self.plan_min_bytes, "min_bytes"}} do
    local k2, again = attempt("plan min_bytes again", p[1], planned)
    if k2 == "error" then fail("min-bytes", p[2] .. " fail on the min_bytes plan: " .. tostring(again)) end
    if not dp.structural_equal(again, planned) then
      local _, diff = pcall(dp.assert_structural_equal, again, planned)
      fail("min-bytes", p[2] .. " change the min_bytes plan: " .. tostring(diff))
    end
  end
  local first = self:outcome_text(kind, planned)
  for _, hold in ipairs{"none", "all"} do
    if self:plan_held(self.plan_min_bytes, text, hold) ~= first then
      fail("min-bytes", ("planning the same text again with min_bytes (Lua holding %s of its nodes) differs"):format(hold))
    end
  end
end

-- What planning gave, as text: the planned module's, or the error's.
function Checker:outcome_text(kind, res)
  if kind == "ok" then return "planned:\n" .. self:print("print", res) end
  return "error: " .. tostring(res)
end

-- The outcome text of pass on text parsed afresh while Lua holds its nodes:
-- "none", "all", or "some" (every other node in visiting order, the shared
-- ones among them).
function Checker:plan_held(pass, text, hold)
  local _, mod = self:parse("parse again", text, self.meta)
  local held, i = {}, 0
  if hold ~= "none" then
    dp.visit(mod, function(e)
      i = i + 1
      if hold == "all" or i % 2 == 0 then held[#held + 1] = e end
    end)
  end
  local kind, res = attempt("plan again", pass, mod)
  return self:outcome_text(kind, res), #held
end

local function by_function(mod)
  local out = {}
  for _, f in ipairs(mod:functions()) do out[f[1]] = f[2] end
  return out
end

-- The properties of one text; opts.orders: the same program written with
-- its definitions in other orders; opts.only_conflicts: see plan-error.
function Checker:run(text, opts)
  opts = opts or {}
  local kind, mod = self:parse("parse", text, self.meta)
  if kind == "error" then return {outcome = "parse-error", error = mod} end
  self:roundtrip("roundtrip-input", mod)
  local dkind, planned = self:plan_mode(self.plan, mod, "plan")
  local skind, strict = self:plan_mode(self.plan_strict, mod, "plan strict")
  for _, r in ipairs{{dkind, planned, "plan"}, {skind, strict, "plan strict"}} do
    if opts.only_conflicts and r[1] == "error" and r[2].code ~= "conflict" then
      fail("plan-error", r[3] .. ": a " .. r[2].code .. " error, not a conflict: " .. tostring(r[2]))
    end
  end
  if skind == "ok" then
    if dkind ~= "ok" then fail("strict-default", "strict planning succeeds, default fails: " .. tostring(planned)) end
    if not dp.structural_equal(strict, planned) then
      local _, diff = pcall(dp.assert_structural_equal, strict, planned)
      fail("strict-default", "strict and default plans differ: " .. tostring(diff))
    end
  end
  -- TVM's phase 0b alone: where it plans, "read anywhere" changes nothing
  local tkind, by_tvm = attempt("plan tvm", self.plan_tvm, mod)
  if tkind == "ok" and (dkind ~= "ok" or self:print("print", by_tvm) ~= self:print("print", planned)) then
    fail("read-anywhere", "TVM's phase 0b alone plans, the default differs:\n"
      .. self:print("print", by_tvm) .. "\n---\n" .. describe(planned))
  end
  self:min_bytes(mod, text)
  -- the same text again, parsed and planned afresh: with no node held, then
  -- with Lua holding every node, then some (nothing a caller can change by
  -- holding a node, a reference count, may change a plan or an error)
  local first = self:outcome_text(dkind, planned)
  for _, hold in ipairs{"none", "all", "some"} do
    local again = self:plan_held(self.plan, text, hold)
    if again ~= first then
      fail("determinism", ("planning the same text again (Lua holding %s of its nodes) differs:\n"):format(hold)
        .. first .. "\n---\n" .. again)
    end
  end
  for i, other in ipairs(opts.orders or {}) do
    local okind, omod = self:parse("parse order " .. i, other, self.meta)
    if okind == "error" then fail("order", "reordered text does not parse: " .. tostring(omod)) end
    local pkind, oplanned = attempt("plan order " .. i, self.plan, omod)
    if pkind ~= dkind or (pkind == "error" and not same_error(planned, oplanned)) then
      fail("order", ("definition order %d: %s, in the original order: %s"):format(i, describe(oplanned), describe(planned)))
    end
    if pkind == "ok" then
      local a, b = by_function(planned), by_function(oplanned)
      for name, f in pairs(a) do
        if not dp.structural_equal(f, b[name]) then
          local _, diff = pcall(dp.assert_structural_equal, b[name], f)
          fail("order", ("definition order %d plans @%s differently: %s"):format(i, name, tostring(diff)))
        end
      end
    end
  end
  return {outcome = dkind == "ok" and "planned" or ("plan-" .. planned.code), strict = skind}
end

-- nil when every property holds, else {property =, detail =}; the second
-- result says what happened ({outcome = "planned" | "parse-error" | "plan-conflict" ...}).
function Checker:check(text, opts)
  local ok, res = pcall(self.run, self, text, opts)
  if ok then return nil, res end
  if getmetatable(res) == Fail then return {property = res.property, detail = res.detail} end
  return {property = "raw-error", detail = "inside the checker: " .. describe(res)}
end

-- ------------------------------------------------------------ placement by cost, exactly

-- A program of fuzz/relaygen_dataflow.lua against the least bytes brute
-- force finds (df.brute): placement by cost plus ShareCopies copies exactly
-- that many with two devices, at least that many and never more than TVM's
-- rules with three (alpha-expansion: place_solve.c), and plans exactly when
-- some placement exists (else a conflict); TVM's rules, where they plan,
-- never copy fewer. nil when all holds, else {property = "min-bytes-exact",
-- detail =}; the second result: {best =, min_bytes =, tvm =} (bytes, nil
-- when there is no plan).
local share = dp.passes.ShareCopies()
local configs = {}

local function dataflow_config(prog)
  local key = prog.devices .. ":" .. prog.default
  if not configs[key] then
    local targets = {"CPU", "GPU"}
    if prog.devices == 3 then targets[3] = OPENCL_T end
    configs[key] = testing.config(prog.default == 1 and "cpu" or "cuda", targets)
  end
  return configs[key]
end

function M.check_placement(prog, df)
  local config = dataflow_config(prog)
  local mod = dp.parse(prog.text, M.META)
  local best = df.brute(prog)
  local okm, mb = pcall(dp.passes.PlanDevices(config, {placement = "min_bytes"}), mod)
  local okt, tvm = pcall(dp.passes.PlanDevices(config), mod)
  local function bytes(m) return dp.planner.report(share(m), config).totals.bytes_copied end
  local info = {best = best, min_bytes = okm and bytes(mb) or nil, tvm = okt and bytes(tvm) or nil}
  local function failed(why)
    return {property = "min-bytes-exact", detail = why .. " (seed " .. prog.seed .. ", " .. prog.devices
      .. " devices: brute force " .. tostring(best) .. ", min_bytes " .. tostring(info.min_bytes) .. ", TVM's rules "
      .. tostring(info.tvm) .. ")\n" .. prog.text}, info
  end
  for _, r in ipairs{{okm, mb}, {okt, tvm}} do
    if not r[1] and not (is_error(r[2]) and r[2].code == "conflict") then
      return failed("planning fails with " .. describe(r[2]))
    end
  end
  if not best then
    if okm then return failed("no placement exists, min_bytes plans") end
    if okt then return failed("no placement exists, TVM's rules plan") end
    return nil, info
  end
  if not okm then return failed("min_bytes raises a conflict where a placement exists: " .. tostring(mb)) end
  local _, total = dp.planner.verify(mb, config, {input = mod})
  if total > 0 then return failed("the min_bytes plan does not verify") end
  if info.min_bytes < best then return failed("min_bytes copies fewer bytes than brute force (its model is off)") end
  if prog.devices == 2 and info.min_bytes > best then return failed("min_bytes copies more than the minimum") end
  if okt and info.tvm < best then return failed("TVM's rules copy fewer bytes than brute force (its model is off)") end
  if okt and info.min_bytes > info.tvm then return failed("min_bytes copies more than TVM's rules") end
  return nil, info
end

-- For a reproducer script (fuzz/findings/): checks each text with the
-- palette above; prints what failed and exits 1, or prints "ok" and exits
-- 0. A text that does not parse is a broken reproducer (exit 2).
function M.main(...)
  local checker, status = M.checker(), 0
  for i, text in ipairs{...} do
    local failure, res = checker:check(text, {only_conflicts = true})
    if failure then
      print(("FAILED (text %d) %s: %s"):format(i, failure.property, failure.detail))
      status = 1
    elseif res.outcome == "parse-error" then
      print(("text %d does not parse: %s"):format(i, tostring(res.error)))
      os.exit(2)
    else
      print(("ok (text %d): %s"):format(i, res.outcome))
    end
  end
  os.exit(status)
end

return M
