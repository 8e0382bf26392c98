-- Short device names, as the readable printer writes them (`@cpu`,
-- `@cuda:1.texture`, src/core/print_devices.c): the device type, the
-- virtual device id when it is not 0, the memory scope when there is one.
-- The command line reads them (`--annotate nn.conv2d=cuda`), reports and
-- graphs write them.
local core = require "devplan.core"

local pcall, setmetatable, tonumber, tostring, type = pcall, setmetatable, tonumber, tostring, type
_ENV = nil -- no global is read or written below this line

local M = {}

-- "cuda", "@cuda:1", "cuda:1.texture" -> VirtualDevice (id 0 when not
-- given, as in the conformance palette); nil and a message when malformed.
function M.parse(text)
  if type(text) ~= "string" then return nil, "a device name expected" end
  local body = text:gsub("^@", "")
  local ty, rest = body:match("^([%a_][%w_]*)(.*)$")
  if not ty then
    return nil, "'" .. text .. "' is not a device name (TYPE[:ID][.SCOPE], e.g. cuda, cuda:1, cuda:1.texture)"
  end
  local id, scope = rest:match("^:(%d+)(.*)$")
  rest = scope or rest
  scope = rest:match("^%.(.+)$")
  if rest ~= "" and not scope then
    return nil, "'" .. text .. "' is not a device name (TYPE[:ID][.SCOPE], e.g. cuda, cuda:1, cuda:1.texture)"
  end
  local ok, vd = pcall(core.VirtualDevice, {device_type = ty, virtual_device_id = tonumber(id) or 0,
                                            memory_scope = scope})
  if not ok then return nil, tostring(type(vd) == "table" and vd.message or vd) end
  return vd
end

-- The metatable a model without --meta is read with: meta[VirtualDevice][0]
-- is the CPU and [1] the GPU (id 0 each), as in the conformance palette.
function M.palette()
  return {VirtualDevice = {
    core.VirtualDevice{device_type = "cpu", virtual_device_id = 0},
    core.VirtualDevice{device_type = "cuda", virtual_device_id = 0},
  }}
end

-- The name vd would get on its own: "cuda:1.texture".
local function base(vd)
  local s = vd.device_type ~= 0 and vd.device_type_name or "any"
  if vd.virtual_device_id > 0 then s = s .. ":" .. vd.virtual_device_id end
  if vd.memory_scope ~= "" then s = s .. "." .. vd.memory_scope end
  return s
end

-- A namer: namer(vd) -> its unique short name (without '@'), given in
-- order of first use; names that would clash get "#2", "#3", ...
-- namer.list: the devices in that order, namer.names[vd]: the name.
function M.namer()
  local names, taken, list = {}, {}, {}
  local self = {names = names, list = list}
  return setmetatable(self, {__call = function(_, vd)
    local n = names[vd]
    if n then return n end
    local b = base(vd)
    n = b
    local k = 2
    while taken[n] do
      n = b .. "#" .. k
      k = k + 1
    end
    names[vd], taken[n] = n, true
    list[#list + 1] = vd
    return n
  end})
end

return M
