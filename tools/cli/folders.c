/* The tools' side of folders written whole (sluice/core/folder.h): where a
 * folder came from, and what a baseline's name may be. */
#include <string.h>
#include <unistd.h>

#include "cli.h"

void sl__cli_origin(int argc, char **argv, sl__origin *out)
{
    sl_environment env;
    sl_environment_collect(&env);
    sl__cli_copy(out->commit, sizeof out->commit, env.git_commit);
    char host[128] = "unknown";
    if (gethostname(host, sizeof host) != 0)
        sl__cli_copy(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    snprintf(out->machine, sizeof out->machine, "%s (%s)", host, env.cpu_model);
    size_t used = (size_t)snprintf(out->command, sizeof out->command, "sluice");
    for (int i = 0; i < argc && used < sizeof out->command; i++) {
        /* Arguments with spaces are quoted, so the line can be run again. */
        bool quote = strpbrk(argv[i], " \t'\"") != NULL || argv[i][0] == '\0';
        used += (size_t)snprintf(out->command + used, sizeof out->command - used, quote ? " '%s'" : " %s", argv[i]);
    }
    out->view = (sl_folder_origin){out->commit, out->machine, out->command};
}

void sl__cli_baseline_name(const sl__cli *cli, const char *name)
{
    static const char allowed[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";
    if (name[0] == '\0' || name[0] == '.' || strspn(name, allowed) != strlen(name))
        sl__cli_usage_error(cli, "baseline name '%s' must be letters, digits, '-', '_' or '.', and not start with '.'",
                            name);
}

bool sl__baseline_file_name(const char *name)
{
    size_t len = strlen(name);
    return strcmp(name, SL_FOLDER_MANIFEST) == 0 || (len > 5 && strcmp(name + len - 5, ".json") == 0);
}
