/* Aligned allocation for sources, fixtures, caches, batches and scratch,
 * with transparent huge pages where they pay (docs/adapters.md, "Huge
 * pages").
 *
 * A shuffled gather touches a new page for nearly every element it reads:
 * from a source of hundreds of MiB on 4 KiB pages each element costs a TLB
 * miss and a page walk besides its cache misses. Most distributions set
 * transparent huge pages to `madvise`, so a region gets 2 MiB pages only
 * when asked; numpy asks for its large arrays, and so does sluice here.
 * The advice changes where bytes live, never what they are: nothing a
 * caller computes depends on it, and where the kernel refuses it (THP
 * `never`, a kernel without it) the memory is the same memory on 4 KiB
 * pages. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/internal.h"

bool sl__huge_pages_on(void)
{
    const char *setting = getenv("SLUICE_HUGEPAGES");
    return !(setting && (strcmp(setting, "0") == 0 || strcmp(setting, "off") == 0));
}

void sl__advise_huge(void *memory, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (!memory || bytes < SL_HUGE_PAGE_BYTES || !sl__huge_pages_on())
        return;
    /* Only whole 2 MiB pages inside the block can be huge ones. */
    uintptr_t first = ((uintptr_t)memory + SL_HUGE_PAGE_BYTES - 1) & ~(uintptr_t)(SL_HUGE_PAGE_BYTES - 1);
    uintptr_t end = ((uintptr_t)memory + bytes) & ~(uintptr_t)(SL_HUGE_PAGE_BYTES - 1);
    /* Advice only: a refusal leaves the block on 4 KiB pages, as it was. */
    if (end > first)
        (void)madvise((void *)first, end - first, MADV_HUGEPAGE);
#else
    (void)memory;
    (void)bytes;
#endif
}

void *sl__aligned_alloc(size_t alignment, size_t size)
{
    void *p = NULL;
    /* A block that can hold a huge page starts on one, so that as much of
     * it as possible is made of whole ones. Its size is not rounded up: an
     * advised page is resident whole once touched, so a tail rounded to the
     * next 2 MiB would cost resident memory nobody asked for (IO-2's
     * streaming chunks of 3 MiB took 4 each, and its epoch overran its
     * budget); the tail past the last whole huge page stays on 4 KiB
     * pages. */
    if (size >= SL_HUGE_PAGE_BYTES && sl__huge_pages_on() && alignment <= SL_HUGE_PAGE_BYTES) {
        if (posix_memalign(&p, SL_HUGE_PAGE_BYTES, size) == 0) {
            sl__advise_huge(p, size);
            return p;
        }
        p = NULL;
    }
    /* posix_memalign accepts size 0 but may return NULL; ask for one byte so
     * that NULL always means failure. */
    if (posix_memalign(&p, alignment, size ? size : 1) != 0)
        return NULL;
    return p;
}

/* The selected word of a sysfs choice list: "always [madvise] never". */
static void selected_word(const char *path, char *out, size_t size)
{
    sl__copy_string(out, size, "unknown");
    char line[256];
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    const char *open = got ? strchr(line, '[') : NULL;
    const char *close = open ? strchr(open, ']') : NULL;
    if (close && close - open - 1 < (ptrdiff_t)size) {
        memcpy(out, open + 1, (size_t)(close - open - 1));
        out[close - open - 1] = '\0';
    }
}

void sl__huge_pages_describe(char *enabled, char *defrag, size_t size)
{
    selected_word("/sys/kernel/mm/transparent_hugepage/enabled", enabled, size);
    selected_word("/sys/kernel/mm/transparent_hugepage/defrag", defrag, size);
}

int64_t sl__anon_huge_bytes(void)
{
    return sl__proc_kib_field("/proc/self/smaps_rollup", "AnonHugePages");
}
