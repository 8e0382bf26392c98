-- The API fuzzer: random programs of calls to every function and method of
-- the `dp` module (IR, types, parsing and metadata, patterns, passes,
-- pipelines, pass contexts and instruments, the planner and its placement
-- options, reports, graphs), with typed arguments (values earlier calls
-- made) and random ones (numbers at the edges, huge and odd strings, deep
-- and self-referencing tables, wrong kinds of objects), callbacks that
-- raise, yield, re-enter the library or hold on to the nodes they are
-- given, deep values (expressions, patterns, Sequentials 100,000 deep), and
-- allocation failure armed on a share of the calls.
--
--   bin/devplan fuzz/apifuzz.lua [--seed S] [--batches N] [--seconds T] [--calls K]
--                                [--alloc P] [--out DIR] [--current FILE] [--quiet]
--
-- A batch is K calls (default 40) generated from its seed as Lua source,
-- run by fuzz/apifuzz_rt.lua; batches S, S+1, ... run until N are done
-- (default 100) or T seconds passed. A batch that finds something (a raw
-- error, a Lua state that no longer works) is written to DIR (default
-- fuzz/failures/) as apifuzz-SEED.lua, a reproducer that exits 1 while the
-- defect is there; with --current, each batch's source is written to FILE
-- before it runs, so that the driver (fuzz/apifuzz.sh) keeps the batch of a
-- crash, a sanitizer report or a hang. The last line is "N passed, N failed"
-- (batches).
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
local relaygen = require "relaygen"
local rt = require "apifuzz_rt"
local runner = require "runner"

local M = {}

-- ------------------------------------------------------------ the prelude of every batch

-- Values every batch starts with (named, so the source reads well), also
-- put in the pool.
M.PRELUDE = [[
local dp = require "devplan"
package.path = dp.root .. "/fuzz/?.lua;" .. package.path
local rt = require "apifuzz_rt"
local P = dp.pattern
local pick, cb = rt.pick, rt.callback
local T = dp.type.tensor({5, 7}, "float32")
local HOST = dp.Target("llvm")
local CPU = dp.VirtualDevice{device_type = "cpu", virtual_device_id = 0, target = dp.Target("llvm"):with_host(HOST)}
local GPU = dp.VirtualDevice{device_type = "cuda", virtual_device_id = 0, target = dp.Target("cuda"):with_host(HOST)}
local CFG = dp.CompilationConfig{targets = {CPU.target, GPU.target}, default_device_type = "cuda"}
local META = {VirtualDevice = {CPU, GPU}}
local TEXT = [=[
def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32], %c: bool) {
  %0 = add(%a, %b);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
  let %f = fn (%x: Tensor[(5, 7), float32]) { negative(%x) };
  %2 = if (%c) { %f(%1) } else { exp(%a) };
  %3 = (%2, multiply(%1, %b));
  subtract(%3.0, nn.relu(%3.1))
}
]=]
local MOD = dp.parse(TEXT, META)
local PLANNED = dp.passes.PlanDevices(CFG)(MOD)
local PAT = P.op("add")(P.wild(), P.wild())
rt.add(MOD); rt.add(PLANNED); rt.add(CFG); rt.add(CPU); rt.add(GPU); rt.add(T); rt.add(PAT)
rt.add(MOD:get("main")); rt.add(MOD:get("main").body); rt.add(dp.passes.InferType()); rt.add(dp.PassContext{})
rt.add(TEXT); rt.add(dp.planner.analyze(PLANNED, CFG))
]]

-- ------------------------------------------------------------ generating source

local G = {}
G.__index = G

local function q(s) return ("%q"):format(s) end

local OPS = {"add", "negative", "multiply", "subtract", "exp", "nn.relu", "nn.conv2d", "nn.dense", "concatenate",
             "on_device", "device_copy", "nn.bias_add", "reshape", "sum", "split", "nn.max_pool2d", "zeros",
             "cast", "layout_transform", "vm.shape_of", "memory.alloc_storage", "no.such.op"}

