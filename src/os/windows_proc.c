/* This file is private to weft: the OS seam's process spawn on Windows
 * (os.h says what each call does): weft/proc.h's command as a
 * CreateProcessW call, the processes weft started kept until a wait sees
 * them end, and ending a process or its group.
 *
 * The command line: Windows passes one string, which the child splits
 * itself; the C runtime's rules (those of CommandLineToArgvW) are the
 * convention. An argument with no blank and no quote goes as it is; any
 * other is quoted, a quote inside escaped with a backslash, and the
 * backslashes before a quote (or before the closing quote) doubled, the
 * only place the rules give backslashes a meaning. argv[0] is found as
 * CreateProcess finds the command line's first word (the program's
 * directory, the current one, the system's, then PATH; ".exe" added).
 * Strings are UTF-8, converted to UTF-16 for the W calls.
 *
 * Standard handles: each of the three is an inheritable handle made for
 * the call (a duplicate of the caller's standard handle or of a CRT
 * descriptor's handle, a file opened, NUL) and named in the attribute
 * list's handle list, so the child inherits those three and no other
 * handle that happens to be inheritable; closed once the child has
 * started. A relative path names a file in cwd, as on Linux. Where the
 * handle list cannot be made (an old system), the child inherits every
 * inheritable handle, as CreateProcess alone does.
 *
 * Keeping a process: the process object, its exit code with it, lives
 * while a handle to it is open. The handle CreateProcess gave is kept in
 * the list `kept` until weft__os_child_reap (windows_net.c) sees the
 * process end and calls weft__win_proc_drop, so the ID cannot be reused
 * before a wait, as a zombie keeps a pid on POSIX. A new process group
 * (WEFT_PROC_NEW_GROUP) is a job object: the child starts suspended, is
 * put in the job and resumed, so every process it starts is in the job
 * too; weft__os_proc_kill(-pid) ends the job.
 *
 * Synchronization
 *   kept_lock (SRW) the list of kept processes (kept): spawn adds, the
 *             first reap that sees the end removes, kill reads.
 */
#include <errno.h>
#include <io.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "os.h"
#include "weft/proc.h"

typedef struct kept_proc {
    struct kept_proc *next;
    DWORD pid;
    HANDLE process;
    HANDLE job;   /* the group's job object, or NULL */
} kept_proc;

static SRWLOCK kept_lock = SRWLOCK_INIT;
static kept_proc *kept;

/* ---- strings ----------------------------------------------------------------------- */

/* A growing UTF-16 buffer; ok turns false when out of memory. */
typedef struct wbuf {
    wchar_t *p;
    size_t n, cap;
    bool ok;
} wbuf;

static void wb_put(wbuf *b, const wchar_t *s, size_t n)
{
    if (!b->ok)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        wchar_t *p = realloc(b->p, cap * sizeof *p);
        if (!p) {
            b->ok = false;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n * sizeof *s);
    b->n += n;
    b->p[b->n] = 0;
}

static void wb_rep(wbuf *b, wchar_t c, size_t times)
{
    while (times--)
        wb_put(b, &c, 1);
}

/* UTF-8 s as UTF-16, malloc'd; NULL when out of memory or not UTF-8. */
static wchar_t *wide(const char *s)
{
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
    wchar_t *w = n > 0 ? malloc((size_t)n * sizeof *w) : NULL;
    if (w && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n) != n) {
        free(w);
        w = NULL;
    }
    return w;
}

/* Appends one argument, quoted by the C runtime's rules when it must be. */
static void put_arg(wbuf *b, const wchar_t *a)
{
    if (*a && !wcspbrk(a, L" \t\n\v\"")) {
        wb_put(b, a, wcslen(a));
        return;
    }
    wb_put(b, L"\"", 1);
    for (const wchar_t *c = a;; c++) {
        size_t slashes = 0;
        while (*c == L'\\') {
            slashes++;
            c++;
        }
        if (!*c) {   /* before the closing quote: doubled */
            wb_rep(b, L'\\', slashes * 2);
            break;
        }
        if (*c == L'"') {   /* before a quote: doubled, and the quote escaped */
            wb_rep(b, L'\\', slashes * 2 + 1);
            wb_put(b, L"\"", 1);
        } else {
            wb_rep(b, L'\\', slashes);
            wb_put(b, c, 1);
        }
    }
    wb_put(b, L"\"", 1);
}

