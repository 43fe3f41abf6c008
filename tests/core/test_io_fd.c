/* Blocking without blocking a worker (issue 19): weft_fd_wait_for at 0 (a
 * bound thread), 1 and 2 workers. Readiness wakes exactly its waiters
 * while the worker runs other tasks; timeouts racing readiness end each
 * wait exactly once; bad input gets WEFT_EINVAL; destroy with waits
 * pending returns (they get WEFT_ESHUTDOWN); plain and bound threads wait
 * in ppoll. No timing assertions beyond lower bounds. (test_io_blocking.c
 * has weft_pid_wait_for and weft_call_blocking; io_util.h the helpers
 * both share.) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <dirent.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"
#include "sched_util.h"
#include "io_util.h"

/* ---- readiness wakes the waiter while its worker runs other tasks ------------- */

static int pipe1[2];

static atomic_int got1, writer_ran1;

static void waiter1(void *arg)
{
    int rc = weft_fd_wait_for(pipe1[0], POLLIN, UINT64_MAX);
    atomic_store(&got1, rc);
    char c;
    WT_ASSERT_EQ(read(pipe1[0], &c, 1), 1);
    WT_ASSERT_EQ(c, 'x');
}

/* Runs after the waiter has blocked: on one worker (or the bound thread)
 * only because that worker went on with other work. */
static void writer1(void *arg)
{
    weft_sleep(2 * MS);
    atomic_store(&writer_ran1, 1);
    WT_ASSERT_EQ(write(pipe1[1], "x", 1), 1);
}

static void setup1(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, waiter1, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, writer1, NULL), WEFT_OK);
}

WT_TEST(io, fd_ready_wakes_waiter, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        make_pipe(pipe1);
        atomic_store(&got1, 0);
        atomic_store(&writer_ran1, 0);
        run_on(w, setup1);
        WT_ASSERT_EQ(atomic_load(&got1), POLLIN);
        WT_ASSERT_EQ(atomic_load(&writer_ran1), 1);
        close(pipe1[0]);
        close(pipe1[1]);
    }
}

/* ---- timeouts, polls, bad input, plain threads ------------------------------------ */

static void timeouts_body(void *arg)
{
    int fd[2];
    make_pipe(fd);
    uint64_t t0 = wt_now_ns();
    WT_ASSERT_EQ(weft_fd_wait_for(fd[0], POLLIN, 3 * MS), WEFT_ETIMEDOUT);
    WT_ASSERT(wt_now_ns() - t0 >= 3 * MS, "timed out early");
    WT_ASSERT_EQ(weft_fd_wait_for(fd[0], POLLIN, 0), WEFT_ETIMEDOUT);          /* a poll */
    WT_ASSERT_EQ(weft_fd_wait_for(fd[1], POLLOUT, 0), POLLOUT);
    WT_ASSERT_EQ(weft_fd_wait_for(fd[1], POLLOUT, UINT64_MAX), POLLOUT);        /* ready at once */
    WT_ASSERT_EQ(weft_fd_wait_for(fd[1], POLLOUT | POLLIN, 5 * MS), POLLOUT);
    /* Bad input. */
    WT_ASSERT_EQ(weft_fd_wait_for(-1, POLLIN, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_wait_for(fd[0], 0, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_wait_for(fd[0], POLLIN | POLLERR, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_wait_for(fd[0], (short)0x4000, MS), WEFT_EINVAL);
    int closed = dup(fd[0]);
    close(closed);
    WT_ASSERT_EQ(weft_fd_wait_for(closed, POLLIN, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_wait_for(closed, POLLIN, 0), WEFT_EINVAL);
    /* A regular file is always ready, as for poll. */
    int f = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    WT_ASSERT(f >= 0);
    WT_ASSERT_EQ(weft_fd_wait_for(f, POLLIN, UINT64_MAX), POLLIN);
    close(f);
    /* The other end closed: POLLHUP, whether asked for or not. */
    close(fd[1]);
    int rc = weft_fd_wait_for(fd[0], POLLIN, UINT64_MAX);
    WT_ASSERT(rc > 0 && (rc & POLLHUP), "rc %d", rc);
    close(fd[0]);
}

static void setup_timeouts(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, timeouts_body, NULL), WEFT_OK);
}

WT_TEST(io, fd_timeouts_polls_and_bad_input, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2)
        run_on(w, setup_timeouts);
    timeouts_body(NULL);   /* a plain thread: ppoll */
    /* A bound thread beside workers waits in ppoll too. */
    weft_sched *s = make_sched(1);
    WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    timeouts_body(NULL);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* A descriptor ready all along is reported ready whatever the timeout:
 * with a 1 ns timeout the timer fires before any thread has read the epoll
 * set (most rounds, before the fix: ETIMEDOUT), and the look at the
 * timeout must see the readiness. */
static void ready_all_along_body(void *arg)
{
    int fd[2];
    make_pipe(fd);
    for (int i = 0; i < 2000; i++) {
        int rc = weft_fd_wait_for(fd[1], POLLOUT, 1 + (uint64_t)(i % 4) * 1000);
        WT_ASSERT(rc == POLLOUT, "round %d: a writable pipe's wait returned %d (%s)", i, rc,
                  rc < 0 ? weft_err_name(rc) : "events");
    }
    close(fd[0]);
    close(fd[1]);
}

static void setup_ready_all_along(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, ready_all_along_body, NULL), WEFT_OK);
}

