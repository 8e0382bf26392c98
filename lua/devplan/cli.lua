-- The commands of the devplan executable (src/cli/main.c runs
-- M.main(name, args...) when its first argument is a command, an unknown
-- word, or a model file given without a command):
--
--   devplan help [COMMAND]
--   devplan parse FILE [output options]
--   devplan plan FILE [--annotate OP=DEVICE ...] [--rules FILE.lua ...] [configuration] [output options]
--   devplan opt FILE -p PIPELINE [configuration] [output options]
--   devplan opt --run-reproducer FILE
--   devplan import MODEL.onnx [-o OUT.relay] [--weights const|params|none] [--input-shape NAME=DIMS ...]
--
-- FILE may be `-` (standard input) and an ONNX model (MODEL.onnx, or ONNX
-- bytes on standard input), imported as `devplan import` does; `-o OUT` writes the result to OUT
-- (`-` standard output, the default). Results go to standard output,
-- errors to standard error; M.main returns the exit status (0 or 1).
-- Errors with a position print as "file:line:col: message", the source
-- line and a caret. Every write goes through write_file or write_stdout
-- (a failed write is an error naming the file; a file is replaced whole).
local dp = require "devplan"
local core = require "devplan.core"
local devname = require "devplan.devname"
local parser = require "devplan.parser"
local suggest = require "devplan.suggest"

local assert, collectgarbage, error, ipairs, pairs = assert, collectgarbage, error, ipairs, pairs
local pcall, require, tonumber, tostring, type = pcall, require, tonumber, tostring, type
local io, math, os, string, table = io, math, os, string, table
_ENV = nil -- no global is read or written below this line

local M = {}

-- devplan.term is the executable's terminal module (src/cli/term.c): not
-- there under a stock lua5.4, where output is never coloured.
local has_term, term = pcall(require, "devplan.term")

-- ---------------------------------------------------------------- options

-- name -> {kind = "flag" | "value" | "list", arg = "VALUE", help = text,
--          choices = {...} (the values it takes, when a fixed few)}
local OPTIONS = {
  ["-o"] = {kind = "value", arg = "OUT",
    help = "write the result to OUT ('-': standard output, the default); OUT is replaced whole\n"
      .. "or, when anything fails, left as it was"},
  ["--meta"] = {kind = "value", arg = "META.lua", help = "the metatable for meta[...] references (see below)"},
  ["--types"] = {kind = "flag", help = "print the checked types as /* ty=... */ comments"},
  ["--show-meta-data"] = {kind = "flag",
    help = "print tensor constants and virtual devices as meta[...] references with a\n"
      .. "#[metadata] section after the module, as TVM's astext(show_meta_data=True)"},
  ["--spans"] = {kind = "flag", help = "print each node's source position as /* span=FILE:LINE:COL */ (as TVM)"},
  ["--short-devices"] = {kind = "flag",
    help = "name devices @cpu, @cuda, @cuda:1.texture (one legend at the top) and put each\n"
      .. "parameter on a line of its own; for reading: the text no longer re-parses"},
  ["--color"] = {kind = "flag", help = "colour the module text even when not on a terminal"},
  ["--no-color"] = {kind = "flag", help = "never colour (the default is colour on a terminal, none in a pipe)"},
  ["--report"] = {kind = "value", arg = "text|json", choices = {"text", "json"},
    help = "print the placement report instead of the module: per device the calls and\n"
      .. "bytes resident, every device_copy with its value, devices, type and bytes, totals;\n"
      .. "after a partition pass, each region hoisted (what it computes, reads and gives)"},
  ["--dot"] = {kind = "value", arg = "FILE", help = "write the picture of the module as Graphviz text (see --svg)"},
  ["--svg"] = {kind = "value", arg = "FILE",
    help = "draw the module as SVG (Graphviz's dot): each device a coloured lane, each\n"
      .. "device_copy a red edge with its bytes, a legend. With --svg or --dot the module\n"
      .. "text is printed only when asked (-o OUT, -o - for standard output, --explain)"},
  ["--graph-detail"] = {kind = "value", arg = "LEVEL", choices = {"auto", "full", "chains", "regions", "devices"},
    help = "what --svg and --dot draw: auto (default: the most detail that stays small),\n"
      .. "full (every call), chains (a chain of calls on one device as one box), regions\n"
      .. "(each connected part on one device as one box), devices (one box per device)"},
  ["--target"] = {kind = "list", arg = "T",
    help = "a target (llvm, cuda, 'cuda -host=llvm', ...) or several as tvmc writes them\n"
      .. "('cuda, llvm -mcpu=skylake'); repeatable (default: llvm and cuda)"},
  ["--host"] = {kind = "value", arg = "T", help = "the host target (default: from the targets, as TVM chooses it)"},
  ["--default"] = {kind = "value", arg = "DEVTYPE",
    help = "the default device type for values nothing placed (cpu, cuda, ...; default:\n"
      .. "the targets' common device type, else cpu)"},
  ["--bandwidth"] = {kind = "value", arg = "B",
    help = "bytes per second copied between devices, for placement by cost (the objective\n"
      .. "becomes time): one number for every pair, or SRC->DST=N pairs and default=N,\n"
      .. "comma-separated ('cpu->cuda=12e9,cuda->cpu=10e9,*->cpu=8e9,default=5e9')"},
  ["--annotate"] = {kind = "list", arg = "OP=DEVICE",
    help = "run every call of operator OP on DEVICE (cpu, cuda, cuda:1, cuda:1.texture);\n"
      .. "repeatable, or OP=DEVICE,OP=DEVICE. OP=DEVICE~W is a soft annotation: a preference\n"
      .. "of weight W (seconds under --placement latency, bytes under min_bytes) that the\n"
      .. "placement breaks only where that saves more than W (TVM's rules keep it)"},
  ["--memory"] = {kind = "list", arg = "DEVTYPE=SIZE",
    help = "a memory budget per device of DEVTYPE (cuda=2GiB, cpu=512MB, bytes or B, KB, MB,\n"
      .. "GB, KiB, MiB, GiB); the latency and min_bytes placements keep every device's\n"
      .. "peak within, --report shows the peaks; repeatable, or DEVTYPE=SIZE,DEVTYPE=SIZE"},
  ["--rules"] = {kind = "list", arg = "FILE.lua",
    help = "annotation rules: FILE.lua returns a pass or a list of passes, run before\n"
      .. "planning (dp.passes.AnnotateVirtualDevices{...}, MergeAndAnnotate, your own)"},
  ["--load"] = {kind = "list", arg = "FILE.lua",
    help = "run FILE.lua first: it may register passes (dp.pipeline.register) and operators"},
  ["--strict"] = {kind = "flag",
    help = "no conflict resolution: a value nobody annotated that is demanded on two devices\n"
      .. "is an error naming both constraints, instead of getting a device_copy"},
  ["--first-conflict"] = {kind = "flag",
    help = "TVM's behaviour: stop at the first conflict, and resolve only what TVM resolves (a\n"
      .. "plain on_device whose result is read on two devices stays a conflict); plan's\n"
      .. "default reports every independent conflict, each with its constraints and chain"},
  ["--placement"] = {kind = "value", arg = "tvm|min_bytes|latency", choices = {"tvm", "min_bytes", "latency"},
    help = "how values nobody annotated are placed: tvm (TVM's defaulting rules, the default),\n"
      .. "min_bytes (the placement that copies the fewest bytes) or latency (the plan whose\n"
      .. "modelled schedule finishes first, with the costs of --costs); annotations stay hard"},
  ["--share-copies"] = {kind = "flag",
    help = "after planning, one device_copy per value and device pair where it dominates\n"
      .. "its uses (dp.passes.ShareCopies) instead of one per use"},
  ["--polymorphic"] = {kind = "flag",
    help = "specialise a function called with different device signatures, one copy per\n"
      .. "signature (@f, @f_cuda), instead of one signature and copies; the output ends with\n"
      .. "a // line saying how many were specialised and what that did to the copies"},
  ["--recompute"] = {kind = "flag",
    help = "a copy of a value cheaper to compute again where it is read (a constant, zeros,\n"
      .. "ones, a reshape of what is there, ...) is that computation instead; with\n"
      .. "--placement min_bytes such copies also cost nothing to the optimiser"},
  ["--move-copies"] = {kind = "flag",
    help = "after planning, move copies out of functions, closures, loops and branches to\n"
      .. "where they run least, merged and cancelled (dp.passes.MoveCopies, docs/copies.md)"},
  ["--partition"] = {kind = "flag",
    help = "after planning, hoist the connected code on each device into functions named\n"
      .. "after their target (dp.passes.PartitionByVirtualDevice); with --report, the regions"},
  ["--explain"] = {kind = "flag",
    help = "after the module, each parameter's and result's device and why, and why each\n"
      .. "device_copy was inserted (// comments: the output still parses)"},
  ["--verify"] = {kind = "flag",
    help = "check the planned module with dp.planner.verify (consistent devices, the file's\n"
      .. "annotations respected); a violation is an error naming the expression and its position"},
  ["-p"] = {kind = "value", arg = "PIPELINE", help = "the passes to run, e.g. 'infer_type,annotate(nn.conv2d=cuda),plan_devices'"},
  ["--print-after-all"] = {kind = "flag", help = "print the module after every pass (to standard error)"},
  ["--print-before-all"] = {kind = "flag", help = "print the module before every pass"},
  ["--print-after"] = {kind = "list", arg = "PASS", help = "print the module after the named pass; repeatable"},
  ["--print-before"] = {kind = "list", arg = "PASS", help = "print the module before the named pass; repeatable"},
  ["--print-changed"] = {kind = "flag", help = "print the module after every pass that changed it"},
  ["--time-passes"] = {kind = "flag", help = "print the CPU seconds of every pass (to standard error)"},
  ["--verify-each"] = {kind = "flag", help = "type-check after every pass, and check the plan once planned"},
  ["--reproducer"] = {kind = "value", arg = "FILE",
    help = "where a failing pipeline writes its reproducer (opt: default a new file in the\n"
      .. "temporary folder; plan: only when given)"},
  ["--run-reproducer"] = {kind = "value", arg = "FILE", help = "replay a reproducer that a failing run wrote"},
  ["--list-passes"] = {kind = "flag", help = "list the passes a pipeline can name (after --load)"},
  ["--costs"] = {kind = "list", arg = "FILE",
    help = "measured call times for the modelled schedule (--report shows it): devplan's cost\n"
      .. "format or a TopHub tuning log (docs/latency.md); repeatable, later files win ties;\n"
      .. "calls no file covers get the default model"},
  ["--board"] = {kind = "value", arg = "NAME", help = "the records of -model=NAME in TopHub logs given to --costs (e.g. rk3399)"},
  ["--gantt"] = {kind = "value", arg = "FILE.svg",
    help = "also draw the modelled schedule as a timeline per device and link (SVG; the\n"
      .. "default model without --costs)"},
  ["--weights"] = {kind = "value", arg = "const|params|none",
    help = "an ONNX model's weights: constants (the default, printed in a #[metadata]\n"
      .. "section), parameters of @main (params), or parameters whose values are not read (none)"},
  ["--input-shape"] = {kind = "list", arg = "NAME=DIMS",
    help = "the size of every dimension of an ONNX graph input, e.g. input=1,3,224,224\n"
      .. "(fixes dynamic dimensions); repeatable"},
}
OPTIONS["--pipeline"] = OPTIONS["-p"]

