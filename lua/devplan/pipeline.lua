-- dp.pipeline: textual pipelines and the registry of pass names they use.
--
--   infer_type,annotate(rules=rules.lua),plan_devices(default=cuda),partition(by=target)
--
-- A pipeline is a comma-separated list of registered pass names, each with
-- optional `key=value` arguments in parentheses. A value is a run of
-- characters other than `,()'"` and spaces, or a quoted string ('...' or
-- "...", no escapes). Spaces around the punctuation are allowed;
-- tostring(dp.pipeline.parse(text)) prints it back with none, so a pipeline
-- written that way prints back exactly.
--
--   dp.pipeline.parse(text)            -> pipeline (items: {name =, args = {{key, value}}, col =})
--   dp.pipeline.text{{name, {{key, value}}?}, ...} -> text of such items
--   dp.pipeline.build(text_or_pipeline, {config =}?) -> a dp.Sequential pass
--   dp.pipeline.register{name =, make = function(args, env) return pass end,
--                        options = {key = "help"}?, help = "..."?, any_key = function(key)?}
--   dp.pipeline.register(pass)         a fixed pass under its name in snake case
--   dp.pipeline.names(), dp.pipeline.entry(name)
--   dp.pipeline.load_rules(path)       -> list of passes a rules file returns
--
-- Errors in the text (syntax, unknown names or options, bad values) are
-- devplan.Errors with source "pipeline", line 1 and the column, and say
-- which name was probably meant.
local core = require "devplan.core"
local pass = require "devplan.pass"
local passes = require "devplan.passes"
local devname = require "devplan.devname"
local suggest = require "devplan.suggest"
local costs = require "devplan.costs"
local annotate = require "devplan.passes.annotate_virtual_devices"

local error, getmetatable, ipairs, loadfile, next, pairs = error, getmetatable, ipairs, loadfile, next, pairs
local pcall, setmetatable, tonumber, tostring, type = pcall, setmetatable, tonumber, tostring, type
local math, table = math, table
_ENV = nil -- no global is read or written below this line

local M = {}

local registry = {}   -- name -> entry
local order = {}      -- names in registration order

-- ---------------------------------------------------------------- errors

local function fail(msg, col, code)
  error(core.Error{message = msg, code = code or "syntax", source = "pipeline", line = 1, col = col}, 0)
end