WT_TEST(io, ready_descriptor_never_times_out, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2)
        run_on(w, setup_ready_all_along);
}

/* A bound thread of a scheduler without workers waits on its fiber: the
 * task that makes the fd ready runs on it meanwhile (a ppoll would hang). */
static int pipe_b[2];

static void bound_writer(void *arg)
{
    WT_ASSERT_EQ(write(pipe_b[1], "b", 1), 1);
}

WT_TEST(io, bound_thread_without_workers_runs_tasks_while_it_waits, .timeout = 60)
{
    weft_sched *s = make_sched(0);
    WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    make_pipe(pipe_b);
    WT_ASSERT_EQ(weft_spawn(s, bound_writer, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_wait_for(pipe_b[0], POLLIN, UINT64_MAX), POLLIN);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    close(pipe_b[0]);
    close(pipe_b[1]);
}

/* ---- 10^4 waiters on pipes, eventfds and sockets, tasks and threads --------------------- */

#define MANY_MAX 10000

#define MANY_THREADS 32

enum { K_PIPE, K_EVENTFD, K_SOCKET };

static int many_rd[MANY_MAX], many_wr[MANY_MAX], many_kind[MANY_MAX];

static unsigned many_n;

static atomic_uint many_done, many_bad;

/* Waiter i: POLLIN on its object, then takes what was written. */
static void many_wait(unsigned i)
{
    int rc = weft_fd_wait_for(many_rd[i], POLLIN, UINT64_MAX);
    bool ok = rc == POLLIN;
    if (many_kind[i] == K_EVENTFD) {
        uint64_t v = 0;
        ok &= read(many_rd[i], &v, 8) == 8 && v == (uint64_t)i + 1;
    } else {
        unsigned v = 0;
        ok &= read(many_rd[i], &v, sizeof v) == (ssize_t)sizeof v && v == i;
    }
    /* Exactly once: nothing more is there. */
    ok &= weft_fd_wait_for(many_rd[i], POLLIN, 0) == WEFT_ETIMEDOUT;
    if (!ok)
        atomic_fetch_add(&many_bad, 1);
    atomic_fetch_add(&many_done, 1);
}

static void many_task(void *arg)
{
    many_wait((unsigned)(uintptr_t)arg);
}

static void *many_thread(void *arg)
{
    many_wait((unsigned)(uintptr_t)arg);
    return NULL;
}

static void *many_writer(void *arg)
{
    uint64_t seed = wt_seed(), *rng = &seed;
    unsigned *order = malloc(sizeof *order * many_n);
    for (unsigned i = 0; i < many_n; i++)
        order[i] = i;
    for (unsigned i = many_n; i > 1; i--) {
        unsigned j = (unsigned)(wt_rand(rng) % i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    usleep(2000);   /* most waiters registered first; the others find it ready */
    for (unsigned k = 0; k < many_n; k++) {
        unsigned i = order[k];
        if (many_kind[i] == K_EVENTFD) {
            uint64_t v = (uint64_t)i + 1;
            WT_ASSERT_EQ(write(many_wr[i], &v, 8), 8);
        } else {
            WT_ASSERT_EQ(write(many_wr[i], &i, sizeof i), (ssize_t)sizeof i);
        }
    }
    free(order);
    return NULL;
}

static void setup_many(weft_sched *s)
{
    for (unsigned i = MANY_THREADS; i < many_n; i++)
        WT_ASSERT_EQ(weft_spawn(s, many_task, (void *)(uintptr_t)i), WEFT_OK);
}

WT_TEST(io, ten_thousand_waiters_each_woken_once, .timeout = 300)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    many_n = (unsigned)wt_scaled(MANY_MAX, 200);
    if ((uint64_t)many_n * 5 / 3 + 128 > rl.rlim_cur)   /* pipes and sockets take two, eventfds one */
        many_n = (unsigned)((rl.rlim_cur - 128) * 3 / 5);
    WT_FOR_WORKERS(w, 0, 1, 2) {
        for (unsigned i = 0; i < many_n; i++) {
            int fd[2];
            many_kind[i] = (int)(i % 3);
            if (many_kind[i] == K_PIPE) {
                make_pipe(fd);
            } else if (many_kind[i] == K_SOCKET) {
                WT_ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd), 0);
            } else {
                fd[0] = fd[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
                WT_ASSERT(fd[0] >= 0);
            }
            many_rd[i] = fd[0];
            many_wr[i] = fd[1];
        }
        atomic_store(&many_done, 0);
        atomic_store(&many_bad, 0);
        pthread_t th, waiters[MANY_THREADS];
        for (unsigned i = 0; i < MANY_THREADS; i++)   /* plain threads wait in ppoll */
            WT_ASSERT_EQ(pthread_create(&waiters[i], NULL, many_thread, (void *)(uintptr_t)i), 0);
        WT_ASSERT_EQ(pthread_create(&th, NULL, many_writer, NULL), 0);
        run_on(w, setup_many);
        pthread_join(th, NULL);
        for (unsigned i = 0; i < MANY_THREADS; i++)
            pthread_join(waiters[i], NULL);
        WT_ASSERT_EQ(atomic_load(&many_done), many_n);
        WT_ASSERT_EQ(atomic_load(&many_bad), 0);
        for (unsigned i = 0; i < many_n; i++) {
            close(many_rd[i]);
            if (many_wr[i] != many_rd[i])
                close(many_wr[i]);
        }
        fprintf(stderr, "many: %u workers, %u waiters (pipes, eventfds, sockets; %u on threads): "
                "each woken once with POLLIN\n", w, many_n, MANY_THREADS);
    }
}

/* ---- a fiber waiting on an fd leaves its worker to other tasks ------------------------------- */

static int busy_fd[2];

static atomic_uint busy_ran;

static unsigned busy_n;

static atomic_int busy_rc;

static void busy_small(void *arg)
{
    if (atomic_fetch_add(&busy_ran, 1) + 1 == busy_n)
        WT_ASSERT_EQ(write(busy_fd[1], "z", 1), 1);   /* the last one makes the waiter ready */
}

static void busy_waiter(void *arg)
{
    weft_sched *s = arg;
    for (unsigned i = 0; i < busy_n; i++)
        WT_ASSERT_EQ(weft_spawn(s, busy_small, NULL), WEFT_OK);
    atomic_store(&busy_rc, weft_fd_wait_for(busy_fd[0], POLLIN, UINT64_MAX));
}

static void setup_busy(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, busy_waiter, s), WEFT_OK);
}

