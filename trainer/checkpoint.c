/*
 * checkpoint.c — memtrain's checkpoints (see checkpoint.h): one file for one
 * process; per-rank shards and a manifest for a data-parallel run.
 */
#include "checkpoint.h"
#include "config_keys.h"
#include "settings/options.h"

#include "dist.h"
#include "common/errors.h"
#include "common/files.h"
#include "model/model.h"
#include "settings/settings.h"
#include "settings/vocabulary.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_MAGIC "MEMTRAIN"
#define CKPT_VERSION 2u
#define CKPT_FILE "checkpoint.bin"
#define MANIFEST_FILE "manifest.json"
#define MANIFEST_FORMAT "memtrain checkpoint"
#define MANIFEST_VERSION 3
#define MANIFEST_MAX_BYTES (1 << 20)
#define SETTINGS_MAX 16384 /* the settings record's most bytes (a few hundred in use) */
#define FNV_SEED 1469598103934665603ull
#define MAX_RANKS MT_CHECKPOINT_MAX_RANKS

typedef struct ckpt_header {
    char magic[8];
    uint32_t version, header_bytes;
    uint64_t step, config_hash;
    int32_t rank, ranks, zero, reserved;
    uint64_t settings_len, payload_len, checksum;
} ckpt_header;

/* FNV-1a, 64 bit: detects truncation and flipped bytes, not an adversary (who can
 * recompute it): what is read back is range-checked as well. */
static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* ---------- the settings record ---------- */

/* Every config key a run's state or course depends on, its value as the config's
 * rows write it (config_keys.c; the data file as its real path): the keys in
 * their rows' order but these, which are not the run's record: tied follows the
 * family, steps is how far the run goes (a resume goes further), ranks is the
 * header's rank count. */
static const char *const unrecorded[] = {"tied", "steps", "ranks", NULL};
/* The keys a resume may change when --resume-changed names them; every other
 * shapes the saved state (the state's own fingerprint, train.c, and the zero
 * stage), so no resume can change it. */
static const char *const course[] = {"accum", "checkpointing", "attention", "attn-tile", "ce", "ce-chunk", "lora-alpha",
                                     "overlap", "data", "lr", "weight-decay", "momentum", "seed", "loss-scale", "beta",
                                     NULL};

static bool named(const char *const *list, const char *key)
{
    for (; *list; list++)
        if (!strcmp(*list, key)) return true;
    return false;
}

#define MAX_SETTINGS 48
static struct setting {
    const char *key;
    bool shapes;
} settings[MAX_SETTINGS];
static size_t nsettings;

/* The record's keys, from the config's rows (once). */
static void record_keys(void)
{
    if (nsettings) return;
    for (const mp_opt *r = mt_config_keys(); r->name && nsettings < MAX_SETTINGS; r++)
        if (!named(unrecorded, r->name)) settings[nsettings++] = (struct setting){r->name, !named(course, r->name)};
}
#define NSETTINGS (record_keys(), nsettings)

static const struct setting *setting_find(const char *key, size_t len)
{
    record_keys();
    for (size_t i = 0; i < NSETTINGS; i++)
        if (strlen(settings[i].key) == len && !strncmp(settings[i].key, key, len)) return &settings[i];
    return NULL;
}

/* A path as one line of the record: control bytes and '\' as \xNN, so that two
 * different paths never write the same text. */
static void put_path(char *out, size_t cap, const char *path)
{
    char real[PATH_MAX];
    /* the file itself, whichever directory the run starts in */
    if (path[0] && realpath(path, real)) path = real;
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)path; *p && n + 5 < cap; p++) {
        if (*p < 0x20 || *p == 0x7f || *p == '\\') n += (size_t)snprintf(out + n, cap - n, "\\x%02x", *p);
        else out[n++] = (char)*p;
    }
    out[n] = 0;
}

static void setting_value(const mt_config *c, const struct setting *s, char *out, size_t cap)
{
    if (!strcmp(s->key, "data")) put_path(out, cap, c->own.data_path);
    else if (!mt_config_value(c, s->key, out, cap)) out[0] = 0;
}

#define VALUE_MAX (4 * MT_PATH_LEN + 8)

