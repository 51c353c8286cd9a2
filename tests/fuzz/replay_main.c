/* Replays files through a fuzz target without libFuzzer: the committed seed
 * inputs and every input that once crashed a reader run in the ordinary
 * test suite (and under ASan+UBSan in its sanitized build), so a fixed crash
 * stays fixed on machines that never fuzz. Usage: replay FILE_OR_DIR... */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_input.h"

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || st.st_size > (1 << 24)) {
        fprintf(stderr, "replay: %s is not a small regular file\n", path);
        fclose(f);
        return 1;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *data = malloc(size ? size : 1);
    size_t got = data ? fread(data, 1, size, f) : 0;
    fclose(f);
    if (got != size) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(data);
        return 1;
    }
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    int failures = 0, replayed = 0;
    for (int i = 1; i < argc; i++) {
        DIR *dir = opendir(argv[i]);
        if (!dir) {
            failures += replay_file(argv[i]);
            replayed++;
            continue;
        }
        struct dirent *entry;
        while ((entry = readdir(dir)) != NULL) {
            if (entry->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], entry->d_name);
            failures += replay_file(path);
            replayed++;
        }
        closedir(dir);
    }
    printf("replayed %d inputs, %d unreadable\n", replayed, failures);
    /* An empty corpus would make this test pass while checking nothing. */
    return failures || replayed == 0 ? 1 : 0;
}
