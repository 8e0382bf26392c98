-- Issue 3's memory rule: immutable nodes are shared between modules and
-- freed when unreachable, so repeating a transformation 1,000 times in a
-- loop (each result dropping the previous one) keeps memory flat: the live
-- interned types and virtual devices return to their baseline and RSS stays
-- within a bound.
local dp = require "devplan"
local testing = require "devplan.testing"

local ROUNDS = 1000

-- RSS is nil under valgrind and ASan (testing.instrumented); the counts
-- are checked everywhere.
local rss_kb, settle = testing.rss_kb, testing.settle

-- CALLS calls in a chain, an on_device every 10th alternating CPU and GPU.
local CALLS = os.getenv("DEVPLAN_QUICK") and 40 or 200
local function program()
  local lines = {}
  for i = 0, CALLS - 1 do
    local prev = i == 0 and "%a" or ("%" .. (i - 1))
    local call = ("%s(%s, %%b)"):format(i % 2 == 0 and "add" or "multiply", prev)
    if i % 10 == 9 then
      call = ("on_device(%s, virtual_device=meta[VirtualDevice][%d])"):format(call, (i // 10) % 2)
    end
    lines[#lines + 1] = ("  %%%d = %s;"):format(i, call)
  end
  return '#[version = "0.0.5"]\ndef @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {\n' ..
         table.concat(lines, "\n") .. "\n  %" .. (CALLS - 1) .. "\n}\n"
end

-- Every add becomes a multiply and every multiply an add: each round
-- rebuilds every call node (on_device calls are kept as they are).
local SWAP = {add = "multiply", multiply = "add"}
local function swap_calls(mod)
  return dp.rewrite(mod, {call = function(c)
    local to = c.callee.kind == "op" and SWAP[c.callee.name]
    if to then return dp.call(to, c.args) end
  end})
end

-- Runs step ROUNDS times, each on the previous result, keeping only the
-- latest; returns the RSS after a warm-up tenth and at the end.
local function repeat_flat(mod, step)
  local cur = mod
  local warm
  for i = 1, ROUNDS do
    cur = step(cur, i)
    if i % 50 == 0 then settle() end
    if i == ROUNDS // 10 then warm = rss_kb() end
  end
  cur = nil
  settle()
  return warm, rss_kb()
end

-- Parses the program, gives it to run (which returns the RSS pair of
-- repeat_flat), then checks that the live types, virtual devices and
-- targets are those of the parsed module alone, that RSS stayed within a
-- bound, and that dropping the module returns the counts to the baseline.
local function check_flat(run)
  settle()
  local base = dp.debug.counts()
  local mod = dp.parse(program(), testing.META)
  settle()
  local with_mod = dp.debug.counts()
  local warm, final = run(mod)
  assert.same(with_mod, dp.debug.counts())
  if warm and final then
    assert.is_true(final - warm < 4 * 1024, ("RSS grew from %d KiB to %d KiB"):format(warm, final))
  end
  mod = nil
  settle()
  assert.same(base, dp.debug.counts())
end

describe("memory under repeated transformations", function()
  local plan = testing.plan(testing.config("cpu"))

  it("rewrites every call " .. ROUNDS .. " times with flat memory", function()
    check_flat(function(mod)
      return repeat_flat(mod, function(cur, i)
        local r = swap_calls(cur)
        assert(r.main.body ~= cur.main.body)
        if i == ROUNDS then
          -- an even number of swaps gives back the original program
          assert.structurally_equal(mod, r)
        end
        return r
      end)
    end)
  end)

  it("re-plans " .. ROUNDS .. " times with flat memory", function()
    check_flat(function(mod)
      local copies = testing.count_calls(plan(mod), "device_copy")
      assert.is_true(copies > 0)
      return repeat_flat(mod, function(cur)
        -- plan a fresh rewrite of the previous result (changing every
        -- call), so each round builds, infers and plans new nodes
        local planned = plan(swap_calls(cur))
        assert.equal(copies, testing.count_calls(planned, "device_copy"))
        return planned
      end)
    end)
  end)

  it("drops the fresh types and virtual devices of each round", function()
    check_flat(function(mod)
      return repeat_flat(mod, function(_, i)
        -- a new tensor type and a new virtual device per round, held by the
        -- round's result (the parameters' annotations, the on_device
        -- attributes): both are interned, and must leave their tables when
        -- the result is dropped
        local ty = dp.type.tensor({i, 7})
        local vd = dp.VirtualDevice{device_type = "cpu", virtual_device_id = i}
        local a, b = dp.var("a", ty), dp.var("b", ty)
        local body = dp.rewrite(mod.main.body, {
          var = function(v) return v.name == "a" and a or b end,
          call = function(c)
            if c.callee.kind == "op" and c.callee.name == "add" then
              return dp.call("on_device", {c}, {virtual_device = vd})
            end
          end})
        local r = dp.IRModule{functions = {{"main", dp.fn({a, b}, body)}}}
        dp.infer_type(r)
        assert.equal(tostring(ty), tostring(r.main.body.checked_type))
        return r
      end)
    end)
  end)
end)
