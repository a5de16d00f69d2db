/*
 * alloc.c — the accounting allocator (see alloc.h).
 *
 * Block layout: [64-byte header][user bytes], from posix_memalign(64, ...), so
 * the user pointer is 64-byte aligned too.
 */
#include "alloc.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memtrain/memtrain_inventory.h"

#define MAX_BYTES ((size_t)1 << 46)
#define HUGE_ALIGN ((size_t)2 << 20)
#define HUGE_MIN ((size_t)4 << 20)
#define MAGIC_LIVE 0x6d746c697665ULL /* "mtlive" */
#define MAGIC_FREE 0x6d7466726565ULL /* "mtfree" */

typedef struct header {
    uint64_t magic;
    size_t bytes;
    int tag;
    struct header *next; /* reuse-cache link while cached */
} header;

_Static_assert(sizeof(header) <= MT_ALIGN, "header must fit in one alignment unit");

static mt_mem_stats st;
static header *cache_head;
static bool cache_off;
static char last_err[MT_ERR_LEN];

/* The tags and their names are the inventory's (planner/memtrain/memtrain_inventory.h). */
_Static_assert((int)MT_WEIGHTS == (int)MEMTRAIN_TAG_WEIGHTS && (int)MT_MASTER == (int)MEMTRAIN_TAG_MASTER &&
                   (int)MT_GRADIENTS == (int)MEMTRAIN_TAG_GRADIENTS &&
                   (int)MT_OPTIMIZER == (int)MEMTRAIN_TAG_OPTIMIZER &&
                   (int)MT_ACTIVATIONS == (int)MEMTRAIN_TAG_ACTIVATIONS &&
                   (int)MT_WORKSPACE == (int)MEMTRAIN_TAG_WORKSPACE &&
                   (int)MT_DATA == (int)MEMTRAIN_TAG_DATA && (int)MT_OTHER == (int)MEMTRAIN_TAG_OTHER && (int)MT_COMM == (int)MEMTRAIN_TAG_COMM &&
                   (int)MT_NTAGS == (int)MEMTRAIN_NTAGS,
               "the allocator's tags are the inventory's");

const char *mt_tag_name(int tag) { return memtrain_tag_name(tag); }

int mt_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_err, sizeof last_err, fmt, ap);
    va_end(ap);
    return -1;
}

const char *mt_last_error(void) { return last_err[0] ? last_err : "no error"; }
void mt_clear_error(void) { last_err[0] = 0; }

static header *hdr_of(const void *p) { return (header *)((char *)p - MT_ALIGN); }

static void account_alloc(int tag, size_t bytes)
{
    st.cur[tag] += bytes;
    st.total += bytes;
    st.nalloc++;
    if (st.cur[tag] > st.peak[tag])
        st.peak[tag] = st.cur[tag];
    if (st.total > st.total_peak) {
        st.total_peak = st.total;
        memcpy(st.at_peak, st.cur, sizeof st.cur);
    }
    if (st.total + st.cached > st.reserved_peak)
        st.reserved_peak = st.total + st.cached;
}

/* Take a cached block of exactly `bytes`, or NULL. */
static header *cache_take(size_t bytes)
{
    for (header **pp = &cache_head; *pp; pp = &(*pp)->next) {
        if ((*pp)->bytes == bytes) {
            header *h = *pp;
            *pp = h->next;
            st.cached -= bytes;
            st.nreuse++;
            return h;
        }
    }
    return NULL;
}

