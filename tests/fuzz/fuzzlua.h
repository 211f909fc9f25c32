/*
 * fuzzlua.h - a Lua state for fuzz targets that drive Lua code (the YAML
 * decoder, the command-line parser). The state is built like the CLI's
 * (ac_lua_openlibs: standard libraries plus the agentchat modules), but the
 * modules are loaded from the source tree (FUZZ_LUA_DIR, set by the
 * Makefile) rather than the embedded bytecode, which is stripped of line
 * information: with `coverage` set, a line hook feeds the lines executed
 * (as edges: previous line -> line, per chunk) to libFuzzer through its
 * extra-counters section, so the fuzzer is guided by the Lua code's
 * coverage and not only by the C it calls.
 *
 * Calling sequence:
 *     LLVMFuzzerInitialize:   fuzz_lua_init(DRIVER, 1);
 *     LLVMFuzzerTestOneInput: fuzz_lua_run(data, size);
 * DRIVER is a Lua chunk returning a function; fuzz_lua_run calls it with
 * the input as one string and aborts (a libFuzzer crash) if it raises:
 * drivers raise when a property does not hold.
 */
#ifndef AGENTCHAT_FUZZLUA_H
#define AGENTCHAT_FUZZLUA_H

#include <stddef.h>
#include <stdint.h>

void fuzz_lua_init(const char *driver, int coverage);
void fuzz_lua_run(const uint8_t *data, size_t size);

#endif
