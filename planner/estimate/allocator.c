/* allocator.c — PyTorch's CUDA caching allocator, rule by rule.
 *
 * The rules are c10/cuda/CUDACachingAllocator.cpp's (pytorch/pytorch@001074d25084,
 * the native allocator, default settings: no max_split_size, no
 * roundup_power2_divisions, no garbage collection threshold):
 *   streams              a block belongs to the stream it was allocated on and, once
 *                        freed, serves only requests on that stream ("Once freed, blocks
 *                        can be re-allocated on the same stream, but not on any other
 *                        stream", pytorch/pytorch@eb42ad6eca0c, same file): each stream
 *                        has its own two pools here
 *   round_size           every request rounds up to a multiple of 512 B (kMinBlockSize)
 *   get_pool             requests up to 1 MiB (kSmallSize) go to the small pool, larger to the large one
 *   get_free_block       the smallest cached block of the pool that holds the request,
 *                        the lowest address among equals (BlockComparatorSize)
 *   get_allocation_size  with none, a new segment: 2 MiB (kSmallBuffer) for the small
 *                        pool, 20 MiB (kLargeBuffer) below 10 MiB (kMinLargeAlloc),
 *                        else the request rounded up to 2 MiB (kRoundLarge)
 *   should_split         the remainder of a block becomes a cached block of its own when
 *                        it is at least 512 B (small pool) or more than 1 MiB (large pool)
 *   free_block           a freed block merges with free neighbours of its segment
 * Segments are never returned: without an out-of-memory retry (release_cached_blocks)
 * the cache only grows, so the reserved high-water mark is the one a run reaches
 * on a card large enough for it.
 *
 * expandable_segments:True (Note [Expandable Segments], same file): one segment
 * per pool whose address space is mapped on demand in pages of 2 MiB (small pool)
 * or 20 MiB (large pool) (find_expandable_block: segment_size); a request no
 * cached block holds maps pages at the end of the segment, joined to the free
 * block before them (try_allocate_expandable_block, map_block); every remainder
 * of at least 512 B is split off (should_split); best fit counts a free block
 * that borders unmapped space as large as it could grow (get_free_block). */
#include "estimate/allocator.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Sizes and addresses are whole bytes (multiples of 512): integers, exact as
 * the doubles of the interface are below 2^53. */
#define MIN_BLOCK   512
#define SMALL_SIZE  1048576     /* 1 MiB */
#define SMALL_BUF   2097152     /* 2 MiB */
#define LARGE_BUF   20971520    /* 20 MiB */
#define MIN_LARGE   10485760    /* 10 MiB */
#define ROUND_LARGE 2097152     /* 2 MiB */
/* expandable segments reserve address space for 1 1/8 of the card; any size far
 * above a run's needs behaves alike here */
#define ADDRESS_SPACE INT64_C(1000000000000000)

typedef struct block {
    int64_t ptr, size;
    int prev, next;     /* neighbours in the segment, -1 at its ends; next: the spare list when deleted */
    int slot;           /* cached: its size class's slot; -1 otherwise */
    int hpos;           /* cached: its place in that class's heap */
    unsigned char pi;   /* its pool: 2 * stream + (0 small, 1 large) */
    bool allocated, mapped;
} block;

/* The cached blocks of a pool in PyTorch's order (BlockComparatorSize: size,
 * then address), kept as a size-class index: the distinct sizes sorted, each
 * with a min-heap of its blocks by address. Best fit is a binary search over
 * the few sizes; a block goes in or out in O(log n), and out without a search
 * (it knows its class). */
typedef struct hent {
    int64_t ptr;
    int id;
} hent;

typedef struct sclass {
    hent *h;            /* min-heap by ptr */
    int n, cap;
    int pi;             /* its pool */
} sclass;

/* The slots of recently looked-up sizes, direct-mapped: most lookups are of
 * a few sizes. An entry is dropped when its class leaves the list. */
#define MEMO_BITS 6
typedef struct memo {
    int64_t size;       /* 0: none */
    int slot;
} memo;

/* Classes live in slots that never move (their heaps stay with them when a
 * class is emptied and its slot reused), shared by the pools; a pool's
 * `size` and `order` list its classes' sizes and slots, ascending. A class
 * emptied stays listed, as the same sizes come back step after step; they
 * are swept out when they outnumber the others. */