void *mt_alloc_at(int tag, size_t bytes, const char *file, int line)
{
    if (tag < 0 || tag >= MT_NTAGS) {
        mt_error("%s:%d: bad allocation tag %d", file, line, tag);
        return NULL;
    }
    if (bytes == 0 || bytes > SIZE_MAX - 2 * MT_ALIGN) {
        mt_error("%s:%d: bad allocation size %zu bytes for %s", file, line, bytes,
                 mt_tag_name(tag));
        return NULL;
    }
    if (bytes > MAX_BYTES) { /* no machine has this: fail without asking */
        mt_error("%s:%d: out of memory allocating %zu bytes for %s (over 64 TiB)", file, line,
                 bytes, mt_tag_name(tag));
        return NULL;
    }
    header *h = cache_take(bytes);
    if (!h) {
        /* Large blocks: 2 MiB aligned and marked for transparent huge pages,
         * which makes first-touch page faults (very slow on some VMs) and
         * TLB misses in sgemm 512x rarer. */
        size_t align = bytes >= HUGE_MIN ? HUGE_ALIGN : MT_ALIGN;
        void *raw = NULL;
        if (posix_memalign(&raw, align, MT_ALIGN + bytes) != 0 && cache_head) {
            mt_mem_trim(); /* give back what we hold and try once more */
            raw = NULL;
            if (posix_memalign(&raw, align, MT_ALIGN + bytes) != 0)
                raw = NULL;
        }
        if (!raw) {
            mt_error("%s:%d: out of memory allocating %zu bytes for %s", file, line, bytes,
                     mt_tag_name(tag));
            return NULL;
        }
#ifdef MADV_HUGEPAGE
        if (align == HUGE_ALIGN)
            madvise(raw, (MT_ALIGN + bytes) & ~(HUGE_ALIGN - 1), MADV_HUGEPAGE);
#endif
        h = raw;
    }
    h->magic = MAGIC_LIVE;
    h->bytes = bytes;
    h->tag = tag;
    h->next = NULL;
    account_alloc(tag, bytes);
    return (char *)h + MT_ALIGN;
}

void *mt_calloc_at(int tag, size_t bytes, const char *file, int line)
{
    void *p = mt_alloc_at(tag, bytes, file, line);
    if (p)
        memset(p, 0, bytes);
    return p;
}

void *mt_alloc_n_at(int tag, size_t n, size_t size, bool zero, const char *file, int line)
{
    if (size && n > SIZE_MAX / size) {
        mt_error("%s:%d: allocation size overflow (%zu x %zu bytes) for %s", file, line, n, size,
                 mt_tag_name(tag));
        return NULL;
    }
    return zero ? mt_calloc_at(tag, n * size, file, line) : mt_alloc_at(tag, n * size, file, line);
}

void mt_free(void *p)
{
    if (!p)
        return;
    header *h = hdr_of(p);
    if (h->magic != MAGIC_LIVE) {
        /* A double free or a foreign pointer: refuse rather than corrupt. */
        mt_error("mt_free: pointer %p is not a live mt_alloc block", p);
        return;
    }
    st.cur[h->tag] -= h->bytes;
    st.total -= h->bytes;
    st.nfree++;
    h->magic = MAGIC_FREE;
    if (cache_off) {
        free(h);
        return;
    }
    h->next = cache_head;
    cache_head = h;
    st.cached += h->bytes;
}

size_t mt_alloc_size(const void *p) { return p ? hdr_of(p)->bytes : 0; }
int mt_alloc_tag(const void *p) { return p ? hdr_of(p)->tag : -1; }

void mt_mem_get(mt_mem_stats *s) { *s = st; }

void mt_mem_reset_peaks(void)
{
    memcpy(st.peak, st.cur, sizeof st.cur);
    memcpy(st.at_peak, st.cur, sizeof st.cur);
    st.total_peak = st.total;
    st.reserved_peak = st.total + st.cached;
}

void mt_mem_trim(void)
{
    while (cache_head) {
        header *h = cache_head;
        cache_head = h->next;
        st.cached -= h->bytes;
        free(h);
    }
}

void mt_mem_set_cache(bool on)
{
    cache_off = !on;
    if (!on)
        mt_mem_trim();
}

/* Read "Key:   1234 kB" from /proc/self/status without stdio (no malloc). */
static size_t status_kb(const char *key)
{
    char buf[8192];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = 0;
    size_t klen = strlen(key);
    for (char *s = buf; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL) {
        if (strncmp(s, key, klen) == 0 && s[klen] == ':')
            return (size_t)strtoull(s + klen + 1, NULL, 10);
    }
    return 0;
}

size_t mt_rss_bytes(void) { return status_kb("VmRSS") * 1024; }
size_t mt_peak_rss_bytes(void) { return status_kb("VmHWM") * 1024; }
