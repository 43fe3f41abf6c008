/*
 * weft/cpp/base.hpp: what every part of weft.hpp shares: error codes as
 * std::error_code, durations, the config, priorities, and how a callable
 * is stored for a task (in its argument word, in a pooled block, or on
 * the heap). Part of weft.hpp, the header C++ users include.
 * See docs/reference/cpp.md.
 *
 * Synchronization (the block pool, the only state shared here):
 *  - pool_tls() (one per thread): its free blocks; only its thread touches
 *    it. A fiber keeps its thread, so a task sees the same list before
 *    and after it blocks.
 *  - pool_shared::batches: batches of free blocks; under pool_shared::mu.
 *  - pool_shared::made: a count of blocks ever allocated, for tests;
 *    relaxed, it orders nothing.
 *  - a block itself: written by the spawning thread (the callable), read
 *    and freed by the thread that runs the task; weft's queue orders the
 *    two (a spawn happens before its task starts).
 */
#ifndef WEFT_CPP_BASE_HPP
#define WEFT_CPP_BASE_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
# error "weft.hpp needs C++17 or later (weft.h is the C header)"
#endif

#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <new>
#include <system_error>
#include <type_traits>
#include <utility>
#include <exception>
/* Exceptions on (1) or off (0, -fno-exceptions). Only code paths depend
 * on it, never a type's layout: translation units built both ways may
 * share weft's objects. */
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
# define WEFT_CPP_EXCEPTIONS 1
#else
# define WEFT_CPP_EXCEPTIONS 0
#endif
/* A callback's body, its exception kept in c (a detail::first_exception)
 * to be thrown again on the caller: the parallel calls' rule. */
#if WEFT_CPP_EXCEPTIONS
# define WEFT_CPP_TRY_ try {
# define WEFT_CPP_CATCH_(c) } catch (...) { (c).keep(); }
#else
# define WEFT_CPP_TRY_
# define WEFT_CPP_CATCH_(c)
#endif

#include "../../weft.h"

