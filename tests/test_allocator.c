/* test_allocator.c — the caching-allocator replay against the rules PyTorch's
 * c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch@001074d25084) states in
 * its own comments and constants: "all sizes are rounded to at least 512
 * bytes", "Small requests are packed into 2MB buffers", "requests between 1MB
 * and 10MB will allocate and split a 20MB block", "round up large allocations
 * to 2 MiB", a large block is split only when more than 1 MiB (kSmallSize)
 * remains, and Note [Expandable Segments]: "we use 2MiB pages for our small
 * pool and 20MiB pages for our large pool"; and (pytorch/pytorch@eb42ad6eca0c,
 * same file) "Once freed, blocks can be re-allocated on the same stream, but
 * not on any other stream", expandable segments making "one segment (per
 * stream)". Each expected value below is worked out by hand from those
 * sentences. */
#include "estimate/allocator.h"
#include "check.h"
#include "data/allocator_before.inc"

#define MiB 1048576.0

static void test_small_pool(void)
{
    alloc_sim *a = alloc_sim_new(false);
    alloc_sim_malloc(a, 100);
    alloc_stats s = alloc_sim_stats(a);
    CHECK(s.allocated == 512, "100 B is handed a 512 B block (got %.0f)", s.allocated);
    CHECK(s.reserved == 2 * MiB, "the first small request reserves a 2 MiB segment (got %.0f)", s.reserved);
    for (int i = 0; i < 4095; i++) alloc_sim_malloc(a, 512);
    s = alloc_sim_stats(a);
    CHECK(s.reserved == 2 * MiB && s.segments == 1, "4096 blocks of 512 B fill one 2 MiB segment (%ld segments)",
          s.segments);
    alloc_sim_malloc(a, 1);
    s = alloc_sim_stats(a);
    CHECK(s.reserved == 4 * MiB, "the 4097th opens a second segment (reserved %.0f)", s.reserved);
    alloc_sim_delete(a);
}

static void test_mid_sized(void)
{
    alloc_sim *a = alloc_sim_new(false);
    for (int i = 0; i < 13; i++) alloc_sim_malloc(a, 1.5 * MiB);
    alloc_stats s = alloc_sim_stats(a);
    /* 12 x 1.5 MiB leave 2 MiB (> 1 MiB: split); the 13th leaves 0.5 MiB, not
     * split off, so it holds the whole 2 MiB */
    CHECK(s.segments == 1 && s.reserved == 20 * MiB, "13 requests of 1.5 MiB share one 20 MiB segment (%ld, %.0f)",
          s.segments, s.reserved);
    CHECK(s.allocated == 20 * MiB, "the 13th block keeps the unsplittable 0.5 MiB (allocated %.0f)", s.allocated);
    alloc_sim_malloc(a, 1.5 * MiB);
    s = alloc_sim_stats(a);
    CHECK(s.segments == 2 && s.reserved == 40 * MiB, "the 14th opens another 20 MiB segment (%ld, %.0f)", s.segments,
          s.reserved);
    alloc_sim_delete(a);
}

static void test_large_and_reuse(void)
{
    alloc_sim *a = alloc_sim_new(false);
    int h = alloc_sim_malloc(a, 11 * MiB);
    alloc_stats s = alloc_sim_stats(a);
    CHECK(s.reserved == 12 * MiB, "11 MiB gets a segment rounded up to 2 MiB: 12 MiB (got %.0f)", s.reserved);
    alloc_sim_free(a, h);
    alloc_sim_malloc(a, 11 * MiB);
    s = alloc_sim_stats(a);
    CHECK(s.reserved == 12 * MiB && s.segments == 1, "the cached block serves the same request again (%ld segments)",
          s.segments);
    CHECK(s.allocated == 12 * MiB, "the 1 MiB left over is not split off (allocated %.0f)", s.allocated);
    alloc_sim_delete(a);

    /* a cached block smaller than the request cannot serve it: fragmentation */
    a = alloc_sim_new(false);
    h = alloc_sim_malloc(a, 10 * MiB);
    alloc_sim_free(a, h);
    alloc_sim_malloc(a, 11 * MiB);
    s = alloc_sim_stats(a);
    CHECK(s.reserved == 22 * MiB && s.allocated == 12 * MiB,
          "10 MiB cached, 11 MiB asked: 10 + 12 MiB reserved for 12 MiB in use (%.0f, %.0f)", s.reserved,
          s.allocated);
    CHECK(s.peak_reserved == 22 * MiB && s.peak_allocated == 12 * MiB, "peaks follow (%.0f, %.0f)",
          s.peak_reserved, s.peak_allocated);
    alloc_sim_delete(a);

    /* freed neighbours merge back into one block that serves a larger request */
    a = alloc_sim_new(false);
    int x = alloc_sim_malloc(a, 40 * MiB);
    alloc_sim_free(a, x);
    int p = alloc_sim_malloc(a, 16 * MiB), q = alloc_sim_malloc(a, 16 * MiB);
    alloc_sim_free(a, p);
    alloc_sim_free(a, q);
    alloc_sim_malloc(a, 40 * MiB);
    s = alloc_sim_stats(a);
    CHECK(s.reserved == 40 * MiB, "two freed halves merge with the rest: one 40 MiB segment (got %.0f)", s.reserved);
    alloc_sim_delete(a);
}

