/*
 * weft/cpp/subflow.hpp: subflow tasks: weft::subflow, the sub-graph a
 * graph task builds while its callable runs (tasks of every kind, nested
 * subflows, edges, joins), and where the callables of its tasks live.
 * Part of weft.hpp (included by graph.hpp).
 * See docs/reference/cpp.md and docs/reference/graph.md ("Subflows").
 *
 * A subflow task's sub-graph runs after its callable returns, with no
 * fiber waiting, so the callables of its tasks cannot live on that
 * callable's stack: each goes in a node, kept until the top subflow
 * task's next visit (every sub-graph under it has ended then: the task
 * is visited again only after its run ended) or the graph's end.
 *
 * Where the nodes live: an arena per top subflow task (sub_root), made
 * of chunks each thread fills on its own and hands to the root once,
 * when it starts the chunk. The next visit gives every chunk back to a
 * shared list at once, touching no node: a recursive subflow (a fib, a
 * tree walk) makes tens of thousands of nodes a run, and freeing them one
 * by one, cold, cost more than the rest of the visit. Only a node whose
 * callable has a destructor to run (or that is too big for a chunk, and
 * is allocated with new) is boxed with a link and listed, to be dropped
 * one by one; any other is the bare callable and what its entry needs.
 *
 * What an add costs beyond the C call is the node: the thread's last
 * cursor, if it is this visit's and has room, gives the bytes in a dozen
 * instructions (alloc); another visit's cursor, an exhausted one or none
 * takes the slow path (alloc_slow: the thread's other cursors, then a
 * chunk). A fib call that adds three tasks takes 40 bytes (a bare node
 * is its callable and, for a nested subflow, its error sink: the root is
 * found from the node's address, chunk_root), so about one add in
 * seventy starts a chunk (study 2026-11-29-issue35-cppsf).
 *
 * Synchronization (sub_root, one per top subflow task; subflow_state, one
 * per subflow task, nested ones included):
 *  - root->chunks: pushed with a CAS (release) by the thread that starts
 *    a chunk for this visit; taken whole (acquire) by the next visit or
 *    the graph's end, when no task of the last visit runs.
 *  - root->drops: the nodes to drop one by one, pushed and taken alike.
 *  - root->visit: a number no other visit of any root has (a global
 *    counter), written by the top task's entry before its function runs;
 *    read (relaxed) by threads adding nodes, whose tasks the run's start
 *    ordered after that write. A thread's cursor names the visit its
 *    chunk was started for; another visit's cursor is never used, so a
 *    chunk given back is never written through a stale cursor.
 *  - a thread's cursors (arena_local: visit, pos, end): that thread only;
 *    a chunk's free bytes are known to its cursor alone.
 *  - a chunk's root: written by the thread that starts the chunk for a
 *    visit, before it adds the chunk's first node's task; read by the
 *    entries of the chunk's nodes' tasks, which the add orders after it
 *    (a task runs after it is added). It changes only when the chunk is
 *    taken again, after the visit's release (the shared list's lock).
 *  - the shared chunk list (batches: each root's list as it gave it
 *    back, so that a release touches one chunk): under its lock.
 *  - build_err: as the graph's, per visit; read by the subflow task's
 *    own entry once its function has returned.
 *  - root->thrown/root->ex: the first exception of the subflow task's
 *    function or of any task under it, nested ones included, wins the
 *    thrown exchange and writes ex; reset by the top subflow task's entry
 *    before its function runs (no task under it runs then); read by
 *    graph::exception() after the run, which orders the write before it.
 */
#ifndef WEFT_CPP_SUBFLOW_HPP
#define WEFT_CPP_SUBFLOW_HPP

#include "task.hpp"

