/* allocator.h — PyTorch's CUDA caching allocator, replayed over a step's tensors.
 *
 * What the allocator reserves is not what the tensors hold: it rounds every
 * request, carves small ones out of 2 MiB segments and mid-sized ones out of
 * 20 MiB segments, keeps freed blocks cached for later requests, and can only
 * reuse a cached block for a request that fits in it. alloc_sim replays a
 * sequence of allocations and frees through those rules and reports the
 * reserved bytes at their high-water mark. */
#ifndef ALLOCATOR_H
#define ALLOCATOR_H

#include <stdbool.h>
#include <stdint.h>

typedef struct alloc_sim alloc_sim;

/* native: cudaMalloc'd segments (the default); expandable: one segment per
 * pool that grows by mapping pages (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) */
alloc_sim *alloc_sim_new(bool expandable);
void alloc_sim_delete(alloc_sim *a);
/* Empty again, as alloc_sim_new makes it, its arrays kept for the next replay. */
void alloc_sim_reset(alloc_sim *a, bool expandable);
/* The blocks its arrays have room for: what it keeps between replays. */
int alloc_sim_blocks(const alloc_sim *a);

/* A request of `bytes` on the default stream; returns its handle, or -1 when
 * out of host memory. */
int alloc_sim_malloc(alloc_sim *a, double bytes);
/* The same on stream 0..ALLOC_STREAMS-1: a block freed on one stream is cached
 * for that stream's requests only (side streams: FSDP's all-gathers, its
 * reduce-scatters). */
#define ALLOC_STREAMS 4
int alloc_sim_malloc_on(alloc_sim *a, double bytes, int stream);
void alloc_sim_free(alloc_sim *a, int handle);

typedef struct alloc_stats {
    double allocated, reserved;           /* now */
    double peak_allocated, peak_reserved; /* high-water marks */
    long segments;                        /* cudaMalloc calls (native) or page mappings (expandable) */
    bool failed;                          /* out of host memory at some point: the figures fall short */
} alloc_stats;
alloc_stats alloc_sim_stats(const alloc_sim *a);

#endif
