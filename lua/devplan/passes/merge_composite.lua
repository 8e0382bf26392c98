-- MergeComposite and MergeAndAnnotate: a table of rules {name, pattern,
-- check?} (and, for MergeAndAnnotate, device) applied to every global
-- function, written in Lua over the C grouping of dp.pattern (src/pattern).
--
--   dp.passes.MergeComposite{ {name = "conv_bias_relu", pattern = p, check = f}, ... }
--   dp.passes.MergeAndAnnotate{ {name = "conv_bias_relu", pattern = p, device = npu}, ... }
--
-- Both group as TVM's MergeComposite does: the rules one after another in
-- table order, each over the whole function; within a rule, candidate
-- roots from the output toward the inputs, the first (outermost) match
-- wins, groups that overlap or whose inner nodes escape are rejected
-- (dataflow_matcher.cc's PatternGrouper); check(root), when given, must
-- return true for a group to be taken (its nodes stay reserved for that
-- rule either way). A group taken by an earlier rule is opaque to later
-- ones.
--
-- MergeComposite hoists each group into a function literal with the
-- attributes Composite = name and PartitionedFromPattern (the group's
-- operators: "nn.conv2d_nn.bias_add_nn.relu_"), called where the group
-- was with the group's inputs; constants matched by P.const() or a
-- constant P.expr stay inside, any other input is a parameter. A node
-- inside a group also used outside it, by a node the group's root
-- post-dominates, is duplicated: the outside user keeps the original.
--
-- MergeAndAnnotate keeps each group in place and places it on its rule's
-- device (src/pattern/annotate.c): every call of the group becomes
-- on_device(call, virtual_device=device) and the group reads its inputs
-- through on_device(input, virtual_device=device, constrain_body=False,
-- constrain_result=True). After PlanDevices every call of the group runs
-- on the device, and only what enters or leaves the group is copied. A
-- node inside a group that is also used outside it cannot be duplicated
-- by annotating: it runs on the group's device too, and its outside users
-- read it through a copy when they run elsewhere. A fallback for every
-- other call, as AnnotateVirtualDevices' "*" (a VirtualDevice, or a
-- function(call) returning one or nil), goes in the same table:
--   dp.passes.MergeAndAnnotate{ {name =, pattern =, device = npu}, ["*"] = cpu }
-- It places the calls no group took and no earlier annotation placed. A
-- group whose root an earlier annotation placed is not taken (the first
-- pass to place a call wins), so running the pass twice changes nothing.
local core = require "devplan.core"
local ir = require "devplan.ir"
local pass = require "devplan.pass"
local pattern = require "devplan.pattern"

local C = core.pattern
local error, ipairs, pairs, pcall, rawequal, require = error, ipairs, pairs, pcall, rawequal, require
local tostring, type = tostring, type
local math, table = math, table
_ENV = nil -- no global is read or written below this line

local M = {}

