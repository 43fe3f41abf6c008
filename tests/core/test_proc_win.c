/* weft_proc_spawn and weft_proc_run_for on Windows (weft/proc.h), with
 * proc_helper_win.exe as the child: exit codes at 0, 1 and 2 workers and
 * from a plain thread, several tasks waiting for their children at once,
 * arguments quoted by the Windows rules and read back as the child's C
 * runtime split them, the environment and directory, redirections (a
 * path, a CRT descriptor, NUL, stdin from a file), a timeout ending the
 * child and its group, and what Windows lacks (joining a group, signal
 * waits). test_proc.c is the Linux battery. */
#include <fcntl.h>
#include <io.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <windows.h>

#include "weft.h"
#include "wtest.h"
#include "sched_util.h"

#define MS 1000000ull

static char helper[MAX_PATH];

/* proc_helper_win.exe, beside this test's own program. */
static const char *helper_path(void)
{
    if (!helper[0]) {
        DWORD n = GetModuleFileNameA(NULL, helper, sizeof helper);
        WT_ASSERT(n > 0 && n < sizeof helper);
        char *slash = strrchr(helper, '\\');
        char *fwd = strrchr(helper, '/');
        if (!slash || (fwd && fwd > slash))
            slash = fwd;
        WT_ASSERT(slash);
        WT_ASSERT((size_t)(slash + 1 - helper) + 20 < sizeof helper);
        strcpy(slash + 1, "proc_helper_win.exe");
    }
    return helper;
}

/* A fresh file name in the temporary directory. */
static void temp_name(char *out, size_t n, const char *tag)
{
    static atomic_int seq;
    char dir[MAX_PATH];
    WT_ASSERT(GetTempPathA(sizeof dir, dir) > 0);
    snprintf(out, n, "%sweft_proc_win_%lu_%d_%s", dir, (unsigned long)GetCurrentProcessId(),
             atomic_fetch_add(&seq, 1), tag);
}

/* The file's text, '\r' dropped (the child's stdout is in text mode). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    WT_ASSERT(f, "%s", path);
    static char buf[4096];
    size_t n = 0;
    int c;
    while ((c = fgetc(f)) != EOF && n + 1 < sizeof buf)
        if (c != '\r')
            buf[n++] = (char)c;
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* ---- exit codes; several tasks waiting for their children at once -------------- */

#define KIDS 4
static weft_sched *cur;
static atomic_int codes[KIDS];

static void run_kid(void *arg)
{
    int i = (int)(intptr_t)arg;
    char n[8];
    snprintf(n, sizeof n, "%d", i);
    /* argc = 2 + i: the exit code says which child this was. */
    const char *argv[KIDS + 3] = { helper_path(), "args" };
    for (int k = 0; k < i; k++)
        argv[2 + k] = n;
    weft_proc_spec spec = { .argv = argv };
    spec.stdio[1].kind = WEFT_PROC_NULL;
    int status = -1;
    WT_ASSERT_EQ(weft_proc_run_for(cur, &spec, &status, UINT64_MAX), WEFT_OK);
    atomic_store(&codes[i], status);
}

static void cmd_exit(void *arg)
{
    const char *argv[] = { "cmd", "/c", "exit", "3", NULL };
    weft_proc_spec spec = { .argv = argv };
    int pid = 0, pidfd = 5, status = -1;
    WT_ASSERT_EQ(weft_proc_spawn(cur, &spec, &pid, &pidfd), WEFT_OK);
    WT_ASSERT(pid > 0);
    WT_ASSERT_EQ(pidfd, -1);
    WT_ASSERT_EQ(weft_pid_wait_for(pid, &status, UINT64_MAX), WEFT_OK);
    WT_ASSERT_EQ(status, 3);
}

static void setup_kids(weft_sched *s)
{
    cur = s;
    for (int i = 0; i < KIDS; i++)
        WT_ASSERT_EQ(weft_spawn(s, run_kid, (void *)(intptr_t)i), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, cmd_exit, NULL), WEFT_OK);
}

WT_TEST(proc_win, exit_codes_at_once, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        for (int i = 0; i < KIDS; i++)
            atomic_store(&codes[i], -1);
        run_on(w, setup_kids);
        for (int i = 0; i < KIDS; i++)
            WT_ASSERT(atomic_load(&codes[i]) == 2 + i, "workers %u: child %d: %d", w, i,
                      atomic_load(&codes[i]));
    }
    cur = make_sched(1);   /* from a plain thread: spawned on the caller */
    cmd_exit(NULL);
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
}

