/* Channels on the scheduler: test 21 of docs/reliability.md (4 producers x 4
 * consumers, exactly once, FIFO per producer, close), try_ forms,
 * timeouts of 0, 1 us and 1 ms, rendezvous hand-off, close semantics,
 * close racing senders and receivers, try_ forms against blocked peers,
 * receive timeouts racing senders, and run-next bounded by lifo_budget.
 * At 1, 2 and 4 workers with plain threads mixed in. Timing assertions
 * are lower bounds only. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "sync_common.h"

/* ---- 21. channels: 4 producers x 4 consumers, exactly once, FIFO ------------ */

typedef struct msg21 { uint32_t producer, seq; } msg21;

#define PROD21 4
#define CONS21 4
static weft_chan *ch21;
static unsigned per21;
static _Atomic unsigned char *seen21;     /* [producer * per21 + seq] */
static weft_waitgroup producers21;
static atomic_long closed_seen21;

static bool t21_thread(unsigned id) { return id == 1 || id == 6; }

static void t21_body(unsigned id)
{
    if (id < PROD21) {
        for (uint32_t i = 0; i < per21; i++) {
            msg21 m = { id, i };
            int rc;
            if (i % 5 == 1) {
                /* try_ succeeds against a blocked peer; if every peer
                 * is trying too (rendezvous), fall back to blocking. */
                for (int tries = 0; (rc = weft_chan_try_send(ch21, &m)) == WEFT_EAGAIN; tries++) {
                    if (tries == 20) {
                        rc = weft_chan_send(ch21, &m);
                        break;
                    }
                    weft_yield();
                }
            } else if (i % 5 == 2) {
                while ((rc = weft_chan_send_for(ch21, &m, 1000)) == WEFT_ETIMEDOUT)
                    ;
            } else {
                rc = weft_chan_send(ch21, &m);
            }
            WT_ASSERT_EQ(rc, WEFT_OK);
        }
        weft_waitgroup_done(&producers21);
        return;
    }
    uint32_t last[PROD21];
    for (int p = 0; p < PROD21; p++)
        last[p] = UINT32_MAX;
    for (unsigned n = 0;; n++) {
        msg21 m;
        int rc;
        if (n % 4 == 1) {
            for (int tries = 0; (rc = weft_chan_try_recv(ch21, &m)) == WEFT_EAGAIN; tries++) {
                if (tries == 20) {
                    rc = weft_chan_recv(ch21, &m);
                    break;
                }
                weft_yield();
            }
        } else if (n % 4 == 2) {
            for (int tries = 0; (rc = weft_chan_recv_for(ch21, &m, timeouts[n % 3])) == WEFT_ETIMEDOUT; tries++) {
                if (tries == 20) {
                    rc = weft_chan_recv(ch21, &m);
                    break;
                }
                weft_yield();   /* a 0 timeout only polls */
            }
        } else {
            rc = weft_chan_recv(ch21, &m);
        }
        if (rc == WEFT_ECLOSED)
            break;
        WT_ASSERT_EQ(rc, WEFT_OK);
        WT_ASSERT(m.producer < PROD21 && m.seq < per21, "garbage message %u/%u", m.producer, m.seq);
        WT_ASSERT(last[m.producer] == UINT32_MAX || m.seq > last[m.producer],
                  "producer %u: seq %u after %u (FIFO broken)", m.producer, m.seq, last[m.producer]);
        last[m.producer] = m.seq;
        unsigned char before = atomic_fetch_add(&seen21[(size_t)m.producer * per21 + m.seq], 1);
        WT_ASSERT_EQ(before, 0);
    }
    atomic_fetch_add(&closed_seen21, 1);
}

/* Closes the channel once every producer is done: on its own thread so
 * that the consumers drain first and see WEFT_ECLOSED after. */
static void *closer21(void *arg)
{
    WT_ASSERT_EQ(weft_waitgroup_wait(&producers21), WEFT_OK);
    weft_chan_close(ch21);
    return NULL;
}

