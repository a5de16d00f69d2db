/*
 * ring.c — the gradient all-reduce overlapped with the backward (see ring.h).
 *
 * One range is active at a time. Its n elements are cut into `ranks` chunks
 * (mt_dist_shard). Exchange s of the reduce-scatter sends chunk rank - s to the
 * right neighbour and adds the chunk rank - s - 1 the left one sends; after
 * ranks - 1 of them each rank holds the whole sum of chunk rank + 1. Exchange s
 * of the all-gather then sends chunk rank + 1 - s and receives chunk rank - s in
 * place. The chunk being sent is never the one being written, so an exchange
 * needs no copy of its send buffer.
 */
#include "ring.h"

#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "dist.h"

#ifdef MT_HAVE_MPI
#include <mpi.h>

/* ranges waiting for the active one; past this many it waits for the oldest */
#define RING_QUEUE 1024
/* Buckets: a range the backward announces extends a pending span it borders (the
 * same tensor of the layer above), and a span is queued once it holds
 * RING_FLUSH elements, or at the end: few exchanges of a useful size instead of
 * one per bias. Decided by the announced ranges alone, so every rank makes the
 * same spans; queued ranges are never merged, as when one starts depends on
 * timing, which differs between the ranks. */
#define RING_SPANS 64
#define RING_FLUSH ((size_t)1 << 16)

typedef struct range {
    char *g;
    size_t n;
} range;

static struct {
    mt_dtype dt;
    size_t es, bucket_n;
    float *stage, *recv;
    int rank, ranks;
    range queue[RING_QUEUE];
    size_t head, count;
    range span[RING_SPANS];  /* pending, oldest first */
    size_t nspans;
    /* the active range */
    bool active;
    range cur;
    float *data;          /* the fp32 elements being summed: stage, or cur.g itself */
    int step;             /* the exchange in flight, 0 .. 2 (ranks - 1) - 1 */
    MPI_Request req[2];
} ring;

static void chunk(int c, size_t *lo, size_t *n)
{
    int r = ((c % ring.ranks) + ring.ranks) % ring.ranks;
    mt_dist_shard(ring.cur.n, r, ring.ranks, lo, n);
}

/* Post exchange ring.step of the active range. */
static int post(void)
{
    int R = ring.ranks, s = ring.step, right = (ring.rank + 1) % R, left = (ring.rank + R - 1) % R;
    bool gather = s >= R - 1;
    int t = gather ? s - (R - 1) : s;
    size_t slo, sn, rlo, rn;
    chunk(gather ? ring.rank + 1 - t : ring.rank - t, &slo, &sn);
    chunk(gather ? ring.rank - t : ring.rank - t - 1, &rlo, &rn);
    float *into = gather ? ring.data + rlo : ring.recv;
    int rc = MPI_Irecv(into, (int)rn, MPI_FLOAT, left, 0, MPI_COMM_WORLD, &ring.req[0]);
    if (rc == MPI_SUCCESS) rc = MPI_Isend(ring.data + slo, (int)sn, MPI_FLOAT, right, 0, MPI_COMM_WORLD, &ring.req[1]);
    return rc == MPI_SUCCESS ? 0 : mt_dist_failed("exchange of the gradient all-reduce", rc);
}

/* The exchange in flight is done: add what came in (reduce-scatter), move on. */
static int complete_step(void)
{
    int R = ring.ranks;
    if (ring.step < R - 1) {
        size_t lo, n;
        chunk(ring.rank - ring.step - 1, &lo, &n);
        float *d = ring.data + lo;
        for (size_t i = 0; i < n; i++)
            d[i] += ring.recv[i];
    }
    if (++ring.step < 2 * (R - 1)) return post();
    if (ring.stage) mt_from_f32(ring.cur.g, ring.dt, ring.stage, ring.cur.n);
    ring.active = false;
    return 0;
}

