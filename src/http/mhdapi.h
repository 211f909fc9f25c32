/*
 * mhdapi.h - libmicrohttpd, loaded when `agent-chat serve` starts.
 *
 * Linking libmicrohttpd would make every process load it and GnuTLS with
 * its dependencies (nettle, gmp, p11-kit, ...), whose relocations cost
 * every command the start-up time that issue 16 took away (the reason the
 * etcd client loads libcurl the same way, src/etcd/curlapi.h). Only the
 * server needs it, so it calls the library through this table, which
 * ac_mhd_load fills with dlopen/dlsym. Only src/http/ uses it.
 *
 * Calling sequence:
 *     if (ac_mhd_load(&err) == -1) return -1;      // idempotent
 *     struct MHD_Daemon *d = ac_mhd.start_daemon(...);
 *
 * Error handling: ac_mhd_load returns 0, or -1 with err = SERVE_UNAVAILABLE
 * (exit 1) when no libmicrohttpd 12 can be loaded (the message names the
 * Debian package).
 */
#ifndef AGENTCHAT_HTTP_MHDAPI_H
#define AGENTCHAT_HTTP_MHDAPI_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <microhttpd.h>

#include "agentchat/err.h"

/* The members have the types of microhttpd.h's declarations (__typeof__),
 * so a mismatch is a compile error, not a crash. */
struct ac_mhd_api {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
    __typeof__(MHD_get_connection_values) *get_connection_values;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_create_response_from_callback) *create_response_from_callback;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
};

extern struct ac_mhd_api ac_mhd;

/* Load libmicrohttpd.so.12, once per process. */
int ac_mhd_load(struct ac_err *err);

#endif
