/* host.c — host memory of a run: the data loader, its pinned staging buffers,
 * and whatever the estimate offloaded. */
#include "host.h"

#include <string.h>

void host_model(const mp_model *m, const mp_settings *s, mp_estimate *e, double offloaded, bool explain)
{
    (void)m;
    double data;
    if (s->loader == MP_LOAD_MEMORY) {
        /* raw text plus int64 token ids, about 4 bytes of text per BPE token
         * (OpenAI's tokenizer guide: 1 token ~ 4 characters of English) */
        data = s->dataset_bytes + s->dataset_bytes / 4 * 8;
    } else {
        /* the shuffle buffer of sequences and one 64 KiB read chunk */
        data = (double)s->shuffle_buffer * (double)(s->seq + 1) * 8 + 65536;
    }
    /* each micro-batch is staged in pinned memory: inputs and targets, int64 */
    double pinned = 2.0 * (double)s->batch * (double)s->seq * 8;
    e->host_data_bytes = data + pinned;
    e->host_offload_bytes = offloaded;
    e->host_bytes = offloaded + data + pinned;
    if (explain && e->nterms < MP_MAX_TERMS && data > 0) {
        mp_term *t = &e->terms[e->nterms++];
        t->component = -1;
        strcpy(t->name, "data loader");
        if (s->loader == MP_LOAD_MEMORY)
            strcpy(t->formula, "dataset text + int64 token ids (1 token per 4 bytes)");
        else
            strcpy(t->formula, "shuffle buffer x (T+1) x 8 B + 64 KiB chunk");
        t->bytes = data;
    }
}
