/* curlapi.c - libcurl loaded on first use; see src/etcd/curlapi.h. */
#include "etcd/curlapi.h"

#include <dlfcn.h>
#include <stddef.h>

#include "agentchat/dynlib.h"

struct ac_curl_api ac_curl;

static int loaded;

int ac_curl_load(struct ac_err *err)
{
    static const char *const libs[] = { "libcurl.so.4", "libcurl-gnutls.so.4" };
    static const struct ac_dynsym syms[] = {
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
    const char *missing;
    void *lib;

    if (loaded)
        return 0;
    lib = ac_dynlib_load(libs, sizeof libs / sizeof libs[0], syms, sizeof syms / sizeof syms[0], &api,
                         &missing);
    if (!lib && missing)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG",
                          "the loaded libcurl lacks %s (libcurl 7.66 or later is needed)", missing);
    if (!lib)
        return ac_err_set(err, AC_EXIT_GENERAL, "ETCD_CONFIG",
                          "the etcd store needs libcurl 4 (apt-get install libcurl4)");
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
