/* This file is private to weft's tests: weft_trace_start/stop/write
 * racing running work, shared by test_trace_race.c (short) and
 * stress_trace.c (long). Written from weft.h's "tracing" section.
 *
 * One round on a scheduler of `workers` workers:
 *  1. Work runs all along: a thread spawns batches of tasks that block on
 *     each other (pairs on rendezvous channels, waiters on events set by
 *     other tasks, tasks that sleep) and waits for each batch; a bound
 *     thread runs a random graph whose tasks sleep and run small
 *     parallel loops, again and again. With no workers both threads are
 *     bound (someone must run the tasks). (No weft_yield:
 *     test_trace_block.c's wait_kinds covers it apart, so that a yield
 *     bug does not hide races here.)
 *  2. For duration_ns, two plain threads, one bound thread and some of
 *     the tasks themselves call weft_trace_start (sizes 16 to 4096),
 *     weft_trace_stop and weft_trace_write (to /dev/null, and to memory,
 *     parsed and checked with trace_check): start returns OK or EBUSY,
 *     stop OK, write OK, every written trace is valid.
 *  3. Then, with nobody else calling them and the work still running: a
 *     stop, a start, K tasks spawned after the start returned and
 *     finished before the stop is called, a stop, a write: all K appear
 *     (unless otherData.dropped > 0, when the header promises nothing).
 * Returns false with the first problem in why. */
#ifndef WEFT_TEST_TRACE_CHAOS_H
#define WEFT_TEST_TRACE_CHAOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct trace_chaos_stats {
    uint64_t starts_ok, starts_busy, stops, writes, parsed, task_ops, batches, graph_runs;
    bool late_checked;   /* false: phase 3 had drops, its count was not checked */
} trace_chaos_stats;

bool trace_chaos_round(unsigned workers, uint64_t duration_ns, uint64_t seed, trace_chaos_stats *st, char *why,
                       size_t cap);

#endif /* WEFT_TEST_TRACE_CHAOS_H */
