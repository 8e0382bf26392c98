-- The planned module's nodes are made in bulk (capture's node arena,
-- src/core/arena.c): to Lua they are nodes like any other. A node held
-- after its module is dropped keeps what it needs (its chunk, its
-- children), and dropping everything leaves nothing behind (the leak
-- checks of the asan build and valgrind run this spec too).
local dp = require "devplan"
local testing = require "devplan.testing"
local gen = dofile("bench/gen.lua")

local settle = testing.settle

-- The let nodes of a let chain from e, outermost first.
local function lets(e)
  local out = {}
  while e.kind == "let" do
    out[#out + 1] = e
    e = e.body
  end
  return out
end

local function rss_kb()
  local f = io.open("/proc/self/status")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmRSS:%s+(%d+)"))
end

describe("the planned module's node arena", function()
  local config = testing.config("cuda")
  local plan = dp.passes.PlanDevices(config)

  it("makes nodes a script can hold after the module is dropped", function()
    -- 3,000 lets: the planned module spans many chunks
    local planned = plan(dp.parse(gen.let(3000), testing.META))
    local chain = lets(planned.main.body)
    assert.equal(3000, #chain)
    local held = {chain[1], chain[1500], chain[3000], chain[2999].value}
    local text = {}
    for i, e in ipairs(held) do text[i] = tostring(e) end
    planned, chain = nil, nil
    settle()
    -- held nodes, their children and their types are whole
    for i, e in ipairs(held) do assert.equal(text[i], tostring(e)) end
    assert.equal("let", held[2].kind)
    assert.equal("x1499", held[2].var.name)
    assert.equal(1501, #lets(held[2]))
    assert.equal("call", held[4].kind)
    assert.truthy(held[4].checked_type)
    held = nil
    settle()
  end)

  it("drops every node it made when nothing holds them", function()
    settle()
    local base = dp.debug.counts()
    for _ = 1, 5 do
      local planned = plan(dp.parse(gen.let(2000), testing.META))
      assert.equal(2000, #lets(planned.main.body))
    end
    settle()
    assert.same(base, dp.debug.counts())
  end)

  -- the parser makes a large text's calls and lets in an arena too, and a
  -- small text's one by one: a chunk of 64 KiB held by each of many small
  -- modules a script keeps would cost 64 KiB each
  it("is not used for small texts: many small modules kept cost what their nodes do", function()
    -- (a sanitizer's redzones and quarantine make each small module cost tens
    -- of KiB too: the resident size says nothing there)
    if testing.instrumented then return pending("resident size is not meaningful under instrumentation") end
    settle()
    local before = rss_kb()
    if not before then return pending("no /proc/self/status here") end
    local text = '#[version = "0.0.5"]\ndef @main(%a: Tensor[(2), float32]) { %0 = negative(%a); %1 = exp(%0); add(%1, %a) }'
    local kept = {}
    for i = 1, 5000 do kept[i] = dp.parse(text) end
    settle()
    local grown_mb = (rss_kb() - before) / 1024
    -- about 5 MB; with a chunk each, 5,000 x 64 KiB = 312 MB
    assert.is_true(grown_mb < 80, ("5,000 small modules kept grew the process by %.0f MB"):format(grown_mb))
    assert.equal(5000, #kept)
  end)

  -- the planned module keeps its input's variables (its rebuilt calls and
  -- lets refer to them): were they made among the input's calls and lets,
  -- each kept variable would keep its chunk, and the input would stay
  -- whole after it is dropped (devplan plan drops it before printing)
  it("lets the input's calls and lets go once it is planned and dropped", function()
    if testing.instrumented then return pending("resident size is not meaningful under instrumentation") end
    local core = require "devplan.core"
    local mod = dp.parse(gen.let(100000), testing.META)
    local planned = plan(mod)
    settle()
    core._release_heap()
    local before = rss_kb()
    if not before then return pending("no /proc/self/status here") end
    mod = nil
    settle()
    core._release_heap()
    local freed_mb = (before - rss_kb()) / 1024
    -- the input's calls and lets are some 13 MB (its variables, 6 MB, stay)
    assert.is_true(freed_mb > 8, ("dropping the planned input freed %.1f MB"):format(freed_mb))
    assert.equal(100000, #lets(planned.main.body))
  end)
end)
