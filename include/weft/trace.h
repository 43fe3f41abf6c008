/*
 * weft/trace.h: Tracing: record what every thread does, write Chrome trace JSON.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_TRACE_H
#define WEFT_PUBLIC_TRACE_H

#include <stdio.h>

#include "defs.h"

WEFT_BEGIN_DECLS

/* Recording what every thread of s does: each worker and bound thread
 * writes events into a buffer of its own of events_per_thread entries
 * (rounded up to a power of two, 32 bytes each, plus 64 KiB for copies
 * of graph task names), with no lock and no allocation per event; when a
 * buffer is full its oldest events are dropped and counted. Events:
 * tasks begin and end (with the graph task name, weft_spawn_opts.name,
 * else the function's symbol), a fiber suspends (with what it waits on)
 * and resumes (with an arrow from the thread that made it ready), steals
 * (from whom), parks and wake-ups, graph runs, parallel loop chunks and
 * the zones of weft_trace_begin/end. Timestamps come from one monotonic
 * clock (the TSC where it is invariant), converted to ns when written.
 *
 * weft_trace_start begins a new recording (what an earlier one held is
 * discarded): WEFT_EINVAL for s NULL or events_per_thread outside
 * [16, 2^24], WEFT_EBUSY if s is recording already, WEFT_ENOMEM with
 * nothing changed if the buffers cannot be had. Buffers are kept for the
 * next start (one asking for fewer events reuses them whole) and freed
 * with s. A thread that binds while s records is
 * recorded from then on (its buffer is made at bind; none if that
 * fails, counted as dropped). weft_trace_stop ends recording (WEFT_OK
 * if it was not recording; WEFT_EINVAL for s NULL); an event its thread
 * had begun to write as stop returned is not written out. Both callable from
 * any thread, tasks included, with work running.
 *
 * Recording off costs one predictable branch at a task start, a fiber
 * switch and a wake-up. */
WEFT_API int  weft_trace_start(weft_sched *s, size_t events_per_thread);
WEFT_API int  weft_trace_stop(weft_sched *s);

/* Writes the events of the last recording (so far, if it still records)
 * as Chrome trace-event JSON, which Perfetto UI (ui.perfetto.dev) and
 * chrome://tracing open. Layout: an object {"traceEvents": [...],
 * "displayTimeUnit": "ns", "otherData": {...}}; pid 1; tid = the
 * thread's weft_thread_id, named "worker N" or "bound thread N" by
 * "thread_name" metadata events. Times in microseconds from the start.
 *   - A task run is one complete event ("ph":"X", "cat":"task") or, if it
 *     blocked, one per stretch it ran; a run's events share args.run (a
 *     number unique in the file). A stretch that ended because the fiber
 *     blocked has args.wait (what it waited on: "channel receive",
 *     "channel send", "event", "mutex", "semaphore", "sleep", "yield",
 *     ...); a stretch after the first begins with the arrow of
 *     its wake-up ("ph":"s" on the waker's thread, "ph":"f" here, same
 *     id, "cat":"wake") when the waker was a thread of s.
 *   - Zones of weft_trace_begin/end ("cat":"zone") and parallel loop
 *     chunks ("cat":"chunk", args.begin/end) are complete events nested
 *     in their task's; a graph run is an async pair ("ph":"b"/"e",
 *     "cat":"graph", id the run's, a string), written by the thread that
 *     ended it, from the moment it was queued (or the recording began).
 *   - Instant events ("ph":"i"): "steal" (args.from, the victim's id),
 *     "park" and "wake" ("cat":"sched").
 *   - Counter "queue" ("ph":"C"): the thread's own queue length (deque
 *     and LIFO slot, capped at 255) at each task it picks.
 * otherData: "events" (the JSON events in traceEvents, metadata
 * included), "dropped" (JSON events lost to full buffers, all threads,
 * in the same unit: a zone, a chunk or an instant 1, a task run 2, its
 * first stretch and its "queue" counter, a graph run 2; a later stretch
 * of a task that blocked is not counted; plus 1 for each thread whose
 * buffer could not be made), "clock" ("tsc", "cntvct" or "monotonic").
 * For a stopped recording, dropped + events is what the file would hold
 * with buffers large enough (save those stretches).
 * A task still running when written (or when stop came) ends at the last
 * event of its thread. Names are written as UTF-8 (bytes that are not
 * show as U+FFFD); a graph task's name is kept up to 255 bytes; a graph
 * task with no function draws nothing. WEFT_EINVAL for s or out NULL;
 * WEFT_ENOMEM if the writer's scratch (one pass over the events, growing
 * with the fibers and nesting seen) cannot be had: what is written is
 * still JSON, missing events; WEFT_EIO if writing to out fails. Without any recording: a valid file with no events.
 * Callable from any thread; recording goes on meanwhile. */
WEFT_API int  weft_trace_write(weft_sched *s, FILE *out);

/* A zone inside a task (or in a bound thread's own code): nested, name a
 * static string (NULL shows as "zone"). Recorded only while the
 * calling thread's scheduler records; a no-op on other threads. An end
 * without its begin is ignored when written. */
WEFT_API void weft_trace_begin(const char *name);
WEFT_API void weft_trace_end(void);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_TRACE_H */