static void test_expandable(void)
{
    alloc_sim *n = alloc_sim_new(false), *e = alloc_sim_new(true);
    alloc_sim *both[2] = {n, e};
    for (int i = 0; i < 2; i++) {
        int big = alloc_sim_malloc(both[i], 30 * MiB);
        alloc_sim_malloc(both[i], 5 * MiB);
        alloc_sim_free(both[i], big);
        alloc_sim_malloc(both[i], 31 * MiB);
    }
    alloc_stats sn = alloc_sim_stats(n), se = alloc_sim_stats(e);
    /* native: 30 MiB segment, a 20 MiB one for 5 MiB, a 32 MiB one for 31 MiB */
    CHECK(sn.reserved == 82 * MiB, "native: 30 + 20 + 32 MiB (got %.0f)", sn.reserved);
    /* expandable: 30 MiB maps two 20 MiB pages; 5 MiB comes out of the 10 MiB
     * left; 31 MiB fits nowhere mapped, so the free 5 MiB at the end grows by
     * two more pages: 80 MiB mapped */
    CHECK(se.reserved == 80 * MiB, "expandable: four 20 MiB pages (got %.0f)", se.reserved);
    alloc_sim_free(e, alloc_sim_malloc(e, 100));
    CHECK(alloc_sim_stats(e).reserved == 82 * MiB, "expandable small pool maps a 2 MiB page (got %.0f)",
          alloc_sim_stats(e).reserved);
    alloc_sim_delete(n);
    alloc_sim_delete(e);
}

static void test_streams(void)
{
    for (int expandable = 0; expandable < 2; expandable++) {
        alloc_sim *a = alloc_sim_new(expandable);
        int side = alloc_sim_malloc_on(a, 40 * MiB, 1);
        alloc_sim_free(a, side);
        alloc_sim_malloc(a, 40 * MiB);
        alloc_stats s = alloc_sim_stats(a);
        CHECK(s.reserved == 80 * MiB, "%s: 40 MiB freed on a side stream does not serve the default stream "
              "(reserved %.0f)", expandable ? "expandable" : "native", s.reserved);
        alloc_sim_malloc_on(a, 40 * MiB, 1);
        s = alloc_sim_stats(a);
        CHECK(s.reserved == 80 * MiB, "%s: it serves its own stream again (reserved %.0f)",
              expandable ? "expandable" : "native", s.reserved);
        alloc_sim_delete(a);
    }
}

/* A small deterministic generator: the same calls on every run. */
static uint64_t rng_state = 0x2545f4914f6cdd1du;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static bool same_stats(alloc_stats s, ref_stats r)
{
    return s.allocated == r.allocated && s.reserved == r.reserved && s.peak_allocated == r.peak_allocated &&
           s.peak_reserved == r.peak_reserved && s.segments == r.segments && s.failed == r.failed;
}

/* The size-class index against the sorted array it replaced (the code before,
 * in data/allocator_before.inc), call by call: random requests of a few
 * recurring sizes (ties by address), of many odd sizes, small, mid-sized and
 * large, on four streams, freed in random order; native and expandable; and
 * a reset allocator against a new one. */
static void test_index_as_before(void)
{
    static const double sizes[] = {32 * MiB, 64 * MiB, 86 * MiB, 1.5 * MiB, 3 * MiB, 12 * MiB, 0.5 * MiB};
    alloc_sim *reused = alloc_sim_new(false);
    for (int run = 0; run < 24; run++) {
        const bool expandable = run % 2;
        alloc_sim *a = run < 12 ? alloc_sim_new(expandable) : reused;
        if (run >= 12) alloc_sim_reset(a, expandable);
        ref_sim *r = ref_sim_new(expandable);
        int ha[600], hr[600], n = 0, calls = 0, first_apart = -1;
        for (int step = 0; step < 4000; step++, calls++) {
            if (n > 0 && (n == 600 || rng() % 100 < 45)) {
                int i = (int)(rng() % (uint64_t)n);
                alloc_sim_free(a, ha[i]);
                ref_sim_free(r, hr[i]);
                ha[i] = ha[--n], hr[i] = hr[n];
            } else {
                uint64_t k = rng();
                double bytes = k % 3 ? sizes[k / 3 % 7] : (double)(k / 3 % (40u << 20)) + 1;
                int stream = (int)(k >> 40) % 4;
                ha[n] = alloc_sim_malloc_on(a, bytes, stream);
                hr[n] = ref_sim_malloc_on(r, bytes, stream);
                n++;
            }
            if (first_apart < 0 && !same_stats(alloc_sim_stats(a), ref_sim_stats(r))) first_apart = step;
        }
        CHECK(first_apart < 0, "run %d (%s%s): %d calls, the same figures as the sorted array after each (apart "
              "from call %d)", run, expandable ? "expandable" : "native", run >= 12 ? ", reset" : "", calls, first_apart);
        if (run < 12) alloc_sim_delete(a);
        ref_sim_delete(r);
    }
    alloc_sim_delete(reused);
}

int main(void)
{
    test_small_pool();
    test_mid_sized();
    test_large_and_reuse();
    test_expandable();
    test_streams();
    test_index_as_before();
    return check_summary();
}
