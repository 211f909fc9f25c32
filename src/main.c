/*
 * main.c - process entry: signals, then the Lua host runs the CLI.
 *
 * SIGINT and SIGTERM only set a flag that every blocking loop checks, so a
 * stop request always runs the normal cleanup (temp files, the seq lock).
 * A SIGTERM is re-raised after cleanup so callers still see "killed by
 * SIGTERM"; SIGINT ends with exit status 130 ("cancelled by user").
 */
#include <signal.h>
#include <stdio.h>

#include "agentchat/clock.h"
#include "agentchat/lua_host.h"

int main(int argc, char **argv)
{
    int code;

    ac_clock_install_signals();
    code = ac_lua_main(argc, argv);
    fflush(NULL);
    if (ac_clock_interrupted() == SIGTERM) {
        signal(SIGTERM, SIG_DFL);
        raise(SIGTERM);
    }
    return code;
}
