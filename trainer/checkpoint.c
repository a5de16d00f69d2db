/*
 * checkpoint.c — memtrain's checkpoints (see checkpoint.h): one file for one
 * process; per-rank shards and a manifest for a data-parallel run.
 */
#include "checkpoint.h"

#include "dist.h"
#include "memplan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_MAGIC "MEMTRAIN"
#define CKPT_VERSION 1u
#define CKPT_FILE "checkpoint.bin"
#define MANIFEST_FILE "manifest.json"
#define MANIFEST_FORMAT "memtrain checkpoint"
#define MANIFEST_VERSION 2
#define FNV_SEED 1469598103934665603ull

typedef struct ckpt_header {
    char magic[8];
    uint32_t version, reserved;
    uint64_t config_hash, step, payload_len, checksum;
} ckpt_header;

/* FNV-1a, 64 bit: detects truncation and flipped bytes (not an adversary). */
static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* The configuration's identity: every field that shapes the state. Settings
 * enter by name, so the identity does not depend on the enums' numbering. */
static uint64_t config_hash(const mt_config *c)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%d %d %d %d %d %d %d %d %d %d %d %s %s %s %s %s %d %u %s %s %d %d",
                     c->family, c->layers, c->hidden, c->heads, c->kv_heads, c->ffn, c->vocab, c->max_pos,
                     c->batch, c->seq, c->accum, mp_precision_name(c->precision), mp_attention_name(c->attention),
                     mp_ckpt_name(c->checkpointing), mp_ce_name(c->ce), mp_optimizer_name(c->optimizer),
                     c->lora_rank, c->lora_targets, mp_quant_name(c->quant), mp_loader_name(c->loader),
                     c->shuffle_buffer, c->opt.block);
    return fnv1a(buf, (size_t)n, FNV_SEED);
}

/* ---------- one image: header + the trainer's state ---------- */

/* This rank's state as a checkpoint image (malloc'd) of *len bytes. */
static uint8_t *image_of(mt_trainer *t, size_t *len, uint64_t *checksum, char *err)
{
    size_t n = mt_trainer_state_size(t);
    uint8_t *buf = malloc(sizeof(ckpt_header) + n);
    if (!buf) {
        snprintf(err, MT_ERR_LEN, "out of memory for a %zu-byte checkpoint", n);
        return NULL;
    }
    ckpt_header h = {.version = CKPT_VERSION, .config_hash = config_hash(mt_trainer_config(t)),
                     .step = (uint64_t)mt_trainer_steps(t), .payload_len = n};
    memcpy(h.magic, CKPT_MAGIC, 8);
    if (mt_trainer_state_save(t, buf + sizeof h, n, err)) {
        free(buf);
        return NULL;
    }
    h.checksum = fnv1a(buf + sizeof h, n, FNV_SEED);
    memcpy(buf, &h, sizeof h);
    *len = sizeof h + n;
    *checksum = h.checksum;
    return buf;
}

/* The file's image checked against this configuration (and, when `want` is
 * not 0, against the manifest's checksum); its payload in *payload. */
static int read_image(const mt_trainer *t, const char *path, uint64_t want, uint8_t **payload, size_t *len, char *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, MT_ERR_LEN, "cannot open checkpoint '%.120s': %s", path, strerror(errno));
        return -1;
    }
    ckpt_header h;
    int rc = -1;
    uint8_t *buf = NULL;
    if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, CKPT_MAGIC, 8) || h.version != CKPT_VERSION)
        snprintf(err, MT_ERR_LEN, "checkpoint '%.120s' is not a memtrain checkpoint (or is truncated)", path);
    else if (h.config_hash != config_hash(mt_trainer_config(t)))
        snprintf(err, MT_ERR_LEN, "checkpoint '%.120s' was written for a different configuration", path);
    else if (h.payload_len != mt_trainer_state_size(t) || !(buf = malloc(h.payload_len ? h.payload_len : 1)))
        snprintf(err, MT_ERR_LEN, "checkpoint '%.120s' has the wrong size for this configuration", path);
    else if (fread(buf, 1, h.payload_len, f) != h.payload_len || fgetc(f) != EOF)
        snprintf(err, MT_ERR_LEN, "checkpoint '%.120s' is truncated or has trailing bytes", path);
    else if (fnv1a(buf, h.payload_len, FNV_SEED) != h.checksum || (want && h.checksum != want))
        snprintf(err, MT_ERR_LEN, "checkpoint '%.120s' fails its checksum: refusing to load it", path);
    else
        rc = 0;
    fclose(f);
    if (rc) free(buf);
    else *payload = buf, *len = h.payload_len;
    return rc;
}

/* Make the renames inside `dir` durable. */
static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

