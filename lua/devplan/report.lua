-- dp.planner.report(planned, config?): where a planned module runs and
-- what crosses devices.
--
--   local r = dp.planner.report(planned, config)
--   r.devices  -- per device, in order of first use:
--              --   {name = "cuda", device = "VirtualDevice(...)", calls = n,
--              --    bytes = resident bytes, unknown = n values of unknown size}
--   r.copies   -- every device_copy, in the order of the text:
--              --   {fn = "main", name = "%90", value = "%89", src = "cuda", dst = "cpu",
--              --    type = "Tensor[(1, 512), float32]", bytes = 2048, line =, col =}
--   r.totals   -- {calls =, copies =, bytes_copied =, bytes_resident =}
--   tostring(r), r:text()   a table for reading;  r:json()  the same as JSON
--
-- Bytes come from the checked types (element count times the size of the
-- dtype); a shape with an unknown dimension counts in `unknown` instead.
-- A value is resident on its device: parameters, call results, constants
-- and the results of copies (on their destination). Calls do not include
-- the on_device and device_copy annotations.
local core = require "devplan.core"
local devname = require "devplan.devname"
local ir = require "devplan.ir"

local M = {}

local Report = {}
Report.__index = Report
Report.__name = "devplan.Report"

-- Bytes of one element of dtype ("float32" -> 4, "bool" -> 1).
local function dtype_bytes(dtype)
  if dtype == "bool" then return 1 end
  local bits = tonumber(dtype:match("(%d+)$") or "")
  return bits and (bits + 7) // 8 or nil
end

-- Bytes of a value of type t, or nil when a dimension is unknown.
function M.bytes_of(t)
  if t == nil then return nil end
  if t.kind == "tensor" then
    local n = dtype_bytes(t.dtype)
    if not n then return nil end
    for _, d in ipairs(t.shape) do
      if d < 0 then return nil end
      n = n * d
    end
    return n
  end
  if t.kind == "tuple" then
    local total = 0
    for _, f in ipairs(t.fields) do
      local b = M.bytes_of(f)
      if not b then return nil end
      total = total + b
    end
    return total
  end
  return 0 -- functions, references, ADTs: no tensor storage of their own here
end

local function is_op(e, name)
  return e.kind == "call" and e.callee.kind == "op" and e.callee.name == name
end

-- expr -> {fn =, name =}: the printed names of the module's nodes.
local function printed_names(mod)
  local _, names = core.astext(mod, {names = true})
  local of = {}
  for fn, map in pairs(names) do
    for name, e in pairs(map) do of[e] = {fn = fn, name = name} end
  end
  return of
end

-- The copied value, through the on_device that marks where it was made.
local function copied(e)
  local v = e.args[1]
  while is_op(v, "on_device") do v = v.args[1] end
  return v
end

