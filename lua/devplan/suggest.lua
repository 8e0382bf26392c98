-- "Did you mean ...?": the closest of a list of names to a misspelt one.
local ipairs = ipairs
local math = math
_ENV = nil -- no global is read or written below this line

local M = {}

-- Edit distance (insertions, deletions, substitutions, swaps of two
-- neighbours count one each).
local function distance(a, b)
  local la, lb = #a, #b
  local d = {}
  for i = 0, la do d[i] = {[0] = i} end
  for j = 0, lb do d[0][j] = j end
  for i = 1, la do
    for j = 1, lb do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      local v = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and a:byte(i) == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        v = math.min(v, d[i - 2][j - 2] + 1)
      end
      d[i][j] = v
    end
  end
  return d[la][lb]
end
M.distance = distance

-- The name of `names` closest to `word` when it is close enough to be
-- what was meant (a third of its length, at least 1 and at most 3 edits,
-- or a prefix of at least 3 letters), else nil. Ties: the first in order.
-- A name whose length differs by more than the edits allowed cannot be
-- close (unless the word is its prefix): it is skipped unmeasured, so a
-- megabyte of a misspelt word costs a glance, not a megabyte-wide table.
function M.closest(word, names)
  local best, bestd
  local lw = word:lower()
  local limit = math.max(1, math.min(3, #word // 3))
  for _, n in ipairs(names) do
    local ln = n:lower()
    local prefix = #lw >= 3 and ln:sub(1, #lw) == lw
    if prefix or math.abs(#ln - #lw) <= limit then
      local dist = prefix and (ln == lw and 0 or 1) or distance(lw, ln)
      if not bestd or dist < bestd then best, bestd = n, dist end
    end
  end
  if best and bestd <= limit then return best end
  return nil
end

-- "; did you mean 'x'?" or "".
function M.hint(word, names)
  local c = M.closest(word, names)
  return c and ("; did you mean '" .. c .. "'?") or ""
end

return M
