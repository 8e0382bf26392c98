-- The schedule of a plan as a Gantt chart in SVG, one row per device and
-- per link, time to the right (s:svg(), s:write_svg(path), devplan plan
-- --gantt FILE.svg). Written here, no tool needed.
--
-- Each task is a bar from its start to its finish with a tooltip (what,
-- where, when); calls are coloured by operator, copies red; the tasks of
-- the critical path are outlined. Past opts.max_bars bars (default 20,000)
-- a row's bars that touch on the drawing merge into one, so a million-call
-- schedule stays a readable (and small) picture.
local error, ipairs, pairs, tostring = error, ipairs, pairs, tostring
local io, math, string, table = io, math, string, table
_ENV = nil -- no global is read or written below this line

local M = {}

local ROW, LABEL, WIDTH, TOP = 26, 170, 1000, 46

local COLOURS = {"#4e79a7", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
                 "#f28e2b", "#bab0ac", "#86bcb6", "#8cd17d", "#d4a6c8", "#a0cbe8"}

local function esc(s)
  return (tostring(s):gsub("[&<>\"]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;"}))
end

-- A step of 1, 2 or 5 times a power of ten giving about n ticks over span.
local function tick_step(span, n)
  if span <= 0 then return 1 end
  local raw = span / n
  local p = 10 ^ math.floor(math.log(raw, 10))
  for _, m in ipairs{1, 2, 5, 10} do
    if m * p >= raw then return m * p end
  end
  return 10 * p
end

local function op_colour(colours, name)
  local c = colours[name]
  if not c then
    colours.n = (colours.n or 0) + 1
    c = COLOURS[(colours.n - 1) % #COLOURS + 1]
    colours[name] = c
  end
  return c
end

-- The chart of schedule s; text: how the schedule names its pieces and
-- writes times ({names = its namer, time = format_time}, devplan.schedule).
function M.svg(s, text, opts)
  opts = opts or {}
  local names, format_time = text.names, text.time
  local ms = s.makespan > 0 and s.makespan or 1
  local max_bars = opts.max_bars or 20000
  local merge = #s.tasks > max_bars
  local rows, row_of = {}, {}
  for i, r in ipairs(s.resources) do
    rows[i] = r
    row_of[r] = i
  end
  local height = TOP + #rows * ROW + 40
  local out = {}
  local function add(x) out[#out + 1] = x end
  add(string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">',
                    LABEL + WIDTH + 20, height))
  add(string.format('<rect width="100%%" height="100%%" fill="white"/>'))
  local title = opts.title or "schedule"
  add(string.format('<text x="8" y="16" font-size="13" font-weight="bold">%s: makespan %s (modelled)</text>',
                    esc(title), esc(format_time(s.makespan))))
  -- axis
  local step = tick_step(ms, 10)
  local t = 0
  while t <= ms * 1.0000001 do
    local x = LABEL + t / ms * WIDTH
    add(string.format('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>', x, TOP - 6, x, TOP + #rows * ROW))
    add(string.format('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>', x, TOP - 10,
                      esc(format_time(t, ms))))
    t = t + step
  end
  for i, r in ipairs(rows) do
    local y = TOP + (i - 1) * ROW
    if i % 2 == 0 then
      add(string.format('<rect x="%d" y="%d" width="%d" height="%d" fill="#f6f6f6"/>', LABEL, y, WIDTH, ROW))
    end
    local busy = string.format("%.0f%%", 100 * r.busy / ms)
    add(string.format('<text x="8" y="%d">%s</text><text x="%d" y="%d" text-anchor="end" fill="#777">%s</text>',
                      y + ROW // 2 + 4, esc(names.resource(r)), LABEL - 6, y + ROW // 2 + 4, busy))
  end
  local critical = {}
  for _, c in ipairs(s.critical) do critical[c.task] = true end
  local colours = {}
  local open = {} -- per row, merging: {x0, x1, colour}
  local function flush(i)
    local o = open[i]
    if not o then return end
    local y = TOP + (i - 1) * ROW + 3
    add(string.format('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"/>', o[1], y, math.max(o[2] - o[1], 0.5),
                      ROW - 6, o[3]))
    open[i] = nil
  end
  for _, task in ipairs(s.tasks) do
    local i = row_of[task.resource]
    local x0 = LABEL + task.start / ms * WIDTH
    local x1 = LABEL + task.finish / ms * WIDTH
    local name = task.kind == "copy" and "device_copy" or names.task(task):match("^(%S+)")
    local colour = task.kind == "copy" and "#e15759" or op_colour(colours, name)
    if merge then
      local o = open[i]
      if o and x0 <= o[2] + 0.5 then
        if x1 > o[2] then o[2] = x1 end
      else
        flush(i)
        open[i] = {x0, x1, task.kind == "copy" and "#e15759" or "#4e79a7"}
      end
    else
      local y = TOP + (i - 1) * ROW + 3
      local w = math.max(x1 - x0, 0.5)
      local tip = string.format("%s on %s: %s to %s", names.task(task), names.resource(task.resource),
                                format_time(task.start, ms), format_time(task.finish, ms))
      add(string.format('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"%s><title>%s</title></rect>',
                        x0, y, w, ROW - 6, colour,
                        critical[task] and ' stroke="black" stroke-width="1.5"' or ' stroke="white" stroke-width="0.3"',
                        esc(tip)))
      local label = names.task(task):match("^(%S+)"):gsub("^nn%.", "")
      if w > #label * 6.2 + 4 then
        add(string.format('<text x="%.2f" y="%d" fill="white" pointer-events="none">%s</text>', x0 + 2,
                          y + ROW // 2 + 1, esc(label)))
      end
    end
  end
  for i in pairs(open) do flush(i) end
  local y = TOP + #rows * ROW + 22
  add(string.format('<text x="8" y="%d" fill="#555">%s; bars outlined in black: the critical path; '
    .. 'red: copies. Modelled times: no device ran anything.</text>', y,
    merge and "bars merged where they touch (many tasks)" or "one bar per task (hover: what and when)"))
  add("</svg>")
  return table.concat(out, "\n") .. "\n"
end

-- Writes the chart to path; a failed write is an error naming the file.
function M.write(s, text, path, opts)
  local svg = M.svg(s, text, opts)
  local f, why = io.open(path, "wb")
  if not f then error("devplan: cannot write " .. tostring(why), 0) end
  local ok, werr = f:write(svg)
  local closed, cerr = f:close()
  if not ok or not closed then
    error("devplan: cannot write " .. path .. ": " .. tostring(werr or cerr), 0)
  end
  return true
end

return M
