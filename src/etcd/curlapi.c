/* curlapi.c - libcurl loaded on first use; see src/etcd/curlapi.h. */
#include "etcd/curlapi.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

struct ac_curl_api ac_curl;

static int loaded;

/* dlsym's void * into a function pointer slot: POSIX guarantees the
 * representation; memcpy keeps compilers from warning about the cast. */
static int sym(void *lib, const char *name, void *slot)
{
    void *p = dlsym(lib, name);
    if (!p)
        return -1;
    memcpy(slot, &p, sizeof p);
    return 0;
}

int ac_curl_load(struct ac_err *err)
{
    static const char *const libs[] = { "libcurl.so.4", "libcurl-gnutls.so.4" };
    static const struct {
        const char *name;
        size_t offset;
    } syms[] = {
        { "curl_global_init", offsetof(struct ac_curl_api, global_init) },
        { "curl_easy_init", offsetof(struct ac_curl_api, easy_init) },
        { "curl_easy_setopt", offsetof(struct ac_curl_api, easy_setopt) },
        { "curl_easy_perform", offsetof(struct ac_curl_api, easy_perform) },
        { "curl_easy_getinfo", offsetof(struct ac_curl_api, easy_getinfo) },
        { "curl_easy_cleanup", offsetof(struct ac_curl_api, easy_cleanup) },
        { "curl_easy_strerror", offsetof(struct ac_curl_api, easy_strerror) },
        { "curl_slist_append", offsetof(struct ac_curl_api, slist_append) },
        { "curl_slist_free_all", offsetof(struct ac_curl_api, slist_free_all) },
        { "curl_multi_init", offsetof(struct ac_curl_api, multi_init) },
        { "curl_multi_add_handle", offsetof(struct ac_curl_api, multi_add_handle) },
        { "curl_multi_remove_handle", offsetof(struct ac_curl_api, multi_remove_handle) },
        { "curl_multi_poll", offsetof(struct ac_curl_api, multi_poll) },
        { "curl_multi_perform", offsetof(struct ac_curl_api, multi_perform) },
        { "curl_multi_info_read", offsetof(struct ac_curl_api, multi_info_read) },
        { "curl_multi_cleanup", offsetof(struct ac_curl_api, multi_cleanup) },
    };
    struct ac_curl_api api;
    void *lib = NULL;
    size_t i;

    if (loaded)
        return 0;
    for (i = 0; i < sizeof libs / sizeof libs[0] && !lib; i++)
        lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG",
                          "the etcd store needs libcurl 4 (apt-get install libcurl4)");
    for (i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        if (sym(lib, syms[i].name, (char *)&api + syms[i].offset) == -1) {
            dlclose(lib);
            return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG",
                              "the loaded libcurl lacks %s (libcurl 7.66 or later is needed)",
                              syms[i].name);
        }
    }
    if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        dlclose(lib);
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_NOMEM", "cannot initialise libcurl");
    }
    /* The library stays loaded for the life of the process: libcurl and
     * OpenSSL keep global state that a dlclose would pull away. */
    ac_curl = api;
    loaded = 1;
    return 0;
}
