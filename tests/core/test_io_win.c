/* Blocking without blocking a worker, on Windows (issue 33): weft_fd_wait_for
 * on sockets, weft_pid_wait_for on processes, weft_call_blocking, at 0 (a
 * bound thread), 1 and 2 workers. test_io_fd.c and test_io_blocking.c are
 * the Linux battery (pipes, AF_UNIX pairs, fork); this one is what
 * applies on Windows: readiness wakes exactly its waiter while the worker
 * runs other tasks, tasks blocked on each other's sockets in a chain,
 * timeouts, bad input
 * (WEFT_EINVAL, CRT descriptors included), a plain thread's wait,
 * destroy with waits pending (WEFT_ESHUTDOWN), process exit codes and a
 * process wait's timeout. No timing assertions beyond lower bounds. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>

#include "weft.h"
#include "wtest.h"
#include "sched_util.h"

#define MS 1000000ull

/* A connected pair of non-blocking TCP sockets on the loopback. */
static void make_pair(SOCKET sv[2])
{
    static atomic_int started;
    if (!atomic_exchange(&started, 1)) {
        WSADATA d;
        WT_ASSERT_EQ(WSAStartup(MAKEWORD(2, 2), &d), 0);
    }
    SOCKET l = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    WT_ASSERT(l != INVALID_SOCKET);
    struct sockaddr_in a = { .sin_family = AF_INET };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int len = sizeof a;
    WT_ASSERT_EQ(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    WT_ASSERT_EQ(listen(l, 1), 0);
    WT_ASSERT_EQ(getsockname(l, (struct sockaddr *)&a, &len), 0);
    sv[0] = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    WT_ASSERT(sv[0] != INVALID_SOCKET);
    WT_ASSERT_EQ(connect(sv[0], (struct sockaddr *)&a, sizeof a), 0);
    sv[1] = accept(l, NULL, NULL);
    WT_ASSERT(sv[1] != INVALID_SOCKET);
    closesocket(l);
    u_long nb = 1;
    WT_ASSERT_EQ(ioctlsocket(sv[0], FIONBIO, &nb), 0);
    WT_ASSERT_EQ(ioctlsocket(sv[1], FIONBIO, &nb), 0);
}

static void close_pair(SOCKET sv[2])
{
    closesocket(sv[0]);
    closesocket(sv[1]);
}

/* ---- readiness wakes the waiter while its worker runs other tasks ------------- */

static SOCKET pair1[2];
static atomic_int got1, writer_ran1;

static void waiter1(void *arg)
{
    atomic_store(&got1, weft_fd_wait_for((weft_fd)pair1[0], POLLIN, UINT64_MAX));
    char c = 0;
    WT_ASSERT_EQ(recv(pair1[0], &c, 1, 0), 1);
    WT_ASSERT_EQ(c, 'x');
}

/* Runs after the waiter has blocked: on one worker (or the bound thread)
 * only because that worker went on with other work. */
static void writer1(void *arg)
{
    weft_sleep(2 * MS);
    atomic_store(&writer_ran1, 1);
    WT_ASSERT_EQ(send(pair1[1], "x", 1, 0), 1);
}

static void setup1(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, waiter1, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, writer1, NULL), WEFT_OK);
}

WT_TEST(io_win, socket_ready_wakes_waiter, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        make_pair(pair1);
        atomic_store(&got1, 0);
        atomic_store(&writer_ran1, 0);
        run_on(w, setup1);
        int rc = atomic_load(&got1);
        WT_ASSERT(rc > 0 && (rc & POLLIN) && !(rc & ~(POLLIN | POLLHUP)), "workers %u: rc %d", w, rc);
        WT_ASSERT_EQ(atomic_load(&writer_ran1), 1);
        close_pair(pair1);
    }
}

/* ---- a chain: each task waits for its socket, then readies the next ----------- */

#define CHAIN 8
static SOCKET chain[CHAIN][2];
static atomic_int chain_done;

static void link_task(void *arg)
{
    int i = (int)(intptr_t)arg;
    int rc = weft_fd_wait_for((weft_fd)chain[i][0], POLLIN, UINT64_MAX);
    WT_ASSERT(rc > 0 && (rc & POLLIN), "link %d: rc %d", i, rc);
    char c = 0;
    WT_ASSERT_EQ(recv(chain[i][0], &c, 1, 0), 1);
    WT_ASSERT_EQ(c, 'a' + i);
    atomic_fetch_add(&chain_done, 1);
    if (i + 1 < CHAIN) {
        char n = (char)('a' + i + 1);
        WT_ASSERT_EQ(send(chain[i + 1][1], &n, 1, 0), 1);
    }
}

static void setup_chain(weft_sched *s)
{
    for (int i = CHAIN - 1; i >= 0; i--)   /* the last link first: all wait before the first is readied */
        WT_ASSERT_EQ(weft_spawn(s, link_task, (void *)(intptr_t)i), WEFT_OK);
    WT_ASSERT_EQ(send(chain[0][1], "a", 1, 0), 1);
}

