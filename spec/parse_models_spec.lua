-- Every model of ../shared/models as TVM printed it: it parses and
-- type-checks, the types devplan infers are the types TVM wrote in its
-- `/* ty=... */` comments, and printing reads back to an equal module
-- printed the same (with and without type comments).
local dp = require "devplan"
local testing = require "devplan.testing"

local DIR = testing.shared_dir .. "/models/"
local MT = {VirtualDevice = {testing.PALETTE.CPU, testing.PALETTE.GPU}}

local function type_comments(text)
  local set = {}
  for t in text:gmatch("/%* ty=(.-) %*/") do set[t] = true end
  return set
end

local sorted_keys = testing.sorted_keys

describe("models", function()
  local names = {}
  local p = io.popen("ls " .. DIR)
  for f in p:lines() do
    if f:find("%.relay$") then names[#names + 1] = f end
  end
  p:close()

  it("finds the models", function()
    assert.is_true(#names >= 15)
  end)

  for _, f in ipairs(names) do
    it(f .. " parses with TVM's types and reads back as printed", function()
      local text = testing.read_file(DIR .. f)
      local m = dp.parse(text, MT, {source_name = f})
      assert.is_not_nil(m["main"])
      local typed = dp.astext(m, {types = true})
      assert.are.same(sorted_keys(type_comments(text)), sorted_keys(type_comments(typed)))
      for _, printed in ipairs{tostring(m), typed} do
        local back = dp.parse(printed, nil, {source_name = f .. " (printed)"})
        assert.structurally_equal(m, back)
      end
      assert.are.equal(tostring(m), tostring(dp.parse(tostring(m))))
    end)
  end
end)
