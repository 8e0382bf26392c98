-- dp.planner.why(planned, e, {input =, config =, name =}?): why a value of a
-- planned module is where it is, including the values PlanDevices made.
--
--   a device_copy   why it was inserted: where the copied value is made and
--                   why, and where its users are and why; in a module
--                   MoveCopies made, first why the copy is where it is now
--                   (the moves that brought it there, dp.planner.moves)
--   an on_device with constrain_result (PlanDevices writes these)
--                   what it marks, and why the value inside is on its device
--   anything else   dp.planner.explain's reason and steps
--
-- Reasons are told in terms of the module before planning when `input` is
-- given (the module PlanDevices was run on, annotations included; unless
-- MoveCopies made the module: it moves devices on purpose): its
-- domains are analysed (dp.planner.domains) and each planned node is
-- matched to the input node of the same position and kind (planning keeps
-- positions), so the reason is the annotation or defaulting rule of the
-- input rather than the annotations planning wrote. Without `input`, or for
-- nodes without a position, the planned module's own reasons are given.
-- Returns the text (lines joined by "\n").
local core = require "devplan.core"
local ir = require "devplan.ir"
local devname = require "devplan.devname"
local options = require "devplan.plan_options"
local copies = require "devplan.copies"
local report = require "devplan.report"

local error, ipairs, pairs, rawequal, tostring, type = error, ipairs, pairs, rawequal, tostring, type
local string, table = string, table
_ENV = nil -- no global is read or written below this line

local M = {}

local function is_op(e, name)
  return e.kind == "call" and e.callee.kind == "op" and e.callee.name == name
end

-- The node of the input's domains with the position and kind of planned node e.
local function counterpart(domains, e)
  if not e.span then return nil end
  local found
  core.visit(domains.module, function(x)
    if found or not x.span or x.kind ~= e.kind then return end
    if x.span.line == e.span.line and x.span.col == e.span.col
        and (x.kind ~= "call" or x.callee.kind ~= "op" or e.callee.kind ~= "op"
             or x.callee.name == e.callee.name) then
      found = x
    end
  end)
  return found
end

