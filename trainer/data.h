/*
 * data.h — tokenizer, built-in corpus and the two data loaders.
 *
 * Tokenizer: byte level, token = byte value (vocabulary 256; any model
 * vocabulary >= 256 works, the extra rows are simply never used as inputs).
 * Tokens are stored as uint16.
 *
 * Built-in corpus: when no data file is given, a deterministic English-like
 * text of MT_CORPUS_BYTES bytes is generated from templated sentences (fixed
 * seed, independent of the training seed).
 *
 * loader=memory  the whole source is tokenised into memory (ntok * 2 bytes);
 *                batches are consecutive windows: inputs tok[p .. p+B*T),
 *                targets tok[p+1 .. p+B*T+1), p advancing by B*T and wrapping.
 * loader=stream  the source is read in MT_STREAM_CHUNK-byte chunks and
 *                tokenised on the fly into sequences of T+1 tokens (windows
 *                advancing by T+1, wrapping at the end), which fill a shuffle
 *                buffer of `shuffle_buffer` sequences; each batch row is drawn
 *                at random (seeded) from it and its slot refilled.
 *
 * All buffers are MT_DATA; their sizes are rows of planner/memtrain/memtrain_inventory.c.
 */
#ifndef MT_DATA_H
#define MT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "settings/settings.h"

#define MT_CORPUS_BYTES (320u * 1024u)
#define MT_STREAM_CHUNK (64u * 1024u)


/* Byte-level tokenizer: tokens[i] = bytes[i]. Returns the token count (n). */
size_t mt_tokenize(const uint8_t *bytes, size_t n, uint16_t *tokens);
/* Write the built-in corpus (exactly `len` bytes, any len) into buf. */
void mt_corpus_generate(char *buf, size_t len);

typedef struct mt_data mt_data;

/* Tokens the byte tokenizer produces are below this (a model's vocab is at least it). */
#define MT_TOKENS 256

/* Whether the source can feed this run, before anything is allocated: a regular file
 * (path NULL or "": the built-in corpus) with at least one batch of `ranks` x B rows of
 * T + 1 tokens (memory) or one sequence of T + 1 (stream). 0, or -1 with one line in
 * err (len bytes) naming the file and the count. */
int mt_data_check(const char *path, mp_loader kind, size_t B, size_t T, int ranks, char *err, size_t len);

/* path NULL or "": the built-in corpus. Returns 0, or -1 with mt_last_error(). */
int mt_data_open(mt_data **out, const char *path, mp_loader kind, size_t B, size_t T,
                 size_t shuffle_buffer, uint64_t seed);
/* Data parallel: this loader is rank `rank` of `ranks`, each reading B rows of
 * one global batch of ranks x B rows, the rows one process reading batch
 * ranks x B would get (memory: rank r's rows of the global window; stream: the
 * global draws, of which rank r keeps its B). Before the first batch. */
int mt_data_shard(mt_data *d, int rank, int ranks);
/* A preference method's batch of B/2 pairs: the loader's rows 2k and 2k+1 (two
 * consecutive windows, memory; two consecutive draws, stream) become pair k's
 * chosen row k and rejected row B/2 + k (chosen rows first, then rejected, as
 * TRL's concatenated_inputs). A rank's rows hold whole pairs, so data parallel
 * pairs the global batch as one process does. Before the first batch. */
void mt_data_pairs(mt_data *d);
/* Fill inputs and targets (B,T) with the next batch. */
int mt_data_next(mt_data *d, int32_t *inputs, int32_t *targets);
void mt_data_close(mt_data *d);
/* Bytes of the source (file or corpus). */
size_t mt_data_source_bytes(const mt_data *d);

/* Loader position, shuffle buffer and RNG, for checkpoints. The check range-checks a
 * state read back (the loader, the position within this source, the tokens) and
 * returns 0, or -1 with mt_last_error(); load checks, then applies, a state. */
size_t mt_data_state_size(const mt_data *d);
void mt_data_state_save(const mt_data *d, uint8_t *buf);
int mt_data_state_check(const mt_data *d, const uint8_t *buf);
int mt_data_state_load(mt_data *d, const uint8_t *buf);

#endif
