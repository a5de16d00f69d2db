/* mpcount.c — an interposed allocator that counts every byte a process holds.
 *
 * Loaded with LD_PRELOAD in front of glibc, it forwards malloc, calloc, realloc,
 * free and the aligned variants to glibc's own entry points (__libc_*) and keeps
 * the live total and its peak. PyTorch's CPU tensors come from posix_memalign
 * (c10's alloc_cpu) and go back through free, so the count is what the tensors
 * take, the CPU counterpart of torch.cuda.max_memory_allocated.
 *
 * Sizes are glibc's usable sizes, read on both allocation and release, so a
 * block is counted the same both ways and the running total never drifts.
 *
 * The harness reads and resets the counters through ctypes:
 *   mpcount_current()  bytes live now
 *   mpcount_peak()     the largest mpcount_current() since the last reset
 *   mpcount_reset()    start a new peak from the current total
 *   mpcount_calls()    allocations seen (to tell that the interposer is active) */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static _Atomic long long live, peak, calls;

static void add(void *p)
{
    if (!p) return;
    long long n = (long long)malloc_usable_size(p);
    long long now = atomic_fetch_add_explicit(&live, n, memory_order_relaxed) + n;
    long long old = atomic_load_explicit(&peak, memory_order_relaxed);
    while (now > old && !atomic_compare_exchange_weak_explicit(&peak, &old, now, memory_order_relaxed,
                                                               memory_order_relaxed)) {
    }
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
}

static void sub(void *p)
{
    if (p) atomic_fetch_sub_explicit(&live, (long long)malloc_usable_size(p), memory_order_relaxed);
}

void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    add(p);
    return p;
}

void *calloc(size_t k, size_t n)
{
    void *p = __libc_calloc(k, n);
    add(p);
    return p;
}

void *realloc(void *old, size_t n)
{
    if (!old) return malloc(n);
    /* the old block's size must be read before glibc may release it */
    long long before = (long long)malloc_usable_size(old);
    void *p = __libc_realloc(old, n);
    if (!p) return NULL; /* the old block is untouched (or n == 0 freed it: counted below) */
    atomic_fetch_sub_explicit(&live, before, memory_order_relaxed);
    add(p);
    return p;
}

void free(void *p)
{
    sub(p);
    __libc_free(p);
}

void *memalign(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    add(p);
    return p;
}

void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
    void *p = memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t n) { return memalign(4096, n); }

void *pvalloc(size_t n) { return memalign(4096, (n + 4095) & ~(size_t)4095); }

long long mpcount_current(void) { return atomic_load(&live); }
long long mpcount_peak(void) { return atomic_load(&peak); }
long long mpcount_calls(void) { return atomic_load(&calls); }
void mpcount_reset(void) { atomic_store(&peak, atomic_load(&live)); }
