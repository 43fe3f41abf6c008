/* Helpers the pinned-task tests share (test_pin_*.c): the worker counts
 * and bind flags tried, schedulers and binds, pinned and prioritised
 * spawns, bounded spins, naps and busy loops, plain threads started and
 * joined. Include after wtest.h and sched_util.h. A variable some of the
 * files leave unused is marked so. */
#ifndef WEFT_TEST_PIN_UTIL_H
#define WEFT_TEST_PIN_UTIL_H

/* A loop that spins in a test's own code gives up after SPIN_NS (a
 * starved thread on a loaded machine gets its turn well before). */
#define SPIN_NS  ((uint64_t)60 * 1000000000u)
#define MS       ((uint64_t)1000000)

/* Worker counts with the bind flags tried at each. */
__attribute__((unused)) static const struct wcfg { unsigned workers, flags; } cfgs[] = {
    { 0, 0 }, { 1, 0 }, { 2, 0 }, { 8, 0 },
    { 1, WEFT_BIND_NO_HELP }, { 2, WEFT_BIND_NO_HELP }, { 8, WEFT_BIND_NO_HELP },
};

#define NCFGS (sizeof cfgs / sizeof cfgs[0])

static inline const char *flag_name(unsigned flags)
{
    return flags & WEFT_BIND_NO_HELP ? "NO_HELP" : "helping";
}

/* Binds the calling thread to s; returns its id (checked >= workers). */
static inline int bind_as(weft_sched *s, unsigned flags)
{
    int rc = weft_sched_bind_ex(s, flags);
    WT_ASSERT(rc == WEFT_OK, "bind_ex(%s): %s", flag_name(flags), weft_err_name(rc));
    int id = weft_thread_id();
    WT_ASSERT(id >= (int)weft_sched_workers(s), "bound thread's id %d at %u workers", id,
              weft_sched_workers(s));
    return id;
}

static inline int spawn_pinned(weft_sched *s, weft_fn fn, void *arg, int thread)
{
    weft_spawn_opts o = { .pinned = true, .thread = thread };
    return weft_spawn_ex(s, fn, arg, &o);
}

/* Spins (giving the CPU away) until *v >= want or ns pass. */
static inline bool spin_until(atomic_int *v, int want, uint64_t ns)
{
    uint64_t end = wt_now_ns() + ns;
    while (atomic_load(v) < want) {
        if (wt_now_ns() > end)
            return false;
        sched_yield();
    }
    return true;
}

static inline void nap_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

static inline pthread_t start_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    WT_ASSERT_EQ(pthread_create(&t, NULL, fn, arg), 0);
    return t;
}

static inline void join_thread(pthread_t t)
{
    WT_ASSERT_EQ(pthread_join(t, NULL), 0);
}

__attribute__((unused)) static atomic_int ran_anything;

static inline void count_run(void *arg)
{
    atomic_fetch_add(&ran_anything, 1);
}

#endif