local TEXTS = {
  "TEXT",
  q"def @main(%x: Tensor[(2), float32]) { negative(%x) }",
  q"def @main(%x: Tensor[(2, 3), float32]) { %0 = (%x, %x); %1 = %0.1; add(%1, 1f) }",
  q"fn (%x: Tensor[(2), float32]) { let %y = negative(%x); %y }",
  q"def @main(%x: Tensor[(2), float32], %c: bool) { if (%c) { %x } else { on_device(%x, virtual_device=meta[VirtualDevice][1]) } }",
  q'type List[A] { Cons(A, List[A]), Nil, }\ndef @main(%l: List[Tensor[(2), float32]]) { match (%l) { Cons(%h, _) => %h, Nil => zeros(shape=[2], dtype="float32"), } }',
  q"def @main(%x: Tensor[(2), float32]) { %0 = ref(%x); ref_write(%0, negative(%x)); ref_read(%0) }",
  q"def @main(%x: Tensor[(2), float32]) { device_copy(%x, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]) }",
  q'def @main() { meta[relay.Constant][0] }\n#[metadata]\n{"root": 1, "nodes": [{"type_key": ""}, {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]}, {"type_key": "Array", "data": [3]}, {"type_key": "relay.Constant", "attrs": {"data": "0", "span": "0", "virtual_device_": "0"}}], "b64ndarrays": ["P6G0lvBAXt0AAAAAAAAAAAEAAAAAAAAAAQAAAAIgAQACAAAAAAAAAAgAAAAAAAAAAACAPwAAAEA="], "attrs": {"tvm_version": "0.8.0"}}',
  q"def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) { nn.relu(nn.conv2d(%x, %w, padding=[1, 1, 1, 1])) }",
}

local JUNK = {
  "nil", "true", "false", "0", "-1", "1", "7", "math.mininteger", "math.maxinteger", "0/0", "-(0/0)", "math.huge",
  "-math.huge", "1e308", "0.5", "2^53", "-2^63", '""', '"x"', '("a"):rep(1 << 20)', '"\\0"', '"%s%d%n"',
  '"\\xff\\xfe"', '"main"', '"cuda"', '"cpu"', '"add"', "{}", "{1, 2, 3}", '{"a", "b"}', "{x = 1}",
  "rt.deep_table(100000)", "rt.deep_table(200)", "rt.self_table()", "print", "io.stdout",
  "coroutine.create(print)", "setmetatable({}, {__index = function() error('FUZZCB index', 0) end})",
  "rt.bad_error_object()", "dp", "dp.NONE", "T", "HOST", "CPU", "GPU", "CFG", "META", "MOD", "PLANNED", "PAT",
}

local KINDS = {"any", "expr", "module", "type", "pattern", "pass", "ctx", "vdev", "target", "config",
               "string", "function", "table", "domains", "number"}

function G:below(n) return self.rng:below(n) end
function G:chance(p) return self.rng:chance(p) end
function G:pick(list) return self.rng:pick(list) end

function G:junk() return self:pick(JUNK) end

function G:size()
  local r = self:below(10)
  if r == 0 then return 100000 end
  if r <= 2 then return 10000 + self:below(20000) end
  return 1 + self:below(2000)
end

function G:callback()
  local kind = self:pick{"raise", "raise_table", "raise_bad", "yield", "reenter", "hold", "collect", "return",
                         "return", "return"}
  return ("cb(%q, %s)"):format(kind, self:value("any", 1))
end

-- A value from the pool: the k-th of its kind (rt.pick resolves it when the
-- call runs), or the prelude's default of that kind.
function G:pooled(kind) return ("pick(%q, %d)"):format(kind, self:below(1 << 20)) end

function G:text()
  local t = self:pick(TEXTS)
  if self:chance(0.4) then t = ("rt.mutate(%s, %d)"):format(t, self:below(1 << 30)) end
  return t