typedef struct pool {
    int64_t *size;      /* listed classes' sizes, ascending */
    int *order;         /* their slots */
    int ncls, capsize, caporder;
    int nempty;
    memo memo[1 << MEMO_BITS];
    int tail;           /* expandable: the segment's unmapped end, -1 before the first request */
} pool;

#define NPOOL (2 * ALLOC_STREAMS)

struct alloc_sim {
    bool expandable;
    block *b;
    int nb, capb;
    int spare;          /* a deleted block, chained through next; -1: none */
    sclass *slot;
    int nslot, capslot;
    int *spare_slot;    /* slots not listed */
    int nspare, capspare;
    pool pools[NPOOL];  /* per stream: small, large */
    int64_t next_ptr;
    int64_t allocated, reserved, peak_allocated, peak_reserved;
    long segments;
    bool failed;
};

/* Room for `need`; out of line, as the hot paths seldom grow. */
__attribute__((noinline)) static bool grow_to(void **p, int *cap, int need, size_t elt)
{
    int n = *cap ? *cap * 2 : 64;
    while (n < need) n *= 2;
    void *q = realloc(*p, (size_t)n * elt);
    if (!q) return false;
    *p = q, *cap = n;
    return true;
}

static inline bool grow(void **p, int *cap, int need, size_t elt)
{
    return need <= *cap || grow_to(p, cap, need, elt);
}

static int new_block(alloc_sim *a, int64_t ptr, int64_t size, int pi)
{
    int id = a->spare;
    if (id >= 0) a->spare = a->b[id].next;
    else {
        if (a->nb == a->capb && !grow((void **)&a->b, &a->capb, a->nb + 1, sizeof(block))) return -1;
        id = a->nb++;
    }
    a->b[id] = (block){.ptr = ptr, .size = size, .prev = -1, .next = -1, .slot = -1, .pi = (unsigned char)pi,
                       .mapped = true};
    return id;
}

/* Deleted blocks are never allocated: a stale handle's free is a no-op. */
static void delete_block(alloc_sim *a, int id)
{
    a->b[id].allocated = false;
    a->b[id].slot = -1;
    a->b[id].next = a->spare;
    a->spare = id;
}

/* The first listed class of at least `size` (lower_bound), as a place in
 * order; without branches on the comparisons, which a search over a handful
 * of sizes mispredicts */
static inline int class_at(const pool *p, int64_t size)
{
    const int64_t *base = p->size;
    int n = p->ncls;
    if (n == 0) return 0;
    while (n > 1) {
        int half = n / 2;
        base = base[half - 1] < size ? base + half : base;
        n -= half;
    }
    return (int)(base - p->size) + (*base < size);
}

static inline unsigned memo_at(int64_t size)
{
    return (unsigned)(((uint64_t)size * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - MEMO_BITS));
}


static inline void heap_set(alloc_sim *a, hent *h, int i, hent e)
{
    h[i] = e;
    a->b[e.id].hpos = i;
}

/* Puts e in the hole at i, moving it up past larger parents. */
static inline void sift_up(alloc_sim *a, hent *h, int i, hent e)
{
    while (i > 0) {
        int up = (i - 1) / 2;
        if (h[up].ptr <= e.ptr) break;
        heap_set(a, h, i, h[up]);
        i = up;
    }
    heap_set(a, h, i, e);
}

/* Puts e in the hole at i, moving it down past smaller children. */
static inline void sift_down(alloc_sim *a, hent *h, int n, int i, hent e)
{
    for (;;) {
        int k = 2 * i + 1;
        if (k >= n) break;
        if (k + 1 < n && h[k + 1].ptr < h[k].ptr) k++;
        if (e.ptr <= h[k].ptr) break;
        heap_set(a, h, i, h[k]);
        i = k;
    }
    heap_set(a, h, i, e);
}

/* The slot of the class of this size, listed now if it was not; -1 when out
 * of memory. Out of line: the memo answers most. */
