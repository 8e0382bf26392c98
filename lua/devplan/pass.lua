-- Passes are values: a name, the options they were made with, and a
-- function from a module to a module.
--
--   local p = dp.pass("my_pass", function(mod, ctx) ... return mod end)
--   local out = p(mod)             -- run it in a fresh dp.PassContext
--   local out = p(mod, ctx)        -- run it in ctx (instruments, configuration)
--   p.name, p.options, tostring(p) --> "my_pass"
--
--   local both = dp.Sequential{annotate, dp.passes.PlanDevices(config)}
--   both(mod)                      -- each pass in turn, in one context
--
-- Every pass of dp.passes is one of these. Options are shown by tostring
-- as name(key=value, ...) in key order, so a pass prints the same way
-- every time. Running goes through a pass context (devplan.context), so
-- instruments see every pass, nested ones included, and an error names
-- the pass that raised it.
-- (The pass type lives with the contexts that run passes, devplan.context:
-- calling a pass needs a context, and a context runs only passes.)
local context = require "devplan.context"

_ENV = nil -- no global is read or written below this line

return {new = context.pass, is_pass = context.is_pass, Sequential = context.Sequential,
        sequence_of = context.sequence_of, text = context.text}
