/* This file is private to weft's tests: run a function in a child process. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wtest.h"

int wt_run_child(void (*fn)(void *), void *arg, char *buf, size_t cap)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    wt__watchdog_pause();   /* fork single-threaded; each side gets its watchdog back */
    pid_t pid = fork();
    wt__watchdog_resume();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        close(fds[1]);
        fn(arg);
        _exit(0);
    }
    close(fds[1]);
    size_t len = 0;
    for (;;) {
        char tmp[512];
        ssize_t n = read(fds[0], tmp, sizeof tmp);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n && len + 1 < cap; i++)
            buf[len++] = tmp[i];
    }
    if (cap)
        buf[len < cap ? len : cap - 1] = '\0';
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}
