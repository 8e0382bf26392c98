-- "Did you mean": dp.suggest and the core utility behind it
-- (include/devplan/suggest.h), and the errors that use it.
local dp = require "devplan"
local testing = require "devplan.testing"

local err_of = testing.error_of

describe("dp.suggest", function()
  local kinds = {"llvm", "c", "cuda", "nvptx", "rocm", "opencl", "vulkan", "metal"}

  it("finds the closest name: one edit, a swap of two letters, a case difference", function()
    assert.equal("cuda", dp.suggest("cdua", kinds))     -- swap
    assert.equal("cuda", dp.suggest("cud", kinds))      -- one deleted
    assert.equal("cuda", dp.suggest("cudaa", kinds))    -- one added
    assert.equal("metal", dp.suggest("metel", kinds))   -- one replaced
    assert.equal("opencl", dp.suggest("OpenCL", kinds)) -- case alone
    assert.equal("nn.conv2d", dp.suggest("nn.conv2dd", {"nn.dense", "nn.conv2d"}))
    assert.equal("float32", dp.suggest("flaot32", {"int32", "float16", "float32"}))
  end)

  it("suggests the namespaced name for its last part", function()
    assert.equal("nn.conv2d", dp.suggest("conv2d", {"add", "nn.conv2d", "nn.dense"}))
    assert.is_nil(dp.suggest("conv", {"nn.conv2d"}))
  end)

  it("stays quiet when nothing is close: at most a third of the length, less than all of it", function()
    assert.is_nil(dp.suggest("fpga", kinds))
    assert.is_nil(dp.suggest("x", {"c"}))                 -- one edit is the whole name
    assert.equal("c", dp.suggest("C", {"c"}))             -- case alone always counts
    assert.equal("ab", dp.suggest("abc", {"ab"}))         -- 1 edit for 3 letters
    assert.is_nil(dp.suggest("abcde", {"ab"}))            -- 3 edits for 5 letters is too many
    assert.equal("abcdef", dp.suggest("abcd", {"abcdef"}))  -- 2 edits for 4 letters (rounded up)
    assert.is_nil(dp.suggest("", kinds))
    assert.is_nil(dp.suggest("cuda", {"cuda"}))           -- the name itself is not a suggestion
    assert.is_nil(dp.suggest("cdua", {}))
  end)

  it("the first of equally close candidates wins", function()
    assert.equal("bat", dp.suggest("cat", {"bat", "hat"}))
    assert.equal("hat", dp.suggest("cat", {"hat", "bat"}))
    assert.equal("cart", dp.suggest("cat", {"bart", "cart", "ca"})) -- "bart" is 2 edits away
  end)

  it("gives no suggestion for very long names, and never fails", function()
    local long = string.rep("a", 200)
    assert.is_nil(dp.suggest(long, {long .. "b"}))
    assert.equal(string.rep("a", 100), dp.suggest(string.rep("a", 99) .. "b", {string.rep("a", 100)}))
  end)

  it("checks its arguments", function()
    assert.has_error(function() dp.suggest("x") end)
    assert.has_error(function() dp.suggest("x", {1, 2}) end)
    assert.has_error(function() dp.suggest(nil, {}) end)
  end)
end)

describe("errors about unknown names suggest the closest known one", function()
  it("target kinds, target options, device types", function()
    assert.truthy(err_of(dp.Target, "cdua"):find("unknown target kind 'cdua'; did you mean 'cuda'?", 1, true))
    assert.truthy(err_of(dp.Target, "vulcan"):find("did you mean 'vulkan'?", 1, true))
    assert.truthy(err_of(dp.Target, "cuda -max_num_thread=4")
      :find("unknown option '-max_num_thread' for target kind 'cuda'; did you mean '-max_num_threads'?", 1, true))
    assert.truthy(err_of(dp.Target, "llvm -mcup=skylake"):find("did you mean '-mcpu'?", 1, true))
    assert.truthy(err_of(dp.VirtualDevice, {device_type = "cdua"})
      :find("unknown device type 'cdua'; did you mean 'cuda'?", 1, true))
    assert.truthy(err_of(dp.VirtualDevice, {device_type = "gpu9"}):find("did you mean 'gpu'?", 1, true))
    assert.truthy(err_of(dp.CompilationConfig, {targets = {"llvm"}, default_device_type = "cpuu"})
      :find("did you mean 'cpu'?", 1, true))
  end)

  it("without a close name, lists what is known", function()
    local msg = err_of(dp.Target, "tpu")
    assert.truthy(msg:find("unknown target kind 'tpu' (known kinds: llvm, c, cuda, nvptx,", 1, true), msg)
    msg = err_of(dp.Target, "webgpu -zzz=1")
    assert.truthy(msg:find("unknown option '-zzz' for target kind 'webgpu' (its options: -max_num_threads, -keys,", 1, true), msg)
    msg = err_of(dp.VirtualDevice, {device_type = "quantum"})
    assert.truthy(msg:find("unknown device type 'quantum'", 1, true) and not msg:find("did you mean", 1, true), msg)
  end)
end)
