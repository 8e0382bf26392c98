-- The printer's one walk (a body of one scope: a DAG of calls, tuples and
-- projections under a let chain, src/core/print.c's flat_print) prints the
-- text its three passes print, byte for byte. The three passes still print
-- everything else, and every text when names are asked for (dp.astext's
-- names = true), so that option is the reference here: the same text with
-- and without it, on the models, the generated workloads (parsed and
-- planned) and generated programs, with every print option; and bodies that
-- turn out not to be one scope late (after a megabyte of text) or that hold
-- their let values elsewhere.
local dp = require "devplan"
local t = require "devplan.testing"
local gen = dofile(dp.root .. "/bench/gen.lua")
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
local relaygen = require "relaygen"
local props = require "props"

local OPTIONS = {{}, {types = true}, {short_devices = true}, {meta = true}, {spans = true},
                 {param_lines = true}}

-- The text of x with options o, printed by the three passes.
local function three_passes(x, o)
  local with = {names = true}
  for k, v in pairs(o) do with[k] = v end
  return (dp.astext(x, with))
end

local function same(x, what)
  for _, o in ipairs(OPTIONS) do
    local a, b = dp.astext(x, o), three_passes(x, o)
    if a ~= b then
      local at = 1
      while a:sub(at, at) == b:sub(at, at) do at = at + 1 end
      error(("%s: the one walk's text differs from the three passes' at byte %d:\n%s\n--- vs ---\n%s")
        :format(what, at, a:sub(math.max(1, at - 80), at + 80), b:sub(math.max(1, at - 80), at + 80)))
    end
  end
end

teardown(function() t.remove_temp_files() end)

describe("the printer's one walk", function()
  it("prints the models as the three passes do, parsed and planned", function()
    local config = t.config("cuda")
    for _, name in ipairs{"resnet18", "lstm", "dcgan", "mobilenet", "squeezenet", "synthetic", "mlp"} do
      local mod = dp.parse(t.read_file(t.model(name)), t.META)
      same(mod, name)
      same(dp.passes.PlanDevices(config)(mod), name .. " planned")
    end
  end)

  it("prints the workloads as the three passes do, parsed and planned", function()
    local config = t.config("cuda")
    for _, shape in ipairs{"chain", "let", "branchy"} do
      local mod = dp.parse(shape == "branchy" and gen.branchy(3000) or gen[shape](3000), t.META)
      same(mod, shape)
      same(dp.passes.PlanDevices(config)(mod), shape .. " planned")
    end
  end)

  it("prints generated programs and their expressions as the three passes do", function()
    for seed = 1, 150 do
      local ok, mod = pcall(dp.parse, relaygen.text(relaygen.program(seed)), props.META)
      if ok then
        same(mod, "relaygen " .. seed)
        local okp, planned = pcall(dp.passes.PlanDevices(props.CONFIG), mod)
        if okp then same(planned, "relaygen " .. seed .. " planned") end
        local k = 0
        dp.visit(mod, function(e)
          k = k + 1
          if k % 13 == 1 and e.kind ~= "op" and e.kind ~= "constructor" then same(e, "relaygen " .. seed .. " expression") end
        end)
      end
    end
  end)

  it("gives a body that is not one scope to the three passes, however late that shows", function()
    -- 60,000 lets (about 2 MB of text: written out from 1 MB on), then an
    -- if, a function, a let in a call, a shared let value
    local tails = {
      "if (True) { %x59999 } else { negative(%x59999) }",
      "fn (%y: Tensor[(5, 7), float32]) { add(%y, %x59999) }",
      "add((let %z = negative(%x59999); %z), %a)",
      "%0 = negative(%x59999);\n  let %w = %0;\n  add(%w, %0)",
    }
    for i, tail in ipairs(tails) do
      local lines = {'#[version = "0.0.5"]\ndef @main(%a: Tensor[(5, 7), float32]) {\n'}
      for k = 0, 59999 do
        lines[#lines + 1] = ("  let %%x%d = add(%s, %%a);\n"):format(k, k == 0 and "%a" or "%x" .. (k - 1))
      end
      lines[#lines + 1] = "  " .. tail .. "\n}\n"
      local mod = dp.parse(table.concat(lines), t.META)
      local text = dp.astext(mod)
      assert.equal(three_passes(mod, {}), text)
      local path = t.temp_file("")
      assert.is_true(dp.write_file(path, mod))
      assert(t.read_file(path) == text, "tail " .. i .. ": dp.write_file's text differs from dp.astext's")
    end
  end)

  it("names variables as the three passes do when their lets are odd", function()
    local T = dp.type.tensor({5, 7}, "float32")
    local function module()
      local a = dp.var("a", T)
      local x, y = dp.var("x"), dp.var("x1")
      -- a variable used in its own value, one bound by two lets, and names
      -- that collide with generated ones (x, x1, then another x)
      local x2 = dp.var("x")
      local body = dp.let(x, dp.call("negative", {x}),
        dp.let(y, a, dp.let(y, dp.call("add", {a, a}), dp.let(x2, dp.call("add", {a, y}), x2))))
      return dp.IRModule{functions = {{"main", dp.fn({a}, body)}}}
    end
    local mod = module()
    collectgarbage()
    collectgarbage() -- (the Lua handles gone: every node is held once, as parsed)
    same(mod, "odd lets")
    assert.truthy(dp.astext(mod):find("let %x1 = %a;", 1, true))
    assert.truthy(dp.astext(mod):find("let %x2 = add(%a, %x1);", 1, true))
  end)
end)