/* The record of this run's settings ("key=value\n" each), malloc'd, its length in *len;
 * with `shaping` only the settings that shape the state. NULL when out of memory. */
static char *record_of(const mt_config *c, bool shaping, size_t *len)
{
    size_t cap = NSETTINGS * 24 + VALUE_MAX + 64, n = 0;
    char *buf = malloc(cap), v[VALUE_MAX];
    if (!buf) return NULL;
    for (size_t i = 0; i < NSETTINGS; i++) {
        if (shaping && !settings[i].shapes) continue;
        setting_value(c, &settings[i], v, sizeof v);
        n += (size_t)snprintf(buf + n, cap - n, "%s=%s\n", settings[i].key, v);
    }
    *len = n;
    return buf;
}

/* The configuration's identity in the header and the manifest: the settings that
 * shape the state, by name (not by the enums' numbering). */
static uint64_t config_hash(const mt_config *c)
{
    size_t n;
    char *rec = record_of(c, true, &n);
    uint64_t h = rec ? fnv1a(rec, n, FNV_SEED) : 0;
    free(rec);
    return h;
}

/* Whether `key` is in the comma-separated `list`. */
static bool listed(const char *list, const char *key)
{
    size_t k = strlen(key);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == k && !strncmp(p, key, k)) return true;
        p = e ? e + 1 : p + n;
    }
    return false;
}

int mt_checkpoint_changes_check(const char *list, char *err)
{
    for (const char *p = list;;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const struct setting *s = setting_find(p, n);
        char quoted[200], one[200];
        snprintf(one, sizeof one, "%.*s", (int)(n < 150 ? n : 150), p);
        if (!s) {
            char names[400] = "";
            for (size_t i = 0, used = 0; course[i] && used < sizeof names; i++)
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", course[i]);
            snprintf(err, MT_ERR_LEN, "--resume-changed '%s': not a setting a checkpoint records (%s)",
                     mp_quote(one, quoted, sizeof quoted), names);
            return -1;
        }
        if (s->shapes) {
            snprintf(err, MT_ERR_LEN, "--resume-changed '%s': it shapes the saved state, so a resume cannot change "
                     "it", s->key);
            return -1;
        }
        if (!e) return 0;
        p = e + 1;
    }
}

/* One line of a record: key and value, or false when the text is not one. */
static bool record_line(const char **at, const char *end, const char **key, size_t *klen, const char **val,
                        size_t *vlen)
{
    const char *p = *at, *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) return false;
    const char *eq = memchr(p, '=', (size_t)(nl - p));
    if (!eq || eq == p || memchr(p, 0, (size_t)(nl - p))) return false;
    *key = p, *klen = (size_t)(eq - p), *val = eq + 1, *vlen = (size_t)(nl - eq - 1);
    *at = nl + 1;
    return true;
}

/* The checkpoint's record against this run's: every recorded setting the same, or
 * listed in `changed` (and not one that shapes the state). */
