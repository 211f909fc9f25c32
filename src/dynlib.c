/* dynlib.c - shared libraries loaded on first use; see agentchat/dynlib.h. */
#include "agentchat/dynlib.h"

#include <dlfcn.h>
#include <string.h>

void *ac_dynlib_load(const char *const *libs, size_t nlibs, const struct ac_dynsym *syms,
                     size_t nsyms, void *api, const char **missing)
{
    void *lib = NULL;
    size_t i;

    *missing = NULL;
    for (i = 0; i < nlibs && !lib; i++)
        lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return NULL;
    for (i = 0; i < nsyms; i++) {
        void *p = dlsym(lib, syms[i].name);
        if (!p) {
            *missing = syms[i].name;
            dlclose(lib);
            return NULL;
        }
        /* dlsym's void * into a function pointer slot: POSIX guarantees
         * the representation; memcpy keeps compilers from warning about
         * the cast. */
        memcpy((char *)api + syms[i].offset, &p, sizeof p);
    }
    return lib;
}
