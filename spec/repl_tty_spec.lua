-- The REPL in a real terminal: tmux runs `devplan` with no arguments in a
-- pseudo-terminal, the spec types keystrokes (send-keys) and reads the
-- screen (capture-pane). Line editing, tab completion, multi-line input,
-- errors that do not end the session, Ctrl-C, and history kept across sessions.
local EXE = os.getenv("DEVPLAN_EXE") or "bin/devplan"
if EXE:find("/", 1, true) and EXE:sub(1, 1) ~= "/" then EXE = assert(os.getenv("PWD")) .. "/" .. EXE end

local SOCKET = "devplan-spec-" .. tostring(os.time()) .. "-" .. tostring(math.random(1e6))
local function tmux(args)
  local p = assert(io.popen("tmux -L " .. SOCKET .. " " .. args .. " 2>&1"))
  local out = p:read("a")
  p:close()
  return out
end

local function sleep(s) os.execute("sleep " .. s) end

-- The screen once `pattern` shows on it (or the last screen after `limit` seconds).
local function wait_for(pattern, limit)
  local screen
  for _ = 1, (limit or 30) * 10 do
    screen = tmux("capture-pane -p -t repl")
    if screen:find(pattern) then return screen end
    sleep(0.1)
  end
  return screen
end

local function keys(...)
  local parts = {}
  for i, k in ipairs{...} do parts[i] = "'" .. k:gsub("'", "'\\''") .. "'" end
  tmux("send-keys -t repl " .. table.concat(parts, " "))
end

local history = os.tmpname()

local function start(keep_history)
  if not keep_history then os.remove(history) end
  tmux("kill-session -t repl")
  local cmd = "env DEVPLAN_HISTORY=" .. history .. " TERM=xterm " .. EXE
  tmux("new-session -d -s repl -x 150 -y 50 '" .. cmd .. "'")
  return wait_for("help%(%) for the helpers")
end

describe("the REPL on a terminal", function()
  teardown(function()
    tmux("kill-server")
    os.remove(history)
  end)

  it("starts with dp loaded, prints expressions, reads on, and survives errors", function()
    local screen = start()
    assert.truthy(screen:find("devplan %d+%.%d+%.%d+ %(Lua 5%.4%)"), screen)
    keys("=dp.Target('cuda').kind", "Enter")
    screen = wait_for("\ncuda\n")
    assert.truthy(screen:find("> =dp.Target('cuda').kind\ncuda\n", 1, true), screen)
    keys("x = 20 +", "Enter")
    screen = wait_for("\n>>\n") -- the prompt for more (capture-pane drops trailing spaces)
    assert.truthy(screen:find("> x = 20 +\n>>\n", 1, true), screen)
    keys("22", "Enter", "x", "Enter")
    screen = wait_for("\n42\n")
    assert.truthy(screen:find("> x = 20 +\n>> 22\n> x\n42\n", 1, true), screen)
    keys("error('boom')", "Enter", "1 + 2", "Enter")
    screen = wait_for("\n3\n")
    assert.truthy(screen:find("stdin:1: boom\n> 1 + 2\n3\n", 1, true), screen)
  end)

  it("completes names and fields with Tab, and edits the line", function()
    keys("C-l")
    keys("dp.plan", "Tab")
    local screen = wait_for("> dp%.planner")
    keys(".expl", "Tab")
    screen = wait_for("> dp%.planner%.explain")
    assert.truthy(screen:find("> dp.planner.explain", 1, true), screen)
    -- edit: go to the start of the line, make it an expression, print it
    keys("C-a", "=type(", "C-e", ")", "Enter")
    screen = wait_for("\nfunction\n")
    assert.truthy(screen:find("> =type(dp.planner.explain)\nfunction\n", 1, true), screen)
  end)

  it("takes Ctrl-C as an interrupt: the line is dropped, a running chunk stops, the session goes on", function()
    keys("C-l")
    -- on a line being typed (and on an unfinished chunk): dropped
    -- (the terminal drops input not yet read when ^C comes: wait for the echo first)
    keys("y = 1 +", "Enter", "2 +")
    wait_for(">> 2 %+")
    keys("C-c")
    local screen = wait_for("%^C\n>")
    assert.truthy(screen:find(">> 2 +^C\n>", 1, true), screen)
    keys("=y == nil", "Enter")
    screen = wait_for("\ntrue\n")
    assert.truthy(screen:find("> =y == nil\ntrue\n", 1, true), screen)
    -- on a chunk that runs for ever: stopped with an error
    keys("C-l")
    keys("while true do end", "Enter")
    wait_for("while true do end\n")
    sleep(0.3)
    keys("C-c")
    screen = wait_for("interrupted")
    assert.truthy(screen:find("interrupted", 1, true), screen)
    keys("=6 * 7", "Enter")
    screen = wait_for("\n42\n")
    assert.truthy(screen:find("> =6 * 7\n42\n", 1, true), screen)
  end)

  it("keeps the history across sessions", function()
    keys("answer = 6 * 7", "Enter", "C-d")
    sleep(0.5)
    local screen = start(true)
    keys("Up")
    screen = wait_for("> answer = 6 %* 7")
    assert.truthy(screen:find("> answer = 6 * 7", 1, true), screen)
    keys("Enter", "=answer", "Enter")
    screen = wait_for("\n42\n")
    assert.truthy(screen:find("\n42\n", 1, true), screen)
    keys("C-d")
  end)
end)
