/* The GNU build id of the code this function is linked into: a digest the
 * linker computes over the linked object, so it changes whenever a single
 * instruction does, which a commit hash alone cannot promise (an
 * uncommitted change, another compiler, other flags). */
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

typedef struct build_id_search {
    uintptr_t address;
    char *out;
    size_t size;
    bool found;
} build_id_search;

static bool contains(const struct dl_phdr_info *info, uintptr_t address)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && address >= start && address - start < ph->p_memsz)
            return true;
    }
    return false;
}

/* Notes are 4-byte aligned records: a header, the name, the descriptor. */
static bool read_note(const struct dl_phdr_info *info, const ElfW(Phdr) * ph, build_id_search *search)
{
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    const unsigned char *end = p + ph->p_memsz;
    while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
        const ElfW(Nhdr) *note = (const ElfW(Nhdr) *)p;
        size_t name_size = (note->n_namesz + 3u) & ~3u, desc_size = (note->n_descsz + 3u) & ~3u;
        const unsigned char *name = p + sizeof *note, *desc = name + name_size;
        if ((size_t)(end - name) < name_size + desc_size)
            return false;
        if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
            note->n_descsz > 0 && search->size > 2 * (size_t)note->n_descsz) {
            for (size_t i = 0; i < note->n_descsz; i++)
                snprintf(search->out + 2 * i, 3, "%02x", desc[i]);
            return true;
        }
        p = desc + desc_size;
    }
    return false;
}

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    build_id_search *search = data;
    if (!contains(info, search->address))
        return 0;
    for (int i = 0; i < info->dlpi_phnum && !search->found; i++)
        if (info->dlpi_phdr[i].p_type == PT_NOTE)
            search->found = read_note(info, &info->dlpi_phdr[i], search);
    return 1;
}

bool sl__build_id(char *buf, size_t size)
{
    if (size)
        buf[0] = '\0';
    build_id_search search = {(uintptr_t)&sl__build_id, buf, size, false};
    dl_iterate_phdr(visit, &search);
    return search.found;
}
