-- dp.costs: what a call costs on a device, for scheduling (dp.planner.schedule)
-- and the latency baselines (dp.schedule).
--
--   local model = dp.costs.model{cpu = {flops = 2e10, bytes = 8e9, overhead = 1e-5},
--                                default = {flops = 1e10, bytes = 1e10, overhead = 1e-6}}
--   local t = dp.costs.load({"arm_cpu_v0.08.log", "mali_v0.06.log"}, {board = "rk3399"})
--   t(call, vd)          -- seconds, or nil where the table says the device cannot run it
--   t:lookup(call, vd)   -- seconds | false (cannot) | nil (not covered: the model decides)
--
-- A cost table holds measured times: TopHub tuning logs (JSON lines, read
-- directly) and devplan's plain format (docs/latency.md):
--
--   # comment
--   rate   DEVICE flops=N bytes=N overhead=N         the default model of a device type
--   cost   OP DEVICE SECONDS [KEY=VALUE ...]         a call of OP on DEVICE takes SECONDS
--   cannot OP DEVICE [KEY=VALUE ...]                 DEVICE cannot run such a call
--
-- DEVICE is a device type name (cpu, cuda, opencl, ...) or * (any); OP an
-- operator name or * (any call). An entry matches a call when every key
-- does: args (the tensor arguments' shapes, 1x3x224x224,64x3x7x7), dtype
-- (their dtypes, comma-separated, or one dtype all of them have), out (the
-- result's shape), or any attribute of the call (its default when the call
-- leaves it out; lists comma-separated; a 2-value padding counts as the
-- 4 values TVM makes of it). Of the entries that match, the one with the
-- most keys wins; among those, the one loaded last. A call no entry covers
-- costs what the table's default model says (never silently 0).
local core = require "devplan.core"
local ir = require "devplan.ir"

local error, getmetatable, ipairs, pairs, pcall, require = error, getmetatable, ipairs, pairs, pcall, require
local setmetatable, tonumber, tostring, type = setmetatable, tonumber, tostring, type
local io, math, string, table = io, math, string, table
_ENV = nil -- no global is read or written below this line

local M = {}

-- ---------------------------------------------------------------- the default model

-- What a device type nobody gave a rate gets (schedule_cost.c's default).
M.DEFAULT_RATE = {flops = 1e10, bytes = 1e10, overhead = 1e-6}

local Model = {}
Model.__index = Model
Model.__name = "devplan.CostModel"

local function device_type_number(name, who, level)
  if name == "*" or name == "default" then return 0 end
  local ok, vd = pcall(core.VirtualDevice, {device_type = name})
  if not ok then
    error(who .. ": unknown device type '" .. tostring(name) .. "'", level + 1)
  end
  return vd.device_type
end

local function check_rate(rate, who, key, level)
  if type(rate) ~= "table" then
    error(who .. ": the rate of '" .. key .. "' must be a table {flops =, bytes =, overhead =}", level + 1)
  end
  local r = {}
  for k, v in pairs(rate) do
    if k ~= "flops" and k ~= "bytes" and k ~= "overhead" then
      error(who .. ": unknown field '" .. tostring(k) .. "' in the rate of '" .. key .. "' (flops, bytes, overhead)", level + 1)
    end
    if type(v) ~= "number" or v ~= v or v < 0 or v == math.huge or (k ~= "overhead" and v <= 0) then
      error(who .. ": " .. key .. "." .. k .. " must be a number " .. (k == "overhead" and ">= 0" or "> 0")
        .. ", got " .. tostring(v), level + 1)
    end
    r[k] = v
  end
  return {flops = r.flops or M.DEFAULT_RATE.flops, bytes = r.bytes or M.DEFAULT_RATE.bytes,
          overhead = r.overhead or M.DEFAULT_RATE.overhead}
end

local function new_model(per_type)
  local rates, names = {}, {}
  for name in pairs(per_type) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local r = per_type[name]
    rates[#rates + 1] = {device_type = r.device_type, flops = r.flops, bytes = r.bytes, overhead = r.overhead}
  end
  return setmetatable({per_type = per_type, rates = rates}, Model)
end

-- dp.costs.model{DEVTYPE = {flops =, bytes =, overhead =}, default = {...}}:
-- seconds = overhead + flops / flops-per-second + bytes / bytes-per-second,
-- per device type (default: every type not named; without it DEFAULT_RATE).
function M.model(spec)
  spec = spec or {}
  if type(spec) ~= "table" then error("dp.costs.model: a table of rates expected, got " .. type(spec), 2) end
  local per_type = {}
  for name, rate in pairs(spec) do
    if type(name) ~= "string" then error("dp.costs.model: keys are device type names or 'default'", 2) end
    local r = check_rate(rate, "dp.costs.model", name, 2)
    r.device_type = device_type_number(name, "dp.costs.model", 2)
    local key = r.device_type == 0 and "default" or core.VirtualDevice{device_type = name}.device_type_name
    per_type[key] = r
  end
  return new_model(per_type)
end

-- Methods called on something else (Model.rate(5)), and a call and a
-- device that are not one: errors naming the method (the API fuzzer calls
-- every method with anything).
local function check_self(self, class, what, method)
  if getmetatable(self) ~= class then
    error(("devplan.%s:%s: a %s expected, got %s"):format(what, method, what, type(self)), 3)
  end
end
local function check_call_vd(call, vd, who)
  if not ir.is_expr(call) or call.kind ~= "call" then
    error(who .. ": a call expected, got " .. (ir.is_expr(call) and ("a " .. call.kind) or type(call)), 3)
  end
  if not ir.is_virtual_device(vd) then error(who .. ": a VirtualDevice expected, got " .. type(vd), 3) end
end

function Model:__call(call, vd)
  check_self(self, Model, "CostModel", "__call")
  check_call_vd(call, vd, "devplan.CostModel")
  return core.schedule.model_seconds(call, vd, self.rates)
end

-- The rate of a device type name (its own, the model's default, DEFAULT_RATE).
function Model:rate(name)
  check_self(self, Model, "CostModel", "rate")
  return self.per_type[name] or self.per_type.default or M.DEFAULT_RATE
end

-- A copy of the model with the rates of other's device types over it.
function Model:with(other)
  check_self(self, Model, "CostModel", "with")
  if getmetatable(other) ~= Model then error("devplan.CostModel:with: a cost model expected, got " .. type(other), 2) end
  local per_type = {}
  for k, v in pairs(self.per_type) do per_type[k] = v end
  for k, v in pairs(other.per_type) do per_type[k] = v end
  return new_model(per_type)
end

function Model:__tostring()
  check_self(self, Model, "CostModel", "__tostring")
  local parts = {}
  for _, r in ipairs(self.rates) do
    local name = r.device_type == 0 and "default" or core.VirtualDevice{device_type = r.device_type}.device_type_name
    parts[#parts + 1] = string.format("%s = {flops = %g, bytes = %g, overhead = %g}", name, r.flops, r.bytes, r.overhead)
  end
  return "CostModel{" .. table.concat(parts, ", ") .. "}"
end

M.DEFAULT = M.model{}

function M.is_model(x) return getmetatable(x) == Model end

-- ---------------------------------------------------------------- what entries match

-- Text of an attribute value, as entries write it.
local function value_text(v)
  local t = type(v)
  if t == "table" and not ir.is_expr(v) and not ir.is_virtual_device(v) then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = value_text(x) end
    return table.concat(parts, ",")
  end
  if math.type(v) == "integer" then return tostring(v) end
  if t == "number" then return string.format("%.17g", v) end
  if t == "boolean" then return v and "1" or "0" end
  return tostring(v)
end

-- TVM's get_pad_tuple: 1 value all sides, 2 values (top/bottom, left/right).
local function normal(key, text)
  if key ~= "padding" then return text end
  local n = {}
  for x in text:gmatch("[^,]+") do n[#n + 1] = x end
  if #n == 1 then return table.concat({n[1], n[1], n[1], n[1]}, ",") end
  if #n == 2 then return table.concat({n[1], n[2], n[1], n[2]}, ",") end
  return text
end

local function shape_text(t)
  if not t or t.kind ~= "tensor" then return "-" end
  if #t.shape == 0 then return "()" end
  local d = {}
  for i, x in ipairs(t.shape) do d[i] = x < 0 and "?" or tostring(x) end
  return table.concat(d, "x")
end

-- The keys of a call, computed once per call.
local signatures = setmetatable({}, {__mode = "k"})
local function signature(call)
  local s = signatures[call]
  if s then return s end
  s = {}
  if call.callee.kind == "op" then
    s.op = call.callee.name
    for k, v in pairs(core.schedule.call_attrs(call) or {}) do s[k] = normal(k, value_text(v)) end
  else
    s.op = call.callee.kind == "fn" and "fn" or "call"
  end
  local shapes, dtypes, one = {}, {}, nil
  for _, a in ipairs(call.args) do
    local t = a.checked_type
    if t and t.kind == "tensor" then
      shapes[#shapes + 1] = shape_text(t)
      dtypes[#dtypes + 1] = t.dtype
      if one == nil then one = t.dtype elseif one ~= t.dtype then one = false end
    end
  end
  s.args = table.concat(shapes, ",")
  s.dtype = table.concat(dtypes, ",")
  s.one_dtype = one or nil
  s.out = shape_text(call.checked_type)
  signatures[call] = s
  return s
end

local function key_matches(sig, k, v)
  if k == "dtype" then return sig.dtype == v or (sig.one_dtype ~= nil and sig.one_dtype == v) end
  return sig[k] == v
end

-- ---------------------------------------------------------------- cost tables

local best_in_list

local Table = {}
Table.__index = Table
Table.__name = "devplan.CostTable"

local function new_table(model)
  return setmetatable({entries = {}, by_op = {}, model = model or M.DEFAULT, sources = {}}, Table)
end

-- entry: {op =, device = name or "*", seconds =, cannot =, keys = {k = text}, source =, line =}
-- Entries are found by operator, then by their args key (most have one:
-- a TopHub log's hundreds of convolutions cost a lookup each, not a scan).
local function add_entry(t, e)
  local n = 0
  for _ in pairs(e.keys) do n = n + 1 end
  e.nkeys = n
  t.entries[#t.entries + 1] = e
  e.order = #t.entries
  local by = t.by_op[e.op]
  if not by then
    by = {args = {}, rest = {}}
    t.by_op[e.op] = by
  end
  local list
  if e.keys.args then
    list = by.args[e.keys.args]
    if not list then
      list = {}
      by.args[e.keys.args] = list
    end
  else
    list = by.rest
  end
  list[#list + 1] = e
end

local function best_in(by, sig, dname, best)
  if not by then return best end
  best = best_in_list(by.args[sig.args], sig, dname, best)
  return best_in_list(by.rest, sig, dname, best)
end

best_in_list = function(list, sig, dname, best)
  for _, e in ipairs(list or {}) do
    if e.device == "*" or e.device == dname then
      local ok = true
      for k, v in pairs(e.keys) do
        if not key_matches(sig, k, v) then ok = false break end
      end
      if ok and (not best or e.nkeys > best.nkeys or (e.nkeys == best.nkeys and e.order > best.order)) then
        best = e
      end
    end
  end
  return best
end

-- The entry that covers call on vd, or nil (arguments checked by the caller:
-- each public method checks its own, so an error names the user's call).
local function entry_of(t, call, vd)
  local sig, dname = signature(call), vd.device_type_name
  return best_in(t.by_op["*"], sig, dname, best_in(t.by_op[sig.op], sig, dname, nil))
end

local function lookup_of(t, call, vd)
  local e = entry_of(t, call, vd)
  if not e then return nil end
  if e.cannot then return false end
  return e.seconds
end

function Table:entry(call, vd)
  check_self(self, Table, "CostTable", "entry")
  check_call_vd(call, vd, "devplan.CostTable")
  return entry_of(self, call, vd)
end

-- seconds (covered), false (the table says vd cannot run it), nil (not covered).
function Table:lookup(call, vd)
  check_self(self, Table, "CostTable", "lookup")
  check_call_vd(call, vd, "devplan.CostTable")
  return lookup_of(self, call, vd)
end

function Table:__call(call, vd)
  check_self(self, Table, "CostTable", "__call")
  check_call_vd(call, vd, "devplan.CostTable")
  local s = lookup_of(self, call, vd)
  if s == false then return nil end
  if s then return s end
  return self.model(call, vd)
end

-- Does an entry cover call on vd?
function Table:covers(call, vd)
  check_self(self, Table, "CostTable", "covers")
  check_call_vd(call, vd, "devplan.CostTable")
  return entry_of(self, call, vd) ~= nil
end

-- A new table: self's entries then other's (which win ties), other's
-- rates over self's.
function Table:merge(other)
  check_self(self, Table, "CostTable", "merge")
  if getmetatable(other) ~= Table then error("devplan.CostTable:merge: a cost table expected", 2) end
  local t = new_table(self.model:with(other.model))
  for _, src in ipairs{self, other} do
    for _, e in ipairs(src.entries) do
      local c = {}
      for k, v in pairs(e) do c[k] = v end
      add_entry(t, c)
    end
    for _, s in ipairs(src.sources) do t.sources[#t.sources + 1] = s end
  end
  return t
end

-- The table in the plain format (rates, then entries in order).
function Table:text()
  check_self(self, Table, "CostTable", "text")
  local out = {"# devplan costs"}
  for _, r in ipairs(self.model.rates) do
    local name = r.device_type == 0 and "*" or core.VirtualDevice{device_type = r.device_type}.device_type_name
    out[#out + 1] = string.format("rate %s flops=%.17g bytes=%.17g overhead=%.17g", name, r.flops, r.bytes, r.overhead)
  end
  for _, e in ipairs(self.entries) do
    local keys = {}
    for k, v in pairs(e.keys) do keys[#keys + 1] = k .. "=" .. v end
    table.sort(keys)
    local head = e.cannot and ("cannot " .. e.op .. " " .. e.device)
      or string.format("cost %s %s %.17g", e.op, e.device, e.seconds)
    out[#out + 1] = head .. (#keys > 0 and " " .. table.concat(keys, " ") or "")
  end
  return table.concat(out, "\n") .. "\n"
end

function Table:__tostring()
  check_self(self, Table, "CostTable", "__tostring")
  return string.format("CostTable(%d entries from %s)", #self.entries,
                       #self.sources > 0 and table.concat(self.sources, ", ") or "no file")
end

function Table:__len()
  check_self(self, Table, "CostTable", "__len")
  return #self.entries
end

function M.is_table(x) return getmetatable(x) == Table end

-- Is x something dp.planner.schedule takes as `cost`?
function M.is_costs(x) return type(x) == "function" or M.is_table(x) or M.is_model(x) end

-- ---------------------------------------------------------------- errors

local function load_error(source, line, msg)
  return core.Error{message = msg, code = "value", source = source, line = line, col = line and 1 or nil}
end

-- ---------------------------------------------------------------- the plain format

-- The device type name as VirtualDevices give it (aliases such as gpu are cuda's).
local KNOWN_DEVICE = {}
local function check_device(name, source, line)
  if name == "*" then return name end
  if KNOWN_DEVICE[name] == nil then
    local ok, vd = pcall(core.VirtualDevice, {device_type = name})
    KNOWN_DEVICE[name] = ok and vd.device_type_name or false
  end
  if not KNOWN_DEVICE[name] then
    error(load_error(source, line, "unknown device type '" .. name .. "' (a device type name such as cpu, cuda, opencl, or *)"), 0)
  end
  return KNOWN_DEVICE[name]
end

local function seconds_of(text, source, line, what)
  local n = tonumber(text)
  if not n or n ~= n or n < 0 or n == math.huge then
    error(load_error(source, line, what .. " must be a number of seconds >= 0, got '" .. tostring(text) .. "'"), 0)
  end
  return n
end

local function parse_plain(t, text, source)
  local rates = {}
  local lineno = 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    line = line:gsub("\r$", ""):gsub("#.*$", "")
    local words = {}
    for w in line:gmatch("%S+") do words[#words + 1] = w end
    local kind = words[1]
    if kind == nil then -- blank
    elseif kind == "rate" then
      local dev = check_device(words[2] or error(load_error(source, lineno, "rate needs a device type: rate DEVICE flops=N bytes=N overhead=N"), 0), source, lineno)
      local r = {}
      for i = 3, #words do
        local k, v = words[i]:match("^([%w_]+)=(.+)$")
        if not k or (k ~= "flops" and k ~= "bytes" and k ~= "overhead") then
          error(load_error(source, lineno, "rate takes flops=N, bytes=N and overhead=N, got '" .. words[i] .. "'"), 0)
        end
        r[k] = tonumber(v) or error(load_error(source, lineno, k .. " must be a number, got '" .. v .. "'"), 0)
      end
      local ok, checked = pcall(check_rate, r, "rate", dev, 1)
      if not ok then error(load_error(source, lineno, (tostring(checked):gsub("^[^:]*:%d+: ", ""))), 0) end
      checked.device_type = device_type_number(dev, "rate", 1)
      rates[dev == "*" and "default" or dev] = checked
    elseif kind == "cost" or kind == "cannot" then
      local op, dev = words[2], words[3]
      if not op or not dev then
        error(load_error(source, lineno, kind == "cost" and "cost needs OP DEVICE SECONDS [KEY=VALUE ...]"
          or "cannot needs OP DEVICE [KEY=VALUE ...]"), 0)
      end
      if op ~= "*" and not pcall(core.op.get, op) then
        error(load_error(source, lineno, "unknown operator '" .. op .. "'"), 0)
      end
      dev = check_device(dev, source, lineno)
      local first, e = 4, {op = op, device = dev, keys = {}, source = source, line = lineno}
      if kind == "cost" then
        e.seconds = seconds_of(words[4], source, lineno, "the cost")
        first = 5
      else
        e.cannot = true
      end
      for i = first, #words do
        local k, v = words[i]:match("^([%w_]+)=(.*)$")
        if not k or v == "" then
          error(load_error(source, lineno, "'" .. words[i] .. "' is not KEY=VALUE (args=1x3x224x224,64x3x7x7, dtype=float32, strides=2,2, ...)"), 0)
        end
        e.keys[k] = normal(k, v)
      end
      add_entry(t, e)
    else
      error(load_error(source, lineno, "unknown line '" .. kind .. "': a cost file has rate, cost and cannot lines (# comments)"), 0)
    end
  end
  return rates
end

-- ---------------------------------------------------------------- TopHub logs

-- The device type name of a TVM target string (its kind's).
local KIND_DEVICE = {}
local function target_device(target)
  local kind = target:match("^%s*(%S+)")
  if KIND_DEVICE[kind] == nil then
    local ok, t = pcall(core.Target, kind)
    KIND_DEVICE[kind] = ok and t.device_type_name or false
  end
  return KIND_DEVICE[kind] or nil
end

local function tensor_arg(a)
  if type(a) == "table" and a[1] == "TENSOR" and type(a[2]) == "table" then return a[2], a[3] end
end

local function dims(shape)
  local d = {}
  for i, x in ipairs(shape) do d[i] = tostring(math.tointeger(x) or x) end
  return table.concat(d, "x")
end

local function ints(list)
  local d = {}
  for i, x in ipairs(list) do d[i] = tostring(math.tointeger(x) or x) end
  return table.concat(d, ",")
end

-- A TopHub workload as an entry's op and keys, or nil for a task devplan
-- does not read (with why).
local function workload(task, args)
  local data, ddt = tensor_arg(args[1])
  local kernel, kdt = tensor_arg(args[2])
  if not data or not kernel then return nil, "no tensors" end
  local keys = {dtype = ddt .. "," .. kdt}
  if task:match("^depthwise_conv2d_nchw") then
    -- kernel [C, M, KH, KW]; Relay: weight (C*M, 1, KH, KW), groups = C
    keys.args = dims(data) .. "," .. dims{kernel[1] * kernel[2], 1, kernel[3], kernel[4]}
    keys.strides, keys.padding, keys.dilation = ints(args[3]), normal("padding", ints(args[4])), ints(args[5])
    keys.groups = tostring(math.tointeger(data[2]) or data[2])
    keys.data_layout, keys.kernel_layout = "NCHW", "OIHW"
    return "nn.conv2d", keys
  elseif task:match("^conv2d_transpose_nchw") then
    keys.args = dims(data) .. "," .. dims(kernel)
    keys.strides, keys.padding = ints(args[3]), normal("padding", ints(args[4]))
    if type(args[6]) == "table" then keys.output_padding = ints(args[6]) end
    keys.data_layout = "NCHW"
    return "nn.conv2d_transpose", keys
  elseif task:match("^conv2d_nchw") then
    keys.args = dims(data) .. "," .. dims(kernel)
    keys.strides, keys.padding, keys.dilation = ints(args[3]), normal("padding", ints(args[4])), ints(args[5])
    keys.groups = "1"
    keys.data_layout, keys.kernel_layout = "NCHW", "OIHW"
    return "nn.conv2d", keys
  elseif task:match("^dense") then
    keys.args = dims(data) .. "," .. dims(kernel)
    return "nn.dense", keys, tensor_arg(args[3]) ~= nil
  end
  return nil, "task " .. task
end

local function entry_key(op, dev, keys)
  local ks = {}
  for k, v in pairs(keys) do ks[#ks + 1] = k .. "=" .. v end
  table.sort(ks)
  return op .. " " .. dev .. " " .. table.concat(ks, " ")
end

local function parse_tophub(t, text, source, opts)
  local ok_json, json = pcall(require, "dkjson")
  if not ok_json then
    error(load_error(source, nil, "reading TopHub logs needs dkjson (Debian package lua-dkjson; scripts/setup.sh installs it)"), 0)
  end
  local boards, board_list = {}, {}
  local best, order = {}, {}
  local counts = {records = 0, used = 0, failed = 0, skipped = 0}
  local lineno = 0
  local records = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    lineno = lineno + 1
    if line:match("^%s*{") then
      local r, _, err = json.decode(line, 1, nil)
      if type(r) ~= "table" or type(r.input) ~= "table" or type(r.result) ~= "table" then
        error(load_error(source, lineno, "not a TopHub record (" .. tostring(err or "no input or result") .. ")"), 0)
      end
      local target, task, args = r.input[1], r.input[2], r.input[3]
      if type(target) ~= "string" or type(task) ~= "string" or type(args) ~= "table" then
        error(load_error(source, lineno, "a TopHub record's input is [TARGET, TASK, ARGS, KWARGS]"), 0)
      end
      local board = target:match("%-model=(%S+)") or "(none)"
      if not boards[board] then
        boards[board] = true
        board_list[#board_list + 1] = board
      end
      records[#records + 1] = {r = r, board = board, line = lineno}
    elseif line:match("%S") and not line:match("^%s*#") then
      error(load_error(source, lineno, "a TopHub log has JSON records and # comments only"), 0)
    end
  end
  local want = opts.board
  if not want then
    if #board_list > 1 then
      table.sort(board_list)
      error(load_error(source, nil, "the log has records of several boards (" .. table.concat(board_list, ", ")
        .. "): choose one with board = NAME (devplan plan --board NAME)"), 0)
    end
    want = board_list[1]
  elseif not boards[want] then
    table.sort(board_list)
    error(load_error(source, nil, "the log has no record of board '" .. want .. "' (it has "
      .. (#board_list > 0 and table.concat(board_list, ", ") or "none") .. ")"), 0)
  end
  for _, rec in ipairs(records) do
    local r = rec.r
    if rec.board == want then
      counts.records = counts.records + 1
      local times, errno = r.result[1], r.result[2]
      local sum, n = 0, 0
      for _, x in ipairs(type(times) == "table" and times or {}) do
        if type(x) == "number" and x > 0 and x < math.huge then sum, n = sum + x, n + 1 end
      end
      local dev = opts.device or target_device(r.input[1])
      local op, keys, with_bias = workload(r.input[2], r.input[3])
      if errno ~= 0 or n == 0 or not dev then
        counts.failed = counts.failed + 1
      elseif not op then
        counts.skipped = counts.skipped + 1
      else
        counts.used = counts.used + 1
        local k = entry_key(op, dev, keys)
        local b = best[k]
        local secs = sum / n
        -- the fastest record of a workload (TVM picks the best tuned template);
        -- a dense record without bias before one with
        if not b then
          b = {op = op, device = dev, keys = keys, seconds = secs, bias = with_bias, source = source, line = rec.line}
          best[k] = b
          order[#order + 1] = k
        elseif (b.bias and not with_bias) or (b.bias == with_bias and secs < b.seconds) then
          b.seconds, b.bias, b.line = secs, with_bias, rec.line
        end
      end
    end
  end
  for _, k in ipairs(order) do
    local b = best[k]
    add_entry(t, {op = b.op, device = b.device, keys = b.keys, seconds = b.seconds, source = b.source, line = b.line})
  end
  t.tophub = t.tophub or {}
  t.tophub[#t.tophub + 1] = {source = source, board = want, records = counts.records, used = counts.used,
                             failed = counts.failed, skipped = counts.skipped, entries = #order}
end

-- ---------------------------------------------------------------- loading

local LOAD_OPTS = {board = true, device = true, model = true, name = true}

-- One file's text into table t (TopHub when its first record line is JSON).
local function read_into(t, text, source, opts)
  local is_json = false
  for line in text:gmatch("[^\n]+") do
    if not line:match("^%s*#") and line:match("%S") then
      is_json = line:match("^%s*{") ~= nil
      break
    end
  end
  if is_json then
    parse_tophub(t, text, source, opts)
    return {}
  end
  return parse_plain(t, text, source)
end

local function check_load_opts(opts)
  if opts == nil then return {} end
  if type(opts) ~= "table" then error("dp.costs.load: options must be a table, got " .. type(opts), 3) end
  for k, v in pairs(opts) do
    if not LOAD_OPTS[k] then
      error("dp.costs.load: unknown option '" .. tostring(k) .. "' (board, device, model, name)", 3)
    end
    if k == "model" and not M.is_model(v) then error("dp.costs.load: option 'model' must be a dp.costs.model", 3) end
    if k ~= "model" and type(v) ~= "string" then error("dp.costs.load: option '" .. k .. "' must be a string", 3) end
  end
  if opts.device and opts.device ~= "*" then
    local copy = {}
    for k, v in pairs(opts) do copy[k] = v end
    copy.device = check_device(opts.device, "dp.costs.load", nil)
    opts = copy
  end
  return opts
end

-- dp.costs.parse(text, opts?) -> cost table from text (plain or TopHub);
-- opts.name names it in errors (default "<costs>").
function M.parse(text, opts)
  if type(text) ~= "string" then error("dp.costs.parse: a string expected, got " .. type(text), 2) end
  opts = check_load_opts(opts)
  local t = new_table()
  local source = opts.name or "<costs>"
  local rates = read_into(t, text, source, opts)
  t.sources[1] = source
  t.model = (opts.model or M.DEFAULT):with(new_model(rates))
  return t
end

-- dp.costs.load(path | {paths}, {board =, device =, model =}?) -> cost table.
-- board: the TopHub records of that -model (needed when a log has several);
-- device: the device type its records count for (default: the target's);
-- model: the default model under the files' rate lines.
function M.load(paths, opts)
  if type(paths) == "string" then paths = {paths} end
  if type(paths) ~= "table" or #paths == 0 then
    error("dp.costs.load: a path or a list of paths expected, got " .. type(paths), 2)
  end
  opts = check_load_opts(opts)
  local t = new_table()
  local rates = {}
  for _, path in ipairs(paths) do
    if type(path) ~= "string" then error("dp.costs.load: paths are strings, got " .. type(path), 2) end
    local f, why = io.open(path, "rb")
    if not f then error(load_error(path, nil, "cannot open " .. tostring(why)), 0) end
    local text = f:read("a")
    f:close()
    if not text then error(load_error(path, nil, "cannot read " .. path), 0) end
    for k, v in pairs(read_into(t, text, path, opts)) do rates[k] = v end
    t.sources[#t.sources + 1] = path
  end
  t.model = (opts.model or M.DEFAULT):with(new_model(rates))
  return t
end

-- An empty table over a model (entries added with t:merge(dp.costs.parse(...))).
function M.table(model)
  if model ~= nil and not M.is_model(model) then error("dp.costs.table: a dp.costs.model expected", 2) end
  return new_table(model)
end

-- ---------------------------------------------------------------- estimates

M.flops = core.schedule.flops   -- flops(call): the default model's estimate
M.bytes = core.schedule.bytes   -- bytes(call): tensor arguments read + result written

return M
