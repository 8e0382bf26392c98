-- Writes the fuzzer's seed inputs to a folder: the conformance cases'
-- input and expected texts, the small models whole and prefixes of the
-- large ones (the first statements of @main, closed), and generated
-- programs (fuzz/relaygen.lua).
--
--   bin/devplan fuzz/make_seeds.lua DIR [GENERATED=150]
--
-- fuzz/run.sh --seed minimises these into fuzz/corpus/ (the committed corpus).
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen"
local testing = require "devplan.testing"

local dir = assert(arg[1], "usage: bin/devplan fuzz/make_seeds.lua DIR [GENERATED]")
local ngen = math.tointeger(tonumber(arg[2] or "150"))
os.execute("mkdir -p '" .. dir .. "'")
local count = 0

local function write(name, text)
  local f = assert(io.open(dir .. "/" .. name, "wb"))
  f:write(text)
  f:close()
  count = count + 1
end

local shared = testing.shared_dir
for _, file in ipairs(testing.lua_files(shared .. "/conformance/cases")) do
  local case = dofile(shared .. "/conformance/cases/" .. file)
  local name = file:match("^(.+)%.lua$")
  for _, field in ipairs{"input", "expected"} do
    local text = case[field]
    if type(text) == "function" then text = nil end -- generated at size: too big for a seed
    if text then write(("conf-%s-%s.relay"):format(name, field), text) end
  end
end

-- A model's header and first def up to its k-th statement, closed by
-- returning the last bound value.
local function prefix(text, k)
  local out, last, n = {}, nil, 0
  for line in (text .. "\n"):gmatch("(.-)\n") do
    local bound = line:match("^  (%%%d+) = ")
    if bound then
      n = n + 1
      last = bound
    elseif n > 0 then
      break -- the first def's statements ended
    end
    out[#out + 1] = line
    if n == k then break end
  end
  if not last then return nil end
  out[#out + 1] = "  " .. last
  out[#out + 1] = "}"
  return table.concat(out, "\n") .. "\n"
end

local models = io.popen("ls '" .. shared .. "/models/'*.relay")
for path in models:lines() do
  local text = testing.read_file(path)
  local name = path:match("([^/]+)%.relay$")
  if #text <= 4096 then
    write("model-" .. name .. ".relay", text)
  else
    for _, k in ipairs{4, 12, 30} do
      local p = prefix(text, k)
      if p then write(("model-%s-%d.relay"):format(name, k), p) end
    end
  end
end
models:close()

-- depths 1 to 3 in turn: small programs of each construct (ADTs, match,
-- references, primfns, the memory and VM operators) make small seeds
for seed = 1, ngen do
  local depth = 1 + (seed - 1) % 3
  write(("gen-%d-d%d.relay"):format(seed, depth), gen.text(gen.program(seed, {depth = depth})))
end
print(("wrote %d seeds to %s"):format(count, dir))