namespace weft {

namespace detail {

/* The link of a node dropped one by one (sub_root::drops): a node whose
 * callable has a destructor to run, or that is too big for a chunk.
 * Other nodes have none: they are the bare node, in the arena. */
struct sub_link {
    sub_link *next = nullptr;
    void (*drop)(sub_link *) noexcept = nullptr;
};

/* ---- the arena ---- */

inline constexpr std::size_t arena_chunk_size = 1024;   /* a fib call takes 40 bytes */

struct sub_root;

/* Aligned to its size, so that a node's address, masked, finds its chunk
 * and the chunk the root it was started for (chunk_root): a bare node
 * keeps no pointer to its root. */
struct alignas(arena_chunk_size) arena_chunk {
    alignas(16) unsigned char data[arena_chunk_size - 24];
    sub_root *root = nullptr;           /* the root whose visit started it */
    arena_chunk *next = nullptr;        /* in a root's list, or a batch of the shared one */
    arena_chunk *next_batch = nullptr;  /* a batch's first chunk: the next batch */
};
static_assert(sizeof(arena_chunk) == arena_chunk_size, "arena chunk size");

/* The root of the visit whose chunk holds p (a bare node's address). */
inline sub_root *chunk_root(const void *p) noexcept
{
    auto a = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t(arena_chunk_size - 1);
    return reinterpret_cast<const arena_chunk *>(a)->root;
}

struct arena_shared {
    plain_lock mu;
    arena_chunk *batches = nullptr;            /* under mu: lists of chunks, a root's each */
    std::atomic<std::uint64_t> made{0};        /* chunks allocated so far (tests read it) */
    std::atomic<std::uint64_t> visits{0};      /* the last visit number handed out */
};

/* Never destroyed: chunks left on it at exit stay reachable. */
inline arena_shared &arena_global() noexcept
{
    static arena_shared *g = new arena_shared;
    return *g;
}

/* A thread's cursors: where it fills the chunk it started for each of
 * the last few visits it added to (two top subflows running side by side
 * on one thread each keep theirs), the one it used last first. pos and
 * end bound the chunk's free bytes; the chunk itself keeps no count. */
struct arena_cursor {
    std::uint64_t visit = 0;   /* 0: none */
    unsigned char *pos = nullptr;
    unsigned char *end = nullptr;
};
inline constexpr int arena_cursors = 4;
struct arena_local {
    arena_cursor c[arena_cursors];
};

/* As pool_tls: a function's static thread_local (mingw-w64). */
inline arena_local &arena_tls() noexcept
{
    static thread_local arena_local l;
    return l;
}

/* What the top subflow task keeps for everything under it: the
 * exceptions, and the nodes of the visit. */
struct sub_root {
    std::atomic<bool> thrown{false};
    std::exception_ptr ex;
    std::atomic<arena_chunk *> chunks{nullptr};
    std::atomic<sub_link *> drops{nullptr};
    std::atomic<std::uint64_t> visit{0};

    sub_root() noexcept { new_visit(); }
    sub_root(const sub_root &) = delete;
    sub_root &operator=(const sub_root &) = delete;
    ~sub_root() { release(); }

