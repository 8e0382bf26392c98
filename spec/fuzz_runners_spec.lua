-- The program runners of fuzz/ (gen_run.lua, eval_run.lua, copies_run.lua,
-- sharing fuzz/runner.lua) as a user runs them: a few programs each, the
-- summary, the exit status, and their command-line errors.
local testing = require "devplan.testing"

local function run(args)
  -- (from the project's root, where the runners' paths are)
  return testing.run_devplan(table.concat(args, " "))
end

describe("the fuzz runners", function()
  it("run a few programs and end with their count", function()
    for _, args in ipairs{
      {"fuzz/gen_run.lua", "--n", "20", "--quiet"},
      {"fuzz/gen_run.lua", "--dataflow", "--n", "10"},
      {"fuzz/eval_run.lua", "--n", "10", "--quiet"},
    } do
      local code, out = run(args)
      assert.equal(0, code, table.concat(args, " ") .. "\n" .. out)
      assert.truthy(out:find("\n%d+ passed, 0 failed\n$"), out)
    end
    for _, mode in ipairs{{}, {"--polymorphic"}, {"--recompute"}} do
      local args = {"fuzz/copies_run.lua", "--n", "10", table.unpack(mode)}
      local code, out = run(args)
      assert.equal(0, code, table.concat(args, " ") .. "\n" .. out)
      assert.truthy(out:find("^10 programs"), out)
      assert.truthy(out:find(" 0 failed", 1, true), out)
    end
  end)

  it("say what is wrong with their command line (status 2)", function()
    local code, _, err = run({"fuzz/eval_run.lua", "--n", "ten"})
    assert.equal(2, code)
    assert.truthy(err:find("eval_run: --n needs a whole number, got ten", 1, true), err)
    code, _, err = run({"fuzz/gen_run.lua", "--polymorphic"})
    assert.equal(2, code)
    assert.truthy(err:find("gen_run: unknown option --polymorphic", 1, true), err)
    code, _, err = run({"fuzz/copies_run.lua", "--seed"})
    assert.equal(2, code)
    assert.truthy(err:find("copies_run: --seed needs a value", 1, true), err)
  end)
end)
