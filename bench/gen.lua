-- Generated workloads of ../shared/bench/gen_relay.py (chain, let, branchy),
-- built in Lua byte for byte as the Python builds them, so that the
-- benchmarks and specs need no Python.
local M = {}

local TY = "Tensor[(5, 7), float32]"
local CPU = "meta[VirtualDevice][0]"
local GPU = "meta[VirtualDevice][1]"
local OPS = {[0] = "add", "multiply"}

-- Each shape returns its text; given a file (anything with :write), it
-- writes the text there instead, in pieces (a 10,000,000-call module is
-- hundreds of megabytes: bench/perf.lua), and returns nothing.
local function piecewise(file)
  local out = {}
  if not file then return out, function() return table.concat(out) end end
  return setmetatable({}, {__newindex = function(t, k, v)
    out[#out + 1] = v
    if #out >= 4096 then
      file:write(table.concat(out))
      out = {}
    end
  end, __len = function() return 0 end}), function() file:write(table.concat(out)) end
end

local function header(out)
  out[#out + 1] = '#[version = "0.0.5"]\n'
  out[#out + 1] = "def @main(%a: " .. TY .. ", %b: " .. TY .. ") {\n"
end

function M.chain(n, file)
  local out, done = piecewise(file)
  header(out)
  local prev, k = "%a", 0
  for i = 0, n - 1 do
    out[#out + 1] = "  %" .. k .. " = " .. OPS[i % 2] .. "(" .. prev .. ", %b);\n"
    k = k + 1
    if i % 10 == 9 then
      out[#out + 1] = "  %" .. k .. " = on_device(%" .. (k - 1) .. ", virtual_device=" .. CPU .. ");\n"
      k = k + 1
    end
    prev = "%" .. (k - 1)
  end
  out[#out + 1] = "  " .. prev .. "\n}\n"
  return done()
end

function M.let(n, file)
  local out, done = piecewise(file)
  header(out)
  local prev = "%a"
  for i = 0, n - 1 do
    local val = OPS[i % 2] .. "(" .. prev .. ", %b)"
    if i % 10 == 9 then val = "on_device(" .. val .. ", virtual_device=" .. CPU .. ")" end
    out[#out + 1] = "  let %x" .. i .. " = " .. val .. ";\n"
    prev = "%x" .. i
  end
  out[#out + 1] = "  " .. prev .. "\n}\n"
  return done()
end

function M.branchy(n, naive, file)
  local function dev_of(i) return (i // 50) % 2 == 0 and CPU or GPU end
  local out, done = piecewise(file)
  header(out)
  -- (the name of call i: %k where k counts the lines before it, one more
  -- when an on_device follows it; computed, not kept: 10M names are a GB)
  local function name(i) return "%" .. (i + i // 50 + (i % 50 == 49 and 1 or 0)) end
  local k = 0
  for i = 0, n - 1 do
    local lhs, rhs
    if i == 0 then
      lhs, rhs = "%a", "%b"
    else
      local ops = {}
      for _, j in ipairs{i - 1, i // 2} do
        local ref = name(j)
        if not naive and dev_of(j) ~= dev_of(i) then
          ref = "on_device(" .. ref .. ", virtual_device=" .. dev_of(j) .. ")"
        end
        ops[#ops + 1] = ref
      end
      lhs, rhs = ops[1], ops[2]
    end
    out[#out + 1] = "  %" .. k .. " = " .. OPS[i % 2] .. "(" .. lhs .. ", " .. rhs .. ");\n"
    k = k + 1
    if i % 50 == 49 then
      out[#out + 1] = "  %" .. k .. " = on_device(%" .. (k - 1) .. ", virtual_device=" .. dev_of(i) .. ");\n"
      k = k + 1
    end
  end
  out[#out + 1] = "  " .. name(n - 1) .. "\n}\n"
  return done()
end

M["branchy-naive"] = function(n) return M.branchy(n, true) end

-- devplan's own (gen_relay.py has no such shape): n independent conflicts
-- for all_conflicts (bench/conflict.lua, spec/plan_all_conflicts_spec.lua).
-- Let i binds a value annotated on the CPU, which the next let reads on the
-- GPU: a conflict at each of the n CPU lets, by default and strict alike.
function M.conflicts(n)
  local out = {}
  header(out)
  for i = 0, n - 1 do
    out[#out + 1] = "  let %x" .. i .. " = on_device(negative(%a), virtual_device=" .. CPU .. ");\n"
    out[#out + 1] = "  let %y" .. i .. " = on_device(exp(%x" .. i .. "), virtual_device=" .. GPU .. ");\n"
  end
  out[#out + 1] = "  %y" .. (n - 1) .. "\n}\n"
  return table.concat(out)
end

-- The chain as TVM's printer writes it after type inference: a
-- `/* ty=... */` comment after each parameter and before each `;`.
M["chain-ty"] = function(n)
  local c = " /* ty=" .. TY .. " */"
  return (M.chain(n):gsub("(%%[ab]: Tensor%b[])", "%1" .. c):gsub("%);\n", ")" .. c .. ";\n"))
end

-- The file DIR/SHAPE_N.relay of a shape at n calls, written once (through
-- a temporary name, so that an interrupted run leaves no half file) and
-- then reused: bench/perf.lua's and bench/memory.lua's modules.
function M.file(dir, shape, n)
  local path = ("%s/%s_%d.relay"):format(dir, shape, n)
  local f = io.open(path)
  if f then
    f:close()
    return path
  end
  os.execute("mkdir -p '" .. dir .. "'")
  f = assert(io.open(path .. ".tmp", "wb"))
  if shape == "branchy" then M.branchy(n, false, f) else M[shape](n, f) end
  assert(f:close())
  assert(os.rename(path .. ".tmp", path))
  return path
end

return M
