/*
 * weft/cpp/sync.hpp: the fiber-aware primitives as C++ objects: event,
 * mutex (Lockable: std::lock_guard, std::unique_lock, std::scoped_lock),
 * condition variable, wait group, semaphore, and channel<T> of trivially
 * copyable T. A task that waits suspends its fiber; a bound thread runs
 * tasks meanwhile; any other thread sleeps. Part of weft.hpp.
 * See docs/reference/cpp.md and docs/reference/sync.md.
 */
#ifndef WEFT_CPP_SYNC_HPP
#define WEFT_CPP_SYNC_HPP

#include "base.hpp"

#include <mutex>

namespace weft {

namespace detail {
/* The primitives are embedded (waiters hold their address): neither
 * copyable nor movable. */
struct pinned_object {
    pinned_object() = default;
    pinned_object(const pinned_object &) = delete;
    pinned_object &operator=(const pinned_object &) = delete;
};
} // namespace detail

/** weft_event: manual reset (stays set until cleared) or auto reset (one
 * wait consumes each signal). */
class event : detail::pinned_object {
public:
    explicit event(bool manual_reset = false, bool signalled = false) noexcept
    {
        weft_event_init(&e_, manual_reset, signalled);
    }
    /** Aborts with a message if anyone still waits (weft_event_destroy). */
    ~event() { weft_event_destroy(&e_); }
    void signal() noexcept { weft_event_signal(&e_); }
    void clear() noexcept { weft_event_clear(&e_); }
    bool signalled() noexcept { return weft_event_signalled(&e_); }
    [[nodiscard]] std::error_code wait() noexcept { return to_error(weft_event_wait(&e_)); }
    template <class Rep, class Period>
    [[nodiscard]] std::error_code wait_for(std::chrono::duration<Rep, Period> d) noexcept
    {
        return to_error(weft_event_wait_for(&e_, detail::to_ns(d)));
    }
    weft_event *native_handle() noexcept { return &e_; }

private:
    weft_event e_;
};

/** weft_mutex, not recursive. Meets Lockable, so std::lock_guard,
 * std::unique_lock and std::scoped_lock take it. */
class mutex : detail::pinned_object {
public:
    mutex() noexcept { weft_mutex_init(&m_); }
    ~mutex() { weft_mutex_destroy(&m_); }
    void lock() noexcept { weft_mutex_lock(&m_); }
    bool try_lock() noexcept { return weft_mutex_try_lock(&m_); }
    void unlock() noexcept { weft_mutex_unlock(&m_); }
    weft_mutex *native_handle() noexcept { return &m_; }

private:
    weft_mutex m_;
};

/** weft_cond, used with a weft::mutex held by a std::unique_lock. No
 * spurious wake-ups, but wait on a predicate (the second form). */
class condition_variable : detail::pinned_object {
public:
    condition_variable() noexcept { weft_cond_init(&c_); }
    ~condition_variable() { weft_cond_destroy(&c_); }
    void notify_one() noexcept { weft_cond_signal(&c_); }
    void notify_all() noexcept { weft_cond_broadcast(&c_); }
    /** weft_cond_wait: OK, or ENOMEM (the lock released and taken again). */
    [[nodiscard]] std::error_code wait(std::unique_lock<weft::mutex> &lk) noexcept
    {
        return to_error(weft_cond_wait(&c_, lk.mutex()->native_handle()));
    }
    /** Waits until pred() holds; stops at the first error. */
    template <class P>
    [[nodiscard]] std::error_code wait(std::unique_lock<weft::mutex> &lk, P pred)
    {
        while (!pred()) {
            if (std::error_code ec = wait(lk))
                return ec;
        }
        return {};
    }
    /** weft_cond_wait_for: OK, ETIMEDOUT or ENOMEM, the lock held again. */
    template <class Rep, class Period>
    [[nodiscard]] std::error_code wait_for(std::unique_lock<weft::mutex> &lk,
                                           std::chrono::duration<Rep, Period> d) noexcept
    {
        return to_error(weft_cond_wait_for(&c_, lk.mutex()->native_handle(), detail::to_ns(d)));
    }
    weft_cond *native_handle() noexcept { return &c_; }

private:
    weft_cond c_;
};

/** weft_waitgroup: add(n) before n pieces of work, done() as each ends,
 * wait() for the total to reach zero. */
class wait_group : detail::pinned_object {
public:
    explicit wait_group(std::int64_t count = 0) noexcept { weft_waitgroup_init(&wg_, count); }
    ~wait_group() { weft_waitgroup_destroy(&wg_); }
    void add(std::int64_t delta = 1) noexcept { weft_waitgroup_add(&wg_, delta); }
    void done() noexcept { weft_waitgroup_done(&wg_); }
    [[nodiscard]] std::error_code wait() noexcept { return to_error(weft_waitgroup_wait(&wg_)); }
    template <class Rep, class Period>
    [[nodiscard]] std::error_code wait_for(std::chrono::duration<Rep, Period> d) noexcept
    {
        return to_error(weft_waitgroup_wait_for(&wg_, detail::to_ns(d)));
    }
    weft_waitgroup *native_handle() noexcept { return &wg_; }

private:
    weft_waitgroup wg_;
};

/** weft_sem: a counting semaphore with FIFO service; also a graph task's
 * limit (task::semaphore). */
class semaphore : detail::pinned_object {
public:
    explicit semaphore(std::int64_t count) noexcept { weft_sem_init(&s_, count); }
    ~semaphore() { weft_sem_destroy(&s_); }
    [[nodiscard]] std::error_code acquire() noexcept { return to_error(weft_sem_acquire(&s_)); }
    bool try_acquire() noexcept { return weft_sem_try_acquire(&s_); }
    template <class Rep, class Period>
    [[nodiscard]] std::error_code acquire_for(std::chrono::duration<Rep, Period> d) noexcept
    {
        return to_error(weft_sem_acquire_for(&s_, detail::to_ns(d)));
    }
    void release() noexcept { weft_sem_release(&s_); }
    weft_sem *native_handle() noexcept { return &s_; }

private:
    weft_sem s_;
};

/** weft_chan of T: a bounded FIFO (capacity 0: a rendezvous) of values
 * copied in and out. T must be trivially copyable: the channel copies its
 * bytes. Move-only; a construction that fails (ENOMEM) leaves an empty
 * channel (operator bool false, error() says why), on which every call
 * returns EINVAL. Destroying it while anyone is blocked on it aborts. */
template <class T>
class channel {
    static_assert(std::is_trivially_copyable_v<T>, "weft::channel<T> copies bytes: T must be trivially copyable");

public:
    explicit channel(std::size_t capacity) noexcept : err_(weft_chan_create(&ch_, sizeof(T), capacity)) {}
    channel(const channel &) = delete;
    channel &operator=(const channel &) = delete;
    channel(channel &&o) noexcept : ch_(o.ch_), err_(o.err_) { o.ch_ = nullptr; }
    channel &operator=(channel &&o) noexcept
    {
        if (this != &o) {
            weft_chan_destroy(ch_);
            ch_ = o.ch_;
            err_ = o.err_;
            o.ch_ = nullptr;
        }
        return *this;
    }
    ~channel() { weft_chan_destroy(ch_); }

