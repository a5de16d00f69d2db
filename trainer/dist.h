/*
 * dist.h — data parallel over MPI (OpenMPI): the process group, ZeRO-2's
 * reduce-scatter and the ZeRO-1/3 parameter all-gathers (the gradient
 * all-reduce of ZeRO-0/1 is ring.h's). Built with MPI when the
 * Makefile finds it (MT_HAVE_MPI); without it there is one rank, and a launch
 * under mpirun is detected and refused by the caller.
 *
 * Every collective is over MPI_COMM_WORLD and must be called by every rank in
 * the same order. Functions return 0, or -1 with a message (mt_error).
 */
#ifndef MT_DIST_H
#define MT_DIST_H

#include <stdbool.h>
#include <stddef.h>

#include "precision.h"

/* Whether this build has MPI. */
bool mt_dist_built(void);
/* The world size the launcher announces in the environment (OpenMPI's
 * OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE), 1 when not launched by one. */
int mt_dist_launched_size(void);
/* Start MPI (with MPI; else rank 0 of 1). */
int mt_dist_start(int *argc, char ***argv, int *rank, int *ranks);
/* Finish MPI (after every rank's last collective). */
void mt_dist_stop(void);
/* Stop every rank after a failure on this one (MPI_Abort; exit without MPI). */
_Noreturn void mt_dist_abort(int code);

/* The part of n elements rank `rank` of `ranks` owns: the first n mod ranks
 * ranks one more element. */
void mt_dist_shard(size_t n, int rank, int ranks, size_t *lo, size_t *count);

/* ZeRO-2: `g` holds the elements [off, off + n) of a vector of `total` elements
 * (n of dt) on every rank; sum them over the ranks and add this rank's part
 * (its shard by mt_dist_shard, [lo, lo + count)) into `acc` (fp32, acc[0] is
 * element lo). One MPI_Reduce_scatter per chunk: the shards are contiguous and
 * in rank order, each rank receives its overlap. fp32 is reduced in place (`g`
 * is overwritten), 16-bit through the fp32 `bucket` (bucket_n elements). */
int mt_dist_reduce_scatter_add(void *g, mt_dtype dt, size_t off, size_t n, size_t total, float *acc,
                               float *bucket, size_t bucket_n);
/* Every rank's shard of `w` (n elements of dt, split by mt_dist_shard) to all,
 * in place. */
int mt_dist_allgather(void *w, mt_dtype dt, size_t n, int ranks);
/* ZeRO-3: the elements [off, off + n) of a vector of `total` elements (dt)
 * sharded over the ranks by mt_dist_shard, each rank holding its shard in
 * `shard` (shard[0] is element lo), gathered into `dst` (n elements) on every
 * rank. One MPI_Allgatherv per chunk of at most `chunk` elements (the shards
 * are contiguous and in rank order, so each rank's overlap lands after the
 * previous rank's). Without MPI: a copy from the (whole) shard. */
int mt_dist_gather_range(const void *shard, mt_dtype dt, size_t off, size_t n, size_t total, void *dst,
                         size_t chunk);
/* An MPI call's failure as memtrain's error (mt_error): "MPI <what> failed: <MPI's
 * message>"; returns -1. With MPI only (rc is an MPI error code). */
int mt_dist_failed(const char *what, int rc);
/* Sum of one value over the ranks. */
double mt_dist_sum(double v);
/* Largest of one value over the ranks (memtrain's stop: the signal any rank got). */
int mt_dist_max(int v);
/* Gather `len` bytes from every rank into `all` (ranks x len) on rank 0. */
int mt_dist_gather(const void *mine, void *all, size_t len);

#endif
