/* The guard of mappings (see mapguard.h): SIGBUS in a file mapping whose
 * file shrank, SIGSEGV in a reserved mapping outside the rows made
 * readable. The handler only reads atomics and calls mmap and sigaction, so
 * it takes no lock and allocates nothing: it may interrupt any thread
 * anywhere, including one that is registering a mapping. */
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
    atomic_uintptr_t start; /* 0 while the slot is being filled or emptied */
    atomic_size_t length;
    atomic_int signo; /* SIGBUS (a file mapping) or SIGSEGV (a reserved one) */
    atomic_bool damaged;
} guard_slot;

static guard_slot slots[GUARD_SLOTS];
/* What handled each signal before the guard: 0 for SIGBUS, 1 for SIGSEGV. */
static struct sigaction previous_action[2];
static pthread_once_t install_bus_once = PTHREAD_ONCE_INIT, install_segv_once = PTHREAD_ONCE_INIT;

static int which(int signo)
{
    return signo == SIGSEGV;
}

/* Replaces [from's page, end) with anonymous zero pages at the same
 * addresses, readable. Returns false when that fails, and the fault then
 * takes its default course. */
static bool zero_fill(uintptr_t from, uintptr_t end)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    from &= ~(page - 1);
    void *at = mmap((void *)from, end - from, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    return at != MAP_FAILED;
}

static void pass_on(int signo, siginfo_t *info, void *context)
{
    const struct sigaction *previous = &previous_action[which(signo)];
    if (previous->sa_flags & SA_SIGINFO) {
        if (previous->sa_sigaction) {
            previous->sa_sigaction(signo, info, context);
            return;
        }
    } else if (previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN) {
        previous->sa_handler(signo);
        return;
    }
    /* The default action: returning re-runs the faulting access, which now
     * raises the signal with no handler and ends the process as it would
     * have. */
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(signo, &fallback, NULL);
}

static void on_fault(int signo, siginfo_t *info, void *context)
{
    uintptr_t fault = (uintptr_t)info->si_addr;
    for (int i = 0; i < GUARD_SLOTS; i++) {
        uintptr_t start = atomic_load(&slots[i].start);
        size_t length = atomic_load(&slots[i].length);
        if (start == 0 || fault < start || fault - start >= length || atomic_load(&slots[i].signo) != signo)
            continue;
        /* A file that shrank: the rest of the mapping is past its end.
         * A reserved mapping: only the page read is outside the rows made
         * readable; its neighbours may be rows that are there. */
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t end = signo == SIGBUS ? start + length : (fault & ~(page - 1)) + page;
        if (zero_fill(fault, end)) {
            atomic_store(&slots[i].damaged, true);
            return;
        }
        break;
    }
    pass_on(signo, info, context);
}

static void install(int signo)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(signo, &action, &previous_action[which(signo)]);
}

static void install_bus(void)
{
    install(SIGBUS);
}

static void install_segv(void)
{
    install(SIGSEGV);
}

static int take_slot(void *start, size_t length, int signo)
{
    pthread_once(signo == SIGBUS ? &install_bus_once : &install_segv_once,
                 signo == SIGBUS ? install_bus : install_segv);
    for (int i = 0; i < GUARD_SLOTS; i++) {
        bool expected = false;
        if (!atomic_compare_exchange_strong(&slots[i].used, &expected, true))
            continue;
        atomic_store(&slots[i].damaged, false);
        atomic_store(&slots[i].length, length);
        atomic_store(&slots[i].signo, signo);
        atomic_store(&slots[i].start, (uintptr_t)start);
        return i;
    }
    return -1;
}

int sl__mapguard_register(void *start, size_t length)
{
    return take_slot(start, length, SIGBUS);
}

int sl__mapguard_register_reserved(void *start, size_t length)
{
    return take_slot(start, length, SIGSEGV);
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