static int compare_settings(const mt_config *c, const char *rec, size_t len, const char *name, const char *changed,
                            char *err)
{
    const char *found[MAX_SETTINGS] = {0};
    size_t flen[MAX_SETTINGS] = {0}, count = 0;
    for (const char *at = rec, *end = rec + len; at < end;) {
        const char *key, *val;
        size_t klen, vlen;
        const struct setting *s;
        if (!record_line(&at, end, &key, &klen, &val, &vlen) || !(s = setting_find(key, klen)) ||
            found[s - settings]) {
            snprintf(err, MT_ERR_LEN, "checkpoint '%.200s': its settings record is damaged (line %zu)", name,
                     count + 1);
            return -1;
        }
        found[s - settings] = val, flen[s - settings] = vlen, count++;
    }
    if (count != NSETTINGS) {
        snprintf(err, MT_ERR_LEN, "checkpoint '%.200s': its settings record holds %zu settings, not %zu", name, count,
                 NSETTINGS);
        return -1;
    }
    const struct setting *first = NULL;
    char mine[VALUE_MAX], first_mine[VALUE_MAX] = "", others[200] = "";
    for (size_t i = 0; i < NSETTINGS; i++) {
        setting_value(c, &settings[i], mine, sizeof mine);
        if (strlen(mine) == flen[i] && !memcmp(mine, found[i], flen[i])) continue;
        if (!settings[i].shapes && changed && listed(changed, settings[i].key)) continue;
        if (!first) {
            first = &settings[i];
            snprintf(first_mine, sizeof first_mine, "%s", mine);
        } else {
            size_t n = strlen(others);
            snprintf(others + n, sizeof others - n, "%s%s", n ? ", " : "", settings[i].key);
        }
    }
    if (!first) return 0;
    size_t i = (size_t)(first - settings);
    char theirs[124], shown[160];
    /* the record's bytes, as one line whatever they hold */
    snprintf(theirs, sizeof theirs, "%.*s", (int)(flen[i] < 120 ? flen[i] : 120), found[i]);
    snprintf(err, MT_ERR_LEN, "checkpoint '%.150s' was written for a different configuration: %s = '%s' there, "
             "'%.120s' in this run (%s%s%s)", name, first->key, mp_quote(theirs, shown, sizeof shown),
             first_mine, first->shapes ? "it shapes the saved state" : "--resume-changed ",
             first->shapes ? "" : first->key, first->shapes ? "" : " if that is intended");
    if (others[0]) {
        size_t n = strlen(err);
        snprintf(err + n, MT_ERR_LEN - n, "; also %s", others);
    }
    return -1;
}

/* ---------- one image: header, settings, the trainer's state ---------- */

void mt_checkpoint_seal(uint8_t *image, size_t len)
{
    ckpt_header h;
    if (len < sizeof h) return;
    memcpy(&h, image, sizeof h);
    h.checksum = 0;
    uint64_t sum = fnv1a(&h, sizeof h, FNV_SEED);
    sum = fnv1a(image + sizeof h, len - sizeof h, sum);
    memcpy(image + offsetof(ckpt_header, checksum), &sum, sizeof sum);
}

static uint64_t checksum_of(const uint8_t *image, size_t len)
{
    ckpt_header h;
    memcpy(&h, image, sizeof h);
    return h.checksum;
}

/* This rank's state as a checkpoint image (malloc'd) of *len bytes. */
static uint8_t *image_of(mt_trainer *t, size_t *len, uint64_t *checksum, char *err)
{
    const mt_config *c = mt_trainer_config(t);
    size_t n = mt_trainer_state_size(t), rlen;
    char *rec = record_of(c, false, &rlen);
    uint8_t *buf = rec ? malloc(sizeof(ckpt_header) + rlen + n) : NULL;
    if (!buf) {
        free(rec);
        snprintf(err, MT_ERR_LEN, "out of memory for a %zu-byte checkpoint", n);
        return NULL;
    }
    ckpt_header h = {.version = CKPT_VERSION, .header_bytes = sizeof h, .step = (uint64_t)mt_trainer_steps(t),
                     .config_hash = config_hash(c), .rank = c->rank, .ranks = c->ranks, .zero = c->s.zero,
                     .settings_len = rlen, .payload_len = n};
    memcpy(h.magic, CKPT_MAGIC, 8);
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, rec, rlen);
    free(rec);
    if (mt_trainer_state_save(t, buf + sizeof h + rlen, n, err)) {
        free(buf);
        return NULL;
    }
    *len = sizeof h + rlen + n;
    mt_checkpoint_seal(buf, *len);
    *checksum = checksum_of(buf, *len);
    return buf;
}

#define REFUSE(...) (snprintf(err, MT_ERR_LEN, __VA_ARGS__), -1)