    void keep_current() noexcept
    {
#if WEFT_CPP_EXCEPTIONS
        if (!thrown.exchange(true, std::memory_order_acq_rel))   /* the first wins; the run's end orders ex for exception() */
            ex = std::current_exception();
#endif
    }
    void new_visit() noexcept
    {
        visit.store(arena_global().visits.fetch_add(1, std::memory_order_relaxed) + 1,
                    std::memory_order_relaxed);   /* relaxed: the run's start orders it before the adds (top of file) */
    }
    /* The last visit has ended: drop the listed nodes, give the chunks
     * back, and number the next visit. */
    void release() noexcept
    {
        sub_link *n = drops.exchange(nullptr, std::memory_order_acquire);   /* pairs with release in keep_drop() */
        while (n) {
            sub_link *next = n->next;
            n->drop(n);
            n = next;
        }
        arena_chunk *c = chunks.exchange(nullptr, std::memory_order_acquire);   /* pairs with release in alloc_slow() */
        if (c) {   /* the list goes whole, a batch: no chunk is touched but its first */
            arena_shared &g = arena_global();
            std::lock_guard<plain_lock> lk(g.mu);
            c->next_batch = g.batches;
            g.batches = c;
        }
        new_visit();
    }
    void keep_drop(sub_link *n) noexcept
    {
        n->next = drops.load(std::memory_order_relaxed);   /* a guess; the CAS checks it */
        while (!drops.compare_exchange_weak(n->next, n, std::memory_order_release, std::memory_order_relaxed)) {
        }
    }
    /* size bytes (a multiple of 8, at most a chunk's data) for this
     * visit; nullptr: out of memory. The bump from the thread's last
     * cursor, when it is this visit's and has room, is the whole of the
     * usual call. noinline: the thread-local's address is taken afresh
     * at each call (a caller's fiber may wait in a join between two adds
     * and go on on another thread). */
    [[gnu::noinline]] void *alloc(std::size_t size) noexcept
    {
        arena_cursor &c = arena_tls().c[0];
        if (c.visit == visit.load(std::memory_order_relaxed) &&   /* see the top of the file */
            size <= static_cast<std::size_t>(c.end - c.pos)) {
            void *p = c.pos;
            c.pos += size;
            return p;
        }
        return alloc_slow(size);
    }

private:
    /* alloc's other cases: this visit's cursor further down (moved to
     * the front), or a new chunk, started in the front cursor (the last
     * one's visit dropped). */
    [[gnu::noinline]] void *alloc_slow(std::size_t size) noexcept
    {
        std::uint64_t v = visit.load(std::memory_order_relaxed);
        arena_cursor *l = arena_tls().c;
        int i = 0;
        while (i < arena_cursors - 1 && l[i].visit != v)
            i++;
        arena_cursor cur = l[i];   /* this visit's, or the last one, to be dropped */
        for (; i > 0; i--)
            l[i] = l[i - 1];
        if (cur.visit != v || size > static_cast<std::size_t>(cur.end - cur.pos)) {
            arena_chunk *c = take_chunk();
            if (!c) {
                l[0] = cur.visit == v ? cur : arena_cursor{};
                return nullptr;
            }
            c->next = chunks.load(std::memory_order_relaxed);   /* a guess; the CAS checks it */
            while (!chunks.compare_exchange_weak(c->next, c, std::memory_order_release, std::memory_order_relaxed)) {
            }
            c->root = this;   /* read by the entries of its nodes' tasks, which the adds order after it */
            cur = {v, c->data, c->data + sizeof c->data};
        }
        void *p = cur.pos;
        cur.pos += size;
        l[0] = cur;
        return p;
    }
    static arena_chunk *take_chunk() noexcept
    {
        arena_shared &g = arena_global();
        {
            std::lock_guard<plain_lock> lk(g.mu);
            if (arena_chunk *c = g.batches) {
                if (c->next)
                    c->next->next_batch = c->next_batch;   /* the batch's rest stays first */
                g.batches = c->next ? c->next : c->next_batch;
                return c;
            }
        }
        g.made.fetch_add(1, std::memory_order_relaxed);   /* a count only: orders nothing */
        return new (std::nothrow) arena_chunk;
    }
};

/* One per subflow task and visit: the first failed build call. */
struct subflow_state : error_sink {
    subflow_state() noexcept = default;
    subflow_state(const subflow_state &) = delete;
    subflow_state &operator=(const subflow_state &) = delete;
    void clear() noexcept { build_err.store(0, std::memory_order_relaxed); }
};

/* Where a node (a task's callable and what its entry needs) lives: bare
 * in the visit's arena when it has no destructor to run and fits a
 * chunk, so that nothing but the chunk ever refers to it (its root is
 * the chunk's); else in a box with a link and the root, listed to be
 * dropped one by one: in the arena (a destructor to run) or on the heap
 * (too big for a chunk). The task's argument is the node, or its box.
 *
 * Bytes a T takes in the arena: whole words (the cursor stays 8-aligned),
 * and a word more to align a T of 16 (node_place). */
template <class T>
inline constexpr std::size_t arena_size = ((sizeof(T) + 7) & ~std::size_t(7)) + (alignof(T) > 8 ? 8 : 0);
template <class T>
inline constexpr bool fits_chunk = arena_size<T> <= sizeof(arena_chunk::data) && alignof(T) <= 16;

template <class T>
void *node_place(sub_root *r) noexcept
{
    void *p = r->alloc(arena_size<T>);
    if constexpr (alignof(T) > 8) {
        if (p)
            p = reinterpret_cast<void *>((reinterpret_cast<std::uintptr_t>(p) + 15) & ~std::uintptr_t(15));
    }
    return p;
}
template <class N>
inline constexpr bool node_bare = std::is_trivially_destructible_v<N> && fits_chunk<N>;

template <class N>
struct node_box final : sub_link {
    template <class G>
    explicit node_box(G &&g) : n(std::forward<G>(g)) {}
    sub_root *root = nullptr;
    N n;
};

/* A task's argument: its node, and the root of its visit. */
template <class N>
N *node_at(void *arg) noexcept
{
    if constexpr (node_bare<N>)
        return static_cast<N *>(arg);
    else
        return &static_cast<node_box<N> *>(arg)->n;
}
template <class N>
sub_root *root_at(void *arg) noexcept
{
    if constexpr (node_bare<N>)
        return chunk_root(arg);
    else
        return static_cast<node_box<N> *>(arg)->root;
}

template <class N>
void node_drop(sub_link *l) noexcept
{
    auto *b = static_cast<node_box<N> *>(l);
    if constexpr (fits_chunk<node_box<N>>)
        b->~node_box<N>();
    else
        delete b;
}

/* A new node: the task's argument (nullptr: out of memory), and its
 * box's link if it has one (listed once its task is added, dropped at
 * once if that fails). */
struct made_node {
    void *arg;
    sub_link *link;
};

template <class N, class G>
made_node node_new(sub_root *r, G &&f)
{
    if constexpr (node_bare<N>) {
        void *p = node_place<N>(r);
        if (!p)
            return {nullptr, nullptr};
        ::new (p) N(std::forward<G>(f));   /* a throw leaves the bytes to the arena */
        return {p, nullptr};
    } else {
        node_box<N> *b;
        if constexpr (fits_chunk<node_box<N>>) {
            void *p = node_place<node_box<N>>(r);
            if (!p)
                return {nullptr, nullptr};
            b = ::new (p) node_box<N>(std::forward<G>(f));
        } else {
            b = new (std::nothrow) node_box<N>(std::forward<G>(f));
            if (!b)
                return {nullptr, nullptr};
        }
        b->drop = &node_drop<N>;
        b->root = r;
        return {b, b};
    }
}

template <class F>
struct fn_node {
    template <class G>
    explicit fn_node(G &&g) : f(std::forward<G>(g)) {}
    F f;
};

/* A subflow's function runs on a weft::subflow over sf and st; what it
 * throws fails the task (its sub-graph then does not run), and so does a
 * build call of it that failed. */
template <class F>
void run_subflow(F &f, weft_subflow *sf, subflow_state &st, sub_root *root) noexcept;

template <class F>
struct nested_node {
    template <class G>
    explicit nested_node(G &&g) : f(std::forward<G>(g)) {}
    F f;
    subflow_state st;
};

template <class F>
void sub_task_entry(void *arg) noexcept
{
    auto *n = node_at<fn_node<F>>(arg);
#if WEFT_CPP_EXCEPTIONS
    try {
        n->f();
    } catch (...) {
        root_at<fn_node<F>>(arg)->keep_current();
        (void)weft_task_fail(exception_code);
    }
#else
    n->f();
#endif
}

template <class F>
int sub_cond_entry(void *arg) noexcept
{
    auto *n = node_at<fn_node<F>>(arg);
#if WEFT_CPP_EXCEPTIONS
    try {
        return n->f();
    } catch (...) {
        root_at<fn_node<F>>(arg)->keep_current();
        (void)weft_task_fail(exception_code);
        return -1;
    }
#else
    return n->f();
#endif
}

template <class F>
std::size_t sub_multi_entry(void *arg, int *picks, std::size_t cap) noexcept
{
    auto *n = node_at<fn_node<F>>(arg);
    std::exception_ptr ex;
    std::size_t k = multi_entry_of(n->f, picks, cap, ex);
#if WEFT_CPP_EXCEPTIONS
    if (ex) {
        try {
            std::rethrow_exception(ex);
        } catch (...) {
            root_at<fn_node<F>>(arg)->keep_current();
        }
    }
#endif
    return k;
}

template <class F>
void sub_nested_entry(weft_subflow *sf, void *arg) noexcept
{
    auto *n = node_at<nested_node<F>>(arg);
    n->st.clear();   /* a loop in the sub-graph above may visit it again */
    run_subflow(n->f, sf, n->st, root_at<nested_node<F>>(arg));
}

} // namespace detail

/** The sub-graph a subflow task builds while its callable runs (the
 * callable takes a weft::subflow &): tasks added with emplace (the same
 * kinds as graph::emplace, nested subflows included) and edges between
 * them with task::precede/succeed. It runs once the callable returns,
 * and the task ends when it has; join() runs what was added so far and
 * waits for it. The callables are kept until the task's next visit (or
 * the graph's end). A build call that fails gives an empty task and
 * fails the subflow task (its sub-graph does not run) with that code.
 * Callable from: the subflow task's callable, and while it runs, any
 * thread it hands the subflow to. */
class subflow {
public:
    subflow(const subflow &) = delete;
    subflow &operator=(const subflow &) = delete;

