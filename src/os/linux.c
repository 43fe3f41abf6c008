/* This file is private to weft: the OS seam on Linux (os.h says what
 * each call does; os_linux.h holds the hot-path ones).
 *
 * Synchronization
 *   page        the page size, cached by the first caller; racing first
 *               callers store the same value (relaxed).
 *   old_segv, old_bus
 *               the fault handlers before weft's: written once under
 *               fault_once, before weft's handler is installed, then
 *               only read (by that handler).
 *   fault_fn    weft's fault callback: the first caller's, set (CAS from
 *               NULL) before fault_once installs the handler that reads it.
 *   altstack    per thread: the alternate signal stack this thread got
 *               from weft__os_fault_enter, if it got one.
 *   sig_blocked the signals weft__os_signal_block recorded: only ever
 *               gains bits (atomic or, relaxed: the mask of the thread
 *               that blocked them is what orders its own thread starts;
 *               another thread's start sees the bits or inherits them
 *               from a creator that blocked them itself).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__GLIBC__)
# include <malloc.h>
#endif

#include "os.h"
#include "weft/proc.h"

extern char **environ;

_Static_assert(sizeof(pid_t) == sizeof(int), "weft_pid_wait_for takes a pid_t as int");
_Static_assert(WEFT__OS_IN == POLLIN && WEFT__OS_PRI == POLLPRI && WEFT__OS_OUT == POLLOUT &&
               WEFT__OS_ERR == POLLERR && WEFT__OS_HUP == POLLHUP &&
               WEFT__OS_NVAL == POLLNVAL && WEFT__OS_RDHUP == POLLRDHUP,
               "weft's events are poll(2)'s bits");
_Static_assert(POLLIN == EPOLLIN && POLLPRI == EPOLLPRI && POLLOUT == EPOLLOUT &&
               POLLERR == EPOLLERR && POLLHUP == EPOLLHUP && POLLRDHUP == EPOLLRDHUP,
               "poll and epoll events share their bits");

static struct timespec timespec_of(uint64_t ns)
{
    return (struct timespec){ (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
}

/* ---- time ------------------------------------------------------------------ */

uint64_t weft__os_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void weft__os_sleep_ns(uint64_t ns)
{
    struct timespec ts = timespec_of(ns);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- the process-wide barrier ------------------------------------------------ */

bool weft__os_barrier_setup(void)
{
#if defined(SYS_membarrier)
    long r = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    return r > 0 && (r & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
           syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return false;
#endif
}

/* ---- CPUs and threads ---------------------------------------------------------- */

unsigned weft__os_cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

static atomic_uint_least64_t sig_blocked;

/* sigs as a sigset_t. */
static void sig_fill(sigset_t *set, uint64_t sigs)
{
    sigemptyset(set);
    for (int sig = 1; sig <= 64; sig++)
        if (sigs & (UINT64_C(1) << (sig - 1)))
            sigaddset(set, sig);
}

int weft__os_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
    /* A new thread inherits its creator's mask: block the recorded
     * signals around the start, so that a thread started by one that never
     * blocked them (a bound thread's task, a timer) blocks them too. */
    uint64_t sigs = atomic_load_explicit(&sig_blocked, memory_order_relaxed);   /* relaxed: see sig_blocked */
    sigset_t set, old;
    if (sigs) {
        sig_fill(&set, sigs);
        pthread_sigmask(SIG_BLOCK, &set, &old);
    }
    int rc = pthread_create(t, NULL, fn, arg);
    if (sigs)
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0 && name)
        pthread_setname_np(*t, name);   /* ERANGE past 15 bytes: the name is a courtesy */
    return rc;
}

void weft__os_thread_join(pthread_t t)
{
    pthread_join(t, NULL);
}

void weft__os_thread_stack(void **lo, size_t *size)
{
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    void *l;
    size_t s;
    if (pthread_attr_getstack(&attr, &l, &s) == 0) {
        *lo = l;
        *size = s;
    }
    pthread_attr_destroy(&attr);
}

/* ---- memory -------------------------------------------------------------------- */