int mt_checkpoint_load_image(mt_trainer *t, const uint8_t *image, size_t len, const char *name,
                             const mt_manifest *m, const char *changed, char *err)
{
    const mt_config *c = mt_trainer_config(t);
    ckpt_header h;
    if (len < sizeof h)
        return REFUSE("checkpoint '%.200s' is truncated (%zu bytes, shorter than its %zu-byte header)", name, len,
                      sizeof h);
    memcpy(&h, image, sizeof h);
    if (memcmp(h.magic, CKPT_MAGIC, 8))
        return REFUSE("checkpoint '%.200s' is not a memtrain checkpoint", name);
    if (h.version != CKPT_VERSION)
        return REFUSE("checkpoint '%.200s' is format version %" PRIu32 "; this memtrain reads version %u", name,
                      h.version, CKPT_VERSION);
    /* the lengths before the checksum, which covers them: they say what to sum */
    if (h.header_bytes != sizeof h || h.settings_len > SETTINGS_MAX || h.payload_len > len ||
        len - sizeof h != h.settings_len + h.payload_len)
        return REFUSE("checkpoint '%.200s' is truncated or has trailing bytes (%zu bytes; its header says %" PRIu64
                      " + %" PRIu64 " after %" PRIu32 ")", name, len, h.settings_len, h.payload_len, h.header_bytes);
    ckpt_header z = h;
    z.checksum = 0;
    uint64_t sum = fnv1a(image + sizeof h, len - sizeof h, fnv1a(&z, sizeof z, FNV_SEED));
    if (sum != h.checksum || (m && h.checksum != m->checksum[c->rank]))
        return REFUSE("checkpoint '%.200s' fails its checksum: refusing to load it", name);
    if (h.ranks != c->ranks || h.rank != c->rank)
        return REFUSE("checkpoint '%.200s' was written by rank %" PRId32 " of %" PRId32 "; this is rank %d of %d",
                      name, h.rank, h.ranks, c->rank, c->ranks);
    if (h.reserved) return REFUSE("checkpoint '%.200s' is damaged (its header's reserved word is not 0)", name);
    if (h.zero != c->s.zero)
        return REFUSE("checkpoint '%.200s' was written for a different configuration (another zero stage): zero = "
                      "%" PRId32 " there, %d in this run", name, h.zero, c->s.zero);
    if (h.step > MT_MAX_STEPS)
        return REFUSE("checkpoint '%.200s': step %lld is out of range (0 to %d)", name, (long long)h.step,
                      MT_MAX_STEPS);
    if (m && (h.step != (uint64_t)m->step || h.config_hash != m->config_hash))
        return REFUSE("checkpoint '%.200s' is not the one its manifest names (step %" PRIu64 ", manifest step %ld)",
                      name, h.step, m->step);
    if (compare_settings(c, (const char *)image + sizeof h, h.settings_len, name, changed, err)) return -1;
    if (h.config_hash != config_hash(c))
        return REFUSE("checkpoint '%.200s' was written for a different configuration (its settings hash)", name);
    const uint8_t *state = image + sizeof h + h.settings_len;
    long step;
    char why[MT_ERR_LEN];
    if (mt_trainer_state_check(t, state, h.payload_len, &step, why))
        return REFUSE("checkpoint '%.150s': %.340s", name, why);
    if ((uint64_t)step != h.step)
        return REFUSE("checkpoint '%.200s': its header's step %" PRIu64 " is not its state's %ld", name, h.step, step);
    if (mt_trainer_state_load(t, state, h.payload_len, why))
        return REFUSE("checkpoint '%.150s': %.340s", name, why);
    return 0;
}

/* A whole input file of at most `max` bytes (malloc'd): a regular file, never a pipe or
 * a device, which would be read without end. */
static int read_whole(const char *path, const char *what, size_t max, uint8_t **out, size_t *len, char *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        int e = errno;
        if (fd >= 0) close(fd);
        return REFUSE("cannot open %s '%.200s': %s", what, path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return REFUSE("%s '%.200s' is not a regular file", what, path);
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return REFUSE("%s '%.200s' has %lld bytes, more than this run's %zu: it has trailing bytes or is another "
                      "run's", what, path, (long long)st.st_size, max);
    }
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return REFUSE("out of memory for %s '%.200s' (%zu bytes)", what, path, n);
    }
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    *out = buf, *len = got; /* a file that shrank meanwhile reads as truncated */
    return 0;
}

static int load_file(mt_trainer *t, const char *path, const mt_manifest *m, const char *changed, char *err)
{
    uint8_t *image;
    size_t len, most = sizeof(ckpt_header) + SETTINGS_MAX + mt_trainer_state_size(t);
    if (read_whole(path, "checkpoint", most, &image, &len, err)) return -1;
    int rc = mt_checkpoint_load_image(t, image, len, path, m, changed, err);
    free(image);
    return rc;
}

