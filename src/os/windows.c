/* This file is private to weft: the OS seam on Windows (os.h says what
 * each call does; os_windows.h holds the hot-path ones).
 *
 * Readiness (the poller, a thread's one-socket wait) and child processes
 * are in windows_net.c. Symbol names come from the export tables.
 *
 * Synchronization
 *   weft__os_qpc_hz  see os_windows.h.
 *   page        the page size, cached by the first caller; racing first
 *               callers store the same value (relaxed).
 *   fault_fn    weft's fault callback: the first caller's, set (CAS from
 *               NULL) before fault_once installs the handler that reads it.
 *   fault_once  the vectored exception handler, added once per process.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "os.h"

atomic_llong weft__os_qpc_hz;

/* ---- time ---------------------------------------------------------------- */

uint64_t weft__os_wall_ns(void)
{
    FILETIME ft;
    GetSystemTimePreciseAsFileTime(&ft);
    /* 100 ns ticks since 1601; 1970 is 11644473600 s later. */
    uint64_t t = (uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime;
    return (t - 116444736000000000ull) * 100u;
}

void weft__os_sleep_ns(uint64_t ns)
{
    /* Sleep takes milliseconds: round up, never short. 0 ns yields. */
    if (!ns) {
        SwitchToThread();
        return;
    }
    uint64_t end = weft__os_now_ns() + ns;
    for (uint64_t now = weft__os_now_ns(); now < end; now = weft__os_now_ns())
        Sleep(weft__os_wait_ms(end - now));
}

/* ---- the process-wide barrier ------------------------------------------- */

bool weft__os_barrier_setup(void)
{
    return true;   /* FlushProcessWriteBuffers needs no registration */
}

/* ---- CPUs and threads ---------------------------------------------------- */

unsigned weft__os_cpu_count(void)
{
    /* Every group's CPUs: more than 64 are in several groups. The
     * process's affinity within them is the next stage's. */
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n ? (unsigned)n : 1u;
}

int weft__os_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
    (void)name;   /* SetThreadDescription takes UTF-16: the next stage's */
    return pthread_create(t, NULL, fn, arg);
}

void weft__os_thread_join(pthread_t t)
{
    pthread_join(t, NULL);
}

void weft__os_thread_stack(void **lo, size_t *size)
{
    ULONG_PTR l, h;
    GetCurrentThreadStackLimits(&l, &h);
    if (h > l) {
        *lo = (void *)l;
        *size = (size_t)(h - l);
    }
}

/* ---- memory -------------------------------------------------------------- */

size_t weft__os_page_size(void)
{
    static atomic_size_t page;
    size_t v = atomic_load_explicit(&page, memory_order_relaxed);   /* relaxed: see Synchronization */
    if (!v) {
        SYSTEM_INFO si;
        GetSystemInfo(&si);
        v = si.dwPageSize;
        atomic_store_explicit(&page, v, memory_order_relaxed);
    }
    return v;
}

void *weft__os_map_stack(size_t size, size_t guard)
{
    /* Laid out as Windows lays out a thread's stack, so that its own
     * overflow handling works on it once the switch has put the bounds
     * in the thread information block: the stack committed (Windows
     * charges the commit now but gives pages only when touched, as
     * Linux does), the guard reserved only, except its top page, a guard
     * page. Running into it, the OS commits the guard downwards page by
     * page and raises STATUS_STACK_OVERFLOW near the bottom, with room
     * left for the exception handler (on_exception), which reports. */
    char *m = VirtualAlloc(NULL, size, MEM_RESERVE, PAGE_NOACCESS);
    if (!m)
        return NULL;
    size_t ps = weft__os_page_size();
    if (!VirtualAlloc(m + guard, size - guard, MEM_COMMIT, PAGE_READWRITE) ||
        (guard >= ps && !VirtualAlloc(m + guard - ps, ps, MEM_COMMIT, PAGE_READWRITE | PAGE_GUARD))) {
        VirtualFree(m, 0, MEM_RELEASE);
        return NULL;
    }
    return m;
}

void weft__os_unmap_stack(void *m, size_t size)
{
    (void)size;   /* MEM_RELEASE frees the whole reservation */
    VirtualFree(m, 0, MEM_RELEASE);
}

void weft__os_trim_heap(void)
{
}

/* ---- faults and messages ------------------------------------------------- */

static _Atomic(weft__os_fault_fn *) fault_fn;
static INIT_ONCE fault_once = INIT_ONCE_STATIC_INIT;