/* Appends each of list (NULL-terminated), converted: as arguments joined
 * by blanks (args), or as "k=v\0...\0\0" (an environment block). false:
 * out of memory or a string not UTF-8. */
static bool put_list(wbuf *b, const char *const *list, bool args)
{
    for (size_t i = 0; list[i]; i++) {
        wchar_t *w = wide(list[i]);
        if (!w)
            return false;
        if (args) {
            if (i)
                wb_put(b, L" ", 1);
            put_arg(b, w);
        } else {
            wb_put(b, w, wcslen(w) + 1);   /* its terminator too */
        }
        free(w);
    }
    if (!args)
        wb_put(b, L"", 1);   /* the block's final terminator */
    return b->ok;
}

/* ---- the standard handles ----------------------------------------------------------- */

static bool is_relative(const char *p)
{
    return !(p[0] == '/' || p[0] == '\\' || (p[0] && p[1] == ':'));
}

/* An inheritable handle for the child's descriptor i as r says, or
 * NULL with *err set; INHERIT of a caller with no such handle: NULL,
 * *err 0 (the child has none either). */
static HANDLE std_handle(const weft_proc_redirect *r, int i, const char *cwd, int *err)
{
    static const DWORD which[3] = { STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, STD_ERROR_HANDLE };
    SECURITY_ATTRIBUTES sa = { sizeof sa, NULL, TRUE };
    HANDLE from = NULL, h = NULL;
    *err = 0;
    switch (r->kind) {
    case WEFT_PROC_INHERIT:
        from = GetStdHandle(which[i]);
        break;
    case WEFT_PROC_FD:
        from = (HANDLE)_get_osfhandle(r->fd);
        if (from == INVALID_HANDLE_VALUE) {
            *err = EBADF;
            return NULL;
        }
        break;
    case WEFT_PROC_PATH:
    case WEFT_PROC_NULL: {
        char *full = NULL;
        const char *path = r->kind == WEFT_PROC_NULL ? "NUL" : r->path;
        if (r->kind == WEFT_PROC_PATH && cwd && is_relative(path)) {
            size_t a = strlen(cwd), b = strlen(path);
            if (!(full = malloc(a + b + 2))) {
                *err = ENOMEM;
                return NULL;
            }
            memcpy(full, cwd, a);
            full[a] = '\\';
            memcpy(full + a + 1, path, b + 1);
            path = full;
        }
        wchar_t *w = wide(path);
        free(full);
        if (!w) {
            *err = ENOMEM;
            return NULL;
        }
        bool in = i == 0;
        DWORD access = in ? GENERIC_READ : r->append ? FILE_APPEND_DATA : GENERIC_WRITE;
        DWORD how = in || r->kind == WEFT_PROC_NULL ? OPEN_EXISTING : r->append ? OPEN_ALWAYS : CREATE_ALWAYS;
        h = CreateFileW(w, access, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, &sa, how,
                        FILE_ATTRIBUTE_NORMAL, NULL);
        free(w);
        if (h == INVALID_HANDLE_VALUE) {
            *err = ENOENT;
            return NULL;
        }
        return h;
    }
    }
    if (!from || from == INVALID_HANDLE_VALUE)
        return NULL;
    if (!DuplicateHandle(GetCurrentProcess(), from, GetCurrentProcess(), &h, 0, TRUE,
                         DUPLICATE_SAME_ACCESS)) {
        *err = EBADF;
        return NULL;
    }
    return h;
}

/* ---- spawn ------------------------------------------------------------------------------ */

/* Starts the child with the three handles (some may be NULL) as its only
 * inherited ones: 0, or an errno value. */
static int create(wchar_t *cmd, wchar_t *env, const wchar_t *dir, HANDLE std[3], DWORD flags,
                  PROCESS_INFORMATION *pi)
{
    HANDLE list[3];
    DWORD n = 0;
    for (int i = 0; i < 3; i++)
        if (std[i])
            list[n++] = std[i];
    SIZE_T size = 0;
    InitializeProcThreadAttributeList(NULL, 1, 0, &size);
    LPPROC_THREAD_ATTRIBUTE_LIST attrs = malloc(size);
    if (!attrs)
        return ENOMEM;
    STARTUPINFOEXW si = { .StartupInfo = { .cb = sizeof si, .dwFlags = STARTF_USESTDHANDLES } };
    si.StartupInfo.hStdInput = std[0];
    si.StartupInfo.hStdOutput = std[1];
    si.StartupInfo.hStdError = std[2];
    bool listed = InitializeProcThreadAttributeList(attrs, 1, 0, &size);
    if (listed && n &&
        UpdateProcThreadAttribute(attrs, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, list,
                                  n * sizeof *list, NULL, NULL)) {
        si.lpAttributeList = attrs;
        flags |= EXTENDED_STARTUPINFO_PRESENT;
    }
    BOOL ok = CreateProcessW(NULL, cmd, NULL, NULL, n > 0, flags | CREATE_UNICODE_ENVIRONMENT,
                             env, dir, &si.StartupInfo, pi);
    DWORD e = ok ? 0 : GetLastError();
    if (listed)
        DeleteProcThreadAttributeList(attrs);
    free(attrs);
    if (ok)
        return 0;
    return e == ERROR_NOT_ENOUGH_MEMORY || e == ERROR_OUTOFMEMORY ? ENOMEM : ENOENT;
}

