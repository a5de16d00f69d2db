/*
 * data.c — byte tokenizer, generated corpus, memory and streaming loaders.
 */
#include "data.h"

#include <stdbool.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "rng.h"
#include "settings/settings.h"

size_t mt_tokenize(const uint8_t *bytes, size_t n, uint16_t *tokens)
{
    for (size_t i = 0; i < n; i++)
        tokens[i] = bytes[i];
    return n;
}

/* ---------- built-in corpus ---------- */

#define NW(a) (sizeof(a) / sizeof((a)[0]))
static const char *const nouns[] = {
    "cat", "dog", "river", "teacher", "city", "garden", "machine", "student", "bird", "ship",
    "mountain", "farmer", "window", "engine", "child", "forest", "letter", "market", "doctor",
    "train", "lamp", "village", "painter", "storm", "library", "bridge", "kitchen", "sailor",
};
static const char *const adjs[] = {
    "small", "old", "quiet", "bright", "heavy", "green", "careful", "strange", "warm", "tall",
    "busy", "gentle", "dark", "happy", "narrow", "golden", "simple", "cold", "clever", "empty",
};
static const char *const verbs[] = {
    "sees", "follows", "builds", "finds", "carries", "watches", "paints", "opens", "visits",
    "likes", "moves", "cleans", "reads", "guards", "crosses", "remembers", "answers", "helps",
};
static const char *const advs[] = {
    "slowly", "quickly", "often", "never", "always", "quietly", "early", "together", "again",
};
static const char *const places[] = {
    "in the morning", "near the river", "after the rain", "at night", "in the old town",
    "before dinner", "under the bridge", "on the hill", "during the winter", "by the sea",
};
static const char *const joins[] = {"and", "but", "because", "while", "so"};

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

static void put(sbuf *b, const char *s)
{
    while (*s && b->len < b->cap)
        b->p[b->len++] = *s++;
}

static const char *pick(mt_rng *r, const char *const *list, size_t n)
{
    return list[mt_rng_below(r, (uint32_t)n)];
}

static void clause(sbuf *b, mt_rng *r, int capital)
{
    const char *art = mt_rng_below(r, 2) ? "the" : "a";
    char first[8];
    strcpy(first, art);
    if (capital)
        first[0] = (char)(first[0] - 'a' + 'A');
    put(b, first);
    put(b, " ");
    if (mt_rng_below(r, 2)) {
        put(b, pick(r, adjs, NW(adjs)));
        put(b, " ");
    }
    put(b, pick(r, nouns, NW(nouns)));
    put(b, " ");
    if (mt_rng_below(r, 3) == 0) {
        put(b, pick(r, advs, NW(advs)));
        put(b, " ");
    }
    put(b, pick(r, verbs, NW(verbs)));
    put(b, " the ");
    if (mt_rng_below(r, 2)) {
        put(b, pick(r, adjs, NW(adjs)));
        put(b, " ");
    }
    put(b, pick(r, nouns, NW(nouns)));
    if (mt_rng_below(r, 2)) {
        put(b, " ");
        put(b, pick(r, places, NW(places)));
    }
}

void mt_corpus_generate(char *buf, size_t len)
{
    mt_rng r;
    mt_rng_seed(&r, 20240611);
    sbuf b = {buf, 0, len};
    while (b.len < len) {
        clause(&b, &r, 1);
        if (mt_rng_below(&r, 3) == 0) {
            put(&b, ", ");
            put(&b, pick(&r, joins, NW(joins)));
            put(&b, " ");
            clause(&b, &r, 0);
        }
        put(&b, mt_rng_below(&r, 8) == 0 ? ".\n" : ". ");
    }
}

/* ---------- loaders ---------- */

struct mt_data {
    mp_loader kind;
    size_t B, T;
    size_t rank, ranks; /* data parallel: this loader's rows of ranks x B */
    size_t src_bytes;
    /* memory */
    uint16_t *tok;
    size_t ntok, pos;
    /* stream */
    int fd;             /* -1: the corpus text below */
    char *text;         /* built-in corpus kept for streaming */
    uint8_t *chunk;     /* MT_STREAM_CHUNK bytes */
    size_t chunk_start; /* source offset of chunk[0] */
    size_t chunk_len, chunk_pos;
    uint16_t *shuf;     /* S * (T+1) tokens */
    size_t S;
    mt_rng rng;
    bool pairs;         /* mt_data_pairs: rows 2k and 2k+1 become pair k's chosen and rejected */
};