/* The oldest queued range becomes the active one. */
static int start_next(void)
{
    ring.cur = ring.queue[ring.head];
    ring.head = (ring.head + 1) % RING_QUEUE, ring.count--;
    ring.active = true, ring.step = 0;
    if (ring.stage) {
        mt_to_f32(ring.stage, ring.cur.g, ring.dt, ring.cur.n);
        ring.data = ring.stage;
    } else {
        ring.data = (float *)ring.cur.g;
    }
    return post();
}

int mt_ring_setup(mt_dtype dt, float *stage, float *recv, size_t bucket_n)
{
    memset(&ring, 0, sizeof ring);
    ring.dt = dt, ring.es = mt_dtype_size(dt), ring.bucket_n = bucket_n ? bucket_n : 1;
    ring.stage = dt == MT_F32 ? NULL : stage, ring.recv = recv;
    MPI_Comm_rank(MPI_COMM_WORLD, &ring.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ring.ranks);
    return 0;
}

int mt_ring_progress(void)
{
    for (;;) {
        if (!ring.active) {
            if (!ring.count) return 0;
            if (start_next() != 0) return -1;
        }
        int done = 0;
        int rc = MPI_Testall(2, ring.req, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) return mt_dist_failed("exchange of the gradient all-reduce", rc);
        if (!done) return 0;
        if (complete_step() != 0) return -1;
    }
}

/* Block until the active range is summed. */
static int wait_active(void)
{
    while (ring.active) {
        int rc = MPI_Waitall(2, ring.req, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) return mt_dist_failed("exchange of the gradient all-reduce", rc);
        if (complete_step() != 0) return -1;
    }
    return 0;
}

/* A range into the FIFO of ranges to sum. */
static int enqueue(range r)
{
    while (ring.count == RING_QUEUE) /* full: the oldest must go first */
        if (wait_active() != 0 || mt_ring_progress() != 0) return -1;
    ring.queue[(ring.head + ring.count) % RING_QUEUE] = r;
    ring.count++;
    return 0;
}

/* Pending span i into the FIFO. */
static int flush_span(size_t i)
{
    range r = ring.span[i];
    memmove(&ring.span[i], &ring.span[i + 1], (ring.nspans - i - 1) * sizeof *ring.span);
    ring.nspans--;
    return enqueue(r);
}

/* A piece of at most bucket_n elements: into the span it borders, or a new one. */
static int add_piece(char *p, size_t k)
{
    size_t flush_at = RING_FLUSH < ring.bucket_n ? RING_FLUSH : ring.bucket_n;
    for (size_t i = 0; i < ring.nspans; i++) {
        range *s = &ring.span[i];
        if (s->n + k > ring.bucket_n) continue;
        if (p + k * ring.es == s->g) s->g = p, s->n += k;
        else if (s->g + s->n * ring.es == p) s->n += k;
        else continue;
        return s->n >= flush_at ? flush_span(i) : 0;
    }
    if (ring.nspans == RING_SPANS && flush_span(0) != 0) return -1;
    ring.span[ring.nspans++] = (range){p, k};
    return k >= flush_at ? flush_span(ring.nspans - 1) : 0;
}

int mt_ring_queue(void *g, size_t n)
{
    char *p = g;
    while (n) {
        size_t k = n < ring.bucket_n ? n : ring.bucket_n;
        if (add_piece(p, k) != 0) return -1;
        p += k * ring.es, n -= k;
    }
    return mt_ring_progress();
}

int mt_ring_finish(double *waited_s)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = 0;
    while (rc == 0 && ring.nspans)
        rc = flush_span(0);
    while (rc == 0 && (ring.active || ring.count)) {
        rc = mt_ring_progress();
        if (rc == 0) rc = wait_active();
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (waited_s) *waited_s = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    return rc;
}

#else /* one process: nothing to sum */

int mt_ring_setup(mt_dtype dt, float *stage, float *recv, size_t bucket_n)
{
    (void)dt, (void)stage, (void)recv, (void)bucket_n;
    return 0;
}
int mt_ring_queue(void *g, size_t n)
{
    (void)g, (void)n;
    return 0;
}
int mt_ring_progress(void) { return 0; }
int mt_ring_finish(double *waited_s)
{
    if (waited_s) *waited_s = 0;
    return 0;
}

#endif
