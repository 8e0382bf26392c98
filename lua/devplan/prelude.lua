-- The Lua side of the `devplan` module: attaches the parts written in Lua
-- to the table the C module built. Called once by luaopen_devplan.
return function(dp)
  require("devplan.ir").attach(dp)
  require("devplan.parser").attach(dp)
  require("devplan.passes").attach(dp)
  return dp
end
