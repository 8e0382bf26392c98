-- Errors a user reads name what the user did: the --rules file they gave
-- (not a pipeline the command wrote for them), what a rules file raised
-- (not "table: 0x..."), a folder given as a model, a constant that does not
-- fit its dtype.
local dp = require "devplan"
local t = require "devplan.testing"

local MODEL = t.temp_file(t.SMALL_MODULE)

local function rules(text) return t.temp_file(text, ".lua") end

describe("devplan plan --rules", function()
  it("names the --rules file in errors, with no pipeline text", function()
    local cases = {
      {"return 42", "it returned a number"},
      {"error({code = 1})", "an error value that is a table, not a message"},
      {"error(setmetatable({}, {__tostring = function() return 'my own message' end}))", "my own message"},
      {"error({message = 'a table with a message'})", "a table with a message"},
      {"return {1, 2}", "item 1 of the returned list is a number, not a pass"},
      {"this is not Lua", "cannot load rules: "},
    }
    for _, c in ipairs(cases) do
      local file = rules(c[1])
      local code, out, err = t.run_devplan("plan " .. MODEL .. " --rules " .. file)
      assert.equal(1, code, c[1])
      assert.equal("", out)
      assert.truthy(err:find("^devplan plan: %-%-rules " .. file:gsub("%p", "%%%0") .. ": "), err)
      assert.truthy(err:find(c[2], 1, true), c[1] .. "\n" .. err)
      assert.falsy(err:find("pipeline", 1, true), err)
      assert.falsy(err:find("annotate(", 1, true), err)
      assert.falsy(err:find("table: 0x", 1, true), err)
    end
  end)

  it("names the right file of several", function()
    local good = rules([[
local dp = require "devplan"
return dp.passes.AnnotateVirtualDevices{negative = function() return dp.VirtualDevice{device_type = "cuda"} end}
]])
    local bad = rules("return 'not a pass'")
    local code, _, err = t.run_devplan("plan " .. MODEL .. " --rules " .. good .. " --rules " .. bad)
    assert.equal(1, code)
    assert.truthy(err:find("devplan plan: --rules " .. bad .. ": ", 1, true), err)
    code = t.run_devplan("plan " .. MODEL .. " --rules " .. good)
    assert.equal(0, code)
  end)

  it("says what a rule raised while the pass runs", function()
    local file = rules([[
local dp = require "devplan"
return dp.passes.AnnotateVirtualDevices{negative = function() error({reason = 1}) end}
]])
    local code, _, err = t.run_devplan("plan " .. MODEL .. " --rules " .. file)
    assert.equal(1, code)
    assert.truthy(err:find("an error value that is a table, not a message", 1, true), err)
    assert.falsy(err:find("table: 0x", 1, true), err)
  end)
end)

describe("errors of the Lua API", function()
  it("dp.parse_file on a folder says it cannot read the folder", function()
    local ok, err = pcall(dp.parse_file, "/tmp")
    assert.is_false(ok)
    assert.equal("devplan.parse_file: cannot read /tmp: Is a directory", tostring(err):gsub("^[^:]*:%d+: ", ""))
    local code, _, cerr = t.run_devplan("plan /tmp")
    assert.equal(1, code)
    assert.equal("devplan: cannot read /tmp: Is a directory\n", cerr)
  end)

  it("dp.const says which element does not fit its dtype, and what the dtype holds", function()
    local function message(...)
      local ok, err = pcall(dp.const, ...)
      assert.is_false(ok)
      return (tostring(err):gsub("^[^:]*:%d+: ", ""))
    end
    assert.equal("dp.const: the value is 300: int8 holds integers from -128 to 127", message(300, "int8"))
    assert.equal("dp.const: element [2] is 300: int8 holds integers from -128 to 127", message({1, 300}, "int8"))
    assert.equal("dp.const: element [2][1] is -1: uint8 holds integers from 0 to 255",
                 message({{1}, {-1}}, "uint8"))
    assert.equal("dp.const: the value is 1.5, not an integer (dtype int32)", message(1.5, "int32"))
    assert.equal("dp.const: element [2] is a string, not a number (dtype float32)", message({1, "x"}))
    assert.equal("dp.const: element [2] has 1 elements where the first has 2 (ragged input)",
                 message({{1, 2}, {3}}, "int8"))
    assert.equal("dp.const: element [2] is a number where a list of 2 is (the first element's shape: ragged input)",
                 message({{1, 2}, 3}, "int8"))
    assert.equal(127, dp.const(127, "int8").value)
    assert.equal(-9223372036854775807 - 1, dp.const(math.mininteger, "int64").value)
  end)

  it("a callback's error value that is no message is described, not printed as an address", function()
    assert.equal("an error value that is a table, not a message", dp._error_text({}))
    assert.equal("a table with a message", dp._error_text({message = "a table with a message"}))
    assert.equal("an error with no value (error(nil))", dp._error_text(nil))
    assert.equal("12", dp._error_text(12))
  end)
end)