/* ---- arguments, environment, directory, redirections ------------------------------- */

static void io_body(void *arg)
{
    char out[MAX_PATH], in[MAX_PATH];
    int status = -1;
    /* Arguments come back as given, whatever they hold. */
    const char *args[] = { helper_path(), "args", "plain", "two words", "", "quo\"te",
                           "back\\slash\\", "tr\\\\\"icky", "tab\there", NULL };
    weft_proc_spec spec = { .argv = args };
    temp_name(out, sizeof out, "args");
    spec.stdio[1] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = out };
    WT_ASSERT_EQ(weft_proc_run_for(cur, &spec, &status, UINT64_MAX), WEFT_OK);
    WT_ASSERT_EQ(status, 9);
    const char *want = "[plain]\n[two words]\n[]\n[quo\"te]\n[back\\slash\\]\n"
                       "[tr\\\\\"icky]\n[tab\there]\n";
    WT_ASSERT(!strcmp(slurp(out), want), "got: %s", slurp(out));
    /* Appending to it, stderr to NUL. */
    const char *again[] = { helper_path(), "args", "more", NULL };
    spec = (weft_proc_spec){ .argv = again };
    spec.stdio[1] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = out, .append = true };
    spec.stdio[2].kind = WEFT_PROC_NULL;
    WT_ASSERT_EQ(weft_proc_run_for(cur, &spec, &status, UINT64_MAX), WEFT_OK);
    WT_ASSERT(strstr(slurp(out), "[tab\there]\n[more]\n"), "got: %s", slurp(out));
    DeleteFileA(out);
    /* stdin from a file, stdout to a CRT descriptor. */
    temp_name(in, sizeof in, "in");
    temp_name(out, sizeof out, "cat");
    FILE *f = fopen(in, "wb");
    WT_ASSERT(f);
    fputs("line one\nline two\n", f);
    fclose(f);
    int fd = _open(out, _O_WRONLY | _O_CREAT | _O_TRUNC | _O_BINARY, 0644);
    WT_ASSERT(fd >= 0);
    const char *cat[] = { helper_path(), "cat", NULL };
    spec = (weft_proc_spec){ .argv = cat };
    spec.stdio[0] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = in };
    spec.stdio[1] = (weft_proc_redirect){ .kind = WEFT_PROC_FD, .fd = fd };
    WT_ASSERT_EQ(weft_proc_run_for(cur, &spec, &status, UINT64_MAX), WEFT_OK);
    _close(fd);
    WT_ASSERT(!strcmp(slurp(out), "line one\nline two\n"), "got: %s", slurp(out));
    DeleteFileA(in);
    /* The environment given, and a directory: a relative path is there. */
    char dir[MAX_PATH];
    WT_ASSERT(GetTempPathA(sizeof dir, dir) > 0);
    const char *env[] = { "WEFT_T=yes it is", NULL };
    const char *show[] = { helper_path(), "env", "WEFT_T", NULL };
    spec = (weft_proc_spec){ .argv = show, .envp = env, .cwd = dir };
    spec.stdio[1] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = "weft_proc_win_env" };
    WT_ASSERT_EQ(weft_proc_run_for(cur, &spec, &status, UINT64_MAX), WEFT_OK);
    char rel[MAX_PATH];
    snprintf(rel, sizeof rel, "%sweft_proc_win_env", dir);
    WT_ASSERT(!strcmp(slurp(rel), "yes it is\n"), "got: %s", slurp(rel));
    DeleteFileA(rel);
    DeleteFileA(out);
}

static void setup_io(weft_sched *s)
{
    cur = s;
    WT_ASSERT_EQ(weft_spawn(s, io_body, NULL), WEFT_OK);
}

WT_TEST(proc_win, arguments_environment_redirections, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2)
        run_on(w, setup_io);
}

/* ---- tasks blocked on each other: the second child reads what the first wrote ---- */

static weft_event chain_ev;
static char chain_a[MAX_PATH], chain_b[MAX_PATH];
static atomic_int chain_ok;

