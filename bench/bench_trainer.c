/* bench_trainer.c — memtrain's speed: tokens/s for GPT-2 124M shapes (B=4, T=64 and
 * T=256, fp32 AdamW) and a 4-layer, 256-wide model, with the achieved GFLOP/s next to
 * this machine's cblas_sgemm peak measured right before each run (the machine's speed
 * drifts, so the ratio is what to compare). One "bench: NAME VALUE UNIT" line each. */
#include "train.h"

#include <cblas.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Best of 5 square 1024^3 products, in GFLOP/s. */
static double sgemm_peak(void)
{
    const int n = 1024;
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n), *c = malloc(sizeof(float) * n * n);
    for (int i = 0; i < n * n; i++) a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.1f;
    double best = 0;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        double g = 2.0 * n * n * n / (now() - t0) / 1e9;
        if (g > best) best = g;
    }
    free(a), free(b), free(c);
    return best;
}

/* Training FLOPs per token: 6 per weight multiply-add in the matmuls (forward 2,
 * backward 4, Kaplan et al. 2020) plus attention's 12*L*T*C (QK^T and PV, three passes). */
static double flops_per_token(const mt_config *c)
{
    double C = c->shape.hidden, L = c->shape.layers, F = c->shape.ffn ? c->shape.ffn : 4 * C, V = c->shape.vocab, T = c->s.seq;
    double matmul_params = L * (4 * C * C + 2 * C * F) + V * C;
    return 6 * matmul_params + 12 * L * T * C;
}

static void run(const char *name, int layers, int hidden, int heads, int vocab, int seq, int steps)
{
    mt_config c;
    mt_config_default(&c);
    c.shape.family = MT_GPT2, c.shape.layers = layers, c.shape.hidden = hidden, c.shape.heads = heads, c.shape.vocab = vocab;
    c.shape.max_pos = seq, c.s.seq = seq, c.s.batch = 4;
    char err[MT_ERR_LEN];
    mt_trainer *t;
    if (mt_config_finish(&c, err) || mt_trainer_create(&c, &t, err)) {
        fprintf(stderr, "bench_trainer: %s\n", err);
        exit(1);
    }
    mt_step_result r;
    mt_trainer_step(t, &r, err); /* warm-up: first-touch page faults, OpenBLAS buffers */
    double peak = sgemm_peak();
    double t0 = now(), tokens = 0;
    for (int i = 0; i < steps; i++) {
        if (mt_trainer_step(t, &r, err)) {
            fprintf(stderr, "bench_trainer: %s\n", err);
            exit(1);
        }
        tokens += (double)r.tokens;
    }
    double el = now() - t0, tps = tokens / el, gflops = tps * flops_per_token(&c) / 1e9;
    printf("bench: trainer_%s_tokens_per_s %.1f tokens/s\n", name, tps);
    printf("bench: trainer_%s_gflops %.1f GFLOP/s\n", name, gflops);
    printf("bench: trainer_%s_sgemm_peak %.1f GFLOP/s\n", name, peak);
    printf("bench: trainer_%s_share_of_peak %.1f %%\n", name, 100 * gflops / peak);
    mt_trainer_free(t);
}

/* With names on the command line, only those runs (bench/side_by_side.sh). */
static bool wanted(int argc, char **argv, const char *name)
{
    if (argc < 2) return true;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name)) return true;
    return false;
}

int main(int argc, char **argv)
{
    if (wanted(argc, argv, "gpt2_124m_b4_t64")) run("gpt2_124m_b4_t64", 12, 768, 12, 50257, 64, 4);
    if (wanted(argc, argv, "gpt2_124m_b4_t256")) run("gpt2_124m_b4_t256", 12, 768, 12, 50257, 256, 2);
    if (wanted(argc, argv, "4x256_b4_t64")) run("4x256_b4_t64", 4, 256, 4, 50257, 64, 10);
    return 0;
}
