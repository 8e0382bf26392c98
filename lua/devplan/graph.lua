-- dp.graph: the picture of a module, to answer at a glance where each part
-- runs and where the copies are.
--
--   dp.graph.dot(mod, opts?)        -> Graphviz text
--   dp.graph.svg(mod, path, opts?)  -> path: the picture, laid out by Graphviz's dot
--   dp.graph.layout(mod, opts?)     -> what is drawn, as data (below)
--   dp.graph.render(text, path, format?, limits?)  runs dot on any Graphviz text
--
-- opts: config (the configuration planning used: where the devices come
-- from), detail ("auto", the default, or one of the levels below),
-- max_nodes (auto's budget, default 40), params (draw the parameters:
-- default when a function has at most 12), title, and for svg/render
-- time_limit (seconds, default 60) and memory_limit (bytes, default 2 GiB).
--
-- Each device is a lane: a coloured cluster holding what runs there (one
-- per function and device; functions are clusters around their lanes,
-- stacked main first; no lanes past 200 boxes, where the colour alone says
-- the device). A device_copy is no node but a bold red edge from the value
-- to its user, labelled with the bytes it copies (as the report counts
-- them) and the two devices; on_device is no node either. A legend lists
-- the devices and what the shapes mean. Four levels of detail (grouped in
-- C: src/lua/l_graph.c):
--   full     every call, tuple, projection, constant, parameter and control node
--   chains   each chain of 3 or more calls, tuples and projections on one
--            device (each the only user of the one before) is one box:
--            "%10 ... %14, 4 calls: nn.conv2d ... nn.conv2d"
--   regions  each connected part on one device is one box, with its calls by operator
--   devices  one box per function and device, the copies between them summed
-- "auto" draws the most detailed level with at most max_nodes nodes and
-- 3 * max_nodes edges, so a picture of any module stays small enough to lay
-- out in seconds (a 1,000,000-call module: a few boxes). Everything before
-- the layout is linear in the module's size; the layout itself (dot) runs
-- under the time and memory limits, and exceeding one is a clear error.
-- Devices come from the planner's domains (where planning puts each
-- value); a module that does not plan (a conflict) is drawn in grey.
local core = require "devplan.core"
local ir = require "devplan.ir"
local devname = require "devplan.devname"
local report = require "devplan.report"

local error, ipairs, pairs, pcall, select, tonumber = error, ipairs, pairs, pcall, select, tonumber
local tostring, type = tostring, type
local io, math, os, string, table = io, math, os, string, table
_ENV = nil -- no global is read or written below this line

local M = {}

-- Fill colours for devices in order of first use (then again).
local PALETTE = {"#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5", "#ffffb3"}
local UNKNOWN = "#eeeeee"
local COPY = "#d62728"
local LEVEL = {full = 1, chains = 2, regions = 3, devices = 4, auto = 0}
local CHAIN_MIN = 3

local OPTIONS = {config = true, params = true, title = true, detail = true, max_nodes = true,
                 time_limit = true, memory_limit = true}

local function check(mod, opts, who)
  if not ir.is_module(mod) then error(who .. ": an IRModule expected, got " .. type(mod), 3) end
  opts = opts or {}
  if type(opts) ~= "table" then error(who .. ": options must be a table", 3) end
  for k in pairs(opts) do
    if not OPTIONS[k] then
      error(who .. ": unknown option '" .. tostring(k) .. "' (config, detail, max_nodes, params, title, "
        .. "time_limit, memory_limit)", 3)
    end
  end
  if opts.detail ~= nil and not LEVEL[opts.detail] then
    error(who .. ": detail must be auto, full, chains, regions or devices, got " .. tostring(opts.detail), 3)
  end
  if opts.max_nodes ~= nil and (math.type(opts.max_nodes) ~= "integer" or opts.max_nodes < 1) then
    error(who .. ": max_nodes must be an integer >= 1", 3)
  end
  return opts
end

-- "#8dd3c7" mixed with white: the light fill of a device's lane.
local function light(hex)
  local r, g, b = hex:match("#(%x%x)(%x%x)(%x%x)")
  local function mix(c) return math.floor(tonumber(c, 16) * 0.3 + 255 * 0.7 + 0.5) end
  return string.format("#%02x%02x%02x", mix(r), mix(g), mix(b))