/* Runs on the faulting thread's stack (Windows has no alternate stack):
 * a stack overflow is raised with room left below (SetThreadStackGuarantee
 * on a thread's own stack; the committed guard on a fiber's, see
 * weft__os_map_stack). The address handed on: an access violation's
 * (the second parameter), or for a stack overflow the lower of the
 * stack pointer and the stack limit the OS has moved down into the guard
 * as it committed it (a probe of a big frame overflows while the stack
 * pointer is still above the guard). */
static LONG CALLBACK on_exception(EXCEPTION_POINTERS *ep)
{
    EXCEPTION_RECORD *r = ep->ExceptionRecord;
    void *addr = NULL;
    if (r->ExceptionCode == EXCEPTION_ACCESS_VIOLATION && r->NumberParameters >= 2)
        addr = (void *)r->ExceptionInformation[1];
    else if (r->ExceptionCode == EXCEPTION_STACK_OVERFLOW) {
        uintptr_t sp = (uintptr_t)ep->ContextRecord->Rsp;
        uintptr_t limit;
        /* The TIB's StackLimit, read as the switch does (NtCurrentTeb
         * draws a false -Warray-bounds from gcc 12). */
        __asm__ volatile("movq %%gs:0x10, %0" : "=r"(limit));
        addr = (void *)(sp < limit ? sp : limit);
    }
    weft__os_fault_fn *fn = atomic_load_explicit(&fault_fn, memory_order_acquire);
    if (addr && fn)
        fn(addr);
    return EXCEPTION_CONTINUE_SEARCH;
}

static BOOL CALLBACK install_handler(INIT_ONCE *once, void *param, void **ctx)
{
    return AddVectoredExceptionHandler(1, on_exception) != NULL;
}

int weft__os_fault_enter(weft__os_fault_fn *fn)
{
    weft__os_fault_fn *none = NULL;
    atomic_compare_exchange_strong_explicit(&fault_fn, &none, fn, memory_order_release,
                                            memory_order_relaxed);
    if (!InitOnceExecuteOnce(&fault_once, install_handler, NULL, NULL))
        return ENOMEM;
    /* Room on this thread's own stack for the handler after an overflow. */
    ULONG guarantee = 64 * 1024;
    SetThreadStackGuarantee(&guarantee);
    return 0;
}

void weft__os_fault_leave(void)
{
}

void weft__os_write_err(const char *msg, size_t len)
{
    HANDLE h = GetStdHandle(STD_ERROR_HANDLE);
    while (len) {
        DWORD n = 0;
        if (!WriteFile(h, msg, len > 0x10000000u ? 0x10000000u : (DWORD)len, &n, NULL) || !n)
            return;
        msg += n;
        len -= n;
    }
}

const char *weft__os_symbol_name(const void *addr)
{
    /* As dladdr reads the dynamic symbol table: the export table of the
     * module (the program or a DLL) that holds addr, and the name whose
     * address is addr itself. A program exports its functions when
     * linked with --export-all-symbols (CMake's ENABLE_EXPORTS, as
     * -rdynamic on Linux). The name lives in the mapped image. */
    HMODULE mod;
    if (!GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                                GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCSTR)addr, &mod))
        return NULL;
    const char *base = (const char *)mod;
    const IMAGE_DOS_HEADER *dos = (const IMAGE_DOS_HEADER *)base;
    const IMAGE_NT_HEADERS *nt = (const IMAGE_NT_HEADERS *)(base + dos->e_lfanew);
    const IMAGE_DATA_DIRECTORY *dir = &nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_EXPORT];
    if (!dir->VirtualAddress || !dir->Size)
        return NULL;
    const IMAGE_EXPORT_DIRECTORY *ex = (const IMAGE_EXPORT_DIRECTORY *)(base + dir->VirtualAddress);
    const DWORD *funcs = (const DWORD *)(base + ex->AddressOfFunctions);
    const DWORD *names = (const DWORD *)(base + ex->AddressOfNames);
    const WORD *ords = (const WORD *)(base + ex->AddressOfNameOrdinals);
    uintptr_t rva = (uintptr_t)addr - (uintptr_t)base;
    for (DWORD i = 0; i < ex->NumberOfNames; i++)
        if (ords[i] < ex->NumberOfFunctions && funcs[ords[i]] == rva)
            return base + names[i];
    return NULL;
}

/* ---- signals: none on Windows (weft/proc.h); process spawn is in
 * windows_proc.c ------------------------------------------------------------ */

int weft__os_signal_block(uint64_t sigs)
{
    (void)sigs;
    return -EINVAL;
}

uint64_t weft__os_signal_blocked(void)
{
    return 0;
}

int weft__os_signal_open(uint64_t sigs)
{
    (void)sigs;
    return -ENOSYS;
}

int weft__os_signal_take(int fd)
{
    (void)fd;
    return -ENOSYS;
}
