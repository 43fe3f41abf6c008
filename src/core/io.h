/* This file is private to weft: the interface of io.c: weft_fd_wait_for,
 * weft_pid_wait_for.
 */
#ifndef WEFT_IO_H
#define WEFT_IO_H

#include "core.h"

/* io.c. Test seam: true makes weft_pid_wait_for poll as without pidfd_open. */
extern atomic_bool weft__no_pidfd;

#endif /* WEFT_IO_H */