size_t weft__os_page_size(void)
{
    static atomic_size_t page;
    size_t v = atomic_load_explicit(&page, memory_order_relaxed);   /* relaxed: see Synchronization */
    if (!v) {
        v = (size_t)sysconf(_SC_PAGESIZE);
        atomic_store_explicit(&page, v, memory_order_relaxed);
    }
    return v;
}

void *weft__os_map_stack(size_t size, size_t guard)
{
    char *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    if (mprotect(m, guard, PROT_NONE) != 0) {
        munmap(m, size);
        return NULL;
    }
    return m;
}

void weft__os_unmap_stack(void *m, size_t size)
{
    munmap(m, size);
}

void weft__os_trim_heap(void)
{
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

/* ---- faults and messages ------------------------------------------------------- */

static struct sigaction old_segv, old_bus;
static _Atomic(weft__os_fault_fn *) fault_fn;
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static _Thread_local void *altstack;
static _Thread_local size_t altstack_size;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    atomic_load_explicit(&fault_fn, memory_order_relaxed)(si->si_addr);   /* relaxed: set before the handler was installed */
    /* It returned: not weft's fault. Hand it to whoever handled it
     * before us. */
    struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus;
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction) {
            old->sa_sigaction(sig, si, uc);
            return;
        }
    } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
        return;
    }
    /* Default action: restore it and return; the access faults again. */
    signal(sig, SIG_DFL);
}

static void install_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
}

int weft__os_fault_enter(weft__os_fault_fn *fn)
{
    /* The handler runs on an alternate stack: the faulting one is
     * exhausted. Keep one the thread already has (ASan installs its own). */
    stack_t ss;
    if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_DISABLE)) {
        size_t page = weft__os_page_size();
        size_t want = 64 * 1024 > (size_t)SIGSTKSZ ? 64 * 1024 : (size_t)SIGSTKSZ;
        size_t size = (want + page - 1) / page * page;
        void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return ENOMEM;
        ss.ss_sp = m;
        ss.ss_size = size;
        ss.ss_flags = 0;
        if (sigaltstack(&ss, NULL) != 0) {
            munmap(m, size);
            return ENOMEM;
        }
        altstack = m;
        altstack_size = size;
    }
    weft__os_fault_fn *none = NULL;
    atomic_compare_exchange_strong_explicit(&fault_fn, &none, fn,
        memory_order_relaxed, memory_order_relaxed);   /* relaxed: the first fn stays; pthread_once orders it before the handler */
    pthread_once(&fault_once, install_handler);
    return 0;
}

void weft__os_fault_leave(void)
{
    if (!altstack)
        return;
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    munmap(altstack, altstack_size);
    altstack = NULL;
}

void weft__os_write_err(const char *msg, size_t len)
{
    ssize_t r = write(2, msg, len);
    (void)r;   /* nowhere to report that stderr failed */
}

const char *weft__os_symbol_name(const void *addr)
{
    Dl_info info;
    if (dladdr(addr, &info) && info.dli_sname)
        return info.dli_sname;
    return NULL;
}

/* ---- readiness ------------------------------------------------------------------ */

#define WAKE_DATA  UINT64_MAX    /* the eventfd's data in the set */
#define EVENTS_MAX 64            /* events taken per epoll_wait */

int weft__os_fd_poll(int fd, unsigned events, uint64_t timeout_ns)
{
    struct pollfd pfd = { .fd = fd, .events = (short)events };
    struct timespec ts, *tp = NULL;
    if (timeout_ns != WEFT__OS_FOREVER) {
        ts = timespec_of(timeout_ns);
        tp = &ts;
    }
    int n = ppoll(&pfd, 1, tp, NULL);
    if (n > 0)
        return (int)(unsigned short)pfd.revents;
    return n == 0 ? 0 : -errno;
}

