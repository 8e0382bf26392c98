-- Deep inputs: a 1,000,000-binding chain (graph bindings and lets) parses
-- without overflowing the Lua or the C stack (20,000 with DEVPLAN_QUICK).
local dp = require "devplan"

local N = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000
local T = "Tensor[(5, 7), float32]"

local function chain(n, let)
  local out = {"def @main(%a: ", T, ", %b: ", T, ") {\n"}
  local prev = "%a"
  for i = 0, n - 1 do
    local name = (let and "x" or "") .. i
    out[#out + 1] = (let and "  let %" or "  %") .. name .. " = " .. (i % 2 == 0 and "add" or "multiply")
      .. "(" .. prev .. ", %b);\n"
    prev = "%" .. name
  end
  out[#out + 1] = "  " .. prev .. "\n}\n"
  return table.concat(out)
end

describe("deep inputs", function()
  it("parses a " .. N .. "-binding graph chain into a " .. N .. "-deep call chain", function()
    local m = dp.parse(chain(N))
    local e, depth = m["main"].body, 0
    while e.kind == "call" do
      depth = depth + 1
      e = e.args[1]
    end
    assert.are.equal(N, depth)
    assert.are.equal("a", e.name)
  end)

  it("parses a " .. N .. "-binding let chain into " .. N .. " nested lets", function()
    local m = dp.parse(chain(N, true))
    local e, depth = m["main"].body, 0
    while e.kind == "let" do
      depth = depth + 1
      e = e.body
    end
    assert.are.equal(N, depth)
    assert.are.equal("var", e.kind)
  end)

  it("reports an error at the end of a long chain with its position", function()
    local text = chain(N):gsub("%%b%);\n  %%%d+\n}\n$", "%%c);\n}\n")
    local ok, err = pcall(dp.parse, text)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("unknown variable %%c"))
    assert.are.equal(N + 1, err.line)
  end)

  it("parses genuinely nested functions (moderate depth) and reports too deep nesting", function()
    local depth = 50
    local text = "def @main(%a: " .. T .. ") {\n" .. string.rep("fn (%x: " .. T .. ") {\n", depth) .. "%a"
      .. string.rep("}\n", depth) .. "}"
    local m = dp.parse(text)
    assert.are.equal("fn", m["main"].body.kind)
    local deep = "def @main(%a: " .. T .. ") {\n" .. string.rep("(", 100000) .. "%a"
      .. string.rep(")", 100000) .. "}"
    local ok, err = pcall(dp.parse, deep)
    if not ok then
      assert.are.equal("table", type(err))
      assert.is_truthy(tostring(err):find("nested too deeply"))
    end
  end)
end)
