/* This file is private to weft: the OS seam, every call weft makes to the
 * operating system, at the level weft needs them.
 *
 * What the seam owns: the clocks, sleeping and yielding, waiting on a
 * 32-bit word and waking its waiters (futex), the process-wide barrier
 * (membarrier), mapping fiber stacks with a guard and the stack-overflow
 * signal on an alternate stack, starting and joining threads, the CPUs
 * the process may use, a readiness poller (epoll and eventfd), the
 * one-descriptor wait of a plain thread (ppoll), child processes (pidfd,
 * waitpid), symbol names (dladdr), handing free heap pages back, and a
 * message on stderr that a signal handler may write.
 *
 * What it leaves: locks and condition variables stay pthread_mutex_t and
 * pthread_cond_t where they are used (every target weft builds for has
 * them, Windows through winpthreads), and so does pthread_once; thread
 * handles are pthread_t for the same reason. The C standard library
 * (atomics, strings, struct timespec) is no OS call.
 *
 * One implementation per OS: linux.c, and os_linux.h for the calls on
 * hot paths (the clock, the word wait and wake, the barrier a parking
 * worker pays, yield), which are static inline so that park and wake pay
 * one system call and no call into weft around it. Windows has
 * windows.c, windows_net.c (sockets, process waits), windows_proc.c
 * (process spawn) and os_windows.h.
 * Nothing here needs an OS header: a descriptor is an int (on Windows a
 * SOCKET, which fits: windows_net.c), a poller's events are weft's own
 * struct. Every room sees this one
 * (it sits below base).
 *
 * Synchronization: each function says what it shares, if anything. The
 * few process-wide values (the page size, the overflow handler's
 * previous handlers) are set once and read without a lock.
 */
#ifndef WEFT_OS_H
#define WEFT_OS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- time -------------------------------------------------------------- */

/* static inline uint64_t weft__os_now_ns(void)
 *   The monotonic clock in ns (from boot on Linux): every deadline of
 *   weft is on it. Callable from: any thread.
 *
 * static inline void weft__os_yield(void)
 *   Gives the CPU to another runnable thread, if any. Callable from: any
 *   thread. */

/* The wall clock in ns since 1970: deadlines of a pthread_cond_timedwait
 * on a condition variable with the default clock. Callable from: any
 * thread. */
uint64_t weft__os_wall_ns(void);

/* Sleeps the calling thread for ns (a signal does not cut it short).
 * Callable from: any thread. */
void weft__os_sleep_ns(uint64_t ns);

/* ---- waiting on a word ------------------------------------------------- */

/* static inline void weft__os_word_wait(atomic_uint *word, unsigned val, uint64_t timeout_ns)
 *   Sleeps while *word == val, at most timeout_ns (0: no limit). Returns
 *   on a wake, a timeout, a signal, or at once if *word != val: callers
 *   re-check their word. Process-private words only. Callable from: any
 *   thread.
 *
 * static inline void weft__os_word_wake(atomic_uint *word, int n)
 *   Wakes up to n threads sleeping on word. word may be dead memory by
 *   now: the kernel then wakes nobody (or a later sleeper there, which
 *   re-checks its word). Callable from: any thread. */

/* ---- the process-wide barrier ------------------------------------------ */

/* Registers the process for the barrier: true if weft__os_barrier may be
 * used from now on, false if the OS lacks it or refuses it. Callable
 * from: any thread; call once (park.c does, under a pthread_once). */
bool weft__os_barrier_setup(void);

/* static inline int weft__os_barrier(void)
 *   A full memory barrier on every running thread of the process: 0, or
 *   an errno value (the call failed; no barrier happened, retry). Only
 *   after weft__os_barrier_setup returned true. Callable from: any
 *   thread. */

/* ---- CPUs and threads -------------------------------------------------- */

/* The CPUs this process may run on (its affinity mask, which a cpuset
 * or taskset narrows), else the online count, at least 1. Callable from:
 * any thread. */
unsigned weft__os_cpu_count(void);

/* Starts a thread running fn(arg); name (NULL: none) is what debuggers
 * and top show, cut to what the OS keeps. 0, or an errno value. Callable
 * from: any thread. */
int weft__os_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name);