end

function G:expr(depth)
  local r = self:below(12)
  if depth <= 0 or r < 3 then return self:pooled("expr") end
  if r == 3 then return ("dp.var(%s, %s)"):format(self:chance(0.8) and q("v" .. self:below(9)) or self:junk(),
    self:chance(0.7) and self:type(depth - 1) or self:junk()) end
  if r == 4 then
    local args = {}
    for i = 1, self:below(4) do args[i] = self:expr(depth - 1) end
    return ("dp.call(%q, {%s}%s)"):format(self:pick(OPS), table.concat(args, ", "),
      self:chance(0.3) and (", " .. self:attrs()) or "")
  end
  if r == 5 then return ("dp.const(%s)"):format(self:pick{"1", "0.5", "true", "{{1, 2}, {3, 4}}", "{}",
    "math.huge", "math.mininteger", self:junk()}) end
  if r == 6 then return ("dp.tuple{%s, %s}"):format(self:expr(depth - 1), self:expr(depth - 1)) end
  if r == 7 then return ("dp.if_(%s, %s, %s)"):format(self:expr(depth - 1), self:expr(depth - 1), self:expr(depth - 1)) end
  if r == 8 then return ("dp.fn({%s}, %s)"):format(self:expr(0), self:expr(depth - 1)) end
  if r == 9 then return ("(rt.deep_expr(%q, %d))"):format(self:pick{"call", "tuple", "if", "let", "fn"}, self:size()) end
  if r == 10 then return ("dp.proj(%s, %s)"):format(self:expr(depth - 1), self:pick{"0", "1", "-1", "math.maxinteger"}) end
  return ("dp.let(%s, %s, %s)"):format(self:expr(0), self:expr(depth - 1), self:expr(depth - 1))
end

function G:attrs()
  local items = {}
  for _ = 1, self:below(3) do
    items[#items + 1] = ("[%s] = %s"):format(self:pick{q"virtual_device", q"axis", q"padding", q"dtype",
      q"src_virtual_device", q"dst_virtual_device", "1", q"constrain_body"}, self:chance(0.5) and self:vdev(0)
      or self:junk())
  end
  return "{" .. table.concat(items, ", ") .. "}"
end

function G:type(depth)
  local r = self:below(6)
  if depth <= 0 or r == 0 then return self:pick{"T", self:pooled("type")} end
  if r == 1 then return ("dp.type.tensor({%s}, %s)"):format(self:pick{"5, 7", "", "-1", "0", "math.maxinteger", "1, 2, 3"},
    self:pick{q"float32", q"int64", q"bool", q"float16", q"nope", self:junk()}) end
  if r == 2 then return ("dp.type.tuple{%s, %s}"):format(self:type(depth - 1), self:type(depth - 1)) end
  if r == 3 then return ("dp.type.func({%s}, %s)"):format(self:type(depth - 1), self:type(depth - 1)) end
  if r == 4 then return ("dp.parse_type(%s)"):format(self:pick{q"Tensor[(5, 7), float32]", q"(Tensor[(1), int8],)",
    q"fn (int64) -> bool", q"Tensor[(?, 3), float32]", q"Tensor[(", self:junk()}) end
  return ("dp.type.ref(%s)"):format(self:type(depth - 1))
end

function G:vdev(depth)
  if depth <= 0 or self:chance(0.6) then return self:pick{"CPU", "GPU", self:pooled("vdev")} end
  return ("dp.VirtualDevice{device_type = %s, virtual_device_id = %s, memory_scope = %s}"):format(
    self:pick{q"cpu", q"cuda", q"opencl", "1", "2", q"nope", self:junk()},
    self:pick{"0", "1", "-1", "math.maxinteger", self:junk()}, self:pick{q"", q"global", q"scopeA", self:junk()})
end

