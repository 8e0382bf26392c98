-- Comments (`// line`, `/* block */`, block comments nested and over several
-- lines) wherever white space may stand, as TVM's parser accepted them.
--
-- Each text is checked against itself with every comment blanked out
-- (replaced by as many spaces, its line breaks kept), so node positions do
-- not move: both must give the same module, the same node spans and the
-- same printed text. This covers the fast path too: a statement with a
-- comment only before its `;` (where TVM's printer puts `/* ty=... */`)
-- stays on it, one with a comment elsewhere goes to the full grammar.
local dp = require "devplan"
local testing = require "devplan.testing"

local T = "Tensor[(5, 7), float32]"
local CPU = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0}
local GPU = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0}
local MT = {VirtualDevice = {CPU, GPU}, ["relay.Constant"] = {dp.const({3, 2}, "int64")}}

-- every comment replaced by spaces (line breaks kept); texts here have no
-- comment markers inside strings
local function blank(text)
  local out, i, n = {}, 1, #text
  local function keep_breaks(s) return (s:gsub("[^\r\n]", " ")) end
  while i <= n do
    local two = text:sub(i, i + 1)
    if two == "//" then
      local j = text:find("\n", i, true) or n + 1
      out[#out + 1] = keep_breaks(text:sub(i, j - 1))
      i = j
    elseif two == "/*" then
      local depth, j = 1, i + 2
      while depth > 0 do
        local t = text:sub(j, j + 1)
        assert(j <= n, "unterminated comment in a test text")
        if t == "/*" then depth, j = depth + 1, j + 2
        elseif t == "*/" then depth, j = depth - 1, j + 2
        else j = j + 1 end
      end
      out[#out + 1] = keep_breaks(text:sub(i, j - 1))
      i = j
    else
      out[#out + 1] = text:sub(i, i)
      i = i + 1
    end
  end
  local s = table.concat(out)
  assert(#s == #text)
  return s
end

-- kind and span of every node (parameters included), in visiting order
local function spans(m)
  local out = {}
  local function add(e)
    local sp = e.span
    out[#out + 1] = e.kind .. "@" .. (sp and (sp.line .. ":" .. sp.col) or "-")
  end
  dp.visit(m, function(e)
    add(e)
    if e.kind == "fn" then for _, p in ipairs(e.params) do add(p) end end
  end)
  return out
end

-- parses text and its blanked copy; both must agree in every respect
local function same_as_blanked(text, mt)
  local plain = blank(text)
  assert.are_not.equal(plain, text, "the test text should have comments")
  local m = dp.parse(text, mt or MT)
  local ref = dp.parse(plain, mt or MT)
  assert.structurally_equal(ref, m)
  assert.are.same(spans(ref), spans(m))
  assert.are.equal(tostring(ref), tostring(m))
  return m
end

local function err_of(text)
  local ok, e = pcall(dp.parse, text, MT)
  assert.is_false(ok)
  assert.are.equal("table", type(e))
  return e
end

describe("parser comments", function()
  it("are skipped in parameter lists, after a parameter's type (TVM's type comments)", function()
    local m = same_as_blanked(
      "def @main(%data: Tensor[(1, 100), float32] /* ty=Tensor[(1, 100), float32] */, "
      .. "%w: Tensor[(1, 100), float32] /* ty=Tensor[(1, 100), float32] */) {\n"
      .. "  add(%data, %w) /* ty=Tensor[(1, 100), float32] */\n}\n")
    local f = m["main"]
    assert.are.equal(2, #f.params)
    assert.are.equal("w", f.params[2].name)
    assert.are.equal("Tensor[(1, 100), float32]", tostring(f.params[2].type_annotation))
    assert.are.same({source = "<string>", line = 1, col = 80}, f.params[2].span)
  end)

  it("are skipped around parameter attributes, function attributes, `:` and `,`", function()
    local m = same_as_blanked("def @main(/* c */ %a /* c */ {/* c */ virtual_device /* c */ = /* c */"
      .. " meta[VirtualDevice][1] /* c */} /* c */ : /* c */ " .. T .. " /* c */, /* c */\n"
      .. "  %b: " .. T .. " // a line comment\n"
      .. "  , /* c */ virtual_device /* c */ = /* c */ meta[VirtualDevice][0] /* c */, /* c */) {\n"
      .. "  add(%a, %b)\n}")
    assert.are.equal(GPU, m["main"].params[1].virtual_device)
    assert.are.equal(CPU, m["main"].virtual_device)
  end)

  it("are skipped after `->` and before `{`, in def and in fn", function()
    local m = same_as_blanked("def @main(%a: " .. T .. ") /* c */ -> /* c */ " .. T .. " /* c */ // c\n{\n"
      .. "  %0 = fn /* c */ (/* c */ %x: " .. T .. " /* c */) /* c */ -> /* c */ " .. T
      .. " /* c */ { /* c */ negative(%x) /* c */ } /* ty=fn (" .. T .. ") -> " .. T .. " */;\n"
      .. "  %0(%a)\n}")
    local f = m["main"]
    assert.are.equal(T, tostring(f.ret_type))
    assert.are.equal(T, tostring(f.body.callee.ret_type))
  end)

  it("are skipped between call arguments and attributes, and inside attribute lists", function()
    local m = same_as_blanked("def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {\n"
      .. "  %0 = nn.conv2d /* c */ (/* c */ %x /* c */, /* c */ %w, /* c */ padding /* c */ = /* c */"
      .. " [/* c */ 1, /* c */ 1, 1, 1 /* c */] /* c */, channels=4 /* c */, kernel_size=[3, /* c */ 3]"
      .. " /* c */) /* ty=Tensor[(1, 4, 8, 8), float32] */;\n"
      .. "  nn.softmax(%0, /* c */ axis /* c */ = /* c */ -1 /* c */ , /* c */) /* c */\n}")
    local conv = m["main"].body.args[1]
    assert.are.same({1, 1, 1, 1}, conv.attrs.padding)
    assert.are.equal(4, conv.attrs.channels)
  end)

  it("are skipped inside types", function()
    local m = same_as_blanked("def @main(%a: Tensor[/* c */ (/* c */ 5 /* c */, /* c */ 7 /* c */) /* c */,"
      .. " /* c */ float32 /* c */] /* c */, %t: (/* c */ " .. T .. " /* c */, /* c */ int64 /* c */)"
      .. " /* c */, %f: fn /* c */ (/* c */ " .. T .. " /* c */) /* c */ -> /* c */ " .. T .. ") {\n"
      .. "  %f(%a)\n}")
    local ps = m["main"].params
    assert.are.equal(T, tostring(ps[1].type_annotation))
    assert.are.equal("(" .. T .. ", int64)", tostring(ps[2].type_annotation))
    assert.are.equal("fn (" .. T .. ") -> " .. T, tostring(ps[3].type_annotation))
    assert.are.equal(T, tostring(dp.parse_type("Tensor[/* c */(5, 7), // c\n float32] /* c */")))
  end)

  it("are skipped inside tuples, projections, lets, if and match", function()
    same_as_blanked("type L[A] { /* c */ C(/* c */ A, L[A]) /* c */, // c\n N, /* c */ }\n"
      .. "def @main(%c: bool, %a: " .. T .. ", %l: L[int32]) {\n"
      .. "  %0 = (/* c */ %a /* c */, /* c */ %a /* c */, /* c */) /* c */;\n"
      .. "  %1 = %0 /* c */ . /* c */ 1;\n"
      .. "  let /* c */ %x /* c */ : /* c */ " .. T .. " /* c */ = /* c */ %1 /* c */;\n"
      .. "  %2 = match /* c */ (/* c */ %l /* c */) /* c */ { /* c */ C(/* c */ %h, _ /* c */)"
      .. " /* c */ => /* c */ %h /* c */, /* c */ N => 0 /* c */ } /* c */;\n"
      .. "  if /* c */ (/* c */ %c /* c */) /* c */ { /* c */ %x /* c */ } /* c */ else /* c */"
      .. " { (%2, %x).1 } /* c */\n}")
  end)

  it("may span several lines and nest, and a line comment may end the input", function()
    local m = same_as_blanked("/* a header\n   over /* nested\n */ three lines */\n"
      .. "def @main(%a: " .. T .. ") {\n"
      .. "  /* before\n     a binding */ %0 = negative(%a); /** stars **/ /*/ slash */\n"
      .. "  // /* not a block comment here\n"
      .. "  %1 = negative(%0) /* ty=" .. T .. "\n  over two lines */;\n"
      .. "  %1 /* ty=" .. T .. " */\n} // the end")
    assert.are.same({source = "<string>", line = 8, col = 8}, m["main"].body.span)
  end)

  -- (the lexer keeps where each token starts as a 16-bit distance within
  -- a block of tokens, unless the block spans 64 KiB or more)
  it("of any length leave the positions after them right", function()
    local lines = {"def @main(%a: " .. T .. ") {"}
    for i = 0, 299 do
      local arg = i == 0 and "%a" or "%" .. (i - 1)
      -- blocks of statements with short comments, and of long ones
      local c = string.rep(i % 100 < 50 and "s" or "l", i % 100 < 50 and 10 or 3000)
      lines[#lines + 1] = ("  %%%d = add(%s, %%a); /* %s */ // %s"):format(i, arg, c, c)
    end
    lines[#lines + 1] = "  %299\n}"
    local text = table.concat(lines, "\n")
    local m = same_as_blanked(text, testing.META)
    local e, line = m["main"].body, 301
    while e.kind == "call" do -- (%299 = add(%298, %a): the chain back to %0)
      assert.are.same({source = "<string>", line = line, col = #tostring(line - 2) + 7}, e.span)
      e, line = e.args[1], line - 1
    end
    assert.are.equal(1, line)
    local err = err_of((text:gsub("%%250 = add%(%%249", "%%250 = add(%%q")))
    assert.are.same({252, 14}, {err.line, err.col})
  end)

  it("are skipped around the version header, which blank lines and comments may follow", function()
    same_as_blanked('// leading\n/* c */ #[/* c */ version /* c */ = /* c */ "0.0.5" /* c */] // c\n\n\n'
      .. "/* after\n the header */\n\ndef @main(%a: " .. T .. ") { %a }\n")
    local m = dp.parse('#[version = "0.0.5"]\n\n\ndef @main(%a: ' .. T .. ") { %a }")
    assert.are.equal(4, m["main"].span.line)
  end)

  it("are skipped with CRLF line endings", function()
    local m = same_as_blanked('#[version = "0.0.5"]\r\ndef @main(%a: ' .. T .. ' /* ty=' .. T .. ' */) {\r\n'
      .. "  %0 = negative(%a) /* ty=" .. T .. " */;\r\n  // a line comment\r\n"
      .. "  let %x = negative(%0) /* ty=" .. T .. " */;\r\n  %x /* ty=" .. T .. " */\r\n}\r\n")
    assert.are.same({source = "<string>", line = 5, col = 12}, m["main"].body.value.span)
    -- and an error in CRLF text shows the line without its '\r'
    local e = err_of("def @main(%a: " .. T .. ") {\r\n  %0 = negative(%q);\r\n  %0\r\n}\r\n")
    assert.are.equal(2, e.line)
    assert.is_nil(e.formatted:find("\r", 1, true))
  end)

  it("keep the fast path's statements (comment before `;`) equal to the full grammar's", function()
    -- comments before each `;` (fast path) and inside each statement (full
    -- grammar): the same nodes and spans either way
    local body = {}
    for i = 0, 59 do
      local prev = i == 0 and "%a" or "%" .. (i - 1)
      local op = i % 2 == 0 and "add" or "multiply"
      if i % 3 == 0 then
        body[#body + 1] = "  %" .. i .. " = " .. op .. "(" .. prev .. ", %b) /* ty=" .. T .. " */;"
      elseif i % 3 == 1 then
        body[#body + 1] = "  %" .. i .. " = on_device(" .. op .. "(" .. prev .. ", %b), virtual_device="
          .. "meta[VirtualDevice][" .. (i % 2) .. "]) // c\n /* c */;"
      else
        body[#body + 1] = "  %" .. i .. " = " .. op .. "(/* c */ " .. prev .. ", %b) /* c */;"
      end
    end
    body[#body + 1] = "  let %x = add(%59, %a) /* ty=" .. T .. " */;\n  %x /* ty=" .. T .. " */"
    same_as_blanked("def @main(%a: " .. T .. ", %b: " .. T .. ") {\n" .. table.concat(body, "\n") .. "\n}")
  end)

  it("skip the type comment of a metatable constant and of a body's final expression", function()
    local m = same_as_blanked("def @main() {\n"
      .. "  %0 = add(meta[relay.Constant][0] /* ty=Tensor[(2), int64] */, meta[relay.Constant][0])"
      .. " /* ty=Tensor[(2), int64] */;\n"
      .. "  meta[relay.Constant][0] /* ty=Tensor[(2), int64] */;\n"
      .. "  %0 /* ty=Tensor[(2), int64] */\n}")
    assert.are.same({3, 2}, m["main"].body.body.args[1].value)
  end)

  it("report a comment that is never closed where it starts", function()
    local e = err_of("def @main(%a: " .. T .. ") {\n  %0 = negative(%a);\n  %0 /* oops\n}\n")
    assert.are.equal(3, e.line)
    assert.are.equal(6, e.col)
    assert.is_truthy(e.message:find("never closed"), e.message)
    -- a nested one left open is unterminated too
    e = err_of("def @main(%a: " .. T .. ") { %a /* outer /* inner */ }")
    assert.is_truthy(e.message:find("never closed"), e.message)
    -- an error after a comment is reported past it, at what was found
    e = err_of("def @main(%a: " .. T .. " /* ty=" .. T .. " */ $) { %a }")
    assert.are.equal(1, e.line)
    assert.are.equal(72, e.col)
    assert.is_truthy(e.message:find("expected ',' or ')', found '$'", 1, true), e.message)
    -- comments nest to any depth (the lexer counts them)
    local n = 100000
    local m = dp.parse(string.rep("/*", n) .. " x " .. string.rep("*/", n) .. "\ndef @main() { 1 }")
    assert.are.equal(2, m["main"].span.line)
    e = err_of(string.rep("/*", n) .. " x " .. string.rep("*/", n - 1) .. "\ndef @main() { 1 }")
    assert.is_truthy(e.message:find("never closed"), e.message)
    assert.are.same({1, 1}, {e.line, e.col})
    -- a lone '/' is not a comment: it divides
    m = dp.parse("def @main(%a: " .. T .. ") { %a / %a }")
    assert.are.equal("divide", m["main"].body.callee.name)
  end)

  local models = {"resnet18", "resnet18.annotated", "resnet18.planned", "dcgan",
                  "dcgan.annotated", "dcgan.planned"}
  for _, name in ipairs(models) do
    it("are skipped in the model " .. name .. " as TVM printed it", function()
      local text = testing.read_file(testing.shared_dir .. "/models/" .. name .. ".relay")
      assert.is_truthy(text:find("/* ty=", 1, true))
      local m = same_as_blanked(text, testing.META)
      assert.is_not_nil(m["main"])
    end)
  end
end)
