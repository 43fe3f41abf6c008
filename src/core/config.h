/* This file is private to weft: the interface of config.c: a config as a
 * scheduler takes it.
 */
#ifndef WEFT_CONFIG_H
#define WEFT_CONFIG_H

#include "core.h"

/* Replaces c's zeros by their defaults (workers AUTO by ncpu), checks
 * it (WEFT_EINVAL: a rule of WEFT_CONFIG_TABLE broken), then stores
 * WEFT_WORKERS_NONE and WEFT_SPIN_NONE as 0, what src/core reads, and
 * resolves the allocator. Callable from: any thread. */
int  weft__config_take(weft_config *c, unsigned ncpu);

#endif /* WEFT_CONFIG_H */
