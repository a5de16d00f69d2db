/* test_replay.c — the caching allocator's replay (planner/estimate/reserve.c), made
 * fast and bounded, still makes the figures it made before: each estimate's
 * allocator_cache_bytes below, over models of every kind and the techniques
 * that change what the replay sees, was recorded with the replay as it was
 * (commit d533406, one sorted array of cached blocks, a tensor listed per
 * layer x linear x expert, every estimate replayed afresh); a replay
 * remembered, or one replayed from its trace, gives the same bits. And a step
 * too large to replay in about a second is refused at once, in one line that
 * names its size, with memory to spare; one just under the bound runs.
 *
 * Built with -DRECORD, main prints the table of figures instead (link it
 * against the library to record from). */
#include "check.h"
#include "estimate/estimate.h"
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"
#include "estimate/reserve.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static const char *const models[] = {
    "gpt2", "llama-2-7b", "llama-3.1-8b", "mistral-7b", "qwen2.5-0.5b", "phi-2", "gemma-2b", "falcon-7b",
    "mixtral-8x7b", "qwen1.5-moe-a2.7b", "deepseek-moe-16b", "llama-2-70b",
};
#define NMODELS (int)(sizeof models / sizeof *models)

/* The techniques that change the replay's tensors or its allocator. */
static const char *const variants[] = {
    "default",
    "lora r16",
    "qlora nf4-dq, mixed-bf16, full checkpointing, B=2",
    "no checkpointing, B=4, amp-bf16",
    "selective checkpointing, adamw-8bit, for-loop step",
    "expandable segments",
    "expandable segments, qlora, B=4",
    "ZeRO-3 on 8 GPUs (FSDP)",
    "ZeRO-3 on 4 GPUs (deepspeed), accum 4",
    "hf: loss tensor by tensor, B=2, T=1024",
    "torchtune: optimizer in the backward",
    "tensor x pipeline parallel 2 x 2",
};
#define NVARIANTS (int)(sizeof variants / sizeof *variants)

static int setup(int v, const mp_model *m, mp_settings *s)
{
    char err[MP_ERR_LEN];
    mp_settings_default(s, m);
    switch (v) {
    case 1: s->lora_rank = 16; break;
    case 2:
        s->lora_rank = 16, s->quant = MP_QUANT_NF4_DQ, s->precision = MP_MIXED_BF16;
        s->checkpointing = MP_CKPT_FULL, s->batch = 2;
        break;
    case 3: s->checkpointing = MP_CKPT_NONE, s->batch = 4, s->precision = MP_AMP_BF16; break;
    case 4: s->checkpointing = MP_CKPT_SELECTIVE, s->optimizer = MP_ADAMW_8BIT, s->step_impl = MP_STEP_FOR_LOOP; break;
    case 5: s->expandable_segments = true; break;
    case 6: s->expandable_segments = true, s->lora_rank = 16, s->quant = MP_QUANT_NF4, s->batch = 4; break;
    case 7: s->zero = 3, s->gpus = 8; break;
    case 8:
        s->zero = 3, s->gpus = 4, s->accum = 4;
        if (!(s->framework = mp_framework_find("deepspeed", err))) return -1;
        break;
    case 9:
        s->batch = 2, s->seq = 1024;
        if (!(s->framework = mp_framework_find("hf", err))) return -1;
        break;
    case 10:
        s->optimizer_in_backward = true;
        if (!(s->framework = mp_framework_find("torchtune", err))) return -1;
        break;
    case 11:
        s->tp = 2, s->pp = 2, s->gpus = 4;
        if (!(s->framework = mp_framework_find("megatron", err))) return -1;
        break;
    }
    return 0;
}

/* The figure, or -1 where the combination is not one memplan estimates. */
static double figure(int mi, int v)
{
    char err[MP_ERR_LEN];
    mp_model m;
    mp_settings s;
    mp_gpu g;
    mp_estimate e;
    if (mp_model_lookup(models[mi], &m, err) || mp_gpu_lookup("a100-80g", &g, err) || setup(v, &m, &s)) return -2;
    if (mp_estimate_run(&m, &s, &g, &e, err)) return -1;
    return e.allocator_cache_bytes;
}

#ifdef RECORD
int main(void)
{
    for (int mi = 0; mi < NMODELS; mi++) {
        printf("    {");
        for (int v = 0; v < NVARIANTS; v++) printf("%.17g,%s", figure(mi, v), v + 1 < NVARIANTS ? " " : "");
        printf("}, /* %s */\n", models[mi]);
    }
    return 0;
}
#else

/* allocator_cache_bytes before the change, [model][variant] */
static const double recorded[][NVARIANTS] = {
#include "data/replay_figures.inc"
};