int weft__os_wake_open(void)
{
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

int weft__os_fd_poll_or_wake(int fd, unsigned events, int wake, uint64_t timeout_ns)
{
    struct pollfd pfd[2] = { { .fd = fd, .events = (short)events }, { .fd = wake, .events = POLLIN } };
    struct timespec ts, *tp = NULL;
    if (timeout_ns != WEFT__OS_FOREVER) {
        ts = timespec_of(timeout_ns);
        tp = &ts;
    }
    int n = ppoll(pfd, 2, tp, NULL);
    if (n > 0 && pfd[1].revents)
        return WEFT__OS_WOKEN;   /* the handle stays readable: one wait per handle */
    if (n > 0)
        return (int)(unsigned short)pfd[0].revents;
    return n == 0 ? 0 : -errno;
}

void weft__os_wake_post(int wake)
{
    uint64_t one = 1;
    ssize_t rc = write(wake, &one, sizeof one);   /* EAGAIN (counter full) still leaves it readable */
    (void)rc;
}

void weft__os_wake_close(int wake)
{
    close(wake);
}

void weft__os_close(int fd)
{
    close(fd);
}

ptrdiff_t weft__os_fd_read(int fd, void *buf, size_t n)
{
    ssize_t got = read(fd, buf, n);
    return got >= 0 ? (ptrdiff_t)got : -(errno == EWOULDBLOCK ? EAGAIN : errno);
}

ptrdiff_t weft__os_fd_write(int fd, const void *buf, size_t n)
{
    ssize_t put = write(fd, buf, n);
    return put >= 0 ? (ptrdiff_t)put : -(errno == EWOULDBLOCK ? EAGAIN : errno);
}

int weft__os_accept(int fd)
{
    int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    return c >= 0 ? c : -(errno == EWOULDBLOCK ? EAGAIN : errno);
}

int weft__os_connect(int fd, const void *addr, size_t len)
{
    return connect(fd, (const struct sockaddr *)addr, (socklen_t)len) == 0 ? 0 : -errno;
}

int weft__os_sock_error(int fd)
{
    int err = 0;
    socklen_t len = sizeof err;
    return getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 ? err : -errno;
}

/* Pipes not in packet mode (O_DIRECT: one read, one packet) and TCP
 * sockets only: a Unix stream socket's read stops early at a message
 * carrying descriptors or other credentials, SCTP's at a message end. */
bool weft__os_fd_is_stream(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return false;
    if (S_ISFIFO(st.st_mode)) {
        int fl = fcntl(fd, F_GETFL);
        return fl >= 0 && !(fl & O_DIRECT);
    }
    int proto = 0;
    socklen_t len = sizeof proto;
    return S_ISSOCK(st.st_mode) && getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) == 0 &&
           proto == IPPROTO_TCP;
}

int weft__os_fd_close(int fd)
{
    return close(fd) == 0 || errno == EINTR ? 0 : -errno;
}

int weft__os_poller_open(weft__os_poller *p)
{
    int set = epoll_create1(EPOLL_CLOEXEC);
    int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_DATA };
    if (set < 0 || wake < 0 || epoll_ctl(set, EPOLL_CTL_ADD, wake, &ev) != 0) {
        int e = errno;
        if (set >= 0)
            close(set);
        if (wake >= 0)
            close(wake);
        return e ? e : ENOMEM;
    }
    p->set = set;
    p->wake = wake;
    return 0;
}

void weft__os_poller_close(weft__os_poller *p)
{
    close((int)p->set);
    close((int)p->wake);
}

int weft__os_poller_add(weft__os_poller *p, int fd, unsigned events, uint64_t data,
                        weft__os_watch *w)
{
    int set = (int)p->set;
    struct epoll_event ev = { .events = events | EPOLLONESHOT, .data.u64 = data };
    if (events & WEFT__OS_EDGE)   /* a persistent registration (fdreg.c) */
        ev.events = EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP | EPOLLET;
    w->fd = w->dup = -1;
    if (epoll_ctl(set, EPOLL_CTL_ADD, fd, &ev) == 0) {
        w->fd = fd;
        return 0;
    }
    if (errno != EEXIST || (events & WEFT__OS_EDGE))
        return errno;
    /* A duplicate is a registration of its own on the same open file. */
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (d < 0)
        return errno == EBADF ? EBADF : ENOMEM;
    if (epoll_ctl(set, EPOLL_CTL_ADD, d, &ev) != 0) {
        int e = errno;
        close(d);
        return e;
    }
    w->fd = w->dup = d;
    return 0;
}