WT_TEST(io_win, tasks_blocked_on_each_others_sockets, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        for (int i = 0; i < CHAIN; i++)
            make_pair(chain[i]);
        atomic_store(&chain_done, 0);
        run_on(w, setup_chain);
        WT_ASSERT_EQ(atomic_load(&chain_done), CHAIN);
        for (int i = 0; i < CHAIN; i++)
            close_pair(chain[i]);
    }
}

/* ---- timeouts, polls, bad input ---------------------------------------------------- */

static void timeouts_body(void *arg)
{
    SOCKET sv[2];
    make_pair(sv);
    weft_fd r = (weft_fd)sv[0], wr = (weft_fd)sv[1];
    uint64_t t0 = wt_now_ns();
    WT_ASSERT_EQ(weft_fd_wait_for(r, POLLIN, 3 * MS), WEFT_ETIMEDOUT);
    WT_ASSERT(wt_now_ns() - t0 >= 3 * MS, "timed out early");
    t0 = wt_now_ns();
    WT_ASSERT_EQ(weft_fd_wait_for(r, POLLIN, MS / 2), WEFT_ETIMEDOUT);   /* under a millisecond: rounded up */
    WT_ASSERT(wt_now_ns() - t0 >= MS / 2, "a sub-millisecond timeout ended early");
    WT_ASSERT_EQ(weft_fd_wait_for(r, POLLIN, 0), WEFT_ETIMEDOUT);          /* a poll */
    int rc = weft_fd_wait_for(wr, POLLOUT, 0);
    WT_ASSERT(rc > 0 && (rc & POLLOUT), "rc %d", rc);
    rc = weft_fd_wait_for(wr, POLLOUT, UINT64_MAX);                        /* ready at once */
    WT_ASSERT(rc > 0 && (rc & POLLOUT), "rc %d", rc);
    rc = weft_fd_wait_for(wr, POLLOUT | POLLIN, 5 * MS);
    WT_ASSERT(rc > 0 && (rc & POLLOUT) && !(rc & POLLIN), "rc %d", rc);
    /* Bad input: INVALID_SOCKET, no events, events weft does not take. */
    WT_ASSERT_EQ(weft_fd_wait_for((weft_fd)INVALID_SOCKET, POLLIN, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_wait_for(r, 0, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_wait_for(r, POLLIN | POLLERR, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_wait_for(r, (short)0x4000, MS), WEFT_EINVAL);
    /* A CRT descriptor is no socket. */
    int p[2];
    WT_ASSERT_EQ(pipe(p), 0);
    WT_ASSERT_EQ(weft_fd_wait_for(p[0], POLLIN, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_wait_for(p[0], POLLIN, 0), WEFT_EINVAL);
    close(p[0]);
    close(p[1]);
    /* The other end closed: readable (end of stream), with POLLHUP where
     * the provider says so, and WEFT_POLLRDHUP. */
    closesocket(sv[1]);
    rc = weft_fd_wait_for(r, POLLIN | WEFT_POLLRDHUP, UINT64_MAX);
    WT_ASSERT(rc > 0 && (rc & (POLLIN | POLLHUP)), "rc %d", rc);
    WT_ASSERT(rc & WEFT_POLLRDHUP, "rc %d: no RDHUP for a peer that closed", rc);
    closesocket(sv[0]);
}

static void setup_timeouts(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, timeouts_body, NULL), WEFT_OK);
}

WT_TEST(io_win, timeouts_polls_and_bad_input, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2)
        run_on(w, setup_timeouts);
    timeouts_body(NULL);   /* a plain thread: WSAPoll on itself */
}

/* ---- a plain thread waits beside the workers ---------------------------------------- */

static SOCKET plain[2];

static void *plain_sender(void *arg)
{
    Sleep(2);
    WT_ASSERT_EQ(send(plain[1], "p", 1, 0), 1);
    return NULL;
}

WT_TEST(io_win, plain_thread_wait, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    make_pair(plain);
    pthread_t t;
    WT_ASSERT_EQ(pthread_create(&t, NULL, plain_sender, NULL), 0);
    int rc = weft_fd_wait_for((weft_fd)plain[0], POLLIN, UINT64_MAX);
    WT_ASSERT(rc > 0 && (rc & POLLIN), "rc %d", rc);
    pthread_join(t, NULL);
    close_pair(plain);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- destroy with waits pending ---------------------------------------------------------- */

static SOCKET shut[2];
static atomic_int shut_rc, shut_started;

static void shut_waiter(void *arg)
{
    atomic_store(&shut_started, 1);
    atomic_store(&shut_rc, weft_fd_wait_for((weft_fd)shut[0], POLLIN, UINT64_MAX));
}

WT_TEST(io_win, destroy_ends_pending_waits, .timeout = 60)
{
    WT_FOR_WORKERS(w, 1, 2) {
        make_pair(shut);
        atomic_store(&shut_rc, 0);
        atomic_store(&shut_started, 0);
        weft_sched *s = make_sched(w);
        WT_ASSERT_EQ(weft_spawn(s, shut_waiter, NULL), WEFT_OK);
        while (!atomic_load(&shut_started))
            Sleep(1);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        int rc = atomic_load(&shut_rc);
        WT_ASSERT(rc == WEFT_ESHUTDOWN, "workers %u: rc %d (%s)", w, rc, rc < 0 ? weft_err_name(rc) : "ready");
        close_pair(shut);
    }
}

/* ---- processes ------------------------------------------------------------------------------ */

/* Starts `cmd /c exit <code>`, suspended; *h its handle (kept open so
 * that its ID stays its own until the wait is done). */
static int start_suspended(int code, HANDLE *h, HANDLE *thread)
{
    char line[64];
    snprintf(line, sizeof line, "cmd.exe /c exit %d", code);
    STARTUPINFOA si = { .cb = sizeof si };
    PROCESS_INFORMATION pi;
    WT_ASSERT(CreateProcessA(NULL, line, NULL, NULL, FALSE, CREATE_SUSPENDED | CREATE_NO_WINDOW,
                             NULL, NULL, &si, &pi),
              "CreateProcess: %lu", (unsigned long)GetLastError());
    *h = pi.hProcess;
    *thread = pi.hThread;
    return (int)pi.dwProcessId;
}

static int proc_pid;
static HANDLE proc_h, proc_thread;
static atomic_int proc_rc, proc_status, proc_other_ran;

static void proc_waiter(void *arg)
{
    int st = -1;
    /* Suspended: it cannot end, so a short wait times out. */
    WT_ASSERT_EQ(weft_pid_wait_for(proc_pid, &st, 3 * MS), WEFT_ETIMEDOUT);
    WT_ASSERT_EQ(ResumeThread(proc_thread), 1);
    atomic_store(&proc_rc, weft_pid_wait_for(proc_pid, &st, UINT64_MAX));
    atomic_store(&proc_status, st);
}

static void proc_other(void *arg)
{
    atomic_store(&proc_other_ran, 1);
}

static void setup_proc(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, proc_waiter, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, proc_other, NULL), WEFT_OK);
}

