-- The builder's reading of a flat call (src/parse/reader.c, flat_call):
-- `name(%a, %b, ...)` ended by its statement's `;` (or the block's end) is
-- made at once, without the reader's stacks. The same call in parentheses
-- goes the general way (its first event is the `(`): both must give the
-- same module, spans included, or the same error at the same position.
local dp = require "devplan"

local T = "Tensor[(5, 7), float32]"

local function outcome(text)
  local ok, r = pcall(dp.parse, text)
  if ok then return "ok\n" .. dp.astext(r, {spans = true}) end
  if type(r) ~= "table" then return "raw error: " .. tostring(r) end
  return ("error %s:%s %s"):format(tostring(r.line), tostring(r.col), tostring(r.message))
end

local function def(body)
  return "def @main(%a: " .. T .. ", %b: " .. T .. ") {\n" .. body .. "\n}"
end

-- body with each `{...}` a call read flat, and with it in parentheses
local function same(body)
  local flat = def((body:gsub("{(.-)}", " %1 "))) -- (the same columns)
  local general = def((body:gsub("{(.-)}", "(%1)")))
  local want = outcome(general)
  assert.are.equal(want, outcome(flat), flat)
  return want
end

describe("a flat call", function()
  it("reads as the same call read the general way", function()
    local bodies = {
      "%0 = add(%a, %b);\n%1 = {add(%0, %b)};\n%2 = {multiply(%1, %0)};\n%2",
      "let %x = add(%a, %b);\nlet %y = {multiply(%x, %b)};\nlet %z = {add(%y, %x)};\n%z",
      "%0 = add(%a, %b);\n{add(%0, %a)};\n%0",
      "%0 = add(%a, %b);\n{add(%0, %a)}",
      "%0 = add(%a, %b);\n%1 = {negative(%0)};\n%2 = {zeros_like(%1)};\n%2",
      -- errors: arity, unknown names, a constructor, the operator's first use
      "%0 = add(%a, %b);\n%1 = {add(%0)};\n%1",
      "%0 = add(%a, %b);\n%1 = {add(%0, %b, %a)};\n%1",
      "%0 = add(%a, %b);\n%1 = {add(%a, %a, %a, %a, %a, %a, %a, %a, %a)};\n%1",
      "%0 = add(%a, %b);\n%1 = {add(%0, %zz)};\n%1",
      "%0 = add(%a, %b);\n%1 = {addd(%0, %b)};\n%1",
      "%0 = add(%a, %b);\n%1 = {Foo(%0, %b)};\n%1",
      "%1 = {multiply(%a, %b)};\n%1",
      "%0 = add(%a, %b);\n%1 = {add(%0, @main)};\n%1",
      -- a let's own variable in its value: the scope error of the IR
      "let %x = add(%a, %b);\nlet %y = {add(%y, %x)};\n%y",
      "%0 = add(%a, %b);\n%1 = {add(%0, %1)};\n%1",
    }
    local errors = 0
    for _, body in ipairs(bodies) do
      if same(body):sub(1, 5) == "error" then errors = errors + 1 end
    end
    assert.are.equal(9, errors)
  end)
end)
