/* host.c — host RAM of a run as a user sees it: per training process, the
 * larger of its peak while loading the checkpoint and its peak while
 * training, and per node, one process per GPU.
 *
 * While loading, a process holds its own baseline plus one checkpoint shard
 * in 16-bit (fp32 for fp32 training): Hugging Face loads a sharded checkpoint
 * shard by shard, and bitsandbytes quantises to 4 bits on the GPU as each
 * weight moves there, so the conversion adds no host copy. While training it
 * holds its baseline, what is offloaded (ZeRO-Offload's parameters and
 * states, torchtune's activations), the data loader and the pinned
 * staging buffers of a micro-batch. */
#include "estimate/host.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "settings/settings.h"

#include <stdio.h>
#include <string.h>

/* The training process before any model: the resident set (VmHWM) of
 * `python3 -c 'import torch'` measured on the project's machine, Debian's
 * python3-torch 1.13 (CPU build): 232,012 kB (tests/data/host_baseline.csv).
 * A CUDA build with transformers loaded holds more; this is a floor. */
#define PROCESS_BASELINE_BYTES (232012.0 * 1024)

/* save_pretrained's default max_shard_size, "5GB" = 5e9 bytes
 * (huggingface/transformers src/transformers/modeling_utils.py, commit 040ba146) */
#define CHECKPOINT_SHARD_BYTES 5e9

/* GPUs (one training process each) on a node: 8, as on a DGX A100/H100 node. */
#define GPUS_PER_NODE 8

static void add_term(mp_estimate *e, const char *name, const char *formula, double bytes)
{
    if (e->nterms >= MP_MAX_TERMS) return;
    mp_term *t = &e->terms[e->nterms++];
    t->component = -1;
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->formula, sizeof t->formula, "%s", formula);
    t->bytes = bytes;
}

/* The data loader's host memory, and its explain term. */
static double loader_bytes(const mp_settings *s, mp_estimate *e, bool explain)
{
    double data;
    if (s->loader == MP_LOAD_MEMORY) {
        /* raw text plus int64 token ids, about 4 bytes of text per BPE token
         * (OpenAI's tokenizer guide: 1 token ~ 4 characters of English) */
        data = s->dataset_bytes + s->dataset_bytes / 4 * 8;
    } else {
        /* the shuffle buffer of sequences and one 64 KiB read chunk */
        data = (double)s->shuffle_buffer * (double)(s->seq + 1) * 8 + 65536;
    }
    if (explain && data > 0)
        add_term(e, "data loader", s->loader == MP_LOAD_MEMORY ? "dataset text + int64 token ids (1 token per 4 bytes)"
                                                              : "shuffle buffer x (T+1) x 8 B + 64 KiB chunk", data);
    return data;
}

void host_model(const mp_model *m, const mp_settings *s, mp_estimate *e, double offloaded, bool explain)
{
    (void)m;
    double data = loader_bytes(s, e, explain);
    /* each micro-batch is staged in pinned memory: inputs and targets, int64 */
    double pinned = 2.0 * (double)s->batch * (double)s->seq * 8;
    double ckpt_bytes = e->params.total * mp_element_bytes(s->precision);
    double shard = ckpt_bytes < CHECKPOINT_SHARD_BYTES ? ckpt_bytes : CHECKPOINT_SHARD_BYTES;
    e->host_data_bytes = data + pinned;
    e->host_offload_bytes = offloaded;
    e->host_baseline_bytes = PROCESS_BASELINE_BYTES;
    e->host_load_bytes = PROCESS_BASELINE_BYTES + shard;
    e->host_train_bytes = PROCESS_BASELINE_BYTES + offloaded + data + pinned;
    e->host_bytes = e->host_load_bytes > e->host_train_bytes ? e->host_load_bytes : e->host_train_bytes;
    e->host_ranks_per_node = (int)(s->gpus < GPUS_PER_NODE ? s->gpus : GPUS_PER_NODE);
    e->host_node_bytes = e->host_bytes * e->host_ranks_per_node;
    if (explain) {
        add_term(e, "process baseline", "import torch, measured (VmHWM), per process", PROCESS_BASELINE_BYTES);
        add_term(e, "checkpoint shard at load", "min(params x 16-bit, 5 GB shard), per process", shard);
        if (offloaded > 0) /* the sum of the offload terms: parameters, optimizer, activations */
            add_term(e, "offloaded to host RAM", "parameters and states (ZeRO-Offload) and activations, per process",
                     offloaded);
        add_term(e, "pinned batches", "2 x B x T x 8 B", pinned);
    }
}
