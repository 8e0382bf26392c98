-- The layers of a folder of C files (by default src/planner): which file
-- uses which, from the #includes of the folder's own headers and from the
-- call sites (any use of a function another file of the folder defines,
-- a call or a function pointer), and whether they form a cycle.
--
--   lua5.4 scripts/planner_layers.lua [FOLDER] [--quiet]
--
-- Prints the files layer by layer, the top first (a file uses only files of
-- the layers below it), each with the files it uses; exits 1 and prints the
-- cycle when there is one. The folder's shared header (planner.h) declares
-- the functions of every file in sections headed "/* ==== NAME.c: ... */";
-- a static inline function of a section belongs to that file. Including a
-- header of the folder other than the shared one is a use of the file of
-- the same name (x.h -> x.c).
--
-- As a module (spec/planner_layers_spec.lua): require it with the folder's
-- files as strings, M.graph{["a.c"] = text, ...}, M.cycle(graph) and
-- M.layers(graph).
local M = {}

-- The text with comments, strings and character literals blanked (newlines
-- kept), and preprocessor lines but #include removed.
local function code_of(text)
  local out, i, n = {}, 1, #text
  while i <= n do
    local j = text:find("[/\"']", i)
    if not j then
      out[#out + 1] = text:sub(i)
      break
    end
    out[#out + 1] = text:sub(i, j - 1)
    local c, d = text:sub(j, j), text:sub(j, j + 1)
    if d == "/*" then
      local k = text:find("*/", j + 2, true) or n - 1
      out[#out + 1] = text:sub(j, k + 1):gsub("[^\n]", " ")
      i = k + 2
    elseif d == "//" then
      i = text:find("\n", j, true) or n + 1
    elseif c == "/" then
      out[#out + 1] = c
      i = j + 1
    else -- a string or character literal
      local k = j + 1
      while k <= n and text:sub(k, k) ~= c do
        if text:sub(k, k) == "\\" then k = k + 1 end
        k = k + 1
      end
      out[#out + 1] = c .. (" "):rep(math.max(0, k - j - 1)) .. c
      i = k + 1
    end
  end
  local lines = {}
  for line in (table.concat(out) .. "\n"):gmatch("(.-)\n") do
    if line:match("^%s*#") and not line:match("^%s*#%s*include") then line = "" end
    lines[#lines + 1] = line
  end
  return table.concat(lines, "\n")
end

local KEYWORDS = {["if"] = true, ["for"] = true, ["while"] = true, ["switch"] = true, ["return"] = true,
                  ["sizeof"] = true, ["_Static_assert"] = true, ["defined"] = true}

-- Calls f(position, token, depth) for each brace and identifier of code, in
-- order (depth: the braces open before it).
local function tokens(code, f)
  local depth, i = 0, 1
  while true do
    local s = code:find("[%w_{}]", i)
    if not s then return end
    local c = code:sub(s, s)
    if c == "{" then
      depth = depth + 1
      i = s + 1
    elseif c == "}" then
      depth = depth - 1
      i = s + 1
    else
      local _, e = code:find("^[%w_]+", s)
      if not c:match("%d") then f(s, e, code:sub(s, e), depth) end
      i = e + 1
    end
  end
end

-- The functions a text defines at file level: {name, pos, static}, in order.
local function definitions(code)
  local defs = {}
  tokens(code, function(s, e, name, depth)
    if depth ~= 0 or KEYWORDS[name] or not code:match("^%s*%(", e + 1) then return end
    -- the parameter list, then "{": a definition
    local j, level = code:find("(", e + 1, true), 0
    repeat
      local ch = code:sub(j, j)
      if ch == "(" then level = level + 1 elseif ch == ")" then level = level - 1 end
      j = j + 1
    until (level == 0 and ch == ")") or j > #code
    if code:match("^%s*{", j) then
      -- its line and the one before (the return type may be there)
      local lines = {}
      for line in (code:sub(math.max(1, s - 400), s - 1) .. "\n"):gmatch("([^\n]*)\n") do
        lines[#lines + 1] = line
      end
      local before = (lines[#lines - 1] or "") .. " " .. lines[#lines]
      defs[#defs + 1] = {name = name, pos = s, static = before:match("%f[%w_]static%f[^%w_]") ~= nil}
    end
  end)
  return defs
end

-- Every identifier used inside function bodies (depth > 0), as a set.
local function uses(code)
  local used = {}
  tokens(code, function(_, _, name, depth)
    if depth > 0 then used[name] = true end
  end)
  return used
end

-- The shared header's sections: {pos, file} in order ("/* ==== NAME.c ...").
local function sections(text)
  local list = {}
  for pos, name in text:gmatch("()/%*%s*=+%s*([%w_]+)%.c[%s:]") do
    list[#list + 1] = {pos = pos, file = name .. ".c"}
  end
  return list
end

local function owner_at(secs, pos)
  local file
  for _, s in ipairs(secs) do
    if s.pos <= pos then file = s.file end
  end
  return file
end

-- files: name -> text (".c" and ".h" files of one folder); shared: the name
-- of the shared header. Returns {files = {sorted .c names}, edges = {file ->
-- {used file -> why}}, outside = {file -> {header ...}}}.
function M.graph(files, shared)
  shared = shared or "planner.h"
  local defined = {}   -- function name -> file
  local cfiles, codes = {}, {}
  for name, text in pairs(files) do
    codes[name] = code_of(text)
    if name:match("%.c$") then cfiles[#cfiles + 1] = name end
  end
  table.sort(cfiles)
  for _, f in ipairs(cfiles) do
    for _, d in ipairs(definitions(codes[f])) do
      if not d.static then defined[d.name] = f end
    end
  end
  -- static inline functions of the headers: the shared one's by section
  for name, text in pairs(files) do
    if name:match("%.h$") then
      local secs = name == shared and sections(text) or {}
      for _, d in ipairs(definitions(codes[name])) do
        local owner = name == shared and owner_at(secs, d.pos) or name:gsub("%.h$", ".c")
        if owner and files[owner] and not defined[d.name] then defined[d.name] = owner end
      end
    end
  end
  local edges, outside = {}, {}
  for _, f in ipairs(cfiles) do
    edges[f], outside[f] = {}, {}
    for inc in files[f]:gmatch('#%s*include%s*"([^"]+)"') do
      if files[inc] and inc ~= shared then
        local target = inc:gsub("%.h$", ".c")
        if target ~= f and files[target] then edges[f][target] = edges[f][target] or ("#include \"" .. inc .. "\"") end
      elseif not files[inc] then
        outside[f][#outside[f] + 1] = inc
      end
    end
    local used = uses(codes[f])
    local names = {}
    for name in pairs(used) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      local target = defined[name]
      if target and target ~= f then edges[f][target] = edges[f][target] or name end
    end
  end
  -- inline functions of the shared header use other files' functions too
  if files[shared] then
    local secs = sections(files[shared])
    local code = codes[shared]
    local defs = definitions(code)
    for _, d in ipairs(defs) do
      local owner = owner_at(secs, d.pos)
      if owner and edges[owner] then
        -- its body: from its "{" to the matching "}"
        local open = code:find("{", d.pos, true)
        local close, depth = open, 0
        repeat
          local ch = code:sub(close, close)
          if ch == "{" then depth = depth + 1 elseif ch == "}" then depth = depth - 1 end
          close = close + 1
        until depth == 0 or close > #code
        for name in pairs(uses(code:sub(open, close - 1))) do
          local target = defined[name]
          if target and target ~= owner then edges[owner][target] = edges[owner][target] or name end
        end
      end
    end
  end
  return {files = cfiles, edges = edges, outside = outside}
end

-- A cycle of g (a list of files, the first repeated at the end), or nil.
function M.cycle(g)
  local state, stack = {}, {}
  for _, start in ipairs(g.files) do
    if not state[start] then
      -- iterative depth-first search: frames {file, sorted targets, next index}
      local frames = {}
      local function push(f)
        local ts = {}
        for t in pairs(g.edges[f] or {}) do ts[#ts + 1] = t end
        table.sort(ts)
        state[f] = "open"
        stack[#stack + 1] = f
        frames[#frames + 1] = {f, ts, 1}
      end
      push(start)
      while #frames > 0 do
        local fr = frames[#frames]
        local t = fr[2][fr[3]]
        if t then
          fr[3] = fr[3] + 1
          if state[t] == "open" then
            local cyc, on = {}, false
            for _, s in ipairs(stack) do
              if s == t then on = true end
              if on then cyc[#cyc + 1] = s end
            end
            cyc[#cyc + 1] = t
            return cyc
          elseif not state[t] then
            push(t)
          end
        else
          state[fr[1]] = "done"
          stack[#stack] = nil
          frames[#frames] = nil
        end
      end
    end
  end
  return nil
end

-- Layers of an acyclic g: layer 0 uses no file of the folder; a file is one
-- above the highest layer it uses. A list of lists of files, layer 0 first.
function M.layers(g)
  local level = {}
  local function lv(f)
    if level[f] then return level[f] end
    -- (acyclic: the recursion is as deep as the layers, a handful)
    local l = 0
    for t in pairs(g.edges[f] or {}) do l = math.max(l, lv(t) + 1) end
    level[f] = l
    return l
  end
  local out = {}
  for _, f in ipairs(g.files) do
    local l = lv(f)
    out[l + 1] = out[l + 1] or {}
    table.insert(out[l + 1], f)
  end
  for i = 1, #out do out[i] = out[i] or {} end
  return out
end

-- The files of a folder: name -> text.
function M.read_folder(dir)
  local files = {}
  local p = assert(io.popen('ls "' .. dir .. '"'))
  for name in p:lines() do
    if name:match("%.[ch]$") then
      local f = assert(io.open(dir .. "/" .. name, "rb"))
      files[name] = f:read("a")
      f:close()
    end
  end
  p:close()
  return files
end

-- The report: the layers top first, each file with what it uses.
function M.report(g)
  local lines = {}
  local layers = M.layers(g)
  for i = #layers, 1, -1 do
    lines[#lines + 1] = ("layer %d: %s"):format(i - 1, table.concat(layers[i], " "))
    for _, f in ipairs(layers[i]) do
      local ts = {}
      for t in pairs(g.edges[f]) do ts[#ts + 1] = t end
      table.sort(ts)
      for k, t in ipairs(ts) do ts[k] = t:gsub("%.c$", "") end
      if #ts > 0 then lines[#lines + 1] = ("  %-20s uses %s"):format(f, table.concat(ts, ", ")) end
    end
  end
  return table.concat(lines, "\n")
end

if arg and arg[0] and arg[0]:match("planner_layers%.lua$") then
  local dir, quiet = "src/planner", false
  for _, a in ipairs(arg) do
    if a == "--quiet" then quiet = true else dir = a end
  end
  local g = M.graph(M.read_folder(dir))
  local cyc = M.cycle(g)
  if cyc then
    local why = {}
    for k = 1, #cyc - 1 do why[#why + 1] = ("%s -> %s (%s)"):format(cyc[k], cyc[k + 1], g.edges[cyc[k]][cyc[k + 1]]) end
    io.stderr:write(("planner_layers: %s: the files form a cycle:\n  %s\n"):format(dir, table.concat(why, "\n  ")))
    os.exit(1)
  end
  if not quiet then print(M.report(g)) end
  print(("%s: %d files in %d layers, no cycle"):format(dir, #g.files, #M.layers(g)))
end

return M
