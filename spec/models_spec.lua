-- The two real models: planning NAME.annotated.relay gives NAME.planned.relay
-- (TVM's output) and planning the planned module changes nothing.
local dp = require "devplan"
local testing = require "devplan.testing"

local DIR = testing.shared_dir .. "/models/"
local read = testing.read_file

describe("models", function()
  local config = testing.config("cpu")
  local plan = testing.plan(config)
  for _, name in ipairs{"resnet18", "dcgan"} do
    it(name .. " plans as TVM did", function()
      assert.plans_to(read(DIR .. name .. ".annotated.relay"), read(DIR .. name .. ".planned.relay"),
                      config, testing.META)
    end)
    it(name .. ": planning the planned module changes nothing", function()
      local expected = dp.parse(read(DIR .. name .. ".planned.relay"), testing.META)
      assert.structurally_equal(plan(expected), expected)
    end)
  end
end)
