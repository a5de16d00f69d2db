/*
 * fuzz_manifest.c — feeds the bytes as a data-parallel checkpoint's manifest.json to
 * mt_manifest_parse, the reader `memtrain --resume DIR` uses on DIR/manifest.json
 * before any shard is opened (every count an exact JSON integer, range-checked before
 * it is narrowed; each shard's file the name the writer gives it).
 * Asserts: a rejection is a one-line error (NUL-terminated, non-empty); an accepted
 * manifest has 1 to 64 ranks, a step and a zero stage in range, and for each rank a
 * file named exactly stepS.rankR-of-N.bin (so never a path), at least a header's bytes;
 * ASan/UBSan clean.
 */
#include "fuzz.h"
#include "checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static mt_manifest m;
    static char err[MT_ERR_LEN];
    fuzz_clear_err(err, sizeof err);
    if (mt_manifest_parse((const char *)data, size, "manifest.json", &m, err)) {
        fuzz_check_err("mt_manifest_parse", err, sizeof err);
        return 0;
    }
    FUZZ_ASSERT(m.ranks >= 1 && m.ranks <= MT_CHECKPOINT_MAX_RANKS, "accepted %d ranks", m.ranks);
    FUZZ_ASSERT(m.step >= 0 && m.step <= MT_MAX_STEPS && m.zero >= 0 && m.zero <= 3, "accepted step %ld, zero %d",
                m.step, m.zero);
    for (int r = 0; r < m.ranks; r++) {
        char want[64];
        snprintf(want, sizeof want, "step%08ld.rank%d-of-%d.bin", m.step, r, m.ranks);
        FUZZ_ASSERT(!strcmp(m.file[r], want), "rank %d's file '%s', not '%s'", r, m.file[r], want);
        FUZZ_ASSERT(m.bytes[r] >= 72 && m.bytes[r] <= INT64_MAX, "rank %d: %llu bytes", r,
                    (unsigned long long)m.bytes[r]);
    }
    return 0;
}
