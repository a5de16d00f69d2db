/*
 * dist.c — data parallel over MPI (see dist.h): the process group, ZeRO-2's
 * reduce-scatter of each layer's gradients right after its backward, ZeRO-1's
 * and ZeRO-3's all-gathers. ZeRO-0/1's all-reduce is ring.c's.
 */
#include "dist.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#ifdef MT_HAVE_MPI
#include <mpi.h>
#endif

bool mt_dist_built(void)
{
#ifdef MT_HAVE_MPI
    return true;
#else
    return false;
#endif
}

int mt_dist_launched_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 0) return atoi(v);
    }
    return 1;
}

void mt_dist_shard(size_t n, int rank, int ranks, size_t *lo, size_t *count)
{
    size_t r = (size_t)rank, k = ranks > 0 ? (size_t)ranks : 1, base = n / k, extra = n % k;
    *count = base + (r < extra);
    *lo = r * base + (r < extra ? r : extra);
}

#ifdef MT_HAVE_MPI

int mt_dist_failed(const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return mt_error("MPI %s failed: %s", what, msg);
}

int mt_dist_start(int *argc, char ***argv, int *rank, int *ranks)
{
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) return mt_dist_failed("init", rc);
    /* errors come back as codes, so every rank can report them and stop the job */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, ranks);
    return 0;
}

void mt_dist_stop(void)
{
    int started = 0, finished = 0;
    MPI_Initialized(&started);
    MPI_Finalized(&finished);
    if (started && !finished) MPI_Finalize();
}