/* Waits until thread t has returned, and frees what the OS kept of it.
 * Callable from: any thread but t. */
void weft__os_thread_join(pthread_t t);

/* The calling thread's own stack: *lo its lowest address, *size its
 * size; both left as they are if the OS cannot say. Callable from: any
 * thread, about itself. */
void weft__os_thread_stack(void **lo, size_t *size);

/* static inline int weft__os_atfork(void (*prepare)(void), void (*parent)(void),
 *                                   void (*child)(void))
 *   Registers handlers run around fork(2), as pthread_atfork: 0, or an
 *   errno value. Windows has no fork: nothing is registered, 0 (the
 *   handlers stay referenced, so they are no unused code there).
 *   Callable from: any thread. */

/* ---- memory ------------------------------------------------------------ */

/* The page size. Callable from: any thread. */
size_t weft__os_page_size(void);

/* Maps size bytes (a multiple of the page size) for a stack: address
 * space only until touched, the lowest guard bytes (a multiple of the
 * page size, < size) inaccessible, the rest readable and writable.
 * NULL: out of memory or address space. Callable from: any thread. */
void *weft__os_map_stack(size_t size, size_t guard);

/* Unmaps what weft__os_map_stack mapped (the same size). Callable from:
 * any thread. */
void weft__os_unmap_stack(void *m, size_t size);

/* static inline void *weft__os_alloc_aligned(size_t align, size_t size)
 *   size bytes aligned to align (a power of two, at least a pointer's
 *   size), or NULL. Free it with weft__os_free_aligned only (Windows
 *   keeps aligned blocks apart from malloc's). Callable from: any thread.
 *
 * static inline void weft__os_free_aligned(void *p)
 *   Frees what weft__os_alloc_aligned returned (NULL: nothing). Callable
 *   from: any thread. */

/* Hands pages the C allocator holds free back to the OS, where it can
 * (glibc's malloc_trim; elsewhere nothing). Callable from: any thread. */
void weft__os_trim_heap(void);

/* ---- faults and messages ----------------------------------------------- */

/* Called on a memory fault of this thread at addr, on an alternate
 * stack (the faulting one may be exhausted), in a signal handler: only
 * async-signal-safe calls. It reports and aborts if the fault is its
 * business; if it returns, the fault goes to the handler installed
 * before weft's (or, if none, kills the process as it would have). */
typedef void weft__os_fault_fn(void *addr);

/* Gives the calling thread an alternate signal stack (unless it has one:
 * ASan installs its own) and, once per process, installs fn for memory
 * faults (the first call's fn stays). 0, or an errno value (ENOMEM: the
 * stack could not be mapped). Callable from: any thread, about itself. */
int weft__os_fault_enter(weft__os_fault_fn *fn);

/* Removes and unmaps the alternate stack weft__os_fault_enter gave this
 * thread, if it gave one. Callable from: any thread, about itself. */
void weft__os_fault_leave(void);

/* Writes len bytes of msg to stderr, unbuffered; async-signal-safe.
 * Callable from: anywhere, a signal handler included. */
void weft__os_write_err(const char *msg, size_t len);

/* The name of the symbol at addr (an exported function's), or NULL; the
 * string lives as long as its object is loaded. Callable from: any
 * thread. */
const char *weft__os_symbol_name(const void *addr);

/* ---- readiness --------------------------------------------------------- */

/* The events a descriptor may be ready for: poll(2)'s bits, which are
 * also those weft_fd_wait_for takes and returns; on Windows WSAPoll's
 * (winsock2.h: IN is POLLRDNORM | POLLRDBAND, and RDHUP, which Winsock
 * lacks, is weft's own bit). NVAL (the descriptor is not open) comes
 * only from weft__os_fd_poll. */
#if defined(_WIN32)
enum {
    WEFT__OS_IN    = 0x0300,
    WEFT__OS_PRI   = 0x0400,
    WEFT__OS_OUT   = 0x0010,
    WEFT__OS_ERR   = 0x0001,
    WEFT__OS_HUP   = 0x0002,
    WEFT__OS_NVAL  = 0x0004,
    WEFT__OS_RDHUP = 0x2000,
};
#else
enum {
    WEFT__OS_IN    = 0x001,
    WEFT__OS_PRI   = 0x002,
    WEFT__OS_OUT   = 0x004,
    WEFT__OS_ERR   = 0x008,
    WEFT__OS_HUP   = 0x010,
    WEFT__OS_NVAL  = 0x020,
    WEFT__OS_RDHUP = 0x2000,
};
#endif

