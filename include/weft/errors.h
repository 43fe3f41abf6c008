/*
 * weft/errors.h: Error codes: every call that can fail returns 0 or a negative WEFT_E* code.
 *
 * Every weft call that can fail returns an int: 0 (WEFT_OK) on success, a
 * negative WEFT_E* code on failure, and a call that fails changes nothing
 * unless its contract names what it changes. One table, WEFT_ERRNO_MAP,
 * gives each code its value and message; weft_strerror and weft_err_name
 * turn a code into text for people and for logs.
 * See docs/reference/errors.md for each code's meaning and the calls that
 * return it.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_ERRORS_H
#define WEFT_PUBLIC_ERRORS_H

#include "defs.h"

WEFT_BEGIN_DECLS

/** XX(name, value, message): the one table behind the codes, weft_strerror
 * and weft_err_name. */
#define WEFT_ERRNO_MAP(XX)                                                   \
    XX(EINVAL,     -1, "invalid argument")                                   \
    XX(ENOMEM,     -2, "out of memory; nothing was changed")                 \
    XX(EBUSY,      -3, "object or scheduler is in use")                      \
    XX(ECYCLE,     -4, "the graph has a cycle; nothing was run")             \
    XX(ECANCELED,  -5, "the run finished with cancelled tasks skipped")      \
    XX(ETIMEDOUT,  -6, "timed wait expired")                                 \
    XX(ECLOSED,    -7, "channel or descriptor closed")                       \
    XX(EAGAIN,     -8, "operation would block")                              \
    XX(ENOTBOUND,  -9, "calling thread is not a worker or bound thread")     \
    XX(ESHUTDOWN, -10, "scheduler is being destroyed")                      \
    XX(EIO,       -11, "input or output failed (errno says why)")           \
    XX(EFAILED,   -12, "a task failed: weft_graph_fail_code gives its code") \
    XX(ENOEXEC,   -13, "the command could not be started")

/** The codes: WEFT_OK, and WEFT_ followed by each name of the table. */
enum {
    WEFT_OK = 0,   /**< success */
#define WEFT__ERR_ENUM(name, value, msg) WEFT_##name = (value),
    WEFT_ERRNO_MAP(WEFT__ERR_ENUM)
#undef WEFT__ERR_ENUM
};
/* Each code is also a macro naming itself, as in the API contract, so
 * that `#ifdef WEFT_ECYCLE` in user code sees it; the enum stays for
 * debuggers and switch warnings. */
#define WEFT_OK WEFT_OK
#define WEFT_EINVAL WEFT_EINVAL
#define WEFT_ENOMEM WEFT_ENOMEM
#define WEFT_EBUSY WEFT_EBUSY
#define WEFT_ECYCLE WEFT_ECYCLE
#define WEFT_ECANCELED WEFT_ECANCELED
#define WEFT_ETIMEDOUT WEFT_ETIMEDOUT
#define WEFT_ECLOSED WEFT_ECLOSED
#define WEFT_EAGAIN WEFT_EAGAIN
#define WEFT_ENOTBOUND WEFT_ENOTBOUND
#define WEFT_ESHUTDOWN WEFT_ESHUTDOWN
#define WEFT_EIO WEFT_EIO
#define WEFT_EFAILED WEFT_EFAILED
#define WEFT_ENOEXEC WEFT_ENOEXEC

/** A static English message for err (a WEFT_E* code or 0: "success");
 * "unknown error" for any other value; never NULL.
 * Callable from: any thread. */
WEFT_API const char *weft_strerror(int err);

/** The code's name without its WEFT_ prefix, e.g. "EINVAL" ("OK" for 0);
 * "UNKNOWN" if err is not a code; never NULL.
 * Callable from: any thread. */
WEFT_API const char *weft_err_name(int err);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_ERRORS_H */