/* Make the renames inside `dir` durable. */
static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

static int make_dir(const char *dir, char *err)
{
    if (mkdir(dir, 0755) && errno != EEXIST) return REFUSE("cannot create '%.200s': %s", dir, strerror(errno));
    return 0;
}

/* Whole files through the atomic writer: a temporary name of its own, then a rename
 * that replaces what stands at the path (a planted link included) and follows nothing. */
static int write_image(const char *path, const uint8_t *buf, size_t len, char *err)
{
    char merr[MP_ERR_LEN];
    if (mp_write_regular_file_atomic(path, (const char *)buf, len, merr)) return REFUSE("%s", merr);
    return 0;
}

static bool file_exists(const char *path) { return access(path, F_OK) == 0; }

/* ---------- one process ---------- */

static int save_single(mt_trainer *t, const char *dir, char *err)
{
    size_t len;
    uint64_t sum;
    if (make_dir(dir, err)) return -1;
    uint8_t *buf = image_of(t, &len, &sum, err);
    if (!buf) return -1;
    char path[1024];
    snprintf(path, sizeof path, "%.1000s/" CKPT_FILE, dir);
    int rc = write_image(path, buf, len, err);
    free(buf);
    if (!rc) sync_dir(dir);
    return rc;
}

/* ---------- the manifest ---------- */

static void shard_name(char *out, size_t len, long step, int rank, int ranks)
{
    snprintf(out, len, "step%08ld.rank%d-of-%d.bin", step, rank, ranks);
}

static int write_manifest(const char *dir, const mt_manifest *m, char *err)
{
    char hex[20], path[1024], merr[MP_ERR_LEN];
    json_t *o = json_object(), *shards = json_array();
    json_object_set_new(o, "format", json_string(MANIFEST_FORMAT));
    json_object_set_new(o, "version", json_integer(MANIFEST_VERSION));
    json_object_set_new(o, "step", json_integer(m->step));
    json_object_set_new(o, "ranks", json_integer(m->ranks));
    json_object_set_new(o, "zero", json_integer(m->zero));
    snprintf(hex, sizeof hex, "%016" PRIx64, m->config_hash);
    json_object_set_new(o, "config_hash", json_string(hex));
    for (int r = 0; r < m->ranks; r++) {
        json_t *s = json_object();
        json_object_set_new(s, "rank", json_integer(r));
        json_object_set_new(s, "file", json_string(m->file[r]));
        json_object_set_new(s, "bytes", json_integer((json_int_t)m->bytes[r]));
        snprintf(hex, sizeof hex, "%016" PRIx64, m->checksum[r]);
        json_object_set_new(s, "checksum", json_string(hex));
        json_array_append_new(shards, s);
    }
    json_object_set_new(o, "shards", shards);
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    snprintf(path, sizeof path, "%.1000s/" MANIFEST_FILE, dir);
    int rc = text && !mp_write_regular_file_atomic(path, text, strlen(text), merr) ? 0 : -1;
    if (rc) snprintf(err, MT_ERR_LEN, "%s", text ? merr : "cannot format the checkpoint manifest");
    free(text);
    return rc;
}

/* Exactly 16 hex digits, as the writer writes them. */
static bool hex_u64(json_t *v, uint64_t *out)
{
    const char *s = json_string_value(v);
    if (!s || strlen(s) != 16 || strspn(s, "0123456789abcdef") != 16) return false;
    *out = strtoull(s, NULL, 16);
    return true;
}

/* A JSON value as it reads, for a message: at most 40 bytes of one line. */
static const char *json_text(json_t *v, char *buf, size_t cap)
{
    if (!v) return "(absent)";
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    char cut[44];
    snprintf(cut, sizeof cut, "%.40s", s ? s : "?");
    free(s);
    return mp_quote(cut, buf, cap);
}

/* An integer field, exactly (a JSON integer: never a real or a string) and within
 * [lo, hi] before it is narrowed. */
