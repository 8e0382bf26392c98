-- dp.graph: the dataflow graph of a module as Graphviz text.
--
--   local text = dp.graph.dot(mod, {config =, params = true, title =}?)
--   dp.graph.svg(mod, path, opts?)   -- runs Graphviz's `dot` (Debian: graphviz)
--
-- One node per call, tuple, projection, parameter, constant and control
-- node (if, match, let, function literal), labelled with its printed name
-- (`%12`) and operator; nodes are filled with the colour of their device
-- (a legend lists the devices). on_device is drawn as no node: the edge
-- goes through it. A device_copy is drawn as no node either, but as a
-- bold dashed red edge from the value to its user, labelled with the
-- bytes copied and the two devices. Each global function is a cluster.
-- Parameters are drawn for functions of at most 12 of them (a model's
-- weights would crowd the picture), or as opts.params says.
-- Devices come from dp.planner.virtual_devices (where planning puts
-- each value, with opts.config or the planner's default configuration);
-- a module that does not plan (a conflict) is drawn in grey.
local core = require "devplan.core"
local ir = require "devplan.ir"
local devname = require "devplan.devname"
local report = require "devplan.report"

local M = {}

-- Fill colours for devices in order of first use (then grey for the rest).
local PALETTE = {"#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5", "#ffffb3"}
local UNKNOWN = "#eeeeee"

local function q(s) return '"' .. tostring(s):gsub('[\\"]', "\\%0"):gsub("\n", "\\n") .. '"' end

local function is_op(e, name)
  return e.kind == "call" and e.callee.kind == "op" and e.callee.name == name
end

local function human(n)
  if not n then return "? bytes" end
  if n >= 1 << 20 then return string.format("%.1f MiB", n / (1 << 20)) end
  if n >= 1 << 10 then return string.format("%.1f KiB", n / (1 << 10)) end
  return n .. " B"
end

local OPTIONS = {config = true, params = true, title = true}

local function check(mod, opts, who)
  if not ir.is_module(mod) then error(who .. ": an IRModule expected, got " .. type(mod), 3) end
  opts = opts or {}
  if type(opts) ~= "table" then error(who .. ": options must be a table", 3) end
  for k in pairs(opts) do
    if not OPTIONS[k] then error(who .. ": unknown option '" .. tostring(k) .. "' (config, params, title)", 3) end
  end
  return opts
end

-- The label of node e: its printed name and what it is.
local function label(e, name)
  local what
  if e.kind == "call" then
    local c = e.callee
    what = c.kind == "op" and c.name or c.kind == "global" and ("@" .. c.name)
      or c.kind == "ctor" and c.name or "call"
  elseif e.kind == "var" then
    what = ""
  elseif e.kind == "const" then
    what = e.ndim == 0 and tostring(e.value) or "constant"
  elseif e.kind == "proj" then
    what = "." .. e.index
  else
    what = e.kind
  end
  -- a call made for an imported ONNX node (a span with no column) names it
  local s = e.kind == "call" and e.span
  if s and s.col == 0 and s.source then what = what .. "\n" .. s.source end
  if name and what ~= "" then return name .. "\n" .. what end
  return name or what
end

function M.dot(mod, opts)
  opts = check(mod, opts, "devplan.graph.dot")
  local ok, devices = pcall(core.planner.virtual_devices, mod, opts.config)
  if not ok then devices = {} end -- a module that does not plan: no colours
  local _, printed = core.astext(mod, {names = true})
  local namer = devname.namer()
  local ids, n = {}, 0
  local out = {"digraph devplan {",
    '  graph [rankdir=TB, fontname="Helvetica", newrank=true' .. (opts.title and (", label=" .. q(opts.title)) or "") .. "];",
    '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, fillcolor="' .. UNKNOWN .. '"];',
    '  edge [color="#555555", arrowsize=0.6];'}
  local function add(s) out[#out + 1] = s end
  local function colour(e)
    local vd = devices[e]
    if not vd or vd:is_fully_unconstrained() then return UNKNOWN end
    namer(vd)
    for i, d in ipairs(namer.list) do
      if d == vd then return PALETTE[(i - 1) % #PALETTE + 1] end
    end
  end
  local edges = {}
  -- where an edge into a user starts: through on_device, through copies (marked)
  local function source(e)
    local copy
    while true do
      if is_op(e, "on_device") then e = e.args[1]
      elseif is_op(e, "device_copy") and not copy then copy = e; e = e.args[1]
      else return e, copy end
    end
  end
  local function node(e, name, fn_cluster)
    if ids[e] then return ids[e] end
    n = n + 1
    local id = "n" .. n
    ids[e] = id
    local shape = e.kind == "var" and ', shape=ellipse' or e.kind == "const" and ', shape=note' or ""
    fn_cluster[#fn_cluster + 1] = "    " .. id .. " [label=" .. q(label(e, name)) .. ", fillcolor=\"" .. colour(e)
      .. "\"" .. shape .. "];"
    return id
  end
  for fi, nf in ipairs(mod:functions()) do
    local fname, fn = nf[1], nf[2]
    local names = {}
    for nm, e in pairs(printed[fname] or {}) do names[e] = nm end
    local cluster = {}
    local is_param, show_params = {}, nil
    for _, p in ipairs(fn.params) do is_param[p] = true end
    local function visit_edges(e)
      if is_op(e, "on_device") or is_op(e, "device_copy") then return end
      local kids = core.children(e)
      for _, k in ipairs(kids) do
        if k.kind ~= "op" and k.kind ~= "global" and k.kind ~= "ctor" then
          local src, copy = source(k)
          if src.kind ~= "op" and (show_params or not is_param[src]) then
            edges[#edges + 1] = {from = src, to = e, copy = copy}
          end
        end
      end
    end
    show_params = opts.params
    if show_params == nil then show_params = #fn.params <= 12 end
    if show_params then
      for _, p in ipairs(fn.params) do node(p, "%" .. p.name, cluster) end
    end
    core.visit(fn.body, function(e)
      if e.kind == "op" or e.kind == "global" or e.kind == "ctor" then return end
      if is_op(e, "on_device") or is_op(e, "device_copy") then return end
      if is_param[e] and not show_params then return end
      node(e, names[e], cluster)
      visit_edges(e)
    end)
    add("  subgraph cluster_" .. fi .. " {")
    add('    label=' .. q("@" .. fname) .. '; style="rounded"; color="#999999"; fontname="Helvetica";')
    for _, l in ipairs(cluster) do add(l) end
    add("  }")
  end
  for _, ed in ipairs(edges) do
    local a, b = ids[ed.from], ids[ed.to]
    if a and b then
      if ed.copy then
        local bytes = report.bytes_of(ed.copy.checked_type)
        local s, d = ed.copy.attrs.src_virtual_device, ed.copy.attrs.dst_virtual_device
        add("  " .. a .. " -> " .. b .. " [color=\"#d62728\", penwidth=2.5, style=dashed, fontcolor=\"#d62728\", "
          .. "fontsize=9, label=" .. q("copy " .. human(bytes) .. "\n@" .. namer(s) .. " -> @" .. namer(d)) .. "];")
      else
        add("  " .. a .. " -> " .. b .. ";")
      end
    end
  end
  if #namer.list > 0 then
    add("  subgraph cluster_legend {")
    add('    label="devices"; style="rounded"; color="#999999"; fontname="Helvetica";')
    for i, vd in ipairs(namer.list) do
      add("    legend" .. i .. " [label=" .. q("@" .. namer(vd) .. "\n" .. tostring(vd)) .. ", fillcolor=\""
        .. PALETTE[(i - 1) % #PALETTE + 1] .. "\"];")
    end
    add("  }")
  end
  add("}")
  return table.concat(out, "\n") .. "\n"
end

-- Runs `dot -T<format>` on text, writing path; raises a clear error when
-- Graphviz is missing or fails.
function M.render(text, path, format)
  format = format or "svg"
  if not format:match("^%a+$") then error("devplan.graph.render: bad format '" .. tostring(format) .. "'", 2) end
  local dotfile = os.tmpname()
  local f = assert(io.open(dotfile, "w"))
  f:write(text)
  f:close()
  local errfile = os.tmpname()
  local cmd = "dot -T" .. format .. " -o '" .. path:gsub("'", "'\\''") .. "' '" .. dotfile .. "' 2>'" .. errfile .. "'"
  local ok, _, code = os.execute(cmd)
  local ef = io.open(errfile)
  local err = ef and ef:read("a") or ""
  if ef then ef:close() end
  os.remove(dotfile)
  os.remove(errfile)
  if not ok then
    if code == 127 then
      error(core.Error{message = "Graphviz's dot was not found (Debian package graphviz; scripts/setup.sh installs it)",
                       code = "value"}, 2)
    end
    error(core.Error{message = "dot failed (status " .. tostring(code) .. "): " .. err, code = "value"}, 2)
  end
  return path
end

function M.svg(mod, path, opts)
  if type(path) ~= "string" then error("devplan.graph.svg: a file path expected, got " .. type(path), 2) end
  return M.render(M.dot(mod, opts), path, "svg")
end

return M
