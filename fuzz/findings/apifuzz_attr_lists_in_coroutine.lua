-- Found by the API fuzzer (fuzz/apifuzz.lua), minimised: checking the values
-- of an attribute table nested deeply (pattern:has_attr, dp.call) pushed two
-- values per level on the Lua stack without making room, so in a coroutine
-- (whose stack starts small) it wrote past the stack and the process crashed
-- when the state closed. Expected: an argument error ("lists nested too
-- deeply"), and the process goes on and exits 0.
-- Run from the project root: bin/devplan fuzz/findings/apifuzz_attr_lists_in_coroutine.lua
local dp = require "devplan"
local P = dp.pattern
local function deep(n)
  local t = {}
  for _ = 1, n do t = {t} end
  return t
end
for _, make in ipairs{
  function() return P.rec(function(s) return P.const():has_attr({dtype = deep(100000)})(s) end) end,
  function() return P.const():has_attr({dtype = deep(31)}) end,
  function() return dp.call("add", {dp.var("x"), dp.var("y")}, {axis = deep(31)}) end,
} do
  local co = coroutine.create(make)
  local ok, err = coroutine.resume(co)
  print(ok and "built" or ("error: " .. tostring(err):gsub("^[^:]*:%d+: ", "")))
end
collectgarbage()
print("ok")