void weft__os_poller_remove(weft__os_poller *p, weft__os_watch *w)
{
    if (w->fd >= 0)
        epoll_ctl((int)p->set, EPOLL_CTL_DEL, w->fd, NULL);   /* EBADF, ENOENT: fd was closed and the kernel dropped it */
    if (w->dup >= 0)
        close(w->dup);
    w->fd = w->dup = -1;
}

/* Copies n epoll events to evs, leaving out the eventfd's (drained if
 * drain); how many were copied. */
static int take(weft__os_poller *p, const struct epoll_event *ee, int n, weft__os_event *evs,
                bool drain)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (ee[i].data.u64 == WAKE_DATA) {
            if (drain) {
                uint64_t v;
                ssize_t rc = read((int)p->wake, &v, sizeof v);   /* EAGAIN: drained by an earlier look */
                (void)rc;
            }
            continue;
        }
        evs[k].data = ee[i].data.u64;
        evs[k].events = ee[i].events;
        k++;
    }
    return k;
}

/* epoll_wait until deadline (0 = none), to the nanosecond where the
 * kernel has epoll_pwait2 (5.11), else rounded up to the millisecond. */
static int wait_until(int set, struct epoll_event *ee, int max, uint64_t deadline)
{
#ifdef SYS_epoll_pwait2
    static atomic_bool no_pwait2;
    if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {   /* relaxed: a cached answer */
        struct timespec ts, *tp = NULL;
        if (deadline) {
            uint64_t now = weft__os_now_ns();
            ts = timespec_of(deadline > now ? deadline - now : 0);
            tp = &ts;
        }
        long rc = syscall(SYS_epoll_pwait2, set, ee, max, tp, NULL, 0);
        if (rc >= 0 || errno != ENOSYS)
            return rc < 0 ? 0 : (int)rc;   /* EINTR: the caller re-checks */
        atomic_store_explicit(&no_pwait2, true, memory_order_relaxed);
    }
#endif
    int ms = -1;
    if (deadline) {
        uint64_t now = weft__os_now_ns();
        uint64_t d = deadline > now ? deadline - now : 0;
        uint64_t m = (d + 999999u) / 1000000u;
        ms = m > INT32_MAX ? INT32_MAX : (int)m;
    }
    int rc = epoll_wait(set, ee, max, ms);
    return rc < 0 ? 0 : rc;
}

int weft__os_poller_wait(weft__os_poller *p, weft__os_event *evs, int max, uint64_t deadline)
{
    struct epoll_event ee[EVENTS_MAX];
    int n = wait_until((int)p->set, ee, max < EVENTS_MAX ? max : EVENTS_MAX, deadline);
    return take(p, ee, n, evs, true);
}

int weft__os_poller_look(weft__os_poller *p, weft__os_event *evs, int max)
{
    struct epoll_event ee[EVENTS_MAX];
    int n = epoll_wait((int)p->set, ee, max < EVENTS_MAX ? max : EVENTS_MAX, 0);
    return n > 0 ? take(p, ee, n, evs, false) : 0;
}

void weft__os_poller_wake(weft__os_poller *p)
{
    uint64_t one = 1;
    ssize_t rc = write((int)p->wake, &one, sizeof one);   /* EAGAIN (counter full) still leaves it readable */
    (void)rc;
}

/* ---- child processes ---------------------------------------------------------------- */

#ifndef SYS_pidfd_open
# define SYS_pidfd_open 434   /* the same number on every Linux architecture */
#endif

int weft__os_child_handle(int pid)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    return fd >= 0 ? fd : -errno;
}