WT_TEST(io_win, process_exit_code, .timeout = 180)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        proc_pid = start_suspended(7, &proc_h, &proc_thread);
        atomic_store(&proc_rc, 1);
        atomic_store(&proc_status, -1);
        atomic_store(&proc_other_ran, 0);
        run_on(w, setup_proc);
        WT_ASSERT_EQ(atomic_load(&proc_rc), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&proc_status), 7);
        WT_ASSERT_EQ(atomic_load(&proc_other_ran), 1);
        /* Nothing is reaped on Windows: a second wait says it ended. */
        int st = -1;
        WT_ASSERT_EQ(weft_pid_wait_for(proc_pid, &st, 0), WEFT_OK);
        WT_ASSERT_EQ(st, 7);
        CloseHandle(proc_thread);
        CloseHandle(proc_h);
    }
}

static void proc_killer(void *arg)
{
    weft_sleep(2 * MS);
    WT_ASSERT(TerminateProcess(proc_h, 9));
}

static void proc_kill_waiter(void *arg)
{
    int st = -1;
    atomic_store(&proc_rc, weft_pid_wait_for(proc_pid, &st, UINT64_MAX));
    atomic_store(&proc_status, st);
}

static void setup_kill(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, proc_kill_waiter, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, proc_killer, NULL), WEFT_OK);
}

WT_TEST(io_win, process_ended_by_another_task, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        proc_pid = start_suspended(0, &proc_h, &proc_thread);
        atomic_store(&proc_rc, 1);
        atomic_store(&proc_status, -1);
        run_on(w, setup_kill);
        WT_ASSERT_EQ(atomic_load(&proc_rc), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&proc_status), 9);
        CloseHandle(proc_thread);
        CloseHandle(proc_h);
    }
    WT_ASSERT_EQ(weft_pid_wait_for(0, NULL, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pid_wait_for(-4, NULL, MS), WEFT_EINVAL);
}

/* ---- weft_call_blocking ------------------------------------------------------------------- */

static atomic_int blocking_ran, blocking_rc;

static void blocking_fn(void *arg)
{
    Sleep(2);   /* a call weft cannot see into */
    atomic_fetch_add(&blocking_ran, 1);
}

static void blocking_task(void *arg)
{
    atomic_store(&blocking_rc, weft_call_blocking(arg, blocking_fn, NULL));
}

static weft_sched *blocking_s;

static void setup_blocking(weft_sched *s)
{
    blocking_s = s;
    WT_ASSERT_EQ(weft_spawn(s, blocking_task, s), WEFT_OK);
}

WT_TEST(io_win, call_blocking, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        atomic_store(&blocking_ran, 0);
        atomic_store(&blocking_rc, 1);
        run_on(w, setup_blocking);
        WT_ASSERT_EQ(atomic_load(&blocking_rc), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&blocking_ran), 1);
    }
}
