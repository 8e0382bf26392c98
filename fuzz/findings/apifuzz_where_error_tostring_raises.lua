-- Found by the API fuzzer (fuzz/apifuzz.lua), minimised: a :where predicate
-- that raises an error value whose __tostring raises too. The matcher turned
-- the error into a message with luaL_tolstring, unprotected, so the second
-- error jumped out of the C matcher and what it had allocated leaked (seen
-- under ASan: build/asan/bin/devplan FILE). Expected: a "callback"
-- devplan.Error, nothing leaked, and the state goes on working.
-- Run from the project root: bin/devplan fuzz/findings/apifuzz_where_error_tostring_raises.lua
local dp = require "devplan"
local P = dp.pattern
local bad = setmetatable({}, {__tostring = function() error("tostring fails too", 0) end})
local p = P.op("negative")(P.wild()):where(function() error(bad) end)
local e = dp.parse_expr("fn (%x: Tensor[(2), float32]) { negative(negative(%x)) }")
for _, run in ipairs{function() return p:find(e) end, function() return p:match(e.body) end,
                     function() return P.rewrite(e, {{p, function() return nil end}}) end} do
  local ok, err = pcall(run)
  print(ok and "no error" or (dp.is_error(err) and ("devplan.Error " .. err.code .. ": " .. err.message)
    or ("raw: " .. type(err))))
end
print(dp.parse("def @main() { 1f }") and "ok")