static int int_field(json_t *o, const char *key, const char *where, json_int_t lo, json_int_t hi, json_int_t *out,
                     const char *name, char *err)
{
    json_t *v = json_object_get(o, key);
    char shown[100];
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return REFUSE("checkpoint manifest '%.200s': %s%s %s is out of range (an integer, %lld to %lld)", name,
                      where, key, json_text(v, shown, sizeof shown), (long long)lo, (long long)hi);
    *out = json_integer_value(v);
    return 0;
}

int mt_manifest_parse(const char *text, size_t len, const char *name, mt_manifest *m, char *err)
{
    memset(m, 0, sizeof *m);
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    char why[120];
    /* jansson's message quotes the text near the error, which may hold any byte */
    if (!o) return REFUSE("checkpoint manifest '%.200s' cannot be read: %s", name, mp_quote(je.text, why, sizeof why));
    int rc = -1;
    json_int_t v, step, ranks, zero;
    const char *format = json_string_value(json_object_get(o, "format"));
    json_t *shards = json_object_get(o, "shards");
    if (!json_is_object(o) || !format || strcmp(format, MANIFEST_FORMAT))
        rc = REFUSE("checkpoint manifest '%.200s' is not a memtrain manifest", name);
    else if (int_field(o, "version", "", MANIFEST_VERSION, MANIFEST_VERSION, &v, name, err) ||
             int_field(o, "step", "", 0, MT_MAX_STEPS, &step, name, err) ||
             int_field(o, "ranks", "", 1, MAX_RANKS, &ranks, name, err) ||
             int_field(o, "zero", "", 0, 3, &zero, name, err))
        rc = -1;
    else if (!hex_u64(json_object_get(o, "config_hash"), &m->config_hash))
        rc = REFUSE("checkpoint manifest '%.200s': its config_hash is not 16 hex digits", name);
    else if (!json_is_array(shards) || json_array_size(shards) != (size_t)ranks)
        rc = REFUSE("checkpoint manifest '%.200s': %zu shards for %lld ranks", name,
                    json_is_array(shards) ? json_array_size(shards) : 0, (long long)ranks);
    else
        rc = 0;
    if (!rc) m->step = (long)step, m->ranks = (int)ranks, m->zero = (int)zero;
    for (int r = 0; !rc && r < m->ranks; r++) {
        json_t *s = json_array_get(shards, (size_t)r);
        char where[32], want[64];
        snprintf(where, sizeof where, "shard %d's ", r);
        /* the name the writer gives: a shard cannot stand in for another step's or rank's */
        shard_name(want, sizeof want, m->step, r, m->ranks);
        const char *file = json_string_value(json_object_get(s, "file"));
        if (!json_is_object(s)) {
            rc = REFUSE("checkpoint manifest '%.200s': shard %d is not an object", name, r);
        } else if (int_field(s, "rank", where, r, r, &v, name, err) ||
                   int_field(s, "bytes", where, (json_int_t)sizeof(ckpt_header), INT64_MAX, &v, name, err)) {
            rc = -1;
        } else if (!file || strcmp(file, want)) {
            char shown[100];
            rc = REFUSE("checkpoint manifest '%.200s': shard %d's file %s is not '%s'", name, r,
                        json_text(json_object_get(s, "file"), shown, sizeof shown), want);
        } else if (!hex_u64(json_object_get(s, "checksum"), &m->checksum[r])) {
            rc = REFUSE("checkpoint manifest '%.200s': shard %d's checksum is not 16 hex digits", name, r);
        } else {
            snprintf(m->file[r], sizeof m->file[r], "%s", want);
            m->bytes[r] = (uint64_t)v;
        }
    }
    json_decref(o);
    return rc;
}

static int read_manifest(const char *dir, mt_manifest *m, char *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%.1000s/" MANIFEST_FILE, dir);
    uint8_t *text;
    size_t len;
    if (read_whole(path, "checkpoint manifest", MANIFEST_MAX_BYTES, &text, &len, err)) return -1;
    int rc = mt_manifest_parse((const char *)text, len, path, m, err);
    free(text);
    return rc;
}

/* ---------- several ranks ---------- */