/* Where the loader's row b of this rank goes in the batch. */
static size_t dest_row(const mt_data *d, size_t b) { return d->pairs ? (b % 2) * (d->B / 2) + b / 2 : b; }

void mt_data_pairs(mt_data *d) { d->pairs = true; }

/* Read up to `len` bytes of the source at `off` (no wrap). */
static long src_read(mt_data *d, uint8_t *dst, size_t off, size_t len)
{
    if (off >= d->src_bytes)
        return 0;
    if (len > d->src_bytes - off)
        len = d->src_bytes - off;
    if (d->fd < 0) {
        memcpy(dst, d->text + off, len);
        return (long)len;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(d->fd, dst + got, len - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return mt_error("data: read error: %s", strerror(errno));
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (long)got;
}

/* Next token of the stream, wrapping at the end of the source. */
static int stream_token(mt_data *d, uint16_t *tok)
{
    if (d->chunk_pos >= d->chunk_len) {
        size_t off = d->chunk_start + d->chunk_len;
        if (off >= d->src_bytes)
            off = 0;
        long n = src_read(d, d->chunk, off, MT_STREAM_CHUNK);
        if (n <= 0)
            return n < 0 ? -1 : mt_error("data: source is empty");
        d->chunk_start = off;
        d->chunk_len = (size_t)n;
        d->chunk_pos = 0;
    }
    uint8_t byte = d->chunk[d->chunk_pos++];
    mt_tokenize(&byte, 1, tok);
    return 0;
}

static int stream_seq(mt_data *d, uint16_t *dst)
{
    for (size_t k = 0; k <= d->T; k++)
        if (stream_token(d, &dst[k]) != 0)
            return -1;
    return 0;
}

int mt_data_check(const char *path, mp_loader kind, size_t B, size_t T, int ranks, char *err, size_t len)
{
    size_t have = MT_CORPUS_BYTES;
    if (path && path[0]) {
        struct stat sb;
        if (stat(path, &sb)) {
            snprintf(err, len, "cannot read data file '%.300s': %s", path, strerror(errno));
            return -1;
        }
        /* a pipe or a device would be read without end, a directory not at all */
        if (!S_ISREG(sb.st_mode)) {
            snprintf(err, len, "data file '%.300s' is not a regular file", path);
            return -1;
        }
        if (sb.st_size == 0) {
            snprintf(err, len, "data file '%.300s' is empty", path);
            return -1;
        }
        have = (size_t)sb.st_size;
    }
    const char *src = path && path[0] ? path : "(the built-in corpus)";
    /* memory: one global batch and its last target; stream: one sequence of T + 1 */
    double need = kind == MP_LOAD_MEMORY ? (double)(ranks > 0 ? ranks : 1) * (double)B * (double)T + 1 : (double)T + 1;
    if ((double)have < need) {
        snprintf(err, len, "data file '%.300s' has %zu tokens, fewer than %s (%.0f)", src, have,
                 kind == MP_LOAD_MEMORY ? (ranks > 1 ? "one global batch (ranks x batch x seq + 1)"
                                                     : "one batch (batch x seq + 1)")
                                        : "one sequence (seq + 1)",
                 need);
        return -1;
    }
    return 0;
}

int mt_data_open(mt_data **out, const char *path, mp_loader kind, size_t B, size_t T,
                 size_t shuffle_buffer, uint64_t seed)
{
    *out = NULL;
    mt_data *d = mt_calloc(MT_OTHER, sizeof *d);
    if (!d)
        return -1;
    d->kind = kind;
    d->B = B;
    d->T = T;
    d->rank = 0, d->ranks = 1;
    d->fd = -1;
    mt_rng_seed(&d->rng, seed ^ 0x64617461ULL);
    bool builtin = !path || !path[0];
    if (builtin) {
        d->src_bytes = MT_CORPUS_BYTES;
        if (kind == MP_LOAD_STREAM) { /* the stream reads the generated text */
            d->text = mt_alloc(MT_DATA, d->src_bytes);
            if (!d->text)
                goto fail;
            mt_corpus_generate(d->text, d->src_bytes);
        }
    } else {
        d->fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        if (d->fd < 0 || fstat(d->fd, &sb) != 0) {
            mt_error("data: cannot open %s: %s", path, strerror(errno));
            goto fail;
        }
        d->src_bytes = (size_t)sb.st_size;
    }
    if (kind == MP_LOAD_MEMORY) {
        if (d->src_bytes < B * T + 1) {
            mt_error("data: %zu tokens is less than one batch (B*T+1 = %zu)", d->src_bytes,
                     B * T + 1);
            goto fail;
        }
        /* The bytes are placed in the upper half of the token buffer and
         * expanded in place, front to back (token i is written over bytes 2i
         * and 2i+1 <= ntok+i, which are already read): no second buffer. */
        d->ntok = d->src_bytes;
        d->tok = mt_alloc_n(MT_DATA, d->ntok, sizeof(uint16_t));
        if (!d->tok)
            goto fail;
        uint8_t *bytes = (uint8_t *)d->tok + d->ntok;
        if (builtin) {
            mt_corpus_generate((char *)bytes, d->ntok);
        } else {
            for (size_t off = 0; off < d->ntok;) {
                long n = src_read(d, bytes + off, off, d->ntok - off);
                if (n <= 0) {
                    if (n == 0)
                        mt_error("data: %s shrank while reading", path);
                    goto fail;
                }
                off += (size_t)n;
            }
            close(d->fd);
            d->fd = -1;
        }
        for (size_t i = 0; i < d->ntok; i++) {
            uint16_t t;
            mt_tokenize(&bytes[i], 1, &t);
            d->tok[i] = t;
        }
    } else {
        if (d->src_bytes < T + 1) {
            mt_error("data: %zu tokens is less than one sequence (T+1 = %zu)", d->src_bytes,
                     T + 1);
            goto fail;
        }
        if (shuffle_buffer == 0)
            shuffle_buffer = 1;
        d->S = shuffle_buffer;
        d->chunk = mt_alloc(MT_DATA, MT_STREAM_CHUNK);
        d->shuf = mt_alloc_n(MT_DATA, d->S * (T + 1), sizeof(uint16_t));
        if (!d->chunk || !d->shuf)
            goto fail;
        for (size_t s = 0; s < d->S; s++)
            if (stream_seq(d, d->shuf + s * (T + 1)) != 0)
                goto fail;
    }
    *out = d;
    return 0;
fail:
    mt_data_close(d);
    return -1;
}

int mt_data_shard(mt_data *d, int rank, int ranks)
{
    if (ranks < 1 || rank < 0 || rank >= ranks)
        return mt_error("data: rank %d of %d", rank, ranks);
    size_t global = (size_t)ranks * d->B * d->T;
    if (d->kind == MP_LOAD_MEMORY && d->ntok < global + 1)
        return mt_error("data: %zu tokens is less than one global batch of %d ranks (ranks*B*T+1 = %zu)",
                        d->ntok, ranks, global + 1);
    d->rank = (size_t)rank, d->ranks = (size_t)ranks;
    return 0;
}

int mt_data_next(mt_data *d, int32_t *inputs, int32_t *targets)
{
    size_t B = d->B, T = d->T, global = d->ranks * B;
    if (d->kind == MP_LOAD_MEMORY) {
        if (d->pos + global * T + 1 > d->ntok)
            d->pos = 0;
        const uint16_t *t = d->tok + d->pos + d->rank * B * T;
        for (size_t i = 0; i < B * T; i++) {
            size_t j = dest_row(d, i / T) * T + i % T;
            inputs[j] = t[i];
            targets[j] = t[i + 1];
        }
        d->pos += global * T;
        return 0;
    }
    /* every rank draws the whole global batch (same seed, same stream) and keeps its rows */
    for (size_t g = 0; g < global; g++) {
        uint16_t *slot = d->shuf + (size_t)mt_rng_below(&d->rng, (uint32_t)d->S) * (T + 1);
        size_t b = g / B == d->rank ? dest_row(d, g - d->rank * B) : 0;
        for (size_t t = 0; g / B == d->rank && t < T; t++) {
            inputs[b * T + t] = slot[t];
            targets[b * T + t] = slot[t + 1];
        }
        if (stream_seq(d, slot) != 0)
            return -1;
    }
    return 0;
}

void mt_data_close(mt_data *d)
{
    if (!d)
        return;
    if (d->fd >= 0)
        close(d->fd);
    mt_free(d->text);
    mt_free(d->tok);
    mt_free(d->chunk);
    mt_free(d->shuf);
    mt_free(d);
}

size_t mt_data_source_bytes(const mt_data *d) { return d->src_bytes; }

/* State: kind, pos (memory) or stream offset, rng, then the shuffle buffer. */
size_t mt_data_state_size(const mt_data *d)
{
    size_t n = 4 * sizeof(uint64_t);
    if (d->kind == MP_LOAD_STREAM)
        n += d->S * (d->T + 1) * sizeof(uint16_t);
    return n;
}

void mt_data_state_save(const mt_data *d, uint8_t *buf)
{
    uint64_t h[4] = {(uint64_t)d->kind,
                     d->kind == MP_LOAD_MEMORY ? d->pos : d->chunk_start + d->chunk_pos,
                     d->rng.s, d->S};
    memcpy(buf, h, sizeof h);
    if (d->kind == MP_LOAD_STREAM)
        memcpy(buf + sizeof h, d->shuf, d->S * (d->T + 1) * sizeof(uint16_t));
}

/* Every 64-bit word is a valid generator state (a Weyl sequence), so the RNG needs no check. */
int mt_data_state_check(const mt_data *d, const uint8_t *buf)
{
    uint64_t h[4];
    memcpy(h, buf, sizeof h);
    if (h[0] != (uint64_t)d->kind || h[3] != (uint64_t)d->S)
        return mt_error("data: the checkpoint was written with another loader configuration (loader %llu, "
                        "shuffle buffer %llu)", (unsigned long long)h[0], (unsigned long long)h[3]);
    /* memory: the next window starts before the end (at the end it wraps to 0);
     * stream: the next chunk starts within the source */
    if (d->kind == MP_LOAD_MEMORY ? h[1] >= d->ntok : h[1] > d->src_bytes)
        return mt_error("data: the checkpoint's data position %llu is beyond this data's %zu tokens",
                        (unsigned long long)h[1], d->kind == MP_LOAD_MEMORY ? d->ntok : d->src_bytes);
    if (d->kind == MP_LOAD_STREAM) {
        const uint8_t *p = buf + sizeof h;
        for (size_t i = 0; i < d->S * (d->T + 1); i++) {
            uint16_t tok;
            memcpy(&tok, p + i * sizeof tok, sizeof tok);
            /* a token indexes the embeddings: only the tokenizer's may come back */
            if (tok >= MT_TOKENS)
                return mt_error("data: the checkpoint's shuffle buffer holds token %u (at %zu), beyond the "
                                "byte tokenizer's %d", (unsigned)tok, i, MT_TOKENS);
        }
    }
    return 0;
}

int mt_data_state_load(mt_data *d, const uint8_t *buf)
{
    if (mt_data_state_check(d, buf) != 0)
        return -1;
    uint64_t h[4];
    memcpy(h, buf, sizeof h);
    d->rng.s = h[2];
    if (d->kind == MP_LOAD_MEMORY) {
        d->pos = (size_t)h[1];
        return 0;
    }
    memcpy(d->shuf, buf + sizeof h, d->S * (d->T + 1) * sizeof(uint16_t));
    /* the next chunk read starts at the saved offset (the end of the source: its start) */
    d->chunk_start = (size_t)h[1] < d->src_bytes ? (size_t)h[1] : 0;
    d->chunk_len = d->chunk_pos = 0;
    return 0;
}