static int make_dir(const char *dir, char *err)
{
    if (mkdir(dir, 0755) && errno != EEXIST) {
        snprintf(err, MT_ERR_LEN, "cannot create '%.120s': %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

static int write_image(const char *path, const uint8_t *buf, size_t len, char *err)
{
    char merr[MP_ERR_LEN];
    if (mp_write_file_atomic(path, (const char *)buf, len, merr)) {
        snprintf(err, MT_ERR_LEN, "%s", merr);
        return -1;
    }
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

static int load_file(mt_trainer *t, const char *path, uint64_t want, char *err)
{
    uint8_t *payload;
    size_t len;
    if (read_image(t, path, want, &payload, &len, err)) return -1;
    int rc = mt_trainer_state_load(t, payload, len, err);
    free(payload);
    return rc;
}

/* ---------- the manifest ---------- */

typedef struct manifest {
    long step;
    int ranks, zero;
    uint64_t config_hash;
    char file[64][128];       /* per rank */
    uint64_t checksum[64];
    size_t bytes[64];
} manifest;
#define MAX_RANKS MT_CHECKPOINT_MAX_RANKS

static void shard_name(char *out, size_t len, long step, int rank, int ranks)
{
    snprintf(out, len, "step%08ld.rank%d-of-%d.bin", step, rank, ranks);
}

static int write_manifest(const char *dir, const manifest *m, char *err)
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
    int rc = text && !mp_write_file_atomic(path, text, strlen(text), merr) ? 0 : -1;
    if (rc) snprintf(err, MT_ERR_LEN, "%s", text ? merr : "cannot format the checkpoint manifest");
    free(text);
    return rc;
}

static bool hex_u64(json_t *v, uint64_t *out)
{
    const char *s = json_string_value(v);
    char *end;
    if (!s || !*s) return false;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 16);
    *out = x;
    return !errno && !*end;
}

/* One shard entry of the manifest, checked: rank r, a plain file name. */
static int read_shard_entry(json_t *s, int r, manifest *m, const char *path, char *err)
{
    const char *file = json_string_value(json_object_get(s, "file"));
    json_t *bytes = json_object_get(s, "bytes");
    if (!json_is_object(s) || json_integer_value(json_object_get(s, "rank")) != r || !file || !*file ||
        strchr(file, '/') || strlen(file) >= sizeof m->file[r] || !json_is_integer(bytes) ||
        json_integer_value(bytes) < 0 || !hex_u64(json_object_get(s, "checksum"), &m->checksum[r])) {
        snprintf(err, MT_ERR_LEN, "checkpoint manifest '%.120s': shard %d is malformed", path, r);
        return -1;
    }
    snprintf(m->file[r], sizeof m->file[r], "%s", file);
    m->bytes[r] = (size_t)json_integer_value(bytes);
    return 0;
}

static int read_manifest(const char *dir, manifest *m, char *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%.1000s/" MANIFEST_FILE, dir);
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    if (!o) {
        snprintf(err, MT_ERR_LEN, "checkpoint manifest '%.120s' cannot be read: %.60s", path, je.text);
        return -1;
    }
    memset(m, 0, sizeof *m);
    json_t *shards = json_object_get(o, "shards");
    const char *format = json_string_value(json_object_get(o, "format"));
    m->step = (long)json_integer_value(json_object_get(o, "step"));
    m->ranks = (int)json_integer_value(json_object_get(o, "ranks"));
    m->zero = (int)json_integer_value(json_object_get(o, "zero"));
    int rc = 0;
    if (!format || strcmp(format, MANIFEST_FORMAT) ||
        json_integer_value(json_object_get(o, "version")) != MANIFEST_VERSION || m->ranks < 1 ||
        m->ranks > MAX_RANKS || m->step < 0 || !json_is_array(shards) || (int)json_array_size(shards) != m->ranks ||
        !hex_u64(json_object_get(o, "config_hash"), &m->config_hash)) {
        snprintf(err, MT_ERR_LEN, "checkpoint manifest '%.120s' is not a memtrain manifest (or is damaged)", path);
        rc = -1;
    }
    for (int r = 0; !rc && r < m->ranks; r++) rc = read_shard_entry(json_array_get(shards, (size_t)r), r, m, path, err);
    json_decref(o);
    return rc;
}

/* ---------- several ranks ---------- */

/* What one rank reports to rank 0 after writing its shard. */
typedef struct shard_report {
    int ok;
    uint64_t bytes, checksum;
    char err[200];
} shard_report;

/* Every rank's status to all: 0 when all succeeded, else -1 (rank 0's err
 * already names the failure; the others say where to look). */
static int agree(int mine, const mt_config *c, char *err)
{
    if (mt_dist_sum(mine ? 1.0 : 0.0) == 0) return 0;
    if (c->rank != 0 && !mine) snprintf(err, MT_ERR_LEN, "the checkpoint failed on another rank");
    return -1;
}

/* Shards of earlier checkpoints, once the new manifest names others. */
static void remove_stale_shards(const char *dir, const manifest *m)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char keep[64];
    shard_name(keep, sizeof keep, m->step, 0, m->ranks);
    while ((e = readdir(d))) {
        long step;
        int r, n, used = 0;
        if (sscanf(e->d_name, "step%ld.rank%d-of-%d.bin%n", &step, &r, &n, &used) != 3 || e->d_name[used]) continue;
        if (step == m->step && n == m->ranks) continue;
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
    manifest m = {.step = mt_trainer_steps(t), .ranks = c->ranks, .zero = c->zero, .config_hash = config_hash(c)};
    for (int r = 0; r < c->ranks; r++) {
        if (!all[r].ok) {
            snprintf(err, MT_ERR_LEN, "rank %d: %s", r, all[r].err);
            return -1;
        }
        shard_name(m.file[r], sizeof m.file[r], m.step, r, c->ranks);
        m.bytes[r] = all[r].bytes, m.checksum[r] = all[r].checksum;
    }
    if (write_manifest(dir, &m, err)) return -1;
    sync_dir(dir);
    remove_stale_shards(dir, &m);
    return 0;
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
    snprintf(mine.err, sizeof mine.err, "%.199s", e2);
    free(buf);
    shard_report all[MAX_RANKS];
    int rc = 0;
    if (mt_dist_gather(&mine, all, sizeof mine)) {
        snprintf(err, MT_ERR_LEN, "%s", mt_last_error());
        rc = -1;
    }
    if (!rc && c->rank == 0) rc = commit_manifest(t, dir, all, err);
    if (!mine.ok && c->rank != 0) snprintf(err, MT_ERR_LEN, "%s", mine.err);
    return agree(rc, c, err);
}

/* Rank 0 checks the whole checkpoint before any rank loads: the manifest
 * against this run, then every shard's size and checksum. */
static int check_sharded(const mt_trainer *t, const char *dir, const manifest *m, char *err)
{
    const mt_config *c = mt_trainer_config(t);
    if (m->ranks != c->ranks) {
        snprintf(err, MT_ERR_LEN, "checkpoint '%.120s' was written by %d ranks; this run has %d (resume on the same "
                 "rank count)", dir, m->ranks, c->ranks);
        return -1;
    }
    if (m->zero != c->zero || m->config_hash != config_hash(c)) {
        snprintf(err, MT_ERR_LEN, "checkpoint '%.120s' was written for a different configuration%s", dir,
                 m->zero != c->zero ? " (another zero stage)" : "");
        return -1;
    }
    for (int r = 0; r < m->ranks; r++) {
        char path[1200];
        struct stat st;
        snprintf(path, sizeof path, "%.1000s/%s", dir, m->file[r]);
        if (stat(path, &st)) {
            snprintf(err, MT_ERR_LEN, "checkpoint '%.120s' lacks rank %d's shard '%s'", dir, r, m->file[r]);
            return -1;
        }
        if ((size_t)st.st_size != m->bytes[r]) {
            snprintf(err, MT_ERR_LEN, "checkpoint shard '%.120s' has %lld bytes, its manifest says %zu", path,
                     (long long)st.st_size, m->bytes[r]);
            return -1;
        }
    }
    return 0;
}

static int load_sharded(mt_trainer *t, const char *dir, char *err)
{
    const mt_config *c = mt_trainer_config(t);
    manifest *m = calloc(1, sizeof *m);
    int rc = m ? 0 : -1;
    if (!m) snprintf(err, MT_ERR_LEN, "out of memory for a checkpoint manifest");
    char single[1024];
    snprintf(single, sizeof single, "%.1000s/" MANIFEST_FILE, dir);
    if (!rc && !file_exists(single)) {
        snprintf(single, sizeof single, "%.1000s/" CKPT_FILE, dir);
        if (file_exists(single))
            snprintf(err, MT_ERR_LEN, "checkpoint '%.120s' was written by one process; this run has %d ranks", dir,
                     c->ranks);
        else
            snprintf(err, MT_ERR_LEN, "'%.120s' holds no memtrain checkpoint (no %s)", dir, MANIFEST_FILE);
        rc = -1;
    }
    if (!rc) rc = read_manifest(dir, m, err);
    if (!rc && c->rank == 0) rc = check_sharded(t, dir, m, err);
    if (agree(rc, c, err)) {
        free(m);
        return -1;
    }
    char path[1200];
    snprintf(path, sizeof path, "%.1000s/%s", dir, m->file[c->rank]);
    rc = load_file(t, path, m->checksum[c->rank], err);
    free(m);
    /* a shard that fails here is named by its rank: say it from rank 0 too */
    shard_report mine = {.ok = !rc}, all[MAX_RANKS];
    snprintf(mine.err, sizeof mine.err, "%.199s", rc ? err : "");
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

int mt_checkpoint_load(mt_trainer *t, const char *dir, char *err)
{
    if (mt_trainer_config(t)->ranks > 1) return load_sharded(t, dir, err);
    char path[1024];
    snprintf(path, sizeof path, "%.1000s/" CKPT_FILE, dir);
    if (!file_exists(path)) {
        manifest m;
        if (read_manifest(dir, &m, err) == 0) {
            snprintf(err, MT_ERR_LEN, "checkpoint '%.120s' was written by %d ranks; this run has 1 (resume on the "
                     "same rank count)", dir, m.ranks);
            return -1;
        }
    }
    return load_file(t, path, 0, err);
}
