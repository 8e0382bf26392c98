-- dp.astext of a large module: the printer builds the text in a block of the
-- Lua state's allocator, laid out as a Lua string, which the string then
-- takes without a copy (src/lua/l_text.c). The string must be an ordinary
-- one: the same bytes as the text written out, equal to and the same table
-- key as the same text made by Lua, and freed with the rest.
local dp = require "devplan"
local t = require "devplan.testing"
local gen = dofile(dp.root .. "/bench/gen.lua")

local read = t.read_file

teardown(function() t.remove_temp_files() end)

describe("dp.astext of a large module", function()
  local mod = dp.parse(gen.let(30000), t.META) -- (a text of about 2 MB: taken in place)
  local planned = dp.passes.PlanDevices(t.config("cuda"))(mod)

  it("is the text dp.write_file writes, an ordinary Lua string", function()
    for _, m in ipairs{mod, planned} do
      local s = dp.astext(m)
      assert.is_true(#s > 1048576)
      local path = t.temp_file("")
      assert.is_true(dp.write_file(path, m))
      local f = read(path)
      assert.is_true(s == f) -- (two long strings: compared by bytes)
      local made = s:sub(1, 1000) .. s:sub(1001) -- the same text made by Lua
      local keys = {[made] = 1}
      assert.equal(1, keys[s])
      assert.equal(s, tostring(m))
      assert.equal("#[version", s:sub(1, 9))
      assert.equal("}\n", s:sub(-2))
    end
  end)

  it("gives its names too (names = true), and every option's text", function()
    local s, names = dp.astext(planned, {names = true})
    assert.equal(dp.astext(planned), s)
    assert.is_table(names.main)
    for _, o in ipairs{{types = true}, {short_devices = true}, {meta = true}} do
      local path = t.temp_file("")
      assert.is_true(dp.write_file(path, planned, o))
      assert.is_true(dp.astext(planned, o) == read(path))
    end
  end)

  it("is freed as any string", function()
    collectgarbage()
    local before = collectgarbage("count")
    for _ = 1, 20 do local _ = dp.astext(mod) end
    collectgarbage()
    assert.is_true(collectgarbage("count") < before + 1024)
  end)
end)
