-- dp.planner.report(planned, config?): where a planned module runs and
-- what crosses devices.
--
--   local r = dp.planner.report(planned, config)
--   r.devices  -- per device, in order of first use:
--              --   {name = "cuda", device = "VirtualDevice(...)", calls = n,
--              --    bytes = resident bytes, unknown = n values of unknown size,
--              --    too_large = n values whose bytes a 64-bit count cannot hold}
--   r.copies   -- every device_copy, in the order of the text:
--              --   {fn = "main", name = "%90", value = "%89", src = "cuda", dst = "cpu",
--              --    type = "Tensor[(1, 512), float32]", bytes = 2048 (nil: see size),
--              --    size = nil | "unknown" | "too large", line =, col =}
--   r.totals   -- {calls =, copies =, bytes_copied =, bytes_resident =,
--              --  copies_too_large = n copies left out of bytes_copied,
--              --  too_large = n values left out of bytes_resident}
--   tostring(r), r:text()   a table for reading;  r:json()  the same as JSON
--   r:with_schedule(s, label)  adds the modelled schedule s (dp.planner.schedule):
--              text and JSON then show its makespan, per device and link the busy
--              time, and the critical path (label: where the costs came from)
--
-- Bytes come from the checked types (element count times the size of the
-- dtype); a shape with an unknown dimension counts in `unknown` instead.
-- Every count is exact: a value whose bytes do not fit in a 64-bit integer
-- (more than 9,223,372,036,854,775,807), or that would carry a sum past
-- that, counts in `too_large` and is left out of the sum, never wrapped.
--
-- Each value is counted once, where it is made: the parameters of the
-- entry functions (those no other function of the module refers to, as
-- @main), the results of operator and constructor calls, constants, and
-- the results of copies (on their destination). A call of a function is
-- neither a call nor a value here: its result is the callee's result and
-- the callee's parameters are the caller's arguments, each counted where
-- it is made; so PartitionByVirtualDevice, which moves code into
-- functions, leaves the calls and bytes as they were. Calls do not include
-- the on_device and device_copy annotations.
local core = require "devplan.core"
local devname = require "devplan.devname"
local ir = require "devplan.ir"

local error, getmetatable, ipairs, next, pcall, rawset, require, setmetatable = error, getmetatable, ipairs, next, pcall, rawset, require, setmetatable
local tostring, type = tostring, type
local math, string, table = math, string, table
_ENV = nil -- no global is read or written below this line

local M = {}

local Report = {}

-- A report's copies (one per value and device it crosses to: often half
-- the calls of a module) stay in C until a script reads r.copies; text()
-- and json() write them from C meanwhile.
local pending = setmetatable({}, {__mode = "k"}) -- report -> {scan =, names =}

Report.__index = function(r, k)
  if k == "copies" then
    local p = pending[r]
    if p then
      local copies = p.scan:copies(p.names)
      rawset(r, "copies", copies)
      pending[r] = nil
      return copies
    end
  end
  return Report[k]
end
Report.__name = "devplan.Report"

-- ---------------------------------------------------------------- sizes

-- Bytes of a value of type t: an integer, or nil and why not: "unknown"
-- (a dimension is unknown) or "too large" (more bytes than a 64-bit
-- integer holds). dp.type.bytes (C: dp_type_bytes), which the picture
-- counts with too.
function M.bytes_of(t)
  if t == nil then return nil, "unknown" end
  return core.type.bytes(t)
end

