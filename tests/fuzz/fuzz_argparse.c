/*
 * fuzz_argparse.c - the command-line parser (lua/agentchat/argparse.lua, a
 * port of Python's argparse) with agent-chat's whole grammar
 * (agentchat.cli.build_parser: every command of every family), on argv
 * made of the input split at NUL bytes (at most 40 words). Commands are
 * only parsed, never run: the driver does not call a handler.
 *
 * The Lua code is what is being tested, so the state runs a line hook that
 * turns executed Lua lines into libFuzzer coverage (fuzzlua.h).
 *
 * Properties:
 *   - parse never raises; it returns arguments with a command name and a
 *     handler, or an error value: help text ending in a newline, or an
 *     error with a message;
 *   - the CLI's stderr line for an error (cli.usage_line, or a command's
 *     own format_error) starts "agent-chat: " and is one line, as docs/format.md
 *     2.5 promises for every failure; argparse.format_error and tostring
 *     work on it.
 */
#include "fuzz.h"
#include "fuzzlua.h"

static const char DRIVER[] =
    "local cli = require 'agentchat.cli'\n"
    "local argparse = require 'agentchat.argparse'\n"
    "local MAX = 40\n"
    "return function(s)\n"
    "  local argv = {}\n"
    "  for w in (s .. '\\0'):gmatch('([^%z]*)%z') do\n"
    "    if #argv == MAX then break end\n"
    "    argv[#argv + 1] = w\n"
    "  end\n"
    "  local p = cli.build_parser()\n"
    "  local args, err = p:parse(argv)\n"
    "  if args then\n"
    "    if type(args.command) ~= 'string' then error('parsed without a command', 0) end\n"
    "    if type(args.handler) ~= 'function' then error('no handler for ' .. args.command, 0) end\n"
    "    return\n"
    "  end\n"
    "  if type(err) ~= 'table' then error('parse failed without an error value', 0) end\n"
    "  if err.kind == 'help' then\n"
    "    if type(err.text) ~= 'string' or err.text:sub(-1) ~= '\\n' then\n"
    "      error('help text missing or without a final newline', 0)\n"
    "    end\n"
    "    return\n"
    "  end\n"
    "  if err.kind ~= 'error' or type(err.message) ~= 'string' or err.message == '' then\n"
    "    error('bad error value: ' .. tostring(err.kind), 0)\n"
    "  end\n"
    "  local line\n"
    "  if err.parser and err.parser.tag and err.parser.tag.format_error then\n"
    "    line = err.parser.tag.format_error(err)\n"
    "  else\n"
    "    line = cli.usage_line(err)\n"
    "  end\n"
    "  if line:sub(1, 12) ~= 'agent-chat: ' or line:sub(-1) ~= '\\n'\n"
    "      or line:sub(1, -2):find('\\n', 1, true) then\n"
    "    error('the error is not one stderr line: ' .. string.format('%q', line), 0)\n"
    "  end\n"
    "  argparse.format_error(err)\n"
    "  tostring(err)\n"
    "end\n";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_lua_init(DRIVER, 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_lua_run(data, size);
    return 0;
}
