-- The Lua side's modules, as LPeg's re.lua keeps its own: each requires
-- what it uses (never "devplan" itself but the command line, the REPL and
-- the testing helpers, which stand above it), no module requires another
-- that comes back to it, even when first run, and each sets `_ENV = nil`
-- once it has taken the globals it uses, so that no global is read or set
-- after that line (a misspelt name is an error when the chunk loads, in
-- luac's listing, not a nil at run time).
local ROOT = "lua"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- Every module: name -> path.
local function modules()
  local out = {}
  local p = assert(io.popen("find " .. ROOT .. " -name '*.lua' | sort"))
  for path in p:lines() do
    local name = path:sub(#ROOT + 2):gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
    out[name] = path
  end
  p:close()
  return out
end

-- The text without comments (long ones and to the end of the line).
local function code_of(text)
  text = text:gsub("%-%-%[(=*)%[.-%]%1%]", "")
  return (text:gsub("%-%-[^\n]*", ""))
end

-- The modules of ours a file requires, anywhere in it (at load time or
-- when a function first runs).
local function requires(text, mods)
  local out = {}
  for name in code_of(text):gmatch("require%s*%(?%s*[\"']([%w_.]+)[\"']") do
    if mods[name] then out[name] = true end
  end
  return out
end

-- A cycle of the require graph (a list of names, the first repeated), or nil.
local function cycle(graph)
  local names = {}
  for n in pairs(graph) do names[#names + 1] = n end
  table.sort(names)
  local state, stack = {}, {}
  local function visit(n)
    state[n] = "open"
    stack[#stack + 1] = n
    local deps = {}
    for d in pairs(graph[n]) do deps[#deps + 1] = d end
    table.sort(deps)
    for _, d in ipairs(deps) do
      if state[d] == "open" then
        local out, on = {}, false
        for _, s in ipairs(stack) do
          if s == d then on = true end
          if on then out[#out + 1] = s end
        end
        out[#out + 1] = d
        return out
      elseif not state[d] then
        local c = visit(d)
        if c then return c end
      end
    end
    state[n] = "done"
    stack[#stack] = nil
  end
  for _, n in ipairs(names) do
    if not state[n] then
      local c = visit(n)
      if c then return c end
    end
  end
end

-- The globals a chunk reads or sets where it must not, from luac5.4's
-- listing of the chunk with its `_ENV = nil` line blanked (so that every
-- global shows as one): after that line, or in any function (a function
-- defined above the line runs after it too). A list of "line: OP name", or
-- nil when the chunk has no such line.
local function globals_after(path)
  local text = read(path)
  local line, n = nil, 0
  local lines = {}
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if not line and (l:match("^_ENV = nil") or l:match("^local _ENV = nil")) then
      line = n
      l = ""
    end
    lines[#lines + 1] = l
  end
  if not line then return nil end
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "wb"))
  f:write(table.concat(lines, "\n"))
  f:close()
  local p = assert(io.popen("luac5.4 -p -l -l " .. tmp .. " 2>&1"))
  local listing = p:read("a")
  p:close()
  os.remove(tmp)
  assert(listing:find("main <", 1, true), listing)
  local found, main = {}, true
  for l in listing:gmatch("[^\n]+") do
    if l:match("^main <") then main = true
    elseif l:match("^function <") then main = false
    else
      local at, op, name = l:match("%[(%d+)%]%s+([GS]ETTABUP)[^;]*; _ENV \"([^\"]+)\"")
      if at and (not main or tonumber(at) > line) then found[#found + 1] = at .. ": " .. op .. " " .. name end
    end
  end
  return found
end

describe("the Lua modules", function()
  local mods = modules()

  it("are found where devplan.* names them", function()
    assert.equal("lua/devplan/init.lua", mods.devplan)
    assert.equal("lua/devplan/planner.lua", mods["devplan.planner"])
    assert.equal("lua/devplan/passes/partition_by_virtual_device.lua", mods["devplan.passes.partition_by_virtual_device"])
  end)

  it("require each other without a cycle, even when a function first runs", function()
    local graph = {}
    for name, path in pairs(mods) do graph[name] = requires(read(path), mods) end
    local c = cycle(graph)
    assert.is_nil(c, c and table.concat(c, " -> "))
    -- "devplan" puts the others together; only what stands above it requires it
    for name in pairs(mods) do
      if graph[name].devplan then
        assert.truthy(name == "devplan.cli" or name == "devplan.repl" or name == "devplan.testing", name)
      end
    end
  end)

  it("set _ENV = nil once they have their globals, and use none after it", function()
    local names = {}
    for name in pairs(mods) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      local found = globals_after(mods[name])
      assert.is_table(found, name .. " has no line `_ENV = nil`")
      assert.same({}, found, name)
    end
  end)
end)

describe("the module checks", function()
  it("find a cycle that closes when a function first runs", function()
    local mods = {["devplan.a"] = true, ["devplan.b"] = true, ["devplan.c"] = true}
    local graph = {
      ["devplan.a"] = requires('local b = require "devplan.b"', mods),
      ["devplan.b"] = requires('local function f() return require("devplan.c").g() end', mods),
      ["devplan.c"] = requires("-- require 'devplan.b' (a comment)\nlocal a = require 'devplan.a'", mods),
    }
    assert.same({"devplan.a", "devplan.b", "devplan.c", "devplan.a"}, cycle(graph))
    graph["devplan.c"] = requires("-- require 'devplan.a'\nreturn {}", mods)
    assert.is_nil(cycle(graph))
  end)

  it("find a global used after _ENV = nil, or in a function above it", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write("local function h() return type(1) end\nlocal print = print\n_ENV = nil\n"
      .. "local function g() return print(tostring(1)) end\nreturn g, h\n")
    f:close()
    assert.same({"1: GETTABUP type", "4: GETTABUP tostring"}, globals_after(path))
    os.remove(path)
  end)
end)