-- 1234567 -> "1,234,567"
function M.grouped(n)
  local s = tostring(math.tointeger(n) or n)
  return (s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end
local grouped = M.grouped

-- The size of a value of type t in words: "4,000 bytes", "unknown
-- bytes", "more bytes than a 64-bit count holds".
function M.bytes_text(t)
  local b, why = M.bytes_of(t)
  if b then return grouped(b) .. (b == 1 and " byte" or " bytes") end
  if why == "too large" then return "more bytes than a 64-bit count holds" end
  return "unknown bytes"
end

-- 82661096 -> "78.8 MiB"
function M.human(n)
  for _, u in ipairs{{60, "EiB"}, {50, "PiB"}, {40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} do
    if n >= 1 << u[1] then return string.format("%.1f %s", n / (1 << u[1]), u[2]) end
  end
  return n .. " B"
end

-- ---------------------------------------------------------------- counting

function M.report(planned, config)
  if not ir.is_module(planned) then
    error("devplan.planner.report: a planned IRModule expected, got " .. type(planned), 2)
  end
  if config ~= nil and not ir.is_config(config) then
    error("devplan.planner.report: config must be a CompilationConfig, got " .. type(config), 2)
  end
  -- counted in C (src/planner/report.c), in one walk; worded here
  local scan = core.planner.report_scan(planned, config)
  local devices = scan:devices()
  local namer, names = devname.namer(), {}
  for i, d in ipairs(devices) do names[i] = namer(d.vd) end -- named in the order met
  local order, listed = {}, {}
  for _, d in ipairs(devices) do
    if d.entered then listed[#listed + 1] = d end
  end
  table.sort(listed, function(a, b) return a.entered < b.entered end)
  for i, d in ipairs(listed) do
    order[i] = {name = namer(d.vd), device = tostring(d.vd), calls = d.calls, bytes = d.bytes,
                unknown = d.unknown, too_large = d.too_large}
  end
  local r = setmetatable({devices = order, totals = scan:totals()}, Report)
  pending[r] = {scan = scan, names = names} -- r.copies: made when first read
  return r
end

-- ---------------------------------------------------------------- printing

local function copy_bytes(c)
  if c.bytes then return grouped(c.bytes) .. " bytes" end
  if c.size == "too large" then return "more bytes than a 64-bit count holds" end
  return "unknown bytes"
end

function Report:text()
  local lines, t = {}, self.totals
  local function add_line(s) lines[#lines + 1] = s end
  add_line(string.format("%-16s %7s %22s", "device", "calls", "resident bytes"))
  for _, d in ipairs(self.devices) do
    local extra = {}
    if d.unknown > 0 then extra[#extra + 1] = d.unknown .. " of unknown size" end
    if d.too_large > 0 then extra[#extra + 1] = d.too_large .. " too large to count" end
    add_line(string.format("%-16s %7d %22s%s", "@" .. d.name, d.calls, grouped(d.bytes) .. " (" .. M.human(d.bytes) .. ")",
                           #extra > 0 and ("  + " .. table.concat(extra, ", ")) or ""))
  end
  for _, d in ipairs(self.devices) do add_line("  @" .. d.name .. " = " .. d.device) end
  add_line("")
  local p = pending[self]
  local ncopies = p and p.scan:count() or #self.copies
  add_line(ncopies == 0 and "no device_copy" or
           string.format("%d device_copy, %s bytes%s:", ncopies, grouped(t.bytes_copied),
                         t.copies_too_large > 0 and (" + " .. t.copies_too_large .. " too large to count") or ""))
  local copies_at -- (where the C lines go: the text is made once, around them)
  if p then -- the same lines, written in C
    if ncopies > 0 then
      add_line(false)
      copies_at = #lines
    end
  else
    for _, c in ipairs(self.copies) do
      add_line(string.format("  %s%s = copy of %s  @%s -> @%s  %s  %s%s", c.fn and ("@" .. c.fn .. " ") or "",
                             c.name or "(inline)", c.value or "(inline)", c.src, c.dst, c.type, copy_bytes(c),
                             -- an imported ONNX node (a position with no column) by its name
                             c.col == 0 and c.source and ("  (ONNX node " .. c.source .. ")") or ""))
    end
  end
  add_line("")
  local left = {}
  if t.copies_too_large > 0 then left[#left + 1] = t.copies_too_large .. (t.copies_too_large == 1 and " copy" or " copies") end
  if t.too_large > 0 then left[#left + 1] = t.too_large .. (t.too_large == 1 and " value" or " values") end
  add_line(string.format("total: %d call%s, %d cop%s, %s bytes copied, %s bytes resident%s",
                         t.calls, t.calls == 1 and "" or "s", t.copies, t.copies == 1 and "y" or "ies",
                         grouped(t.bytes_copied), grouped(t.bytes_resident),
                         #left > 0 and (" (left out, too large to count: " .. table.concat(left, ", ") .. ")") or ""))
  add_line("")
  if self.schedule then add_line(self.schedule:text({costs = self.schedule_costs})) end
  local n = #lines
  if self.schedule then n = n - 1 end
  if not copies_at then
    return table.concat(lines, "\n", 1, n) .. (self.schedule and "\n" .. lines[n + 1] or "")
  end
  return p.scan:copies_text(p.names, table.concat(lines, "\n", 1, copies_at - 1) .. "\n",
                            "\n" .. table.concat(lines, "\n", copies_at + 1, n) .. (self.schedule and "\n" .. lines[n + 1] or ""))
end

Report.__tostring = Report.text

-- The modelled schedule joins the report (devplan plan --costs FILE --report).
function Report:with_schedule(sched, label)
  self.schedule, self.schedule_costs = sched, label
  return self
end

-- The report as JSON (dkjson, Debian's lua-dkjson): keys in a fixed order.
-- The copies as dkjson writes them (below, at their depth, keys in the
-- report's order), each with one concatenation instead of dkjson's generic
-- walk: a report lists one copy per value and device it crosses to, often
-- half the calls of a module. Copies that are not the report's own plain
-- rows (changed by a script) are left to dkjson.
local COPY_KEYS = {"name", "bytes", "size", "fn", "value", "src", "dst", "type", "line", "col", "source"}
local COPY_KNOWN = {}
for _, k in ipairs(COPY_KEYS) do COPY_KNOWN[k] = true end

-- (the bytes dkjson's quotestring escapes, or looks at)
local ESCAPED = "[%z\1-\31\"\\\127\194\216\220\225\226\239]"

-- (what stands for the copies written in C in dkjson's pieces: no piece
-- dkjson makes holds a NUL byte)
local COPIES_MARK = "\0devplan: the copies\0"
local encode

local function copies_json(copies, escape)
  if #copies == 0 then return copies end
  local quoted = {}
  local function quote(v)
    local q = quoted[v]
    if not q then
      q = string.find(v, ESCAPED) and escape(v) or "\"" .. v .. "\""
      quoted[v] = q
    end
    return q
  end
  local keys = {}
  for i, k in ipairs(COPY_KEYS) do keys[i] = "\n      " .. quote(k) .. ":" end
  local items = {}
  for i, c in ipairs(copies) do
    if type(c) ~= "table" or getmetatable(c) ~= nil then return copies end
    for k, v in next, c do
      local tv = type(v)
      if not COPY_KNOWN[k] or (tv ~= "string" and math.type(v) ~= "integer") then return copies end
    end
    local parts, n = {}, 0
    for j, k in ipairs(COPY_KEYS) do
      local v = c[k]
      if v ~= nil then
        n = n + 1
        parts[n] = keys[j] .. (type(v) == "string" and quote(v) or tostring(v))
      end
    end
    items[i] = "{" .. table.concat(parts, ",") .. "\n    }"
  end
  local text = "[" .. table.concat(items, ",") .. "]"
  return setmetatable({}, {__tojson = function() return text end})
end

function Report:json()
  local ok, json = pcall(require, "dkjson")
  if not ok then
    error("devplan: the JSON report needs dkjson (Debian package lua-dkjson; scripts/setup.sh installs it)", 2)
  end
  local p = pending[self]
  local in_c = p and p.scan:count() > 0 -- written in C, unless a string needs dkjson's escapes
  local data = {devices = self.devices, totals = self.totals}
  if self.schedule then
    data.schedule = self.schedule:summary()
    data.schedule.costs = self.schedule_costs
  end
  if in_c then
    -- the document around a mark where the copies go, which C writes
    -- between its two parts: the text made once (a million-call module's
    -- copies are a hundred MB)
    data.copies = setmetatable({}, {__tojson = function() return COPIES_MARK end})
    local buffer, n = encode(json, data)
    for i = 1, n do
      if buffer[i] == COPIES_MARK then
        local text = p.scan:copies_json(p.names, table.concat(buffer, "", 1, i - 1),
                                        table.concat(buffer, "", i + 1, n) .. "\n")
        if text then return text end
        break
      end
    end
  end
  data.copies = copies_json(self.copies, json.quotestring)
  local buffer, n = encode(json, data)
  buffer[n + 1] = "\n"
  return table.concat(buffer, "", 1, n + 1)
end

-- dkjson's pieces of data and their number.
function encode(json, data)
  -- (into a buffer of ours: the caller joins the pieces once)
  local state = {indent = true, buffer = {}, keyorder = {
    "devices", "copies", "totals", "schedule", "name", "device", "calls", "bytes", "size", "unknown", "too_large",
    "fn", "value", "src", "dst", "type", "line", "col", "source", "bytes_copied", "bytes_resident", "copies_too_large",
    "makespan", "costs", "serial", "resources", "critical", "kind", "tasks", "busy", "task", "resource", "start",
    "finish", "waited", "memory", "peak", "at", "budget"}}
  json.encode(data, state)
  return state.buffer, state.bufferlen
end

return M
