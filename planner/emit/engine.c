/* engine.c — which engine runs a plan, decided in one place: every engine
 * config, the launcher and the plan summary read this choice, so no artifact
 * can name an engine (or a stage, a process count) the plan did not assume.
 *
 *   offload, or ZeRO-1, or the deepspeed framework   -> DeepSpeed (one process per GPU,
 *                                                      one process on one GPU)
 *   several GPUs, ZeRO-2/3 on PyTorch                -> FSDP through accelerate
 *                                                      (SHARD_GRAD_OP / FULL_SHARD)
 *   several GPUs, no sharding                        -> DDP under torchrun
 *   one GPU                                          -> plain python */
#include "emitters.h"
#include "common/errors.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <stdio.h>
#include <string.h>

/* DeepSpeed's bf16/fp16 modes keep 16-bit weights with an fp32 master copy
 * in the optimizer (deepspeed/runtime/bf16_optimizer.py, fp16/fused_optimizer.py);
 * fp32 enables neither. Autocast (fp32 weights) and pure bf16 (no master) have no
 * DeepSpeed block that means them. */
static int deepspeed_precision_ok(const mp_settings *s, char *err)
{
    const mp_precision_desc *pd = mp_precision_desc_of(s->precision);
    if (emit_deepspeed_precision(s->precision) || (!pd->autocast && pd->stored_bytes == 4)) return 0;
    snprintf(err, MP_ERR_LEN, "precision '%s' has no DeepSpeed form: DeepSpeed's bf16/fp16 keep 16-bit weights "
             "plus an fp32 master copy (use mixed-bf16, mixed-fp16 or fp32)", pd->v.name);
    return -1;
}

/* ZeRO-Offload steps the optimizer on the CPU: DeepSpeed's own CPU optimizers,
 * or the script's when it has a CPU implementation (transformers
 * integrations/deepspeed.py, deepspeed_optim_sched). bitsandbytes' 8-bit and
 * paged optimizers step CUDA tensors only; memplan plans torchao's low-bit state
 * on the GPU only (its step was measured there). */
static int deepspeed_offload_ok(const mp_settings *s, char *err)
{
    const mp_optimizer_desc *od = mp_optimizer_desc_of(s->optimizer);
    const mp_offload_desc *off = mp_offload_desc_of(s->offload);
    if (s->offload == MP_OFFLOAD_NONE) return 0;
    if (od->low_bit || od->paged) {
        snprintf(err, MP_ERR_LEN, "optimizer '%s' cannot step offloaded states on the CPU (offload '%s')",
                 od->v.name, off->v.name);
        return -1;
    }
    if (off->params_on_host && s->zero != 3) {
        snprintf(err, MP_ERR_LEN, "offload '%s' needs ZeRO-3 in DeepSpeed (the plan has zero %d)", off->v.name, s->zero);
        return -1;
    }
    if (s->zero < 1) {
        snprintf(err, MP_ERR_LEN, "offload '%s' needs ZeRO stage 1, 2 or 3 in DeepSpeed (the plan has zero 0)",
                 off->v.name);
        return -1;
    }
    return 0;
}

/* Offload and the deepspeed profile's sharding run under DeepSpeed (as the
 * estimate counts them), and so does ZeRO-1 on several GPUs: the Trainer has
 * no other ZeRO-1. */
static bool wants_deepspeed(const mp_settings *s)
{
    return mp_runs_deepspeed(s) || (s->gpus > 1 && s->zero == 1);
}

int emit_engine_of(const mp_settings *s, emit_engine *e, char *err)
{
    memset(e, 0, sizeof *e);
    if (s->tp > 1 || s->pp > 1) {
        snprintf(err, MP_ERR_LEN, "a tensor/pipeline-parallel plan (tp %lld, pp %lld) has no Hugging Face Trainer "
                 "engine (use --emit memtrain, or tp = pp = 1)", (long long)s->tp, (long long)s->pp);
        return -1;
    }
    e->procs = s->gpus;
    e->stage = s->zero;
    if (wants_deepspeed(s)) {
        e->kind = EMIT_DEEPSPEED;
        return deepspeed_precision_ok(s, err) || deepspeed_offload_ok(s, err) ? -1 : 0;
    }
    if (s->gpus > 1 && s->zero >= 2) e->kind = EMIT_FSDP;
    else if (s->gpus > 1) e->kind = EMIT_DDP;
    else e->kind = EMIT_SINGLE;
    if (e->kind != EMIT_FSDP) e->stage = 0;
    return 0;
}

const char *emit_engine_name(emit_engine_kind k)
{
    static const char *const names[] = {
        [EMIT_SINGLE] = "one process (python3)", [EMIT_DDP] = "DDP (torchrun)",
        [EMIT_DEEPSPEED] = "DeepSpeed (deepspeed launcher)", [EMIT_FSDP] = "FSDP (accelerate launch)",
    };
    return names[k];
}

/* DeepSpeed's default ZeRO bucket (reduce_bucket_size, allgather_bucket_size:
 * pp_int(5e8) in deepspeed/runtime/zero/config.py), unless the framework
 * profile the estimate read says otherwise. */
long long emit_zero_bucket(const mp_settings *s)
{
    double fw = s->framework ? s->framework->zero_reduce_bucket : 0;
    return (long long)(fw > 0 ? fw : MP_DEEPSPEED_BUCKET);
}

int emit_check_sdpa(const mp_model *m, const mp_settings *s, char *err)
{
    const mp_family *f = emit_family_of(m);
    if (s->attention != MP_ATTN_FLASH || !f || f->sdpa) return 0;
    snprintf(err, MP_ERR_LEN, "attention 'flash' is SDPA in the Trainer, which %s's modeling file does not "
             "declare (tests/data/engines/hf_attention_support.csv): use --attention eager", f->model_type);
    return -1;
}

int emit_check_engine(const mp_model *m, const mp_settings *s, char *err)
{
    emit_engine e;
    return emit_engine_of(s, &e, err) ? -1 : emit_check_sdpa(m, s, err);
}
