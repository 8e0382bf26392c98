-- The devplan executable: scripts with arguments, -e, --help, --version,
-- errors with a traceback and exit status 1.
local testing = require "devplan.testing"

local EXE = os.getenv("DEVPLAN_EXE") or "bin/devplan"

local function run(args, input, env)
  local out = testing.temp_file("", ".out")
  local cmd = (env and env .. " " or "") .. EXE .. " " .. args .. " >" .. out .. " 2>&1"
  if input then cmd = cmd .. " <" .. testing.temp_file(input, ".in") end
  local ok, _, code = os.execute(cmd)
  return ok and 0 or code, testing.read_file(out)
end

-- (removed with the other temporary files when the spec file ends)
local function script(text) return testing.temp_file(text, ".lua") end

describe("devplan executable", function()
  it("runs a script with arg set as lua does, and ... as its arguments", function()
    local s = script([[
      print("arg0=" .. arg[0], "arg1=" .. arg[1], "arg2=" .. arg[2], "n=" .. #arg)
      print("argm1=" .. tostring(arg[-1]):match("[^/]*$"))
      print("dots=" .. table.concat({...}, ","))
    ]])
    local code, out = run(s .. " one 'two words'")
    os.remove(s)
    assert.equal(0, code)
    assert.truthy(out:find("arg0=" .. s .. "\targ1=one\targ2=two words\tn=2", 1, true), out)
    assert.truthy(out:find("argm1=devplan", 1, true), out)
    assert.truthy(out:find("dots=one,two words", 1, true), out)
  end)

  it("has the devplan module preloaded, and finds the project's Lua files", function()
    local code, out = run([[-e 'local dp = require "devplan"; print(dp.version, tostring(dp.Target("cuda -host=llvm")), package.path:find("/lua/?.lua", 1, true) ~= nil)']])
    assert.equal(0, code)
    assert.truthy(out:find("cuda -keys=cuda,gpu -arch=sm_50 -max_num_threads=1024 -thread_warp_size=32 -host='llvm -keys=cpu'\ttrue", 1, true), out)
  end)

  it("runs -e chunks before the script, with negative arg indices", function()
    local s = script("print('script', arg[-2], arg[-1])")
    local code, out = run("-e 'print(\"chunk\")' " .. s)
    os.remove(s)
    assert.equal(0, code)
    assert.truthy(out:find("chunk\nscript\t-e\tprint(\"chunk\")", 1, true), out)
  end)

  it("skips a #! first line", function()
    local s = script("#!/usr/bin/env devplan\nprint('shebang ok')\n")
    local code, out = run(s)
    os.remove(s)
    assert.equal(0, code)
    assert.equal("shebang ok\n", out)
  end)

  it("reads a script from standard input with -", function()
    local code, out = run("- a", "print('stdin', ...)")
    assert.equal(0, code)
    assert.equal("stdin\ta\n", out)
  end)

  it("answers --help and --version", function()
    local code, out = run("--help")
    assert.equal(0, code)
    assert.truthy(out:find("usage:", 1, true))
    assert.truthy(out:find("-e CODE", 1, true))
    code, out = run("--version")
    assert.equal(0, code)
    assert.truthy(out:match("^devplan %d+%.%d+%.%d+ %(Lua 5%.4"), out)
  end)

  it("with no arguments and standard input not a terminal, runs the script read from it (as lua)", function()
    local code, out = run("", "print('from stdin', arg[0])")
    assert.equal(0, code)
    assert.equal("from stdin\t-\n", out)
    code, out = run("", "")
    assert.equal(0, code)
    assert.equal("", out)
  end)

  it("prints a traceback and exits 1 on a script error", function()
    local s = script("local function inner() error('kaboom') end\nlocal function outer() inner() end\nouter()\n")
    local code, out = run(s)
    os.remove(s)
    assert.equal(1, code)
    assert.truthy(out:find(":1: kaboom", 1, true), out)
    assert.truthy(out:find("stack traceback:", 1, true), out)
    assert.truthy(out:find("in local 'inner'", 1, true) or out:find("in upvalue 'inner'", 1, true), out)
  end)

  it("prints devplan errors by their message", function()
    local code, out = run([[-e 'require("devplan").Target("tpu")']])
    assert.equal(1, code)
    assert.truthy(out:find("unknown target kind 'tpu'", 1, true), out)
    assert.truthy(out:find("stack traceback:", 1, true), out)
  end)

  it("reports syntax errors, missing files and bad options with status 1", function()
    local code, out = run("-e 'x = = 1'")
    assert.equal(1, code)
    assert.truthy(out:find("unexpected symbol", 1, true), out)
    code, out = run("/nonexistent/x.lua")
    assert.equal(1, code)
    assert.truthy(out:find("cannot open /nonexistent/x.lua", 1, true), out)
    code, out = run("--bogus")
    assert.equal(1, code)
    assert.truthy(out:find("unknown option '--bogus'", 1, true), out)
    code, out = run("-e")
    assert.equal(1, code)
    assert.truthy(out:find("-e needs an argument", 1, true), out)
  end)

  it("exits with the status given to os.exit", function()
    local code = run("-e 'os.exit(3)'")
    assert.equal(3, code)
  end)

  -- The minor page faults of what a script does between two counts: `body`
  -- (Lua) prints "faults " .. (minflt() - before), minflt() read from
  -- /proc/self/stat. nil and why where they cannot be counted. env: a
  -- prefix of the command line (variables set for it).
  local function faults_of(body, env)
    if testing.instrumented then
      return nil, "the sanitizers' allocator keeps freed blocks in quarantine, ignores mallopt and is not the Lua state's"
    end
    local stat = io.open("/proc/self/stat")
    if not stat then return nil, "no /proc to count page faults in" end
    stat:close()
    local code, out = run(script([[
      local function minflt()
        local f = assert(io.open("/proc/self/stat")); local s = f:read("a"); f:close()
        return tonumber(s:match("%b()%s+%S+%s+%S+%s+%S+%s+%S+%s+%S+%s+%S+%s+%S+%s+(%d+)"))
      end
    ]] .. body), nil, env)
    assert.equal(0, code, out)
    local faults = tonumber(out:match("faults (%d+)"))
    assert.truthy(faults, out)
    return faults, out
  end

  -- src/cli/main.c: a script keeps the heap it freed (up to 32 MiB) for its
  -- next allocations, instead of giving it back past 128 KiB and faulting
  -- it in again. Printing a 1,000-deep nested if 20 times faulted 5,040
  -- pages so, and none now (page faults: a count, not a time).
  it("lets a script reuse the heap it freed: repeating a print faults in no new pages", function()
    local faults, out = faults_of([[
      local dp = require "devplan"
      local L = dofile(dp.root .. "/spec/support/ladder.lua")
      local mod = L.inputs("nested if")(1000)
      for _ = 1, 2 do local _ = #tostring(mod); collectgarbage() end
      local before = minflt()
      for _ = 1, 20 do local _ = #tostring(mod); collectgarbage() end
      print("faults " .. (minflt() - before))
    ]])
    if not faults then return pending(out) end
    assert.truthy(faults < 400, out)
  end)

  -- src/cli/main.c: the Lua state's large blocks ask for huge pages, as
  -- the library's do (dp_advise_huge). A 64 MiB string.rep faulted in
  -- 32,770 pages of 4 KiB so (its buffer and the string); a few dozen now.
  it("backs a script's large strings by huge pages where the system has them", function()
    local f = io.open("/sys/kernel/mm/transparent_hugepage/enabled")
    local mode = f and f:read("l")
    if f then f:close() end
    if not mode or mode:find("[never]", 1, true) then
      return pending("the system has no transparent huge pages to ask for")
    end
    local faults, out = faults_of([[
      local before = minflt()
      local s = string.rep("x", 64 * 1024 * 1024)
      print("faults " .. (minflt() - before) .. " " .. #s)
    ]])
    if not faults then return pending(out) end
    assert.truthy(faults < 4000, out)
  end)

  -- src/cli/main.c: where huge pages come only on request, the executable
  -- starts itself again with glibc's glibc.malloc.hugetlb tunable set, so
  -- that glibc's heap, where small blocks live, asks for them too. 200,000
  -- small tables faulted 5,590 pages of 4 KiB without it (the tunable set
  -- to 0, which the executable keeps), 1,300-1,600 with it.
  local function thp_on_request()
    local f = io.open("/sys/kernel/mm/transparent_hugepage/enabled")
    local mode = f and f:read("l")
    if f then f:close() end
    return mode and mode:find("[madvise]", 1, true) ~= nil
  end
  local small_tables = [[
      local before = minflt()
      local t = {}
      for i = 1, 200000 do t[i] = {i} end
      print("faults " .. (minflt() - before) .. " tunables " .. tostring(os.getenv("GLIBC_TUNABLES")))
  ]]

  it("backs the heap's small blocks by huge pages where they come on request", function()
    if not thp_on_request() then
      return pending("transparent huge pages here are not in madvise mode: nothing to ask glibc for")
    end
    local with, out = faults_of(small_tables)
    if not with then return pending(out) end
    local without, out0 = faults_of(small_tables, "GLIBC_TUNABLES=glibc.malloc.hugetlb=0")
    assert.truthy(out:find("tunables glibc.malloc.hugetlb=1", 1, true), out)
    assert.truthy(with * 3 < without, out .. out0)
  end)

  it("keeps the glibc tunables a user sets, adding the heap's huge pages to them", function()
    if not thp_on_request() then
      return pending("transparent huge pages here are not in madvise mode: nothing to ask glibc for")
    end
    local counted, out = faults_of(small_tables, "GLIBC_TUNABLES=glibc.malloc.hugetlb=0")
    if not counted then return pending(out) end -- (the sanitizer build does not restart)
    assert.truthy(out:find("tunables glibc.malloc.hugetlb=0\n"), out)
    _, out = faults_of(small_tables, "GLIBC_TUNABLES=glibc.malloc.perturb=0")
    assert.truthy(out:find("tunables glibc.malloc.perturb=0:glibc.malloc.hugetlb=1", 1, true), out)
  end)
end)
