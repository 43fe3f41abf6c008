/* The tests' <sys/resource.h> on Windows (tests/support/win32, the
 * windows preset's tests only): getrusage(RUSAGE_SELF) with the
 * process's user and kernel time (GetProcessTimes, compat.c), which is
 * all the tests read of it. */
#ifndef WT_WIN32_SYS_RESOURCE_H
#define WT_WIN32_SYS_RESOURCE_H
#include <sys/time.h>

#define RUSAGE_SELF 0

struct rusage {
    struct timeval ru_utime, ru_stime;
};

int getrusage(int who, struct rusage *ru);
#endif