__attribute__((noinline)) static int class_of(alloc_sim *a, pool *p, int64_t size)
{
    memo *m = &p->memo[memo_at(size)];
    int at = class_at(p, size);
    if (at < p->ncls && p->size[at] == size) {
        *m = (memo){size, p->order[at]};
        return m->slot;
    }
    if (!grow((void **)&p->order, &p->caporder, p->ncls + 1, sizeof(int)) ||
        !grow((void **)&p->size, &p->capsize, p->ncls + 1, sizeof(int64_t)))
        return -1;
    int slot;
    if (a->nspare > 0) slot = a->spare_slot[--a->nspare];
    else {
        if (!grow((void **)&a->slot, &a->capslot, a->nslot + 1, sizeof(sclass))) return -1;
        slot = a->nslot++;
        a->slot[slot] = (sclass){0};
    }
    a->slot[slot].n = 0;
    a->slot[slot].pi = (int)(p - a->pools);
    *m = (memo){size, slot};
    memmove(p->order + at + 1, p->order + at, (size_t)(p->ncls - at) * sizeof *p->order);
    memmove(p->size + at + 1, p->size + at, (size_t)(p->ncls - at) * sizeof *p->size);
    p->order[at] = slot;
    p->size[at] = size;
    p->ncls++;
    p->nempty++;
    return slot;
}

static inline bool cache_insert(alloc_sim *a, int id)
{
    block *k = &a->b[id];
    pool *p = &a->pools[k->pi];
    const memo *m = &p->memo[memo_at(k->size)];
    int slot = m->size == k->size ? m->slot : class_of(a, p, k->size);
    if (slot < 0) return false;
    sclass *c = &a->slot[slot];
    if (c->n == c->cap && !grow((void **)&c->h, &c->cap, c->n + 1, sizeof(hent))) return false;
    if (c->n == 0) p->nempty--;
    k->slot = slot;
    sift_up(a, c->h, c->n++, (hent){k->ptr, id});
    return true;
}

/* Empty classes out of the list; their slots wait for new sizes. */
__attribute__((noinline)) static void sweep(alloc_sim *a, pool *p)
{
    int kept = 0;
    for (int i = 0; i < p->ncls; i++) {
        int slot = p->order[i];
        if (a->slot[slot].n > 0) p->order[kept] = slot, p->size[kept++] = p->size[i];
        else {
            memo *m = &p->memo[memo_at(p->size[i])];
            if (m->size == p->size[i]) m->size = 0;
            if (grow((void **)&a->spare_slot, &a->capspare, a->nspare + 1, sizeof(int)))
                a->spare_slot[a->nspare++] = slot;
            /* else the slot is lost to reuse, not to the index */
        }
    }
    p->ncls = kept;
    p->nempty = 0;
}

/* The first listed class from place i of order on that holds a block. */
static inline int nonempty_from(const alloc_sim *a, const pool *p, int i)
{
    while (i < p->ncls && a->slot[p->order[i]].n == 0) i++;
    return i;
}

/* Takes the cached block id out of the cache. */
static void cache_remove_cached(alloc_sim *a, int id)
{
    block *k = &a->b[id];
    sclass *c = &a->slot[k->slot];
    int i = k->hpos;
    k->slot = -1;
    if (--c->n == 0) {
        pool *p = &a->pools[c->pi];
        if (++p->nempty > 8 && 2 * p->nempty > p->ncls) sweep(a, p);
        return;
    }
    if (i == c->n) return; /* it was the last entry */
    hent e = c->h[c->n];   /* the last entry fills the hole, moving up or down */
    if (i > 0 && e.ptr < c->h[(i - 1) / 2].ptr) sift_up(a, c->h, i, e);
    else sift_down(a, c->h, c->n, i, e);
}

/* Takes block id out of the cache; a no-op when it is not cached. */
static inline void cache_remove(alloc_sim *a, int id)
{
    if (a->b[id].slot >= 0) cache_remove_cached(a, id);
}

static int64_t expandable_size(const alloc_sim *a, int id)
{
    const block *k = &a->b[id];
    return k->size + (k->next >= 0 && !a->b[k->next].mapped ? a->b[k->next].size : 0);
}

/* The next cached block after id (in the class at place ci of order) in
 * (size, address) order, -1 at the end; *cj its class's place. A scan of the
 * class: only the expandable walk asks. */
static int successor(const alloc_sim *a, const pool *p, int ci, int id, int *cj)
{
    const sclass *c = &a->slot[p->order[ci]];
    int64_t at = a->b[id].ptr;
    int best = -1;
    for (int i = 0; i < c->n; i++)
        if (c->h[i].ptr > at && (best < 0 || c->h[i].ptr < c->h[best].ptr)) best = i;
    if (best >= 0) {
        *cj = ci;
        return c->h[best].id;
    }
    if ((ci = nonempty_from(a, p, ci + 1)) >= p->ncls) return -1;
    *cj = ci;
    return a->slot[p->order[ci]].h[0].id;
}