WT_TEST(io, waiting_fiber_leaves_worker_to_other_tasks, .timeout = 120)
{
    busy_n = (unsigned)wt_scaled(100000, 2000);
    WT_FOR_WORKERS(w, 0, 1, 2) {
        make_pipe(busy_fd);
        atomic_store(&busy_ran, 0);
        atomic_store(&busy_rc, 0);
        run_on(w, setup_busy);
        WT_ASSERT_EQ(atomic_load(&busy_ran), busy_n);
        WT_ASSERT_EQ(atomic_load(&busy_rc), POLLIN);
        close(busy_fd[0]);
        close(busy_fd[1]);
    }
}

/* ---- closing a waited fd --------------------------------------------------------------------- */

static int close_fd[2], sock_fd[2];

static atomic_int close_rc, shut_rc;

static atomic_bool close_in_wait;

static void close_waiter(void *arg)
{
    atomic_store(&close_rc, weft_fd_wait_for(close_fd[0], POLLIN, 500 * MS));
}

static void shut_waiter(void *arg)
{
    atomic_store(&shut_rc, weft_fd_wait_for(sock_fd[0], POLLIN, UINT64_MAX));
}

/* Closes close_fd[0] while close_waiter waits on it, never before its
 * wait began (a wait on a closed descriptor is EINVAL, another case): it
 * waits until the scheduler lists that wait (listed once registered),
 * or until the wait has ended (timed out first, on a loaded machine; the
 * close then comes after it, and the result is ETIMEDOUT all the same). */
