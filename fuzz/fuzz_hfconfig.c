/*
 * fuzz_hfconfig.c — feeds the bytes as a Hugging Face config.json: to
 * mp_model_from_hf_json (in memory), and to mp_model_from_hf_config on a model
 * folder holding them as its config.json (nested text_config, MoE keys and
 * quantization_config come from the dictionary and the seeds).
 * Asserts: both ways agree (accepted or rejected, the same shape); a rejection
 * is a one-line error; an accepted model is usable: its parameter count, its
 * linear modules and one default estimate are finite and clean under ASan/UBSan.
 */
#include "fuzz.h"
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "settings/settings.h"

#include <math.h>
#include <unistd.h>

static char folder[4096], file[4200];

static void remove_folder(void)
{
    unlink(file);
    rmdir(folder);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(folder, sizeof folder, "%s/memplan-fuzz-hf-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(folder)) {
        perror(folder);
        exit(1);
    }
    snprintf(file, sizeof file, "%s/config.json", folder);
    atexit(remove_folder);
    return 0;
}

static void write_config(const uint8_t *data, size_t size)
{
    FILE *f = fopen(file, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) {
        perror(file);
        abort();
    }
}

/* What a model's user does next: count, list the modules, estimate. */
static void use_model(const mp_model *m)
{
    mp_params p;
    mp_param_count(m, &p);
    FUZZ_ASSERT(isfinite(p.total) && p.total > 0, "parameter count %g", p.total);
    mp_linear lin[16];
    int n = mp_model_linears(m, lin, 16);
    FUZZ_ASSERT(n > 0 && n <= 16, "%d linear modules", n);
    FUZZ_ASSERT(isfinite(mp_lora_params(m, 16, MP_LORA_ALL)), "LoRA parameters");
    mp_settings s;
    mp_settings_default(&s, m);
    mp_estimate e;
    char err[MP_ERR_LEN];
    fuzz_clear_err(err, sizeof err);
    if (mp_estimate_run(m, &s, NULL, &e, err)) fuzz_check_err("mp_estimate_run", err, sizeof err);
    else FUZZ_ASSERT(isfinite(e.device_bytes) && e.device_bytes > 0, "estimate %g bytes", e.device_bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mp_model mem, dir;
    char err_mem[MP_ERR_LEN], err_dir[MP_ERR_LEN];
    fuzz_clear_err(err_mem, sizeof err_mem);
    int rc_mem = mp_model_from_hf_json((const char *)data, size, "config.json", &mem, err_mem);
    if (rc_mem) fuzz_check_err("mp_model_from_hf_json", err_mem, sizeof err_mem);

    write_config(data, size);
    fuzz_clear_err(err_dir, sizeof err_dir);
    int rc_dir = mp_model_from_hf_config(folder, &dir, err_dir);
    if (rc_dir) fuzz_check_err("mp_model_from_hf_config", err_dir, sizeof err_dir);

    FUZZ_ASSERT(rc_mem == rc_dir, "in memory %d (%s), in a folder %d (%s)", rc_mem, rc_mem ? err_mem : "ok",
                rc_dir, rc_dir ? err_dir : "ok");
    if (rc_mem) return 0;
    /* the same model but for its label and source (a file's name, a folder's) */
    memset(mem.name, 0, sizeof mem.name), memset(dir.name, 0, sizeof dir.name);
    memset(mem.source, 0, sizeof mem.source), memset(dir.source, 0, sizeof dir.source);
    FUZZ_ASSERT(!memcmp(&mem, &dir, sizeof mem), "in memory and in a folder the shapes differ");
    use_model(&mem);
    return 0;
}