/* What one rank reports to rank 0 after writing its shard. */
typedef struct shard_report {
    int ok;
    uint64_t bytes, checksum;
    char err[400];
} shard_report;

/* Every rank's status to all: 0 when all succeeded, else -1 (rank 0's err
 * already names the failure; the others say where to look). */
static int agree(int mine, const mt_config *c, char *err)
{
    if (mt_dist_sum(mine ? 1.0 : 0.0) == 0) return 0;
    if (c->rank != 0 && !mine) snprintf(err, MT_ERR_LEN, "the checkpoint failed on another rank");
    return -1;
}

/* Digits at *p (1 to `most` of them): past them, or NULL. */
static const char *digits(const char *p, size_t most)
{
    size_t n = strspn(p, "0123456789");
    return n >= 1 && n <= most ? p + n : NULL;
}

/* Whether a folder entry is named as a shard is (stepS.rankR-of-N.bin), read as text:
 * no number in a name is converted, so none can overflow. */
static bool shard_like(const char *name)
{
    const char *p = !strncmp(name, "step", 4) ? digits(name + 4, 19) : NULL;
    p = p && !strncmp(p, ".rank", 5) ? digits(p + 5, 9) : NULL;
    p = p && !strncmp(p, "-of-", 4) ? digits(p + 4, 9) : NULL;
    return p && !strcmp(p, ".bin");
}

/* Shards of earlier checkpoints, once the new manifest names others. */
static void remove_stale_shards(const char *dir, const mt_manifest *m)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!shard_like(e->d_name)) continue;
        bool current = false;
        for (int r = 0; r < m->ranks && !current; r++) current = !strcmp(e->d_name, m->file[r]);
        if (current) continue;
        char path[1200];
        snprintf(path, sizeof path, "%.1000s/%.150s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* Rank 0 commits what the ranks wrote: the manifest, then the old shards go. */
static int commit_manifest(mt_trainer *t, const char *dir, const shard_report *all, char *err)
{
    const mt_config *c = mt_trainer_config(t);
    mt_manifest *m = calloc(1, sizeof *m);
    if (!m) return REFUSE("out of memory for a checkpoint manifest");
    m->step = mt_trainer_steps(t), m->ranks = c->ranks, m->zero = c->s.zero, m->config_hash = config_hash(c);
    int rc = 0;
    for (int r = 0; !rc && r < c->ranks; r++) {
        if (!all[r].ok) rc = REFUSE("rank %d: %s", r, all[r].err);
        shard_name(m->file[r], sizeof m->file[r], m->step, r, c->ranks);
        m->bytes[r] = all[r].bytes, m->checksum[r] = all[r].checksum;
    }
    if (!rc) rc = write_manifest(dir, m, err);
    if (!rc) {
        sync_dir(dir);
        remove_stale_shards(dir, m);
    }
    free(m);
    return rc;
}

static int save_sharded(mt_trainer *t, const char *dir, char *err)
{
    const mt_config *c = mt_trainer_config(t);
    shard_report mine = {0};
    size_t len = 0;
    char name[64], path[1200], e2[MT_ERR_LEN] = "";
    uint8_t *buf = make_dir(dir, e2) ? NULL : image_of(t, &len, &mine.checksum, e2);
    shard_name(name, sizeof name, mt_trainer_steps(t), c->rank, c->ranks);
    snprintf(path, sizeof path, "%.1000s/%s", dir, name);
    mine.ok = buf && !write_image(path, buf, len, e2);
    mine.bytes = len;
    snprintf(mine.err, sizeof mine.err, "%.399s", e2);
    free(buf);
    shard_report all[MAX_RANKS];
    int rc = 0;
    if (mt_dist_gather(&mine, all, sizeof mine)) rc = REFUSE("%s", mt_last_error());
    if (!rc && c->rank == 0) rc = commit_manifest(t, dir, all, err);
    if (!mine.ok && c->rank != 0) snprintf(err, MT_ERR_LEN, "%s", mine.err);
    return agree(rc, c, err);
}

/* Rank 0 checks the whole checkpoint before any rank loads: the manifest
 * against this run, then every shard's size. */
static int check_sharded(const mt_trainer *t, const char *dir, const mt_manifest *m, char *err)
{
    const mt_config *c = mt_trainer_config(t);
    if (m->ranks != c->ranks)
        return REFUSE("checkpoint '%.200s' was written by %d ranks; this run has %d (resume on the same rank count)",
                      dir, m->ranks, c->ranks);
    if (m->zero != c->s.zero)
        return REFUSE("checkpoint '%.200s' was written for a different configuration (another zero stage): zero = "
                      "%d there, %d in this run", dir, m->zero, c->s.zero);
    for (int r = 0; r < m->ranks; r++) {
        char path[1200];
        struct stat st;
        snprintf(path, sizeof path, "%.1000s/%s", dir, m->file[r]);
        if (stat(path, &st)) return REFUSE("checkpoint '%.200s' lacks rank %d's shard '%s'", dir, r, m->file[r]);
        if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != m->bytes[r])
            return REFUSE("checkpoint shard '%.200s' has %lld bytes%s, its manifest says %" PRIu64, path,
                          (long long)st.st_size, S_ISREG(st.st_mode) ? "" : " and is not a regular file", m->bytes[r]);
    }
    return 0;
}