-- The users of e in m (nodes that have e as a child).
local function users_of(m, e)
  local users = {}
  core.visit(m, function(x)
    for _, c in ipairs(core.children(x)) do
      if rawequal(c, e) then users[#users + 1] = x end
    end
  end)
  return users
end

local function reason_lines(ctx, e, indent, out)
  local x = ctx.domains and counterpart(ctx.domains, e)
  local ex
  if x and not is_op(x, "device_copy") then ex = ctx.domains:explain(x)
  else ex = core.planner.explain(ctx.planned, e, ctx.config) end
  out[#out + 1] = indent .. ex.text
  for _, s in ipairs(ex.steps) do out[#out + 1] = indent .. "  " .. s.message end
end

local function strip(v)
  while is_op(v, "on_device") do v = v.args[1] end
  return v
end

-- The name a move record gives a callee: "@f" for a global, "%f" for a
-- let-bound closure (records say "%f (in @main)").
local function callee_name(c)
  if c.kind == "global" then return "@" .. c.name end
  if c.kind == "var" then return "%" .. c.name end
  return nil
end

local function named(record_name, callee)
  return callee and record_name and (record_name == callee or record_name:sub(1, #callee + 1) == callee .. " ")
end

-- The moves (dp.planner.moves of the module) that brought copy e where it is.
local function move_lines(ctx, e, out)
  local moves = ctx.moves
  if not moves then return end
  local src, dst = e.attrs.src_virtual_device, e.attrs.dst_virtual_device
  local v = strip(e.args[1])
  local users = users_of(ctx.planned, e)
  local found = {}
  for _, m in ipairs(moves) do
    local same = m.src and m.dst and rawequal(m.src, src) and rawequal(m.dst, dst)
    local hit = false
    if same and m.kind == "parameter" then
      for _, u in ipairs(users) do
        if u.kind == "call" and named(m.fn, callee_name(u.callee)) then hit = true end
      end
    elseif same and m.kind == "result" then
      hit = v.kind == "call" and named(m.fn, callee_name(v.callee))
    elseif same and m.kind == "loop" then
      for _, u in ipairs(users) do
        if u.kind == "call" and named(m.to, callee_name(u.callee)) then hit = true end
      end
    elseif same and m.kind == "merged" then
      hit = v.kind == "var" and m.value == "%" .. v.name
    elseif same and m.kind == "captured" then
      -- the copy is the value of the let MoveCopies put before the closure
      local up = users
      while #up == 1 and is_op(up[1], "on_device") do up = users_of(ctx.planned, up[1]) end
      for _, u in ipairs(up) do
        if u.kind == "let" and m.to == "%" .. u.var.name then hit = true end
      end
    end
    if hit then found[#found + 1] = m end
  end
  if #found == 0 then return end
  out[#out + 1] = "  MoveCopies moved it here:"
  for _, m in ipairs(found) do out[#out + 1] = "    " .. m.text end
end

local function copy_lines(ctx, name, e, out)
  core.planner.explain(ctx.planned, e, ctx.config) -- (an error where e is not the module's)
  local namer = devname.namer()
  local v = strip(e.args[1])
  local src, dst = e.attrs.src_virtual_device, e.attrs.dst_virtual_device
  if not (ir.is_virtual_device(src) and ir.is_virtual_device(dst)) then
    error(core.Error{code = "value", message = name .. " is a device_copy without its devices "
      .. "(src_virtual_device and dst_virtual_device): not a copy PlanDevices wrote"}, 0)
  end
  out[#out + 1] = string.format("%s is a device_copy %s: it copies a %s (%s) from @%s to @%s",
    name, ctx.moves and "PlanDevices inserted and MoveCopies kept" or "PlanDevices inserted",
    tostring(e.checked_type), report.bytes_text(e.checked_type), namer(src), namer(dst))
  move_lines(ctx, e, out)
  out[#out + 1] = "  the value is made on @" .. namer(src) .. ":"
  reason_lines(ctx, v, "    ", out)
  local users = users_of(ctx.planned, e)
  for _, u in ipairs(users) do
    while is_op(u, "on_device") and #users_of(ctx.planned, u) > 0 do u = users_of(ctx.planned, u)[1] end
    out[#out + 1] = "  and used on @" .. namer(dst) .. ":"
    reason_lines(ctx, u, "    ", out)
  end
  if #users == 0 then
    out[#out + 1] = "  and it is the result, which is on @" .. namer(dst) .. ":"
    reason_lines(ctx, e, "    ", out)
  end
end

local OPTIONS = {input = true, config = true, name = true}

function M.why(planned, e, opts)
  if not ir.is_module(planned) then error("devplan.planner.why: a planned IRModule expected, got " .. type(planned), 2) end
  if not ir.is_expr(e) then error("devplan.planner.why: an expression expected, got " .. type(e), 2) end
  opts = opts or {}
  if type(opts) ~= "table" then error("devplan.planner.why: options must be a table", 2) end
  for k in pairs(opts) do
    if not OPTIONS[k] then error("devplan.planner.why: unknown option '" .. tostring(k) .. "' (input, config, name)", 2) end
  end
  if opts.config ~= nil and not ir.is_config(opts.config) then
    error("devplan.planner.why: option config must be a CompilationConfig, got " .. type(opts.config), 2)
  end
  if opts.input ~= nil and not ir.is_module(opts.input) then
    error("devplan.planner.why: option input must be the IRModule that was planned, got " .. type(opts.input), 2)
  end
  if opts.input ~= nil and not ir.is_config(opts.config) then
    error("devplan.planner.why: option input needs option config (the CompilationConfig it was planned with)", 2)
  end
  local moves = copies.moves(planned)
  -- (MoveCopies changes devices on purpose: a moved module is explained by itself)
  local ctx = {planned = planned, config = opts.config, moves = moves,
               domains = opts.input and not moves and options.domains(opts.input, opts.config)}
  local name = opts.name or "it"
  local out = {}
  if is_op(e, "device_copy") then
    copy_lines(ctx, name, e, out)
  elseif is_op(e, "on_device") and e.attrs.constrain_result then
    out[#out + 1] = name .. " is an on_device PlanDevices wrote: the value inside is computed on its device,"
    out[#out + 1] = "  which differs from where it is used (a device_copy follows, or a function result)"
    reason_lines(ctx, e.args[1], "  ", out)
  else
    reason_lines(ctx, e, "", out)
  end
  return table.concat(out, "\n")
end

return M
