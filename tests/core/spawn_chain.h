/* A chain of CHAIN tasks spawned in one burst that block on each other
 * in a valid order: task i waits for task i - 1 (link_fwd) or i + 1
 * (link_back), then sets its own event; next_done and out_of_order check
 * that they ended in the chain's order. Shared by test_spawn_main.c and
 * test_spawn_beside.c; the includer defines CHAIN first. */
#ifndef WEFT_TEST_SPAWN_CHAIN_H
#define WEFT_TEST_SPAWN_CHAIN_H

#include <stdatomic.h>
#include <stdint.h>

#include "weft.h"
#include "wtest.h"

#ifndef CHAIN
# error "define CHAIN (the chain's length) before including spawn_chain.h"
#endif

static weft_event evs[CHAIN];
static atomic_int next_done;
static atomic_int out_of_order;

static void link_fwd(void *arg)
{
    int i = (int)(intptr_t)arg;
    if (i > 0)
        WT_ASSERT_EQ(weft_event_wait(&evs[i - 1]), WEFT_OK);
    if (atomic_exchange(&next_done, i + 1) != i)
        atomic_fetch_add(&out_of_order, 1);
    weft_event_signal(&evs[i]);
}

static void link_back(void *arg)
{
    int i = (int)(intptr_t)arg;
    if (i < CHAIN - 1)
        WT_ASSERT_EQ(weft_event_wait(&evs[i + 1]), WEFT_OK);
    if (atomic_exchange(&next_done, i - 1) != i)
        atomic_fetch_add(&out_of_order, 1);
    weft_event_signal(&evs[i]);
}

#endif /* WEFT_TEST_SPAWN_CHAIN_H */
