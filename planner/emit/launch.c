/* launch.c — launch.sh: the launcher and process count of the engine engine.c
 * chose, with the data file as $1. The training script's command line is a
 * convention shared with the hf target: `train.py [--deepspeed FILE] -- DATA`. */
#include "emitters.h"
#include "common/errors.h"
#include "settings/settings.h"

#include <stdio.h>

static void write_launch(sbuf *b, const mp_plan *p)
{
    const mp_settings *s = p->s;
    emit_engine e;
    char err[MP_ERR_LEN];
    if (emit_engine_of(s, &e, err)) return sbuf_fail(b, "%s", err);
    sbuf_put(b, "#!/usr/bin/env bash\n");
    emit_summary_comment(b, p, &e);
    sbuf_put(b, "# usage: bash launch.sh DATA_FILE [--steps N] [--lr RATE] [--output DIR]\n");
    sbuf_put(b, "set -eu\n");
    sbuf_put(b, "DATA=\"${1:?usage: bash launch.sh DATA_FILE}\"\n");
    /* CDPATH and a name starting with '-' cannot move cd elsewhere */
    sbuf_put(b, "HERE=\"$(CDPATH='' cd -- \"$(dirname -- \"$0\")\" && pwd)\"\n");
    /* the allocator reads it once, when CUDA starts (c10/cuda/CUDAAllocatorConfig) */
    if (s->expandable_segments) sbuf_put(b, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n");
    switch (e.kind) {
    case EMIT_SINGLE:
        sbuf_put(b, "exec python3 \"$HERE/train.py\" \"${@:2}\" -- \"$DATA\"\n");
        break;
    case EMIT_DDP:
        sbuf_put(b, "exec torchrun --standalone --nproc_per_node %lld \"$HERE/train.py\" \"${@:2}\" -- \"$DATA\"\n",
                 (long long)e.procs);
        break;
    case EMIT_DEEPSPEED:
        /* the ranks read LOCAL_RANK from the environment: the script's command line stays the convention */
        sbuf_put(b, "exec deepspeed --no_local_rank --num_gpus %lld \"$HERE/train.py\" "
                 "--deepspeed \"$HERE/ds_config.json\" \"${@:2}\" -- \"$DATA\"\n", (long long)e.procs);
        break;
    case EMIT_FSDP:
        sbuf_put(b, "exec accelerate launch --config_file \"$HERE/accelerate.yaml\" \"$HERE/train.py\" \"${@:2}\" -- \"$DATA\"\n");
        break;
    }
}

const mp_emit_target emit_target_launch = {
    .name = "launch", .file = {"launch.sh", write_launch, 0755}, .check = emit_check_engine,
    .framework = "hf", .trl_methods = true,
};