static void closer(void *arg)
{
    char want[48];
    snprintf(want, sizeof want, "waits on fd %d (", close_fd[0]);
    while (atomic_load(&close_rc) == 0) {
        char *text = wt_sched_state(weft_sched_current());
        bool listed = text && strstr(text, want);
        free(text);
        if (listed) {
            atomic_store(&close_in_wait, true);
            break;
        }
        weft_sleep(MS / 4);
    }
    close(close_fd[0]);                  /* does not wake its waiter: it times out */
    shutdown(sock_fd[0], SHUT_RDWR);     /* wakes its waiter (POLLIN, POLLHUP) */
}

static void setup_close(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, close_waiter, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, shut_waiter, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, closer, NULL), WEFT_OK);
}

WT_TEST(io, close_of_a_waited_fd, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        make_pipe(close_fd);
        WT_ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sock_fd), 0);
        atomic_store(&close_rc, 0);
        atomic_store(&shut_rc, 0);
        atomic_store(&close_in_wait, false);
        run_on(w, setup_close);
        WT_ASSERT_EQ(atomic_load(&close_rc), WEFT_ETIMEDOUT);
        if (!atomic_load(&close_in_wait))
            fprintf(stderr, "close_of_a_waited_fd: workers %u: the wait timed out before the close "
                            "(a loaded machine); checked nothing more\n", w);
        int rc = atomic_load(&shut_rc);
        WT_ASSERT(rc > 0 && (rc & (POLLIN | POLLHUP)), "shutdown woke the wait with %d", rc);
        close(close_fd[1]);
        close(sock_fd[0]);
        close(sock_fd[1]);
    }
}

/* Two tasks on one socket: one waits to read, one to write (the second
 * registration is a duplicate of the fd), and two on the same event. */
static int sp[2];

static atomic_int same_in, same_in2, same_out;

static void same_reader(void *arg)
{
    atomic_int *out = arg;
    atomic_store(out, weft_fd_wait_for(sp[0], POLLIN, UINT64_MAX));
}

static void same_writer(void *arg)
{
    weft_sleep(MS);
    atomic_store(&same_out, weft_fd_wait_for(sp[0], POLLOUT, UINT64_MAX));
    weft_sleep(MS);
    WT_ASSERT_EQ(write(sp[1], "s", 1), 1);
}

static void setup_same(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, same_reader, &same_in), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, same_reader, &same_in2), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, same_writer, NULL), WEFT_OK);
}

WT_TEST(io, several_waits_on_one_fd, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        WT_ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
        run_on(w, setup_same);
        WT_ASSERT_EQ(atomic_load(&same_in), POLLIN);
        WT_ASSERT_EQ(atomic_load(&same_in2), POLLIN);
        WT_ASSERT_EQ(atomic_load(&same_out), POLLOUT);
        close(sp[0]);
        close(sp[1]);
    }
}

/* ---- timeouts racing readiness: exactly once ------------------------------------------- */

static unsigned race_rounds;

static atomic_uint race_ready, race_timedout, race_bad;

static void race_body(void *arg)
{
    static const uint64_t to[] = { 0, 1000, 20000, MS };
    int fd[2];
    make_pipe(fd);
    for (unsigned r = 0; r < race_rounds; r++) {
        /* The write races the timeout: from this fiber's own timer side
         * (a write before or after the wait starts) and from a yield. */
        if (r % 3 == 0)
            WT_ASSERT_EQ(write(fd[1], "r", 1), 1);
        int rc = weft_fd_wait_for(fd[0], POLLIN, to[r % 4]);
        if (r % 3 != 0)
            WT_ASSERT_EQ(write(fd[1], "r", 1), 1);
        char c;
        bool had = read(fd[0], &c, 1) == 1;
        if (rc == POLLIN && had)
            atomic_fetch_add(&race_ready, 1);
        else if (rc == WEFT_ETIMEDOUT && had)
            atomic_fetch_add(&race_timedout, 1);
        else
            atomic_fetch_add(&race_bad, 1);
        if (r % 3 != 0 && rc == POLLIN)
            atomic_fetch_add(&race_bad, 1);   /* ready before anything was written */
    }
    close(fd[0]);
    close(fd[1]);
}

/* A writer on another thread, racing waits with short timeouts. */
static int race_fd[2];

static atomic_bool race_stop;

static atomic_uint race_written;

static void *race_thread(void *arg)
{
    while (!atomic_load(&race_stop)) {
        if (write(race_fd[1], "w", 1) == 1)
            atomic_fetch_add(&race_written, 1);
        usleep(20);
    }
    return NULL;
}