/* Spawned first: waits for the writer, then copies its file. */
static void chain_reader(void *arg)
{
    WT_ASSERT_EQ(weft_event_wait(&chain_ev), WEFT_OK);
    const char *cat[] = { helper_path(), "cat", NULL };
    weft_proc_spec spec = { .argv = cat };
    spec.stdio[0] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = chain_a };
    spec.stdio[1] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = chain_b };
    int status = -1;
    WT_ASSERT_EQ(weft_proc_run_for(cur, &spec, &status, UINT64_MAX), WEFT_OK);
    WT_ASSERT_EQ(status, 2);
    atomic_store(&chain_ok, !strcmp(slurp(chain_b), "[first]\n"));
}

static void chain_writer(void *arg)
{
    const char *args[] = { helper_path(), "args", "first", NULL };
    weft_proc_spec spec = { .argv = args };
    spec.stdio[1] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = chain_a };
    int status = -1;
    WT_ASSERT_EQ(weft_proc_run_for(cur, &spec, &status, UINT64_MAX), WEFT_OK);
    weft_event_signal(&chain_ev);
}

static void setup_chain(weft_sched *s)
{
    cur = s;
    WT_ASSERT_EQ(weft_spawn(s, chain_reader, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, chain_writer, NULL), WEFT_OK);
}

WT_TEST(proc_win, tasks_wait_for_each_others_children, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        weft_event_init(&chain_ev, true, false);
        temp_name(chain_a, sizeof chain_a, "chain_a");
        temp_name(chain_b, sizeof chain_b, "chain_b");
        atomic_store(&chain_ok, 0);
        run_on(w, setup_chain);
        WT_ASSERT(atomic_load(&chain_ok), "workers %u: %s", w, slurp(chain_b));
        weft_event_destroy(&chain_ev);
        DeleteFileA(chain_a);
        DeleteFileA(chain_b);
    }
}

/* ---- a timeout ends the child (and its group); errors ------------------------------ */

static void timeout_body(void *arg)
{
    const char *sleepy[] = { helper_path(), "sleep", NULL };
    for (int group = 0; group < 2; group++) {
        weft_proc_spec spec = { .argv = sleepy, .pgroup = group ? WEFT_PROC_NEW_GROUP : 0 };
        int status = -1;
        uint64_t t0 = wt_now_ns();
        WT_ASSERT_EQ(weft_proc_run_for(cur, &spec, &status, 20 * MS), WEFT_ETIMEDOUT);
        WT_ASSERT(wt_now_ns() - t0 >= 20 * MS);
        WT_ASSERT_EQ(status, 1);   /* ended by weft: exit code 1 */
    }
    const char *missing[] = { "weft-no-such-program-here", NULL };
    weft_proc_spec spec = { .argv = missing };
    int pid = 0;
    WT_ASSERT_EQ(weft_proc_spawn(cur, &spec, &pid, NULL), WEFT_ENOEXEC);
    WT_ASSERT_EQ(pid, 0);
    spec = (weft_proc_spec){ .argv = sleepy, .pgroup = 42 };   /* joining a group: none here */
    WT_ASSERT_EQ(weft_proc_spawn(cur, &spec, &pid, NULL), WEFT_EINVAL);
    spec = (weft_proc_spec){ .argv = sleepy, .cwd = "Z:\\weft\\no\\such\\dir" };
    WT_ASSERT_EQ(weft_proc_spawn(cur, &spec, &pid, NULL), WEFT_ENOEXEC);
    spec = (weft_proc_spec){ .argv = sleepy };
    spec.stdio[0] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = "Z:\\weft\\no\\such" };
    WT_ASSERT_EQ(weft_proc_spawn(cur, &spec, &pid, NULL), WEFT_ENOEXEC);
    WT_ASSERT_EQ(pid, 0);
}

static void setup_timeout(weft_sched *s)
{
    cur = s;
    WT_ASSERT_EQ(weft_spawn(s, timeout_body, NULL), WEFT_OK);
}

WT_TEST(proc_win, timeout_ends_child_and_errors, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2)
        run_on(w, setup_timeout);
    WT_ASSERT_EQ(weft_signal_block(WEFT_SIG(2)), WEFT_EINVAL);   /* no signals on Windows */
    WT_ASSERT_EQ(weft_signal_wait_for(WEFT_SIG(2), 0), WEFT_EINVAL);
}
