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
local runner = require "runner"

local opts = runner.options("eval_run", arg,
  {n = 1000, seed = 1, out = dp.root .. "/fuzz/failures", shrink = true, max_failures = 20},
  {"n", "seed", "depth", "out", "max-failures", "no-shrink", "quiet"})

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

local tally = runner.tally(opts)
for seed = opts.seed, opts.seed + opts.n - 1 do
  local prog = gen.program(seed, {depth = opts.depth})
  local failure, outcome = check(prog, seed)
  if failure then
    if tally:fail(seed, failure) then
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
      runner.write(path, reproducer(seed, small, f2))
      print(("FAIL seed %d %s -> %s\n  %s"):format(seed, f2.property, path,
        (f2.detail:sub(1, 300):gsub("\n", "\n  "))))
    end
  else
    tally:ok(outcome)
  end
  tally:progress(seed)
end
tally:finish()
