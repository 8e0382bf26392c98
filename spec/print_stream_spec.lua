-- dp.write_file(path, module, print_options): the module's text written out
-- as it is printed (dp_print_module_to), never held whole. It must be the
-- text dp.astext gives, byte for byte, with every print option, through a
-- regular file (which can go back: a definition whose free variables are
-- met after part of its text was written out is printed again) and a pipe
-- (which cannot: it is written a definition at a time).
local dp = require "devplan"
local t = require "devplan.testing"
local gen = dofile(dp.root .. "/bench/gen.lua")

local read = t.read_file

local OPTIONS = {{}, {types = true}, {meta = true}, {spans = true, types = true},
                 {short_devices = true}, {param_lines = true}}

local function check(mod, what)
  local path = t.temp_file("")
  for _, o in ipairs(OPTIONS) do
    assert.is_true(dp.write_file(path, mod, o))
    local expected = dp.astext(mod, o)
    local got = read(path)
    assert(got == expected, what .. ": differs with options " .. table.concat((function()
      local k = {}
      for key in pairs(o) do k[#k + 1] = key end
      return k
    end)(), ","))
  end
end

-- A definition whose free variable is first met after a megabyte of its
-- text: its declaration goes at the start of the body.
local function late_free_var(n)
  local lines = {'#[version = "0.0.5"]\ndef @main(%a: Tensor[(5, 7), float32]) {\n'}
  for i = 0, n - 1 do
    lines[#lines + 1] = ("  let %%x%d = add(%s, %%a);\n"):format(i, i == 0 and "%a" or "%x" .. (i - 1))
  end
  lines[#lines + 1] = ("  free_var %%z: Tensor[(5, 7), float32];\n  add(%%x%d, %%z)\n}\n"):format(n - 1)
  lines[#lines + 1] = "def @other(%b: float32) {\n  negative(%b)\n}\n"
  return table.concat(lines)
end

teardown(function() t.remove_temp_files() end)

describe("dp.write_file of a module", function()
  it("writes what dp.astext prints, with every option", function()
    check(dp.parse(t.SMALL_MODULE, t.META), "the small module")
    for _, name in ipairs{"resnet18", "lstm", "dcgan"} do
      check(dp.parse(t.read_file(t.model(name)), t.META), name)
    end
  end)

  it("writes large modules in pieces, planned or not, as dp.astext prints them", function()
    local config = t.config("cuda")
    for _, shape in ipairs{"chain", "let", "branchy"} do
      local mod = dp.parse(gen[shape](60000), t.META)
      check(mod, shape)
      check(dp.passes.PlanDevices(config)(mod), shape .. " planned")
    end
  end)

  it("goes back and prints a definition again when its free variables come late", function()
    local mod = dp.parse(late_free_var(60000), t.META)
    local text = dp.astext(mod)
    assert.truthy(#text > 1.5 * 1024 * 1024) -- (written out from 1 MB on)
    assert.truthy(text:find("def @main(%a: Tensor[(5, 7), float32]) {\n  free_var %z", 1, true))
    check(mod, "late free variable")
  end)

  it("writes to a pipe a definition at a time", function()
    local dir = io.popen("mktemp -d"):read("l")
    local fifo, out = dir .. "/fifo", dir .. "/out"
    assert(os.execute("mkfifo '" .. fifo .. "'"))
    local mod = dp.parse(late_free_var(60000), t.META)
    assert(os.execute("cat '" .. fifo .. "' > '" .. out .. "' &"))
    assert.is_true(dp.write_file(fifo, mod))
    -- (cat ends when the pipe closes)
    local expected, got = dp.astext(mod), nil
    for _ = 1, 200 do
      got = read(out)
      if #got == #expected then break end
      os.execute("sleep 0.05")
    end
    assert(got == expected, "the pipe's text differs")
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("ends the file with a newline when asked (a metadata section's JSON has none)", function()
    local mod = dp.parse(t.read_file(dp.root .. "/spec/data/tvm_meta_cuda.relay"))
    local text = dp.astext(mod, {meta = true})
    assert.are_not.equal("\n", text:sub(-1))
    local path = t.temp_file("")
    dp.write_file(path, mod, {meta = true, newline = true})
    assert.equal(text .. "\n", read(path))
    dp.write_file(path, mod, {newline = true}) -- (a text ending with one gets no other)
    assert.equal(dp.astext(mod), read(path))
  end)

  it("reports a full device and unknown options", function()
    local mod = dp.parse(gen.let(60000), t.META)
    local ok, err = pcall(dp.write_file, "/dev/full", mod)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cannot write /dev/full: No space left on device", 1, true))
    ok, err = pcall(dp.write_file, t.temp_file(""), mod, {typez = true})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("typez", 1, true), tostring(err))
    ok, err = pcall(dp.write_file, t.temp_file(""), dp.VirtualDevice{device_type = "cpu"})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("string or IRModule", 1, true), tostring(err))
  end)
end)
