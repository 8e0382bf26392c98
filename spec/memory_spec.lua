-- Memory stays flat: interned objects leave their tables when dropped, and
-- a million virtual devices made and dropped leave nothing behind.
local dp = require "devplan"
local testing = require "devplan.testing"

local N = os.getenv("DEVPLAN_QUICK") and 20000 or 1000000

-- RSS is nil under valgrind and ASan (testing.instrumented); the counts
-- are checked everywhere.
local rss_kb, settle = testing.rss_kb, testing.settle

describe("memory", function()
  it("counts live interned objects", function()
    settle()
    local base = dp.debug.counts()
    local t = dp.Target("cuda -max_num_threads=77")
    local v = dp.VirtualDevice{target = t, virtual_device_id = 77}
    local now = dp.debug.counts()
    assert.equal(base.targets + 1, now.targets)
    assert.equal(base.virtual_devices + 1, now.virtual_devices)
    t, v = nil, nil
    settle()
    assert.same(base, dp.debug.counts())
  end)

  it("gives the process's CPU seconds and page faults apart (dp.debug.rusage)", function()
    local a = dp.debug.rusage()
    for _, k in ipairs{"user", "sys", "minflt", "majflt"} do
      assert.is_number(a[k], k)
      assert.is_true(a[k] >= 0, k)
    end
    assert.is_true(math.type(a.minflt) == "integer" and math.type(a.majflt) == "integer")
    local t0, x = os.clock(), 0
    while os.clock() - t0 < 0.05 do x = x + 1 end -- (CPU the process spends)
    local s = string.rep("x", 8 << 20) -- (8 MiB of fresh pages)
    local b = dp.debug.rusage()
    assert.is_true(b.user + b.sys >= a.user + a.sys + 0.04, "the loop's CPU seconds")
    assert.is_true(b.minflt > a.minflt, "the string's fresh pages")
    assert.is_true(x > 0 and #s == 8 << 20)
  end)

  it("makes and drops " .. N .. " distinct virtual devices with flat memory", function()
    local cuda = dp.Target("cuda")
    local function churn()
      for i = 1, N do
        local v = dp.VirtualDevice{target = cuda, virtual_device_id = i, memory_scope = "s"}
        assert(v.virtual_device_id == i)
      end
      settle()
    end
    settle()
    local base = dp.debug.counts()
    churn()
    local after_first = rss_kb()
    assert.same(base, dp.debug.counts())
    churn()
    assert.same(base, dp.debug.counts())
    local after_second = rss_kb()
    if after_first and after_second then
      -- the second round reuses what the first one freed
      assert.is_true(after_second - after_first < 16 * 1024,
        ("RSS grew from %d KiB to %d KiB"):format(after_first, after_second))
    end
  end)

  it("drops targets, joins, defaults and configurations", function()
    settle()
    local base = dp.debug.counts()
    for i = 1, N // 20 do
      local t = dp.Target("cuda -max_num_threads=" .. i .. " -host=llvm")
      local a = dp.VirtualDevice{target = t, memory_scope = "m" .. i}
      local b = dp.VirtualDevice{virtual_device_id = i}
      local j = dp.VirtualDevice.join(a, b)
      assert(j and j.virtual_device_id == i)
      assert(dp.VirtualDevice.default(b, a).target == t)
      if i % 100 == 0 then
        local c = dp.CompilationConfig{targets = {t, "llvm -mcpu=c" .. i}}
        assert(c:canonical(dp.VirtualDevice{device_type = "cpu"}).target)
      end
    end
    settle()
    assert.same(base, dp.debug.counts())
  end)

  it("leaves nothing behind when building fails half-way", function()
    settle()
    local base = dp.debug.counts()
    for i = 1, 1000 do
      assert.is_false(pcall(dp.Target, "cuda -host='llvm -mcpu=x" .. i .. "' -max_num_threads=x"))
      assert.is_false(pcall(dp.Target, '{"kind": "cuda", "host": {"kind": "llvm", "mcpu": "h' .. i .. '"}, "x": null}'))
      assert.is_false(pcall(dp.VirtualDevice, {target = "llvm -mcpu=v" .. i, device_type = "cuda"}))
      assert.is_false(pcall(dp.CompilationConfig, {targets = {"cuda -arch=" .. i, "cuda"}}))
      assert.is_false(pcall(dp.CompilationConfig, {targets = {"llvm -mcpu=" .. i}, default_device_type = "cuda"}))
      assert.is_false(pcall(dp.Target, {kind = "cuda", host = "llvm -mcpu=t" .. i, libs = {"a", 3}}))
    end
    settle()
    assert.same(base, dp.debug.counts())
  end)
end)