static void race_reader(void *arg)
{
    unsigned n = 0;
    while (n < race_rounds) {
        static const uint64_t to[] = { 0, 1000, 1000000000 };   /* 0, 1 us, 1 s */
        int rc = weft_fd_wait_for(race_fd[0], POLLIN, to[n % 3]);
        if (rc == POLLIN) {
            char buf[64];
            ssize_t got = read(race_fd[0], buf, sizeof buf);
            if (got <= 0)
                atomic_fetch_add(&race_bad, 1);   /* told ready, nothing there */
        } else if (rc != WEFT_ETIMEDOUT) {
            atomic_fetch_add(&race_bad, 1);
        }
        n++;
    }
}

static void setup_race(weft_sched *s)
{
    for (int i = 0; i < 3; i++)
        WT_ASSERT_EQ(weft_spawn(s, race_body, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, race_reader, NULL), WEFT_OK);
}

WT_TEST(io, timeout_racing_readiness_ends_once, .timeout = 120)
{
    race_rounds = (unsigned)wt_scaled(3000, 200);
    WT_FOR_WORKERS(w, 0, 1, 2) {
        atomic_store(&race_ready, 0);
        atomic_store(&race_timedout, 0);
        atomic_store(&race_bad, 0);
        atomic_store(&race_stop, false);
        make_pipe(race_fd);
        pthread_t th;
        WT_ASSERT_EQ(pthread_create(&th, NULL, race_thread, NULL), 0);
        run_on(w, setup_race);
        atomic_store(&race_stop, true);
        pthread_join(th, NULL);
        close(race_fd[0]);
        close(race_fd[1]);
        WT_ASSERT_EQ(atomic_load(&race_bad), 0);
        WT_ASSERT_EQ(atomic_load(&race_ready) + atomic_load(&race_timedout), 3 * race_rounds);
        fprintf(stderr, "race: %u workers: %u ready, %u timed out, 0 torn\n", w,
                atomic_load(&race_ready), atomic_load(&race_timedout));
    }
}

/* ---- destroy with waits pending ------------------------------------------------------------- */

#define PENDING 16

static int pend_fd[PENDING][2];

static atomic_int pend_rc[PENDING];

static atomic_uint pend_started;

static void pend_waiter(void *arg)
{
    unsigned i = (unsigned)(uintptr_t)arg;
    atomic_fetch_add(&pend_started, 1);
    atomic_store(&pend_rc[i], weft_fd_wait_for(pend_fd[i][0], POLLIN, UINT64_MAX));
    /* A wait after destroy has started does not wait either. */
    int again = weft_fd_wait_for(pend_fd[i][0], POLLIN, UINT64_MAX);
    if (again != WEFT_ESHUTDOWN)
        atomic_store(&pend_rc[i], 1000 + again);
}

WT_TEST(io, destroy_with_waits_pending, .timeout = 60)
{
    WT_FOR_WORKERS(w, 1, 2) {   /* workers: destroy from outside */
        weft_sched *s = make_sched(w);
        atomic_store(&pend_started, 0);
        for (unsigned i = 0; i < PENDING; i++) {
            make_pipe(pend_fd[i]);
            atomic_store(&pend_rc[i], 0);
            WT_ASSERT_EQ(weft_spawn(s, pend_waiter, (void *)(uintptr_t)i), WEFT_OK);
        }
        while (atomic_load(&pend_started) < PENDING)
            usleep(100);
        usleep(2000);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        for (unsigned i = 0; i < PENDING; i++) {
            WT_ASSERT_EQ(atomic_load(&pend_rc[i]), WEFT_ESHUTDOWN);
            close(pend_fd[i][0]);
            close(pend_fd[i][1]);
        }
    }
    /* No workers: the bound thread destroys, with its tasks waiting. */
    weft_sched *s = make_sched(0);
    WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    for (unsigned i = 0; i < PENDING; i++) {
        make_pipe(pend_fd[i]);
        atomic_store(&pend_rc[i], 0);
        WT_ASSERT_EQ(weft_spawn(s, pend_waiter, (void *)(uintptr_t)i), WEFT_OK);
    }
    WT_ASSERT_EQ(weft_sleep(MS), WEFT_OK);   /* the tasks run and block */
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    for (unsigned i = 0; i < PENDING; i++) {
        WT_ASSERT_EQ(atomic_load(&pend_rc[i]), WEFT_ESHUTDOWN);
        close(pend_fd[i][0]);
        close(pend_fd[i][1]);
    }
}
