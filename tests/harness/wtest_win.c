/* This file is private to weft's tests: processes for the harness on
 * Windows, which has no fork. A test, or a death test's body, runs in a
 * new process of the same program, started with arguments that name it:
 *
 *   --wt-one SUITE::NAME   run that test alone (the plain runner's child)
 *   --wt-fn OFFSET ARG     call the function at image base + OFFSET with
 *                          ARG (wt_run_child's child)
 *
 * An offset from the image base, not an address: the child is mapped at
 * another base (ASLR). ARG is passed as a number, so a death test's
 * argument must be a small value cast to a pointer, not the address of
 * something (every current one is NULL or an index).
 */
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdint.h>

#include "wtest.h"

static char *self_command(const char *args)
{
    char exe[MAX_PATH];
    DWORD n = GetModuleFileNameA(NULL, exe, sizeof exe);
    if (n == 0 || n >= sizeof exe)
        return NULL;
    size_t cap = strlen(exe) + strlen(args) + 4;
    char *cmd = malloc(cap);
    if (cmd)
        snprintf(cmd, cap, "\"%s\" %s", exe, args);
    return cmd;
}

int wt__win_spawn(const char *args, char *buf, size_t cap, double timeout_s, bool *timed_out)
{
    *timed_out = false;
    char *cmd = self_command(args);
    if (!cmd)
        return -1;
    SECURITY_ATTRIBUTES sa = { sizeof sa, NULL, TRUE };
    HANDLE rd = NULL, wr = NULL;
    if (buf && !CreatePipe(&rd, &wr, &sa, 0)) {
        free(cmd);
        return -1;
    }
    if (rd)
        SetHandleInformation(rd, HANDLE_FLAG_INHERIT, 0);   /* the child gets the write end only */
    STARTUPINFOA si;
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    si.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
    si.hStdError = wr ? wr : GetStdHandle(STD_ERROR_HANDLE);
    PROCESS_INFORMATION pi;
    fflush(NULL);
    /* A few tries: under Wine on a loaded machine a start failed once at
     * once (loaded run 23), where the next would have worked. */
    BOOL ok = FALSE;
    DWORD err = 0;
    for (int tries = 0; tries < 5 && !ok; tries++) {
        if (tries)
            Sleep(50u << tries);
        ok = CreateProcessA(NULL, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi);
        if (!ok)
            err = GetLastError();
    }
    if (!ok)
        fprintf(stderr, "wtest: CreateProcess of \"%s\" failed 5 times (last error %lu)\n", cmd,
                (unsigned long)err);
    free(cmd);
    if (wr)
        CloseHandle(wr);
    if (!ok) {
        if (rd)
            CloseHandle(rd);
        return -1;
    }
    size_t len = 0;
    if (rd) {
        /* Read until the child and everything it started close the pipe. */
        for (;;) {
            char tmp[512];
            DWORD n = 0;
            if (!ReadFile(rd, tmp, sizeof tmp, &n, NULL) || n == 0)
                break;
            for (DWORD i = 0; i < n && len + 1 < cap; i++)
                buf[len++] = tmp[i];
        }
        CloseHandle(rd);
        if (cap)
            buf[len < cap ? len : cap - 1] = '\0';
    }
    DWORD ms = timeout_s > 0 ? (DWORD)(timeout_s * 1000) : INFINITE;
    if (WaitForSingleObject(pi.hProcess, ms) == WAIT_TIMEOUT) {
        TerminateProcess(pi.hProcess, 1);
        WaitForSingleObject(pi.hProcess, INFINITE);
        *timed_out = true;
    }
    DWORD code = 1;
    GetExitCodeProcess(pi.hProcess, &code);
    CloseHandle(pi.hProcess);
    CloseHandle(pi.hThread);
    return (int)code;
}

int wt_run_child(void (*fn)(void *), void *arg, char *buf, size_t cap)
{
    char args[64];
    uintptr_t base = (uintptr_t)GetModuleHandleA(NULL);
    snprintf(args, sizeof args, "--wt-fn %llx %llx", (unsigned long long)((uintptr_t)fn - base),
             (unsigned long long)(uintptr_t)arg);
    bool timed_out;
    return wt__win_spawn(args, buf, cap, 0, &timed_out);
}

bool wt__win_child_main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--wt-fn") == 0) {
        uintptr_t base = (uintptr_t)GetModuleHandleA(NULL);
        void (*fn)(void *) = (void (*)(void *))(base + (uintptr_t)strtoull(argv[2], NULL, 16));
        fn((void *)(uintptr_t)strtoull(argv[3], NULL, 16));
        fflush(NULL);
        _exit(0);
    }
    return false;
}
#endif
