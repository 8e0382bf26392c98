-- The command line's input read once (issue 23): dp._read_text gives a
-- regular file's bytes as a Lua string made from the block they are read
-- into (src/lua/l_file.c, l_text.c: a text of 1 MiB or more is taken as the
-- string without a copy), where io's read holds the file twice while it
-- reads. The string is an ordinary one: what is parsed from it is what is
-- parsed from the same text made by Lua, errors and positions too.
local dp = require "devplan"
local core = require "devplan.core"
local parser = require "devplan.parser"
local devname = require "devplan.devname"
local testing = require "devplan.testing"

local ROOT = dp.root or "."
local META_FILE = ROOT .. "/spec/data/tvm_meta_cuda.relay"

local function write(text) return testing.temp_file(text, ".relay") end

local MODULE = table.concat({
  '#[version = "0.0.5"]',
  "def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32]) {",
  "  %0 = add(%a, %b);",
  "  let %x = on_device(multiply(%0, %b), virtual_device=meta[VirtualDevice][1]);",
  "  add(%x, %0) /* a comment */",
  "}", ""}, "\n")

-- A module of about 1.7 MB: read in place (l_text.c's ADOPT_MIN is 1 MiB).
local function large_module()
  local lines = {'#[version = "0.0.5"]', "def @main(%a: Tensor[(5, 7), float32]) {", "  %0 = add(%a, %a);"}
  for i = 1, 60000 do lines[#lines + 1] = ("  %%%d = add(%%%d, %%a);"):format(i, i - 1) end
  lines[#lines + 1] = "  %60000"
  lines[#lines + 1] = "}"
  return table.concat(lines, "\n") .. "\n"
end

teardown(function() testing.remove_temp_files() end)
describe("a file's text read once (dp._read_text)", function()
  it("reads a regular file whole as a string, and nothing else", function()
    local path = write(MODULE)
    local t = core._read_text(path)
    assert.are.equal("string", type(t))
    assert.are.equal(MODULE, t)
    assert.are.equal("", core._read_text(write("")))
    assert.is_nil(core._read_text(ROOT .. "/spec"))          -- a folder
    assert.is_nil(core._read_text(path .. ".does-not-exist"))
    assert.is_nil(core._read_text("/dev/null"))              -- not a regular file
  end)

  it("gives a large file as an ordinary string: the same bytes, key and hash", function()
    local text = large_module()
    assert.is_true(#text > 1048576)
    local t = core._read_text(write(text))
    assert.is_true(t == text)
    local keys = {[text:sub(1, 1000) .. text:sub(1001)] = 1}
    assert.are.equal(1, keys[t])
    assert.are.equal(text:sub(-30), t:sub(-30))
    t = nil
    collectgarbage()
    collectgarbage()
    local before = collectgarbage("count")
    for _ = 1, 10 do local _ = core._read_text(write(text)) end
    collectgarbage()
    collectgarbage()
    assert.is_true(collectgarbage("count") < before + 1024) -- (freed as any string)
  end)

  it("holds a large file once while it reads (io's read: twice)", function()
    if testing.instrumented then return end -- (ASan and valgrind keep freed blocks back)
    local text = large_module() .. large_module():rep(7) -- (about 13 MB)
    local path = write(text)
    local script = testing.temp_file([[
      local core = require "devplan.core"
      local function hwm()
        local f = io.open("/proc/self/status"); local s = f:read("a"); f:close()
        return tonumber(s:match("VmHWM:%s*(%d+)")) * 1024
      end
      local before = hwm()
      local t
      if arg[2] == "io" then local f = io.open(arg[1], "rb"); t = f:read("a"); f:close()
      else t = core._read_text(arg[1]) end
      print(#t, (hwm() - before) / #t)
    ]], ".lua")
    local function grown(how)
      local p = assert(io.popen(("'%s' '%s' '%s' %s"):format(testing.exe, script, path, how)))
      local out = p:read("a")
      p:close()
      local n, ratio = out:match("^(%d+)%s+(%S+)")
      assert.are.equal(#text, tonumber(n), out)
      return tonumber(ratio)
    end
    assert.is_true(grown("read_text") < 1.25, "dp._read_text's peak over the file's size")
    assert.is_true(grown("io") > 1.5, "io's read's peak over the file's size (the test's control)")
  end)

  it("parses to the module the string parses to", function()
    local path = write(MODULE)
    local meta = devname.palette()
    local from_file = dp.parse(core._read_text(path), meta, {source_name = path})
    local from_string = dp.parse(MODULE, meta, {source_name = path})
    assert.are.equal(dp.astext(from_string, {spans = true}), dp.astext(from_file, {spans = true}))
    local big = large_module()
    path = write(big)
    assert.are.equal(dp.astext(dp.parse(big, meta)), dp.astext(dp.parse(core._read_text(path), meta)))
  end)

  it("gives the string's errors, positions and excerpts", function()
    for _, bad in ipairs{MODULE:gsub("%%b%)", "%%q)"), MODULE:gsub("multiply%(", "multiply(("),
                         (MODULE:gsub("add%(%%x, %%0%)", "add(%%x)")),
                         (large_module():gsub("%%59999, ", "%%59999 "))} do
      local path = write(bad)
      local ok1, e1 = pcall(dp.parse, core._read_text(path), devname.palette(), {source_name = path})
      local ok2, e2 = pcall(dp.parse, bad, devname.palette(), {source_name = path})
      assert.is_false(ok1)
      assert.is_false(ok2)
      assert.are.equal(e2.formatted, e1.formatted)
      assert.are.same({e2.line, e2.col}, {e1.line, e1.col})
    end
  end)

  it("answers the command line's questions as the string does", function()
    assert.is_true(parser.has_metadata(core._read_text(META_FILE)))
    assert.is_true(parser.has_metadata(testing.read_file(META_FILE)))
    local path = write(MODULE)
    assert.is_false(parser.has_metadata(core._read_text(path)))
    assert.is_false(core._binary(core._read_text(path)))
    assert.is_true(core._binary(core._read_text(write("\8\1ONNX bytes"))))
  end)

  it("is what `devplan parse` and `devplan plan` read: the same output as from standard input", function()
    for _, text in ipairs{MODULE, large_module()} do
      local path = write(text)
      for _, c in ipairs{"parse", "plan"} do
        local s1, from_file = testing.run_devplan(("%s '%s'"):format(c, path))
        local s2, from_stdin = testing.run_devplan(("%s - < '%s'"):format(c, path))
        assert.are.equal(0, s1)
        assert.are.equal(0, s2)
        assert.is_true(from_stdin == from_file)
        assert.is_truthy(from_file:find("def @main", 1, true))
      end
    end
  end)

  it("says clearly why a file cannot be read", function()
    local s, _, err = testing.run_devplan("parse '" .. ROOT .. "/spec/no-such-file.relay'")
    assert.are.equal(1, s)
    assert.are.equal("devplan: cannot open " .. ROOT .. "/spec/no-such-file.relay: No such file or directory\n", err)
    s, _, err = testing.run_devplan("parse '" .. ROOT .. "/spec'")
    assert.are.equal(1, s)
    assert.are.equal("devplan: cannot read " .. ROOT .. "/spec: Is a directory\n", err)
  end)
end)
