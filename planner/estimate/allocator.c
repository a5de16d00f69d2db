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

#define MIN_BLOCK   512.0
#define SMALL_SIZE  1048576.0   /* 1 MiB */
#define SMALL_BUF   2097152.0   /* 2 MiB */
#define LARGE_BUF   20971520.0  /* 20 MiB */
#define MIN_LARGE   10485760.0  /* 10 MiB */
#define ROUND_LARGE 2097152.0   /* 2 MiB */
/* expandable segments reserve address space for 1 1/8 of the card; any size far
 * above a run's needs behaves alike here */
#define ADDRESS_SPACE 1e15

typedef struct block {
    double ptr, size;
    int prev, next;     /* neighbours in the segment, -1 at its ends */
    int hpos;           /* cached: its place in its size class's heap; -1 otherwise */
    int pool;           /* 0 small, 1 large */
    int stream;
    bool allocated, mapped, live;
} block;

/* The cached blocks of a pool in PyTorch's order (BlockComparatorSize: size,
 * then address), kept as a size-class index: the distinct sizes sorted, each
 * with a min-heap of its blocks by address. Best fit is the request's own
 * size when a block of it is cached (found by a hash of the sizes), else a
 * binary search over the few sizes; a block goes in or out in O(log n). */
typedef struct hent {
    double ptr;
    int id;
} hent;

typedef struct sclass {
    double size;
    hent *h;            /* min-heap by ptr */
    int n, cap;
} sclass;

/* Classes live in slots that never move (their heaps stay with them when a
 * class is emptied and its slot reused); `order` lists the listed classes'
 * slots by size, `hash` finds a size's slot. A class emptied stays listed, as
 * the same sizes come back step after step; they are swept out when they
 * outnumber the others. */
typedef struct pool {
    sclass *slot;
    int nslot, capslot;
    int *spare_slot;    /* slots not listed */
    int nspare, capspare;
    int *order;         /* slots by size, ascending */
    int ncls, caporder;
    int nempty;
    int *hash;          /* slot + 1 by size, 0: none; hcap a power of two, at most half full */
    int hcap;
    int tail;           /* expandable: the segment's unmapped end, -1 before the first request */
} pool;

struct alloc_sim {
    bool expandable;
    block *b;
    int nb, capb;
    int *spare;         /* ids of deleted blocks, reused */
    int nspare, capspare;
    pool pools[ALLOC_STREAMS][2]; /* per stream: small, large */
    double next_ptr;
    alloc_stats st;
};

static bool grow(void **p, int *cap, int need, size_t elt)
{
    if (need <= *cap) return true;
    int n = *cap ? *cap * 2 : 64;
    while (n < need) n *= 2;
    void *q = realloc(*p, (size_t)n * elt);
    if (!q) return false;
    *p = q, *cap = n;
    return true;
}

static int new_block(alloc_sim *a, double ptr, double size, int pool_id, int stream)
{
    int id;
    if (a->nspare > 0) id = a->spare[--a->nspare];
    else {
        if (!grow((void **)&a->b, &a->capb, a->nb + 1, sizeof(block))) return -1;
        id = a->nb++;
    }
    a->b[id] = (block){.ptr = ptr, .size = size, .prev = -1, .next = -1, .hpos = -1, .pool = pool_id,
                       .stream = stream, .mapped = true, .live = true};
    return id;
}

static void delete_block(alloc_sim *a, int id)
{
    a->b[id].live = false;
    if (grow((void **)&a->spare, &a->capspare, a->nspare + 1, sizeof(int))) a->spare[a->nspare++] = id;
}

static unsigned size_hash(double size, int hcap)
{
    uint64_t v;
    memcpy(&v, &size, sizeof v);
    /* sizes are round numbers, their low bits zero: fold the high ones down */
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdu;
    v ^= v >> 33;
    return (unsigned)v & (unsigned)(hcap - 1);
}

/* The slot of the listed class of this size, or -1. */
static int class_of(const pool *p, double size)
{
    if (!p->hcap) return -1;
    for (unsigned i = size_hash(size, p->hcap);; i = (i + 1) & (unsigned)(p->hcap - 1)) {
        int e = p->hash[i];
        if (!e) return -1;
        if (p->slot[e - 1].size == size) return e - 1;
    }
}

static void hash_add(pool *p, int slot)
{
    unsigned i = size_hash(p->slot[slot].size, p->hcap);
    while (p->hash[i]) i = (i + 1) & (unsigned)(p->hcap - 1);
    p->hash[i] = slot + 1;
}

