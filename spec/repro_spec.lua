-- Every reproducer of ../shared/repro/ (and of fuzz/findings/, what the
-- program generator found) as a regression test, run as its header says
-- with the executable under test ($DEVPLAN_EXE: the sanitizer run uses the
-- ASan+UBSan build, so undefined behaviour and leaks count). New files in
-- either folder are picked up automatically.
--
--   FILE.lua    runs (from the project root) and must exit 0, printing no
--               failed check ("FAILED", "ok: false") and no raw Lua error
--               ("attempt to ...", a traceback, a .lua:LINE: position).
--   FILE.relay  `devplan parse FILE` must succeed or print a positioned
--               error (FILE:LINE:COL: message), never crash, hang or print a
--               raw error; an input the header says must be rejected must be
--               an error; a success must print text that parses again to the
--               same text.
--   slow_*      must also scale: a .relay by parsing it in this process with
--               its longest repeated piece at n and 2n copies; a .lua by the
--               times it prints per size (n=... name=SECONDSs).

local dp = require "devplan"
local testing = require "devplan.testing"
local proc = dofile((dp.root or ".") .. "/spec/support/proc.lua")

local DIRS = {testing.shared_dir .. "/repro", (dp.root or ".") .. "/fuzz/findings"}
local QUICK = os.getenv("DEVPLAN_QUICK") ~= nil or testing.instrumented

-- Reproducers not fixed yet, each naming its issue: reported pending (with
-- why) instead of failing the suite, so other work lands. Each is run by
-- hand (`bin/devplan PATH`: exit 1 while the defect is there); the entry
-- goes when the fix lands.
local OPEN = {}