local OUTPUT = {"-o", "--types", "--short-devices", "--show-meta-data", "--spans", "--color", "--no-color",
                "--dot", "--svg", "--graph-detail"}
local CONFIG = {"--target", "--host", "--default", "--bandwidth", "--memory"}
local ONNX = {"--weights", "--input-shape"}
local INSTRUMENTS = {"--print-after-all", "--print-before-all", "--print-after", "--print-before",
                     "--print-changed", "--time-passes", "--verify-each"}

local function join(...)
  local r = {}
  for _, list in ipairs{...} do for _, v in ipairs(list) do r[#r + 1] = v end end
  return r
end

local PALETTE_HELP = [[
meta[...] references resolve from --meta META.lua, else from the file's own
#[metadata] section (what TVM prints with show_meta_data=True). A file with
neither gets the conformance palette: meta[VirtualDevice][0] is the CPU
(device_type=cpu, id 0) and meta[VirtualDevice][1] the GPU (device_type=cuda,
id 0); planning gives them the --target of their device type. Anything else
(more devices, memory scopes, meta[relay.Constant]) needs a metadata section or
--meta META.lua, a Lua file returning the metatable, e.g.
  local dp = require "devplan"
  return {VirtualDevice = {dp.VirtualDevice{device_type = "cpu"}},
          ["relay.Constant"] = {dp.const({1, 2}, "int64")}}]]

local COMMANDS = {}
local COMMAND_ORDER = {"parse", "plan", "opt", "import", "help"}

COMMANDS.help = {
  summary = "the commands, or one command's options",
  usage = "devplan help [COMMAND]",
  options = {},
  operands = "?",
}

COMMANDS.parse = {
  summary = "parse a module, type-check it and print it",
  usage = "devplan parse FILE [--meta META.lua] [--types] [--short-devices] [--show-meta-data] [--spans]\n"
    .. "                    [-o OUT] [--dot FILE] [--svg FILE] [--graph-detail LEVEL]",
  options = join({"--meta"}, OUTPUT, ONNX),
  text = "Parses FILE (the Relay text format; '-' reads standard input), type-checks it\nand prints the module.",
}

COMMANDS.plan = {
  summary = "place operators, plan devices (PlanDevices) and print the planned module",
  usage = "devplan plan FILE [--annotate OP=DEVICE ...] [--rules FILE.lua ...] [--target T ...]\n"
    .. "                    [--default DEVTYPE] [--strict] [--first-conflict] [--placement tvm|min_bytes|latency]\n"
    .. "                    [--polymorphic] [--recompute]\n"
    .. "                    [--bandwidth B] [--share-copies] [--move-copies] [--partition] [--explain] [--verify]\n"
    .. "                    [--report text|json]\n"
    .. "                    [--costs FILE ...] [--board NAME] [--memory DEVTYPE=SIZE ...] [--gantt FILE.svg]\n"
    .. "                    [-o OUT] [--short-devices] [--types] [--dot FILE] [--svg FILE]\n"
    .. "                    [--graph-detail LEVEL]",
  options = join({"--annotate", "--rules", "--load", "--meta", "--strict", "--first-conflict", "--placement",
                  "--polymorphic", "--recompute",
                  "--share-copies", "--move-copies", "--partition", "--explain", "--verify",
                  "--report", "--reproducer", "--costs", "--board", "--gantt"}, CONFIG, OUTPUT, INSTRUMENTS, ONNX),
  text = "Parses FILE, runs the annotation rules (--rules, then --annotate), then\n"
    .. "dp.passes.PlanDevices with the configuration of the targets, and prints the\n"
    .. "planned module (or its report). The same as\n"
    .. "  devplan opt FILE -p 'annotate(rules=FILE.lua),annotate(OP=DEVICE),plan_devices(all_conflicts=true)'\n"
    .. "(--placement min_bytes: plan_devices(all_conflicts=true,placement=min_bytes), latency:\n"
    .. "placement=latency, with --costs' costs;\n"
    .. "--share-copies adds share_copies after it, --move-copies move_copies, --partition\n"
    .. "then partition.)\n"
    .. "Every independent conflict is printed, as a compiler prints errors: both\n"
    .. "constraints with their positions and the chain between them, in source order,\n"
    .. "then \"N errors\"; the status is 1. --first-conflict stops at the first.",
}

COMMANDS.import = {
  summary = "import an ONNX model and print it as a Relay module",
  usage = "devplan import MODEL.onnx [-o OUT.relay] [--weights const|params|none] [--input-shape NAME=DIMS ...]\n"
    .. "                    [--types] [--spans]",
  options = join({"-o", "--types", "--spans"}, ONNX),
  text = "Reads the ONNX model (a file, or '-': its bytes on standard input), maps each\n"
    .. "node to Relay operators as TVM's relay.frontend.from_onnx did, evaluates the\n"
    .. "parts of the graph that compute on shapes and constants, type-checks, and\n"
    .. "prints the module: @main takes the graph's inputs and returns its outputs,\n"
    .. "weights are constants in a #[metadata] section (as TVM printed them) unless\n"
    .. "--weights says otherwise, every call carries its ONNX node's name as its span\n"
    .. "(--spans shows them). Every command that reads a Relay file reads an .onnx\n"
    .. "file the same way (--weights, --input-shape).",
}

COMMANDS.opt = {
  summary = "run a pipeline of passes on a module (as mlir-opt)",
  usage = "devplan opt FILE -p PIPELINE [--load FILE.lua ...] [--target T ...] [-o OUT]\n"
    .. "                   [--print-after-all] [--time-passes] [--verify-each] [--report text|json]\n"
    .. "       devplan opt --run-reproducer FILE",
  options = join({"-p", "--pipeline", "--load", "--meta", "--report", "--reproducer", "--run-reproducer",
                  "--list-passes"}, CONFIG, OUTPUT, INSTRUMENTS, ONNX),
  text = "Parses FILE and runs PIPELINE on it: registered pass names separated by commas,\n"
    .. "each with optional key=value arguments, e.g.\n"
    .. "  infer_type,annotate(rules=rules.lua),plan_devices(default=cuda),verify\n"
    .. "(--list-passes lists the names). When a pass fails, the input module and the\n"
    .. "pipeline are written to a reproducer file that --run-reproducer replays.",
}

-- ---------------------------------------------------------------- arguments

local function usage_error(name, msg)
  return {text = "devplan " .. name .. ": " .. msg .. "\nusage: " .. COMMANDS[name].usage
    .. "\n(devplan help " .. name .. " for more)"}
end

local function takes(name, opt)
  for _, o in ipairs(COMMANDS[name].options) do if o == opt then return true end end
  return false
end

-- args -> {files = {...}, ["--opt"] = value | true | {values}}, or nil + error.
local function parse_args(name, args)
  local r, i = {files = {}}, 1
  while i <= #args do
    local a = args[i]
    local key, val = a:match("^(%-%-[^=]+)=(.*)$")
    key = key or a
    if a == "-h" or a == "--help" then
      r.help = true
    elseif a:sub(1, 1) == "-" and a ~= "-" then
      local spec = takes(name, key) and OPTIONS[key]
      if not spec then
        return nil, usage_error(name, "unknown option '" .. key .. "'" .. suggest.hint(key, COMMANDS[name].options))
      end
      if key == "--pipeline" then key = "-p" end
      if spec.kind == "flag" then
        if val then return nil, usage_error(name, key .. " takes no value") end
        r[key] = true
      else
        if not val then
          i = i + 1
          val = args[i]
          if val == nil then return nil, usage_error(name, key .. " needs a value") end
        end
        if val == "" then return nil, usage_error(name, key .. " needs a value, got an empty one") end
        if spec.choices then
          local known = false
          for _, c in ipairs(spec.choices) do known = known or c == val end
          if not known then
            return nil, usage_error(name, key .. " takes " .. table.concat(spec.choices, ", ", 1, #spec.choices - 1)
              .. " or " .. spec.choices[#spec.choices] .. ", got '" .. val .. "'" .. suggest.hint(val, spec.choices))
          end
        end
        if spec.kind == "list" then
          r[key] = r[key] or {}
          table.insert(r[key], val)
        elseif r[key] then
          return nil, usage_error(name, key .. " given twice")
        else
          r[key] = val
        end
      end
    else
      r.files[#r.files + 1] = a
    end
    i = i + 1
  end
  return r
end

-- ---------------------------------------------------------------- errors

local function fail(text) error({text = text}, 0) end

local function line_of(text, n)
  local i = 1
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do
    if i == n then return (l:gsub("\r$", "")) end
    i = i + 1
  end
end

-- A devplan.Error's text; for errors in a text we have (the input file,
-- the pipeline) that do not show their line yet, the line and a caret
-- after the first line, as the parser shows them.
local function error_text(err, sources)
  if type(err) ~= "table" or type(err.formatted) ~= "string" then
    return "devplan: " .. dp._error_text(err)
  end
  local s = err.formatted
  if not err.line then return "devplan: " .. s end
  local text = sources and sources[err.source]
  if type(text) == "function" then -- (a file read again: see parse_module)
    text = text()
    sources[err.source] = text
  end
  if text and err.col and not s:find("\n%s*%^\n") and not s:find("\n%s*%^$") then
    local l = line_of(text, err.line)
    if l and #l <= 200 then
      local caret = l:sub(1, err.col - 1):gsub("[^\t]", " ") .. "^"
      local first, rest = s:match("^([^\n]*)(.*)$")
      s = first .. "\n" .. l .. "\n" .. caret .. rest
    end
  end
  return s
end

-- The text of an error of all_conflicts with several conflicts (err.errors):
-- each one as error_text prints it, then how many; nil for any other error.
local function conflicts_text(err, sources)
  if type(err) ~= "table" or type(err.errors) ~= "table" or #err.errors < 2 then return nil end
  local out = {}
  for i, e in ipairs(err.errors) do out[i] = error_text(e, sources) end
  out[#out + 1] = #err.errors .. " errors"
  return table.concat(out, "\n")
end

-- Runs f(...), turning errors into {text =} failures.
local function attempt(sources, f, ...)
  local ok, res = pcall(f, ...)
  if ok then return res end
  if type(res) == "table" and res.text then error(res, 0) end
  error({text = error_text(res, sources), err = res}, 0)
end

-- ---------------------------------------------------------------- input

local function read_input(path)
  if path == "-" then return io.stdin:read("a") or "", "<stdin>" end
  local f, why = io.open(path, "rb")
  if not f then fail("devplan: cannot open " .. tostring(why)) end
  local text, why2 = f:read("a")
  f:close()
  if not text then fail("devplan: cannot read " .. path .. ": " .. tostring(why2)) end
  return text, path
end

local function run_lua_file(path, what)
  local ok, res = dp.pipeline._run_user_file(path)
  if ok == nil then fail("devplan: " .. res) end
  if not ok then fail("devplan: " .. what .. " " .. path .. ": " .. error_text(res):gsub("^devplan: ", "")) end
  return res
end

local function load_meta(path)
  local meta = run_lua_file(path, "--meta")
  if type(meta) ~= "table" then
    fail("devplan: " .. path .. " must return the metatable (a table), it returned a " .. type(meta))
  end
  return meta
end

-- A module with no definitions at all (an empty file, or only comments):
-- nothing to plan or run passes on, which is an error; parse prints it
-- with a note (TVM's parser, too, reads it as an empty module).
local function check_not_empty(mod, source, command)
  if #mod:functions() > 0 or #mod:typedefs() > 0 or #mod:primfns() > 0 then return mod end
  local what = source == "<stdin>" and "standard input" or source
  if command == "parse" then
    io.stderr:write("devplan parse: note: " .. what .. " defines nothing: the module is empty\n")
    return mod
  end
  fail("devplan " .. command .. ": " .. what .. " defines nothing (no def, type or primfn): there is nothing to "
    .. (command == "plan" and "plan" or "run the passes on"))
end

-- --input-shape NAME=D1,D2,... -> dp.onnx.load's shapes.
local function input_shapes(opts, command)
  local shapes
  for _, spec in ipairs(opts["--input-shape"] or {}) do
    local name, dims = spec:match("^(.+)=([%d,%s]*)$")
    if not name then
      fail(usage_error(command, "--input-shape wants NAME=D1,D2,... (e.g. input=1,3,224,224), got '" .. spec .. "'").text)
    end
    local list = {}
    for d in dims:gmatch("%d+") do list[#list + 1] = math.tointeger(tonumber(d)) end
    shapes = shapes or {}
    shapes[name] = list
  end
  return shapes
end

-- An ONNX model (a file named .onnx, or bytes with control characters,
-- which Relay text never has) imported with the ONNX options.
local function onnx_module(opts, command, path, text, source)
  local weights = opts["--weights"]
  if weights and weights ~= "const" and weights ~= "params" and weights ~= "none" then
    fail(usage_error(command, "--weights takes const, params or none, got '" .. weights .. "'").text)
  end
  local ok, mod = pcall(dp.onnx.load, text or path, {source = source, weights = weights,
                                                     shapes = input_shapes(opts, command)})
  if not ok then error({text = error_text(mod), err = mod}, 0) end
  -- weights print as a #[metadata] section, as TVM printed an imported model
  if opts["--show-meta-data"] == nil then opts["--show-meta-data"] = true end
  return mod
end

local function is_onnx(path, text)
  return path:lower():match("%.onnx$") or (text and core._binary(text))
end

-- The module of opts' input file; sources[name] = its text (for carets):
-- once it is parsed, a file's text is not kept (a large module's text
-- would stay resident while it is planned) but read again for the carets
-- of a later error; standard input's is kept.
local function parse_module(opts, command, sources)
  if #opts.files == 0 then fail(usage_error(command, "a FILE is needed ('-' for standard input)").text) end
  if #opts.files > 1 then
    fail(usage_error(command, "one file expected, got '" .. opts.files[1] .. "' and '" .. opts.files[2] .. "'").text)
  end
  local path = opts.files[1]
  if path ~= "-" and is_onnx(path) then
    local f, why = io.open(path, "rb")
    if not f then fail("devplan: cannot open " .. tostring(why)) end
    f:close()
    return onnx_module(opts, command, path, nil, path)
  end
  local function again()
    local f = io.open(path, "rb")
    local t = f and f:read("a")
    if f then f:close() end
    return t
  end
  -- a regular file is read by dp._read_text: in memory once, where io's
  -- read holds it twice while it reads; anything else, or a file that does
  -- not read so, as before (with io's messages)
  local text, source = path ~= "-" and core._read_text(path), path
  if not text then text, source = read_input(path) end
  if is_onnx(path, text) then return onnx_module(opts, command, path, text, source) end
  sources[source] = text
  -- the devices of meta[...]: --meta, else the file's own metadata section,
  -- else (a file without one) the palette
  local own = not opts["--meta"] and parser.has_metadata(text)
  local meta = opts["--meta"] and load_meta(opts["--meta"]) or not own and devname.palette() or nil
  local ok, mod = pcall(dp.parse, text, meta, {source_name = source})
  text = nil
  if ok then
    if source ~= "<stdin>" then sources[source] = again end
    return check_not_empty(mod, source, command)
  end
  local msg = error_text(mod, sources)
  if not opts["--meta"] and not own and type(mod) == "table" and type(mod.message) == "string"
      and mod.message:find("^meta%[") then
    msg = msg .. "\nnote: without --meta only meta[VirtualDevice][0] (cpu) and [1] (cuda) exist;"
      .. " give the metadata with --meta META.lua (see devplan help " .. command .. ")"
  end
  error({text = msg, err = mod}, 0)
end

-- --bandwidth: "12e9", or "cpu->cuda=12e9,default=5e9" -> the configuration's bandwidth.
local function bandwidths(text)
  if not text then return nil end
  local n = tonumber(text)
  if n then return n end
  local t = {}
  for item in text:gmatch("[^,]+") do
    local key, value = item:match("^%s*(.-)%s*=%s*(.-)%s*$")
    if not key or not tonumber(value) then
      error("--bandwidth: '" .. item .. "' is not SRC->DST=N or default=N (bytes per second)", 0)
    end
    t[key] = tonumber(value)
  end
  return t
end

-- --memory: "cuda=2GiB", "cuda=2GiB,cpu=8GB" (repeatable) -> the configuration's memory.
local function budgets(list)
  if not list then return nil end
  local t = {}
  for _, text in ipairs(list) do
    for item in (text .. ","):gmatch("([^,]*),") do
      local key, value = item:match("^%s*([%w_]+)%s*=%s*(.-)%s*$")
      if not key or value == "" then
        error("--memory: '" .. item .. "' is not DEVTYPE=SIZE (cuda=2GiB)", 0)
      end
      t[key] = tonumber(value) or value
    end
  end
  return t
end

local function make_config(opts)
  return attempt(nil, function()
    return dp.CompilationConfig{
      -- each may be a tvmc list: "cuda, llvm -mcpu=skylake"
      targets = opts["--target"] or {"llvm", "cuda"},
      host = opts["--host"] and dp.Target(opts["--host"]) or nil,
      default_device_type = opts["--default"] or (not opts["--target"] and "cpu" or nil),
      bandwidth = bandwidths(opts["--bandwidth"]),
      memory = budgets(opts["--memory"]),
    }
  end)
end

-- ---------------------------------------------------------------- output

local ESC = string.char(27)
local function sgr(code, s) return ESC .. "[" .. code .. "m" .. s .. ESC .. "[0m" end
local DEVICE_COLOURS = {"36", "33", "35", "32", "34", "31"}

-- The module text with colours: comments dim, keywords bold, copies red,
-- each device in its colour.
local function colourize(text)
  local devs, ndev = {}, 0
  local function dev(name)
    if not devs[name] then
      ndev = ndev + 1
      devs[name] = DEVICE_COLOURS[(ndev - 1) % #DEVICE_COLOURS + 1]
    end
    return sgr("1;" .. devs[name], name)
  end
  local out = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local legend = line:match("^// (@[%w_.:#]+) = ")
    if legend then
      line = "// " .. dev(legend) .. sgr("2", line:sub(#legend + 4))
    elseif line:match("^%s*//") then
      line = sgr("2", line)
    else
      line = line:gsub("(/%*.-%*/)", function(c) return sgr("2", c) end)
      line = line:gsub("virtual_device=(@[%w_.:#]+)", function(d) return "virtual_device=" .. dev(d) end)
      line = line:gsub("%f[%w_](device_copy)%f[^%w_]", function(w) return sgr("1;31", w) end)
      line = line:gsub("%f[%w_](on_device)%f[^%w_]", function(w) return sgr("35", w) end)
      line = line:gsub("^(%s*)(def) (@[%w_]+)", function(sp, k, g) return sp .. sgr("1", k) .. " " .. sgr("1;34", g) end)
      line = line:gsub("%f[%w_](fn) %(", function(k) return sgr("1", k) .. " (" end)
    end
    out[#out + 1] = line
  end
  out[#out] = nil
  return table.concat(out, "\n") .. (text:sub(-1) == "\n" and "\n" or "")
end

local function print_options(opts)
  return {types = opts["--types"] or nil, short_devices = opts["--short-devices"] or nil,
          param_lines = opts["--short-devices"] or nil, meta = opts["--show-meta-data"] or nil,
          spans = opts["--spans"] or nil}
end

-- Every write of the command line goes through write_file or write_stdout:
-- a failure (a full disk, a missing folder) is an error naming the file,
-- exit status 1, and a file is replaced whole or not at all (dp.write_file
-- writes a temporary file beside it and renames it).
local function write_file(path, text)
  local ok, err = pcall(dp.write_file, path, text)
  if not ok then fail("devplan: " .. (dp.is_error(err) and err.message or tostring(err))) end
end

local function write_stdout(text)
  local ok, why = io.stdout:write(text)
  if ok then ok, why = io.stdout:flush() end
  if not ok then fail("devplan: cannot write to standard output: " .. tostring(why)) end
end

local function write_output(opts, s)
  if s:sub(-1) ~= "\n" then s = s .. "\n" end
  local out = opts["-o"]
  if out and out ~= "-" then write_file(out, s) else write_stdout(s) end
end

-- Should the module text on standard output be coloured?
local function coloured(opts)
  if opts["--no-color"] or (opts["-o"] and opts["-o"] ~= "-") then return false end
  if opts["--color"] then return true end
  return has_term and term.isatty(1) and (os.getenv("TERM") or "dumb") ~= "dumb"
end

local function write_graphs(opts, mod, config)
  local gopts = {config = config, detail = opts["--graph-detail"]}
  if opts["--dot"] then write_file(opts["--dot"], attempt(nil, dp.graph.dot, mod, gopts)) end
  if opts["--svg"] then attempt(nil, dp.graph.svg, mod, opts["--svg"], gopts) end
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
  -- placement by cost: what the optimiser decided (the first 50)
  local placed = d:placements()
  if #placed > 0 then add("placement by cost: " .. #placed .. " decision" .. (#placed == 1 and "" or "s")) end
  for i, p in ipairs(placed) do
    if i > 50 then add("  and " .. (#placed - 50) .. " more") break end
    local e, s = p.expr, p.expr.span
    local what = e.kind == "var" and "%" .. e.name or e.kind == "call" and e.callee.kind == "op" and e.callee.name or e.kind
    add("  " .. what .. (s and (" at " .. s.line .. ":" .. s.col) or "") .. ": " .. p.text)
  end
  return table.concat(out, "\n") .. "\n"
end

-- The "// " lines of PlanDevices' polymorphic and recompute options (empty
-- when not asked).
local function specialisation_line(p, mod)
  local out = ""
  local rec = dp.planner.recomputed(mod)
  for _, q in ipairs(p.passes or {}) do
    if q.name == "PlanDevices" and q.options and q.options.recompute and q.recomputed then rec = q.recomputed end
  end
  if rec then
    local namer = devname.namer()
    out = "// recompute: " .. #rec .. " cop" .. (#rec == 1 and "y" or "ies") .. " computed again on the destination"
      .. (#rec > 0 and ":" or "") .. "\n"
    for _, x in ipairs(rec) do
      out = out .. string.format("//   %s at %s:%s in @%s (%d call%s) on %s instead of copied from %s\n", x.value,
        x.line or "?", x.col or "?", x.fn, x.calls, x.calls == 1 and "" or "s", namer(x.dst), namer(x.src))
    end
  end
  for _, q in ipairs(p.passes or {}) do
    local r = q.name == "PlanDevices" and q.report
    if r then
      local without = r.copies_before == false and "a conflict without it"
        or (r.copies_before .. " without it")
      return out .. string.format("// polymorphic: %d function%s specialised (%d added); %d device_copy (%s)\n",
        r.specialised, r.specialised == 1 and "" or "s", r.functions_added, r.copies_after, without)
    end
  end
  return out
end

-- "// " lines: what MoveCopies moved after planning (the devices above are
-- PlanDevices'; a moved parameter or result is where the module now says).
local function moves_explanation(mod)
  local moves = dp.planner.moves(mod)
  if not moves then return "" end
  local out = {"// MoveCopies then moved copies (" .. #moves .. " move" .. (#moves == 1 and "" or "s")
    .. "; the devices above are PlanDevices', before it):"}
  for _, m in ipairs(moves) do out[#out + 1] = "//   " .. m.text end
  return table.concat(out, "\n") .. "\n"
end

-- "// " lines: why each device_copy of the planned module was inserted.
local function copy_explanations(planned, input, config)
  local _, names = dp.astext(planned, {names = true})
  local out = {}
  for _, nf in ipairs(planned:functions()) do
    local list = {}
    for name, e in pairs(names[nf[1]] or {}) do
      if e.kind == "call" and e.callee.kind == "op" and e.callee.name == "device_copy" then
        list[#list + 1] = {tonumber(name:sub(2)) or 0, name, e}
      end
    end
    table.sort(list, function(a, b) return a[1] < b[1] end)
    for _, c in ipairs(list) do
      local text = dp.planner.why(planned, c[3], {input = input, config = config, name = "@" .. nf[1] .. " " .. c[2]})
      out[#out + 1] = "// " .. text:gsub("\n", "\n// ")
    end
  end
  return #out > 0 and table.concat(out, "\n") .. "\n" or ""
end

-- The report, and the regions a partition pass hoisted (nil: none ran).
local function report_text(r, regions, json)
  local part = regions and require "devplan.passes.partition_by_virtual_device"
  if not json then return r:text() .. (regions and ("\n" .. part.regions_text(regions)) or "") end
  local text = r:json()
  if not regions then return text end
  local dkjson = require "dkjson"
  local list = dkjson.encode(part.regions_data(regions), {indent = true, keyorder = {
    "name", "caller", "device", "target", "nodes", "inputs", "outputs"}})
  return text:gsub("%s*}%s*$", "", 1) .. ',\n  "regions":' .. list:gsub("\n", "\n  ") .. "\n}\n"
end

-- The costs of --costs (and --board), loaded once; nil without --costs.
local function costs_of(opts)
  if opts["--board"] and not opts["--costs"] then
    fail(usage_error("plan", "--board needs --costs (the TopHub logs to read)").text)
  end
  if not opts["--costs"] then return nil end
  opts.loaded_costs = opts.loaded_costs or attempt(nil, dp.costs.load, opts["--costs"], {board = opts["--board"]})
  return opts.loaded_costs
end

-- The modelled schedule of the planned module when --costs or --gantt asks
-- for it (lua/devplan/schedule.lua); --gantt draws it. Returns the schedule
-- and what its costs are, or nil.
local function modelled_schedule(opts, mod, config)
  local cost, label = costs_of(opts), "default cost model"
  if not (opts["--costs"] or opts["--gantt"]) or not config then return nil end
  if opts["--costs"] then label = "costs from " .. table.concat(opts["--costs"], ", ") end
  local sched = attempt(nil, dp.planner.schedule, mod, config, {cost = cost})
  if opts["--gantt"] then attempt(nil, sched.write_svg, sched, opts["--gantt"], {title = label}) end
  return sched, label
end

-- The module, its report, its graphs, as the output options say.
local function emit(opts, mod, config, extra, regions)
  write_graphs(opts, mod, config)
  local sched, costs_label = modelled_schedule(opts, mod, config)
  local report = opts["--report"]
  if report then
    local r = attempt(nil, dp.planner.report, mod, config)
    if sched and opts["--costs"] then r:with_schedule(sched, costs_label) end
    write_output(opts, report_text(r, regions, report == "json"))
    return
  end
  if (opts["--svg"] or opts["--dot"]) and not opts["-o"] and not extra then return end
  if not extra and not coloured(opts) then
    -- printed straight into the file: a large module's text is never
    -- held whole (as a Lua string it was as large as the module)
    local out = opts["-o"]
    local po = print_options(opts)
    po.newline = true -- (as write_output ends every text)
    local ok, err = pcall(dp.write_file, out and out ~= "-" and out or io.stdout, mod, po)
    if not ok then fail("devplan: " .. (dp.is_error(err) and err.message or tostring(err))) end
    return
  end
  local text = dp.astext(mod, print_options(opts))
  if extra then -- (before a metadata section: the JSON ends the text)
    local at = text:find("\n#[metadata]\n", 1, true) or #text + 1
    local head = text:sub(1, at - 1)
    text = head .. (head:sub(-1) == "\n" and "" or "\n") .. extra .. text:sub(at)
  end
  if coloured(opts) then text = colourize(text) end
  write_output(opts, text)
end

-- ---------------------------------------------------------------- pipelines

local function context_options(opts, config)
  local print_after
  if opts["--print-after-all"] then print_after = "all"
  elseif opts["--print-changed"] then print_after = "changed"
  else print_after = opts["--print-after"] end
  return {
    config = config,
    print_before = opts["--print-before-all"] and "all" or opts["--print-before"],
    print_after = print_after,
    print_options = print_options(opts),
    output = io.stderr,
    time = opts["--time-passes"] or nil,
    verify_each = opts["--verify-each"] or nil,
  }
end

local function absolute(path)
  if path:sub(1, 1) == "/" then return path end
  return (os.getenv("PWD") or ".") .. "/" .. path
end

-- The reproducer: the arguments that matter, the pipeline and the input
-- module, as Relay text with `//` header lines (devplan opt --run-reproducer).
local function write_reproducer(path, opts, pipeline_text, mod, err)
  local lines = {"// devplan reproducer: replay with  devplan opt --run-reproducer " .. path,
                 "// pipeline: " .. pipeline_text}
  for _, key in ipairs{"--target", "--host", "--default", "--bandwidth", "--memory", "--load"} do
    local v = opts[key]
    for _, x in ipairs(type(v) == "table" and v or {v}) do
      lines[#lines + 1] = "// arg: " .. key
      lines[#lines + 1] = "// arg: " .. (key == "--load" and absolute(x) or x)
    end
  end
  lines[#lines + 1] = "// error: " .. (error_text(err):gsub("^devplan: ", ""):match("^[^\n]*"))
  local ok, werr = pcall(dp.write_file, path, table.concat(lines, "\n") .. "\n" .. tostring(mod))
  if ok then return true end
  return false, dp.is_error(werr) and werr.message or tostring(werr)
end

local function load_files(opts)
  for _, path in ipairs(opts["--load"] or {}) do run_lua_file(path, "--load") end
end

-- An error building a pipeline the command wrote for the user (plan): the
-- option they gave for the item it is in (origins[i] for item i: "--rules
-- FILE.lua"), instead of a position in a text they never wrote.
local function origin_error(command, err, pipeline_text, origins)
  if not origins or not dp.is_error(err) or err.source ~= "pipeline" or not err.col then return nil end
  local at
  for i, item in ipairs(dp.pipeline.parse(pipeline_text).items) do
    if item.col <= err.col then at = i end
  end
  local option = at and origins[at]
  if not option then return nil end
  local msg = err.message:gsub("^[%w_]+: ", "", 1) -- (the pass the command named)
  local file = option:match("^%-%-rules (.*)$")
  if file and msg:sub(1, #file + 2) == file .. ": " then msg = msg:sub(#file + 3) end
  return "devplan " .. command .. ": " .. option .. ": " .. msg
end

-- Runs pipeline text on the input; writes the result. reproducer: nil
-- (none) or a path (true: a new temporary file); origins: what the user
-- wrote for each item of a pipeline the command made (origin_error).
-- Where nothing reads the input after planning (the pipeline is the
-- planning pass alone, and no reproducer, --explain or instrument sees the
-- input: the context keeps it only for the verifier), PlanDevices is given
-- it to consume: its calls and lets become the plan's, changed in place,
-- instead of being copied, so that the input and the plan are not resident
-- side by side (its `consume` option; docs/benchmarks.md, 2026-11-30).
local function give_up_input(p, opts, reproducer)
  if reproducer or opts["--explain"] or opts["--verify-each"] or opts["--print-before-all"]
    or opts["--print-before"] or opts["--print-after-all"] or opts["--print-changed"]
    or opts["--print-after"] then return end
  local only = p.passes and #p.passes == 1 and p.passes[1]
  if only and only.name == "PlanDevices" and only.options and not only.options.polymorphic then
    only.consume_input = true -- (the latency search ignores it: plan_options.latency_options)
  end
end

local function run_pipeline(command, opts, pipeline_text, reproducer, origins)
  local sources = {pipeline = pipeline_text}
  local config = make_config(opts)
  local built, p = pcall(dp.pipeline.build, pipeline_text, {config = config, costs = costs_of(opts)})
  if not built then
    fail(origin_error(command, p, pipeline_text, origins) or error_text(p, sources))
  end
  local mod = parse_module(opts, command, sources)
  give_up_input(p, opts, reproducer)
  -- the input's text and the parser are garbage now: collected before
  -- planning (no Lua allocation would run the collector while C plans),
  -- and the heap they leave free given back (planning's arrays are mapped
  -- on their own, on top of it: src/cli/main.c)
  collectgarbage()
  core._release_heap()
  local ctx = attempt(sources, dp.PassContext, context_options(opts, config))
  local ok, res = pcall(p, mod, ctx)
  if opts["--time-passes"] then io.stderr:write(ctx:timing_report()) end
  if not ok then
    local text = conflicts_text(res, sources) or error_text(res, sources)
    if reproducer then
      local path = reproducer == true and os.tmpname() or reproducer
      local written, why = write_reproducer(path, opts, pipeline_text, mod, res)
      if written then
        text = text .. "\nreproducer written to " .. path .. "; replay with: devplan opt --run-reproducer " .. path
      else
        text = text .. "\nno reproducer: " .. why
      end
    end
    error({text = text, err = res}, 0)
  end
  local extra
  if opts["--explain"] then -- the domains PlanDevices planned: of the module the passes before it made
    local annotated = mod
    local cfg = ctx.planned_config or config
    local last = #p.passes -- the planning pass (passes after it, as share_copies, left out)
    for i = #p.passes, 1, -1 do
      if p.passes[i].name == "PlanDevices" then last = i break end
    end
    for i = 1, last - 1 do annotated = p.passes[i](annotated) end
    local popts = {resolve_conflicts = not opts["--strict"] and (not opts["--first-conflict"] or "tvm")}
    if opts["--placement"] and opts["--placement"] ~= "tvm" then popts.placement = opts["--placement"] end
    if popts.placement == "latency" then popts.cost = costs_of(opts) end
    extra = explanation(attempt(sources, dp.planner.domains, annotated, cfg, popts))
      .. moves_explanation(res) .. copy_explanations(res, annotated, cfg)
  end
  -- nothing reads the input any more (the context held it for verify):
  -- its nodes the result does not share and its text go before the
  -- result is printed, and their pages go back to the system (freed small
  -- blocks otherwise stay resident under the printer's arrays)
  extra = (extra or "") .. specialisation_line(p, res)
  if extra == "" then extra = nil end
  local planned_config, regions = ctx.planned_config or config, ctx.regions
  mod, sources, ctx = nil, nil, nil
  collectgarbage()
  core._release_heap()
  emit(opts, res, planned_config, extra, regions)
end

-- ---------------------------------------------------------------- the commands

function COMMANDS.import.run(opts)
  local mod = parse_module(opts, "import", {})
  emit(opts, mod, nil)
end

function COMMANDS.parse.run(opts)
  local sources = {}
  local mod = parse_module(opts, "parse", sources)
  emit(opts, mod, nil)
end

-- "nn.conv2d=cuda,nn.dense=cuda" -> {{op, device}...}, checked.
local function annotations(opts)
  local list = {}
  for _, spec in ipairs(opts["--annotate"] or {}) do
    for item in (spec .. ","):gmatch("([^,]*),") do
      if not item:find("%S") then
        fail(usage_error("plan", "--annotate wants OP=DEVICE[,OP=DEVICE...], got '" .. spec .. "' (an empty item)").text)
      end
      local op, dev = item:match("^%s*([^=%s]+)%s*=%s*(%S+)%s*$")
      if not op then fail(usage_error("plan", "--annotate wants OP=DEVICE (e.g. nn.conv2d=cuda), got '" .. item .. "'").text) end
      if not pcall(dp.op.get, op) then
        fail("devplan plan: --annotate " .. item .. ": unknown operator '" .. op .. "'" .. suggest.hint(op, dp.op.names()))
      end
      local name, weight = dev:match("^(.-)~(.*)$")
      if name and not (tonumber(weight) and tonumber(weight) >= 0) then
        fail("devplan plan: --annotate " .. item .. ": the weight after ~ must be a number >= 0 (OP=DEVICE~W)")
      end
      local vd, why = devname.parse(name or dev)
      if not vd then fail("devplan plan: --annotate " .. item .. ": " .. why) end
      list[#list + 1] = {op, dev}
    end
  end
  return list
end

function COMMANDS.plan.run(opts)
  load_files(opts)
  local items, origins = {}, {}
  for _, path in ipairs(opts["--rules"] or {}) do
    items[#items + 1] = {"annotate", {{"rules", path}}}
    origins[#items] = "--rules " .. path
  end
  local ann = annotations(opts)
  if #ann > 0 then
    items[#items + 1] = {"annotate", ann}
    origins[#items] = "--annotate"
  end
  local plan_args = {}
  if opts["--strict"] then plan_args[#plan_args + 1] = {"strict", "true"} end
  if not opts["--first-conflict"] then plan_args[#plan_args + 1] = {"all_conflicts", "true"}
  elseif not opts["--strict"] then plan_args[#plan_args + 1] = {"tvm_conflicts", "true"} end
  if opts["--placement"] and opts["--placement"] ~= "tvm" then plan_args[#plan_args + 1] = {"placement", opts["--placement"]} end
  if opts["--polymorphic"] and opts["--placement"] == "latency" then
    fail(usage_error("plan", "--polymorphic goes with --placement tvm or min_bytes, not latency").text)
  end
  if opts["--polymorphic"] then plan_args[#plan_args + 1] = {"polymorphic", "true"} end
  if opts["--recompute"] then plan_args[#plan_args + 1] = {"recompute", "true"} end
  items[#items + 1] = {"plan_devices", #plan_args > 0 and plan_args or nil}
  if opts["--share-copies"] then items[#items + 1] = {"share_copies"} end
  if opts["--move-copies"] then items[#items + 1] = {"move_copies"} end
  if opts["--partition"] then items[#items + 1] = {"partition"} end
  if opts["--verify"] then items[#items + 1] = {"verify"} end
  run_pipeline("plan", opts, dp.pipeline.text(items), opts["--reproducer"], origins)
end

local function list_passes()
  local lines = {"passes a pipeline can name:"}
  for _, name in ipairs(dp.pipeline.names()) do
    local e = dp.pipeline.entry(name)
    local keys = {}
    for k in pairs(e.options) do keys[#keys + 1] = k .. "=" end
    table.sort(keys)
    lines[#lines + 1] = string.format("  %-14s %s%s", name, e.help,
                                      #keys > 0 and " (" .. table.concat(keys, ", ") .. ")" or "")
  end
  return table.concat(lines, "\n") .. "\n"
end

-- The header of a reproducer: pipeline text and the arguments.
local function read_reproducer(path)
  local text = read_input(path)
  local pipeline_text = text:match("\n// pipeline: ([^\n]*)") or text:match("^// pipeline: ([^\n]*)")
  if not text:find("^// devplan reproducer") or not pipeline_text then
    fail("devplan opt: " .. path .. " is not a devplan reproducer (it starts with '// devplan reproducer')")
  end
  local args = {}
  for a in text:gmatch("\n// arg: ([^\n]*)") do args[#args + 1] = a end
  return pipeline_text, args
end

function COMMANDS.opt.run(opts)
  if opts["--run-reproducer"] then
    if opts["-p"] or #opts.files > 0 then
      fail(usage_error("opt", "--run-reproducer takes the pipeline and the module from the file").text)
    end
    local path = opts["--run-reproducer"]
    local pipeline_text, args = read_reproducer(path)
    local r = assert(parse_args("opt", args))
    for k, v in pairs(r) do if k ~= "files" then opts[k] = v end end
    opts.files = {path}
    load_files(opts)
    return run_pipeline("opt", opts, pipeline_text, nil)
  end
  load_files(opts)
  if opts["--list-passes"] then
    write_stdout(list_passes())
    return
  end
  if not opts["-p"] then fail(usage_error("opt", "a pipeline is needed: -p PIPELINE").text) end
  run_pipeline("opt", opts, opts["-p"], opts["--reproducer"] or true)
end

local function option_lines(name)
  local lines = {}
  for _, o in ipairs(COMMANDS[name].options) do
    local spec = OPTIONS[o]
    if o ~= "--pipeline" then
      local head = "  " .. o .. (spec.arg and (" " .. spec.arg) or "")
      local help = spec.help:gsub("\n", "\n" .. string.rep(" ", 24))
      if #head < 23 then lines[#lines + 1] = head .. string.rep(" ", 24 - #head) .. help
      else lines[#lines + 1] = head .. "\n" .. string.rep(" ", 24) .. help end
    end
  end
  return table.concat(lines, "\n")
end

-- The usage of the executable: commands, scripts, the REPL.
function M.usage()
  local lines = {
    "usage: devplan COMMAND [ARGS...]      (devplan help COMMAND for its options)",
    "       devplan [options] [SCRIPT [ARGS...]]",
    "       devplan                        (on a terminal: the REPL)",
    "",
    "Commands:",
  }
  for _, name in ipairs(COMMAND_ORDER) do
    lines[#lines + 1] = string.format("  %-8s %s", name, COMMANDS[name].summary)
  end
  for _, l in ipairs{
    "",
    "First steps (models/ of the project, or dp.root's when installed):",
    "  devplan plan models/resnet18.relay --annotate nn.conv2d=cuda --short-devices   # place, plan, read",
    "  devplan plan models/resnet18.relay --annotate nn.conv2d=cuda --report text     # the copies and bytes",
    "  devplan plan models/resnet18.relay --annotate nn.conv2d=cuda --svg plan.svg    # a picture",
    "",
    "Scripts: Lua 5.4 with the devplan module (require \"devplan\").",
    "  -e CODE        run CODE (may be repeated; runs before SCRIPT)",
    "  -              run the script read from standard input",
    "  -v, --version  print the version;  -h, --help  print this help;  --  stop handling options",
    "SCRIPT gets its arguments in `arg` (arg[0] is the script) and as `...`.",
    "With no arguments, devplan is a REPL when standard input is a terminal, and",
    "runs the script read from standard input otherwise (as lua does).",
    "",
    PALETTE_HELP,
    "Errors print as file:line:col: message with the source line and a caret; exit status 1.",
  } do lines[#lines + 1] = l end
  return table.concat(lines, "\n") .. "\n"
end

function COMMANDS.help.run(opts)
  local name = opts.files[1]
  if not name then
    write_stdout(M.usage())
    return
  end
  local cmd = COMMANDS[name]
  if not cmd then
    fail("devplan help: unknown command '" .. name .. "'" .. suggest.hint(name, COMMAND_ORDER)
      .. " (commands: " .. table.concat(COMMAND_ORDER, ", ") .. ")")
  end
  local parts = {"usage: " .. cmd.usage, ""}
  if cmd.text then parts[#parts + 1] = cmd.text .. "\n" end
  if #cmd.options > 0 then parts[#parts + 1] = "Options:\n" .. option_lines(name) .. "\n" end
  if name ~= "help" then parts[#parts + 1] = PALETTE_HELP end
  write_stdout(table.concat(parts, "\n") .. "\n")
end

-- ---------------------------------------------------------------- routing

local function is_file(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- What the executable should do with first argument `a`: "command" (a
-- command name, or a word or a model file that deserves a suggestion) or
-- "script". An existing file named like a command runs as a script.
function M.route(a)
  if COMMANDS[a] and not is_file(a) then return "command" end
  if is_file(a) then return (a:match("%.relay$") or a:lower():match("%.onnx$")) and "command" or "script" end
  if not a:find("[/.]") then return "command" end
  return "script"
end

-- What to say for a first argument that is no command.
local function not_a_command(name)
  if name:lower():match("%.onnx$") then
    return "devplan: '" .. name .. "' is an ONNX model, not a Lua script: say what to do with it, e.g.\n"
      .. "  devplan import " .. name .. " -o model.relay\n"
      .. "  devplan plan " .. name .. " --annotate nn.conv2d=cuda\n"
      .. "(devplan help for the commands)"
  end
  if name:match("%.relay$") then
    return "devplan: '" .. name .. "' is a model, not a Lua script: say what to do with it, e.g.\n"
      .. "  devplan parse " .. name .. "\n"
      .. "  devplan plan " .. name .. " --annotate nn.conv2d=cuda\n"
      .. "  devplan opt " .. name .. " -p PIPELINE\n"
      .. "(devplan help for the commands)"
  end
  return "devplan: unknown command '" .. name .. "'" .. suggest.hint(name, COMMAND_ORDER)
    .. " (commands: " .. table.concat(COMMAND_ORDER, ", ") .. "; a script needs a path: ./" .. name .. ")"
end

-- Runs command `name` with its arguments; returns the exit status.
local function run_command(name, ...)
  local cmd = COMMANDS[name]
  if not cmd or is_file(name) and (name:match("%.relay$") or name:lower():match("%.onnx$")) then
    io.stderr:write(not_a_command(tostring(name)), "\n")
    return 1
  end
  local opts, uerr = parse_args(name, {...})
  if not opts then
    io.stderr:write(uerr.text, "\n")
    return 1
  end
  if opts.help then return run_command("help", name) end
  local ok, err = pcall(cmd.run, opts)
  if ok then return 0 end
  if type(err) ~= "table" or not err.text then error(err, 0) end -- a bug: traceback
  io.stderr:write(err.text, "\n")
  return 1
end

-- Runs command `name` with its arguments; returns the exit status, and
-- whether the command ran a user's Lua file (--rules, --load, --meta,
-- annotate(rules=...)): the executable then closes its Lua state at exit
-- so that the file's finalizers run; otherwise it leaves the memory to
-- the system (src/cli/main.c).
function M.main(name, ...)
  return run_command(name, ...), dp.pipeline._ran_user_code()
end

return M
