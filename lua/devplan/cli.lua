-- The subcommands of the devplan executable (src/cli/main.c runs
-- M.main(name, args...) when its first argument is a subcommand name and
-- not an existing file):
--
--   devplan parse FILE.relay [--meta META.lua] [--types]
--   devplan plan FILE.relay --target T [--target T ...] [--host T]
--                [--default DEVTYPE] [--meta META.lua] [--strict] [--explain]
--                [--rules RULES.lua]
--
-- Results go to standard output, errors to standard error; M.main returns
-- the exit status (0 or 1). Errors with a position print as
-- "file:line:col: message", the source line and a caret.
local dp = require "devplan"


local M = {}

-- Without --meta, meta[VirtualDevice][0] and [1] are the CPU and the GPU
-- of the conformance palette (../shared/conformance/run.lua); planning
-- gives them the targets of the configuration.
local PALETTE_HELP = [[
Without --meta, meta[VirtualDevice][0] is the CPU (device_type=cpu, id 0) and
meta[VirtualDevice][1] the GPU (device_type=cuda, id 0), as in the conformance
palette; planning gives them the --target of their device type. Anything else
(more devices, memory scopes, meta[relay.Constant]) needs --meta.]]

local META_HELP = [[
META.lua is a Lua file returning the metatable, e.g.
  local dp = require "devplan"
  return {VirtualDevice = {dp.VirtualDevice{device_type = "cpu"}},
          ["relay.Constant"] = {dp.const({1, 2}, "int64")}}]]

local function palette()
  return {VirtualDevice = {
    dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0},
    dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0},
  }}
end

local COMMANDS = {}

COMMANDS.parse = {
  usage = "devplan parse FILE.relay [--meta META.lua] [--types]",
  options = {["--meta"] = "value", ["--types"] = "flag"},
  help = [[
Parses FILE.relay (the Relay text format), type-checks it and prints the module.
  --meta META.lua  the metatable for meta[...] references
  --types          print the checked types as /* ty=... */ comments
]] .. PALETTE_HELP .. "\n" .. META_HELP,
}

