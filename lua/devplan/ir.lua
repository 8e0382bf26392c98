-- Lua-side helpers of the IR binding: predicates that tell devplan values
-- apart without pcall (the C side checks arguments on its own).
local getmetatable, rawget, type = getmetatable, rawget, type
_ENV = nil -- no global is read or written below this line

local M = {}

local function is(meta_name)
  return function(v)
    local mt = type(v) == "userdata" and getmetatable(v)
    return type(mt) == "table" and rawget(mt, "__name") == meta_name
  end
end

M.is_expr = is("devplan.Expr")
M.is_type = is("devplan.Type")
M.is_pattern = is("devplan.Pattern")
M.is_module = is("devplan.IRModule")
M.is_typedef = is("devplan.TypeDef")
M.is_primfn = is("devplan.PrimFn")
M.is_target = is("devplan.Target")
M.is_virtual_device = is("devplan.VirtualDevice")
M.is_config = is("devplan.CompilationConfig")

return M
