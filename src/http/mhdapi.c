/* mhdapi.c - libmicrohttpd loaded on first use; see src/http/mhdapi.h. */
#include "http/mhdapi.h"

#include "agentchat/dynlib.h"

struct ac_mhd_api ac_mhd;

static int loaded;

int ac_mhd_load(struct ac_err *err)
{
    static const char *const libs[] = { "libmicrohttpd.so.12" };
    static const struct ac_dynsym syms[] = {
        { "MHD_start_daemon", offsetof(struct ac_mhd_api, start_daemon) },
        { "MHD_stop_daemon", offsetof(struct ac_mhd_api, stop_daemon) },
        { "MHD_get_daemon_info", offsetof(struct ac_mhd_api, get_daemon_info) },
        { "MHD_lookup_connection_value", offsetof(struct ac_mhd_api, lookup_connection_value) },
        { "MHD_get_connection_values", offsetof(struct ac_mhd_api, get_connection_values) },
        { "MHD_create_response_from_buffer",
          offsetof(struct ac_mhd_api, create_response_from_buffer) },
        { "MHD_create_response_from_callback",
          offsetof(struct ac_mhd_api, create_response_from_callback) },
        { "MHD_add_response_header", offsetof(struct ac_mhd_api, add_response_header) },
        { "MHD_queue_response", offsetof(struct ac_mhd_api, queue_response) },
        { "MHD_destroy_response", offsetof(struct ac_mhd_api, destroy_response) },
    };
    struct ac_mhd_api api;
    const char *missing;

    if (loaded)
        return 0;
    if (!ac_dynlib_load(libs, 1, syms, sizeof syms / sizeof syms[0], &api, &missing)) {
        if (missing)
            return ac_err_set(err, AC_EXIT_GENERAL, "SERVE_UNAVAILABLE",
                              "the loaded libmicrohttpd lacks %s", missing);
        return ac_err_set(err, AC_EXIT_GENERAL, "SERVE_UNAVAILABLE",
                          "serve needs libmicrohttpd 12 (apt-get install libmicrohttpd12)");
    }
    /* Stays loaded for the life of the process (its threads and GnuTLS's
     * global state). */
    ac_mhd = api;
    loaded = 1;
    return 0;
}
