#!/usr/bin/env python3
"""check-os-seam.py -- every OS call of weft goes through src/os.

    tools/check-os-seam.py [ROOT]        (ROOT: the repository, default ..)

src/os/os.h is the one seam between weft and the operating system: a port
to another OS adds an implementation there (src/os/linux.c has Linux's,
src/os/windows.c Windows') and touches nothing else; <windows.h> is one of
the headers refused outside src/os. This script reads every C file and header
under src/ outside src/os and fails when:

  1. it includes a system header other than
     - the C standard library's (<stdatomic.h>, <stdint.h>, <string.h>,
       <time.h> for struct timespec, ...),
     - <pthread.h> (locks, condition variables and pthread_once stay
       pthread's on every target: Windows has winpthreads),
     - Concurrency Kit's <ck_*.h>,
     - the compiler's own intrinsics (<cpuid.h>, <x86intrin.h>,
       <arm_acle.h>), and <sanitizer/...> and <valgrind/...>, each only
       inside an #if (they exist only for some targets or builds);
  2. it calls an OS function that one of those headers may still
     declare (clock_gettime and nanosleep from <time.h>, pthread_create
     and the other thread calls from <pthread.h>, the POSIX calls a
     header reached through another could bring): those go through
     weft__os_* instead.

Comments and string literals are not code: they may name anything.
"""
import os
import re
import sys

C_STANDARD = {
    "assert.h", "complex.h", "ctype.h", "errno.h", "fenv.h", "float.h",
    "inttypes.h", "iso646.h", "limits.h", "locale.h", "math.h", "setjmp.h",
    "signal.h", "stdalign.h", "stdarg.h", "stdatomic.h", "stdbool.h",
    "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "stdnoreturn.h",
    "string.h", "tgmath.h", "threads.h", "time.h", "uchar.h", "wchar.h",
    "wctype.h",
}
ALWAYS = {"pthread.h"}
ONLY_UNDER_IF = {"cpuid.h", "x86intrin.h", "immintrin.h", "arm_acle.h"}
ONLY_UNDER_IF_DIRS = ("sanitizer/", "valgrind/")

# OS calls that a permitted header may declare, or that a header reached
# through another may bring in: each has a weft__os_* counterpart.
OS_CALLS = [
    "clock_gettime", "clock_nanosleep", "nanosleep", "usleep", "sleep",
    "sched_yield", "sched_getaffinity", "sysconf", "syscall",
    "pthread_create", "pthread_join", "pthread_detach",
    "pthread_setname_np", "pthread_getattr_np", "pthread_attr_getstack",
    "mmap", "munmap", "mprotect", "madvise", "sigaction", "sigaltstack",
    "signal", "raise", "kill", "dladdr", "dlsym", "dlopen",
    "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "eventfd",
    "poll", "ppoll", "select", "waitpid", "pidfd_open", "open", "close",
    "read", "write", "fcntl", "dup", "getpid", "gettid", "malloc_trim",
    "membarrier", "futex",
]
CALL = re.compile(r"\b(" + "|".join(OS_CALLS) + r")\s*\(")
INCLUDE = re.compile(r"^\s*#\s*include\s*<([^>]+)>")
IF_OPEN = re.compile(r"^\s*#\s*if")
IF_CLOSE = re.compile(r"^\s*#\s*endif")
# A declaration or definition of a weft name that happens to match
# (weft__x_write, .read = ...) is no call: only bare identifiers count.
PRECEDED = re.compile(r"[\w.>]$")


def strip_comments_and_strings(text):
    """text with comments and string/char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + (c if j - i >= 2 else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def check_file(path, rel, problems):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    code = strip_comments_and_strings(text)
    depth = 0
    for no, line in enumerate(code.split("\n"), 1):
        if IF_OPEN.match(line):
            depth += 1
        elif IF_CLOSE.match(line):
            depth -= 1
        m = INCLUDE.match(line)
        if m:
            h = m.group(1)
            if h in C_STANDARD or h in ALWAYS or re.fullmatch(r"ck_\w+\.h", h):
                continue
            guarded = h in ONLY_UNDER_IF or h.startswith(ONLY_UNDER_IF_DIRS)
            if guarded and depth > 0:
                continue
            why = "only inside an #if" if guarded else "an OS header: go through src/os/os.h"
            problems.append(f"{rel}:{no}: #include <{h}>: {why}")
            continue
        if line.lstrip().startswith("#"):
            continue
        for m in CALL.finditer(line):
            if PRECEDED.search(line[:m.start()]):
                continue
            problems.append(f"{rel}:{no}: {m.group(1)}(): an OS call: use its weft__os_* "
                            "counterpart (src/os/os.h)")


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1
                           else os.path.join(os.path.dirname(__file__), ".."))
    src = os.path.join(root, "src")
    problems = []
    nfiles = 0
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == os.path.join("src", "os") or rel_dir.startswith(os.path.join("src", "os") + os.sep):
            dirnames[:] = []
            continue
        for name in sorted(filenames):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            check_file(path, os.path.relpath(path, root), problems)
            nfiles += 1
    if nfiles == 0:
        print("check-os-seam: no C file under src/: wrong ROOT?", file=sys.stderr)
        return 1
    for p in problems:
        print(p)
    if problems:
        print(f"check-os-seam: {len(problems)} OS dependencies outside src/os", file=sys.stderr)
        return 1
    print(f"check-os-seam: {nfiles} files outside src/os include and call no OS directly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
