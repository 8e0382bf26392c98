-- Shrinking the program trees of fuzz/relaygen.lua: every one-step smaller
-- program, their size, and the greedy search that keeps a failure while
-- making its program small.
local M = {}

local function deep_copy(t, seen)
  if type(t) ~= "table" then return t end
  seen = seen or {}
  if seen[t] then return seen[t] end
  local c = {}
  seen[t] = c
  for k, v in pairs(t) do c[k] = deep_copy(v, seen) end
  return c
end

-- The tensor-typed variables a pattern binds.
local function pattern_tvars(p, out)
  if p.p == "var" and p.ty == "T" then out[#out + 1] = p.name end
  for _, a in ipairs(p.args or {}) do pattern_tvars(a, out) end
  return out
end

local function extend(tvars, names)
  local t = {}
  for i = 1, #tvars do t[i] = tvars[i] end
  for _, n in ipairs(names) do t[#t + 1] = n end
  return t
end

local function params_t(params, tvars)
  local names = {}
  for _, p in ipairs(params) do
    if p.ty == "T" then names[#names + 1] = p.name end
  end
  return extend(tvars, names)
end

-- Every slot holding an expression, in a fixed order: {parent, key, expr,
-- tvars, def, block, index}: parent[key] is expr; tvars are the T-typed
-- parameters visible there (replacements that stay in scope); def the
-- definition it is in; a statement's slot also has its block and index
-- (so it can be removed).
local function slots(prog)
  local out = {}
  local def
  local function visit_block(b, tvars)
    for j, st in ipairs(b.stmts) do
      out[#out + 1] = {parent = st, key = "expr", expr = st.expr, tvars = tvars, def = def, block = b, index = j}
    end
    out[#out + 1] = {parent = b, key = "result", expr = b.result, tvars = tvars, def = def}
  end
  for _, d in ipairs(prog.defs) do
    def = d
    visit_block(d.body, params_t(d.params, {}))
  end
  local i = 1
  while i <= #out do -- breadth first over what was collected, adding children
    local e, tvars = out[i].expr, out[i].tvars
    def = out[i].def
    local function child(parent, key)
      out[#out + 1] = {parent = parent, key = key, expr = parent[key], tvars = tvars, def = def}
    end
    if e.k == "op" or e.k == "call" or e.k == "ctor" then
      for j = 1, #e.args do child(e.args, j) end
      if e.k == "call" then child(e, "callee") end
    elseif e.k == "tuple" then
      for j = 1, #e.fields do child(e.fields, j) end
    elseif e.k == "proj" then
      child(e, "tuple")
    elseif e.k == "if" then
      visit_block(e.then_, tvars)
      visit_block(e.else_, tvars)
    elseif e.k == "fn" then
      -- a Primitive function is closed: only its own parameters are in scope
      visit_block(e.body, params_t(e.params, e.attrs and {} or tvars))
    elseif e.k == "match" then
      child(e, "data")
      for _, c in ipairs(e.clauses) do visit_block(c.body, extend(tvars, pattern_tvars(c.pat, {}))) end
    end
    i = i + 1
  end
  return out
end

-- The smallest value of each type that needs no variable.
local LEAVES = {
  L = {k = "ctor", name = "Nil", args = {}, ty = "L"},
  O = {k = "ctor", name = "Nothing", args = {}, ty = "O"},
  I = {k = "const", text = "0i64", ty = "I"},
  H = {k = "const", text = "meta[relay.Constant][1]", ty = "H"},
}

-- Same-typed expressions that could stand for e (its children first).
local function replacements(e, tvars)
  local out = {}
  local function add(x)
    if x and x.ty == e.ty then out[#out + 1] = x end
  end
  if e.k == "op" or e.k == "call" or e.k == "ctor" then
    for _, a in ipairs(e.args) do add(a) end
  elseif e.k == "tuple" then
    for _, f in ipairs(e.fields) do add(f) end
  elseif e.k == "if" then
    add(e.then_.result)
    add(e.else_.result)
  elseif e.k == "match" then
    for _, c in ipairs(e.clauses) do add(c.body.result) end
  elseif e.k == "proj" and e.tuple.k == "tuple" then
    add(e.tuple.fields[e.index + 1])
  end
  local leaf = LEAVES[e.ty]
  if leaf and not (e.k == leaf.k and (e.name or e.text) == (leaf.name or leaf.text)) then add(deep_copy(leaf)) end
  if e.ty == "T" and e.k ~= "var" then
    for _, name in ipairs(tvars) do add({k = "var", name = name, ty = "T"}) end
  end
  return out
end

-- Each candidate is a new program one step smaller: a definition, a
-- primfn or the type definitions removed, an annotation removed, a
-- statement or a match clause removed, an expression replaced by a
-- same-typed child, a leaf or a parameter. Candidates that no longer parse
-- are rejected by the caller (their failure differs).
function M.smaller(prog)
  local cands = {}
  local function push(f)
    local c = deep_copy(prog)
    f(c)
    cands[#cands + 1] = c
  end
  for i = 1, #prog.defs - 1 do
    push(function(c) table.remove(c.defs, i) end)
  end
  for i = 1, #(prog.primfns or {}) do
    push(function(c) table.remove(c.primfns, i) end)
  end
  if prog.adts then push(function(c) c.adts = false end) end
  for di, d in ipairs(prog.defs) do
    if d.vd then push(function(c) c.defs[di].vd = nil end) end
    for pi, p in ipairs(d.params) do
      if p.vd then push(function(c) c.defs[di].params[pi].vd = nil end) end
    end
  end
  for si, s in ipairs(slots(prog)) do
    if s.block then
      push(function(c)
        local cs = slots(c)[si]
        table.remove(cs.block.stmts, cs.index)
      end)
      -- inline: every use of the bound name becomes (a copy of) its value
      if s.parent.name then
        push(function(c)
          local cs = slots(c)[si]
          local name, value = cs.parent.name, cs.expr
          table.remove(cs.block.stmts, cs.index)
          for _, u in ipairs(slots(c)) do
            if u.def == cs.def and u.expr.k == "var" and u.expr.name == name then
              u.parent[u.key] = deep_copy(value)
            end
          end
        end)
      end
    end
    if s.expr.k == "match" and #s.expr.clauses > 1 then
      for ci = 1, #s.expr.clauses do
        push(function(c) table.remove(slots(c)[si].expr.clauses, ci) end)
      end
    end
    for ri = 1, #replacements(s.expr, s.tvars) do
      push(function(c)
        local cs = slots(c)[si]
        cs.parent[cs.key] = replacements(cs.expr, cs.tvars)[ri]
      end)
    end
  end
  return cands
end

-- Size of a program (expression slots, definitions, primfns, match
-- clauses and annotations): the shrinker only accepts smaller ones.
function M.size(prog)
  local all = slots(prog)
  local n = #all + #prog.defs + #(prog.primfns or {}) + (prog.adts and 1 or 0)
  for _, d in ipairs(prog.defs) do
    if d.vd then n = n + 1 end
    for _, p in ipairs(d.params) do
      if p.vd then n = n + 1 end
    end
  end
  for _, s in ipairs(all) do
    if s.expr.attrs then n = n + 1 end
    if s.expr.k == "match" then n = n + #s.expr.clauses end
  end
  return n
end

-- Greedy shrinking: take the first one-step-smaller program for which
-- fails(program) still holds, until none does (or max_steps candidates
-- were tried, default 3000).
function M.shrink(prog, fails, max_steps)
  local size, steps, progress = M.size(prog), 0, true
  while progress and steps < (max_steps or 3000) do
    progress = false
    for _, cand in ipairs(M.smaller(prog)) do
      steps = steps + 1
      local csize = M.size(cand)
      if csize < size and fails(cand) then
        prog, size, progress = cand, csize, true
        break
      end
    end
  end
  return prog
end

return M
