/*
 * fuzz_framework_csv.c — feeds the bytes as a framework profile CSV (what
 * `memplan calibrate -o` writes and --framework FILE reads) to
 * mp_framework_load_file, through a file under $TMPDIR.
 * Asserts: a rejection is a one-line error; an accepted profile is usable: an
 * estimate of a small GPT-2 under it is finite (or a one-line error), clean
 * under ASan/UBSan.
 */
#include "fuzz.h"
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "settings/settings.h"

#include <math.h>
#include <unistd.h>

static char path[4096];
static mp_model gpt2;

static void remove_file(void) { unlink(path); }

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/memplan-fuzz-fw-XXXXXX.csv", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemps(path, 4);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    close(fd);
    atexit(remove_file);
    /* GPT-2 small's shape, built here so no profile is needed */
    char err[MP_ERR_LEN];
    if (mp_model_preset(&gpt2, "gpt2", err)) abort();
    gpt2.layers = 12, gpt2.hidden = 768, gpt2.heads = 12, gpt2.vocab = 50257, gpt2.max_pos = 1024;
    if (mp_model_finish(&gpt2, err)) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) {
        perror(path);
        abort();
    }
    mp_framework fw;
    char err[MP_ERR_LEN];
    fuzz_clear_err(err, sizeof err);
    if (mp_framework_load_file(path, &fw, err)) {
        fuzz_check_err("mp_framework_load_file", err, sizeof err);
        return 0;
    }
    FUZZ_ASSERT(memchr(fw.name, 0, sizeof fw.name) && memchr(fw.source, 0, sizeof fw.source),
                "profile name or source not NUL-terminated");
    mp_settings s;
    mp_settings_default(&s, &gpt2);
    s.batch = 2, s.seq = 128;
    s.framework = &fw;
    mp_estimate e;
    fuzz_clear_err(err, sizeof err);
    if (mp_estimate_run(&gpt2, &s, NULL, &e, err)) fuzz_check_err("mp_estimate_run", err, sizeof err);
    else FUZZ_ASSERT(isfinite(e.device_bytes) && isfinite(e.host_bytes), "estimate %g bytes under profile '%s'",
                     e.device_bytes, fw.name);
    return 0;
}