static int get_free_block(alloc_sim *a, pool *p, int64_t size)
{
    if (!a->expandable) { /* best fit: the request's own size when one is cached */
        const memo *m = &p->memo[memo_at(size)];
        if (m->size == size && a->slot[m->slot].n > 0) {
            int id = a->slot[m->slot].h[0].id;
            cache_remove_cached(a, id);
            return id;
        }
    }
    int ci = nonempty_from(a, p, class_at(p, size));
    if (ci >= p->ncls) return -1;
    int id = a->slot[p->order[ci]].h[0].id;
    /* expandable: walk on while the next candidate could grow less. A block
     * can grow only past its own size (unmapped space after it), and every
     * later candidate is at least as large, so the walk moves only from one
     * that can grow. */
    while (a->expandable) {
        int64_t here = expandable_size(a, id);
        if (here == a->b[id].size) break;
        int cj, next = successor(a, p, ci, id, &cj);
        if (next < 0 || !(expandable_size(a, next) < here)) break;
        id = next, ci = cj;
    }
    cache_remove_cached(a, id);
    return id;
}

/* Merge src into dst when src is a cached block of the same kind (try_merge_blocks). */
static void try_merge(alloc_sim *a, int dst, int src)
{
    if (src < 0) return;
    block *d = &a->b[dst], *s = &a->b[src];
    if (s->allocated || !s->mapped || !d->mapped) return; /* unmapped space is never merged here */
    cache_remove(a, src);
    if (d->prev == src) {
        d->ptr = s->ptr;
        d->prev = s->prev;
        if (d->prev >= 0) a->b[d->prev].next = dst;
    } else {
        d->next = s->next;
        if (d->next >= 0) a->b[d->next].prev = dst;
    }
    d->size += s->size;
    delete_block(a, src);
}

static void note_reserved(alloc_sim *a, int64_t bytes)
{
    a->reserved += bytes;
    a->segments++;
    if (a->reserved > a->peak_reserved) a->peak_reserved = a->reserved;
}

/* Map `size` bytes (whole pages) at the start of the unmapped block `u`. */
static int map_pages(alloc_sim *a, int u, int64_t size)
{
    block *k = &a->b[u];
    const int64_t page = (k->pi & 1) == 0 ? SMALL_BUF : LARGE_BUF;
    int64_t mapped = page * ((size + page - 1) / page);
    if (mapped < k->size) { /* the rest stays unmapped */
        int rest = new_block(a, k->ptr + mapped, k->size - mapped, k->pi);
        if (rest < 0) return -1;
        k = &a->b[u];
        a->b[rest].mapped = false;
        a->b[rest].prev = u;
        a->b[rest].next = k->next;
        if (k->next >= 0) a->b[k->next].prev = rest;
        k->next = rest;
        k->size = mapped;
        a->pools[k->pi].tail = rest;
    }
    k->mapped = true;
    note_reserved(a, mapped);
    try_merge(a, u, a->b[u].prev);
    return u;
}

/* expandable: a block of at least `size` from the segment's end (mapping pages). */
static int expand(alloc_sim *a, int pi, int64_t size)
{
    pool *p = &a->pools[pi];
    if (p->tail < 0) {
        p->tail = new_block(a, a->next_ptr, ADDRESS_SPACE, pi);
        if (p->tail < 0) return -1;
        a->b[p->tail].mapped = false;
        a->next_ptr += 2 * ADDRESS_SPACE;
    }
    int tail = p->tail, prev = a->b[tail].prev;
    int64_t have = 0;
    if (prev >= 0 && !a->b[prev].allocated) { /* a free block right before the unmapped space */
        have = a->b[prev].size;
        cache_remove(a, prev);
    }
    return map_pages(a, tail, size - have);
}

/* native: a new segment (cudaMalloc). */
static int new_segment(alloc_sim *a, int pi, int64_t size)
{
    int64_t seg = (pi & 1) == 0 ? SMALL_BUF
                : size < MIN_LARGE ? LARGE_BUF
                : ROUND_LARGE * ((size + ROUND_LARGE - 1) / ROUND_LARGE);
    int id = new_block(a, a->next_ptr, seg, pi);
    if (id < 0) return -1;
    a->next_ptr += seg + LARGE_BUF; /* segments never border each other */
    note_reserved(a, seg);
    return id;
}

