-- luarocks make (in the project root) builds with premake and installs
-- through scripts/install.sh into the rock tree: devplan.core in LIBDIR,
-- the Lua modules and passes in LUADIR, the devplan executable in BINDIR.
package = "devplan"
version = "0.1.0-1"
source = {
  url = "git+file:///devplan", -- the project's own repository; `luarocks make` builds the tree it is in
  tag = "v0.1.0",
}
description = {
  summary = "Heterogeneous device planning for TVM's Relay IR: a C11 core scripted from Lua 5.4",
  detailed = [[
devplan rebuilds Apache TVM's device planning (VirtualDevice, PlanDevices) in C
and opens it to Lua: pass pipelines, annotation rules, a REPL, placement
reports and Graphviz pictures, busted assertions.]],
}
dependencies = {
  "lua >= 5.4, < 5.5",
  "lpeg",
  "dkjson", -- JSON reports
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
