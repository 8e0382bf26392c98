-- devplan build. Kept within what both premake4 (Debian's 4.3) and premake5 read:
--   premake4 --file=premake5.lua gmake   (or: premake5 gmake)
--   make -C build config=release          (debug, asan: see README)
-- The asan configuration writes to build/asan/{lib,bin} (a project added below
-- should do the same with its own `configuration "asan" targetdir ...`).
-- Outputs: build/ (makefiles, objects), lib/libdevplan_core.a, lib/devplan.so, bin/devplan.

local LUA_INC = os.getenv("LUA_INC") or "/usr/include/lua5.4"
local LUA_LIB = os.getenv("LUA_LIB") or "lua5.4"

-- The ONNX reader (src/import) decodes with protobuf-c (Debian's
-- libprotobuf-c-dev) through code generated from ONNX's own schema
-- (libonnx-dev's onnx.proto) by protoc-c into build/gen, here, each time
-- the makefiles are written (scripts/onnx_proto.sh; scripts/setup.sh
-- installs the three packages).
local ROOT = path.getdirectory(_SCRIPT)
local GEN = ROOT .. "/build/gen"
if _ACTION and _ACTION ~= "clean" then
  local rc = os.execute('sh "' .. ROOT .. '/scripts/onnx_proto.sh" "' .. GEN .. '"')
  if rc ~= 0 and rc ~= true then error("scripts/onnx_proto.sh failed: the ONNX reader cannot be generated") end
end

solution "devplan"
  configurations { "release", "debug", "asan" }
  location "build"
  language "C"
  includedirs { "include" }
  flags { "Symbols" }   -- keep symbols (no -s) so sanitizer and valgrind reports name functions
  buildoptions { "-std=c11", "-D_GNU_SOURCE", "-fPIC", "-Wall", "-Wextra", "-Wno-unused-parameter" }

  configuration "release"
    -- (no interposition of the core's own functions: calls inside a file may
    -- be inlined although -fPIC; 3% fewer instructions in PlanDevices)
    buildoptions { "-O2", "-g", "-fno-semantic-interposition" }
    defines { "NDEBUG" }
  configuration "debug"
    buildoptions { "-O0", "-g3" }
  configuration "asan"
    buildoptions { "-O1", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                   "-fno-sanitize-recover=undefined" }
    linkoptions { "-fsanitize=address,undefined" }
  configuration {}

-- The C core (IR, types, devices, configuration), the planner, the parser's C half
-- (src/parse: lexer and builder; its grammar is lua/devplan/parser.lua), the
-- dataflow pattern matcher (src/pattern) and the ONNX importer (src/import, with
-- the generated protobuf code): no Lua headers here.
project "devplan_core"
  kind "StaticLib"
  targetdir "lib"
  targetname "devplan_core"
  files { "src/core/*.c", "src/planner/*.c", "src/parse/*.c", "src/pattern/*.c", "include/devplan/*.h",
          "src/import/*.c", "build/gen/onnx.pb-c.c" }
  includedirs { "build/gen" }
  configuration "asan"
    targetdir "build/asan/lib"   -- instrumented outputs never clobber lib/ and bin/
  configuration {}

-- The Lua C module: lib/devplan.so holds `devplan.core` (luaopen_devplan_core), which
-- lua/devplan/init.lua requires; a stock lua5.4 finds it through its all-in-one loader.
project "devplan_module"
  kind "SharedLib"
  targetdir "lib"
  targetname "devplan"
  targetprefix ""
  includedirs { LUA_INC }
  files { "src/lua/*.c" }
  links { "devplan_core", "protobuf-c", "m", "dl" }
  configuration "asan"
    targetdir "build/asan/lib"
  configuration {}

-- The executable: embedded Lua 5.4 with the module preloaded; the REPL's line
-- editing is libedit (Debian: libedit-dev), see src/cli/term.c.
project "devplan"
  kind "ConsoleApp"
  targetdir "bin"
  includedirs { LUA_INC }
  files { "src/cli/*.c", "src/lua/*.c" }
  links { "devplan_core", "protobuf-c", LUA_LIB, "edit", "m", "dl" }
  linkoptions { "-Wl,-E" }
  configuration "asan"
    targetdir "build/asan/bin"
  configuration {}

-- C checks of the IR core (tests/c): prints "N passed, N failed", exits 1 on failure.
project "devplan_ctest"
  kind "ConsoleApp"
  targetdir "bin"
  targetname "devplan-ctest"
  files { "tests/c/*.c" }
  links { "devplan_core", "protobuf-c", "m" }
  configuration "asan"
    targetdir "build/asan/bin"
  configuration {}

-- IR benchmark (bench/ir.sh): build, traverse, compare, print, free of million-node chains.
-- malloc & co. are wrapped at link time to count heap bytes exactly.
project "devplan_bench_ir"
  kind "ConsoleApp"
  targetdir "bin"
  targetname "devplan-bench-ir"
  files { "bench/ir_chain.c" }
  links { "devplan_core", "protobuf-c", "m" }
  linkoptions { "-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free" }
  configuration "asan"
    targetdir "build/asan/bin"
  configuration {}