WT_TEST(sync, t21_channel_4x4_exactly_once_fifo, .timeout = 900)
{
    static const size_t caps[] = { 0, 1, 64 };
    uint64_t total = wt_scaled(1000000, 20000);
    WT_FOR_WORKERS(w, 1, 2, 4) {
        for (size_t c = 0; c < 3; c++) {
            per21 = (unsigned)(total / PROD21 / (c == 2 ? 1 : 4));   /* the unbuffered runs are slower */
            seen21 = calloc((size_t)PROD21 * per21, 1);
            WT_ASSERT_EQ(weft_chan_create(&ch21, sizeof(msg21), caps[c]), WEFT_OK);
            weft_waitgroup_init(&producers21, PROD21);
            atomic_store(&closed_seen21, 0);
            uint64_t t0 = wt_now_ns();
            pthread_t closer;
            pthread_create(&closer, NULL, closer21, NULL);
            run_mixed(w, PROD21 + CONS21, t21_thread, t21_body);
            pthread_join(closer, NULL);
            WT_ASSERT_EQ(atomic_load(&closed_seen21), CONS21);
            for (size_t i = 0; i < (size_t)PROD21 * per21; i++)
                if (seen21[i] != 1)
                    WT_FAIL("message %zu/%zu seen %d times", i / per21, i % per21, seen21[i]);
            msg21 m;
            WT_ASSERT_EQ(weft_chan_recv(ch21, &m), WEFT_ECLOSED);
            WT_ASSERT_EQ(weft_chan_send(ch21, &m), WEFT_ECLOSED);
            weft_chan_destroy(ch21);
            weft_waitgroup_destroy(&producers21);
            free((void *)seen21);
            fprintf(stderr, "t21: %u workers, capacity %zu, %u messages: 0 lost, 0 duplicated, "
                    "FIFO per producer (%.2f s)\n", w, caps[c], PROD21 * per21,
                    (double)(wt_now_ns() - t0) * 1e-9);
        }
    }
}

/* ---- channel semantics ------------------------------------------------------ */