-- {name =, path =} of every reproducer, folder by folder, sorted by name.
local function files()
  local out = {}
  for _, dir in ipairs(DIRS) do
    local names = {}
    local ls = io.popen("ls '" .. dir .. "' 2>/dev/null")
    for name in ls:lines() do
      if (name:match("%.lua$") or name:match("%.relay$")) and name ~= "common.lua" then
        names[#names + 1] = name
      end
    end
    ls:close()
    table.sort(names)
    for _, name in ipairs(names) do out[#out + 1] = {name = name, path = dir .. "/" .. name} end
  end
  return out
end

local function header(text, comment)
  local lines = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do
    if line:sub(1, #comment) ~= comment then break end
    lines[#lines + 1] = line
  end
  return table.concat(lines, "\n")
end

-- ------------------------------------------------------------ checks (nil or why it fails)

local RAW = {"attempt to %a+ a", "stack traceback", "[%w_/]+%.lua:%d+: ", "subcapture nesting",
             "no integer representation"}

local function raw_error_in(out)
  for _, pat in ipairs(RAW) do
    local at = out:find(pat)
    if at then return out:sub(math.max(1, at - 40), at + 160) end
  end
end

local function signal_or_hang(r)
  if r.timed_out then return "did not finish in time" end
  if r.status >= 128 then return "killed by signal " .. (r.status - 128) end
  if r.status == 86 or r.status == 99 then return "sanitizer or valgrind report (status " .. r.status .. ")" end
end

local function check_lua(path)
  local r = proc.run({path}, {timeout = 600})
  local bad = signal_or_hang(r)
  if bad then return bad .. "\n" .. r.out:sub(1, 2000) end
  if r.status ~= 0 then return "exit status " .. r.status .. "\n" .. r.out:sub(1, 2000) end
  local raw = raw_error_in(r.out)
  if raw then return "raw error in the output: " .. raw end
  local failed = r.out:match("[^\n]*FAILED[^\n]*") or r.out:match("[^\n]*ok:%s*false[^\n]*")
  if failed then return "a check failed: " .. failed end
  return nil, r
end

local function positioned(stderr, path)
  local first = stderr:match("^[^\n]*") or ""
  return first:find("^" .. path:gsub("%p", "%%%0") .. ":%d+:%d+: ") ~= nil
end

local function check_relay(path, head)
  local r = proc.run({"parse", path}, {timeout = 600})
  local bad = signal_or_hang(r)
  if bad then return bad .. "\n" .. r.out:sub(1, 2000) end
  local raw = raw_error_in(r.out)
  if raw then return "raw error: " .. raw end
  local must_reject = head:find("rejected") or head:find("must be an error") or head:find("should be an error")
  if r.status == 0 then
    if must_reject then return "parsed without an error; the header says it must be rejected" end
    local again = proc.write(r.stdout)
    local r2 = proc.run({"parse", again}, {timeout = 600})
    os.remove(again)
    if r2.status ~= 0 then return "printed text does not parse again:\n" .. r2.out:sub(1, 1000) end
    if r2.stdout ~= r.stdout then return "printed text prints differently when parsed again" end
    return nil
  end
  if r.status ~= 1 then return "exit status " .. r.status .. "\n" .. r.out:sub(1, 1000) end
  if not positioned(r.stderr, path) then return "an error without a position:\n" .. r.stderr:sub(1, 1000) end
  return nil
end

-- ------------------------------------------------------------ scaling

-- The longest run of one piece repeated back to back: before, piece, count, after.
local function repeated_run(text)
  local best
  for len = 2, 40 do
    for i = 1, #text - 2 * len + 1 do
      local piece = text:sub(i, i + len - 1)
      local k = 1
      while text:sub(i + k * len, i + (k + 1) * len - 1) == piece do k = k + 1 end
      if k >= 4 and (not best or k * len > best.count * #best.piece) then
        best = {before = text:sub(1, i - 1), piece = piece, count = k, after = text:sub(i + k * len)}
      end
    end
  end
  return best
end

-- Seconds per dp.parse of text (errors included), repeated to at least 0.1 s;
-- nil when a single parse takes longer than limit.
local function parse_time(text, limit)
  local n, t0 = 0, os.clock()
  repeat
    pcall(dp.parse, text)
    n = n + 1
    local t = os.clock() - t0
    if n == 1 and t > limit then return nil end
  until os.clock() - t0 >= 0.1
  return (os.clock() - t0) / n
end

local function check_relay_scaling(text)
  local run = repeated_run(text)
  if not run then return nil end
  -- a quarter and a half of the written size: an exponential parser shows
  -- already there, without spending the file's whole time
  local half = math.max(2, run.count // 4)
  local small = run.before .. run.piece:rep(half) .. run.after
  local big = run.before .. run.piece:rep(2 * half) .. run.after
  local t1 = parse_time(small, 2)
  if not t1 then return ("parsing %d copies of %q takes over 2 s"):format(half, run.piece) end
  local t2 = parse_time(big, 2)
  if not t2 then return ("parsing %d copies of %q takes over 2 s"):format(2 * half, run.piece) end
  if t2 > 6 * t1 and t2 > 0.001 then
    return ("%d -> %d copies of %q: %.4f s -> %.4f s per parse (not linear)"):format(half, 2 * half, run.piece, t1, t2)
  end
end

-- Lines "n=N ... name=Ss ...": each time may grow at most 3x as fast as n
-- between the first and the last line (linear: as fast), once above 0.3 s.
local function check_printed_scaling(out)
  local rows = {}
  for line in out:gmatch("[^\n]+") do
    local n = tonumber(line:match("n=(%d+)"))
    if n then
      local row = {n = n, t = {}}
      for name, s in line:gmatch("([%w_+]+)=(%d+%.?%d*)s") do row.t[name] = tonumber(s) end
      rows[#rows + 1] = row
    end
  end
  if #rows < 2 then return nil end
  local first, last = rows[1], rows[#rows]
  for name, t in pairs(last.t) do
    local t0 = first.t[name]
    if t0 and t > 0.3 and t / math.max(t0, 1e-3) > 3 * (last.n / first.n) then
      return ("%s: %.3f s at n=%d, %.3f s at n=%d (superlinear)"):format(name, t0, first.n, t, last.n)
    end
  end
end

-- ------------------------------------------------------------ the tests

local function check(name, path)
  local text = testing.read_file(path)
  local slow = name:match("^slow_") ~= nil
  if name:match("%.lua$") then
    local why, r = check_lua(path)
    if not why and slow then why = check_printed_scaling(r.out) end
    return why
  end
  local why = check_relay(path, header(text, "//"))
  if not why and slow then why = check_relay_scaling(text) end
  return why
end

describe("reproducers of ../shared/repro and fuzz/findings", function()
  local list = files()

  it("are there to run", function()
    assert.is_true(#list > 0, "no reproducers in " .. table.concat(DIRS, ", "))
  end)

  for _, file in ipairs(list) do
    local name, path = file.name, file.path
    local slow = name:match("^slow_") ~= nil
    if OPEN[name] then
      pending(name .. ": open, " .. OPEN[name])
    elseif slow and QUICK then
      pending(name .. ": timing is not meaningful under instrumentation")
    else
      it(name, function()
        local why = check(name, path)
        assert.is_nil(why, name .. ": " .. tostring(why))
      end)
    end
  end
end)
