/*
 * checkpoint.h — memtrain's checkpoints: the trainer's whole state, written
 * atomically with a checksum, read back bit-identically, and nothing read back
 * trusted: every field is range-checked before any of it is loaded.
 *
 * One process writes DIR/checkpoint.bin. A data-parallel run writes one shard
 * per rank (DIR/stepS.rankR-of-N.bin, each rank's own state: its part of a
 * ZeRO-1 optimizer, its place in the data) and then, on rank 0, the manifest
 * DIR/manifest.json that names them with their sizes and checksums. The
 * manifest is the commit point: it is replaced atomically once every shard
 * is on disk, so a run killed while writing still resumes from the previous
 * checkpoint, whose shards are removed only after the new manifest lands.
 *
 * A file (format version 2, little-endian as the machine writes it):
 *   header    72 bytes: "MEMTRAIN", version, header size, step, the hash of the
 *             settings that shape the state, rank, ranks, zero, the lengths of
 *             the two parts below, and a 64-bit FNV-1a checksum of all of it
 *             (header included, its checksum field as 0)
 *   settings  the run's settings, one "key=value" line each (the config keys that
 *             shape the state or change the run), to refuse a resume that changes one
 *   state     the trainer's state (train.h)
 *
 * With several ranks both calls are collective (every rank calls them, in
 * the same order) and every rank returns the same status; rank 0's err then
 * names what failed on whichever rank.
 */
#ifndef MT_CHECKPOINT_H
#define MT_CHECKPOINT_H

#include "train.h"

/* The most ranks a checkpoint holds shards of. */
#define MT_CHECKPOINT_MAX_RANKS 64

int mt_checkpoint_save(mt_trainer *t, const char *dir, char *err);
/* `changed`: the settings (comma-separated config keys) this run may change from
 * the checkpoint's (--resume-changed), or NULL: a run that differs in any is refused. */
int mt_checkpoint_load(mt_trainer *t, const char *dir, const char *changed, char *err);

/* --resume-changed's list: every name a recorded setting that a resume can change
 * (not one that shapes the saved state). 0, or -1 with one line in err. */
int mt_checkpoint_changes_check(const char *list, char *err);

/* ---------- the readers on bytes (tests and fuzz harnesses) ---------- */

/* What a manifest says, range-checked. */
typedef struct mt_manifest {
    long step;
    int ranks, zero;
    uint64_t config_hash;
    char file[MT_CHECKPOINT_MAX_RANKS][64]; /* per rank: stepS.rankR-of-N.bin, exactly */
    uint64_t checksum[MT_CHECKPOINT_MAX_RANKS];
    uint64_t bytes[MT_CHECKPOINT_MAX_RANKS];
} mt_manifest;

/* A manifest's text (`len` bytes; `name` for errors): 0, or -1 with one line in err. */
int mt_manifest_parse(const char *text, size_t len, const char *name, mt_manifest *m, char *err);

/* Recompute an image's checksum in place: what the writer does last. */
void mt_checkpoint_seal(uint8_t *image, size_t len);
/* One file's bytes checked against this trainer's run (and, with a manifest, against
 * its entry for this rank) and loaded: `name` for errors, `changed` as above.
 * Refused, the trainer is as it was. */
int mt_checkpoint_load_image(mt_trainer *t, const uint8_t *image, size_t len, const char *name,
                             const mt_manifest *m, const char *changed, char *err);

#endif
