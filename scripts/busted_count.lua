-- busted output handler: busted's plain terminal output, then one line
-- "devplan-count: PASSED FAILED" (failures and errors together) that
-- scripts/run_suite.sh sums over the spec files.
return function(options)
  local busted = require "busted"
  local handler = require("busted.outputHandlers.plainTerminal")(options)
  busted.subscribe({"suite", "end"}, function()
    io.write(("\ndevplan-count: %d %d\n"):format(handler.successesCount,
      handler.failuresCount + handler.errorsCount))
    io.flush()
    return nil, true
  end)
  return handler
end
