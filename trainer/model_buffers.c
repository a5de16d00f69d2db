/*
 * model_buffers.c — the model's buffers are rows of the inventory
 * (planner/memtrain/memtrain_inventory.c): allocated at creation and freed by walking
 * the rows, and the forward's per-micro-batch rows allocated from them.
 */
#include "model_buffers.h"

#include <stddef.h>
#include <string.h>

#include "alloc.h"
#include "memtrain/memtrain_inventory.h"
#include "quant.h"

/* One allocation of `row`, NULL when the row is absent (or on failure). C
 * structures are allocated at their size in this build. */
static void *alloc_row(const memtrain_dims *inv, int row, bool zeroed)
{
    const memtrain_row *r = &memtrain_rows[row];
    size_t bytes = memtrain_alloc_bytes(inv, row), n = memtrain_elems(inv, row);
    if (r->dtype == MEMTRAIN_DT_PTR)
        bytes = n * sizeof(void *);
    else if (r->dtype == MEMTRAIN_DT_NF4_STORE)
        bytes = n * sizeof(mt_nf4);
    if (!bytes)
        return NULL;
    return zeroed ? mt_calloc(r->tag, bytes) : mt_alloc(r->tag, bytes);
}

void *mt_row_alloc(const memtrain_dims *inv, int row) { return alloc_row(inv, row, false); }

/* The fp32 working copies of a slot row (one layer's; LoRA u: one per module). */
static int alloc_slot_buffers(float *slots[], const memtrain_dims *inv, int row)
{
    if (!memtrain_slot_buffer(inv, row))
        return 0;
    for (size_t k = 0; k < memtrain_copies(inv, row); k++) {
        float *p = mt_alloc_n(memtrain_rows[row].tag, memtrain_elems(inv, row), sizeof(float));
        if (!p)
            return -1;
        slots[mt_slot_of_row(row) + (int)k] = p;
    }
    return 0;
}

int mt_buffers_alloc(const memtrain_dims *inv, void *model, const mt_row_field fields[MEMTRAIN_NROWS],
                     float *slots[MEMTRAIN_NSLOTS], int (*nf4_init)(void *model))
{
    for (int row = 0; row < MEMTRAIN_NROWS; row++) {
        const memtrain_row *r = &memtrain_rows[row];
        if (r->lifetime == MEMTRAIN_LAYER_SLOT) {
            if (alloc_slot_buffers(slots, inv, row) != 0)
                return -1;
        } else if (r->by == MEMTRAIN_BY_NF4 && row == MEMTRAIN_NF4_CODES) {
            if (memtrain_elems(inv, row) && nf4_init(model) != 0)
                return -1;
        } else if (r->by == MEMTRAIN_BY_MODEL && r->lifetime == MEMTRAIN_PERSISTENT) {
            if (!fields[row].bound)
                return mt_error("model: no field keeps the inventory's row %s", r->name);
            void *p = alloc_row(inv, row, fields[row].zeroed);
            if (!p && memtrain_elems(inv, row))
                return -1;
            memcpy((char *)model + fields[row].offset, &p, sizeof p);
        }
    }
    return 0;
}

void mt_buffers_free(void *model, const mt_row_field fields[MEMTRAIN_NROWS], float *slots[MEMTRAIN_NSLOTS])
{
    for (int s = 0; s < MEMTRAIN_NSLOTS; s++)
        mt_free(slots[s]);
    for (int row = 0; row < MEMTRAIN_NROWS; row++) {
        if (!fields[row].bound)
            continue;
        void *p;
        memcpy(&p, (char *)model + fields[row].offset, sizeof p);
        mt_free(p);
    }
}
