/*
 * dynlib.h - a shared library loaded with dlopen on first use, its
 * functions copied into a table of pointers (libcurl for the etcd client,
 * libmicrohttpd for serve: commands that never need them never pay for
 * loading them, and the binary runs without them installed).
 *
 *   static const char *const libs[] = { "libx.so.1", "libx-alt.so.1" };
 *   static const struct ac_dynsym syms[] = {
 *       { "x_open", offsetof(struct x_api, open) }, ...
 *   };
 *   struct x_api api;
 *   const char *missing;
 *   void *lib = ac_dynlib_load(libs, 2, syms, 2, &api, &missing);
 *
 * Returns the library handle with every slot of `api` filled, or NULL
 * with *missing naming the symbol the library lacks (NULL: no library of
 * the list could be opened, tried in order). On failure the library is
 * closed again and `api` may be partly written. The caller keeps the
 * handle open for the life of the process (libraries with global state).
 */
#ifndef AGENTCHAT_DYNLIB_H
#define AGENTCHAT_DYNLIB_H

#include <stddef.h>

struct ac_dynsym {
    const char *name;
    size_t offset;              /* of its function pointer in the table */
};

void *ac_dynlib_load(const char *const *libs, size_t nlibs, const struct ac_dynsym *syms,
                     size_t nsyms, void *api, const char **missing);

#endif