COMMANDS.plan = {
  usage = "devplan plan FILE.relay --target T [--target T ...] [--host T] [--default DEVTYPE]\n"
    .. "                    [--meta META.lua] [--strict] [--explain] [--rules RULES.lua]",
  options = {["--target"] = "list", ["--host"] = "value", ["--default"] = "value",
             ["--meta"] = "value", ["--strict"] = "flag", ["--explain"] = "flag",
             ["--rules"] = "value"},
  help = [[
Parses FILE.relay and runs dp.passes.PlanDevices with the configuration built
from the targets, then prints the planned module.
  --target T        a target ("llvm", "cuda", "cuda -host=llvm", ...); repeatable, at least one
  --host T          the host target (default: from the targets, see planner.md)
  --default DEVTYPE the default device type (cpu, cuda, ...; default: the targets'
                    common device type, else cpu)
  --meta META.lua   the metatable for meta[...] references
  --strict          no conflict resolution ({resolve_conflicts = false}): a value
                    nobody annotated that is demanded on two devices is an error
                    naming both constraints, instead of getting a device_copy
  --explain         after the module, for each function parameter and result,
                    its device and why (as // comments)
  --rules RULES.lua a Lua file returning a pass or a list of passes (annotation
                    rules: dp.passes.MergeAndAnnotate{...}, AnnotateVirtualDevices{...})
                    run before planning, with the configuration in their context
A conflict prints both constraints with their positions and the chain between
them, and exits with status 1.
]] .. PALETTE_HELP .. "\n" .. META_HELP,
}

-- A usage error: the message, and where to find the help.
local function usage_error(name, msg)
  return {usage = true, text = "devplan " .. name .. ": " .. msg
    .. "\nusage: " .. COMMANDS[name].usage .. "\n(devplan " .. name .. " --help for more)"}
end

-- args -> {file = ..., ["--opt"] = value | true | {values}}, or nil + error.
local function parse_args(name, args)
  local spec = COMMANDS[name].options
  local r, i = {}, 1
  while i <= #args do
    local a = args[i]
    local key, val = a:match("^(%-%-[^=]+)=(.*)$")
    key = key or a
    if a == "-h" or a == "--help" then
      r.help = true
    elseif a:sub(1, 1) == "-" and a ~= "-" then
      local kind = spec[key]
      if not kind then return nil, usage_error(name, "unknown option '" .. key .. "'") end
      if kind == "flag" then
        if val then return nil, usage_error(name, key .. " takes no value") end
        r[key] = true
      else
        if not val then
          i = i + 1
          val = args[i]
          if val == nil then return nil, usage_error(name, key .. " needs a value") end
        end
        if kind == "list" then
          r[key] = r[key] or {}
          table.insert(r[key], val)
        elseif r[key] then
          return nil, usage_error(name, key .. " given twice")
        else
          r[key] = val
        end
      end
    elseif r.file then
      return nil, usage_error(name, "one file expected, got '" .. r.file .. "' and '" .. a .. "'")
    else
      r.file = a
    end
    i = i + 1
  end
  if not r.help and not r.file then return nil, usage_error(name, "a FILE.relay is needed") end
  return r
end

-- ---- errors ----

local function line_of(text, n)
  local i = 1
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do
    if i == n then return (l:gsub("\r$", "")) end
    i = i + 1
  end
end

-- A devplan.Error's text; for errors of the file's own text that do not
-- show it yet (the planner's), the source line and a caret after the first
-- line, as the parser shows them.
local function error_text(err, file, text)
  if type(err) ~= "table" or type(err.formatted) ~= "string" then
    return "devplan: " .. tostring(err)
  end
  local s = err.formatted
  if not err.line then return "devplan: " .. s end
  if text and err.source == file and err.col and not s:find("\n%s*%^\n") and not s:find("\n%s*%^$") then
    local l = line_of(text, err.line)
    if l and #l <= 200 then
      local caret = l:sub(1, err.col - 1):gsub("[^\t]", " ") .. "^"
      local first, rest = s:match("^([^\n]*)(.*)$")
      s = first .. "\n" .. l .. "\n" .. caret .. rest
    end
  end
  return s
end

local function read_file(path)
  local f, why = io.open(path, "rb")
  if not f then error({text = "devplan: cannot open " .. tostring(why)}, 0) end
  local text = f:read("a")
  f:close()
  if not text then error({text = "devplan: cannot read " .. path}, 0) end
  return text
end

-- The metatable a META.lua file returns.
local function load_meta(path)
  local chunk, why = loadfile(path, "t")
  if not chunk then error({text = "devplan: " .. why}, 0) end
  local ok, meta = pcall(chunk)
  if not ok then error({text = "devplan: " .. path .. ": " .. error_text(meta):gsub("^devplan: ", "")}, 0) end
  if type(meta) ~= "table" then
    error({text = "devplan: " .. path .. " must return the metatable (a table), it returned a "
      .. type(meta)}, 0)
  end
  return meta
end

-- Runs f(...) turning devplan errors into {text =} failures.
local function attempt(file, text, f, ...)
  local ok, res = pcall(f, ...)
  if ok then return res end
  if type(res) == "table" and res.text then error(res, 0) end
  error({text = error_text(res, file, text), err = res}, 0)
end

local function parse_module(opts)
  local text = read_file(opts.file)
  local meta = opts["--meta"] and load_meta(opts["--meta"]) or palette()
  local ok, mod = pcall(dp.parse, text, meta, {source_name = opts.file})
  if ok then return mod, text end
  local msg = error_text(mod, opts.file, text)
  if not opts["--meta"] and type(mod) == "table" and type(mod.message) == "string"
      and mod.message:find("^meta%[") then
    msg = msg .. "\nnote: without --meta only meta[VirtualDevice][0] (cpu) and [1] (cuda) exist;"
      .. " give the metadata with --meta META.lua (see devplan " .. (opts.command or "parse") .. " --help)"
  end
  error({text = msg, err = mod}, 0)
end

local function emit(s)
  io.stdout:write(s)
  if s:sub(-1) ~= "\n" then io.stdout:write("\n") end
end

-- ---- the subcommands ----

function COMMANDS.parse.run(opts)
  local mod = parse_module(opts)
  emit(opts["--types"] and dp.astext(mod, {types = true}) or tostring(mod))
end

local function make_config(opts, file, text)
  if not opts["--target"] then error(usage_error("plan", "at least one --target is needed"), 0) end
  return attempt(file, text, function()
    local targets = {}
    for i, t in ipairs(opts["--target"]) do targets[i] = dp.Target(t) end
    return dp.CompilationConfig{
      targets = targets,
      host = opts["--host"] and dp.Target(opts["--host"]) or nil,
      default_device_type = opts["--default"],
    }
  end)
end

-- "// " lines: for each function of the planned domains, each parameter's
-- device and the result's, with the reason and the steps.
local function explanation(d)
  local out = {}
  local function add(s) out[#out + 1] = "// " .. s end
  local function why(label, e)
    local x = d:explain(e)
    add("  " .. label .. ": " .. tostring(x.device))
    add("    " .. x.text)
    for _, s in ipairs(x.steps) do add("      " .. s.message) end
  end
  for _, nf in ipairs(d.module:functions()) do
    local name, fn = nf[1], nf[2]
    add("explain @" .. name)
    for _, p in ipairs(fn.params) do why("%" .. p.name, p) end
    why("result", fn)
  end
  return table.concat(out, "\n") .. "\n"
end

-- The passes a --rules file returns (a pass or a list of passes).
local function load_rules(path)
  local is_pass = require("devplan.pass").is_pass
  local chunk, why = loadfile(path, "t")
  if not chunk then error({text = "devplan: " .. why}, 0) end
  local ok, r = pcall(chunk)
  if not ok then error({text = "devplan: " .. path .. ": " .. error_text(r):gsub("^devplan: ", "")}, 0) end
  local list = is_pass(r) and {r} or r
  if type(list) ~= "table" or #list == 0 then list = nil end
  for _, p in ipairs(list or {}) do
    if not is_pass(p) then list = nil; break end
  end
  if not list then
    error({text = "devplan: " .. path .. " must return a pass or a list of passes (dp.passes...), it returned a "
      .. type(r)}, 0)
  end
  return list
end

function COMMANDS.plan.run(opts)
  opts.command = "plan"
  -- the configuration first: its errors are usage errors, whatever the file
  local config = make_config(opts)
  local mod, text = parse_module(opts)
  for _, p in ipairs(opts["--rules"] and load_rules(opts["--rules"]) or {}) do
    mod = attempt(opts.file, text, p, mod, {config = config})
  end
  local popts = {resolve_conflicts = not opts["--strict"]}
  local planned = attempt(opts.file, text, function() return dp.passes.PlanDevices(config, popts)(mod) end)
  local out = tostring(planned)
  if opts["--explain"] then
    local d = attempt(opts.file, text, dp.planner.domains, mod, config, popts)
    out = out .. (out:sub(-1) == "\n" and "" or "\n") .. explanation(d)
  end
  emit(out)
end

-- Runs subcommand `name` with its arguments; returns the exit status.
function M.main(name, ...)
  local cmd = COMMANDS[name]
  if not cmd then
    io.stderr:write("devplan: unknown command '" .. tostring(name) .. "'\n")
    return 1
  end
  local opts, uerr = parse_args(name, {...})
  if not opts then
    io.stderr:write(uerr.text, "\n")
    return 1
  end
  if opts.help then
    io.stdout:write("usage: ", cmd.usage, "\n", cmd.help, "\n")
    return 0
  end
  local ok, err = pcall(cmd.run, opts)
  if ok then return 0 end
  if type(err) ~= "table" or not err.text then error(err, 0) end -- a bug: traceback
  io.stderr:write(err.text, "\n")
  return 1
end

return M