namespace weft {

/* ---- errors ------------------------------------------------------------ */

/** weft's codes (weft/errors.h), named as there in lower case. */
enum class errc : int {
    ok = WEFT_OK,
    einval = WEFT_EINVAL,
    enomem = WEFT_ENOMEM,
    ebusy = WEFT_EBUSY,
    ecycle = WEFT_ECYCLE,
    ecanceled = WEFT_ECANCELED,
    etimedout = WEFT_ETIMEDOUT,
    eclosed = WEFT_ECLOSED,
    eagain = WEFT_EAGAIN,
    enotbound = WEFT_ENOTBOUND,
    eshutdown = WEFT_ESHUTDOWN,
    eio = WEFT_EIO,
    efailed = WEFT_EFAILED,
    enoexec = WEFT_ENOEXEC,
};

namespace detail {
/* A code added to WEFT_ERRNO_MAP must be added to errc above too. */
#define WEFT_CPP_COUNT_(name, value, msg) +1
inline constexpr int errno_map_size = 0 WEFT_ERRNO_MAP(WEFT_CPP_COUNT_);
#undef WEFT_CPP_COUNT_
static_assert(errno_map_size == 13, "weft/errors.h has a code that weft::errc lacks");

class category_impl final : public std::error_category {
public:
    const char *name() const noexcept override { return "weft"; }
    std::string message(int c) const override { return weft_strerror(c); }
    std::error_condition default_error_condition(int c) const noexcept override
    {
        switch (c) {
        case WEFT_EINVAL: return std::make_error_condition(std::errc::invalid_argument);
        case WEFT_ENOMEM: return std::make_error_condition(std::errc::not_enough_memory);
        case WEFT_EBUSY: return std::make_error_condition(std::errc::device_or_resource_busy);
        case WEFT_ECANCELED: return std::make_error_condition(std::errc::operation_canceled);
        case WEFT_ETIMEDOUT: return std::make_error_condition(std::errc::timed_out);
        case WEFT_EAGAIN: return std::make_error_condition(std::errc::resource_unavailable_try_again);
        case WEFT_EIO: return std::make_error_condition(std::errc::io_error);
        case WEFT_ENOEXEC: return std::make_error_condition(std::errc::executable_format_error);
        default: return std::error_condition(c, *this);
        }
    }
};
} // namespace detail

/** weft's error category: message() is weft_strerror's; EINVAL, ENOMEM,
 * EBUSY, ECANCELED, ETIMEDOUT, EAGAIN and EIO compare equal to their
 * std::errc. */
inline const std::error_category &category() noexcept
{
    static const detail::category_impl c;
    return c;
}

/** A weft code as a std::error_code (0: no error). */
inline std::error_code make_error_code(errc e) noexcept
{
    return std::error_code(static_cast<int>(e), category());
}

/** The int a weft C call returned, as a std::error_code: 0 is
 * std::error_code() (so ec == std::error_code() holds for success too). */
inline std::error_code to_error(int rc) noexcept
{
    return rc == WEFT_OK ? std::error_code() : std::error_code(rc, category());
}

/** The fail code (graph::fail_code) of a graph task whose callable threw:
 * the task was failed with it (weft_task_fail), the exception kept for
 * graph::exception. 'WEFT' in ASCII, negated. */
inline constexpr int exception_code = -0x57454654;

/** Throws std::system_error(ec) if ec is an error. Without exceptions
 * (-fno-exceptions) it prints ec's message and aborts instead. */
inline void throw_if(std::error_code ec)
{
    if (!ec)
        return;
#if WEFT_CPP_EXCEPTIONS
    throw std::system_error(ec);
#else
    std::fprintf(stderr, "weft: %s\n", ec.message().c_str());
    std::abort();
#endif
}

/* ---- durations --------------------------------------------------------- */

/** A wait with no timeout: the C API's UINT64_MAX. */
inline constexpr std::chrono::nanoseconds forever = std::chrono::nanoseconds::max();

namespace detail {
/* d in nanoseconds for the C API: negative is 0 (only look), anything
 * past UINT64_MAX - 1 ns (forever included) is UINT64_MAX (for ever). */
template <class Rep, class Period>
inline std::uint64_t to_ns(std::chrono::duration<Rep, Period> d) noexcept
{
    using ns = std::chrono::nanoseconds;
    if (d <= d.zero())
        return 0;
    if (d >= std::chrono::duration_cast<std::chrono::duration<Rep, Period>>(ns::max()))
        return UINT64_MAX;
    return static_cast<std::uint64_t>(std::chrono::duration_cast<ns>(d).count());
}
} // namespace detail

/* ---- config, priorities, hints ------------------------------------------- */

/** weft_config with its defaults (weft_config_init); set fields as in C. */
struct config : weft_config {
    config() noexcept { weft_config_init(this); }
};

/** weft_config.workers values: one worker per CPU, or none (tasks run on
 * the bound thread while it waits). */
inline constexpr unsigned auto_workers = WEFT_WORKERS_AUTO;
inline constexpr unsigned no_workers = WEFT_WORKERS_NONE;

/** weft_priority. */
enum class priority : int {
    normal = WEFT_PRIORITY_NORMAL,
    high = WEFT_PRIORITY_HIGH,
    low = WEFT_PRIORITY_LOW,
};

/** weft_hint. */
enum class hint : int {
    none = WEFT_HINT_NONE,
    next = WEFT_HINT_NEXT,
    yield = WEFT_HINT_YIELD,
};

/** weft_spawn_opts, set by chained calls:
 *   weft::spawn_options().prio(weft::priority::low).pin(id).name("load") */
class spawn_options {
public:
    spawn_options() noexcept : o_{} {}
    spawn_options &prio(weft::priority p) noexcept { o_.priority = static_cast<weft_priority>(p); return *this; }
    spawn_options &place(weft::hint h) noexcept { o_.hint = static_cast<weft_hint>(h); return *this; }
    /** Runs only on the thread with this id (weft::thread_id). */
    spawn_options &pin(int thread) noexcept { o_.pinned = true; o_.thread = thread; return *this; }
    /** A static string shown in stall reports and traces; never copied. */
    spawn_options &name(const char *n) noexcept { o_.name = n; return *this; }
    const weft_spawn_opts *c_opts() const noexcept { return &o_; }

private:
    weft_spawn_opts o_;
};

/* ---- how a task's callable is stored --------------------------------------- */

/** A callable that is trivially copyable and fits in a pointer (a lambda
 * capturing one pointer or nothing) travels in the task's argument word:
 * no memory at all. */
inline constexpr std::size_t inline_capture_size = sizeof(void *);
/** Any other callable up to this size (and alignment up to 16) goes in a
 * pooled 64-byte block, taken from and given back to a per-thread cache:
 * no allocation in steady state. Larger ones are allocated with new. */
inline constexpr std::size_t pooled_capture_size = 64;

namespace detail {

/* The lock of weft.hpp's own short critical sections: a weft_mutex (a
 * task that waits for it suspends its fiber; a plain thread sleeps), not
 * a std::mutex, which mingw-w64's default (win32) thread model lacks.
 * Lockable for std::lock_guard and std::unique_lock. */
class plain_lock {
public:
    plain_lock() noexcept { weft_mutex_init(&m_); }
    ~plain_lock() { weft_mutex_destroy(&m_); }
    plain_lock(const plain_lock &) = delete;
    plain_lock &operator=(const plain_lock &) = delete;
    void lock() noexcept { weft_mutex_lock(&m_); }
    void unlock() noexcept { weft_mutex_unlock(&m_); }

private:
    weft_mutex m_;
};

/* The block pool. Each thread keeps a list of free blocks; past
 * pool_cap it moves a batch of half of them to the shared list, and
 * with none it takes a batch from there (one lock per pool_cap / 2
 * blocks), so a thread that only spawns and one that only runs tasks
 * pass blocks round without the allocator. Fibers are pinned to their
 * thread (docs/design.md, "Blocking and fibers"), so the thread-local
 * list is the same before and after a task blocks. */
union pool_block {
    struct {
        pool_block *next;        /* in a list */
        pool_block *next_batch;  /* on the shared list: the next batch */
        std::size_t count;       /* on the shared list: this batch's length */
    } link;
    alignas(16) unsigned char bytes[pooled_capture_size];
};
static_assert(sizeof(pool_block) == pooled_capture_size, "pool block size");

inline constexpr std::size_t pool_cap = 128;

struct pool_shared {
    plain_lock mu;
    pool_block *batches = nullptr;   /* each: a list of link.count blocks */
    std::atomic<std::uint64_t> made{0};   /* blocks allocated so far (tests read it) */
};

/* Never destroyed: blocks left on it at exit stay reachable. */
inline pool_shared &pool_global() noexcept
{
    static pool_shared *g = new pool_shared;
    return *g;
}

struct pool_local {
    pool_block *head = nullptr;
    std::size_t count = 0;

