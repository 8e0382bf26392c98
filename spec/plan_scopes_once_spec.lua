-- Memory scopes in one run (issue 20; TVM PR #11662 disabled PlanDevices'
-- second run, after lowering, because "new constraints are not flowing into
-- device_copies"). A planned module whose primfns lowering then gave memory
-- scopes (buffers that were open) plans again once: the scopes reach every
-- copy's ends and the values around them, copies whose ends join go, no
-- value changes device, and the result is a fixed point (planning it again
-- changes nothing), by TVM's rules and by min_bytes. docs/planner.md says
-- what this second run may change.
local dp = require "devplan"
local testing = require "devplan.testing"
package.path = (dp.root or ".") .. "/fuzz/?.lua;" .. package.path
local gen = require "relaygen"
local props = require "props"

local T = "Tensor[(5, 7), float32]"
local t57 = dp.type.tensor({5, 7})

local function fixed_point(planned, config, opts)
  local v, total = dp.planner.verify(planned, config)
  assert.are.equal(0, total, v[1] and v[1].message)
  assert.structurally_equal(planned, dp.passes.PlanDevices(config, opts)(planned))
end

describe("a planned module whose primfns lowering gave memory scopes", function()
  it("plans again once: the scopes reach the copies' ends, and that plan is a fixed point", function()
    local config = testing.config("cpu")
    local text = ([[
#[version = "0.0.5"]
primfn @gem(T, T) -> T;
def @main(%a {virtual_device=meta[VirtualDevice][0]}: T, %b {virtual_device=meta[VirtualDevice][1]}: T) -> T {
  %0 = on_device(call_lowered(@gem, (device_copy(%a, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]), %b)), virtual_device=meta[VirtualDevice][1]);
  device_copy(%0, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][0])
}
]]):gsub("T([,);%s])", T .. "%1")
    local planned = dp.passes.PlanDevices(config)(dp.parse(text, testing.META))
    assert.falsy(tostring(planned):find("texture", 1, true))
    -- lowering: @gem reads its first buffer from texture memory
    local lowered = planned:with_primfn(dp.primfn("gem", {{t57, "global.texture"}, t57}, {t57, "global"}))
    local again = dp.passes.PlanDevices(config)(lowered)
    local s = dp.astext(again, {short_devices = true})
    assert.truthy(s:find("device_copy(%a, src_virtual_device=@cpu.global.texture, dst_virtual_device=@cuda.global.texture)",
      1, true), s)
    assert.truthy(s:find("%b {virtual_device=@cuda.global}", 1, true), s)
    assert.are.equal(2, testing.count_calls(again, "device_copy"))
    fixed_point(again, config)
  end)

  it("drops a copy whose two ends the scopes make one", function()
    local P = testing.PALETTE
    local meta = {VirtualDevice = {P.CPU, P.GPU, P.GPU_SCOPE_TEXTURE}}
    local config = testing.config("cpu")
    -- the user copies @gen's result to texture memory, where @use reads it;
    -- @gen writes texture memory already
    local text = ([[
#[version = "0.0.5"]
primfn @gen(T) -> T scope="global.texture";
primfn @use(T scope="global.texture") -> T;
def @main(%a {virtual_device=meta[VirtualDevice][1]}: T, virtual_device=meta[VirtualDevice][1]) -> T {
  %0 = call_lowered(@gen, (%a,));
  %1 = device_copy(%0, src_virtual_device=meta[VirtualDevice][1], dst_virtual_device=meta[VirtualDevice][2]);
  call_lowered(@use, (%1,))
}
]]):gsub("T([,);%s])", T .. "%1")
    local planned = dp.passes.PlanDevices(config)(dp.parse(text, meta))
    assert.are.equal(0, testing.count_calls(planned, "device_copy"))
    fixed_point(planned, config)
  end)

  -- The generated programs with primfns (relaygen's call_lowered, memory
  -- operators, scoped buffers): planned, then every buffer left open gets a
  -- scope (as lowering writes them), planned once more.
  local SCOPES = {"global", "scopeA", "global.texture"}
  local function lower(planned, seed)
    local m, k = planned, seed
    for _, pf in ipairs(planned:primfns()) do
      local args = {}
      for i, a in ipairs(pf.args) do
        k = (k * 1103515245 + 12345) % 2147483648
        args[i] = {a.type, a.scope ~= "" and a.scope or SCOPES[k % #SCOPES + 1]}
      end
      k = (k * 1103515245 + 12345) % 2147483648
      m = m:with_primfn(dp.primfn(pf.name, args, {pf.result.type, pf.result.scope ~= "" and pf.result.scope
        or SCOPES[k % #SCOPES + 1]}))
    end
    return m
  end

  for _, placement in ipairs{"tvm", "min_bytes"} do
    it("of generated programs plans once to a fixed point (" .. placement .. ")", function()
      local opts = {placement = placement}
      local n, changed = 0, 0
      for seed = 1, 400 do
        local ok, mod = pcall(dp.parse, gen.text(gen.program(seed)), props.META)
        local okp, planned = false, nil
        if ok then okp, planned = pcall(dp.passes.PlanDevices(props.CONFIG, opts), mod) end
        if okp and #planned:primfns() > 0 then
          local okr, again = pcall(dp.passes.PlanDevices(props.CONFIG, opts), lower(planned, seed))
          if okr then -- (lowering may ask for scopes two annotations cannot both have: a conflict)
            n = n + 1
            if not dp.structural_equal(again, planned) then changed = changed + 1 end
            local v, total = dp.planner.verify(again, props.CONFIG)
            assert.are.equal(0, total, "seed " .. seed .. ": " .. (v[1] and v[1].message or ""))
            assert.structurally_equal(again, dp.passes.PlanDevices(props.CONFIG, opts)(again), "seed " .. seed)
          else
            assert.are.equal("conflict", again.code, tostring(again))
          end
        end
      end
      assert.is_true(n >= 40, n .. " programs")
      assert.is_true(changed >= n / 2, changed .. " of " .. n .. " changed")
    end)
  end
end)
