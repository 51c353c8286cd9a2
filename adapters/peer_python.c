/* Whether a peer can run here: its Python, with the modules it imports, or
 * why not. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "peer.h"
#include "sluice/core/timing.h"

bool sl__peer_python_has(const char *modules, char *reason, size_t size)
{
    return sl__peer_python_has_in(sl__peer_python(), modules, reason, size);
}

bool sl__peer_python_has_in(const char *python, const char *modules, char *reason, size_t size)
{
    /* Asked once per Python and module list: sluice list and every bench
     * record ask. */
    static struct {
        char python[256];
        const char *modules;
        bool ok;
        char reason[256];
    } cache[24];
    enum { CACHED = sizeof cache / sizeof cache[0] };
    for (int i = 0; i < CACHED && cache[i].modules; i++)
        if ((cache[i].modules == modules || strcmp(cache[i].modules, modules) == 0) &&
            strcmp(cache[i].python, python) == 0) {
            if (!cache[i].ok && reason && size)
                snprintf(reason, size, "%s", cache[i].reason);
            return cache[i].ok;
        }
    bool ok = false;
    char why[256] = "";
    if (access(python, X_OK) != 0) {
        snprintf(why, sizeof why,
                 "no Python at %.120s (ci/install-peers.sh makes it, or set SLUICE_PYTHON, "
                 "SLUICE_PEER_PYTHON, SLUICE_TORCH_PYTHON or SLUICE_DATARAX_PYTHON)",
                 python);
    } else {
        char list[160];
        snprintf(list, sizeof list, "%s", modules);
        const char *argv[20] = {python, "-c",
                                "import importlib.util, sys\n"
                                "m = [x for x in sys.argv[1:] if importlib.util.find_spec(x) is None]\n"
                                "print(' '.join(m))\n",
                                NULL};
        int n = 3;
        for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && n < 19; tok = strtok_r(NULL, ",", &save))
            argv[n++] = tok;
        argv[n] = NULL;
        sl__peer_child c;
        sl_err err = {0};
        if (sl__peer_spawn(&c, argv, false, -1, &err) != SL_OK) {
            snprintf(why, sizeof why, "%.150s", err.msg);
        } else {
            int got = sl__peer_read_line(&c, sl_now_ns() + 30000000000LL);
            char how[64];
            char missing[128] = "";
            if (got == 1)
                snprintf(missing, sizeof missing, "%.100s", c.line);
            ok = sl__peer_finish(&c, 30000000000LL, NULL, how, sizeof how) && got == 1 && missing[0] == '\0';
            if (!ok && missing[0])
                snprintf(why, sizeof why, "python module(s) missing: %s (ci/install-peers.sh installs them)", missing);
            else if (!ok)
                snprintf(why, sizeof why, "%s could not check its modules: it %s", python, how);
        }
    }
    for (int i = 0; i < CACHED; i++)
        if (!cache[i].modules) {
            snprintf(cache[i].python, sizeof cache[i].python, "%s", python);
            cache[i].modules = modules;
            cache[i].ok = ok;
            snprintf(cache[i].reason, sizeof cache[i].reason, "%s", why);
            break;
        }
    if (!ok && reason && size)
        snprintf(reason, size, "%s", why);
    return ok;
}