/* With weft__os_poller_add: watch fd for every event, edge-triggered, for
 * good (until weft__os_poller_remove or the file's last close), never a
 * duplicate: EEXIST when fd is in the set already. */
#define WEFT__OS_EDGE 0x40000000u

/* No timeout, for weft__os_fd_poll. */
#define WEFT__OS_FOREVER UINT64_MAX

/* Waits on the calling thread until fd is ready for one of events, at
 * most timeout_ns (0: look once; WEFT__OS_FOREVER: no limit): the ready
 * events (> 0), 0 at the timeout, or -errno (-EINTR: a signal; the
 * caller goes on with the time left). Callable from: any thread. */
int weft__os_fd_poll(int fd, unsigned events, uint64_t timeout_ns);

/* A thread's wait that another thread can end: weft__os_wake_open makes
 * a wake handle (on Linux an eventfd), or -errno (-ENOSYS: none on this
 * OS; the caller waits with weft__os_fd_poll); weft__os_fd_poll_or_wake
 * is weft__os_fd_poll that also ends, with WEFT__OS_WOKEN, once
 * weft__os_wake_post(wake) was called (at any time since the open);
 * weft__os_wake_close frees it. Callable from: any thread (the poll: the
 * handle's one waiter). */
#define WEFT__OS_WOKEN 0x10000000
int  weft__os_wake_open(void);
int  weft__os_fd_poll_or_wake(int fd, unsigned events, int wake, uint64_t timeout_ns);
void weft__os_wake_post(int wake);
void weft__os_wake_close(int wake);

/* Closes a descriptor weft opened (a process handle). Callable from: any
 * thread. */
void weft__os_close(int fd);

/* Non-blocking I/O on a descriptor for weft's fd calls (fdio.c): each
 * returns what the system call does, or -errno (-EAGAIN: it would block).
 * Callable from: any thread. */
ptrdiff_t weft__os_fd_read(int fd, void *buf, size_t n);
ptrdiff_t weft__os_fd_write(int fd, const void *buf, size_t n);
/* A connection accepted on listening socket fd, non-blocking and
 * close-on-exec, or -errno. */
int weft__os_accept(int fd);
/* Starts connecting socket fd to addr (len bytes): 0 (connected), or
 * -errno (-EINPROGRESS: wait for writability, then weft__os_sock_error). */
int weft__os_connect(int fd, const void *addr, size_t len);
/* The pending error of socket fd (SO_ERROR, cleared by reading it): 0,
 * an errno value, or -errno when it cannot be read. */
int weft__os_sock_error(int fd);
/* Is fd a byte stream whose short read means "nothing more there now"
 * (a pipe or FIFO not in packet mode, a TCP socket)? false when unsure. */
bool weft__os_fd_is_stream(int fd);
/* Closes a user's descriptor: 0, or -errno (-EBADF: not open; EINTR
 * counts as closed, as Linux leaves it). */
int weft__os_fd_close(int fd);

/* A readiness poller: a set of watched descriptors and a way for any
 * thread to wake the one waiting on it. Two OS handles (on Linux an
 * epoll descriptor and an eventfd). */
typedef struct weft__os_poller {
    intptr_t set, wake;
} weft__os_poller;

/* One registration in a poller: fd, or a duplicate of fd made because fd
 * was in the set already (another wait on it). { -1, -1 }: none. */
typedef struct weft__os_watch {
    int fd, dup;
} weft__os_watch;

/* One ready registration: its data and events. */
typedef struct weft__os_event {
    uint64_t data;
    unsigned events;
} weft__os_event;

/* Opens p: 0, or an errno value (no memory, or no descriptors). Callable
 * from: any thread. */
int weft__os_poller_open(weft__os_poller *p);

/* Closes p; nothing may use it any more. Callable from: any thread. */
void weft__os_poller_close(weft__os_poller *p);