_Noreturn void mt_dist_abort(int code)
{
    int started = 0;
    MPI_Initialized(&started);
    if (started) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

int mt_dist_reduce_scatter_add(void *g, mt_dtype dt, size_t off, size_t n, size_t total, float *acc,
                               float *bucket, size_t bucket_n)
{
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    int *counts = mt_alloc_n(MT_OTHER, (size_t)ranks, sizeof(int));
    if (!counts) return -1;
    size_t my_lo, my_n, step = bucket_n < (size_t)INT_MAX ? bucket_n : (size_t)INT_MAX;
    mt_dist_shard(total, rank, ranks, &my_lo, &my_n);
    int rc = MPI_SUCCESS;
    for (size_t c = 0; c < n && rc == MPI_SUCCESS; c += step) {
        size_t k = n - c < step ? n - c : step, a = off + c, b = a + k;
        for (int r = 0; r < ranks; r++) {
            size_t lo, cnt;
            mt_dist_shard(total, r, ranks, &lo, &cnt);
            size_t x = a > lo ? a : lo, y = b < lo + cnt ? b : lo + cnt;
            counts[r] = x < y ? (int)(y - x) : 0;
        }
        float *buf;
        if (dt == MT_F32) {
            buf = (float *)g + c;
        } else {
            buf = bucket;
            mt_to_f32(bucket, (char *)g + c * mt_dtype_size(dt), dt, k);
        }
        /* in place: the chunk is the input, this rank's part comes back at its start */
        rc = MPI_Reduce_scatter(MPI_IN_PLACE, buf, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        if (rc == MPI_SUCCESS && counts[rank]) {
            float *dst = acc + ((a > my_lo ? a : my_lo) - my_lo);
            for (int i = 0; i < counts[rank]; i++)
                dst[i] += buf[i];
        }
    }
    mt_free(counts);
    return rc == MPI_SUCCESS ? 0 : mt_dist_failed("reduce-scatter of the gradients", rc);
}

int mt_dist_allgather(void *w, mt_dtype dt, size_t n, int ranks)
{
    size_t esize = mt_dtype_size(dt);
    int *counts = mt_alloc_n(MT_OTHER, (size_t)ranks * 2, sizeof(int));
    if (!counts) return -1;
    int *displs = counts + ranks;
    for (int r = 0; r < ranks; r++) {
        size_t lo, cnt;
        mt_dist_shard(n, r, ranks, &lo, &cnt);
        if ((lo + cnt) * esize > (size_t)INT_MAX) {
            mt_free(counts);
            return mt_error("ZeRO-1: %zu parameters are too many for one MPI all-gather", n);
        }
        counts[r] = (int)(cnt * esize), displs[r] = (int)(lo * esize);
    }
    int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, w, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
    mt_free(counts);
    return rc == MPI_SUCCESS ? 0 : mt_dist_failed("all-gather of the parameters", rc);
}

int mt_dist_gather_range(const void *shard, mt_dtype dt, size_t off, size_t n, size_t total, void *dst,
                         size_t chunk)
{
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    size_t es = mt_dtype_size(dt), my_lo, my_n, step = chunk < (size_t)INT_MAX / es ? chunk : (size_t)INT_MAX / es;
    if (!step) step = 1;
    int *counts = mt_alloc_n(MT_OTHER, (size_t)ranks * 2, sizeof(int));
    if (!counts) return -1;
    int *displs = counts + ranks;
    mt_dist_shard(total, rank, ranks, &my_lo, &my_n);
    int rc = MPI_SUCCESS;
    for (size_t c = 0; c < n && rc == MPI_SUCCESS; c += step) {
        size_t k = n - c < step ? n - c : step, a = off + c, b = a + k, at = 0;
        for (int r = 0; r < ranks; r++) {
            size_t lo, cnt;
            mt_dist_shard(total, r, ranks, &lo, &cnt);
            size_t x = a > lo ? a : lo, y = b < lo + cnt ? b : lo + cnt;
            size_t got = x < y ? y - x : 0;
            counts[r] = (int)(got * es), displs[r] = (int)(at * es);
            at += got;
        }
        size_t x = a > my_lo ? a : my_lo;
        const char *mine = counts[rank] ? (const char *)shard + (x - my_lo) * es : (const char *)shard;
        rc = MPI_Allgatherv(mine, counts[rank], MPI_BYTE, (char *)dst + c * es, counts, displs, MPI_BYTE,
                            MPI_COMM_WORLD);
    }
    mt_free(counts);
    return rc == MPI_SUCCESS ? 0 : mt_dist_failed("all-gather of a layer's parameters", rc);
}

double mt_dist_sum(double v)
{
    double sum = v;
    MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum;
}

int mt_dist_max(int v)
{
    int max = v;
    MPI_Allreduce(&v, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return max;
}

int mt_dist_gather(const void *mine, void *all, size_t len)
{
    int rc = MPI_Gather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mt_dist_failed("gather", rc);
}

#else /* one process: every collective is the identity */

int mt_dist_start(int *argc, char ***argv, int *rank, int *ranks)
{
    (void)argc, (void)argv;
    *rank = 0, *ranks = 1;
    return 0;
}
void mt_dist_stop(void) {}
_Noreturn void mt_dist_abort(int code) { exit(code); }
int mt_dist_allgather(void *w, mt_dtype dt, size_t n, int ranks)
{
    (void)w, (void)dt, (void)n, (void)ranks;
    return 0;
}
int mt_dist_reduce_scatter_add(void *g, mt_dtype dt, size_t off, size_t n, size_t total, float *acc,
                               float *bucket, size_t bucket_n)
{
    (void)total, (void)bucket, (void)bucket_n;
    for (size_t i = 0; i < n; i++)
        acc[off + i] += mt_load1(g, dt, i);
    return 0;
}
int mt_dist_gather_range(const void *shard, mt_dtype dt, size_t off, size_t n, size_t total, void *dst,
                         size_t chunk)
{
    (void)total, (void)chunk;
    memcpy(dst, (const char *)shard + off * mt_dtype_size(dt), n * mt_dtype_size(dt));
    return 0;
}
double mt_dist_sum(double v) { return v; }
int mt_dist_max(int v) { return v; }
int mt_dist_gather(const void *mine, void *all, size_t len)
{
    memcpy(all, mine, len);
    return 0;
}

#endif
