-- What the program runners of fuzz/ (gen_run.lua, eval_run.lua,
-- copies_run.lua) share: their command line, files, how a failure's cause
-- is told apart from the program it failed on, and the count they end with.
--
--   local runner = require "runner"
--   local opts = runner.options("eval_run", arg, {n = 1000, seed = 1},
--                               {"n", "seed", "depth", "quiet"}, {["--extra"] = "extra"})
--   local tally = runner.tally(opts)
--   for seed = ... do
--     if failure then if tally:fail(seed, failure) then --[[write it]] end
--     else tally:ok(outcome) end
--     tally:progress(seed)
--   end
--   tally:finish()            -- the summary, "N passed, N failed", and the exit status
local M = {}

-- The options the runners know: the field of opts each sets, and what it
-- takes ("int", "string", or a value set by the flag alone).
local KNOWN = {
  ["--n"] = {"n", "int"}, ["--seed"] = {"seed", "int"}, ["--depth"] = {"depth", "int"},
  ["--devices"] = {"devices", "int"}, ["--out"] = {"out", "string"}, ["--file"] = {"file", "string"},
  ["--max-failures"] = {"max_failures", "int"}, ["--per-cause"] = {"per_cause", "int"},
  ["--no-shrink"] = {"shrink", false}, ["--quiet"] = {"quiet", true},
}

-- opts from the command line argv: `defaults`, then the options named in
-- `allowed` (their names without "--"), and `flags` ({["--x"] = "field"}:
-- flags of this runner alone, each setting its field to true). An unknown
-- option, or one missing its value or given a bad number, ends the run
-- (status 2) with a line naming `who`.
local function usage(msg)
  io.stderr:write(msg, "\n")
  os.exit(2)
end

function M.options(who, argv, defaults, allowed, flags)
  local opts, ok = {}, {}
  for k, v in pairs(defaults) do opts[k] = v end
  for _, name in ipairs(allowed) do ok["--" .. name] = KNOWN["--" .. name] end
  local i = 1
  while i <= #argv do
    local a = argv[i]
    local spec = ok[a]
    if flags and flags[a] then
      opts[flags[a]] = true
    elseif not spec then
      usage(who .. ": unknown option " .. a)
    elseif spec[2] == "int" or spec[2] == "string" then
      i = i + 1
      local v = argv[i] or usage(who .. ": " .. a .. " needs a value")
      if spec[2] == "int" then
        v = math.tointeger(tonumber(v)) or usage(who .. ": " .. a .. " needs a whole number, got " .. v)
      end
      opts[spec[1]] = v
    else
      opts[spec[1]] = spec[2]
    end
    i = i + 1
  end
  return opts
end

function M.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

function M.write(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

-- What a failure says without what differs between programs: its first
-- line with positions, names and numbers left out, after the property.
function M.cause(failure)
  local line = failure.detail:match("^[^\n]*")
  line = line:gsub("<string>:%d+:%d+:? ?", ""):gsub("at %d+:%d+", "")
  line = line:gsub("%%[%w_.]+", "%%x"):gsub("@[%w_]+", "@f"):gsub("%d+", "N")
  line = line:gsub('memory scope "[^"]*"', 'memory scope "S"')
  return failure.property .. ": " .. line:sub(1, 160)
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

local Tally = {}
Tally.__index = Tally

-- Counts of a run over opts.n programs from opts.seed: outcomes of the
-- programs that passed, failures by property and by cause.
function M.tally(opts)
  return setmetatable({opts = opts, outcomes = {}, failures = {}, causes = {}, failed = 0, written = 0,
                       t0 = os.clock()}, Tally)
end

function Tally:ok(outcome)
  if outcome then self.outcomes[outcome] = (self.outcomes[outcome] or 0) + 1 end
end

-- Counts a failure; true when it is one to write out (within
-- opts.max_failures in all, and opts.per_cause of its cause).
function Tally:fail(seed, failure)
  self.failed = self.failed + 1
  self.failures[failure.property] = (self.failures[failure.property] or 0) + 1
  local c = M.cause(failure)
  local entry = self.causes[c] or {n = 0, seed = seed}
  self.causes[c] = entry
  entry.n = entry.n + 1
  local opts = self.opts
  if self.written < (opts.max_failures or math.maxinteger) and entry.n <= (opts.per_cause or math.maxinteger) then
    self.written = self.written + 1
    return true
  end
  return false
end

-- Every thousand programs, a line on standard error (unless opts.quiet).
function Tally:progress(seed)
  local done = seed - self.opts.seed + 1
  if not self.opts.quiet and done % 1000 == 0 then
    io.stderr:write(("%d programs, %d failed, %.0f s\n"):format(done, self.failed, os.clock() - self.t0))
  end
end

-- The summary (outcomes, failures by property and by cause with the first
-- seed of each), the last line "N passed, N failed", and the exit status:
-- 1 when any failed.
function Tally:finish()
  local opts = self.opts
  print(("%d programs (seeds %d..%d), %.1f s"):format(opts.n, opts.seed, opts.seed + opts.n - 1, os.clock() - self.t0))
  for _, k in ipairs(sorted_keys(self.outcomes)) do print(("  %-20s %d"):format(k, self.outcomes[k])) end
  for _, k in ipairs(sorted_keys(self.failures)) do print(("  FAILED %-13s %d"):format(k, self.failures[k])) end
  if self.failed > 0 then print("by cause (count, first seed):") end
  for _, k in ipairs(sorted_keys(self.causes)) do
    print(("  %5d  %-8d %s"):format(self.causes[k].n, self.causes[k].seed, k))
  end
  print(("%d passed, %d failed"):format(opts.n - self.failed, self.failed))
  os.exit(self.failed == 0 and 0 or 1)
end

return M
