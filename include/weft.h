/*
 * weft: task graphs on a fiber work-stealing scheduler.
 *
 * This is the header a user includes: it includes every topic header
 * under weft/, in the order to read them. Conventions:
 *  - Every call that can fail returns int: 0 (WEFT_OK) on success, a
 *    negative WEFT_E* code on failure. A call that fails changes nothing.
 *  - Objects a user embeds (sync primitives) are caller-allocated with
 *    _init/_destroy; their bodies are public only so they can be embedded:
 *    the fields are private. Objects of variable size (scheduler, graph,
 *    channel) are made with _create and freed with _destroy.
 *  - Nothing allocates on the spawn/run path in steady state.
 *  - "Callable from" notes name the threads a call is meant for: a worker
 *    (a task running on one of the scheduler's threads), a bound thread
 *    (weft_sched_bind), or any thread.
 */
#ifndef WEFT_H
#define WEFT_H

#include "weft/defs.h"
#include "weft/errors.h"
#include "weft/alloc.h"
#include "weft/config.h"
#include "weft/sched.h"
#include "weft/task.h"
#include "weft/sync.h"
#include "weft/chan.h"
#include "weft/io.h"
#include "weft/proc.h"
#include "weft/graph.h"
#include "weft/parallel.h"
#include "weft/flow.h"
#include "weft/trace.h"

#endif /* WEFT_H */