    void give_batch(std::size_t n) noexcept   /* n <= count */
    {
        pool_block *first = head, *last = head;
        for (std::size_t i = 1; i < n; i++)
            last = last->link.next;
        head = last->link.next;
        count -= n;
        last->link.next = nullptr;
        first->link.count = n;
        pool_shared &g = pool_global();
        std::lock_guard<plain_lock> lk(g.mu);
        first->link.next_batch = g.batches;
        g.batches = first;
    }
    ~pool_local()   /* the thread ends: its blocks go to the shared list */
    {
        if (count)
            give_batch(count);
    }
};

/* A function's static, not an inline thread_local variable: for one of
 * those, mingw-w64's g++ emits the TLS init function as a plain symbol in
 * every file that includes this header, so a program of two such files
 * did not link ("multiple definition of `TLS init function for ...'"). */
inline pool_local &pool_tls() noexcept
{
    static thread_local pool_local l;
    return l;
}

/* noinline: the thread-local's address is taken afresh at each call. */
[[gnu::noinline]] inline void *pool_alloc() noexcept
{
    pool_local &l = pool_tls();
    if (!l.head) {
        pool_shared &g = pool_global();
        std::unique_lock<plain_lock> lk(g.mu);
        pool_block *b = g.batches;
        if (b) {
            g.batches = b->link.next_batch;
            lk.unlock();
            l.head = b;
            l.count = b->link.count;
        } else {
            lk.unlock();
            g.made.fetch_add(1, std::memory_order_relaxed);   /* a count only: orders nothing */
            return ::operator new(sizeof(pool_block), std::align_val_t(alignof(pool_block)), std::nothrow);
        }
    }
    pool_block *b = l.head;
    l.head = b->link.next;
    l.count--;
    return b;
}

[[gnu::noinline]] inline void pool_free(void *p) noexcept
{
    pool_local &l = pool_tls();
    pool_block *b = static_cast<pool_block *>(p);
    b->link.next = l.head;
    l.head = b;
    if (++l.count > pool_cap)
        l.give_batch(pool_cap / 2);
}

/* Where a callable of type F lives while its task is queued. */
enum class store_kind { in_arg, pooled, heap };

template <class F>
inline constexpr store_kind store_of =
    (std::is_trivially_copyable_v<F> && sizeof(F) <= inline_capture_size &&
     alignof(F) <= alignof(void *)) ? store_kind::in_arg
    : (sizeof(F) <= pooled_capture_size && alignof(F) <= 16) ? store_kind::pooled
    : store_kind::heap;

/* Stores f for a task and returns the word to pass as its argument; ok
 * false (and nullptr) when no memory could be had, f untouched. */
template <class F, class G>
inline void *store(G &&f, bool &ok)
{
    ok = true;
    if constexpr (store_of<F> == store_kind::in_arg) {
        void *word = nullptr;
        F tmp(std::forward<G>(f));
        std::memcpy(&word, &tmp, sizeof(F));
        return word;
    } else if constexpr (store_of<F> == store_kind::pooled) {
        void *p = pool_alloc();
        if (!p) {
            ok = false;
            return nullptr;
        }
#if WEFT_CPP_EXCEPTIONS
        try {
            return ::new (p) F(std::forward<G>(f));
        } catch (...) {
            pool_free(p);
            throw;
        }
#else
        return ::new (p) F(std::forward<G>(f));
#endif
    } else {
        F *p = new (std::nothrow) F(std::forward<G>(f));
        ok = p != nullptr;
        return p;
    }
}

/* Ends a stored callable's life and gives its memory back. */
template <class F>
inline void release(void *arg) noexcept
{
    if constexpr (store_of<F> == store_kind::pooled) {
        static_cast<F *>(arg)->~F();
        pool_free(arg);
    } else if constexpr (store_of<F> == store_kind::heap) {
        delete static_cast<F *>(arg);
    }
}

/* Runs the stored callable once (in_arg: a copy of its bytes). */
template <class F>
inline void invoke_stored(void *arg)
{
    if constexpr (store_of<F> == store_kind::in_arg) {
        alignas(F) unsigned char buf[sizeof(F)];
        std::memcpy(buf, &arg, sizeof(F));
        (*std::launder(reinterpret_cast<F *>(buf)))();
    } else {
        (*static_cast<F *>(arg))();
    }
}

} // namespace detail
} // namespace weft

template <>
struct std::is_error_code_enum<weft::errc> : std::true_type {};

#endif /* WEFT_CPP_BASE_HPP */
