/*
 * ring.h — the data-parallel gradient all-reduce (ZeRO-0 and ZeRO-1), overlapped
 * with the backward.
 *
 * The backward queues each range of the flat gradient vector as soon as its
 * gradients are final (a layer's tensors right after that layer, the rest at the
 * end), and ranges that border each other are summed together once they make a
 * bucket of a useful size. The buckets are summed over the ranks one at a time by a ring: a
 * reduce-scatter and an all-gather of ranks - 1 exchanges each with the two
 * neighbours (MPI_Isend/MPI_Irecv on MPI_COMM_WORLD), the next exchange posted
 * whenever mt_ring_progress finds the last one done, so the sums move while the
 * backward computes the layers below. mt_ring_finish waits for what is left.
 *
 * Memory, all counted (trainer/MEMORY.md, rows comm.bucket and comm.recv): the
 * chunk one exchange receives (`recv`, ceil(bucket_n / ranks) floats) and, for
 * 16-bit gradients, the fp32 copy the active range is summed in (`stage`,
 * bucket_n floats); ranges longer than bucket_n are queued in pieces. The queue
 * itself is a fixed table in the process (no allocation).
 *
 * Every rank queues the same ranges in the same order (the backward's schedule
 * does not depend on data), so the exchanges match. Functions return 0, or -1
 * with a message (mt_error). Without MPI there is one rank and nothing to do.
 */
#ifndef MT_RING_H
#define MT_RING_H

#include <stddef.h>

#include "precision.h"

/* Ready to sum ranges of n <= bucket_n elements of `dt` in `stage` (fp32,
 * bucket_n; NULL for fp32 gradients, summed in place) with the exchange buffer
 * `recv` (ceil(bucket_n / ranks) floats). Nothing may be in flight. */
int mt_ring_setup(mt_dtype dt, float *stage, float *recv, size_t bucket_n);
/* The n elements at g are final: sum them over the ranks, in pieces of at most
 * bucket_n gathered into buckets with the ranges they border (ring.c); n = 0:
 * only advance what is in flight, as mt_ring_progress. */
int mt_ring_queue(void *g, size_t n);
/* Advance whatever exchanges have completed, without waiting. */
int mt_ring_progress(void);
/* Wait until every queued range is summed; *waited_s gets the seconds spent. */
int mt_ring_finish(double *waited_s);

#endif