int weft__os_child_reap(int pid, int *status)
{
    int st = 0;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            if (status)
                *status = st;
            return 1;
        }
        if (r == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

/* ---- process spawn ----------------------------------------------------------------- */

/* One redirection of spec onto descriptor `to`; 0 or an errno. */
static int redirect(posix_spawn_file_actions_t *fa, const weft_proc_redirect *r, int to)
{
    switch (r->kind) {
    case WEFT_PROC_FD:
        return posix_spawn_file_actions_adddup2(fa, r->fd, to);
    case WEFT_PROC_PATH:
        return posix_spawn_file_actions_addopen(fa, to, r->path,
            to == 0 ? O_RDONLY : O_WRONLY | O_CREAT | (r->append ? O_APPEND : O_TRUNC), 0666);
    case WEFT_PROC_NULL:
        return posix_spawn_file_actions_addopen(fa, to, "/dev/null", to == 0 ? O_RDONLY : O_WRONLY, 0);
    default:
        return 0;
    }
}

int weft__os_proc_spawn(const struct weft_proc_spec *spec, int *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int err = posix_spawn_file_actions_init(&fa);
    if (err)
        return -err;
    if ((err = posix_spawnattr_init(&attr))) {
        posix_spawn_file_actions_destroy(&fa);
        return -err;
    }
    /* The directory first: a redirection's relative path names a file
     * there, as `cd dir && cmd > file` would. */
    if (spec->cwd)
        err = posix_spawn_file_actions_addchdir_np(&fa, spec->cwd);
    for (int i = 0; i < 3 && !err; i++)
        err = redirect(&fa, &spec->stdio[i], i);
    /* The child's mask: this thread's, less the signals weft blocked for
     * weft_signal_wait_for; those get their default dispositions back. */
    uint64_t sigs = atomic_load_explicit(&sig_blocked, memory_order_relaxed);   /* relaxed: see sig_blocked */
    sigset_t mask, def;
    pthread_sigmask(SIG_SETMASK, NULL, &mask);
    sig_fill(&def, sigs);
    for (int sig = 1; sig <= 64; sig++)
        if (sigs & (UINT64_C(1) << (sig - 1)))
            sigdelset(&mask, sig);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (spec->pgroup != 0) {
        flags |= POSIX_SPAWN_SETPGROUP;
        if (!err)
            err = posix_spawnattr_setpgroup(&attr, spec->pgroup > 0 ? spec->pgroup : 0);
    }
    if (!err)
        err = posix_spawnattr_setsigmask(&attr, &mask);
    if (!err)
        err = posix_spawnattr_setsigdefault(&attr, &def);
    if (!err)
        err = posix_spawnattr_setflags(&attr, flags);
    pid_t child = 0;
    if (!err)
        err = posix_spawnp(&child, spec->argv[0], &fa, &attr, (char *const *)spec->argv,
                           spec->envp ? (char *const *)spec->envp : environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    if (err)
        return -err;
    *pid = child;
    return 0;
}

int weft__os_proc_kill(int pid, int sig)
{
    return kill(pid, sig) == 0 ? 0 : -errno;
}

/* ---- signals -------------------------------------------------------------------- */

int weft__os_signal_block(uint64_t sigs)
{
    uint64_t bad = WEFT_SIG(SIGKILL) | WEFT_SIG(SIGSTOP);
    if (SIGRTMAX < 64)
        bad |= ~UINT64_C(0) << SIGRTMAX;
    if (sigs & bad)
        return -EINVAL;
    sigset_t set;
    sig_fill(&set, sigs);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    atomic_fetch_or_explicit(&sig_blocked, sigs, memory_order_relaxed);   /* relaxed: see sig_blocked */
    return 0;
}

uint64_t weft__os_signal_blocked(void)
{
    return atomic_load_explicit(&sig_blocked, memory_order_relaxed);
}

int weft__os_signal_open(uint64_t sigs)
{
    sigset_t set;
    sig_fill(&set, sigs);
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

int weft__os_signal_take(int fd)
{
    struct signalfd_siginfo si;
    for (;;) {
        ssize_t n = read(fd, &si, sizeof si);
        if (n == (ssize_t)sizeof si)
            return (int)si.ssi_signo;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        return n < 0 ? -errno : -EIO;
    }
}
