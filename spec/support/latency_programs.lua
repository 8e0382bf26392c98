-- Small generated programs for the latency placement's specs, and brute
-- force over every placement of them written as annotations in the text
-- (independent of dp_sched_annotate): each call, each of @main's two
-- parameters and @main's result on each device, planned by TVM's rules,
-- ShareCopies, scheduled.
--
--   local P = dofile("spec/support/latency_programs.lua")
--   local prog = P.program(seed, n, {hard = 15, soft = 20})  -- {text =, calls = {...}, module =}
--   local cost = P.cost(seed)                                  -- function(call, vd) -> seconds | nil
--   local best = P.brute(prog, config, {cost =, bandwidth =, score = function(planned, schedule) end})
local dp = require "devplan"
local testing = require "devplan.testing"

local M = {}

local CPU, GPU = "meta[VirtualDevice][0]", "meta[VirtualDevice][1]"
M.DEVICES = {CPU, GPU}

local function rng_of(seed)
  local s = seed
  return function(lo, hi)
    s = (s * 1103515245 + 12345) % 2147483648
    return lo + (s // 65536) % (hi - lo + 1)
  end
end
M.rng = rng_of

local OPS = {"negative", "exp", "sqrt", "tanh", "add", "multiply", "subtract"}
local BINARY = {add = true, multiply = true, subtract = true}

-- A dataflow program of n calls reading earlier values and @main's two
-- parameters; opts.hard (percent) of the calls annotated on a device,
-- opts.soft (percent) softly, with weights opts.weight(rng) (default 0..3
-- seconds). The result: every value read at most once, in a tuple (or the
-- last value alone when it is the only one). opts.shape: the tensors' shape.
function M.program(seed, n, opts)
  opts = opts or {}
  local rng = rng_of(seed)
  local shape = opts.shape or "(5, 7)"
  local vals, calls = {"%a", "%b"}, {}
  for i = 1, n do
    local op = OPS[rng(1, #OPS)]
    local args = {vals[rng(1, #vals)]}
    if BINARY[op] then args[2] = vals[rng(1, #vals)] end
    local c = {op = op, args = args}
    local r = rng(1, 100)
    if r <= (opts.hard or 0) then
      c.fixed = rng(1, 2)
    elseif r <= (opts.hard or 0) + (opts.soft or 0) then
      c.soft = rng(1, 2)
      c.weight = opts.weight and opts.weight(rng) or rng(0, 30) / 10
    end
    calls[i] = c
    vals[#vals + 1] = "%" .. (i - 1)
  end
  local read = {}
  for _, c in ipairs(calls) do for _, a in ipairs(c.args) do read[a] = (read[a] or 0) + 1 end end
  local out = {}
  for i = 3, #vals do if (read[vals[i]] or 0) <= 1 then out[#out + 1] = vals[i] end end
  local prog = {calls = calls, out = out, shape = shape}
  prog.text = M.text(prog)
  prog.module = dp.parse(prog.text, testing.META)
  return prog
end

-- The program's text; with placement {calls = {d, ...}, params = {da, db},
-- result = d} every call, parameter and the result on those devices
-- (soft annotations dropped: the placement decides).
function M.text(prog, placement)
  local lines = {}
  for i, c in ipairs(prog.calls) do
    local call = c.op .. "(" .. table.concat(c.args, ", ") .. ")"
    if placement then
      call = "on_device(" .. call .. ", virtual_device=" .. M.DEVICES[placement.calls[i]] .. ")"
    elseif c.fixed then
      call = "on_device(" .. call .. ", virtual_device=" .. M.DEVICES[c.fixed] .. ")"
    elseif c.soft then
      call = "on_device(" .. call .. ", virtual_device=" .. M.DEVICES[c.soft] .. ", soft=" .. c.weight .. ")"
    end
    lines[#lines + 1] = "  %" .. (i - 1) .. " = " .. call .. ";\n"
  end
  local function param(name, k)
    local vd = placement and placement.params[k] and (" {virtual_device=" .. M.DEVICES[placement.params[k]] .. "}") or ""
    return "%" .. name .. vd .. ": Tensor[" .. prog.shape .. ", float32]"
  end
  local result = #prog.out == 1 and prog.out[1] or "(" .. table.concat(prog.out, ", ") .. ",)"
  local rdev = placement and placement.result and (", virtual_device=" .. M.DEVICES[placement.result]) or ""
  return '#[version = "0.0.5"]\ndef @main(' .. param("a", 1) .. ", " .. param("b", 2) .. rdev .. ") {\n"
    .. table.concat(lines) .. "  " .. result .. "\n}\n"
end

-- A cost model of seed: each operator its own seconds per device (1..5),
-- the GPU faster or slower by operator; with cannot, some operators cannot
-- run on the GPU (nil).
function M.cost(seed, cannot)
  return function(call, vd)
    local name = call.callee.name
    local h = 0
    for i = 1, #name do h = (h * 31 + name:byte(i)) % 1000 end
    local base = 1 + (h + seed) % 5
    if vd.device_type_name ~= "cuda" then return base end
    if cannot and (h + seed) % 4 == 0 then return nil end
    return base * ((h % 3) + 1) / 2
  end
end

-- Every placement of the program (calls, both parameters, and the result
-- where it is a tuple), each planned and scored: the best score (lowest
-- first value of score(planned, schedule, placement) -> number, ...; the
-- default: the makespan), and that placement. Placements TVM's rules cannot
-- plan, or where the cost model says a device cannot run a call, are left
-- out. config: two devices (cpu, cuda).
function M.brute(prog, config, opts)
  local n = #prog.calls
  local free = {}
  for i, c in ipairs(prog.calls) do if not c.fixed then free[#free + 1] = i end end
  local tuple = #prog.out > 1
  local nfree = #free + 2 + (tuple and 1 or 0)
  local best, best_place, count = nil, nil, 0
  local score = opts.score or function(_, s) return s.makespan end
  for mask = 0, (1 << nfree) - 1 do
    local bits = function(k) return ((mask >> (k - 1)) & 1) + 1 end
    local place = {calls = {}, params = {bits(#free + 1), bits(#free + 2)}, result = tuple and bits(#free + 3) or nil}
    for i, c in ipairs(prog.calls) do place.calls[i] = c.fixed end
    for k, i in ipairs(free) do place.calls[i] = bits(k) end
    local mod = dp.parse(M.text(prog, place), testing.META)
    local ok, planned = pcall(function() return dp.passes.ShareCopies()(dp.passes.PlanDevices(config)(mod)) end)
    if ok then
      local sok, s = pcall(dp.planner.schedule, planned, config, {cost = opts.cost, bandwidth = opts.bandwidth})
      if sok then
        count = count + 1
        local v = score(planned, s, place)
        if v and (not best or v < best) then best, best_place = v, place end
      end
    end
  end
  assert(n == 0 or count > 0, "brute force: no placement planned")
  return best, best_place, count
end

-- The broken soft annotations' weight in a planned module: the device each
-- call runs on (tasks of its schedule, by position in the text).
function M.soft_broken(prog, schedule)
  local where = {}
  for _, t in ipairs(schedule.tasks) do
    if t.kind == "call" then where[t.expr.span.line] = t.device.device_type_name end
  end
  local w = 0
  for i, c in ipairs(prog.calls) do
    local line = i + 2 -- (the text's line of call i)
    local want = c.soft and (c.soft == 1 and "cpu" or "cuda")
    if want and where[line] ~= want then w = w + c.weight end
  end
  return w
end

return M