function G:config(depth)
  if depth <= 0 or self:chance(0.5) then return self:pick{"CFG", self:pooled("config")} end
  return ("dp.CompilationConfig{targets = %s, default_device_type = %s, bandwidth = %s}"):format(
    self:pick{"{CPU.target, GPU.target}", q"llvm, cuda", "{}", q"cuda", self:junk()},
    self:pick{"nil", q"cuda", q"cpu", "0", "-1", self:junk()},
    self:pick{"nil", "1e9", "-1", "0/0", "math.huge", '{["cpu->cuda"] = 1e9, default = 5e9}', '{["x->y"] = 1}',
              self:junk()})
end

function G:pattern(depth)
  local r = self:below(20)
  if depth <= 0 or r < 3 then
    return self:pick{"P.wild()", "P.const()", ("P.op(%q)"):format(self:pick(OPS)), "PAT", self:pooled("pattern"),
                     ("P.var(%s)"):format(self:pick{"nil", q"a", q"%a", q"", self:junk()})}
  end
  local p = self:pattern(depth - 1)
  if r == 3 then return ("%s(%s)"):format(p, self:pattern(depth - 1)) end
  if r == 4 then return ("%s(%s, %s)"):format(p, self:pattern(depth - 1), self:pattern(depth - 1)) end
  if r == 5 then return ("(%s + %s)"):format(p, self:pattern(depth - 1)) end
  if r == 6 then return ("%s:optional(%s)"):format(p, self:chance(0.5) and self:pattern(depth - 1)
    or ("function(x) return P.op(%q)(x) end"):format(self:pick(OPS))) end
  if r == 7 then return ("%s:has_attr(%s)"):format(p, self:chance(0.7) and self:attrs() or self:junk()) end
  if r == 8 then return ("%s:has_type(%s)"):format(p, self:chance(0.7) and self:type(1) or self:junk()) end
  if r == 9 then return ("%s:where(%s)"):format(p, self:callback()) end
  if r == 10 then return ("%s:as(%s)"):format(p, self:pick{q"x", q"", self:junk()}) end
  if r == 11 then
    local body = self:pick{"s", "s + P.wild()", "P.op('negative')(s) + P.wild()", "P.op('add')(s, P.wild()) + P.const()",
                           "P.wild() + s", "s:has_dtype('float32')", ("%s(s)"):format(p), ("(%s + s)"):format(p)}
    return ("P.rec(function(s) return %s end)"):format(body)
  end
  if r == 12 then return ("P.tuple(%s)"):format(self:chance(0.3) and "nil" or ("{%s}"):format(self:pattern(depth - 1))) end
  if r == 13 then return ("P.proj(%s, %s)"):format(p, self:pick{"nil", "0", "1", "-1", self:junk()}) end
  if r == 14 then return ("P.fn(%s, %s)"):format(self:chance(0.5) and "nil" or ("{%s}"):format(p), self:pattern(depth - 1)) end
  if r == 15 then return ("P.if_(%s, %s, %s)"):format(p, self:pattern(depth - 1), self:pattern(depth - 1)) end
  if r == 16 then return ("P.dominates(%s, %s, %s)"):format(p, self:pattern(depth - 1), self:pattern(depth - 1)) end
  if r == 17 then return ("rt.deep_pattern(%q, %d)"):format(self:pick{"call", "alt"}, self:size()) end
  if r == 18 then return ("P.op_kind(%s)"):format(self:pick{q"elemwise", q"opaque", q"nope", self:junk()}) end
  return ("P.call(%s, %s)"):format(p, self:chance(0.5) and "nil" or ("{%s}"):format(self:pattern(depth - 1)))
end