-- A name as a message quotes it: a long one cut (its length said).
local function quoted(name)
  if #name <= 60 then return "'" .. name .. "'" end
  return ("'%s...' (%d characters)"):format(name:sub(1, 40), #name)
end

-- ---------------------------------------------------------------- registry

local ENTRY_KEYS = {name = true, make = true, options = true, help = true, any_key = true}

local function snake(name)
  return (name:gsub("(%l)(%u)", "%1_%2"):gsub("(%u)(%u%l)", "%1_%2"):lower())
end

function M.register(entry)
  if pass.is_pass(entry) then
    local p = entry
    entry = {name = snake(p.name), make = function() return p end, help = tostring(p)}
  end
  if type(entry) ~= "table" then
    error("devplan.pipeline.register: an entry table or a pass expected, got " .. type(entry), 2)
  end
  for k in pairs(entry) do
    if not ENTRY_KEYS[k] then
      error("devplan.pipeline.register: unknown field '" .. tostring(k) .. "' (name, make, options, help, any_key)", 2)
    end
  end
  if type(entry.name) ~= "string" or not entry.name:match("^[%a_][%w_.]*$") then
    error("devplan.pipeline.register: name must be an identifier (letters, digits, _ and .)", 2)
  end
  if type(entry.make) ~= "function" then
    error("devplan.pipeline.register: '" .. entry.name .. "' needs make = function(args, env)", 2)
  end
  if entry.options ~= nil and type(entry.options) ~= "table" then
    error("devplan.pipeline.register: options of '" .. entry.name .. "' must be a table", 2)
  end
  if entry.any_key ~= nil and type(entry.any_key) ~= "function" then
    error("devplan.pipeline.register: any_key of '" .. entry.name .. "' must be a function(key)", 2)
  end
  if registry[entry.name] then
    error("devplan.pipeline.register: '" .. entry.name .. "' is registered already", 2)
  end
  registry[entry.name] = {name = entry.name, make = entry.make, options = entry.options or {},
                          help = entry.help or "", any_key = entry.any_key}
  order[#order + 1] = entry.name
  return entry.name
end

function M.names()
  local list = {}
  for i, n in ipairs(order) do list[i] = n end
  return list
end

function M.entry(name) return registry[name] end

-- ---------------------------------------------------------------- text

local Pipeline = {}
Pipeline.__index = Pipeline
Pipeline.__name = "devplan.Pipeline"

local function value_text(v)
  if v:match("^[^,()'\"%s]+$") then return v end
  return v:find("'", 1, true) and '"' .. v .. '"' or "'" .. v .. "'"
end

function Pipeline.__tostring(self)
  local parts = {}
  for i, it in ipairs(self.items) do
    local s = it.name
    if it.args then
      local a = {}
      for j, kv in ipairs(it.args) do a[j] = kv[1] .. "=" .. value_text(kv[2]) end
      s = s .. "(" .. table.concat(a, ",") .. ")"
    end
    parts[i] = s
  end
  return table.concat(parts, ",")
end

local function check_item(it)
  local e = registry[it.name]
  if not e then
    fail("unknown pass " .. quoted(it.name) .. suggest.hint(it.name, order)
      .. " (known: " .. table.concat(order, ", ") .. ")", it.col, "name")
  end
  local seen = {}
  for _, kv in ipairs(it.args or {}) do
    local key, col = kv[1], kv.col
    if seen[key] then fail(it.name .. ": option " .. quoted(key) .. " given twice", col, "value") end
    seen[key] = true
    if not e.options[key] then
      local ok, why = false, nil
      if e.any_key then ok, why = e.any_key(key) end
      if not ok then
        local known = {}
        for k in pairs(e.options) do known[#known + 1] = k end
        table.sort(known)
        fail(it.name .. ": " .. (why or ("unknown option " .. quoted(key) .. suggest.hint(key, known)
          .. (#known > 0 and " (options: " .. table.concat(known, ", ") .. ")" or " (it takes none)"))),
          col, "value")
      end
    end
  end
end

-- The parser: a cursor over the text.
local function parse_text(text)
  local pos = 1
  local function skip() pos = text:match("^%s*()", pos) end
  local function at() return text:sub(pos, pos) end
  local function ident(what)
    skip()
    local s, e = text:match("^()[%a_][%w_.]*()", pos)
    if not s then
      fail("expected " .. what .. (pos > #text and " at the end" or ", found '" .. at() .. "'"), pos)
    end
    pos = e
    return text:sub(s, e - 1), s
  end
  local function value()
    skip()
    local q = at()
    if q == "'" or q == '"' then
      local close = text:find(q, pos + 1, true)
      if not close then fail("unterminated string", pos) end
      local v = text:sub(pos + 1, close - 1)
      pos = close + 1
      return v
    end
    local s, e = text:match("^()[^,()'\"%s]+()", pos)
    if not s then fail("expected a value" .. (pos > #text and " at the end" or ", found '" .. at() .. "'"), pos) end
    pos = e
    return text:sub(s, e - 1)
  end
  local items = {}
  repeat
    local name, col = ident("a pass name")
    local it = {name = name, col = col}
    skip()
    if at() == "(" then
      pos = pos + 1
      it.args = {}
      skip()
      if at() ~= ")" then
        repeat
          local key, kcol = ident("an option name")
          skip()
          if at() ~= "=" then fail("expected '=' after option '" .. key .. "'", pos) end
          pos = pos + 1
          it.args[#it.args + 1] = {key, value(), col = kcol}
          skip()
          local sep = at()
          if sep == "," then pos = pos + 1 end
        until sep ~= ","
      end
      skip()
      if at() ~= ")" then
        fail("expected ',' or ')'" .. (pos > #text and " at the end" or ", found '" .. at() .. "'"), pos)
      end
      pos = pos + 1
    end
    items[#items + 1] = it
    skip()
    local sep = at()
    if sep == "," then pos = pos + 1 end
  until sep ~= ","
  if pos <= #text then fail("expected ',' between passes, found '" .. at() .. "'", pos) end
  return items
end

function M.parse(text)
  if type(text) ~= "string" then error("devplan.pipeline.parse: text must be a string, got " .. type(text), 2) end
  local items = parse_text(text)
  for _, it in ipairs(items) do check_item(it) end
  return setmetatable({items = items}, Pipeline)
end

function M.is_pipeline(v) return getmetatable(v) == Pipeline end

-- The text of items {{name, {{key, value}, ...}?}, ...}, checked as parse
-- checks it: a program writes a pipeline it hands on (the command line,
-- reproducers).
function M.text(items)
  local who = "devplan.pipeline.text"
  if type(items) ~= "table" then error(who .. ": a list of {name, {{key, value}, ...}?} expected, got " .. type(items), 2) end
  local list = {}
  for i, it in ipairs(items) do
    if type(it) ~= "table" or type(it[1]) ~= "string" then
      error(("%s: item %d must be {name, {{key, value}, ...}?} with a string name, got %s"):format(
        who, i, type(it) == "table" and "a name of type " .. type(it[1]) or type(it)), 2)
    end
    if it[2] ~= nil and type(it[2]) ~= "table" then
      error(("%s: item %d ('%s'): its options must be a list of {key, value}, got %s"):format(
        who, i, it[1], type(it[2])), 2)
    end
    for j, kv in ipairs(it[2] or {}) do
      if type(kv) ~= "table" or type(kv[1]) ~= "string" or type(kv[2]) ~= "string" then
        error(("%s: item %d ('%s'): option %d must be {key, value} with two strings"):format(
          who, i, it[1], j), 2)
      end
    end
    list[i] = {name = it[1], args = it[2], col = 1}
  end
  local p = setmetatable({items = list}, Pipeline)
  return tostring(M.parse(tostring(p)))
end

-- The passes of a pipeline, made with env (config: the configuration
-- planning passes start from).
function M.build(p, env)
  if type(p) == "string" then p = M.parse(p) end
  if not M.is_pipeline(p) then
    error("devplan.pipeline.build: a pipeline or its text expected, got " .. type(p), 2)
  end
  env = env or {}
  if type(env) ~= "table" then error("devplan.pipeline.build: env must be a table", 2) end
  for k in pairs(env) do
    if k ~= "config" and k ~= "costs" then
      error("devplan.pipeline.build: unknown option '" .. tostring(k) .. "' (config, costs)", 2)
    end
  end
  local list = {}
  for i, it in ipairs(p.items) do
    local args = {}
    for _, kv in ipairs(it.args or {}) do args[kv[1]] = kv[2] end
    local ok, made = pcall(registry[it.name].make, args, env)
    if not ok then
      local msg = core.is_error(made) and made.formatted or tostring(made)
      fail(it.name .. ": " .. msg, it.col, core.is_error(made) and made.code or "value")
    end
    if not pass.is_pass(made) then
      fail(it.name .. ": its make function returned a " .. type(made) .. ", not a pass", it.col, "value")
    end
    list[i] = made
  end
  local seq = pass.Sequential(list)
  seq.pipeline = p
  return seq
end

-- ---------------------------------------------------------------- helpers for entries

local function boolean(v, key)
  if v == nil then return nil end
  if v == "true" then return true end
  if v == "false" then return false end
  error("option '" .. key .. "' must be true or false, got '" .. v .. "'", 0)
end

-- The configuration env starts from, with the default device type of
-- `default` when given.
local function positive_integer(v, key)
  local n = math.tointeger(tonumber(v))
  if not n or n < 1 then error("option '" .. key .. "' must be a positive integer, got '" .. tostring(v) .. "'", 0) end
  return n
end

local function config_for(env, default)
  local base = env.config
  if not default then return base end
  local targets = base and base.primitive_targets or {"llvm", "cuda"}
  return core.CompilationConfig{targets = targets, host = base and base.host_target or nil,
                                default_device_type = default, bandwidth = base and base.bandwidth or nil,
                                memory = base and base.memory or nil}
end

-- A user's Lua file (a rules file; the command line's --load and --meta
-- files) runs through here: loaded as text, called protected. Returns
-- true and its result, false and the error it threw, or nil and why it
-- could not be loaded. A command that ran one closes its Lua state at
-- exit, so that the file's finalizers run as they do under lua5.4
-- (src/cli/main.c asks M._ran_user_code()).
local ran_user_code = false

function M._run_user_file(path)
  if type(path) ~= "string" then
    error("devplan.pipeline._run_user_file: the path of a Lua file (a string) expected, got " .. type(path), 2)
  end
  local chunk, why = loadfile(path, "t")
  if not chunk then return nil, why end
  ran_user_code = true
  return pcall(chunk)
end

function M._ran_user_code() return ran_user_code end

-- The list of passes a rules file returns (a pass or a list of passes):
-- annotation rules written in Lua, any annotation pass.
function M.load_rules(path)
  if type(path) ~= "string" then
    error("devplan.pipeline.load_rules: the path of a rules file (a string) expected, got " .. type(path), 2)
  end
  local ok, r = M._run_user_file(path)
  if ok == nil then error(core.Error{message = "cannot load rules: " .. r, code = "value"}, 0) end
  if not ok then
    error(core.Error{message = path .. ": " .. (core.is_error(r) and r.formatted or core._error_text(r)),
                     code = "callback"}, 0)
  end
  local list = pass.is_pass(r) and {r} or r
  if type(list) ~= "table" or #list == 0 then
    error(core.Error{message = path .. " must return a pass or a list of passes (e.g. "
      .. "dp.passes.AnnotateVirtualDevices{...}), it returned a " .. type(r), code = "value"}, 0)
  end
  for i, p in ipairs(list) do
    if not pass.is_pass(p) then
      error(core.Error{message = path .. ": item " .. i .. " of the returned list is a " .. type(p)
        .. ", not a pass", code = "value"}, 0)
    end
  end
  return list
end

-- AnnotateVirtualDevices placing every call of each operator on a device:
-- {["nn.conv2d"] = "cuda", ...} (short device names); "cuda~W" is a soft
-- annotation of weight W (dp.soft).
function M.annotate_ops(map)
  if type(map) ~= "table" then
    error("devplan.pipeline.annotate_ops: a table {[operator name] = device name} expected, got " .. type(map), 2)
  end
  local rules, shown = {}, {}
  for op, name in pairs(map) do
    if type(op) ~= "string" or type(name) ~= "string" then
      error("devplan.pipeline.annotate_ops: each entry must be [operator name] = device name (strings), got ["
        .. type(op) .. "] = " .. type(name), 2)
    end
    local dev, weight = name:match("^(.-)~(.*)$")
    local w = weight and tonumber(weight)
    if weight and not (w and w >= 0 and w < math.huge) then
      error("the weight of '" .. name .. "' must be a number >= 0 (DEVICE~W: a soft annotation)", 0)
    end
    local vd, why = devname.parse(dev or name)
    if not vd then error(why, 0) end
    core.op.get(op)
    local soft = w and annotate.soft(vd, w)
    rules[op] = function() return soft or vd end
    shown[op] = name
  end
  local p = passes.AnnotateVirtualDevices(rules)
  p.options = shown
  return p
end

local function is_op(key)
  if pcall(core.op.get, key) then return true end
  local names = core.op.names()
  return false, "unknown operator or option " .. quoted(key) .. suggest.hint(key, names)
    .. " (options: rules=FILE.lua, or OP=DEVICE for an operator)"
end

-- ---------------------------------------------------------------- built-in entries

M.register{
  name = "infer_type",
  help = "type-check the module (InferType)",
  make = function() return passes.InferType() end,
}

M.register{
  name = "annotate",
  help = "place operators on devices: rules=FILE.lua (returns a pass or a list of passes), "
    .. "or OP=DEVICE for each operator (nn.conv2d=cuda, nn.dense=cuda:1)",
  options = {rules = "FILE.lua returning an annotation pass or a list of passes"},
  any_key = is_op,
  make = function(args)
    local list = {}
    if args.rules then list = M.load_rules(args.rules) end
    local ops = {}
    for k, v in pairs(args) do if k ~= "rules" then ops[k] = v end end
    if next(ops) then list[#list + 1] = M.annotate_ops(ops) end
    if #list == 0 then error("give rules=FILE.lua or OP=DEVICE", 0) end
    return #list == 1 and list[1] or pass.Sequential(list)
  end,
}

M.register{
  name = "plan_devices",
  help = "PlanDevices: place every value and insert the copies",
  options = {default = "the default device type (cpu, cuda, ...)",
             strict = "true: no conflict resolution (resolve_conflicts=false)",
             all_conflicts = "true: every independent conflict in one run (err.errors)",
             tvm_conflicts = "true: resolve only what TVM resolves (resolve_conflicts=\"tvm\")",
             placement = "tvm (TVM's defaulting rules), min_bytes (fewest bytes copied) or latency "
               .. "(the modelled schedule that finishes first)",
             polymorphic = "true: a function called with different device signatures is specialised per signature",
             max_specialisations = "(polymorphic) at most this many functions copied (default 64)",
             recompute = "true: a copy of a value cheaper to compute again where it is read is that computation",
             costs = "(latency) cost files, ';'-separated: devplan's format or TopHub logs (default: "
               .. "the command's --costs, else the default model)",
             board = "(latency) the TopHub records of -model=NAME"},
  make = function(args, env)
    local config = config_for(env, args.default) or core.CompilationConfig{targets = {"llvm", "cuda"}}
    local strict = boolean(args.strict, "strict")
    local opts = {}
    if strict then opts.resolve_conflicts = false
    elseif boolean(args.tvm_conflicts, "tvm_conflicts") then opts.resolve_conflicts = "tvm" end
    if boolean(args.all_conflicts, "all_conflicts") then opts.all_conflicts = true end
    if args.placement == "min_bytes" or args.placement == "latency" then opts.placement = args.placement
    elseif args.placement and args.placement ~= "tvm" then
      error("option 'placement' must be tvm, min_bytes or latency, got '" .. args.placement .. "'", 0)
    end
    if (args.costs or args.board) and opts.placement ~= "latency" then
      error("options costs and board need placement=latency", 0)
    end
    if args.board and not args.costs then error("option board needs costs=FILE", 0) end
    if opts.placement == "latency" then
      if args.costs then
        local files = {}
        for f in args.costs:gmatch("[^;]+") do files[#files + 1] = f end
        opts.cost = costs.load(files, {board = args.board})
      else
        opts.cost = env.costs
      end
    end
    if boolean(args.polymorphic, "polymorphic") then opts.polymorphic = true end
    if boolean(args.recompute, "recompute") then opts.recompute = true end
    if args.max_specialisations then
      opts.max_specialisations = positive_integer(args.max_specialisations, "max_specialisations")
    end
    local p = passes.PlanDevices(config, next(opts) and opts or nil)
    p.config = config
    return p
  end,
}

M.register{
  name = "share_copies",
  help = "ShareCopies: one device_copy per value and device pair where it dominates its uses",
  make = function() return passes.ShareCopies() end,
}

M.register{
  name = "move_copies",
  help = "MoveCopies: copies out of functions, closures, loops and branches, merged and cancelled, never more "
    .. "often on any path (docs/copies.md)",
  options = {max_new_functions = "at most this many functions added by peeling loops (default 16)"},
  make = function(args, env)
    local opts
    if args.max_new_functions then
      opts = {max_new_functions = positive_integer(args.max_new_functions, "max_new_functions")}
    end
    return passes.MoveCopies(env.config, opts)
  end,
}

M.register{
  name = "verify",
  help = "type-check, and check the plan once the module is planned",
  options = {planned = "true: check the plan even if no planning pass ran before"},
  make = function(args, env)
    local planned = boolean(args.planned, "planned")
    return passes.Verify(env.config, planned ~= nil and {planned = planned} or nil)
  end,
}

if passes.PartitionByVirtualDevice then
  M.register{
    name = "partition",
    help = "PartitionByVirtualDevice: regions on one device become functions",
    options = {by = "virtual_device, target or device_type"},
    make = function(args) return passes.PartitionByVirtualDevice{by = args.by} end,
  }
end

return M