function M.report(planned, config)
  if not ir.is_module(planned) then
    error("devplan.planner.report: a planned IRModule expected, got " .. type(planned), 2)
  end
  if config ~= nil and not ir.is_config(config) then
    error("devplan.planner.report: config must be a CompilationConfig, got " .. type(config), 2)
  end
  local devices = core.planner.virtual_devices(planned, config)
  local names = printed_names(planned)
  local namer = devname.namer()
  local per, order = {}, {}
  local r = setmetatable({devices = order, copies = {},
                          totals = {calls = 0, copies = 0, bytes_copied = 0, bytes_resident = 0}}, Report)
  local function entry(vd)
    local n = namer(vd)
    if not per[n] then
      per[n] = {name = n, device = tostring(vd), calls = 0, bytes = 0, unknown = 0}
      order[#order + 1] = per[n]
    end
    return per[n]
  end
  local function resident(e, vd)
    if not vd or vd:is_fully_unconstrained() then return end
    local d = entry(vd)
    local b = M.bytes_of(e.checked_type)
    if b then
      d.bytes = d.bytes + b
      r.totals.bytes_resident = r.totals.bytes_resident + b
    else
      d.unknown = d.unknown + 1
    end
  end
  for _, nf in ipairs(planned:functions()) do
    for _, p in ipairs(nf[2].params) do resident(p, devices[p]) end
  end
  core.visit(planned, function(e)
    if e.kind == "const" then
      resident(e, devices[e])
    elseif e.kind == "call" and is_op(e, "device_copy") then
      local src, dst = e.attrs.src_virtual_device, e.attrs.dst_virtual_device
      local v = copied(e)
      local own, val = names[e] or {}, names[v] or {}
      local b = M.bytes_of(e.checked_type)
      r.copies[#r.copies + 1] = {
        fn = own.fn or val.fn, name = own.name, value = val.name or own.name,
        src = namer(src), dst = namer(dst), type = tostring(e.checked_type), bytes = b,
        line = e.span and e.span.line, col = e.span and e.span.col,
      }
      entry(src)
      resident(e, dst)
      r.totals.copies = r.totals.copies + 1
      r.totals.bytes_copied = r.totals.bytes_copied + (b or 0)
    elseif e.kind == "call" and not is_op(e, "on_device") then
      local vd = devices[e]
      if vd and not vd:is_fully_unconstrained() then
        entry(vd).calls = entry(vd).calls + 1
        r.totals.calls = r.totals.calls + 1
      end
      resident(e, vd)
    end
  end)
  return r
end

-- 1234567 -> "1,234,567"
local function grouped(n)
  local s = tostring(math.tointeger(n) or n)
  return (s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end

local function human(n)
  if n >= 1 << 20 then return string.format("%.1f MiB", n / (1 << 20)) end
  if n >= 1 << 10 then return string.format("%.1f KiB", n / (1 << 10)) end
  return n .. " B"
end

function Report:text()
  local lines = {}
  local function add(s) lines[#lines + 1] = s end
  add(string.format("%-16s %7s %22s", "device", "calls", "resident bytes"))
  for _, d in ipairs(self.devices) do
    add(string.format("%-16s %7d %22s%s", "@" .. d.name, d.calls, grouped(d.bytes) .. " (" .. human(d.bytes) .. ")",
                      d.unknown > 0 and ("  + " .. d.unknown .. " of unknown size") or ""))
  end
  for _, d in ipairs(self.devices) do add("  @" .. d.name .. " = " .. d.device) end
  add("")
  add(#self.copies == 0 and "no device_copy" or
      string.format("%d device_copy, %s bytes:", #self.copies, grouped(self.totals.bytes_copied)))
  for _, c in ipairs(self.copies) do
    add(string.format("  %s%s = copy of %s  @%s -> @%s  %s  %s bytes", c.fn and ("@" .. c.fn .. " ") or "",
                      c.name or "(inline)", c.value or "(inline)", c.src, c.dst, c.type,
                      c.bytes and grouped(c.bytes) or "unknown"))
  end
  add("")
  add(string.format("total: %d call%s, %d cop%s, %s bytes copied, %s bytes resident",
                    self.totals.calls, self.totals.calls == 1 and "" or "s",
                    self.totals.copies, self.totals.copies == 1 and "y" or "ies", grouped(self.totals.bytes_copied),
                    grouped(self.totals.bytes_resident)))
  return table.concat(lines, "\n") .. "\n"
end

Report.__tostring = Report.text

-- The report as JSON (dkjson, Debian's lua-dkjson): keys in a fixed order.
function Report:json()
  local ok, json = pcall(require, "dkjson")
  if not ok then
    error("devplan: the JSON report needs dkjson (Debian package lua-dkjson; scripts/setup.sh installs it)", 2)
  end
  local data = {devices = self.devices, copies = self.copies, totals = self.totals}
  return json.encode(data, {indent = true, keyorder = {
    "devices", "copies", "totals", "name", "device", "calls", "bytes", "unknown", "fn", "value",
    "src", "dst", "type", "line", "col", "bytes_copied", "bytes_resident"}}) .. "\n"
end

return M
