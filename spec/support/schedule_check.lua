-- An independent checker of modelled schedules (issue 24's cost model, as
-- include/devplan/schedule.h words it), written apart from the scheduler
-- (src/planner/schedule_*.c): it reads the planned module itself, in Lua,
-- and shares no code with it.
--
--   local check = dofile("spec/support/schedule_check.lua")
--   local problems = check(planned, config, schedule, {cost = f, bandwidth = b})
--   -- {} when the schedule keeps every rule, else one message per broken rule
--
-- The rules:
--   tasks      a task per operator call (not on_device) and per device_copy, and
--              one per call of a primitive function (its body's calls are not
--              tasks), each exactly once; nothing else
--   device     a call runs where its lexical context says (the function's
--              virtual_device, a fixed on_device's device for its body, a
--              device_copy's source for its argument); a copy goes from its
--              src_virtual_device to its dst_virtual_device
--   duration   finish - start is cost(call, device), or bytes / bandwidth for a copy
--   overlap    no two calls on one physical device (type, id), no two copies on one
--              ordered pair of physical devices, overlap in time (with serial: no
--              two tasks at all)
--   ready      a task starts when every value it reads is finished: through tuples
--              (a projection of a tuple literal reads its field), projections, lets,
--              annotations; @main's parameters at 0; a function called at exactly
--              one place, never referenced otherwise (but as a let's value) and not
--              through itself, read as inlined there; any other function apart:
--              parameters at 0, its calls ready with their arguments and callee;
--              if/match with every part; constructors and references with what
--              they hold
--   makespan   the latest finish, 0 without tasks
local M = {}

local REL = 1e-9

local function close(a, b)
  return math.abs(a - b) <= REL * math.max(1, math.abs(a), math.abs(b))
end

local function is_op(e, name)
  return e.kind == "call" and e.callee.kind == "op" and e.callee.name == name
end

local function primitive(f)
  local p = f.attrs and f.attrs.Primitive
  return p ~= nil and p ~= 0 and p ~= false
end

local function dtype_bytes(dtype)
  if dtype == "bool" then return 1 end
  local bits = tonumber(dtype:match("^%a+(%d+)") or "0")
  local lanes = tonumber(dtype:match("x(%d+)$") or "1")
  return ((bits + 7) // 8) * lanes
end

local function bytes_of(t)
  if not t then return 0 end
  if t.kind == "tensor" then
    local n = dtype_bytes(t.dtype)
    for _, d in ipairs(t.shape) do if d >= 0 then n = n * d end end
    return n
  end
  if t.kind == "tuple" then
    local n = 0
    for _, f in ipairs(t.fields) do n = n + bytes_of(f) end
    return n
  end
  return 0
end

local function phys(vd) return vd.device_type .. ":" .. vd.virtual_device_id end

-- The configuration's bandwidth rule, read from config.bandwidth as given.
local function config_bandwidth(config, src, dst)
  local t = config.bandwidth
  if type(t) == "number" then return t end
  if type(t) ~= "table" then return 1e10 end
  local s, d = src.device_type_name, dst.device_type_name
  return t[s .. "->" .. d] or t[s .. "->*"] or t["*->" .. d] or t["*->*"] or t.default or 1e10
end

-- ---------------------------------------------------------------- the walk

-- Every edge parent -> child of the module, each distinct node descended
-- once, in module order; f(parent, i, child, fnowner) per edge (parent nil for
-- a function's root), post(node, fnowner) once per node after its children.
local function walk(mod, edge, post)
  local seen = {}
  for _, nf in ipairs(mod:functions()) do
    local root = nf[2]
    local stack = {}
    local function reach(parent, i, child, owner)
      if edge then edge(parent, i, child, owner) end
      if child.kind == "op" or child.kind == "ctor" or seen[child] then return end
      seen[child] = true
      local inner = owner
      if child.kind == "fn" then inner = child end
      local kids = {}
      if not (child.kind == "fn" and primitive(child)) then
        for k, c in ipairs(require("devplan").children(child)) do kids[k] = c end
      end
      stack[#stack + 1] = {node = child, kids = kids, i = 0, owner = inner}
    end
    reach(nil, 0, root, root)
    while #stack > 0 do
      local top = stack[#stack]
      top.i = top.i + 1
      if top.i > #top.kids then
        stack[#stack] = nil
        if post then post(top.node, top.owner) end
      else
        reach(top.node, top.i, top.kids[top.i], top.owner)
      end
    end
  end
end

-- The child index of a let's value and a function's body (dp.children order).
local function let_value_index() return 2 end
local function fn_body_index(f) return #f.params + 1 end

-- ---------------------------------------------------------------- the checker

local function check(planned, config, sched, opts)
  local dp = require "devplan"
  opts = opts or {}
  local problems = {}
  local function bad(fmt, ...) problems[#problems + 1] = string.format(fmt, ...) end
  local cost = opts.cost

  -- functions: flow of known functions, call sites, escapes, owners
  local mainfn = planned:get("main")
  local globals = {}
  for _, nf in ipairs(planned:functions()) do globals[nf[1]] = nf[2] end
  local letvalue = {}   -- let variable -> its value
  local info = {}       -- function -> {sites =, escapes =, owner =}
  local function fninfo(f)
    local r = info[f]
    if not r then
      r = {sites = 0, escapes = 0}
      info[f] = r
    end
    return r
  end
  -- what a value is, through let-bound variables, annotations, let bodies
  -- and projections of tuple literals
  local function resolve(e)
    for _ = 1, 1000000 do
      if e.kind == "var" and letvalue[e] then e = letvalue[e]
      elseif is_op(e, "on_device") then e = e.args[1]
      elseif e.kind == "let" then e = e.body
      elseif e.kind == "proj" then
        local t = resolve(e.tuple)
        if t.kind ~= "tuple" or not t.fields[e.index + 1] then return e end
        e = t.fields[e.index + 1]
      else return e end
    end
    return e
  end
  -- the function a value carries
  local function carries(e)
    local r = resolve(e)
    if r.kind == "global" then return globals[r.name] end
    if r.kind == "fn" then return r end
    return nil
  end
  -- let values first (a use may come before the walk reaches its let's post)
  walk(planned, function(parent, i, child)
    if parent and parent.kind == "let" and i == let_value_index() then letvalue[parent.var] = child end
  end)
  local owner_of_site = {}
  walk(planned, function(parent, i, child)
    -- a reference to a function but as a callee or a let's value escapes
    if not parent or (child.kind ~= "var" and child.kind ~= "global" and child.kind ~= "fn") then return end
    if (parent.kind == "let" and i <= 2) or (parent.kind == "fn" and i <= #parent.params) then return end
    if parent.kind == "call" and i == 1 then return end
    local f = carries(child)
    if f then fninfo(f).escapes = fninfo(f).escapes + 1 end
  end, function(node, owner)
    if node.kind == "call" and node.callee.kind ~= "op" and node.callee.kind ~= "ctor" then
      local f = carries(node.callee)
      if f and not primitive(f) then
        local r = fninfo(f)
        r.sites = r.sites + 1
        r.owner = owner
        owner_of_site[node] = owner
      end
    end
  end)
  local function candidate(f)
    local r = info[f]
    return f ~= mainfn and not primitive(f) and r ~= nil and r.sites == 1 and r.escapes == 0
  end
  local inline = {}
  for f in pairs(info) do
    if candidate(f) then
      local cur, steps, cycle = info[f].owner, 0, false
      while cur and candidate(cur) and steps <= 100000 do
        if cur == f then cycle = true break end
        cur = info[cur].owner
        steps = steps + 1
      end
      if cur == f then cycle = true end
      inline[f] = not cycle
    end
  end

  -- the tasks and their devices (lexical contexts)
  local tasks, task_of = {}, {}
  local ctx = {}
  for _, nf in ipairs(planned:functions()) do
    local stack = {{nf[2], nil}}
    local seen = {}
    while #stack > 0 do
      local e, c = table.unpack(table.remove(stack))
      if not seen[e] and e.kind ~= "op" and e.kind ~= "ctor" then
        seen[e] = true
        if ctx[e] == nil then ctx[e] = c or false end
        local kids = dp.children(e)
        for i = #kids, 1, -1 do
          local k, kc = kids[i], c
          if e.kind == "fn" then
            if primitive(e) then k = nil
            elseif i == fn_body_index(e) then kc = e.virtual_device
            else kc = nil end
          elseif is_op(e, "on_device") and i == 2 then
            if e.attrs.constrain_body ~= false and e.attrs.virtual_device then kc = e.attrs.virtual_device end
          elseif is_op(e, "device_copy") and i == 2 then
            kc = e.attrs.src_virtual_device
          end
          if k then stack[#stack + 1] = {k, kc} end
        end
      end
    end
  end
  walk(planned, nil, function(e)
    if e.kind ~= "call" then return end
    local is_task = false
    if e.callee.kind == "op" then is_task = e.callee.name ~= "on_device"
    else
      local f = carries(e.callee)
      is_task = f ~= nil and primitive(f)
    end
    if is_task then tasks[#tasks + 1] = e end
  end)

  -- each task once
  local n = 0
  for i, t in ipairs(sched.tasks) do
    n = n + 1
    if task_of[t.expr] then bad("task %d: %s is scheduled twice", i, tostring(t.expr.kind)) end
    task_of[t.expr] = t
  end
  if n ~= #tasks then bad("the schedule has %d tasks, the module %d", n, #tasks) end
  for _, e in ipairs(tasks) do
    if not task_of[e] then bad("%s is a task of the module but not in the schedule", tostring(e.callee.name or e.callee.kind)) end
  end
  local taskset = {}
  for _, e in ipairs(tasks) do taskset[e] = true end
  for _, t in ipairs(sched.tasks) do
    if not taskset[t.expr] then bad("the schedule has a task that is no task of the module") end
  end

  -- devices and durations
  local function canon(vd) return vd and config:canonical(vd) end
  for _, e in ipairs(tasks) do
    local t = task_of[e]
    if t then
      if t.start < 0 or t.finish < t.start then bad("a task runs from %g to %g", t.start, t.finish) end
      if is_op(e, "device_copy") then
        local src, dst = canon(e.attrs.src_virtual_device), canon(e.attrs.dst_virtual_device)
        if t.kind ~= "copy" then bad("a device_copy is scheduled as a %s", tostring(t.kind)) end
        if not (t.src and phys(t.src) == phys(src)) or phys(t.device) ~= phys(dst) then
          bad("a copy %s -> %s is scheduled on %s -> %s", tostring(src), tostring(dst), tostring(t.src), tostring(t.device))
        end
        local bw = opts.bandwidth
        if type(bw) == "function" then bw = bw(src, dst) end
        bw = bw or config_bandwidth(config, src, dst)
        local b = bytes_of(e.checked_type or e.args[1].checked_type)
        if not close(t.finish - t.start, b / bw) then
          bad("a copy of %d bytes at %g B/s takes %g s, not %g", b, bw, t.finish - t.start, b / bw)
        end
      else
        local c = ctx[e]
        local vd = c and canon(c)
        if not vd then
          bad("%s has no device in the plan", tostring(e.callee.name or "a call"))
        else
          if t.kind ~= "call" or phys(t.device) ~= phys(vd) then
            bad("%s runs on %s in the plan, scheduled on %s", tostring(e.callee.name or "a call"), tostring(vd), tostring(t.device))
          end
          local want = cost and cost(e, vd)
          if cost and want == nil then bad("%s on %s: the cost says it cannot run there", tostring(e.callee.name), tostring(vd)) end
          if want and not close(t.finish - t.start, want) then
            bad("%s on %s takes %g s, not %g", tostring(e.callee.name or "a call"), tostring(vd), t.finish - t.start, want)
          end
        end
      end
    end
  end

  -- no overlap per resource
  local lanes = {}
  for _, t in ipairs(sched.tasks) do
    local key
    if sched.serial then key = "all"
    elseif t.kind == "copy" then key = "link " .. phys(t.src) .. ">" .. phys(t.device)
    else key = "device " .. phys(t.device) end
    lanes[key] = lanes[key] or {}
    table.insert(lanes[key], t)
  end
  for key, list in pairs(lanes) do
    table.sort(list, function(a, b) if a.start ~= b.start then return a.start < b.start end return a.finish < b.finish end)
    for i = 2, #list do
      if list[i].start < list[i - 1].finish and not close(list[i].start, list[i - 1].finish) then
        bad("%s: two tasks overlap (%g-%g and %g-%g)", key, list[i - 1].start, list[i - 1].finish, list[i].start, list[i].finish)
      end
    end
  end

  -- readiness, to a fixed point over the parameters of inlined functions
  local site_args = {} -- inlined function -> its call's argument expressions
  for e in pairs(owner_of_site) do
    local f = carries(e.callee)
    if inline[f] then site_args[f] = e.args end
  end
  local val = {}
  local params = {} -- parameter -> {t =}
  local pattern = {} -- pattern variable -> {t =}
  local get
  local function var_val(e)
    local v = letvalue[e]
    if v then
      if val[v] then return val[v] end
      if v.kind == "fn" then return {t = 0, fn = v} end
      return {t = 0}
    end
    return params[e] or pattern[e] or {t = 0}
  end
  get = function(e)
    if e.kind == "var" then return var_val(e) end
    return val[e] or {t = 0}
  end
  local function whole(e) return get(e).t end
  local checks = {} -- task -> when its values are ready
  local function maxof(list, extra)
    local m = extra or 0
    for _, x in ipairs(list) do if whole(x) > m then m = whole(x) end end
    return m
  end
  local changed
  local function set(tbl, k, v)
    local old = tbl[k]
    if not old or old.t ~= v.t then changed = true end
    tbl[k] = v
  end
  local function eval_round()
    changed = false
    walk(planned, nil, function(e)
      local v
      local k = e.kind
      if k == "var" then return
      elseif k == "global" then v = {t = 0, fn = globals[e.name]}
      elseif k == "const" or k == "op" or k == "ctor" then v = {t = 0}
      elseif k == "fn" then
        v = {t = 0, fn = e}
        if not primitive(e) then
          for i, p in ipairs(e.params) do
            local args = site_args[e]
            set(params, p, {t = (inline[e] and args and args[i]) and whole(args[i]) or 0})
          end
        end
      elseif k == "let" then v = get(e.body)
      elseif k == "tuple" then v = {t = maxof(e.fields), fields = e.fields}
      elseif k == "proj" then
        local tv = get(e.tuple)
        if tv.fields and tv.fields[e.index + 1] then v = get(tv.fields[e.index + 1])
        else v = {t = whole(e.tuple)} end
      elseif k == "if" then v = {t = math.max(whole(e.cond), whole(e.then_branch), whole(e.else_branch))}
      elseif k == "match" then
        for _, c in ipairs(e.clauses) do
          local function bind(p)
            if p.kind == "var" then set(pattern, p.var, {t = whole(e.data)}) end
            for _, sub in ipairs(p.patterns or {}) do bind(sub) end
          end
          bind(c.pattern)
        end
        local m = whole(e.data)
        for _, c in ipairs(e.clauses) do m = math.max(m, whole(c.rhs)) end
        v = {t = m}
      elseif k == "ref" then v = {t = whole(e.value)}
      elseif k == "ref_read" then v = {t = whole(e.ref)}
      elseif k == "ref_write" then v = {t = math.max(whole(e.ref), whole(e.value))}
      elseif k == "call" then
        if is_op(e, "on_device") then v = get(e.args[1])
        elseif taskset[e] then
          checks[e] = maxof(e.args)
          v = {t = task_of[e] and task_of[e].finish or 0}
        elseif e.callee.kind == "ctor" then v = {t = maxof(e.args)}
        else
          local f = get(e.callee).fn
          if f and inline[f] then v = {t = whole(f.body)}
          else v = {t = maxof(e.args, whole(e.callee))} end
        end
      end
      set(val, e, v or {t = 0})
    end)
    return changed
  end
  for _ = 1, 1000 do
    if not eval_round() then break end
  end
  for e, ready in pairs(checks) do
    local t = task_of[e]
    if t and t.start < ready and not close(t.start, ready) then
      bad("%s starts at %g, before what it reads is ready (%g)", tostring(e.callee.name or "a task"), t.start, ready)
    end
  end

  -- the makespan
  local last = 0
  for _, t in ipairs(sched.tasks) do if t.finish > last then last = t.finish end end
  if not close(sched.makespan, last) then bad("makespan %g, but the last task finishes at %g", sched.makespan, last) end
  return problems
end

M.check = check
return setmetatable(M, {__call = function(_, ...) return check(...) end})
