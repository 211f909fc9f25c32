/*
 * curlapi.h - libcurl, loaded when the first etcd client opens.
 *
 * Linking libcurl (Debian's libcurl4, OpenSSL flavour) into agent-chat
 * would make every process load it and its ~35 dependencies (OpenSSL,
 * GnuTLS, Kerberos, LDAP, nghttp2, ...): 13 M cycles of relocations in
 * the dynamic loader against 0.25 M without, several milliseconds per
 * command even for a folder store, which never talks to etcd. So the
 * client calls libcurl through this table, which ac_curl_load fills with
 * dlopen/dlsym the first time an etcd client is opened. Only src/etcd/
 * uses it (make check-layers: no curl outside src/etcd/).
 *
 * Calling sequence:
 *     if (ac_curl_load(&err) == -1) return -1;     // idempotent
 *     CURL *c = ac_curl.easy_init();
 *
 * Error handling: ac_curl_load returns 0, or -1 with err = ETCD_CONFIG
 * when no libcurl 4 can be loaded (the message says which package).
 */
#ifndef AGENTCHAT_ETCD_CURLAPI_H
#define AGENTCHAT_ETCD_CURLAPI_H

#include <curl/curl.h>

#include "agentchat/err.h"

/* The members have the types of curl.h's declarations (__typeof__), so a
 * mismatch is a compile error, not a crash. */
struct ac_curl_api {
    __typeof__(curl_global_init) *global_init;
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_perform) *easy_perform;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_strerror) *easy_strerror;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
    __typeof__(curl_multi_init) *multi_init;
    __typeof__(curl_multi_add_handle) *multi_add_handle;
    __typeof__(curl_multi_remove_handle) *multi_remove_handle;
    __typeof__(curl_multi_poll) *multi_poll;
    __typeof__(curl_multi_perform) *multi_perform;
    __typeof__(curl_multi_info_read) *multi_info_read;
    __typeof__(curl_multi_cleanup) *multi_cleanup;
};

extern struct ac_curl_api ac_curl;

/* Load libcurl (libcurl.so.4, else libcurl-gnutls.so.4) and run
 * curl_global_init, once per process. */
int ac_curl_load(struct ac_err *err);

#endif
