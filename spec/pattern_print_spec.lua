-- tostring of a Pattern value (src/lua/l_module.c): the same text at every
-- depth, printed with an explicit stack (no depth limit, no elision).
local dp = require "devplan"

local N = os.getenv("DEVPLAN_QUICK") and 20000 or 100000

local A = dp.type.var("A")
local list = dp.typedef("List", {A}, {
  {name = "Cons", inputs = {A, dp.type.adt("List", {A})}},
  {name = "Nil"},
})
local cons, nil_ = list.constructors[1], list.constructors[2]

describe("printing patterns", function()
  it("prints every kind", function()
    local h = dp.var("h")
    assert.equal("_", tostring(dp.pat.wild()))
    assert.equal("%h", tostring(dp.pat.var(h)))
    assert.equal("Nil", tostring(dp.pat.ctor(nil_)))
    assert.equal("Cons(%h, Nil)", tostring(dp.pat.ctor(cons, {dp.pat.var(h), dp.pat.ctor(nil_)})))
    assert.equal("()", tostring(dp.pat.tuple{}))
    assert.equal("(_,)", tostring(dp.pat.tuple{dp.pat.wild()}))
    assert.equal("(_, (%h,), Nil)", tostring(dp.pat.tuple{dp.pat.wild(), dp.pat.tuple{dp.pat.var(h)},
                                                          dp.pat.ctor(nil_)}))
  end)

  it("prints a " .. N .. "-deep tuple pattern in full", function()
    local p = dp.pat.wild()
    for _ = 1, N do p = dp.pat.tuple{p} end
    local s = tostring(p)
    assert.equal(N + 1 + 2 * N, #s)
    assert.equal(("("):rep(N) .. "_" .. (",)"):rep(N), s)
    assert.is_nil(s:find("...", 1, true))
  end)

  it("prints a " .. N .. "-deep constructor pattern in full", function()
    local h = dp.var("h")
    local p = dp.pat.ctor(nil_)
    for i = 1, N do
      p = dp.pat.ctor(cons, {i % 2 == 0 and dp.pat.var(h) or dp.pat.wild(), p})
    end
    local s = tostring(p)
    local unit_odd, unit_even = "Cons(_, ", "Cons(%h, "
    assert.equal((N // 2) * (#unit_odd + #unit_even) + (N % 2) * #unit_odd + #"Nil" + N, #s)
    assert.equal("Cons(%h, Cons(_, ", s:sub(1, 17))
    assert.equal("Nil" .. (")"):rep(N), s:sub(-(N + 3)))
  end)

  it("prints wide patterns", function()
    local subs = {}
    for i = 1, 1000 do subs[i] = dp.pat.wild() end
    assert.equal("(" .. ("_, "):rep(999) .. "_)", tostring(dp.pat.tuple(subs)))
  end)
end)
