/*
 * checkpoint.h — memtrain's checkpoints: the trainer's whole state, written
 * atomically with a checksum, read back bit-identically.
 *
 * One process writes DIR/checkpoint.bin. A data-parallel run writes one shard
 * per rank (DIR/stepS.rankR-of-N.bin, each rank's own state: its part of a
 * ZeRO-1 optimizer, its place in the data) and then, on rank 0, the manifest
 * DIR/manifest.json that names them with their sizes and checksums. The
 * manifest is the commit point: it is replaced atomically once every shard
 * is on disk, so a run killed while writing still resumes from the previous
 * checkpoint, whose shards are removed only after the new manifest lands.
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
int mt_checkpoint_load(mt_trainer *t, const char *dir, char *err);

#endif
