-- SPDX-License-Identifier: Apache-2.0
-- The rock of devplan. In the project's root:
--   luarocks --lua-version 5.4 make                  (Debian: add --deps-mode=none, since
--                                                     lua-lpeg and lua-dkjson are packages there)
-- builds with premake and installs through scripts/install.sh into the rock
-- tree: devplan.core in LIBDIR, the Lua modules and passes in LUADIR, the
-- devplan executable in BINDIR, the examples, models and docs (dp.root) in the
-- rock's own folder. From a release archive (make dist):
--   luarocks --lua-version 5.4 build devplan-0.1.0-1.rockspec   (beside devplan-0.1.0.tar.gz)
rockspec_format = "3.0"
package = "devplan"
version = "0.1.0-1"
source = {
  url = "devplan-0.1.0.tar.gz", -- `make dist` writes it (git archive of the tagged tree)
  dir = "devplan-0.1.0",
}
description = {
  summary = "Heterogeneous device planning for TVM's Relay IR: a C11 core scripted from Lua 5.4",
  detailed = [[
devplan decides where every value of a tensor program runs on a machine with
several devices and inserts the copies between them: Apache TVM's device
planning (VirtualDevice, PlanDevices) rebuilt in C and opened to Lua, with
pass pipelines, annotation rules, a REPL, placement reports and pictures, and
busted assertions.]],
  license = "Apache-2.0",
  labels = {"compiler", "tvm", "relay", "heterogeneous"},
}
dependencies = {
  "lua >= 5.4, < 5.5",
  "lpeg",   -- the Relay text parser's grammar
  "dkjson", -- JSON reports
}
external_dependencies = {
  EDIT = {header = "editline/readline.h", library = "edit"}, -- the REPL's line editing (Debian: libedit-dev)
}
build = {
  type = "make",
  build_target = "all",
  install_target = "install-rock",
  install_variables = {
    PREFIX = "$(PREFIX)",
    LUADIR = "$(LUADIR)",
    LIBDIR = "$(LIBDIR)",
    BINDIR = "$(BINDIR)",
  },
}