static inline bool should_split(const alloc_sim *a, const block *k, int64_t size)
{
    int64_t remaining = k->size - size;
    if ((k->pi & 1) == 0 || a->expandable) return remaining >= MIN_BLOCK;
    return remaining > SMALL_SIZE;
}

int alloc_sim_malloc(alloc_sim *a, double bytes)
{
    return alloc_sim_malloc_on(a, bytes, 0);
}

int alloc_sim_malloc_on(alloc_sim *a, double bytes, int stream)
{
    if (stream < 0 || stream >= ALLOC_STREAMS) stream = 0;
    /* round_size in doubles, as the request comes: the same whole number */
    int64_t size = bytes < MIN_BLOCK ? MIN_BLOCK : MIN_BLOCK * (int64_t)((bytes + MIN_BLOCK - 1) / MIN_BLOCK);
    int pi = 2 * stream + (size <= SMALL_SIZE ? 0 : 1);
    int id = get_free_block(a, &a->pools[pi], size);
    if (id < 0) id = a->expandable ? expand(a, pi, size) : new_segment(a, pi, size);
    if (id < 0) {
        a->failed = true;
        return -1;
    }
    if (should_split(a, &a->b[id], size)) { /* the front is handed out, the rest stays cached */
        int used = new_block(a, a->b[id].ptr, size, pi);
        if (used < 0) {
            a->failed = true;
            return -1;
        }
        block *rest = &a->b[id], *u = &a->b[used];
        u->prev = rest->prev;
        if (u->prev >= 0) a->b[u->prev].next = used;
        u->next = id;
        rest->prev = used;
        rest->ptr += size;
        rest->size -= size;
        if (!cache_insert(a, id)) a->failed = true;
        id = used;
    }
    a->b[id].allocated = true;
    a->allocated += a->b[id].size;
    if (a->allocated > a->peak_allocated) a->peak_allocated = a->allocated;
    return id;
}

void alloc_sim_free(alloc_sim *a, int id)
{
    if (id < 0 || id >= a->nb || !a->b[id].allocated) return;
    block *k = &a->b[id];
    k->allocated = false;
    a->allocated -= k->size;
    try_merge(a, id, k->prev);
    try_merge(a, id, a->b[id].next);
    if (!cache_insert(a, id)) a->failed = true;
}

alloc_sim *alloc_sim_new(bool expandable)
{
    alloc_sim *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    alloc_sim_reset(a, expandable);
    return a;
}

void alloc_sim_reset(alloc_sim *a, bool expandable)
{
    a->nspare = 0;
    if (grow((void **)&a->spare_slot, &a->capspare, a->nslot, sizeof(int)))
        for (int i = a->nslot - 1; i >= 0; i--) a->spare_slot[a->nspare++] = i;
    else { /* no room to list them spare: let them go */
        for (int c = 0; c < a->nslot; c++) free(a->slot[c].h);
        a->nslot = 0;
    }
    for (int q = 0; q < NPOOL; q++) {
        pool *p = &a->pools[q];
        p->ncls = p->nempty = 0;
        memset(p->memo, 0, sizeof p->memo);
        p->tail = -1;
    }
    a->expandable = expandable;
    a->nb = 0;
    a->spare = -1;
    a->next_ptr = 1 << 20;
    a->allocated = a->reserved = a->peak_allocated = a->peak_reserved = 0;
    a->segments = 0;
    a->failed = false;
}

int alloc_sim_blocks(const alloc_sim *a)
{
    return a->capb;
}

void alloc_sim_delete(alloc_sim *a)
{
    if (!a) return;
    free(a->b);
    for (int c = 0; c < a->nslot; c++) free(a->slot[c].h);
    free(a->slot), free(a->spare_slot);
    for (int q = 0; q < NPOOL; q++) free(a->pools[q].size), free(a->pools[q].order);
    free(a);
}

alloc_stats alloc_sim_stats(const alloc_sim *a)
{
    return (alloc_stats){.allocated = (double)a->allocated, .reserved = (double)a->reserved,
                         .peak_allocated = (double)a->peak_allocated, .peak_reserved = (double)a->peak_reserved,
                         .segments = a->segments, .failed = a->failed};
}