    weft_subflow *get() const noexcept { return sf_; }

    template <class F>
    task emplace(F &&f)
    {
        using D = std::decay_t<F>;
        constexpr detail::task_kind k = detail::kind_of<D>();
        if constexpr (k == detail::task_kind::sub) {
            auto m = detail::node_new<detail::nested_node<D>>(root_, std::forward<F>(f));
            if (!m.arg)
                return fail(WEFT_ENOMEM);
            return keep(m.link, weft_subflow_add_subflow(sf_, &detail::sub_nested_entry<D>, m.arg));
        } else {
            auto m = detail::node_new<detail::fn_node<D>>(root_, std::forward<F>(f));
            if (!m.arg)
                return fail(WEFT_ENOMEM);
            weft_task *t;
            if constexpr (k == detail::task_kind::plain)
                t = weft_subflow_add(sf_, &detail::sub_task_entry<D>, m.arg);
            else if constexpr (k == detail::task_kind::cond)
                t = weft_subflow_add_cond(sf_, &detail::sub_cond_entry<D>, m.arg);
            else
                t = weft_subflow_add_multi_cond(sf_, &detail::sub_multi_entry<D>, m.arg);
            return keep(m.link, t);
        }
    }
    /** Several at once: auto [a, b] = sf.emplace(fa, fb). */
    template <class F, class G, class... H>
    auto emplace(F &&f, G &&g, H &&...h)
    {
        return std::tuple{emplace(std::forward<F>(f)), emplace(std::forward<G>(g)),
                          emplace(std::forward<H>(h))...};
    }
    /** An empty task, a join point. */
    task placeholder() noexcept
    {
        weft_task *t = weft_subflow_add(sf_, nullptr, nullptr);
        if (!t)
            st_->note(WEFT_EBUSY);
        return task(t, st_);
    }
    /** weft_subflow_join: runs what was added since the last join and
     * waits for it (the fiber waits, its worker goes on); its result as
     * graph::wait, and a failure fails the subflow task too. Refused
     * with the build error if a build call failed. Callable from: the
     * subflow task's callable only (else EINVAL). */
    [[nodiscard]] std::error_code join() noexcept
    {
        int rc = st_->build_err.load(std::memory_order_relaxed);
        return to_error(rc ? rc : weft_subflow_join(sf_));
    }
    /** The first failed build call's code in this visit (0: none). */
    std::error_code build_error() const noexcept { return to_error(st_->build_err.load(std::memory_order_relaxed)); }

private:
    template <class F>
    friend void detail::run_subflow(F &, weft_subflow *, detail::subflow_state &, detail::sub_root *) noexcept;
    subflow(weft_subflow *sf, detail::subflow_state *st, detail::sub_root *root) noexcept
        : sf_(sf), st_(st), root_(root)
    {
    }

