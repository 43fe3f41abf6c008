/* Spawning from threads Windows made itself (CreateThread, as an engine
 * makes its job threads), which then exit: the thread's outside-spawn
 * entries go back at its exit through the C runtime's thread-exit hooks,
 * which for such a thread run after mingw's emulated thread-locals may be
 * gone. Before the entries moved out of thread-local storage on Windows
 * (extspawn.c), about one run in four of this corrupted the heap under
 * Wine. Each round: four threads spawn 300 tasks each and exit (two into
 * one scheduler, two into both), then the schedulers wait for idle; every
 * task ran once. */
#include <stdatomic.h>
#include <stdio.h>

#include <windows.h>

#include "weft.h"
#include "wtest.h"
#include "sched_util.h"

enum { THREADS = 4, PER_THREAD = 300, ROUNDS = 40 };

static atomic_uint ran;
static weft_sched *scheds[2];

static void count(void *arg)
{
    (void)arg;
    atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
}

static DWORD WINAPI spawner(LPVOID arg)
{
    unsigned k = (unsigned)(uintptr_t)arg;
    for (unsigned i = 0; i < PER_THREAD; i++)
        if (weft_spawn(scheds[(k + i) % (k < 2 ? 1 : 2)], count, NULL) != WEFT_OK)
            return 1;
    return 0;   /* the entries go back at this thread's exit */
}

WT_TEST(extspawn_win, create_thread_spawners_exit, .timeout = 300)
{
    WT_FOR_WORKERS(w, 1, 2) {
        for (unsigned r = 0; r < ROUNDS; r++) {   /* not scaled: a fault came about once in 80 rounds */
            scheds[0] = make_sched(w);
            scheds[1] = make_sched(w);
            atomic_store(&ran, 0);
            HANDLE th[THREADS];
            for (unsigned k = 0; k < THREADS; k++) {
                th[k] = CreateThread(NULL, 0, spawner, (LPVOID)(uintptr_t)k, 0, NULL);
                WT_ASSERT(th[k] != NULL);
            }
            WT_ASSERT_EQ(WaitForMultipleObjects(THREADS, th, TRUE, INFINITE), WAIT_OBJECT_0);
            for (unsigned k = 0; k < THREADS; k++) {
                DWORD code = 9;
                WT_ASSERT(GetExitCodeThread(th[k], &code));
                WT_ASSERT_EQ(code, 0);
                CloseHandle(th[k]);
            }
            for (int i = 0; i < 2; i++) {
                WT_ASSERT_EQ(weft_sched_wait_idle(scheds[i]), WEFT_OK);
                WT_ASSERT_EQ(weft_sched_destroy(scheds[i]), WEFT_OK);
            }
            WT_ASSERT_EQ(atomic_load(&ran), THREADS * PER_THREAD);
        }
    }
}