static void test_recorded(void)
{
    int same = 0, n = 0;
    for (int pass = 0; pass < 2; pass++) /* replayed, then remembered */
        for (int mi = 0; mi < NMODELS; mi++)
            for (int v = 0; v < NVARIANTS; v++, n++) {
                double got = figure(mi, v);
                if (got == recorded[mi][v]) same++;
                else CHECK(false, "%s, %s (%s): %.17g, recorded %.17g", models[mi], variants[v],
                           pass ? "remembered" : "replayed", got, recorded[mi][v]);
            }
    CHECK(same == n, "%d of %d figures as recorded before the change", same, n);
    int some = 0;
    for (int mi = 0; mi < NMODELS; mi++)
        for (int v = 0; v < NVARIANTS; v++) some += recorded[mi][v] > 0;
    CHECK(some > NMODELS * NVARIANTS / 2, "most recorded figures hold a cache (%d)", some);
}

/* The same estimate alone in a fresh cache, then among others, then again. */
static void test_remembered_same(void)
{
    double first[NVARIANTS];
    replay_cache_clear();
    for (int v = 0; v < NVARIANTS; v++) first[v] = figure(1, v);
    for (int mi = 0; mi < NMODELS; mi++) figure(mi, 2);
    bool same = true;
    for (int v = 0; v < NVARIANTS; v++) same &= figure(1, v) == first[v];
    replay_cache_clear();
    for (int v = 0; v < NVARIANTS; v++) same &= figure(1, v) == first[v];
    CHECK(same, "a figure remembered, or replayed again after clearing, is the one replayed first");
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

/* A shape by hand: `layers` of a Llama 7B's width, `experts` per layer. */
static int shape(mp_model *m, long layers, long experts, char *err)
{
    *m = (mp_model){0};
    if (mp_model_preset(m, "llama", err)) return -1;
    m->layers = layers, m->hidden = 4096, m->heads = 32, m->vocab = 32000;
    if (experts) m->experts = experts, m->top_k = 2;
    return mp_model_finish(m, err);
}

/* Issue 36 item 7: 100,000 layers (24 GB with 4,096 experts; 40 s alone)
 * are refused, in one line naming the work, fast and in little memory; a
 * step under the bound runs in bounded memory too. */
static void test_bound(void)
{
    static const struct { long layers, experts; } big[] = {{100000, 0}, {100000, 4096}, {100000, 8}, {30000, 64}};
    for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
        char err[MP_ERR_LEN] = "", why[MP_ERR_LEN] = "";
        mp_model m;
        mp_settings s;
        mp_gpu g;
        mp_estimate e;
        if (shape(&m, big[i].layers, big[i].experts, err) || mp_gpu_lookup("h100-80g", &g, err)) {
            CHECK(false, "setup: %s", err);
            continue;
        }
        mp_settings_default(&s, &m);
        double t0 = cpu_s();
        int rc = mp_estimate_run(&m, &s, &g, &e, why);
        double t = cpu_s() - t0;
        CHECK(rc != 0 && strstr(why, "allocator calls") && strstr(why, "layers") && !strchr(why, '\n'),
              "%ld layers x %ld experts: refused in one line (%s)", big[i].layers, big[i].experts, why);
        CHECK(t < 1, "%ld layers x %ld experts: refused in %.3f s of CPU", big[i].layers, big[i].experts, t);
        why[0] = 0;
        CHECK(mp_estimate_screen(&m, &s, &g, &e, why) == 0, "%ld layers x %ld experts: the screen, which does not "
              "replay, still estimates %s", big[i].layers, big[i].experts, why);
    }
    CHECK(peak_rss_mib() < 256, "refusals in bounded memory: peak RSS %.0f MiB", peak_rss_mib());

    /* under the bound: planned, in bounded time and memory */
    char err[MP_ERR_LEN] = "";
    mp_model m;
    mp_settings s;
    mp_gpu g;
    mp_estimate e;
    if (shape(&m, 20000, 0, err) || mp_gpu_lookup("h100-80g", &g, err)) {
        CHECK(false, "setup: %s", err);
        return;
    }
    mp_settings_default(&s, &m);
    s.checkpointing = MP_CKPT_FULL;
    double t0 = cpu_s();
    int rc = mp_estimate_run(&m, &s, &g, &e, err);
    double t = cpu_s() - t0;
    CHECK(rc == 0 && e.allocator_cache_bytes > 0, "20,000 layers: replayed (%s, cache %.3g)", err,
          e.allocator_cache_bytes);
    CHECK(t < 3, "20,000 layers: %.2f s of CPU", t);
    CHECK(peak_rss_mib() < 512, "20,000 layers: peak RSS %.0f MiB", peak_rss_mib());
}

int main(void)
{
    test_recorded();
    test_remembered_same();
    test_bound();
    return check_summary();
}
#endif
