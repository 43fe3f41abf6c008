/* This file is private to weft: the graph's block cache, where the node
 * blocks and arena chunks of destroyed graphs wait for the next graph.
 */
#ifndef WEFT_BLOCK_CACHE_H
#define WEFT_BLOCK_CACHE_H

#include <stddef.h>

/* Blocks of WEFT__KEPT_SIZE bytes (cache-line aligned) through the
 * process-wide allocator, of which up to WEFT__KEPT_MAX bytes freed are
 * kept for the next weft__kept_alloc instead of going back, while that
 * allocator is weft's default (malloc): graph after graph then reuses
 * memory it has instead of the kernel zeroing fresh pages each time. A
 * user's allocator sees every block come and go; weft_set_allocator
 * gives the kept blocks back to the allocator that made them. NULL: out
 * of memory. Callable from: any thread. */
#define WEFT__KEPT_SIZE ((size_t)64 << 10)
#define WEFT__KEPT_MAX ((size_t)64 << 20)
void *weft__kept_alloc(void);
void  weft__kept_free(void *p);

#endif /* WEFT_BLOCK_CACHE_H */
