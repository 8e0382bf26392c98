-- The REPL: `devplan` with no arguments on a terminal.
--
-- A Lua 5.4 REPL with `dp` loaded: line editing, history across sessions
-- (DEVPLAN_HISTORY, default ~/.devplan_history) and tab completion of
-- names and fields (libedit, through devplan.term); multi-line input
-- (an unfinished chunk asks for more with ">> "); `=expr` and bare
-- expressions print their values; an error is shown and the session goes
-- on. Helpers for planning (help() lists them):
--
--   model(path_or_text, meta?)   load a model: the current module
--   config{targets =, default =} the configuration (default llvm, cuda; default device cpu)
--   annotate{["nn.conv2d"] = "cuda"}   place operators (short device names or VirtualDevices)
--   plan()                       PlanDevices on the current module
--   step()                       the next planner phase, one at a time, and what it did
--   show(x?)                     the module (planned when there is one) with short devices
--   device("%42"), explain("%42")  a value's device, and why (copies: why inserted)
--   report(), draw(path?, detail?)  devices, copies and bytes; the picture as SVG
--   time("pipeline")             run a pipeline on the current module, timed
--
-- The state: mod (the module), cfg (the configuration), planned (the plan
-- of mod under cfg, or nil) and a step() cycle in progress. Whatever
-- changes the state says so in a line of its own ("planned is nil now:
-- annotate() changed mod"). device(), explain(), report() and draw() answer
-- about planned only, and printed names ("%42") are planned's: with no
-- plan, or a plan of another module than mod (mod assigned by hand since),
-- they refuse and say why, instead of answering about a module whose
-- numbering differs.
--
-- M.session() makes the same state without a terminal: session:eval(line)
-- returns what the REPL would print (the specs use it).
local dp = require "devplan"
local devname = require "devplan.devname"

local error, getmetatable, ipairs, load, next, pairs = error, getmetatable, ipairs, load, next, pairs
local pcall, require, select, setmetatable, tonumber, tostring = pcall, require, select, setmetatable, tonumber, tostring
local rawequal, type = rawequal, type
local _G, _VERSION, io, os, string, table = _G, _VERSION, io, os, string, table
_ENV = nil -- no global is read or written below this line

local M = {}

local Session = {}
Session.__index = Session

local HELP = [[
devplan REPL: Lua 5.4 with `dp` (require "devplan"). =expr or a bare expression prints it.
  model(path_or_text, meta?)          load a model (a file, .relay or .onnx, or Relay text): the current module
  config{targets = {"llvm", "cuda"}, default = "cpu"}   the configuration planning uses
  annotate{["nn.conv2d"] = "cuda"}    place every call of an operator on a device
  plan()                              PlanDevices on the current module: planned
  step()                              the next planner phase (rewrite, conflicts, analyze,
                                      default, capture), one call at a time; the last sets planned
  show(x?)                            the module (planned when there is one), short devices
  device("%42")                       the device of a value of planned, by its printed name
                                      ("@f:%3" in @f)
  explain("%42")                      why it is there; for a device_copy, why it was inserted
  report()                            planned's calls and bytes per device; every copy with its bytes
  draw(path?, detail?)                planned's picture as SVG (default devplan.svg): devices as
                                      lanes, copies with their bytes; detail "full" draws every call
  time("infer_type,plan_devices")     run a pipeline on the current module, timed
  mod, planned, cfg                   the current module, the planned one, the configuration
Tab completes names and fields; the history is kept across sessions.]]

local PHASES = {"rewrite", "conflicts", "analyze", "default", "capture"}

-- ---------------------------------------------------------------- helpers

local function say(self, ...)
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
  self.out(table.concat(parts, "\t") .. "\n")
end

local function need_module(self)
  if not self.env.mod then error("no model yet: model(\"file.relay\") loads one", 0) end
  return self.env.mod
end

local function short(m) return dp.astext(m, {short_devices = true, param_lines = true}) end

local function count_calls(m, op)
  local n = 0
  dp.visit(m, function(e)
    if e.kind == "call" and e.callee.kind == "op" and (not op or e.callee.name == op) then n = n + 1 end
  end)
  return n
end

-- ---------------------------------------------------------------- the state

-- Drops planned (and a step() cycle in progress) and says so, when there
-- is one: why is what changed ("annotate() changed mod").
local function drop_plan(self, why, hint)
  local env = self.env
  local had = env.planned ~= nil
  local stepping = self.steps and not self.steps.done
  env.planned, self.steps, self.input, self.plan_of = nil, nil, nil, nil
  self.made = nil
  if had or stepping then
    self.dropped = why
    say(self, "(planned is nil now: " .. why .. "; " .. (hint or "plan() plans again") .. ")")
  end
end

-- Records a new plan of m (the module it was made from).
local function set_plan(self, planned, m)
  self.env.planned, self.made, self.plan_of, self.input = planned, planned, m, m
  self.dropped = nil
end

local PHASE_NAMES = {"phase 0, rewrite", "phase 0b, conflicts", "phase 1, analyze", "phase 2, default",
                     "phase 3, capture"}

-- planned, or an error saying why there is none (or why it is not the plan
-- of mod any more): printed names are planned's, never another module's.
local function need_plan(self)
  local env = self.env
  local p = env.planned
  if p == nil then
    need_module(self)
    local s = self.steps
    if s and not s.done then
      error(string.format("nothing is planned yet: step() is at %s of 5 (next: %s); step() on to the "
        .. "capture, or plan()", PHASE_NAMES[s.phase] or "the start", PHASE_NAMES[s.phase + 1] or "none"), 0)
    end
    if self.dropped then error("nothing is planned: " .. self.dropped .. " since the last plan; plan() again", 0) end
    error("nothing is planned yet: plan() (or step() through the phases) first", 0)
  end
  if not dp.is_module(p) then error("planned is not a module (a " .. type(p) .. "): plan() again", 0) end
  if p == self.made and env.mod ~= self.plan_of then
    error("planned is the plan of another module than mod (mod was assigned since): plan() again", 0)
  end
  return p
end

-- What printed names refer to in show(): planned, else the module of a
-- step() cycle in progress, else mod; and a comment line saying which.
local function shown(self)
  local env = self.env
  if env.planned ~= nil then return need_plan(self), "// planned: the plan of mod" end
  if self.steps and not self.steps.done then
    return self.steps.module, "// mod at " .. PHASE_NAMES[self.steps.phase] .. " of step() (not planned yet)"
  end
  return need_module(self), "// mod (not planned: plan() plans it)"
end

-- "%42", "@f:%42", "%x" -> the node, its function, and the module m.
local function lookup(self, name, m)
  if type(name) ~= "string" then
    if dp.is_expr(name) then return name, nil, m end
    error("a printed name such as \"%42\" expected, got " .. type(name), 0)
  end
  local fn, local_name = name:match("^@([%w_]+):(%%.+)$")
  local_name = local_name or name
  if not local_name:match("^%%") then local_name = "%" .. local_name end
  local _, names = dp.astext(m, {names = true})
  if fn then
    local e = names[fn] and names[fn][local_name]
    if not e then error("no " .. local_name .. " in @" .. fn, 0) end
    return e, fn, m
  end
  local found, where
  for _, nf in ipairs(m:functions()) do
    local e = names[nf[1]] and names[nf[1]][local_name]
    if e and found then
      error(local_name .. " is in @" .. where .. " and @" .. nf[1] .. ": say \"@" .. where .. ":" .. local_name .. "\"", 0)
    end
    if e then found, where = e, nf[1] end
  end
  if not found then error("no value is printed " .. local_name .. " (show() prints the names)", 0) end
  return found, where, m
end

-- ---------------------------------------------------------------- the helpers of the environment

local function helpers(self)
  local env = self.env
  local h = {}

  function h.help() say(self, HELP) end

  function h.model(src, meta)
    if type(src) ~= "string" then error("model: a file name or Relay text expected", 2) end
    local f = io.open(src, "rb")
    local m
    if f and src:lower():match("%.onnx$") then -- an ONNX model; meta: dp.onnx.load's options
      f:close()
      m = dp.onnx.load(src, meta)
    elseif f then
      f:close()
      m = dp.parse_file(src, meta or devname.palette())
    elseif not src:find("\n") and (src:match("%.relay$") or src:find("/", 1, true)) then
      error("model: cannot open " .. src, 2)
    else
      m = dp.parse(src, meta or devname.palette())
    end
    env.mod = m
    say(self, string.format("model: %d function(s), %d calls (show() prints it; mod is the module)",
                            #m:functions(), count_calls(m)))
    drop_plan(self, "model() loaded another module")
  end

  function h.config(c)
    if dp.is_config(c) then env.cfg = c
    else
      c = c or {}
      for k in pairs(c) do
        if k ~= "targets" and k ~= "host" and k ~= "default" then
          error("config: unknown option '" .. tostring(k) .. "' (targets, host, default)", 2)
        end
      end
      env.cfg = dp.CompilationConfig{targets = c.targets or {"llvm", "cuda"}, host = c.host,
                                     default_device_type = c.default or "cpu"}
    end
    say(self, tostring(env.cfg))
    drop_plan(self, "config() changed the configuration")
  end

  function h.annotate(rules)
    local m = need_module(self)
    if type(rules) ~= "table" then error("annotate: a table operator -> device expected", 2) end
    local map = {}
    for op, d in pairs(rules) do
      if type(d) == "string" then map[op] = d
      elseif dp.is_virtual_device(d) then map[op] = d
      else error("annotate: the device of " .. tostring(op) .. " must be a name (\"cuda\") or a VirtualDevice", 2) end
    end
    local named, fixed = {}, {}
    for op, d in pairs(map) do
      if type(d) == "string" then named[op] = d else fixed[op] = function() return d end end
    end
    local before = m
    if next(named) then m = dp.pipeline.annotate_ops(named)(m) end
    if next(fixed) then m = dp.passes.AnnotateVirtualDevices(fixed)(m) end
    -- (a call an annotation already placed is left alone: the first wins)
    if rawequal(m, before) or dp.structural_equal(m, before) then
      say(self, string.format("annotated: %d on_device (nothing new: each call named is placed already; mod and planned stay)",
                              count_calls(m, "on_device")))
      return
    end
    env.mod = m
    say(self, string.format("annotated: %d on_device", count_calls(m, "on_device")))
    drop_plan(self, "annotate() changed mod")
  end

  function h.plan()
    local m = need_module(self)
    local planned = dp.passes.PlanDevices(env.cfg)(m)
    if self.steps and not self.steps.done then
      say(self, "(the step() cycle at " .. PHASE_NAMES[self.steps.phase] .. " is left)")
    end
    self.steps = nil
    set_plan(self, planned, m) -- (m: what why() tells reasons in terms of)
    local r = dp.planner.report(env.planned, env.cfg)
    say(self, string.format("planned: %d device_copy, %s bytes copied (report() for more, show() to read it;"
      .. " planned is the module)", r.totals.copies, require("devplan.report").grouped(r.totals.bytes_copied)))
  end

  function h.step()
    local m = need_module(self)
    local s = self.steps
    if not s or s.done then
      drop_plan(self, "step() started planning mod again", "the last step() sets it")
      s = {phase = 0, module = m, from = m}
      self.steps = s
    elseif m ~= s.from then
      error("mod changed since step() began (at " .. PHASE_NAMES[s.phase] .. "): plan() plans the new mod, or "
        .. "annotate()/model() start again", 0)
    end
    s.phase = s.phase + 1
    local name = PHASES[s.phase]
    local before = count_calls(s.module, "on_device")
    if name == "rewrite" then
      s.module = dp.planner.rewrite(s.module, env.cfg)
      say(self, "phase 0, rewrite: annotations made canonical\n" .. short(s.module))
    elseif name == "conflicts" then
      s.module = dp.planner.conflicts(s.module, env.cfg)
      -- (each an on_device constraining neither side: capture writes the copy)
      local n = count_calls(s.module, "on_device") - before
      say(self, string.format("phase 0b, conflicts: %d %s allowed for values demanded on two devices\n%s",
                              n, n == 1 and "copy" or "copies", short(s.module)))
    elseif name == "analyze" or name == "default" then
      if name == "analyze" then s.domains = dp.planner.analyze(s.module, env.cfg)
      else dp.planner.default(s.domains) end
      local _, names = dp.astext(s.module, {names = true})
      local known, total, lines = 0, 0, {}
      local namer = devname.namer()
      for _, nf in ipairs(s.module:functions()) do
        local list = {}
        for n, e in pairs(names[nf[1]] or {}) do list[#list + 1] = {n, e} end
        table.sort(list, function(a, b)
          local x, y = tonumber(a[1]:sub(2)), tonumber(b[1]:sub(2))
          if x and y then return x < y end
          if x or y then return y ~= nil end
          return a[1] < b[1]
        end)
        for _, ne in ipairs(list) do
          local vd = s.domains:lookup(ne[2])
          total = total + 1
          local where = "?"
          if vd and not vd:is_fully_unconstrained() then
            known = known + 1
            where = "@" .. namer(vd)
          end
          if #lines < 60 then lines[#lines + 1] = string.format("  @%s %-8s %s", nf[1], ne[1], where) end
        end
      end
      if total > #lines then lines[#lines + 1] = "  ... (" .. total - #lines .. " more)" end
      say(self, string.format("%s: %d of %d named values have a device%s\n%s",
        name == "analyze" and "phase 1, analyze" or "phase 2, default", known, total,
        name == "analyze" and " (the rest wait for defaulting)" or "", table.concat(lines, "\n")))
    else
      set_plan(self, dp.planner.capture(s.domains), m)
      s.done = true
      say(self, "phase 3, capture: the planned module; planned is set (the next step() starts again)\n"
        .. short(env.planned))
    end
  end

  function h.show(x)
    local m, which = shown(self)
    if x == nil then say(self, which .. "\n" .. short(m)) return end
    if type(x) == "string" then x = lookup(self, x, m) end
    say(self, dp.astext(x, {short_devices = true, param_lines = true}))
  end

  function h.device(name)
    local m = need_plan(self)
    local e = lookup(self, name, m)
    return dp.planner.virtual_devices(m, env.cfg)[e]
  end

  function h.explain(name)
    local m = need_plan(self)
    local e = lookup(self, name, m)
    say(self, dp.planner.why(m, e, {input = m == self.made and self.input or nil, config = env.cfg,
                                    name = type(name) == "string" and name or "it"}))
  end

  function h.report()
    say(self, dp.planner.report(need_plan(self), env.cfg):text())
  end

  function h.draw(path, detail)
    path = path or "devplan.svg"
    dp.graph.svg(need_plan(self), path, {config = env.cfg, detail = detail})
    say(self, "drawn: " .. path)
  end

  function h.time(text)
    local m = need_module(self)
    local p = dp.pipeline.build(text, {config = env.cfg})
    local ctx = dp.PassContext{config = env.cfg, time = true}
    p(m, ctx)
    say(self, ctx:timing_report())
  end

  return h
end

-- ---------------------------------------------------------------- evaluation

-- A new session: out(text) receives what is printed (default io.write).
function M.session(out)
  local self = setmetatable({out = out or function(s) io.stdout:write(s) io.stdout:flush() end,
                             buffer = nil}, Session)
  local env = setmetatable({dp = dp}, {__index = _G})
  self.env = env
  env.cfg = dp.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}
  for k, f in pairs(helpers(self)) do env[k] = f end
  env.print = function(...) say(self, ...) end
  return self
end

local function message(err)
  if type(err) == "table" and err.formatted then return err.formatted end
  return dp._error_text(err)
end

-- Is this load error the end of an unfinished chunk?
local function incomplete(msg) return msg:find("<eof>$") ~= nil end

-- Feeds one line. Returns "more" when the chunk is unfinished (prompt >>),
-- else "done". What the line prints goes to out.
function Session:feed(line)
  local text = self.buffer and (self.buffer .. "\n" .. line) or line
  if not self.buffer and text:sub(1, 1) == "=" then text = "return " .. text:sub(2) end
  local chunk, err = load("return " .. text, "=stdin", "t", self.env)
  if not chunk then chunk, err = load(text, "=stdin", "t", self.env) end
  if not chunk then
    if incomplete(err) then
      self.buffer = text
      return "more"
    end
    self.buffer = nil
    self.out(err .. "\n")
    return "done"
  end
  self.buffer = nil
  local res = table.pack((self.pcall or pcall)(chunk))
  if not res[1] then
    self.out(message(res[2]) .. "\n")
  elseif res.n > 1 then
    local parts = {}
    for i = 2, res.n do parts[#parts + 1] = tostring(res[i]) end
    self.out(table.concat(parts, "\t") .. "\n")
  end
  return "done"
end

-- The text of a line, fed and its printing captured (for specs).
function Session:eval(line)
  local saved, got = self.out, {}
  self.out = function(s) got[#got + 1] = s end
  local ok, err = pcall(self.feed, self, line)
  self.out = saved
  if not ok then error(err, 0) end
  return table.concat(got)
end

-- ---------------------------------------------------------------- completion

local KEYWORDS = {"and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto",
                  "if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true",
                  "until", "while"}

-- Field names IR values may have (their fields are computed, not listed).
local FIELDS = {"kind", "span", "checked_type", "name", "type_annotation", "virtual_device", "dtype",
  "shape", "ndim", "value", "num_inputs", "callee", "args", "attrs", "params", "body", "ret_type",
  "var", "fields", "tuple", "index", "cond", "then_branch", "else_branch", "data", "clauses",
  "complete", "ref", "functions", "get", "global", "with_function", "with_primfn", "typedefs",
  "typedef", "primfns", "primfn", "ctor", "device_type", "device_type_name", "virtual_device_id",
  "target", "memory_scope", "is_fully_unconstrained", "is_fully_constrained", "kind", "host",
  "options", "with_host", "primitive_targets", "host_target", "host_virtual_device",
  "default_virtual_device", "default_device_type", "canonical", "lookup", "unify", "constrain",
  "set_default", "fully_constrained", "explain", "module", "config", "elem", "ret", "type_params",
  "main", "passes", "run", "timings", "timing_report", "items"}

local function keys_of(v, into)
  if type(v) == "table" then
    for k in pairs(v) do if type(k) == "string" then into[k] = true end end
    local mt = getmetatable(v)
    if mt and type(mt.__index) == "table" and mt.__index ~= v then keys_of(mt.__index, into) end
  elseif type(v) == "userdata" then
    for _, f in ipairs(FIELDS) do
      local ok, x = pcall(function() return v[f] end)
      if ok and x ~= nil then into[f] = true end
    end
  end
  return into
end

-- Candidates for `word` (with the line before it): names of the
-- environment, or fields after `.` and methods after `:`.
function Session:complete(word)
  local base, sep, prefix = word:match("^(.*)([.:])([%w_]*)$")
  local names = {}
  if base then
    local v = self.env
    for part in base:gmatch("[^.:]+") do
      if not part:match("^[%a_][%w_]*$") then return {} end
      local ok, x = pcall(function() return v[part] end)
      if not ok or x == nil then return {} end
      v = x
    end
    keys_of(v, names)
  else
    prefix = word
    keys_of(self.env, names)
    keys_of(_G, names)
    for _, k in ipairs(KEYWORDS) do names[k] = true end
  end
  local list = {}
  for n in pairs(names) do
    if n:sub(1, #prefix) == prefix and n:match("^[%a_][%w_]*$") then
      list[#list + 1] = (base and (base .. sep) or "") .. n
    end
  end
  table.sort(list)
  return list
end

-- ---------------------------------------------------------------- the loop

local function history_path()
  local p = os.getenv("DEVPLAN_HISTORY")
  if p and p ~= "" then return p end
  local home = os.getenv("HOME")
  return home and (home .. "/.devplan_history") or nil
end

-- The REPL on the terminal (devplan.term). Returns when input ends.
function M.run()
  local term = require "devplan.term"
  local self = M.session()
  local hist = history_path()
  if hist then term.read_history(hist) end
  term.set_completer(function(word) return self:complete(word) end)
  self.pcall = term.pcall -- Ctrl-C stops a running chunk, not the REPL
  self.out("devplan " .. dp.version .. " (" .. _VERSION .. "): help() for the helpers, Ctrl-D to leave\n")
  local prompt = "> "
  while true do
    local line = term.readline(prompt)
    if line == nil then break end
    if line == false then -- Ctrl-C: the line (and an unfinished chunk) dropped
      self.buffer = nil
      self.out("^C\n")
      prompt = "> "
    else
      if line:match("%S") then
        term.add_history(line)
        if hist then term.write_history(hist, 1000) end
      end
      prompt = self:feed(line) == "more" and ">> " or "> "
    end
  end
  self.out("\n")
  term.set_completer(nil)
end

return M