    explicit operator bool() const noexcept { return ch_ != nullptr; }
    std::error_code error() const noexcept { return to_error(err_); }

    [[nodiscard]] std::error_code send(const T &v) noexcept { return to_error(weft_chan_send(ch_, &v)); }
    [[nodiscard]] std::error_code try_send(const T &v) noexcept { return to_error(weft_chan_try_send(ch_, &v)); }
    template <class Rep, class Period>
    [[nodiscard]] std::error_code send_for(const T &v, std::chrono::duration<Rep, Period> d) noexcept
    {
        return to_error(weft_chan_send_for(ch_, &v, detail::to_ns(d)));
    }
    [[nodiscard]] std::error_code recv(T &out) noexcept { return to_error(weft_chan_recv(ch_, &out)); }
    [[nodiscard]] std::error_code try_recv(T &out) noexcept { return to_error(weft_chan_try_recv(ch_, &out)); }
    template <class Rep, class Period>
    [[nodiscard]] std::error_code recv_for(T &out, std::chrono::duration<Rep, Period> d) noexcept
    {
        return to_error(weft_chan_recv_for(ch_, &out, detail::to_ns(d)));
    }
    /** weft_chan_close: sends fail with ECLOSED, receives drain. */
    void close() noexcept { weft_chan_close(ch_); }
    weft_chan *native_handle() noexcept { return ch_; }

private:
    weft_chan *ch_ = nullptr;
    int err_;
};

} // namespace weft

#endif /* WEFT_CPP_SYNC_HPP */
