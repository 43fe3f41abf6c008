/* Stall reports captured for tests (test_stall, test_report): the
 * latest report's text and a count, filled by on_stall on the watchdog
 * thread. Include after wtest.h. */
#ifndef WEFT_TEST_STALL_CAPTURE_H
#define WEFT_TEST_STALL_CAPTURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "weft.h"

typedef struct capture {
    pthread_mutex_t lock;
    char text[16384];                 /* the latest report */
    atomic_uint reports;
    weft_event *signal_on_report;     /* if set: the callback signals it */
} capture;

static inline void capture_init(capture *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
}

static inline void on_stall(const char *report, void *ctx)
{
    capture *c = ctx;
    pthread_mutex_lock(&c->lock);
    snprintf(c->text, sizeof c->text, "%s", report);
    pthread_mutex_unlock(&c->lock);
    atomic_fetch_add(&c->reports, 1);
    if (c->signal_on_report)
        weft_event_signal(c->signal_on_report);
}

/* Waits up to timeout_ms for the report count to reach n. */
static inline bool wait_reports(capture *c, unsigned n, unsigned timeout_ms)
{
    for (unsigned waited = 0; atomic_load(&c->reports) < n; waited += 5) {
        if (waited >= timeout_ms)
            return false;
        usleep(5000);
    }
    return true;
}

/* The latest report contains needle. */
static inline bool reported(capture *c, const char *needle)
{
    pthread_mutex_lock(&c->lock);
    bool found = strstr(c->text, needle) != NULL;
    pthread_mutex_unlock(&c->lock);
    return found;
}

/* A scheduler whose watchdog reports into c (NULL: to stderr). */
static inline weft_sched *make_watched(unsigned workers, uint64_t period_ns, capture *c)
{
    weft_config cfg;
    weft_config_init(&cfg);
    cfg.workers = wt_workers(workers);
    cfg.watchdog_ns = period_ns;
    cfg.on_stall = c ? on_stall : NULL;
    cfg.hook_ctx = c;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &cfg), WEFT_OK);
    return s;
}

#endif /* WEFT_TEST_STALL_CAPTURE_H */
