/* The tests' <sys/wait.h> on Windows (tests/support/win32 is on the
 * include path of the windows preset's tests only): Windows has no wait
 * status; the harness (wtest.h) reads a child's exit code as one with
 * its own WIFEXITED, WIFSIGNALED, WEXITSTATUS and WTERMSIG, which is what
 * the tests that include this need. fork and waitpid do not exist: the
 * tests that call them are not built on Windows (tests/CMakeLists.txt). */
#ifndef WT_WIN32_SYS_WAIT_H
#define WT_WIN32_SYS_WAIT_H
#include "wtest.h"
#endif