/* The hash again from the listed classes, with room for `want` of them. */
static bool hash_rebuild(pool *p, int want)
{
    int cap = p->hcap ? p->hcap : 64;
    while (cap < 2 * want) cap *= 2;
    if (cap != p->hcap) {
        int *h = realloc(p->hash, (size_t)cap * sizeof *h);
        if (!h) return false;
        p->hash = h, p->hcap = cap;
    }
    memset(p->hash, 0, (size_t)p->hcap * sizeof *p->hash);
    for (int i = 0; i < p->ncls; i++) hash_add(p, p->order[i]);
    return true;
}

/* The first listed class of at least `size` (lower_bound), as a place in
 * order; without branches on the comparisons, which a search over a handful
 * of sizes mispredicts */
static int class_at(const pool *p, double size)
{
    const int *base = p->order;
    int n = p->ncls;
    if (n == 0) return 0;
    while (n > 1) {
        int half = n / 2;
        base = p->slot[base[half - 1]].size < size ? base + half : base;
        n -= half;
    }
    return (int)(base - p->order) + (p->slot[*base].size < size);
}

static void heap_set(alloc_sim *a, sclass *c, int i, hent e)
{
    c->h[i] = e;
    a->b[e.id].hpos = i;
}

static void sift_up(alloc_sim *a, sclass *c, int i)
{
    hent e = c->h[i];
    while (i > 0) {
        int up = (i - 1) / 2;
        if (c->h[up].ptr <= e.ptr) break;
        heap_set(a, c, i, c->h[up]);
        i = up;
    }
    heap_set(a, c, i, e);
}

static void sift_down(alloc_sim *a, sclass *c, int i)
{
    hent e = c->h[i];
    for (;;) {
        int k = 2 * i + 1;
        if (k >= c->n) break;
        if (k + 1 < c->n && c->h[k + 1].ptr < c->h[k].ptr) k++;
        if (e.ptr <= c->h[k].ptr) break;
        heap_set(a, c, i, c->h[k]);
        i = k;
    }
    heap_set(a, c, i, e);
}

/* A class of its own for a size not listed yet: its slot, or -1. */
static int new_class(pool *p, double size)
{
    if (p->hcap < 2 * (p->ncls + 1) && !hash_rebuild(p, p->ncls + 1)) return -1;
    if (!grow((void **)&p->order, &p->caporder, p->ncls + 1, sizeof(int))) return -1;
    int slot;
    if (p->nspare > 0) slot = p->spare_slot[--p->nspare];
    else {
        if (!grow((void **)&p->slot, &p->capslot, p->nslot + 1, sizeof(sclass))) return -1;
        slot = p->nslot++;
        p->slot[slot] = (sclass){0};
    }
    p->slot[slot].size = size;
    p->slot[slot].n = 0;
    int at = class_at(p, size);
    memmove(p->order + at + 1, p->order + at, (size_t)(p->ncls - at) * sizeof *p->order);
    p->order[at] = slot;
    p->ncls++;
    p->nempty++;
    hash_add(p, slot);
    return slot;
}

static bool cache_insert(alloc_sim *a, int id)
{
    const block *k = &a->b[id];
    pool *p = &a->pools[k->stream][k->pool];
    int slot = class_of(p, k->size);
    if (slot < 0 && (slot = new_class(p, k->size)) < 0) return false;
    sclass *c = &p->slot[slot];
    if (!grow((void **)&c->h, &c->cap, c->n + 1, sizeof(hent))) return false;
    if (c->n == 0) p->nempty--;
    c->h[c->n++] = (hent){k->ptr, id};
    sift_up(a, c, c->n - 1);
    return true;
}

/* Empty classes out of the list; their slots wait for new sizes. */
static void sweep(pool *p)
{
    int kept = 0;
    for (int i = 0; i < p->ncls; i++) {
        int slot = p->order[i];
        if (p->slot[slot].n > 0) p->order[kept++] = slot;
        else if (grow((void **)&p->spare_slot, &p->capspare, p->nspare + 1, sizeof(int)))
            p->spare_slot[p->nspare++] = slot;
        /* else the slot is lost to reuse, not to the index */
    }
    p->ncls = kept;
    p->nempty = 0;
    hash_rebuild(p, kept); /* same capacity or less: cannot fail */
}

/* The first listed class from place i of order on that holds a block. */
static int nonempty_from(const pool *p, int i)
{
    while (i < p->ncls && p->slot[p->order[i]].n == 0) i++;
    return i;
}

/* Takes block id, of the class in `slot` of its pool, out of the cache. */
static void cache_remove_from(alloc_sim *a, int id, int slot)
{
    block *k = &a->b[id];
    pool *p = &a->pools[k->stream][k->pool];
    sclass *c = &p->slot[slot];
    int i = k->hpos;
    k->hpos = -1;
    if (--c->n == 0) {
        if (++p->nempty > 8 && 2 * p->nempty > p->ncls) sweep(p);
        return;
    }
    if (i == c->n) return; /* it was the last entry */
    heap_set(a, c, i, c->h[c->n]); /* the last entry fills the hole, then moves up or down */
    if (i > 0 && c->h[i].ptr < c->h[(i - 1) / 2].ptr) sift_up(a, c, i);
    else sift_down(a, c, i);
}

