/*
 * alloc.h — memtrain's accounting allocator.
 *
 * Every buffer the trainer uses comes from mt_alloc() with a tag saying what
 * it is for. The allocator keeps, per tag, the bytes live now and the highest
 * value seen, the peak of the total, and a snapshot of every tag at the moment
 * the total peaked (what the planner calls "at_peak").
 *
 * What is counted: the bytes REQUESTED by the caller, exactly. The 64-byte
 * header in front of each block and the rounding of the system allocator are
 * not counted (they are what a device allocator would call fragmentation).
 *
 * Freed blocks are kept in a reuse cache and handed out again for a request of
 * exactly the same size, much like PyTorch's caching allocator: the trainer
 * frees and allocates the same saved-activation buffers every step, and
 * returning them to the kernel would cost a page fault per 4 KiB on every step.
 * Cached bytes are not "live": they show in `cached` and `reserved_peak` only.
 *
 * Alignment: every block is 64-byte aligned (a cache line, and enough for any
 * SIMD load).
 *
 * Errors: a failed allocation returns NULL and records a message with the
 * file, line, tag and byte count; mt_last_error() returns it. The library
 * never prints and never exits.
 *
 * The allocator is process-wide and not thread-safe; memtrain is
 * single-threaded outside OpenBLAS (which allocates its own buffers: those are
 * visible in the RSS only).
 */
#ifndef MT_ALLOC_H
#define MT_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

enum {
    MT_WEIGHTS,     /* model parameters in the storage precision, NF4 stores */
    MT_MASTER,      /* fp32 master copy of trainable parameters (mixed precision) */
    MT_GRADIENTS,   /* parameter gradients */
    MT_OPTIMIZER,   /* optimizer state */
    MT_ACTIVATIONS, /* saved activations, logits, one-layer recompute buffers */
    MT_WORKSPACE,   /* activation gradients, attention tiles, conversion tiles,
                       dequantised layer buffer, cross-entropy chunk buffers */
    MT_DATA,        /* token buffers, loader buffers */
    MT_OTHER,       /* small tables and structs */
    MT_COMM,        /* data parallel: communication buffers */
    MT_NTAGS
};

#define MT_ALIGN 64
#define MT_ERR_LEN 512 /* room for a message naming two paths */

typedef struct mt_mem_stats {
    size_t cur[MT_NTAGS];     /* bytes live now, per tag */
    size_t peak[MT_NTAGS];    /* highest cur[tag] since the last reset */
    size_t at_peak[MT_NTAGS]; /* cur[tag] at the moment `total_peak` was reached */
    size_t total;             /* sum of cur[] */
    size_t total_peak;        /* highest total since the last reset */
    size_t cached;            /* freed bytes held in the reuse cache */
    size_t reserved_peak;     /* highest total + cached */
    size_t nalloc, nfree, nreuse; /* calls, and allocations served from the cache */
} mt_mem_stats;

/* Allocate `bytes` (> 0) for `tag`. NULL on failure, with mt_last_error() set.
 * Use the macros: they record the caller's file and line. */
void *mt_alloc_at(int tag, size_t bytes, const char *file, int line);
void *mt_calloc_at(int tag, size_t bytes, const char *file, int line);
#define mt_alloc(tag, bytes) mt_alloc_at((tag), (bytes), __FILE__, __LINE__)
#define mt_calloc(tag, bytes) mt_calloc_at((tag), (bytes), __FILE__, __LINE__)
/* Allocate n * size bytes, failing cleanly on overflow. */
void *mt_alloc_n_at(int tag, size_t n, size_t size, bool zero, const char *file, int line);
#define mt_alloc_n(tag, n, size) mt_alloc_n_at((tag), (n), (size), false, __FILE__, __LINE__)
#define mt_calloc_n(tag, n, size) mt_alloc_n_at((tag), (n), (size), true, __FILE__, __LINE__)

/* Free a block from mt_alloc (NULL is fine). The size and tag are in the
 * block's header. */
void mt_free(void *p);
/* The requested size and tag of a live block. */
size_t mt_alloc_size(const void *p);
int mt_alloc_tag(const void *p);

void mt_mem_get(mt_mem_stats *s);
/* Peaks := current values (e.g. to measure one step after warm-up). */
void mt_mem_reset_peaks(void);
/* Give every cached block back to the system. */
void mt_mem_trim(void);
/* Turn the reuse cache on (default) or off (off also trims). */
void mt_mem_set_cache(bool on);
/* "weights", "master", "gradients", "optimizer", "activations", "workspace",
 * "data", "other", "comm". */
const char *mt_tag_name(int tag);

/* Errors: mt_error() formats a message, stores it and returns -1. */
int mt_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *mt_last_error(void);
void mt_clear_error(void);

/* Resident set size (VmRSS) and its high-water mark (VmHWM) of this process
 * in bytes, read from /proc/self/status; 0 where unavailable. */
size_t mt_rss_bytes(void);
size_t mt_peak_rss_bytes(void);

#endif
