-- Every write of the command line is checked: a full device (/dev/full),
-- a missing folder or a file size limit is an error naming the file, with
-- exit status 1, and a file given to -o (or --dot, --svg) is replaced
-- whole or not at all.
local dp = require "devplan"
local t = require "devplan.testing"

local MODEL = t.temp_file(t.SMALL_MODULE)
local ANNOTATE = " --annotate negative=cuda"

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- A new empty folder; removed in teardown.
local dirs = {}
local function temp_dir()
  local p = io.popen("mktemp -d")
  local dir = p:read("l")
  p:close()
  dirs[#dirs + 1] = dir
  return dir
end

-- The names in dir, sorted.
local function listing(dir)
  local names = {}
  local p = io.popen("ls -A " .. sh_quote(dir))
  for l in p:lines() do names[#names + 1] = l end
  p:close()
  table.sort(names)
  return names
end

local function has_graphviz()
  return os.execute("command -v dot >/dev/null 2>&1") == true
end

teardown(function()
  for _, d in ipairs(dirs) do os.execute("rm -rf " .. sh_quote(d)) end
  t.remove_temp_files()
end)

describe("devplan writes", function()
  it("fail with the file named and status 1 on a full device", function()
    local cases = {
      {"plan " .. MODEL .. ANNOTATE .. " -o /dev/full", "cannot write /dev/full: No space left on device"},
      {"plan " .. MODEL .. ANNOTATE .. " --report json -o /dev/full", "cannot write /dev/full"},
      {"plan " .. MODEL .. ANNOTATE .. " --report text -o /dev/full", "cannot write /dev/full"},
      {"parse " .. MODEL .. " -o /dev/full", "cannot write /dev/full"},
      {"plan " .. MODEL .. ANNOTATE .. " --dot /dev/full -o /dev/null", "cannot write /dev/full"},
    }
    if has_graphviz() then
      cases[#cases + 1] = {"plan " .. MODEL .. ANNOTATE .. " --svg /dev/full", "cannot write /dev/full"}
    end
    for _, c in ipairs(cases) do
      local code, out, err = t.run_devplan(c[1])
      assert.equal(1, code, c[1])
      assert.equal("", out, c[1])
      assert.truthy(err:find("devplan: " .. c[2], 1, true), c[1] .. "\n" .. err)
    end
  end)

  it("fail on standard output when it is full, for commands and scripts alike", function()
    for _, args in ipairs{
      "plan " .. MODEL .. ANNOTATE,
      "plan " .. MODEL .. ANNOTATE .. " --report json",
      "parse " .. MODEL,
      "opt " .. MODEL .. " --list-passes",
      "help plan",
      "-e 'print(\"a line\")'",
      "--version",
    } do
      local errfile = t.temp_file("", ".err")
      local ok, _, code = os.execute(t.exe .. " " .. args .. " >/dev/full 2>" .. errfile)
      local err = t.read_file(errfile)
      assert.is_not_true(ok, args)
      assert.equal(1, code, args)
      assert.truthy(err:find("cannot write to standard output", 1, true), args .. "\n" .. err)
    end
  end)

  it("leave the old file whole when the new one cannot be written", function()
    local dir = temp_dir()
    local out = dir .. "/out.relay"
    -- a size limit of 1 KiB: the planned module does not fit (SIGXFSZ ignored:
    -- the write fails with EFBIG)
    local limited = "sh -c " .. sh_quote("trap '' XFSZ; ulimit -f 1; exec " .. t.exe .. " plan "
      .. t.temp_file(string.rep("// padding to make the module larger than 1 KiB\n", 40) .. t.SMALL_MODULE)
      .. ANNOTATE .. " -o " .. out .. " 2>" .. dir .. "/err.txt")
    assert(dp.write_file(out, "old\n"))
    local ok = os.execute(limited)
    assert.is_not_true(ok)
    err = t.read_file(dir .. "/err.txt")
    os.remove(dir .. "/err.txt")
    assert.truthy(err:find("devplan: cannot write " .. out .. ": File too large", 1, true), err)
    assert.equal("old\n", t.read_file(out))
    assert.same({"out.relay"}, listing(dir))
  end)

  it("leave the old file alone when the run fails, and no temporary file", function()
    local dir = temp_dir()
    local out = dir .. "/out.relay"
    assert(dp.write_file(out, "old\n"))
    local code, _, err = t.run_devplan("plan " .. MODEL .. " --annotate negative=nowhere -o " .. out)
    assert.equal(1, code)
    assert.truthy(err:find("nowhere", 1, true), err)
    assert.equal("old\n", t.read_file(out))
    assert.same({"out.relay"}, listing(dir))
  end)

  it("replace a file whole, keeping its permissions, and follow a link to it", function()
    local dir = temp_dir()
    local out = dir .. "/out.relay"
    assert(dp.write_file(out, "old\n"))
    os.execute("chmod 640 " .. sh_quote(out) .. " && ln -s out.relay " .. sh_quote(dir .. "/link.relay"))
    local code, _, err = t.run_devplan("plan " .. MODEL .. ANNOTATE .. " -o " .. dir .. "/link.relay")
    assert.equal(0, code, err)
    assert.truthy(t.read_file(out):find("device_copy", 1, true))
    assert.same({"link.relay", "out.relay"}, listing(dir))
    local p = io.popen("stat -c '%a %F' " .. sh_quote(out) .. " " .. sh_quote(dir .. "/link.relay"))
    assert.equal("640 regular file\n777 symbolic link\n", p:read("a"))
    p:close()
  end)

  it("name the file when its folder does not exist", function()
    local code, _, err = t.run_devplan("plan " .. MODEL .. ANNOTATE .. " -o /nonexistent-folder/out.relay")
    assert.equal(1, code)
    assert.truthy(err:find("devplan: cannot write /nonexistent-folder/out.relay: No such file or directory", 1, true), err)
  end)

  it("say when a reproducer cannot be written, and still report the error", function()
    local load = t.temp_file([[
local dp = require "devplan"
dp.pipeline.register(dp.pass("boom", function() error("boom went the pass") end))
]], ".lua")
    local code, _, err = t.run_devplan("opt " .. MODEL .. " --load " .. load .. " -p 'infer_type,boom' --reproducer /dev/full")
    assert.equal(1, code)
    assert.truthy(err:find("boom went the pass", 1, true), err)
    assert.truthy(err:find("no reproducer: cannot write /dev/full: No space left on device", 1, true), err)
  end)

  -- (a command that ran a --load file closes its Lua state at exit,
  -- src/cli/main.c, and the C library flushes open streams at exit in any
  -- case: what the file wrote to a file it left open is written out)
  it("write out what a --load file left in a file it did not close", function()
    local dir = temp_dir()
    local left = dir .. "/left.txt"
    local load = t.temp_file("LEFT_OPEN = io.open(" .. string.format("%q", left) .. ", 'w')\n"
      .. "LEFT_OPEN:write(string.rep('x', 100))\n", ".lua")
    local code, _, err = t.run_devplan("plan " .. MODEL .. ANNOTATE .. " --load " .. load .. " -o " .. dir .. "/out.relay")
    assert.equal(0, code, err)
    assert.equal(string.rep("x", 100), t.read_file(left))
    assert.truthy(t.read_file(dir .. "/out.relay"):find("device_copy", 1, true))
  end)

  it("dp.write_file raises a devplan.Error naming the file", function()
    local ok, err = pcall(dp.write_file, "/dev/full", "x")
    assert.is_false(ok)
    assert.is_true(dp.is_error(err))
    assert.equal("cannot write /dev/full: No space left on device", err.message)
    ok, err = pcall(dp.write_file, "/", "x")
    assert.is_false(ok)
    assert.equal("cannot write /: Is a directory", err.message)
    assert.has_error(function() dp.write_file("", "x") end)
  end)
end)