/* Takes block id out of the cache; a no-op when it is not cached. */
static void cache_remove(alloc_sim *a, int id)
{
    const block *k = &a->b[id];
    if (k->hpos >= 0) cache_remove_from(a, id, class_of(&a->pools[k->stream][k->pool], k->size));
}

static double expandable_size(const alloc_sim *a, int id)
{
    const block *k = &a->b[id];
    return k->size + (k->next >= 0 && !a->b[k->next].mapped ? a->b[k->next].size : 0);
}

/* The next cached block after id (in the class at place ci of order) in
 * (size, address) order, -1 at the end; *cj its class's place. A scan of the
 * class: only the expandable walk asks. */
static int successor(const alloc_sim *a, const pool *p, int ci, int id, int *cj)
{
    const sclass *c = &p->slot[p->order[ci]];
    double at = a->b[id].ptr;
    int best = -1;
    for (int i = 0; i < c->n; i++)
        if (c->h[i].ptr > at && (best < 0 || c->h[i].ptr < c->h[best].ptr)) best = i;
    if (best >= 0) {
        *cj = ci;
        return c->h[best].id;
    }
    if ((ci = nonempty_from(p, ci + 1)) >= p->ncls) return -1;
    *cj = ci;
    return p->slot[p->order[ci]].h[0].id;
}

