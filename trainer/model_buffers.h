/*
 * model_buffers.h — the model's buffers are the rows of the inventory
 * (planner/memtrain/memtrain_inventory.h), allocated and freed by walking them.
 * Below the model: it knows the inventory and the allocator, not mt_model; the
 * model says where each row it keeps lives (a field at an offset in its struct).
 */
#ifndef MT_MODEL_BUFFERS_H
#define MT_MODEL_BUFFERS_H

#include <stdbool.h>
#include <stddef.h>

#include "memtrain/memtrain_inventory.h"

/* Where a row the model allocates at creation is kept: a pointer field at
 * `offset` in the model's struct, and whether the buffer starts zeroed. */
typedef struct mt_row_field {
    bool bound, zeroed;
    size_t offset;
} mt_row_field;

/* One allocation of row `row` (MEMTRAIN_*): NULL when the row is absent in
 * this configuration, or on failure. */
void *mt_row_alloc(const memtrain_dims *inv, int row);
/* The first of a layer's slots a slot row stands for (the inventory's slot rows
 * in order; LoRA u: one slot per module from there). */
static inline int mt_slot_of_row(int row) { return row - MEMTRAIN_LN1; }

/* Every buffer the model keeps from creation on, in the inventory's order: its
 * own rows into the fields of `model` that `fields` names, the slots' fp32
 * working copies into `slots` (MEMTRAIN_NSLOTS of them), and at the NF4 rows
 * `nf4_init(model)` (the per-layer stores, quant.c). 0 or -1. */
int mt_buffers_alloc(const memtrain_dims *inv, void *model, const mt_row_field fields[MEMTRAIN_NROWS],
                     float *slots[MEMTRAIN_NSLOTS], int (*nf4_init)(void *model));
/* Free the rows and the slots (also after a partial allocation). */
void mt_buffers_free(void *model, const mt_row_field fields[MEMTRAIN_NROWS], float *slots[MEMTRAIN_NSLOTS]);

#endif
