-- Running the executable under test in a child process, for specs that
-- must survive what they run (a crash, a sanitizer report, a hang).
--
--   local proc = dofile("spec/support/proc.lua")
--   local r = proc.run({"parse", "x.relay"}, {timeout = 60})
--   -- r.status: exit status (128 + signal for a signal, 124 on timeout), r.out: stdout + stderr,
--   -- r.stdout, r.stderr separately, r.timed_out
local M = {}

M.EXE = os.getenv("DEVPLAN_EXE") or "bin/devplan"

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
M.quote = quote

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("a")
  f:close()
  os.remove(path)
  return s
end

-- Runs EXE with args (a list, quoted here) from the project root; opts.timeout in
-- seconds (default 300); opts.exe replaces the executable; opts.stdin a file;
-- opts.env a table of environment variables added.
function M.run(args, opts)
  opts = opts or {}
  local out, err = os.tmpname(), os.tmpname()
  local parts = {"timeout", "-k", "5", tostring(opts.timeout or 300), quote(opts.exe or M.EXE)}
  if opts.env then
    local names = {}
    for k in pairs(opts.env) do names[#names + 1] = k end
    table.sort(names)
    for i = #names, 1, -1 do table.insert(parts, 1, quote(names[i] .. "=" .. opts.env[names[i]])) end
    table.insert(parts, 1, "env")
  end
  for _, a in ipairs(args) do parts[#parts + 1] = quote(a) end
  local cmd = table.concat(parts, " ") .. " >" .. out .. " 2>" .. err
  if opts.stdin then cmd = cmd .. " <" .. quote(opts.stdin) end
  local ok, how, code = os.execute(cmd)
  local r = {stdout = slurp(out), stderr = slurp(err)}
  r.out = r.stdout .. r.stderr
  if ok then r.status = 0
  elseif how == "signal" then r.status = 128 + code
  else r.status = code end
  r.timed_out = r.status == 124 or r.status == 137
  return r
end

function M.write(text)
  local name = os.tmpname()
  local f = assert(io.open(name, "wb"))
  f:write(text)
  f:close()
  return name
end

return M