static int load_sharded(mt_trainer *t, const char *dir, const char *changed, char *err)
{
    const mt_config *c = mt_trainer_config(t);
    mt_manifest *m = calloc(1, sizeof *m);
    int rc = m ? 0 : REFUSE("out of memory for a checkpoint manifest");
    char single[1024];
    snprintf(single, sizeof single, "%.1000s/" MANIFEST_FILE, dir);
    if (!rc && !file_exists(single)) {
        snprintf(single, sizeof single, "%.1000s/" CKPT_FILE, dir);
        if (file_exists(single))
            rc = REFUSE("checkpoint '%.200s' was written by one process; this run has %d ranks", dir, c->ranks);
        else
            rc = REFUSE("'%.200s' holds no memtrain checkpoint (no %s)", dir, MANIFEST_FILE);
    }
    if (!rc) rc = read_manifest(dir, m, err);
    if (!rc && c->rank == 0) rc = check_sharded(t, dir, m, err);
    if (agree(rc, c, err)) {
        free(m);
        return -1;
    }
    char path[1200];
    snprintf(path, sizeof path, "%.1000s/%s", dir, m->file[c->rank]);
    rc = load_file(t, path, m, changed, err);
    free(m);
    /* a shard that fails here is named by its rank: say it from rank 0 too */
    shard_report mine = {.ok = !rc}, all[MAX_RANKS];
    snprintf(mine.err, sizeof mine.err, "%.399s", rc ? err : "");
    if (!mt_dist_gather(&mine, all, sizeof mine) && c->rank == 0)
        for (int r = 0; r < c->ranks; r++)
            if (!all[r].ok) {
                snprintf(err, MT_ERR_LEN, "%s", all[r].err);
                break;
            }
    return agree(rc, c, err);
}

/* ---------- the API ---------- */

int mt_checkpoint_save(mt_trainer *t, const char *dir, char *err)
{
    return mt_trainer_config(t)->ranks > 1 ? save_sharded(t, dir, err) : save_single(t, dir, err);
}

int mt_checkpoint_load(mt_trainer *t, const char *dir, const char *changed, char *err)
{
    if (mt_trainer_config(t)->ranks > 1) return load_sharded(t, dir, changed, err);
    char path[1024];
    snprintf(path, sizeof path, "%.1000s/" CKPT_FILE, dir);
    if (!file_exists(path)) {
        snprintf(path, sizeof path, "%.1000s/" MANIFEST_FILE, dir);
        if (file_exists(path)) {
            mt_manifest *m = malloc(sizeof *m);
            if (!m) return REFUSE("out of memory for a checkpoint manifest");
            if (read_manifest(dir, m, err) == 0)
                (void)REFUSE("checkpoint '%.200s' was written by %d ranks; this run has 1 (resume on the same rank count)",
                       dir, m->ranks);
            free(m);
            return -1;
        }
        snprintf(path, sizeof path, "%.1000s/" CKPT_FILE, dir);
    }
    return load_file(t, path, NULL, changed, err);
}
