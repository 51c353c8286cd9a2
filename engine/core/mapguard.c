/* The SIGBUS guard of file mappings (see mapguard.h). The handler only reads
 * atomics and calls mmap and sigaction, so it takes no lock and allocates
 * nothing: it may interrupt any thread anywhere, including one that is
 * registering a mapping. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/mapguard.h"

/* More mappings than any pipeline holds at once (a file source maps one per
 * field, and a process runs a few sources at a time). */
#define GUARD_SLOTS 256

typedef struct guard_slot {
    atomic_bool used;
    atomic_uintptr_t start;  /* 0 while the slot is being filled or emptied */
    atomic_size_t length;
    atomic_bool damaged;
} guard_slot;

static guard_slot slots[GUARD_SLOTS];
static struct sigaction previous_action;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

/* Replaces the rest of the mapping, from the faulting page, with zero pages
 * at the same addresses. Returns false when that fails, and the fault then
 * takes its default course. */
static bool zero_fill_from(uintptr_t fault, uintptr_t start, size_t length)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = fault & ~(page - 1);
    uintptr_t end = start + length;
    void *at = mmap((void *)from, end - from, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    return at != MAP_FAILED;
}

static void pass_on(int signo, siginfo_t *info, void *context)
{
    if (previous_action.sa_flags & SA_SIGINFO) {
        if (previous_action.sa_sigaction) {
            previous_action.sa_sigaction(signo, info, context);
            return;
        }
    } else if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN) {
        previous_action.sa_handler(signo);
        return;
    }
    /* The default action: returning re-runs the faulting access, which now
     * raises SIGBUS with no handler and ends the process as it would have. */
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(SIGBUS, &fallback, NULL);
}

static void on_sigbus(int signo, siginfo_t *info, void *context)
{
    uintptr_t fault = (uintptr_t)info->si_addr;
    for (int i = 0; i < GUARD_SLOTS; i++) {
        uintptr_t start = atomic_load(&slots[i].start);
        size_t length = atomic_load(&slots[i].length);
        if (start == 0 || fault < start || fault - start >= length)
            continue;
        if (zero_fill_from(fault, start, length)) {
            atomic_store(&slots[i].damaged, true);
            return;
        }
        break;
    }
    pass_on(signo, info, context);
}

static void install(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &previous_action);
}

int sl__mapguard_register(void *start, size_t length)
{
    pthread_once(&install_once, install);
    for (int i = 0; i < GUARD_SLOTS; i++) {
        bool expected = false;
        if (!atomic_compare_exchange_strong(&slots[i].used, &expected, true))
            continue;
        atomic_store(&slots[i].damaged, false);
        atomic_store(&slots[i].length, length);
        atomic_store(&slots[i].start, (uintptr_t)start);
        return i;
    }
    return -1;
}

void sl__mapguard_unregister(int slot)
{
    if (slot < 0 || slot >= GUARD_SLOTS)
        return;
    atomic_store(&slots[slot].start, 0);
    atomic_store(&slots[slot].length, 0);
    atomic_store(&slots[slot].used, false);
}

bool sl__mapguard_damaged(int slot)
{
    return slot >= 0 && slot < GUARD_SLOTS && atomic_load_explicit(&slots[slot].damaged, memory_order_relaxed);
}