WT_TEST(sync, chan_try_forms_and_bad_arguments)
{
    weft_chan *ch;
    int v = 7, out = 0;
    WT_ASSERT_EQ(weft_chan_create(NULL, 4, 1), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_chan_create(&ch, SIZE_MAX / 2, 4), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_chan_create(&ch, sizeof(int), 2), WEFT_OK);
    WT_ASSERT_EQ(weft_chan_send(NULL, &v), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_chan_send(ch, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_chan_recv(ch, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_chan_try_recv(ch, &out), WEFT_EAGAIN);
    for (int i = 0; i < 2; i++) {
        v = 10 + i;
        WT_ASSERT_EQ(weft_chan_try_send(ch, &v), WEFT_OK);
    }
    WT_ASSERT_EQ(weft_chan_try_send(ch, &v), WEFT_EAGAIN);   /* full */
    WT_ASSERT_EQ(weft_chan_send_for(ch, &v, 0), WEFT_ETIMEDOUT);
    WT_ASSERT_EQ(weft_chan_try_recv(ch, &out), WEFT_OK);
    WT_ASSERT_EQ(out, 10);
    WT_ASSERT_EQ(weft_chan_recv_for(ch, &out, 0), WEFT_OK);
    WT_ASSERT_EQ(out, 11);
    WT_ASSERT_EQ(weft_chan_try_recv(ch, &out), WEFT_EAGAIN);   /* empty */
    weft_chan_destroy(ch);

    /* Rendezvous: try_ succeeds only against a blocked peer. */
    WT_ASSERT_EQ(weft_chan_create(&ch, sizeof(int), 0), WEFT_OK);
    WT_ASSERT_EQ(weft_chan_try_send(ch, &v), WEFT_EAGAIN);
    WT_ASSERT_EQ(weft_chan_try_recv(ch, &out), WEFT_EAGAIN);
    weft_chan_destroy(ch);

    /* Elements of size 0 carry only the event. */
    WT_ASSERT_EQ(weft_chan_create(&ch, 0, 1), WEFT_OK);
    WT_ASSERT_EQ(weft_chan_try_send(ch, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_chan_try_recv(ch, NULL), WEFT_OK);
    weft_chan_destroy(ch);
}

/* Timed forms on an empty (or, for send, rendezvous) channel: each ends
 * in WEFT_ETIMEDOUT no sooner than asked. */
static void check_chan_timeouts(void *arg)
{
    weft_chan *ch;
    int out;
    for (size_t cap = 0; cap <= 1; cap++) {
        WT_ASSERT_EQ(weft_chan_create(&ch, sizeof(int), cap), WEFT_OK);
        for (int i = 0; i < 3; i++) {
            uint64_t t0 = wt_now_ns();
            WT_ASSERT_EQ(weft_chan_recv_for(ch, &out, timeouts[i]), WEFT_ETIMEDOUT);
            WT_ASSERT(wt_now_ns() - t0 >= timeouts[i]);
            int v = 1;
            if (cap == 0) {
                t0 = wt_now_ns();
                WT_ASSERT_EQ(weft_chan_send_for(ch, &v, timeouts[i]), WEFT_ETIMEDOUT);
                WT_ASSERT(wt_now_ns() - t0 >= timeouts[i]);
            }
        }
        int v = 3;
        if (cap) {
            WT_ASSERT_EQ(weft_chan_send_for(ch, &v, 1000), WEFT_OK);
            WT_ASSERT_EQ(weft_chan_recv_for(ch, &out, 1000), WEFT_OK);
            WT_ASSERT_EQ(out, 3);
        }
        weft_chan_destroy(ch);
    }
}

WT_TEST(sync, chan_timeouts_0_1us_1ms, .timeout = 120)
{
    check_chan_timeouts(NULL);                       /* a plain thread: futex */
    WT_FOR_WORKERS(w, 1, 2, 4) {           /* tasks: the worker's timers */
        cur = make_sched(w);
        for (int i = 0; i < 4; i++)
            WT_ASSERT_EQ(weft_spawn(cur, check_chan_timeouts, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* Rendezvous: the sender returns only after a receiver took the element,
 * from fibers and threads, and values pass intact. */
static weft_chan *rv;
static atomic_int receiving;
static void rv_sender(void *arg)
{
    for (int i = 0; i < 1000; i++) {
        int v = i;
        WT_ASSERT_EQ(weft_chan_send(rv, &v), WEFT_OK);
        WT_ASSERT(atomic_load(&receiving) > i, "send %d returned before its receive began", i);
    }
}
static void *rv_receiver(void *arg)
{
    for (int i = 0; i < 1000; i++) {
        if (i % 10 == 0) {
            struct timespec ts = { 0, 20000 };
            nanosleep(&ts, NULL);   /* make the sender wait for us */
        }
        atomic_fetch_add(&receiving, 1);
        int v = -1;
        WT_ASSERT_EQ(weft_chan_recv(rv, &v), WEFT_OK);
        WT_ASSERT_EQ(v, i);
    }
    return NULL;
}

WT_TEST(sync, chan_rendezvous_hand_off, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        cur = make_sched(w);
        WT_ASSERT_EQ(weft_chan_create(&rv, sizeof(int), 0), WEFT_OK);
        atomic_store(&receiving, 0);
        pthread_t t;
        WT_ASSERT_EQ(weft_spawn(cur, rv_sender, NULL), WEFT_OK);
        pthread_create(&t, NULL, rv_receiver, NULL);
        pthread_join(t, NULL);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        weft_chan_destroy(rv);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* Close: blocked receivers and senders fail with ECLOSED; buffered
 * elements still drain; later sends fail; closing twice is harmless. */
static weft_chan *cl;
static atomic_int cl_closed_recv, cl_closed_send;
static void cl_recv(void *arg)
{
    int v;
    if (weft_chan_recv(cl, &v) == WEFT_ECLOSED)
        atomic_fetch_add(&cl_closed_recv, 1);
}
static void cl_send(void *arg)
{
    int v = 5;
    if (weft_chan_send(cl, &v) == WEFT_ECLOSED)
        atomic_fetch_add(&cl_closed_send, 1);
}
static void *cl_recv_thread(void *arg) { cl_recv(arg); return NULL; }
static void *cl_send_thread(void *arg) { cl_send(arg); return NULL; }

/* Gives the peers time to block. The test holds either way: a peer that
 * arrives after close gets WEFT_ECLOSED too; this makes the blocked case
 * the common one. */
static void let_them_block(void)
{
    struct timespec ts = { 0, 30000000 };
    nanosleep(&ts, NULL);
}

WT_TEST(sync, chan_close_semantics, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        cur = make_sched(w);
        /* Receivers blocked on an empty channel. */
        WT_ASSERT_EQ(weft_chan_create(&cl, sizeof(int), 4), WEFT_OK);
        atomic_store(&cl_closed_recv, 0);
        pthread_t t;
        for (int i = 0; i < 5; i++)
            WT_ASSERT_EQ(weft_spawn(cur, cl_recv, NULL), WEFT_OK);
        pthread_create(&t, NULL, cl_recv_thread, NULL);
        let_them_block();
        weft_chan_close(cl);
        weft_chan_close(cl);
        pthread_join(t, NULL);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&cl_closed_recv), 6);
        weft_chan_destroy(cl);

        /* Senders blocked on a full (or rendezvous) channel. */
        for (size_t cap = 0; cap <= 2; cap += 2) {
            WT_ASSERT_EQ(weft_chan_create(&cl, sizeof(int), cap), WEFT_OK);
            int v = 1;
            for (size_t i = 0; i < cap; i++)
                WT_ASSERT_EQ(weft_chan_send(cl, &v), WEFT_OK);
            atomic_store(&cl_closed_send, 0);
            for (int i = 0; i < 5; i++)
                WT_ASSERT_EQ(weft_spawn(cur, cl_send, NULL), WEFT_OK);
            pthread_create(&t, NULL, cl_send_thread, NULL);
            let_them_block();
            weft_chan_close(cl);
            pthread_join(t, NULL);
            WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&cl_closed_send), 6);   /* blocked at close: not delivered */
            for (size_t i = 0; i < cap; i++) {                /* the buffer drains */
                int out = 0;
                WT_ASSERT_EQ(weft_chan_try_recv(cl, &out), WEFT_OK);
                WT_ASSERT_EQ(out, 1);
            }
            int out;
            WT_ASSERT_EQ(weft_chan_try_recv(cl, &out), WEFT_ECLOSED);
            WT_ASSERT_EQ(weft_chan_recv(cl, &out), WEFT_ECLOSED);
            WT_ASSERT_EQ(weft_chan_recv_for(cl, &out, 1000000), WEFT_ECLOSED);
            WT_ASSERT_EQ(weft_chan_try_send(cl, &v), WEFT_ECLOSED);
            weft_chan_destroy(cl);
        }
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* Receivers that time out constantly race senders: every message still
 * arrives exactly once (the claim on a waiter and its timeout exclude
 * each other). */
static weft_chan *race;
static unsigned per_race;
static atomic_long got_race, timeouts_race;
static _Atomic unsigned char *seen_race;

static bool race_thread(unsigned id) { return id == 0 || id == 3; }

static void race_body(unsigned id)
{
    if (id < 2) {
        for (unsigned i = 0; i < per_race; i++) {
            unsigned v = id * per_race + i;
            WT_ASSERT_EQ(weft_chan_send(race, &v), WEFT_OK);
        }
        return;
    }
    for (;;) {
        if (atomic_load(&got_race) >= (long)per_race * 2)
            return;
        unsigned v;
        int rc = weft_chan_recv_for(race, &v, id % 2 ? 1000 : 3000);
        if (rc == WEFT_ETIMEDOUT) {
            atomic_fetch_add(&timeouts_race, 1);
            continue;
        }
        WT_ASSERT_EQ(rc, WEFT_OK);
        WT_ASSERT(v < per_race * 2);
        WT_ASSERT_EQ(atomic_fetch_add(&seen_race[v], 1), 0);
        atomic_fetch_add(&got_race, 1);
    }
}

WT_TEST(sync, chan_timeouts_race_senders_exactly_once, .timeout = 600)
{
    per_race = (unsigned)wt_scaled(50000, 2000);
    WT_FOR_WORKERS(w, 1, 2, 4) {
        WT_ASSERT_EQ(weft_chan_create(&race, sizeof(unsigned), 0), WEFT_OK);
        seen_race = calloc(per_race * 2, 1);
        atomic_store(&got_race, 0);
        atomic_store(&timeouts_race, 0);
        run_mixed(w, 6, race_thread, race_body);
        WT_ASSERT_EQ(atomic_load(&got_race), (long)per_race * 2);
        fprintf(stderr, "recv_for vs send: %u workers, %u messages, %ld timeouts: 0 lost, 0 duplicated\n",
                w, per_race * 2, atomic_load(&timeouts_race));
        free((void *)seen_race);
        weft_chan_destroy(race);
    }
}

/* ---- close racing senders and receivers: exactly once ------------------------ */

/* Producers send until WEFT_ECLOSED and consumers receive until
 * WEFT_ECLOSED, each rotating through the blocking, try_ and timed forms
 * (timeouts 0, 1 us and 1 ms); the consumer that takes the
 * close_after-th element closes the channel in the middle of the
 * traffic. Every element whose send returned OK is received exactly once
 * (buffered ones drain after the close), and no other element is: a
 * send that failed (EAGAIN, ETIMEDOUT, or ECLOSED while blocked) was not
 * delivered. */
#define PROD_CR 3
#define CONS_CR 3
#define LIMIT_CR (1u << 19)   /* sends per producer, failed ones included */
static weft_chan *cr;
static long close_after_cr;
static atomic_long received_cr;
static _Atomic unsigned char *sent_ok_cr, *got_cr;   /* [producer * LIMIT_CR + seq] */
static atomic_int prod_done_cr, cons_done_cr;

static bool cr_thread(unsigned id) { return id == 1 || id == 4; }

static void cr_body(unsigned id)
{
    if (id < PROD_CR) {
        for (uint32_t i = 0;; i++) {
            WT_ASSERT(i < LIMIT_CR, "producer %u: %u sends and the channel is still open", id, i);
            uint32_t v = id * LIMIT_CR + i;
            int rc, busy = WEFT_ETIMEDOUT;
            if (i % 4 == 0) {
                rc = weft_chan_send(cr, &v);
                busy = WEFT_OK;
            } else if (i % 4 == 1) {
                rc = weft_chan_try_send(cr, &v);
                busy = WEFT_EAGAIN;
            } else {
                rc = weft_chan_send_for(cr, &v, timeouts[i % 3]);
            }
            if (rc == WEFT_ECLOSED)
                break;
            if (rc == WEFT_OK)
                atomic_store(&sent_ok_cr[v], 1);
            else
                WT_ASSERT(rc == busy, "producer %u, send %u: %s", id, i, weft_err_name(rc));
        }
        atomic_fetch_add(&prod_done_cr, 1);
        return;
    }
    for (unsigned n = 0;; n++) {
        uint32_t v;
        int rc, busy = WEFT_ETIMEDOUT;
        if (n % 4 == 0) {
            rc = weft_chan_recv(cr, &v);
            busy = WEFT_OK;
        } else if (n % 4 == 1) {
            rc = weft_chan_try_recv(cr, &v);
            busy = WEFT_EAGAIN;
        } else {
            rc = weft_chan_recv_for(cr, &v, timeouts[n % 3]);
        }
        if (rc == WEFT_ECLOSED)
            break;
        if (rc != WEFT_OK) {
            WT_ASSERT(rc == busy, "consumer %u, receive %u: %s", id, n, weft_err_name(rc));
            continue;
        }
        WT_ASSERT(v / LIMIT_CR < PROD_CR, "garbage element %u", v);
        WT_ASSERT_EQ(atomic_fetch_add(&got_cr[v], 1), 0);
        if (atomic_fetch_add(&received_cr, 1) + 1 == close_after_cr)
            weft_chan_close(cr);
    }
    atomic_fetch_add(&cons_done_cr, 1);
}

WT_TEST(sync, chan_close_races_senders_and_receivers_exactly_once, .timeout = 600)
{
    static const size_t caps[] = { 0, 1, 8 };
    close_after_cr = (long)wt_scaled(100000, 5000);
    WT_FOR_WORKERS(w, 1, 2, 4) {
        for (size_t c = 0; c < 3; c++) {
            WT_ASSERT_EQ(weft_chan_create(&cr, sizeof(uint32_t), caps[c]), WEFT_OK);
            sent_ok_cr = calloc((size_t)PROD_CR * LIMIT_CR, 1);
            got_cr = calloc((size_t)PROD_CR * LIMIT_CR, 1);
            atomic_store(&received_cr, 0);
            atomic_store(&prod_done_cr, 0);
            atomic_store(&cons_done_cr, 0);
            run_mixed(w, PROD_CR + CONS_CR, cr_thread, cr_body);
            WT_ASSERT_EQ(atomic_load(&prod_done_cr), PROD_CR);
            WT_ASSERT_EQ(atomic_load(&cons_done_cr), CONS_CR);
            long delivered = 0;
            for (size_t v = 0; v < (size_t)PROD_CR * LIMIT_CR; v++) {
                if (got_cr[v] != sent_ok_cr[v])
                    WT_FAIL("element %zu/%zu: send %s, received %d times", v / LIMIT_CR,
                            v % LIMIT_CR, sent_ok_cr[v] ? "OK" : "failed", got_cr[v]);
                delivered += got_cr[v];
            }
            WT_ASSERT(delivered >= close_after_cr);
            uint32_t v = 0;
            WT_ASSERT_EQ(weft_chan_try_recv(cr, &v), WEFT_ECLOSED);
            WT_ASSERT_EQ(weft_chan_send(cr, &v), WEFT_ECLOSED);
            weft_chan_close(cr);   /* again: harmless */
            fprintf(stderr, "close race: %u workers, capacity %zu: %ld delivered, each once; "
                    "every failed send undelivered\n", w, caps[c], delivered);
            free((void *)sent_ok_cr);
            free((void *)got_cr);
            weft_chan_destroy(cr);
        }
    }
}

/* ---- try_ forms against blocked peers ------------------------------------------- */

/* On a rendezvous channel a try_send succeeds once a receiver is blocked
 * (and fails before: chan_try_forms_and_bad_arguments), a try_recv once a
 * sender is. The blocked peer is a task or a plain thread, the trier a
 * plain thread or a task, at 1, 2 and 4 workers. */
static weft_chan *tf;
static atomic_int tf_done;
static int tf_mode;   /* 0: peer receives, trier sends; 1: the reverse */

static void tf_peer(void *arg)
{
    int v = -1;
    if (tf_mode == 0) {
        WT_ASSERT_EQ(weft_chan_recv(tf, &v), WEFT_OK);
        WT_ASSERT_EQ(v, 42);
    } else {
        v = 43;
        WT_ASSERT_EQ(weft_chan_send(tf, &v), WEFT_OK);
    }
    atomic_fetch_add(&tf_done, 1);
}
static void *tf_peer_thread(void *arg) { tf_peer(arg); return NULL; }

static void tf_trier(void *arg)
{
    int v = 42, rc;
    while ((rc = tf_mode == 0 ? weft_chan_try_send(tf, &v) : weft_chan_try_recv(tf, &v)) == WEFT_EAGAIN)
        weft_yield();   /* a task lets the peer run; a thread yields its CPU */
    WT_ASSERT_EQ(rc, WEFT_OK);
    if (tf_mode == 1)
        WT_ASSERT_EQ(v, 43);
    atomic_fetch_add(&tf_done, 1);
}
static void *tf_trier_thread(void *arg) { tf_trier(arg); return NULL; }

WT_TEST(sync, chan_try_forms_against_blocked_peers, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        cur = make_sched(w);
        WT_ASSERT_EQ(weft_chan_create(&tf, sizeof(int), 0), WEFT_OK);
        for (int round = 0; round < 200; round++) {
            tf_mode = round % 2;
            int who = (round / 2) % 3;   /* 0: peer task, trier thread; 1: the reverse; 2: both tasks */
            atomic_store(&tf_done, 0);
            pthread_t t;
            if (who == 0) {
                WT_ASSERT_EQ(weft_spawn(cur, tf_peer, NULL), WEFT_OK);
                pthread_create(&t, NULL, tf_trier_thread, NULL);
            } else if (who == 1) {
                pthread_create(&t, NULL, tf_peer_thread, NULL);
                WT_ASSERT_EQ(weft_spawn(cur, tf_trier, NULL), WEFT_OK);
            } else {
                WT_ASSERT_EQ(weft_spawn(cur, tf_trier, NULL), WEFT_OK);
                WT_ASSERT_EQ(weft_spawn(cur, tf_peer, NULL), WEFT_OK);
            }
            if (who != 2)
                pthread_join(t, NULL);
            WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&tf_done), 2);
        }
        /* Buffered: try_ fails only on full (send) or empty (receive). */
        weft_chan *b;
        WT_ASSERT_EQ(weft_chan_create(&b, sizeof(int), 3), WEFT_OK);
        for (int i = 0; i < 3; i++)
            WT_ASSERT_EQ(weft_chan_try_send(b, &i), WEFT_OK);
        int x = 9;
        WT_ASSERT_EQ(weft_chan_try_send(b, &x), WEFT_EAGAIN);
        for (int i = 0; i < 3; i++) {
            WT_ASSERT_EQ(weft_chan_try_recv(b, &x), WEFT_OK);
            WT_ASSERT_EQ(x, i);
        }
        WT_ASSERT_EQ(weft_chan_try_recv(b, &x), WEFT_EAGAIN);
        weft_chan_destroy(b);
        weft_chan_destroy(tf);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* ---- run next: a ping-pong pair does not starve the deque ------------------- */

static weft_chan *ping, *pong;
static atomic_int exchanged, victim_after;
static unsigned pp_rounds;

static void pp_victim(void *arg)
{
    atomic_store(&victim_after, atomic_load(&exchanged));
}

static void pp_partner(void *arg)
{
    int v;
    for (unsigned i = 0; i < pp_rounds; i++) {
        WT_ASSERT_EQ(weft_chan_recv(ping, &v), WEFT_OK);
        atomic_fetch_add(&exchanged, 1);
        WT_ASSERT_EQ(weft_chan_send(pong, &v), WEFT_OK);
    }
}

static void pp_start(void *arg)
{
    /* The partner first (it blocks in recv), then the victim into the
     * deque, then ping-pong from here. */
    WT_ASSERT_EQ(weft_spawn_hint(cur, pp_partner, NULL, WEFT_HINT_NEXT), WEFT_OK);
    weft_yield();
    WT_ASSERT_EQ(weft_spawn(cur, pp_victim, NULL), WEFT_OK);
    int v = 1;
    for (unsigned i = 0; i < pp_rounds; i++) {
        WT_ASSERT_EQ(weft_chan_send(ping, &v), WEFT_OK);
        WT_ASSERT_EQ(weft_chan_recv(pong, &v), WEFT_OK);
        atomic_fetch_add(&exchanged, 1);
    }
}

WT_TEST(sync, run_next_respects_lifo_budget, .timeout = 120)
{
    static const unsigned budgets[] = { 1, 3, 8 };
    pp_rounds = 1000;
    for (int b = 0; b < 3; b++) {
        weft_config c;
        weft_config_init(&c);
        c.workers = 1;
        c.lifo_budget = budgets[b];
        WT_ASSERT_EQ(weft_sched_create(&cur, &c), WEFT_OK);
        WT_ASSERT_EQ(weft_chan_create(&ping, sizeof(int), 0), WEFT_OK);
        WT_ASSERT_EQ(weft_chan_create(&pong, sizeof(int), 0), WEFT_OK);
        atomic_store(&exchanged, 0);
        atomic_store(&victim_after, -1);
        WT_ASSERT_EQ(weft_spawn(cur, pp_start, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        int after = atomic_load(&victim_after);
        fprintf(stderr, "lifo_budget %u: the deque task ran after %d ping-pong resumptions\n",
                budgets[b], after);
        WT_ASSERT(after >= 0 && after <= (int)budgets[b] + 2,
                  "deque task waited %d resumptions (budget %u)", after, budgets[b]);
        WT_ASSERT_EQ(atomic_load(&exchanged), 2 * (int)pp_rounds);
        weft_chan_destroy(ping);
        weft_chan_destroy(pong);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

