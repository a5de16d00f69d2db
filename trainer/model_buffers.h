/*
 * model_buffers.h — private to the model: its buffers are the rows of the
 * inventory (planner/memtrain/memtrain_inventory.h), allocated and freed by walking them.
 */
#ifndef MT_MODEL_BUFFERS_H
#define MT_MODEL_BUFFERS_H

#include "memtrain/memtrain_inventory.h"
#include "model.h"

/* The model's configuration in the inventory's terms: every buffer's size.
 * (Computed when needed, not kept in mt_model: its size counts as MT_OTHER.) */
void mt_model_inventory(const mt_model *m, memtrain_dims *inv);
/* One allocation of row `row` (MEMTRAIN_*): NULL when the row is absent in
 * this configuration, or on failure. */
void *mt_row_alloc(const memtrain_dims *inv, int row);
/* The first of the model's slots (MT_S_*) a slot row stands for (LoRA u: one
 * slot per module from there). */
static inline int mt_slot_of_row(int row)
{
    return row == MEMTRAIN_LORA_U ? MT_S_LORA : row - MEMTRAIN_LN1;
}

/* Every buffer the model keeps from creation on, in the inventory's order: its
 * own rows, the NF4 stores of each layer, the slots' fp32 working copies.
 * The parameter table and the slot policy must be set; 0 or -1. */
int mt_model_alloc_buffers(mt_model *m, const memtrain_dims *inv);
/* Free them (also after a partial allocation). */
void mt_model_free_buffers(mt_model *m);

#endif
