/* This file is private to weft's tests.
 *
 * What weft.hpp's tests take from the system (cpptest.hpp declares it):
 * plain threads, child processes and a connected pair of descriptors, as
 * std::thread, fork and pipe(2) on Linux, and as a winpthreads thread,
 * this program started again and a loopback TCP pair on Windows, where
 * mingw-w64's g++ (win32 thread model) has no std::thread and there is
 * no fork.
 *
 * Synchronization: none shared here. A thread's callable is handed to it
 * by its creation (which orders the copy before the thread starts) and
 * joined back by finish; the WSAStartup below runs once under a static
 * local's initialization.
 */
#include "cpptest.hpp"

#include <cstdlib>

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#include <winsock2.h>
#include <windows.h>
#include <pthread.h>
#include <string>
#else
#include <csignal>
#include <poll.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#endif

namespace cpptest {

void run_child(const char *name)
{
    for (const test_case &c : children()) {
        if (std::strcmp(c.name, name) == 0) {
            c.fn();
            std::fflush(nullptr);
            std::_Exit(0);
        }
    }
    std::fprintf(stderr, "cpptest: no child named %s\n", name);
    std::fflush(nullptr);
    std::_Exit(2);
}

#if defined(_WIN32)

/* A thread of winpthreads (which weft itself links), not CreateThread:
 * a thread CreateThread started that spawned into a scheduler from
 * outside corrupts the heap when it exits (weft's thread-exit hook for
 * its spawn port, a pthread key destructor, runs there after the
 * emulated thread-locals it reads were freed; a pthread ends its keys
 * first). Filed with the lead; spawn_from_plain_threads found it. */
namespace {
struct start_arg {
    void (*fn)(void *);
    void *arg;
};

void *thread_main(void *p)
{
    start_arg a = *static_cast<start_arg *>(p);
    delete static_cast<start_arg *>(p);
    a.fn(a.arg);
    return nullptr;
}
} // namespace

void *thread::start(void (*fn)(void *), void *arg)
{
    pthread_t *t = new pthread_t;
    int rc = pthread_create(t, nullptr, thread_main, new start_arg{fn, arg});
    if (rc != 0) {
        std::fprintf(stderr, "cpptest: pthread_create failed (%d)\n", rc);
        std::abort();
    }
    return t;
}

void thread::finish(void *h)
{
    pthread_t *t = static_cast<pthread_t *>(h);
    pthread_join(*t, nullptr);
    delete t;
}

child start_child(const char *name)
{
    child c;
    char exe[MAX_PATH];
    DWORD n = GetModuleFileNameA(nullptr, exe, sizeof exe);
    if (n == 0 || n >= sizeof exe)
        return c;
    std::string cmd = std::string("\"") + exe + "\" --cpp-child " + name;
    STARTUPINFOA si{};
    si.cb = sizeof si;
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    si.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
    si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
    PROCESS_INFORMATION pi;
    std::fflush(nullptr);
    if (!CreateProcessA(nullptr, &cmd[0], nullptr, nullptr, TRUE, 0, nullptr, nullptr, &si, &pi))
        return c;
    CloseHandle(pi.hThread);
    c.pid = static_cast<int>(pi.dwProcessId);
    c.handle = pi.hProcess;
    return c;
}

int wait_child(child &c)
{
    DWORD code = 0;
    bool ok = c.handle && WaitForSingleObject(c.handle, INFINITE) == WAIT_OBJECT_0 &&
              GetExitCodeProcess(c.handle, &code);
    close_child(c);
    return ok ? static_cast<int>(code) : -1;
}

void close_child(child &c)
{
    if (c.handle)
        CloseHandle(c.handle);
    c.handle = nullptr;
}

const int terminated_status = 3;   /* the C runtime's abort() */
const short poll_in = POLLIN;

bool fd_pair(weft_fd fds[2])
{
    static const bool started = [] {
        WSADATA d;
        return WSAStartup(MAKEWORD(2, 2), &d) == 0;
    }();
    if (!started)
        return false;
    SOCKET l = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    if (l == INVALID_SOCKET)
        return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int len = sizeof a;
    SOCKET s0 = INVALID_SOCKET, s1 = INVALID_SOCKET;
    if (bind(l, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 && listen(l, 1) == 0 &&
        getsockname(l, reinterpret_cast<sockaddr *>(&a), &len) == 0) {
        s1 = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
        if (s1 != INVALID_SOCKET && connect(s1, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0)
            s0 = accept(l, nullptr, nullptr);
    }
    closesocket(l);
    u_long nb = 1;
    if (s0 == INVALID_SOCKET || ioctlsocket(s0, FIONBIO, &nb) != 0 || ioctlsocket(s1, FIONBIO, &nb) != 0) {
        if (s0 != INVALID_SOCKET)
            closesocket(s0);
        if (s1 != INVALID_SOCKET)
            closesocket(s1);
        return false;
    }
    fds[0] = static_cast<weft_fd>(s0);
    fds[1] = static_cast<weft_fd>(s1);
    return true;
}

bool fd_write1(weft_fd fd, char c) { return send(static_cast<SOCKET>(fd), &c, 1, 0) == 1; }
bool fd_read1(weft_fd fd, char *c) { return recv(static_cast<SOCKET>(fd), c, 1, 0) == 1; }
void fd_close(weft_fd fd) { closesocket(static_cast<SOCKET>(fd)); }

#else

void *thread::start(void (*fn)(void *), void *arg) { return new std::thread(fn, arg); }

void thread::finish(void *h)
{
    std::thread *t = static_cast<std::thread *>(h);
    t->join();
    delete t;
}

child start_child(const char *name)
{
    child c;
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0)
        run_child(name);
    c.pid = pid;
    return c;
}

int wait_child(child &c)
{
    int status = 0;
    if (c.pid <= 0 || waitpid(c.pid, &status, 0) != c.pid)
        return -1;
    c.pid = -1;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

void close_child(child &c) { c.pid = -1; }

const int terminated_status = 128 + SIGABRT;
const short poll_in = POLLIN;

bool fd_pair(weft_fd fds[2]) { return pipe(fds) == 0; }
bool fd_write1(weft_fd fd, char c) { return write(fd, &c, 1) == 1; }
bool fd_read1(weft_fd fd, char *c) { return read(fd, c, 1) == 1; }
void fd_close(weft_fd fd) { close(fd); }

#endif

} // namespace cpptest
