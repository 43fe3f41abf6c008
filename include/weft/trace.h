/*
 * weft/trace.h: Tracing: record what every thread does, write Chrome trace JSON.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_TRACE_H
#define WEFT_PUBLIC_TRACE_H

#include <stdio.h>

#include "defs.h"
#include "errors.h"

WEFT_BEGIN_DECLS

/** @file
 * Recording what every thread of a scheduler does (tasks, fiber switches,
 * steals, parks, graph runs, loop chunks, user zones) into a buffer per
 * thread, with no lock and no allocation per event, and writing it as
 * Chrome trace-event JSON for Perfetto UI or chrome://tracing. Recording
 * off costs one predictable branch at a task start, a fiber switch and a
 * wake-up.
 *
 * See docs/reference/trace.md for the event model, buffers and dropped
 * events, the clock, the JSON layout (every event kind and field), and
 * what the "dropped" count counts. */

/** Begins a new recording of s (what an earlier one held is discarded),
 * events_per_thread events per thread (rounded up to a power of two).
 * Returns WEFT_OK, WEFT_EINVAL (s NULL, events_per_thread outside
 * [16, 2^24]), WEFT_EBUSY (s records already) or WEFT_ENOMEM (no buffers;
 * nothing changed). Callable from: any thread, tasks included. */
WEFT_API int  weft_trace_start(weft_sched *s, size_t events_per_thread);

/** Opens a zone named name (a static string; NULL shows as "zone") in
 * the calling task or bound thread's own code; zones nest. Recorded only
 * while the calling thread's scheduler records; a no-op elsewhere.
 * Callable from: any thread (recorded on a worker or bound thread). */
WEFT_API void weft_trace_begin(const char *name);
/** Closes the innermost open zone; an end without its begin is ignored
 * when written. Callable from: any thread (recorded as for begin). */
WEFT_API void weft_trace_end(void);

/** Ends s's recording; the buffers stay for weft_trace_write. Returns
 * WEFT_OK (also if s was not recording) or WEFT_EINVAL (s NULL).
 * Callable from: any thread, tasks included. */
WEFT_API int  weft_trace_stop(weft_sched *s);

/** Writes the last recording of s (so far, if it still records) to out
 * as Chrome trace-event JSON; with no recording, a valid file with no
 * events. Returns WEFT_OK, WEFT_EINVAL (s or out NULL), WEFT_ENOMEM (no
 * scratch for the writer: still valid JSON, missing events) or WEFT_EIO
 * (writing to out failed).
 * Callable from: any thread; recording goes on meanwhile. */
WEFT_API int  weft_trace_write(weft_sched *s, FILE *out);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_TRACE_H */
