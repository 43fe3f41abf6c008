/* This file is private to weft's tests: run a function in a child
 * process; reap a child that may hang. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

/* ---- reaping a child that may hang -----------------------------------------
 * A child forked from a multi-threaded process under AddressSanitizer can
 * hang in the sanitizer's own allocator: this runtime (clang 14, gcc 12)
 * takes no lock around fork(2), so a size-class lock that another parent
 * thread held inside malloc at the fork stays held in the child for ever,
 * and the child's next malloc of that class waits on it. That is not
 * weft's hang, and a test that forks while threads allocate cannot rule
 * it out. wt_reap tells it apart: the child is stuck in the sanitizer
 * when one of its threads sits in a futex wait whose instruction lies in
 * the sanitizer runtime, on the same word, on two looks a second apart
 * (nobody is left to wake it: the runtime's waits have no timeout). Its
 * other threads may wait on that one in weft (a scheduler's start waits
 * for its workers, seen in CI: two workers stuck in the allocator, the
 * maker in weft's futex); the hang is still the runtime's. */

/* The name of the function of this program holding code address pc, from
 * the executable's full symbol table (the sanitizer runtime is linked in
 * statically and exports none of its internals), or from dladdr for a
 * shared object. A child of fork has the parent's layout, so a child's pc
 * resolves here. NULL if unknown. */
static const char *symbol_at(uintptr_t pc, char *obj, size_t cap)
{
    Dl_info di;
    if (dladdr((void *)pc, &di) == 0)
        return NULL;
    snprintf(obj, cap, "%s", di.dli_fname ? di.dli_fname : "");
    Dl_info me;
    if (dladdr((void *)symbol_at, &me) == 0 || me.dli_fbase != di.dli_fbase)
        return di.dli_sname;   /* a shared object: its exported name (and obj) */
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    const char *found = NULL;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0)
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return NULL;
    const Elf64_Ehdr *eh = map;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)((const char *)map + eh->e_shoff);
    uintptr_t off = pc - (uintptr_t)me.dli_fbase;   /* PIE: symbols are offsets */
    for (unsigned i = 0; i < eh->e_shnum && !found; i++) {
        if (sh[i].sh_type != SHT_SYMTAB)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)((const char *)map + sh[i].sh_offset);
        const char *names = (const char *)map + sh[sh[i].sh_link].sh_offset;
        size_t n = sh[i].sh_size / sizeof *sym;
        for (size_t k = 0; k < n; k++)
            if (ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC && sym[k].st_value <= off &&
                off < sym[k].st_value + sym[k].st_size) {
                static char name[256];
                snprintf(name, sizeof name, "%s", names + sym[k].st_name);
                found = name;
                break;
            }
    }
    munmap(map, (size_t)st.st_size);
    return found;
}

static bool in_sanitizer(uintptr_t pc)
{
    char obj[512] = "";
    const char *name = symbol_at(pc, obj, sizeof obj);
    if (strstr(obj, "libasan") || strstr(obj, "clang_rt"))
        return true;
    return name && (strstr(name, "__sanitizer") || strstr(name, "__asan") ||
                    strstr(name, "__lsan") || strstr(name, "__interception"));
}

/* The futex word a thread of child pid waits on inside the sanitizer
 * runtime (/proc/PID/task/TID/syscall: number, six arguments, sp, pc),
 * or 0 when none does. */
static uintptr_t sanitizer_wait_word(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    uintptr_t word = 0;
    struct dirent *e;
    while (!word && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char file[320], line[512];
        snprintf(file, sizeof file, "/proc/%d/task/%s/syscall", (int)pid, e->d_name);
        FILE *f = fopen(file, "r");
        if (!f)
            continue;
        long nr = -1;
        unsigned long long a[8] = { 0 };
        if (fgets(line, sizeof line, f) &&
            sscanf(line, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &nr, &a[0], &a[1], &a[2],
                   &a[3], &a[4], &a[5], &a[6], &a[7]) == 9 &&
            nr == SYS_futex && in_sanitizer((uintptr_t)a[7]))
            word = (uintptr_t)a[0];
        fclose(f);
    }
    closedir(d);
    return word;
}

/* What each thread of a hung child is doing, on stderr: the syscall it
 * sits in (or "running") and the function holding its instruction, so a
 * CI log says whose hang it was. */
static void describe_hung(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char file[320], line[512] = "";
        snprintf(file, sizeof file, "/proc/%d/task/%s/syscall", (int)pid, e->d_name);
        FILE *f = fopen(file, "r");
        if (f) {
            if (!fgets(line, sizeof line, f))
                line[0] = 0;
            fclose(f);
        }
        line[strcspn(line, "\n")] = 0;
        long nr = -1;
        unsigned long long a[8] = { 0 };
        int got = sscanf(line, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &nr, &a[0], &a[1],
                         &a[2], &a[3], &a[4], &a[5], &a[6], &a[7]);
        char obj[512] = "";
        const char *name = got == 9 ? symbol_at((uintptr_t)a[7], obj, sizeof obj) : NULL;
        fprintf(stderr, "wt_reap: hung child %d thread %s: %s  [%s %s]\n", (int)pid, e->d_name,
                line, name ? name : "?", obj);
    }
    closedir(d);
}

int wt_reap(pid_t pid, uint64_t deadline_ns)
{
    uint64_t start = wt_now_ns(), until = start + deadline_ns, next_look = start + 2000000000ull;
    uintptr_t stuck_word = 0;
    int stuck_looks = 0;
    for (;;) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0 && errno != EINTR)
            return WT_REAP_ERROR;
        uint64_t now = wt_now_ns();
        int verdict = 0;
        if (now > until) {
            verdict = WT_REAP_HUNG;
        } else if (now >= next_look) {
            next_look = now + 1000000000ull;
            uintptr_t word = sanitizer_wait_word(pid);
            stuck_looks = word && word == stuck_word ? stuck_looks + 1 : word ? 1 : 0;
            stuck_word = word;
            if (stuck_looks == 2)
                verdict = WT_REAP_SANITIZER;
        }
        if (verdict) {
            if (verdict == WT_REAP_HUNG)
                describe_hung(pid);
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            return verdict;
        }
        struct timespec ts = { 0, 1000000 };   /* 1 ms */
        nanosleep(&ts, NULL);
    }
}