-- The rules, checked; each gets its compiled program and a name for messages.
local function check_rules(who, rules, need_device, level)
  if type(rules) ~= "table" then
    error(who .. ": a list of rules {name =, pattern =, check =?} expected, got " .. type(rules), level + 1)
  end
  for k in pairs(rules) do
    local fallback = need_device and k == "*"
    if not fallback and (math.type(k) ~= "integer" or k < 1 or k > #rules) then
      error(("%s: a list of rules expected, got the key '%s'%s"):format(who, tostring(k),
        need_device and " (\"*\" names the fallback for every other call)" or ""), level + 1)
    end
  end
  local out = {}
  for i, r in ipairs(rules) do
    local where = ("%s: rule %d"):format(who, i)
    if type(r) ~= "table" then error(where .. " must be a table {name =, pattern =}", level + 1) end
    if type(r.name) ~= "string" or r.name == "" then error(where .. " needs a name (a string)", level + 1) end
    where = ("%s: rule %d ('%s')"):format(who, i, r.name)
    if not pattern.is_pattern(r.pattern) then
      error(where .. ": pattern must be a pattern (dp.pattern), got " .. type(r.pattern), level + 1)
    end
    if r.check ~= nil and type(r.check) ~= "function" then
      error(where .. ": check must be a function(root), got " .. type(r.check), level + 1)
    end
    if need_device and not ir.is_virtual_device(r.device) then
      error(where .. ": device must be a VirtualDevice, got " .. type(r.device), level + 1)
    end
    out[i] = {name = r.name, check = r.check, device = r.device, prog = pattern.compile(r.pattern),
              what = ("%s rule '%s'"):format(who, r.name)}
  end
  if #out == 0 and rules["*"] == nil then error(who .. ": no rules", level + 1) end
  return out
end

-- MergeAndAnnotate's fallback: an AnnotateVirtualDevices pass for "*", or nil.
local function fallback(rules, level)
  local f = rules["*"]
  if f == nil then return nil end
  if ir.is_virtual_device(f) then
    local vd = f
    f = function() return vd end
  elseif type(f) ~= "function" then
    error("MergeAndAnnotate: the fallback \"*\" must be a VirtualDevice or a function(call), got " .. type(f),
      level + 1)
  end
  return require("devplan.passes.annotate_virtual_devices").new{["*"] = f}
end

-- keep[i]: does rule's check take group i? A check's error names the rule.
local function checked(rule, groups)
  local keep = {}
  for i = 1, #groups do
    if rule.check == nil then
      keep[i] = true
    else
      local ok, r = pcall(rule.check, groups:root(i))
      if not ok then C.raise("callback", rule.what .. ": the check function raised an error: " .. tostring(r)) end
      keep[i] = r and true or false
    end
  end
  return keep
end

-- Global functions the rules apply to (not primitive ones: they are
-- lowered already).
local function each_function(mod, f)
  for _, nf in ipairs(mod:functions()) do
    local attrs = nf[2].attrs
    if not (attrs and attrs.Primitive == 1) then f(nf[1]) end
  end
end

local function describe(rules)
  local names = {}
  for i, r in ipairs(rules) do names[i] = r.name end
  return table.concat(names, ",")
end

function M.MergeComposite(rules)
  local rs = check_rules("MergeComposite", rules, false, 2)
  return pass.new("MergeComposite", function(mod)
    each_function(mod, function(name)
      for _, rule in ipairs(rs) do
        local body = mod[name].body
        local groups = rule.prog:groups(body, nil, rule.what)
        if #groups > 0 then
          local merged = groups:composite(checked(rule, groups), rule.name)
          if not rawequal(merged, body) then
            -- typed again before the next rule: its checks read the types
            mod = mod:with_function(name, C.with_body(mod[name], merged))
            core.infer_expr(mod[name], mod)
          end
        end
      end
    end)
    return mod
  end, {rules = describe(rs)})
end

function M.MergeAndAnnotate(rules)
  local rs = check_rules("MergeAndAnnotate", rules, true, 2)
  local rest = fallback(rules, 2)
  return pass.new("MergeAndAnnotate", function(mod, ctx)
    -- calls an earlier annotation placed stay where it put them
    local placed = require("devplan.passes.annotate_virtual_devices").already_placed(mod)
    each_function(mod, function(name)
      local body = mod[name].body
      local opaque, sets, graph = C.opaque(), {}, C.graph(body)
      for _, rule in ipairs(rs) do
        local groups = rule.prog:groups(body, opaque, rule.what, graph)
        if #groups > 0 then
          local keep = checked(rule, groups)
          for i = 1, #groups do
            if placed[groups:root(i)] then keep[i] = false end
          end
          groups:block(opaque, keep)
          sets[#sets + 1] = {groups, keep, rule.device}
        end
      end
      if #sets > 0 then
        mod = mod:with_function(name, C.with_body(mod[name], C.annotate(body, sets)))
        core.infer_expr(mod[name], mod)
      end
    end)
    if rest then mod = ctx:run(rest, mod) end
    return mod
  end, {rules = describe(rs) .. (rest and (#rs > 0 and ",*" or "*") or "")})
end

return M