/* Watches fd for events, once (the first readiness reports it, then the
 * registration stays silent until removed), reporting data (UINT64_MAX is
 * the poller's own). *w: what weft__os_poller_remove takes afterwards.
 * 0, or an errno value (EPERM: fd is a regular file, always ready;
 * EBADF, EINVAL: not a descriptor that can be watched). Callable from:
 * any thread. */
int weft__os_poller_add(weft__os_poller *p, int fd, unsigned events, uint64_t data,
                        weft__os_watch *w);

/* Ends the registration w (fd may have been closed meanwhile: fine) and
 * closes its duplicate. Callable from: any thread. */
void weft__os_poller_remove(weft__os_poller *p, weft__os_watch *w);

/* Waits until a registration is ready, weft__os_poller_wake is called,
 * or the monotonic deadline passes (0: none); a signal may end it early.
 * Fills evs with up to max ready registrations and returns how many (0:
 * none, for any of those reasons). Consumes a wake. Callable from: one
 * thread at a time (the caller's protocol says which). */
int weft__os_poller_wait(weft__os_poller *p, weft__os_event *evs, int max, uint64_t deadline);

/* As weft__os_poller_wait, without waiting and without consuming a wake.
 * Callable from: any thread, beside a waiter. */
int weft__os_poller_look(weft__os_poller *p, weft__os_event *evs, int max);

/* Wakes the thread in weft__os_poller_wait on p, or the next one to
 * wait there. Callable from: any thread. */
void weft__os_poller_wake(weft__os_poller *p);

/* ---- child processes --------------------------------------------------- */

/* A descriptor that becomes readable (WEFT__OS_IN) once child pid has
 * ended (a pidfd), or -errno: -ESRCH the child is gone already (reaped,
 * or not a process); -ENOSYS or -EPERM the OS has no such handle or
 * refuses it (an old kernel, seccomp), so the caller polls with
 * weft__os_child_reap instead. Close it with weft__os_close. Callable
 * from: any thread. */
int weft__os_child_handle(int pid);

/* Reaps child pid if it has ended, without waiting: 1 reaped (*status,
 * if not NULL, gets its wait status), 0 still running, -1 not a child of
 * ours (or reaped by someone else). Callable from: any thread. */
int weft__os_child_reap(int pid, int *status);

/* Starts the command spec describes (weft/proc.h: argv, envp, cwd, the
 * three redirections, the process group) as a child, posix_spawn style
 * (the caller waits only until the exec); the child's signal mask is the
 * caller's less the signals weft__os_signal_block recorded, and those
 * signals get their default dispositions. 0 and *pid, or -errno (-ENOMEM,
 * -EAGAIN: out of memory or processes; any other: the command could not
 * be started). Callable from: any thread. */
struct weft_proc_spec;
int weft__os_proc_spawn(const struct weft_proc_spec *spec, int *pid);

/* Sends sig to process pid (< -1: to the group -pid); 0 or -errno.
 * Callable from: any thread. */
int weft__os_proc_kill(int pid, int sig);

/* ---- signals ------------------------------------------------------------ */

/* Blocks sigs (bit sig - 1 for signal sig) in the calling thread and
 * records them, so that every thread weft__os_thread_start starts from
 * then on blocks them too, and weft__os_proc_spawn's children get them
 * back. 0, or -EINVAL (a signal that cannot be blocked, or past the
 * platform's). Callable from: any thread. */
int weft__os_signal_block(uint64_t sigs);

/* The signals recorded by weft__os_signal_block so far. Callable from:
 * any thread. */
uint64_t weft__os_signal_blocked(void);

/* A non-blocking, close-on-exec descriptor that is readable (WEFT__OS_IN)
 * while one of sigs is pending for the process or the reading thread (a
 * signalfd), or -errno (-EMFILE, -ENOMEM, -ENOSYS). Close it with
 * weft__os_close. Callable from: any thread. */
int weft__os_signal_open(uint64_t sigs);

/* Takes one pending signal through fd (weft__os_signal_open's): its
 * number, 0 if none is pending, or -errno. Callable from: any thread. */
int weft__os_signal_take(int fd);

#if defined(_WIN32)
# include "os_windows.h"
#elif defined(__linux__)
# include "os_linux.h"
#else
# error "weft: no OS seam for this target (src/os has linux.c and windows.c only)"
#endif

#endif /* WEFT_OS_H */