int weft__os_proc_spawn(const struct weft_proc_spec *spec, int *pid)
{
    if (spec->pgroup > 0)
        return -EINVAL;   /* joining a group: no counterpart (proc.c refuses it first) */
    wbuf cmd = { .ok = true }, env = { .ok = true };
    wchar_t *dir = NULL;
    HANDLE std[3] = { NULL, NULL, NULL }, job = NULL;
    int err = 0;
    if (!put_list(&cmd, spec->argv, true) || (spec->envp && !put_list(&env, spec->envp, false)) ||
        (spec->cwd && !(dir = wide(spec->cwd))))
        err = ENOMEM;
    for (int i = 0; i < 3 && !err; i++)
        std[i] = std_handle(&spec->stdio[i], i, spec->cwd, &err);
    DWORD flags = 0;
    if (!err && spec->pgroup == WEFT_PROC_NEW_GROUP) {
        flags = CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP;
        if (!(job = CreateJobObjectW(NULL, NULL)))
            err = ENOMEM;
    }
    kept_proc *k = err ? NULL : calloc(1, sizeof *k);
    if (!err && !k)
        err = ENOMEM;
    PROCESS_INFORMATION pi;
    if (!err)
        err = create(cmd.p, spec->envp ? env.p : NULL, dir, std, flags, &pi);
    if (!err && job && !AssignProcessToJobObject(job, pi.hProcess)) {
        TerminateProcess(pi.hProcess, 1);   /* never ran: it was suspended */
        CloseHandle(pi.hProcess);
        CloseHandle(pi.hThread);
        err = ENOMEM;
    }
    if (!err) {
        if (flags & CREATE_SUSPENDED)
            ResumeThread(pi.hThread);
        CloseHandle(pi.hThread);
        *k = (kept_proc){ .pid = pi.dwProcessId, .process = pi.hProcess, .job = job };
        AcquireSRWLockExclusive(&kept_lock);
        k->next = kept;
        kept = k;
        ReleaseSRWLockExclusive(&kept_lock);
        *pid = (int)pi.dwProcessId;
        job = NULL;
        k = NULL;
    }
    for (int i = 0; i < 3; i++)
        if (std[i])
            CloseHandle(std[i]);
    if (job)
        CloseHandle(job);
    free(k);
    free(cmd.p);
    free(env.p);
    free(dir);
    return -err;
}

/* ---- keeping and ending ------------------------------------------------------------------ */

void weft__win_proc_drop(int pid)
{
    AcquireSRWLockExclusive(&kept_lock);
    kept_proc **pp = &kept, *k;
    while ((k = *pp) && k->pid != (DWORD)pid)
        pp = &k->next;
    if (k)
        *pp = k->next;
    ReleaseSRWLockExclusive(&kept_lock);
    if (!k)
        return;
    CloseHandle(k->process);
    if (k->job)
        CloseHandle(k->job);
    free(k);
}

/* Ends process pid (its job, the group it leads, when group) with exit
 * code 1; a signal has no other meaning here. */
int weft__os_proc_kill(int pid, int sig)
{
    bool group = pid < 0;
    DWORD id = (DWORD)(group ? -pid : pid);
    int rc = -ESRCH;
    AcquireSRWLockShared(&kept_lock);
    for (kept_proc *k = kept; k; k = k->next)
        if (k->pid == id) {
            BOOL ok = group ? k->job && TerminateJobObject(k->job, 1)
                            : TerminateProcess(k->process, 1);
            rc = ok ? 0 : -ESRCH;   /* already ended: as a zombie, nothing to do */
            break;
        }
    ReleaseSRWLockShared(&kept_lock);
    return rc;
}