end

-- What a node is, in one word: its operator, @callee, constructor, kind.
local function what_of(e)
  if e.kind == "call" then
    local c = e.callee
    return c.kind == "op" and c.name or c.kind == "global" and ("@" .. c.name) or c.kind == "ctor" and c.name or "call"
  elseif e.kind == "var" then return ""
  elseif e.kind == "const" then return e.ndim == 0 and tostring(e.value) or "constant"
  elseif e.kind == "proj" then return "." .. e.index
  end
  return e.kind
end

-- ---------------------------------------------------------------- what is drawn

-- What dot draws, as data (the grouping is core._graph's, src/lua/l_graph.c):
--   {level = "full" | "chains" | "regions" | "devices",
--    boxes = {{fn =, dev =, kind = "node" | "chain" | "region" | "device", nodes =, calls = (of
--              operators and constructors), function_calls =, first =, last = (exprs),
--              ops = {{"nn.conv2d", 20}, {"@f", 1}, ...} (most first)}...},
--    edges = {{from =, to = (box indices), copies =, bytes = n | nil, size = nil | "unknown" |
--              "too large", src =, dst = (virtual devices of the copies)}...},
--    devices = {{name = "cuda", device = "VirtualDevice(...)", colour = "#8dd3c7"}...},
--    functions = {"main", ...}, counts = {full =, chains =, regions =, devices =} (boxes per level),
--    calls =, copies =, bytes = n | nil, size = nil | "unknown" | "too large"}
function M.layout(mod, opts)
  opts = check(mod, opts, "devplan.graph.layout")
  local config = opts.config or core.CompilationConfig{targets = {"llvm", "cuda"}, default_device_type = "cpu"}
  local ok, domains = pcall(core.planner.domains_with, mod, config, nil)
  if not ok then -- a module that does not plan is drawn without devices; any other error is one
    if not (core.is_error(domains) and domains.code == "conflict") then error(domains, 0) end
    domains = nil
  end
  local g = core._graph(mod, domains, {params = opts.params, detail = opts.detail or "auto",
                                       max_nodes = opts.max_nodes or 40})
  local namer = devname.namer()
  local devices = {}
  for d, vd in ipairs(g.devices) do
    devices[d] = {name = namer(vd), device = tostring(vd), colour = PALETTE[(d - 1) % #PALETTE + 1]}
  end
  for _, b in ipairs(g.boxes) do
    b.kind = g.level == "full" and "node" or g.level == "chains" and (b.nodes >= CHAIN_MIN and "chain" or "node")
      or g.level == "regions" and "region" or "device"
    table.sort(b.ops, function(x, y) if x[2] ~= y[2] then return x[2] > y[2] end return x[1] < y[1] end)
  end
  local copies, bytes, size = 0, 0, nil
  for _, e in ipairs(g.edges) do
    if e.copies > 0 then
      copies = copies + e.copies
      e.src_name, e.dst_name = e.src and namer(e.src) or "?", e.dst and namer(e.dst) or "?"
      if size ~= "unknown" then
        if e.size == "unknown" then size, bytes = "unknown", nil
        elseif e.size or bytes == nil or bytes > math.maxinteger - e.bytes then size, bytes = "too large", nil
        else bytes = bytes + e.bytes end
      end
    end
  end
  return {level = g.level, boxes = g.boxes, edges = g.edges, devices = devices, functions = g.functions,
          counts = g.counts, calls = g.calls, copies = copies, bytes = bytes, size = size}
end

-- ---------------------------------------------------------------- Graphviz text

local function q(s) return '"' .. tostring(s):gsub('[\\"]', "\\%0"):gsub("\n", "\\n") .. '"' end

local function html(s)
  return (tostring(s):gsub("[&<>\"]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;"}))
end

local function plural(n, one, many) return report.grouped(n) .. " " .. (n == 1 and one or many) end

local function bytes_words(bytes, size)
  if bytes then return report.grouped(bytes) .. (bytes == 1 and " byte" or " bytes") end
  if size == "too large" then return "more bytes than a 64-bit count holds" end
  return "unknown bytes"
end

-- The operators of a box, most calls first: "nn.conv2d x20, add x8, ..."
local function ops_line(ops, max)
  local parts = {}
  for i, o in ipairs(ops) do
    if i > max then parts[#parts + 1] = "..." break end
    parts[#parts + 1] = o[2] > 1 and (o[1] .. " x" .. report.grouped(o[2])) or o[1]
  end
  return table.concat(parts, ", ")
end

local function box_label(b, names, fns)
  if b.kind == "node" then
    local name, what = names[b.first], what_of(b.first)
    -- a call made for an imported ONNX node (a span with no column) names it
    local s = b.first.kind == "call" and b.first.span
    if s and s.col == 0 and s.source then what = what .. "\n" .. s.source end
    if name and what ~= "" then return name .. "\n" .. what end
    return name or what
  end
  local count = plural(b.calls, "call", "calls")
  if b.function_calls > 0 then
    count = (b.calls > 0 and (count .. ", ") or "")
      .. plural(b.function_calls, "call of a function", "calls of functions")
  end
  if b.kind == "chain" then
    local first, last = names[b.first], names[b.last]
    return (first and last and (first .. " ... " .. last .. "\n") or "")
      .. count .. ": " .. what_of(b.first) .. " ... " .. what_of(b.last)
  end
  local head = b.kind == "device" and ("@" .. fns[b.fn] .. ": ") or ""
  local calls = b.calls + b.function_calls
  return head .. count .. (b.nodes > calls and (" (" .. plural(b.nodes, "node", "nodes") .. ")") or "")
    .. (#b.ops > 0 and ("\n" .. ops_line(b.ops, 4)) or "")
end

local LANES_MAX = 200 -- more boxes: no lane clusters (dot's crossing minimisation
                      -- with them takes 15-50 s on densenet201's 819 nodes, 2-5 s without)

local function legend(d, level)
  local rows = {'<TR><TD COLSPAN="2"><B>devices</B></TD></TR>'}
  for _, dev in ipairs(d.devices) do
    rows[#rows + 1] = string.format('<TR><TD BGCOLOR="%s">@%s</TD><TD ALIGN="LEFT">%s</TD></TR>', dev.colour,
                                    html(dev.name), html(dev.device))
  end
  if #d.devices == 0 then rows[#rows + 1] = '<TR><TD BGCOLOR="' .. UNKNOWN .. '">?</TD><TD ALIGN="LEFT">no devices: the module does not plan</TD></TR>' end
  rows[#rows + 1] = string.format('<TR><TD><FONT COLOR="%s"><B>- - &gt;</B></FONT></TD>'
    .. '<TD ALIGN="LEFT">device_copy, with the bytes it copies</TD></TR>', COPY)
  local what = {
    full = "one node per call, value and parameter",
    chains = "a double box: a chain of " .. CHAIN_MIN .. " or more calls on one device",
    regions = "a box: a connected part on one device, its calls by operator",
    devices = "a box: everything of a function on one device",
  }
  rows[#rows + 1] = '<TR><TD>detail</TD><TD ALIGN="LEFT">' .. level .. ": " .. html(what[level])
    .. (level ~= "full" and " (detail full draws every call)" or "") .. '</TD></TR>'
  if #d.boxes > LANES_MAX then
    rows[#rows + 1] = '<TR><TD>lanes</TD><TD ALIGN="LEFT">none past ' .. LANES_MAX
      .. ' boxes: the colour alone says the device</TD></TR>'
  end
  return '  legend [shape=plaintext, style="", label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="4">'
    .. table.concat(rows) .. '</TABLE>>];'
end

-- Printed names label the boxes ("%10 ... %14") of modules up to this many
-- nodes: past it, printing the whole module for a few labels would cost
-- more than the rest of the picture (10 s of 14 on a 1,000,000-call chain).
local NAMES_MAX = 200000

local function dot_text(mod, d, opts)
  local names = {}
  if (d.level == "full" or d.level == "chains") and d.counts.full <= NAMES_MAX then
    local _, printed = core.astext(mod, {names = true})
    for _, map in pairs(printed) do
      for name, e in pairs(map) do names[e] = name end
    end
  end
  local title = opts.title and (opts.title .. "\n") or ""
  title = title .. plural(d.calls, "call", "calls") .. " on " .. plural(#d.devices, "device", "devices") .. ", "
    .. (d.copies == 0 and "no copy" or (plural(d.copies, "copy", "copies") .. ", " .. bytes_words(d.bytes, d.size)
      .. " copied"))
  -- a large picture (detail full on a large module) is laid out with
  -- straight edges and bounded crossing and placement passes: dot's spline
  -- routing and crossing minimisation take minutes on densenet201's 819
  -- nodes otherwise (14 s with these)
  local large = #d.boxes > 60 or #d.edges > 120
  local out = {"digraph devplan {",
    '  graph [rankdir=TB, fontname="Helvetica", newrank=true, labelloc=t, fontsize=14, label=' .. q(title)
      .. (large and ", splines=line, remincross=false, mclimit=0.1, nslimit=0.2, nslimit1=0.2" or "") .. "];",
    '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, fillcolor="' .. UNKNOWN .. '"];',
    '  edge [color="#555555", arrowsize=0.6];'}
  local function add(s) out[#out + 1] = s end
  add(legend(d, d.level))
  -- lanes: one cluster per function and device (functions around them when several)
  local lanes, order = {}, {}
  for b, box in ipairs(d.boxes) do
    local key = box.fn .. ":" .. box.dev
    if not lanes[key] then
      lanes[key] = {fn = box.fn, dev = box.dev, boxes = {}}
      order[#order + 1] = lanes[key]
    end
    table.insert(lanes[key].boxes, b)
  end
  table.sort(order, function(x, y) if x.fn ~= y.fn then return x.fn < y.fn end return x.dev < y.dev end)
  local lanes_drawn = #d.boxes <= LANES_MAX
  local several = #d.functions > 1 and lanes_drawn
  local current
  for li, lane in ipairs(order) do
    if several and lane.fn ~= current then
      if current then add("  }") end
      current = lane.fn
      add("  subgraph cluster_f" .. lane.fn .. " {")
      add('    label=' .. q("@" .. d.functions[lane.fn]) .. '; style="rounded"; color="#999999"; fontname="Helvetica";')
    end
    local dev = d.devices[lane.dev]
    local colour = dev and dev.colour or UNKNOWN
    if lanes_drawn then
      add("  subgraph cluster_lane" .. li .. " {")
      add('    label=' .. q(dev and ("@" .. dev.name) or "no device") .. '; style="rounded,filled"; fillcolor="'
        .. light(colour) .. '"; color="' .. colour .. '"; penwidth=2; fontname="Helvetica-Bold";')
    end
    for _, b in ipairs(lane.boxes) do
      local box = d.boxes[b]
      local shape = ""
      if box.kind == "node" then
        local k = box.first.kind
        shape = k == "var" and ", shape=ellipse" or k == "const" and ", shape=note" or ""
      elseif box.kind == "chain" then shape = ", peripheries=2"
      else shape = ", penwidth=2" end
      add("    n" .. b .. " [label=" .. q(box_label(box, names, d.functions)) .. ', fillcolor="' .. colour .. '"'
        .. shape .. "];")
    end
    if lanes_drawn then add("  }") end
  end
  if several and current then add("  }") end
  -- functions one under the other (dot puts unconnected clusters side by side)
  if #d.functions > 1 then
    local last_of, first_of = {}, {}
    for b, box in ipairs(d.boxes) do
      first_of[box.fn] = first_of[box.fn] or b
      last_of[box.fn] = b
    end
    local prev
    for f = 1, #d.functions do
      if first_of[f] then
        if prev then add("  n" .. last_of[prev] .. " -> n" .. first_of[f] .. " [style=invis];") end
        prev = f
      end
    end
  end
  for _, e in ipairs(d.edges) do
    if e.copies > 0 then
      local what = e.copies == 1 and "copy " or (plural(e.copies, "copy", "copies") .. ", ")
      add("  n" .. e.from .. " -> n" .. e.to .. ' [color="' .. COPY .. '", penwidth=3, style=dashed, fontcolor="'
        .. COPY .. '", fontsize=11, fontname="Helvetica-Bold", label=' .. q(what .. bytes_words(e.bytes, e.size)
        .. "\n@" .. e.src_name .. " -> @" .. e.dst_name) .. "];")
    else
      add("  n" .. e.from .. " -> n" .. e.to .. ";")
    end
  end
  add("}")
  return table.concat(out, "\n") .. "\n"
end

function M.dot(mod, opts)
  opts = check(mod, opts, "devplan.graph.dot")
  return dot_text(mod, M.layout(mod, opts), opts)
end

-- ---------------------------------------------------------------- rendering

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Is Graphviz's dot there? (asked once)
local has_dot
local function dot_found()
  if has_dot == nil then has_dot = os.execute("command -v dot >/dev/null 2>&1") == true end
  return has_dot
end

-- Runs `dot -T<format>` on text and writes its output to path (whole or
-- not at all: core.write_file), within limits = {time_limit =, memory_limit
-- =} (60 s and 2 GiB by default: `timeout` and `ulimit -v` around dot);
-- raises a clear error when Graphviz is missing, fails or passes a limit,
-- or when a file cannot be written.
function M.render(text, path, format, limits)
  format = format or "svg"
  if type(text) ~= "string" then error("devplan.graph.render: Graphviz text expected, got " .. type(text), 2) end
  if type(path) ~= "string" then error("devplan.graph.render: a file path expected, got " .. type(path), 2) end
  if not format:match("^%a+$") then error("devplan.graph.render: bad format '" .. tostring(format) .. "'", 2) end
  limits = limits or {}
  local seconds = limits.time_limit or 60
  local memory = limits.memory_limit or 2 * 1024 * 1024 * 1024
  if type(seconds) ~= "number" or seconds <= 0 then error("devplan.graph.render: time_limit must be seconds > 0", 2) end
  if math.type(memory) ~= "integer" or memory < 64 << 20 then
    error("devplan.graph.render: memory_limit must be an integer number of bytes, at least 64 MiB", 2)
  end
  if not dot_found() then
    error(core.Error{message = "Graphviz's dot was not found (Debian package graphviz; scripts/setup.sh installs it)",
                     code = "value"}, 2)
  end
  local dotfile, outfile, errfile = os.tmpname(), os.tmpname(), os.tmpname()
  local function cleanup()
    os.remove(dotfile)
    os.remove(outfile)
    os.remove(errfile)
  end
  local ok, err = pcall(core.write_file, dotfile, text)
  if not ok then
    cleanup()
    error(err, 2)
  end
  local inner = string.format("ulimit -v %d 2>/dev/null; exec timeout -k 5 %s dot -T%s -o %s %s",
                              memory // 1024, string.format("%.3f", seconds), format, sh_quote(outfile), sh_quote(dotfile))
  local ran, _, code = os.execute("sh -c " .. sh_quote(inner) .. " 2>" .. sh_quote(errfile))
  local function slurp(p)
    local f = io.open(p, "rb")
    local s = f and f:read("a")
    if f then f:close() end
    return s
  end
  local out, msg = slurp(outfile), slurp(errfile) or ""
  cleanup()
  if not ran then
    local size = report.grouped(select(2, text:gsub("\n", ""))) .. " lines of Graphviz text"
    local first = msg:match("[^\n]*[%w][^\n]*") or ""
    local message
    if code == 124 or code == 137 then
      message = string.format("Graphviz's dot took more than %s seconds to lay out %s and was stopped: draw less "
        .. "(detail \"regions\" or \"devices\", a smaller max_nodes), or raise time_limit", tostring(seconds), size)
    elseif code and code > 125 or msg:find("[Mm]emory") or msg:find("[Aa]llocat") or msg:find("creating thread") then
      message = string.format("Graphviz's dot failed laying out %s under a memory limit of %s (%s): draw less "
        .. "(detail \"regions\" or \"devices\", a smaller max_nodes), or raise memory_limit", size,
        report.human(memory), first ~= "" and first or "status " .. tostring(code))
    else
      message = "Graphviz's dot failed (status " .. tostring(code) .. "): " .. msg
    end
    error(core.Error{message = message, code = "value"}, 2)
  end
  ok, err = pcall(core.write_file, path, out or "")
  if not ok then error(err, 2) end
  return path
end

function M.svg(mod, path, opts)
  if type(path) ~= "string" then error("devplan.graph.svg: a file path expected, got " .. type(path), 2) end
  opts = check(mod, opts, "devplan.graph.svg")
  return M.render(dot_text(mod, M.layout(mod, opts), opts), path, "svg",
                  {time_limit = opts.time_limit, memory_limit = opts.memory_limit})
end

return M
