-- busted output handler: busted's plain terminal output, then one line
-- "devplan-count: PASSED FAILED SKIPPED" (failures and errors together;
-- skipped: busted's pending tests) that scripts/run_suite.sh sums over the
-- spec files.
return function(options)
  local busted = require "busted"
  local handler = require("busted.outputHandlers.plainTerminal")(options)
  busted.subscribe({"suite", "end"}, function()
    io.write(("\ndevplan-count: %d %d %d\n"):format(handler.successesCount,
      handler.failuresCount + handler.errorsCount, handler.pendingsCount))
    io.flush()
    return nil, true
  end)
  return handler
end
