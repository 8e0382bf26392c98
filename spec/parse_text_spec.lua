-- The command line's input read once into C's heap (issue 23): dp._read_text
-- gives a regular file's bytes as a devplan.Text, which the parser, the
-- ONNX test (dp._binary) and the metadata test read as they read a string,
-- so that a large file is in memory once (a Lua string of it is made by
-- copying: the file was in memory twice while it was read). What is parsed
-- from it is what is parsed from the string, errors and positions too.
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


teardown(function() testing.remove_temp_files() end)
describe("a file's text in C's heap (dp._read_text)", function()
  it("reads a regular file whole, and nothing else", function()
    local path = write(MODULE)
    local t = core._read_text(path)
    assert.is_true(core._is_text(t))
    assert.are.equal(#MODULE, #t)
    assert.is_false(core._is_text(MODULE))
    assert.is_nil(core._read_text(ROOT .. "/spec"))          -- a folder
    assert.is_nil(core._read_text(path .. ".does-not-exist"))
    os.remove(path)
  end)

  it("parses to the module the string parses to", function()
    local path = write(MODULE)
    local meta = devname.palette()
    local from_text = dp.parse(core._read_text(path), meta, {source_name = path})
    local from_string = dp.parse(MODULE, meta, {source_name = path})
    assert.are.equal(dp.astext(from_string, {spans = true}), dp.astext(from_text, {spans = true}))
    os.remove(path)
  end)

  it("gives the string's errors, positions and excerpts", function()
    for _, bad in ipairs{MODULE:gsub("%%b%)", "%%q)"), MODULE:gsub("multiply%(", "multiply(("),
                         (MODULE:gsub("add%(%%x, %%0%)", "add(%%x)"))} do
      local path = write(bad)
      local ok1, e1 = pcall(dp.parse, core._read_text(path), devname.palette(), {source_name = path})
      local ok2, e2 = pcall(dp.parse, bad, devname.palette(), {source_name = path})
      assert.is_false(ok1)
      assert.is_false(ok2)
      assert.are.equal(e2.formatted, e1.formatted)
      assert.are.same({e2.line, e2.col}, {e1.line, e1.col})
      os.remove(path)
    end
  end)

  it("answers the command line's questions as the string does", function()
    local t = core._read_text(META_FILE)
    local s = testing.read_file(META_FILE)
    assert.is_true(parser.has_metadata(s))
    assert.is_true(parser.has_metadata(t))
    local path = write(MODULE)
    assert.is_false(parser.has_metadata(core._read_text(path)))
    assert.is_false(core._binary(core._read_text(path)))
    os.remove(path)
    path = write("\8\1ONNX bytes")
    assert.is_true(core._binary(core._read_text(path)))
    os.remove(path)
    assert.is_true(core._text_find(t, "metadata"))
    assert.is_false(core._text_find(t, "no such words in it"))
    assert.is_true(core._text_find("abc", ""))
  end)

  it("is what `devplan parse` and `devplan plan` read: the same output as from standard input", function()
    local exe = os.getenv("DEVPLAN_EXE") or ROOT .. "/bin/devplan"
    local path = write(MODULE)
    local function run(cmd)
      local p = assert(io.popen(cmd .. " 2>&1"))
      local out = p:read("a")
      p:close()
      return out
    end
    for _, c in ipairs{"parse", "plan"} do
      local from_file = run(("'%s' %s '%s'"):format(exe, c, path))
      local from_stdin = run(("'%s' %s - < '%s'"):format(exe, c, path))
      assert.are.equal(from_stdin, from_file)
      assert.is_truthy(from_file:find("def @main", 1, true), from_file)
    end
    os.remove(path)
  end)
end)
