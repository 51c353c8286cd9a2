/* A loader of the user's, named on the command line as
 * `peer:<path to a .py file>` (docs/peers.md, "Bring your own loader"): run
 * under the same protocol, limits, checks and ranking as the built-in
 * peers. sluice asks the script what it implements (`--describe`, which
 * peers/sluice_peer.py answers from the ops the loader declares), so a
 * scenario with an op it lacks is excluded with the op named, as for any
 * adapter. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/internal.h"
#include "peer.h"
#include "sluice/core/timing.h"

#define MAX_USER_PEERS 8

typedef struct user_peer {
    sl__peer peer;
    char name[32];
    char path[PATH_MAX];
    char summary[PATH_MAX + 64];
} user_peer;

static user_peer users[MAX_USER_PEERS];
static int nusers;

int sl__user_peer_count(void)
{
    return nusers;
}

const sl_adapter *sl__user_peer_at(int index)
{
    return index >= 0 && index < nusers ? &users[index].peer.adapter : NULL;
}

static bool looks_like_a_path(const char *target)
{
    size_t n = strlen(target);
    return strchr(target, '/') != NULL || (n > 3 && strcmp(target + n - 3, ".py") == 0);
}

/* Runs `python SCRIPT --describe` and reads what it implements and how it
 * computes (per batch, prefetching, all at once). */
static sl_status describe(user_peer *u, sl_err *err)
{
    const char *argv[] = {sl__peer_python(), u->path, "--describe", NULL};
    sl__peer_child c;
    /* The probe runs the user's file, imports and all, so it runs under the
     * same sweep as a session (D20): a daemon its import starts, even one
     * that left the group and session, is killed when the probe ends. */
    sl__peer_reaper reaper;
    sl__peer_reaper_begin(&reaper);
    sl_status st = sl__peer_spawn(&c, argv, false, -1, err);
    if (st) {
        sl__peer_reaper_end(&reaper);
        return st;
    }
    int got = sl__peer_read_line(&c, sl_now_ns() + 120000000000LL);
    char how[64], tail[200];
    cJSON *line = got == 1 ? cJSON_Parse(c.line) : NULL;
    bool clean = sl__peer_finish(&c, 10000000000LL, NULL, how, sizeof how);
    sl__peer_reaper_end(&reaper);
    const cJSON *supports = cJSON_GetObjectItemCaseSensitive(line, "supports");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(line, "kind");
    if (!clean || !cJSON_IsArray(supports)) {
        cJSON_Delete(line);
        return sl_fail(err, SL_EINVAL,
                       "%s: asked with --describe, it did not print {\"supports\": [op, ...]} (it %s; stderr: %s); "
                       "a loader written with peers/sluice_peer.py's main() answers it (docs/peers.md)",
                       u->path, how, sl__peer_stderr_tail(&c, tail, sizeof tail));
    }
    sl_transform_set set = 0;
    const cJSON *op;
    cJSON_ArrayForEach(op, supports)
    {
        sl_op_kind k;
        if (!cJSON_IsString(op) || !sl_op_kind_parse(op->valuestring, &k)) {
            st = sl_fail(err, SL_EINVAL, "%s: --describe names '%s', which is no sluice op", u->path,
                         cJSON_IsString(op) ? op->valuestring : "(not a string)");
            break;
        }
        set |= SL_TRANSFORM(k);
    }
    u->peer.adapter.transforms = set;
    if (cJSON_IsString(kind))
        u->peer.kind = strcmp(kind->valuestring, "prefetching") == 0   ? SL__PEER_PREFETCHING
                       : strcmp(kind->valuestring, "all-at-once") == 0 ? SL__PEER_ALL_AT_ONCE
                                                                       : SL__PEER_PER_BATCH;
    cJSON_Delete(line);
    return st;
}

sl_status sl__peer_loader_file(const char *path, char *resolved, size_t size, sl_err *err)
{
    char full[PATH_MAX];
    struct stat info;
    if (!realpath(path, full) || stat(full, &info) != 0 || !S_ISREG(info.st_mode))
        return sl_fail(err, SL_EIO, "%s: no such loader file", path);
    if (snprintf(resolved, size, "%s", full) >= (int)size)
        return sl_fail(err, SL_EINVAL, "%s: its path is longer than %zu bytes", path, size - 1);
    return SL_OK;
}

const sl_adapter *sl__user_peer(const char *name, sl_err *err)
{
    if (strncmp(name, "peer:", 5) != 0 || !looks_like_a_path(name + 5)) {
        sl_fail(err, SL_EINVAL, "'%s' is not peer:<path to a .py file>", name);
        return NULL;
    }
    char resolved[PATH_MAX];
    if (sl__peer_loader_file(name + 5, resolved, sizeof resolved, err) != SL_OK)
        return NULL;
    for (int i = 0; i < nusers; i++)
        if (strcmp(users[i].path, resolved) == 0)
            return &users[i].peer.adapter;
    if (nusers == MAX_USER_PEERS) {
        sl_fail(err, SL_EINVAL, "at most %d loaders of one's own per run", MAX_USER_PEERS);
        return NULL;
    }
    user_peer *u = &users[nusers];
    memset(u, 0, sizeof *u);
    snprintf(u->path, sizeof u->path, "%s", resolved);
    const char *base = strrchr(resolved, '/');
    /* The adapter's name, cut at a character and with no control
     * character: it goes into every record of the loader (D22). */
    char name_full[PATH_MAX + 8];
    snprintf(name_full, sizeof name_full, "peer:%s", base ? base + 1 : resolved);
    sl__copy_string(u->name, sizeof u->name, name_full);
    sl__text_printable(u->name);
    snprintf(u->summary, sizeof u->summary, "a loader of the user's, %s", resolved);
    u->peer = (sl__peer){
        .adapter = {.name = u->name,
                    .summary = u->summary,
                    .backend = "cpu",
                    .kernels = SL_KERNELS_REFERENCE,
                    .run = sl__peer_run,
                    .framework = sl__peer_framework,
                    .annotate = sl__peer_annotate},
        .script = u->path,
        .args = "--workers=0",
        .users_own = true,
    };
    if (describe(u, err) != SL_OK)
        return NULL;
    nusers++;
    return &u->peer.adapter;
}