function G:plan_opts()
  if self:chance(0.3) then return self:pick{"nil", "{}", self:junk()} end
  local items = {}
  local function add(k, v) if self:chance(0.5) then items[#items + 1] = k .. " = " .. v end end
  add("placement", self:pick{q"min_bytes", q"tvm", q"nope", self:junk()})
  add("resolve_conflicts", self:pick{"true", "false", self:junk()})
  add("all_conflicts", self:pick{"true", "false", self:junk()})
  add("capability", self:callback())
  add("compute_cost", self:callback())
  add("bandwidth", self:pick{"1e9", "-1", "0/0", "math.huge", self:callback()})
  if self:chance(0.1) then add("nope", "1") end
  return "{" .. table.concat(items, ", ") .. "}"
end

function G:composite_rules(with_device)
  local items = {}
  for i = 1, 1 + self:below(2) do
    items[i] = ("{name = %s, pattern = %s%s%s}"):format(self:pick{q("r" .. i), q"", self:junk()}, self:pattern(2),
      self:chance(0.3) and (", check = " .. self:callback()) or "",
      with_device and (", device = " .. self:vdev(1)) or "")
  end
  return "{" .. table.concat(items, ", ") .. "}"
end

function G:pass(depth)
  local r = self:below(14)
  if depth <= 0 or r == 0 then return self:pooled("pass") end
  if r == 1 then return ("dp.passes.PlanDevices(%s, %s)"):format(self:config(1), self:plan_opts()) end
  if r == 2 then return "dp.passes.ShareCopies()" end
  if r == 3 then return "dp.passes.InferType()" end
  if r == 4 then return ("dp.passes.Verify(%s, %s)"):format(self:config(0), self:pick{"nil", "{planned = true}", self:junk()}) end
  if r == 5 then return ("dp.passes.AnnotateVirtualDevices({[%s] = %s}, {config = %s})"):format(
    self:pick{q"add", q"negative", q"kind:elemwise", q"*", q"on_device", q"nope"}, self:callback(), self:config(0)) end
  if r == 6 then return ("dp.passes.MergeComposite(%s)"):format(self:composite_rules(false)) end
  if r == 7 then return ("dp.passes.MergeAndAnnotate(%s)"):format(self:composite_rules(true)) end
  if r == 8 then return ("dp.passes.PartitionByVirtualDevice{by = %s, config = %s}"):format(
    self:pick{q"virtual_device", q"target", q"device_type", q"nope", "nil"}, self:config(0)) end
  if r == 9 then return ("dp.pass(%s, %s, %s)"):format(self:pick{q"mine", q"", self:junk()}, self:callback(),
    self:pick{"nil", "{a = 1}", self:junk()}) end
  if r == 10 then return ("dp.Sequential{%s, %s}"):format(self:pass(depth - 1), self:pass(depth - 1)) end
  if r == 11 then return ("rt.deep_sequential(%d)"):format(self:size()) end
  if r == 12 then return ("dp.pipeline.build(%s, {config = %s})"):format(self:pipeline_text(), self:config(0)) end
  return ("dp.pipeline.annotate_ops{[%q] = %s}"):format(self:pick(OPS), self:pick{q"cuda", q"cpu", q"cuda:1.texture", q"", self:junk()})
end

function G:pipeline_text()
  local names = {"infer_type", "plan_devices", "share_copies", "verify", "partition", "annotate", "nope",
                 "plan_devices(default=cuda)", "plan_devices(placement=min_bytes,strict=true)",
                 "annotate(add=cuda)", "partition(by=target)", "verify(planned=true)", "annotate(rules=/nonexistent.lua)",
                 "plan_devices(", "a(b=')", "plan_devices(default=cuda,default=cpu)"}
  local parts = {}
  for i = 1, 1 + self:below(3) do parts[i] = self:pick(names) end
  local t = q(table.concat(parts, ","))
  if self:chance(0.1) then t = '("x"):rep(1 << 20)' end
  return t
end

function G:ctx()
  if self:chance(0.3) then return self:pooled("ctx") end
  local items = {}
  local function add(k, v) if self:chance(0.4) then items[#items + 1] = k .. " = " .. v end end
  add("config", self:config(0))
  add("time", self:pick{"true", "false", self:junk()})
  add("print_before", self:pick{q"all", "{'PlanDevices'}", self:junk()})
  add("print_after", self:pick{q"all", q"changed", "{'InferType'}", self:junk()})
  add("output", self:pick{"function() end", self:callback(), self:junk()})
  add("verify_each", self:pick{"true", "false"})
  add("print_options", self:pick{"{types = true}", "{meta = true}", "{nope = 1}", self:junk()})
  add("instruments", ("{{%s = %s, %s = %s}}"):format(self:pick{"should_run", "before", "after", "failed", "name"},
    self:callback(), self:pick{"should_run", "before", "after", "failed"}, self:callback()))
  add("options", self:pick{"{}", self:junk()})
  return "dp.PassContext{" .. table.concat(items, ", ") .. "}"
end

function G:module(depth)
  local r = self:below(6)
  if depth <= 0 or r < 2 then return self:pick{"MOD", "PLANNED", self:pooled("module")} end
  if r == 2 then return ("dp.parse(%s, %s)"):format(self:text(), self:pick{"META", "nil", "{}", self:junk()}) end
  if r == 3 then return ("rt.deep_module(%q, %d)"):format(self:pick{"call", "tuple", "if", "let", "fn"}, self:size()) end
  if r == 4 then return ("dp.IRModule{functions = {{%s, %s}}}"):format(self:pick{q"main", q"f", q"", self:junk()},
    self:expr(1)) end
  return ("dp.passes.PlanDevices(CFG)(%s)"):format(self:module(depth - 1))
end

-- A value of kind, as source.
function G:value(kind, depth)
  depth = depth or 2
  if kind == "any" then
    if self:chance(0.35) then return self:junk() end
    kind = self:pick(KINDS)
    if kind == "any" then return self:pooled("any") end
  end
  if kind == "expr" then return self:expr(depth) end
  if kind == "module" then return self:module(depth) end
  if kind == "type" then return self:type(depth) end
  if kind == "pattern" then return self:pattern(depth) end
  if kind == "pass" then return self:pass(depth) end
  if kind == "ctx" then return self:ctx() end
  if kind == "vdev" then return self:vdev(depth) end
  if kind == "config" then return self:config(depth) end
  if kind == "function" then return self:callback() end
  if kind == "string" then return self:chance(0.5) and self:text() or self:pooled("string") end
  if kind == "number" then return self:pick{"0", "1", "-1", "math.mininteger", "0/0", "1e300", "3"} end
  return self:pooled(kind)
end

function G:args(n)
  local a = {}
  for i = 1, n do a[i] = self:value(self:chance(0.6) and "any" or self:pick(KINDS)) end
  return table.concat(a, ", ")
end

-- Every function of dp (and of its tables), by path, sorted.
local function functions_of(root, prefix, out, seen)
  seen[root] = true
  local names = {}
  for k in pairs(root) do if type(k) == "string" then names[#names + 1] = k end end
  table.sort(names)
  for _, k in ipairs(names) do
    local v, path = root[k], prefix .. "." .. k
    if type(v) == "function" then out[#out + 1] = path
    elseif type(v) == "table" and not seen[v] and k ~= "NONE" then functions_of(v, path, out, seen)
    elseif type(v) == "table" and getmetatable(v) and getmetatable(v).__call then out[#out + 1] = path end
  end
  return out
end

local SKIP = {["dp.graph.render"] = true, ["dp.graph.svg"] = true} -- they run Graphviz on files
local WRITES_TO = {["dp.write_file"] = true} -- functions whose first argument is a path (rt.path)
M.FUNCTIONS = {}
for _, f in ipairs(functions_of(dp, "dp", {}, {})) do
  if not SKIP[f] then M.FUNCTIONS[#M.FUNCTIONS + 1] = f end
end

-- One call, as the source of a function returning its results.
function G:call()
  local r = self:below(30)
  if r < 7 then -- any function of dp with random and typed arguments
    local f = self:pick(M.FUNCTIONS)
    if WRITES_TO[f] then -- its path into rt's scratch folder
      return ("%s(rt.path(%s)%s)"):format(f, self:args(1), self:chance(0.7) and (", " .. self:args(1)) or "")
    end
    return ("%s(%s)"):format(f, self:args(self:below(5)))
  end
  if r < 11 then -- a method or function field of a value made before
    local args = self:args(self:below(4))
    return ("rt.invoke(%d, %d%s)"):format(self:below(1 << 20), self:below(1 << 10), args == "" and "" or (", " .. args))
  end
  if r == 11 then return ("dp.parse(%s, %s)"):format(self:text(), self:pick{"META", "nil", self:junk()}) end
  if r == 12 then return ("%s:match(%s)"):format(self:pattern(3), self:expr(2)) end
  if r == 13 then return ("%s:find(%s)"):format(self:pattern(3), self:module(1)) end
  if r == 14 then return ("tostring(%s)"):format(self:pattern(3)) end
  if r == 15 then return ("P.rewrite(%s, {{%s, %s}}, %s)"):format(self:module(1), self:pattern(2), self:callback(),
    self:pick{"nil", "{once = true}", "{max_rounds = 2}", self:junk()}) end
  if r == 16 then return ("%s(%s, %s)"):format(self:pass(2), self:module(1), self:chance(0.5) and self:ctx() or "nil") end
  if r == 17 then return ("%s:run(%s, %s)"):format(self:ctx(), self:pass(2), self:module(1)) end
  if r == 18 then return ("dp.planner.plan_with(%s, %s, %s)"):format(self:module(1), self:config(1), self:plan_opts()) end
  if r == 19 then return ("dp.planner.report(%s, %s):text()"):format(self:module(1), self:config(0)) end
  if r == 20 then return ("dp.planner.why(%s, %s, %s)"):format(self:module(1), self:expr(1),
    self:pick{"nil", "{input = MOD}", self:junk()}) end
  if r == 21 then return ("dp.graph.dot(%s, %s)"):format(self:module(1), self:pick{"nil", "{config = CFG}",
    "{params = true, title = 'x'}", self:junk()}) end
  if r == 22 then return ("dp.pipeline.parse(%s)"):format(self:pipeline_text()) end
  if r == 23 then return ("dp.planner.verify(%s, %s, %s)"):format(self:module(1), self:config(0),
    self:pick{"nil", "{input = MOD}", "{raise = true}", "{limit = 0}", self:junk()}) end
  if r == 24 then return ("dp.astext(%s, %s)"):format(self:chance(0.5) and self:module(1) or self:expr(2),
    self:pick{"nil", "{types = true}", "{short_devices = true}", "{meta = true}", "{names = true}", "{spans = true}",
              "{param_lines = true}", "{nope = 1}", self:junk()}) end
  if r == 25 then return ("dp.visit(%s, %s)"):format(self:chance(0.5) and self:module(1) or self:expr(2),
    self:chance(0.7) and self:callback() or ("{pre = %s, post = %s}"):format(self:callback(), self:callback())) end
  if r == 26 then return ("dp.rewrite(%s, {%s = %s})"):format(self:chance(0.5) and self:module(1) or self:expr(2),
    self:pick{"call", "var", "any", "fn", "pre", "nope"}, self:callback()) end
  if r == 27 then return ("dp.op.register(%q, {num_inputs = %s, type_rel = %s})"):format("fuzz.op" .. self:below(1 << 20),
    self:pick{"1", "-1", "nil", "0", self:junk()}, self:callback()) end
  if r == 28 then return ("dp.planner.solve_placement{labels = %s, vars = %s, unary = %s, pair = %s}"):format(
    self:pick{"2", "0", "3", "-1", self:junk()}, self:pick{"3", "0", "100", self:junk()},
    self:pick{"{{1, 2}, {2, 1}, {0, 0}}", "{}", self:junk()}, self:pick{"{{0, 1}, {1, 0}}", "nil", self:junk()}) end
  return ("dp.infer_type(%s)"):format(self:module(2))
end

-- The source of batch seed: the prelude, then its calls.
function M.batch(seed, ncalls, alloc_share)
  local self = setmetatable({rng = relaygen.rng(seed)}, G)
  local lines = {M.PRELUDE}
  for id = 1, ncalls do
    local fail = ""
    if self:chance(alloc_share) then fail = (", {%d, %s}"):format(1 + self:below(400), self:chance(0.3) and "true" or "false") end
    lines[#lines + 1] = ("rt.call(%d, function() return %s end%s)"):format(id, self:call(), fail)
  end
  return table.concat(lines, "\n") .. "\n"
end

-- ------------------------------------------------------------ running


-- Runs the source of a batch here; true when nothing was found.
function M.run_source(src, name)
  rt.reset()
  local chunk, why = load(src, "=" .. name, "t")
  if not chunk then error("apifuzz: the generated source does not load: " .. why, 0) end
  chunk()
  return rt.finish(true)
end

function M.reproducer(seed, src, found)
  local head = {("-- apifuzz batch %d found %d problem(s) (fuzz/apifuzz.lua; run it from the project root with"):format(
    seed, #found), "-- bin/devplan FILE or build/asan/bin/devplan FILE: exits 1 while the defect is there)."}
  for _, f in ipairs(found) do
    head[#head + 1] = ("-- call %d: %s"):format(f.id, (f.what:sub(1, 300):gsub("\n", " ")))
  end
  return table.concat(head, "\n") .. "\n" .. src .. "os.exit(rt.finish() and 0 or 1)\n"
end

local function main(args)
  local opts = {seed = 1, batches = 100, calls = 40, alloc = 0.1, out = dp.root .. "/fuzz/failures"}
  local i = 1
  while i <= #args do
    local a = args[i]
    local function value()
      i = i + 1
      return args[i] or error("apifuzz: " .. a .. " needs a value", 0)
    end
    if a == "--seed" then opts.seed = math.tointeger(tonumber(value()))
    elseif a == "--batches" then opts.batches = math.tointeger(tonumber(value()))
    elseif a == "--seconds" then opts.seconds = tonumber(value())
    elseif a == "--calls" then opts.calls = math.tointeger(tonumber(value()))
    elseif a == "--alloc" then opts.alloc = tonumber(value())
    elseif a == "--out" then opts.out = value()
    elseif a == "--current" then opts.current = value()
    elseif a == "--quiet" then opts.quiet = true
    else error("apifuzz: unknown option " .. a, 0) end
    i = i + 1
  end
  local passed, failed, t0 = 0, 0, os.time()
  local seed = opts.seed
  while (opts.seconds and os.time() - t0 < opts.seconds) or (not opts.seconds and seed < opts.seed + opts.batches) do
    local src = M.batch(seed, opts.calls, opts.alloc)
    if opts.current then runner.write(opts.current, src) end
    if not opts.quiet then io.write(("batch %d\n"):format(seed)) io.stdout:flush() end
    if M.run_source(src, "apifuzz-" .. seed) then
      passed = passed + 1
    else
      failed = failed + 1
      os.execute("mkdir -p '" .. opts.out .. "'")
      local path = ("%s/apifuzz-%d.lua"):format(opts.out, seed)
      runner.write(path, M.reproducer(seed, src, rt.found))
      print(("FAIL batch %d -> %s"):format(seed, path))
    end
    seed = seed + 1
  end
  print(("%d calls in %d batches (seeds %d..%d)"):format((passed + failed) * opts.calls, passed + failed,
    opts.seed, seed - 1))
  print(("%d passed, %d failed"):format(passed, failed))
  return failed == 0
end

if arg and arg[0] and arg[0]:match("apifuzz%.lua$") then
  os.exit(main(arg) and 0 or 1)
end

return M