static int get_free_block(alloc_sim *a, pool *p, double size)
{
    if (!a->expandable) { /* best fit: the request's own size when one is cached */
        int slot = class_of(p, size);
        if (slot >= 0 && p->slot[slot].n > 0) {
            int id = p->slot[slot].h[0].id;
            cache_remove_from(a, id, slot);
            return id;
        }
    }
    int ci = nonempty_from(p, class_at(p, size));
    if (ci >= p->ncls) return -1;
    int id = p->slot[p->order[ci]].h[0].id;
    /* expandable: walk on while the next candidate could grow less. A block
     * can grow only past its own size (unmapped space after it), and every
     * later candidate is at least as large, so the walk moves only from one
     * that can grow. */
    while (a->expandable) {
        double here = expandable_size(a, id);
        if (here == a->b[id].size) break;
        int cj, next = successor(a, p, ci, id, &cj);
        if (next < 0 || !(expandable_size(a, next) < here)) break;
        id = next, ci = cj;
    }
    cache_remove_from(a, id, p->order[ci]);
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

static void note_reserved(alloc_sim *a, double bytes)
{
    a->st.reserved += bytes;
    a->st.segments++;
    if (a->st.reserved > a->st.peak_reserved) a->st.peak_reserved = a->st.reserved;
}

/* Map `size` bytes (whole pages) at the start of the unmapped block `u`. */
static int map_pages(alloc_sim *a, int u, double size)
{
    block *k = &a->b[u];
    const double page = k->pool == 0 ? SMALL_BUF : LARGE_BUF;
    double mapped = page * (double)(long long)((size + page - 1) / page);
    if (mapped < k->size) { /* the rest stays unmapped */
        int rest = new_block(a, k->ptr + mapped, k->size - mapped, k->pool, k->stream);
        if (rest < 0) return -1;
        k = &a->b[u];
        a->b[rest].mapped = false;
        a->b[rest].prev = u;
        a->b[rest].next = k->next;
        if (k->next >= 0) a->b[k->next].prev = rest;
        k->next = rest;
        k->size = mapped;
        a->pools[k->stream][k->pool].tail = rest;
    }
    k->mapped = true;
    note_reserved(a, mapped);
    try_merge(a, u, a->b[u].prev);
    return u;
}

/* expandable: a block of at least `size` from the segment's end (mapping pages). */
static int expand(alloc_sim *a, int pool_id, int stream, double size)
{
    pool *p = &a->pools[stream][pool_id];
    if (p->tail < 0) {
        p->tail = new_block(a, a->next_ptr, ADDRESS_SPACE, pool_id, stream);
        if (p->tail < 0) return -1;
        a->b[p->tail].mapped = false;
        a->next_ptr += 2 * ADDRESS_SPACE;
    }
    int tail = p->tail, prev = a->b[tail].prev;
    double have = 0;
    if (prev >= 0 && !a->b[prev].allocated) { /* a free block right before the unmapped space */
        have = a->b[prev].size;
        cache_remove(a, prev);
    }
    return map_pages(a, tail, size - have);
}

/* native: a new segment (cudaMalloc). */
static int new_segment(alloc_sim *a, int pool_id, int stream, double size)
{
    double seg = pool_id == 0 ? SMALL_BUF
               : size < MIN_LARGE ? LARGE_BUF
               : ROUND_LARGE * (double)(long long)((size + ROUND_LARGE - 1) / ROUND_LARGE);
    int id = new_block(a, a->next_ptr, seg, pool_id, stream);
    if (id < 0) return -1;
    a->next_ptr += seg + LARGE_BUF; /* segments never border each other */
    note_reserved(a, seg);
    return id;
}

static bool should_split(const alloc_sim *a, const block *k, double size)
{
    double remaining = k->size - size;
    if (k->pool == 0 || a->expandable) return remaining >= MIN_BLOCK;
    return remaining > SMALL_SIZE;
}

int alloc_sim_malloc(alloc_sim *a, double bytes)
{
    return alloc_sim_malloc_on(a, bytes, 0);
}

int alloc_sim_malloc_on(alloc_sim *a, double bytes, int stream)
{
    if (stream < 0 || stream >= ALLOC_STREAMS) stream = 0;
    double size = bytes < MIN_BLOCK ? MIN_BLOCK : MIN_BLOCK * (double)(long long)((bytes + MIN_BLOCK - 1) / MIN_BLOCK);
    int pool_id = size <= SMALL_SIZE ? 0 : 1;
    pool *p = &a->pools[stream][pool_id];
    int id = get_free_block(a, p, size);
    if (id < 0) id = a->expandable ? expand(a, pool_id, stream, size) : new_segment(a, pool_id, stream, size);
    if (id < 0) {
        a->st.failed = true;
        return -1;
    }
    if (should_split(a, &a->b[id], size)) { /* the front is handed out, the rest stays cached */
        int used = new_block(a, a->b[id].ptr, size, pool_id, stream);
        if (used < 0) {
            a->st.failed = true;
            return -1;
        }
        block *rest = &a->b[id], *u = &a->b[used];
        u->prev = rest->prev;
        if (u->prev >= 0) a->b[u->prev].next = used;
        u->next = id;
        rest->prev = used;
        rest->ptr += size;
        rest->size -= size;
        if (!cache_insert(a, id)) a->st.failed = true;
        id = used;
    }
    a->b[id].allocated = true;
    a->st.allocated += a->b[id].size;
    if (a->st.allocated > a->st.peak_allocated) a->st.peak_allocated = a->st.allocated;
    return id;
}

void alloc_sim_free(alloc_sim *a, int id)
{
    if (id < 0 || id >= a->nb || !a->b[id].live || !a->b[id].allocated) return;
    block *k = &a->b[id];
    k->allocated = false;
    a->st.allocated -= k->size;
    try_merge(a, id, a->b[id].prev);
    try_merge(a, id, a->b[id].next);
    if (!cache_insert(a, id)) a->st.failed = true;
}

alloc_sim *alloc_sim_new(bool expandable)
{
    alloc_sim *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->expandable = expandable;
    for (int k = 0; k < ALLOC_STREAMS; k++) a->pools[k][0].tail = a->pools[k][1].tail = -1;
    a->next_ptr = 1 << 20;
    return a;
}

void alloc_sim_reset(alloc_sim *a, bool expandable)
{
    for (int k = 0; k < ALLOC_STREAMS; k++)
        for (int q = 0; q < 2; q++) {
            pool *p = &a->pools[k][q];
            p->nspare = 0;
            if (grow((void **)&p->spare_slot, &p->capspare, p->nslot, sizeof(int)))
                for (int i = p->nslot - 1; i >= 0; i--) p->spare_slot[p->nspare++] = i;
            else { /* no room to list them spare: let them go */
                for (int c = 0; c < p->nslot; c++) free(p->slot[c].h);
                p->nslot = 0;
            }
            p->ncls = p->nempty = 0;
            if (p->hcap) memset(p->hash, 0, (size_t)p->hcap * sizeof *p->hash);
            p->tail = -1;
        }
    a->expandable = expandable;
    a->nb = a->nspare = 0;
    a->next_ptr = 1 << 20;
    a->st = (alloc_stats){0};
}

int alloc_sim_blocks(const alloc_sim *a)
{
    return a->capb;
}

void alloc_sim_delete(alloc_sim *a)
{
    if (!a) return;
    free(a->b);
    free(a->spare);
    for (int k = 0; k < ALLOC_STREAMS; k++)
        for (int q = 0; q < 2; q++) {
            pool *p = &a->pools[k][q];
            for (int c = 0; c < p->nslot; c++) free(p->slot[c].h);
            free(p->slot), free(p->spare_slot), free(p->order), free(p->hash);
        }
    free(a);
}

alloc_stats alloc_sim_stats(const alloc_sim *a)
{
    return a->st;
}