    task fail(int rc) noexcept
    {
        st_->note(rc);
        return {};
    }
    /* A NULL task: sf's sub-graph runs already (or memory ran out; the
     * C call does not say which: EBUSY is kept). */
    task keep(detail::sub_link *link, weft_task *t) noexcept
    {
        if (!t) {
            if (link)
                link->drop(link);   /* arena bytes stay until the next visit */
            return fail(WEFT_EBUSY);
        }
        if (link)
            root_->keep_drop(link);
        return task(t, st_);
    }

    weft_subflow *sf_;
    detail::subflow_state *st_;
    detail::sub_root *root_;   /* the top subflow task's: the arena, the exceptions */
};

namespace detail {

template <class F>
void run_subflow(F &f, weft_subflow *sf, subflow_state &st, sub_root *root) noexcept
{
    subflow s(sf, &st, root);
#if WEFT_CPP_EXCEPTIONS
    try {
        f(s);
    } catch (...) {
        root->keep_current();
        (void)weft_task_fail(exception_code);
        return;
    }
#else
    f(s);
#endif
    if (int rc = st.build_err.load(std::memory_order_relaxed))
        (void)weft_task_fail(rc);
}

/* A graph's subflow task: the callable, its visit's state, and the
 * exceptions under it (the root that nested subflows share). */
template <class F>
struct sf_holder final : holder_base {
    template <class G>
    explicit sf_holder(G &&g) : f(std::forward<G>(g)) {}
    F f;
    sub_root root;
    subflow_state st;
    std::exception_ptr thrown() const override { return root.ex; }
};

template <class F>
void graph_subflow_entry(weft_subflow *sf, void *arg) noexcept
{
    auto *h = static_cast<sf_holder<F> *>(arg);
    h->root.release();   /* the last visit's nodes, nested ones included */
    h->st.clear();
    h->root.thrown.store(false, std::memory_order_relaxed);   /* no task under it runs now */
    h->root.ex = nullptr;
    run_subflow(h->f, sf, h->st, &h->root);
}

} // namespace detail
} // namespace weft

#endif /* WEFT_CPP_SUBFLOW_HPP */
