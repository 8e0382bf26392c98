-- Runs programs full of function literals (fuzz/relaygen_fn.lua) through
-- the properties of fuzz/eval_props.lua (the passes keep what a program
-- computes), shrinks each failing one and writes it as a reproducer.
--
--   bin/devplan fuzz/eval_run.lua [--n N] [--seed S] [--depth D] [--out DIR]
--                                 [--no-shrink] [--max-failures K] [--quiet]
--
-- Seeds S .. S+N-1 (defaults: N 1000, S 1). Each failure (the first K,
-- default 20) is shrunk and written to DIR (default fuzz/failures/) as
-- PROPERTY-SEED.lua: a reproducer that exits 1 while the defect is there,
-- which spec/repro_spec.lua runs once it is moved to fuzz/findings/. The
-- summary counts outcomes, failures by property and by cause (the first
-- line of what failed, names and numbers left out) with the first seed of
-- each; the last line is "N passed, N failed"; the exit status 1 when any
-- failed.
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen_fn"
local eval_props = require "eval_props"

local opts = {n = 1000, seed = 1, out = dp.root .. "/fuzz/failures", shrink = true, max_failures = 20}
local i = 1
while i <= #arg do
  local a = arg[i]
  local function value()
    i = i + 1
    return arg[i] or error("eval_run: " .. a .. " needs a value", 0)
  end
  if a == "--n" then opts.n = math.tointeger(tonumber(value()))
  elseif a == "--seed" then opts.seed = math.tointeger(tonumber(value()))
  elseif a == "--depth" then opts.depth = math.tointeger(tonumber(value()))
  elseif a == "--out" then opts.out = value()
  elseif a == "--max-failures" then opts.max_failures = math.tointeger(tonumber(value()))
  elseif a == "--no-shrink" then opts.shrink = false
  elseif a == "--quiet" then opts.quiet = true
  else error("eval_run: unknown option " .. a, 0) end
  i = i + 1
end

local function argsets(prog) return {gen.args(prog, 1), gen.args(prog, 2), gen.args(prog, 3)} end

local function check(prog, seed)
  return eval_props.check(gen.text(prog), argsets(prog), seed)
end

local sorted_keys = require("devplan.testing").sorted_keys

-- Argument sets as Lua source: {{["a1"] = 3, ["a2"] = true}, ...}
local function args_text(sets)
  local parts = {}
  for k, args in ipairs(sets) do
    local kv = {}
    for _, name in ipairs(sorted_keys(args)) do kv[#kv + 1] = ("[%q] = %s"):format(name, tostring(args[name])) end
    parts[k] = "{" .. table.concat(kv, ", ") .. "}"
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- A reproducer: the program, its arguments and the property, as a Lua file
-- that checks it again.
local function reproducer(seed, prog, failure)
  local text = gen.text(prog)
  local lines = {
    ("-- %s failed on generated program seed %d (fuzz/relaygen_fn.lua), shrunk: run it from the"):format(
      failure.property, seed),
    "-- project root with bin/devplan FILE (exits 1 while the defect is there).",
    "-- " .. (failure.detail:match("^[^\n]*") or ""),
    "local dp = require \"devplan\"",
    "package.path = dp.root .. \"/fuzz/?.lua;\" .. package.path",
    "local eval_props = require \"eval_props\"",
    ("local text = %q"):format(text),
    "local argsets = " .. args_text(argsets(prog)),
    ("local failure = eval_props.check(text, argsets, %d)"):format(seed),
    "if failure then print(\"FAILED \" .. failure.property .. \": \" .. failure.detail) os.exit(1) end",
    "print(\"ok\")",
  }
  return table.concat(lines, "\n") .. "\n"
end

local function write(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

-- What a failure says, without what differs between programs (names, numbers).
local function cause(failure)
  local line = failure.detail:match("^[^\n]*")
  line = line:gsub("%%[%w_.]+", "%%x"):gsub("@[%w_]+", "@f"):gsub("%d+", "N")
  return failure.property .. ": " .. line:sub(1, 160)
end

local outcomes, failures, nfail, written, causes = {}, {}, 0, 0, {}
local t0 = os.clock()
for seed = opts.seed, opts.seed + opts.n - 1 do
  local prog = gen.program(seed, {depth = opts.depth})
  local failure, outcome = check(prog, seed)
  if failure then
    nfail = nfail + 1
    failures[failure.property] = (failures[failure.property] or 0) + 1
    local c = cause(failure)
    causes[c] = causes[c] or {n = 0, seed = seed}
    causes[c].n = causes[c].n + 1
    if written < opts.max_failures then
      written = written + 1
      local small = prog
      if opts.shrink then
        small = gen.shrink(prog, function(cand)
          local f = check(cand, seed)
          return f ~= nil and f.property == failure.property
        end)
      end
      local f2 = check(small, seed) or failure
      os.execute("mkdir -p '" .. opts.out .. "'")
      local path = ("%s/%s-%d.lua"):format(opts.out, f2.property, seed)
      write(path, reproducer(seed, small, f2))
      print(("FAIL seed %d %s -> %s\n  %s"):format(seed, f2.property, path,
        (f2.detail:sub(1, 300):gsub("\n", "\n  "))))
    end
  else
    outcomes[outcome] = (outcomes[outcome] or 0) + 1
  end
  if not opts.quiet and (seed - opts.seed + 1) % 1000 == 0 then
    io.stderr:write(("%d programs, %d failed, %.0f s\n"):format(seed - opts.seed + 1, nfail, os.clock() - t0))
  end
end

print(("%d programs (seeds %d..%d), %.1f s"):format(opts.n, opts.seed, opts.seed + opts.n - 1, os.clock() - t0))
for _, k in ipairs(sorted_keys(outcomes)) do print(("  %-20s %d"):format(k, outcomes[k])) end
for _, k in ipairs(sorted_keys(failures)) do print(("  FAILED %-13s %d"):format(k, failures[k])) end
if nfail > 0 then print("by cause (count, first seed):") end
for _, k in ipairs(sorted_keys(causes)) do print(("  %5d  %-8d %s"):format(causes[k].n, causes[k].seed, k)) end
print(("%d passed, %d failed"):format(opts.n - nfail, nfail))
os.exit(nfail == 0 and 0 or 1)
