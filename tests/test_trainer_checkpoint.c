/*
 * test_trainer_checkpoint.c — checkpoints read back as hostile input (issue 36):
 * an image with any field out of range, resealed so that its checksum holds, is
 * refused with one line and leaves the trainer as it was; every prefix of an image
 * is refused; the manifest's counts are exact integers in range; the settings a
 * resume may change; the config file's comment and quoting rule; a step stopped
 * between layers leaves the last completed step's state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "check.h"
#include "checkpoint.h"
#include "config_keys.h"
#include "train.h"
#include "settings/settings.h"

static char err[MT_ERR_LEN];

static void tiny(mt_config *c, mp_optimizer opt)
{
    mt_config_default(c);
    c->shape.layers = 1, c->shape.hidden = 16, c->shape.heads = 2, c->shape.vocab = 256, c->s.seq = 8, c->shape.max_pos = 8, c->s.batch = 2;
    c->s.optimizer = opt, c->s.adam8_block = 64;
}

/* The image a trainer's checkpoint file holds (malloc'd), through the real writer. */
static uint8_t *image_of(mt_trainer *t, size_t *len)
{
    char dir[] = "/tmp/mt-ckpt-XXXXXX", path[64];
    if (!mkdtemp(dir)) return NULL;
    uint8_t *buf = NULL;
    snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
    struct stat st;
    FILE *f = NULL;
    if (!mt_checkpoint_save(t, dir, err) && !stat(path, &st) && (f = fopen(path, "rb")) &&
        (buf = malloc((size_t)st.st_size)) && fread(buf, 1, (size_t)st.st_size, f) == (size_t)st.st_size)
        *len = (size_t)st.st_size;
    if (f) fclose(f);
    unlink(path);
    rmdir(dir);
    return buf;
}

/* The trainer's state, to see that a refused load changed nothing. */
static uint8_t *state_of(mt_trainer *t, size_t *n)
{
    *n = mt_trainer_state_size(t);
    uint8_t *s = malloc(*n);
    if (s && mt_trainer_state_save(t, s, *n, err)) {
        free(s);
        return NULL;
    }
    return s;
}

/* Offsets in an image: the header's fields, the state and its sections. */
#define H_STEP 16
#define H_RANK 32
#define H_SETTINGS_LEN 48
static size_t state_at(const uint8_t *img)
{
    uint64_t slen;
    memcpy(&slen, img + H_SETTINGS_LEN, 8);
    return 72 + (size_t)slen;
}
static size_t section_at(const uint8_t *img, int k)
{
    size_t at = state_at(img) + 64;
    for (int i = 0; i < k; i++) {
        uint64_t n;
        memcpy(&n, img + at, 8);
        at += 8 + (size_t)n;
    }
    return at + 8;
}

/* A copy of img with `n` bytes at `off` set to `bytes`, sealed again (or not). */
static uint8_t *patched(const uint8_t *img, size_t len, size_t off, const void *bytes, size_t n, bool seal)
{
    uint8_t *p = malloc(len);
    memcpy(p, img, len);
    memcpy(p + off, bytes, n);
    if (seal) mt_checkpoint_seal(p, len);
    return p;
}

/* Refused, with one line holding `want`, and the trainer's state unchanged. */
static void refused(mt_trainer *t, const uint8_t *img, size_t len, const char *want, const char *what)
{
    size_t n0, n1;
    uint8_t *before = state_of(t, &n0);
    memset(err, 0, sizeof err);
    int rc = mt_checkpoint_load_image(t, img, len, "ck", NULL, NULL, err);
    uint8_t *after = state_of(t, &n1);
    CHECK(rc != 0 && strstr(err, want) && !strchr(err, '\n'), "%s: refused (%s)", what, err);
    CHECK(before && after && n0 == n1 && !memcmp(before, after, n0), "%s: the trainer is as it was", what);
    free(before);
    free(after);
}

static void test_image(void)
{
    mt_config c;
    tiny(&c, MP_ADAMW_8BIT);
    mt_trainer *a, *b;
    if (mt_config_finish(&c, err) || mt_trainer_create(&c, &a, err) || mt_trainer_create(&c, &b, err)) {
        CHECK(0, "trainers: %s", err);
        return;
    }
    mt_step_result r;
    for (int s = 0; s < 2; s++) mt_trainer_step(a, &r, err);
    size_t len = 0;
    uint8_t *img = image_of(a, &len);
    if (!img) {
        CHECK(0, "image: %s", err);
        return;
    }
    size_t opt = section_at(img, 1), data = section_at(img, 2);
    uint64_t n8;
    memcpy(&n8, img + opt - 8, 8);
    size_t n = (size_t)(n8 - 8) / 2;
    while (2 * n + 8 * ((n + 63) / 64) != n8 - 8) n--;

    /* the last 8-bit code: a loader that applied the sections before checking would have changed them */
    uint8_t code = 255;
    uint8_t *p = patched(img, len, opt + 8 + n - 1, &code, 1, true);
    refused(b, p, len, "8-bit first-moment code 255", "a first-moment code of 255 (the last one)");
    free(p);
    float nan = NAN, neg = -1.0f;
    p = patched(img, len, opt + 8 + 2 * n + 4 * ((n + 63) / 64), &nan, 4, true);
    refused(b, p, len, "second-moment block scale 0 is nan", "a NaN second-moment scale");
    free(p);
    p = patched(img, len, opt + 8 + 2 * n, &neg, 4, true);
    refused(b, p, len, "first-moment block scale 0 is -1", "a negative first-moment scale");
    free(p);
    int64_t t = 1;
    p = patched(img, len, opt, &t, 8, true);
    refused(b, p, len, "optimizer step count 1, but the run made 2 updates", "an optimizer step count of 1 after 2");
    free(p);
    uint64_t big = 1ull << 62, pos = 1ull << 40;
    p = patched(img, len, H_STEP, &big, 8, true);
    refused(b, p, len, "step 4611686018427387904 is out of range", "a header step of 2^62");
    free(p);
    p = patched(img, len, data + 8, &pos, 8, true);
    refused(b, p, len, "data position 1099511627776 is beyond", "a data position of 2^40");
    free(p);
    int32_t rank = 1;
    p = patched(img, len, H_RANK, &rank, 4, true);
    refused(b, p, len, "was written by rank 1 of 1; this is rank 0 of 1", "a header's rank of 1 (of 1)");
    free(p);
    p = patched(img, len, H_RANK, &rank, 4, false);
    refused(b, p, len, "fails its checksum", "a header's rank changed, not resealed");
    free(p);
    uint64_t skipped = 3;
    p = patched(img, len, state_at(img) + 56, &skipped, 8, true);
    refused(b, p, len, "3 skipped steps of 2 is out of range", "3 skipped steps of 2");
    free(p);
    /* the settings record: a value changed, a line lost */
    size_t at = (size_t)(strstr((const char *)img + 72, "\nlr=") - (const char *)img) + 4;
    p = patched(img, len, at, "2", 1, true);
    refused(b, p, len, "lr = '2.001' there, '0.001' in this run", "a recorded lr of 2.001");
    CHECK(mt_checkpoint_load_image(b, p, len, "ck", NULL, "momentum,lr", err) == 0 && mt_trainer_steps(b) == 2,
          "the same image loads with --resume-changed momentum,lr");
    free(p);
    p = patched(img, len, at - 4, "\nLR=", 4, true);
    refused(b, p, len, "its settings record is damaged (line", "a record's key changed");
    free(p);

    /* every prefix, and a byte more: refused (by their lengths, then their checksums) */
    mt_trainer *fresh;
    if (mt_trainer_create(&c, &fresh, err) == 0) {
        bool all = true;
        size_t cut[] = {0, 1, 71, 72, 73, state_at(img) - 1, state_at(img), state_at(img) + 64, opt, data, len - 1};
        for (size_t i = 0; i < sizeof cut / sizeof *cut; i++)
            all &= mt_checkpoint_load_image(fresh, img, cut[i], "ck", NULL, NULL, err) != 0 &&
                   mt_trainer_steps(fresh) == 0;
        uint8_t *longer = calloc(1, len + 1);
        memcpy(longer, img, len);
        all &= mt_checkpoint_load_image(fresh, longer, len + 1, "ck", NULL, NULL, err) != 0;
        free(longer);
        CHECK(all, "every cut of the image, and one byte more, is refused (%s)", err);
        CHECK(mt_checkpoint_load_image(fresh, img, len, "ck", NULL, NULL, err) == 0 && mt_trainer_steps(fresh) == 2,
              "the image itself loads (%zu bytes, step 2)", len);
        mt_trainer_free(fresh);
    }
    free(img);
    mt_trainer_free(a);
    mt_trainer_free(b);
}

static void test_manifest(void)
{
    const char *good = "{\"format\": \"memtrain checkpoint\", \"version\": 3, \"step\": 7, \"ranks\": 2, \"zero\": 1, "
                       "\"config_hash\": \"00000000000000ff\", \"shards\": ["
                       "{\"rank\": 0, \"file\": \"step00000007.rank0-of-2.bin\", \"bytes\": 300, \"checksum\": "
                       "\"0123456789abcdef\"},"
                       "{\"rank\": 1, \"file\": \"step00000007.rank1-of-2.bin\", \"bytes\": 301, \"checksum\": "
                       "\"fedcba9876543210\"}]}";
    mt_manifest *m = malloc(sizeof *m);
    CHECK(mt_manifest_parse(good, strlen(good), "m", m, err) == 0 && m->step == 7 && m->ranks == 2 && m->zero == 1 &&
              m->bytes[1] == 301 && m->checksum[1] == 0xfedcba9876543210ull && m->config_hash == 0xff,
          "a manifest as the writer writes it reads back");
    static const struct {
        const char *from, *to, *want;
    } bad[] = {
        {"\"ranks\": 2", "\"ranks\": 4294967298", "ranks 4294967298 is out of range"},
        {"\"ranks\": 2", "\"ranks\": 2.0", "ranks 2.0 is out of range"},
        {"\"ranks\": 2", "\"ranks\": 65", "ranks 65 is out of range (an integer, 1 to 64)"},
        {"\"step\": 7", "\"step\": -7", "step -7 is out of range"},
        {"\"step\": 7", "\"step\": 4294967303", "step 4294967303 is out of range"},
        {"\"zero\": 1", "\"zero\": 4", "zero 4 is out of range"},
        {"\"bytes\": 301", "\"bytes\": -1", "shard 1's bytes -1 is out of range"},
        {"\"rank\": 1,", "\"rank\": 4294967297,", "shard 1's rank 4294967297 is out of range"},
        {"rank1-of-2", "rank0-of-2", "shard 1's file \"step00000007.rank0-of-2.bin\" is not"},
        {"rank1-of-2", "../x", "shard 1's file \"step00000007.../x.bin\" is not"},
        {"\"fedcba9876543210\"", "\"-1\"", "shard 1's checksum is not 16 hex digits"},
        {"\"00000000000000ff\"", "\" 0000000000000ff\"", "config_hash is not 16 hex digits"},
        {"\"version\": 3", "\"version\": 3, \"version\": 3", "duplicate object key"},
        {"\"ranks\": 2", "\"ranks\": 1", "2 shards for 1 ranks"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[1024];
        const char *at = strstr(good, bad[i].from);
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - good), good, bad[i].to, at + strlen(bad[i].from));
        memset(err, 0, sizeof err);
        int rc = mt_manifest_parse(text, strlen(text), "m", m, err);
        CHECK(rc != 0 && strstr(err, bad[i].want) && !strchr(err, '\n'), "manifest with %s: refused (%s)", bad[i].to,
              err);
    }
    free(m);
}

static void test_changes(void)
{
    CHECK(mt_checkpoint_changes_check("lr,weight-decay,seed,data,accum", err) == 0, "lr, weight-decay, seed, data, "
          "accum may change on resume");
    CHECK(mt_checkpoint_changes_check("lr,hidden", err) != 0 && strstr(err, "'hidden': it shapes the saved state"),
          "hidden may not: %s", err);
    CHECK(mt_checkpoint_changes_check("lr,", err) != 0 && strstr(err, "'': not a setting"), "an empty name: %s", err);
}

/* The value a config line gives `data`, or NULL with err. */
static const char *data_of(const char *line)
{
    static mt_config k;
    mt_config_default(&k);
    return mt_config_parse(line, strlen(line), "c", &k, err) ? NULL : k.own.data_path;
}

static void test_config_comments(void)
{
    const char *v;
    CHECK((v = data_of("data = runs/run#3.txt\n")) && !strcmp(v, "runs/run#3.txt"), "a '#' inside a path is kept");
    CHECK((v = data_of("data = a.txt # the data\n")) && !strcmp(v, "a.txt"), "a '#' after a blank starts a comment");
    CHECK((v = data_of("data = a.txt\t# the data\n")) && !strcmp(v, "a.txt"), "after a tab too");
    CHECK((v = data_of("data = \"my #1 data.txt\"  # quoted\n")) && !strcmp(v, "my #1 data.txt"),
          "a quoted value keeps ' #'");
    CHECK((v = data_of("  # data = b.txt\ndata = c.txt\n")) && !strcmp(v, "c.txt"), "a comment line");
    CHECK(!data_of("data = \"a.txt\n") && strstr(err, "line 1: a quoted value lacks its closing"),
          "an unclosed quote: %s", err);
    CHECK(!data_of("data = \"a.txt\" b\n") && strstr(err, "text after a quoted value"), "text after the quote: %s",
          err);
}

/* ---------- a step stopped between layers (memtrain's SIGINT/SIGTERM) ---------- */

typedef struct stop_at {
    int asked, at; /* the at-th question says stop */
} stop_at;

static bool stop_nth(void *ctx)
{
    stop_at *s = ctx;
    return ++s->asked == s->at;
}

/* Every point a step can stop at (after each layer of each micro-batch's forward and
 * backward), both loaders: the step is abandoned, the state is byte for byte the last
 * completed step's (the loader's position and shuffle buffer back), and the next step
 * is the one a trainer never stopped takes. */
static void test_stop(void)
{
    for (int loader = 0; loader < 2; loader++) {
        mt_config c;
        tiny(&c, MP_ADAMW);
        c.shape.layers = 2, c.s.accum = 2, c.s.loader = loader ? MP_LOAD_STREAM : MP_LOAD_MEMORY;
        c.s.shuffle_buffer = 4;
        CHECK(!mt_config_finish(&c, err), "config: %s", err);
        int points = 2 * c.s.accum * c.shape.layers; /* forward and backward, each layer, each micro-batch */
        mt_trainer *whole = NULL;
        mt_step_result r1, r2;
        CHECK(!mt_trainer_create(&c, &whole, err), "create: %s", err);
        if (!whole) return;
        mt_trainer_step(whole, &r1, err);
        mt_trainer_step(whole, &r2, err);
        size_t nw;
        uint8_t *sw = state_of(whole, &nw);
        for (int at = 1; at <= points + 1; at++) {
            mt_trainer *t = NULL;
            CHECK(!mt_trainer_create(&c, &t, err), "create: %s", err);
            if (!t) break;
            mt_step_result r;
            mt_trainer_step(t, &r, err);
            size_t n0, n1, n2;
            uint8_t *s0 = state_of(t, &n0);
            stop_at sa = {0, at};
            CHECK(!mt_trainer_set_stop(t, stop_nth, &sa, true, err), "set_stop: %s", err);
            CHECK(!mt_trainer_step(t, &r, err), "%s loader, stop at %d: %s", loader ? "stream" : "memory", at, err);
            bool stops = at <= points;
            CHECK(r.stopped == stops && mt_trainer_steps(t) == (stops ? 1 : 2),
                  "%s loader, stop at question %d of %d: stopped %d, steps %ld", loader ? "stream" : "memory", at,
                  points, r.stopped, mt_trainer_steps(t));
            uint8_t *s1 = state_of(t, &n1);
            if (stops)
                CHECK(s0 && s1 && n0 == n1 && !memcmp(s0, s1, n0),
                      "%s loader, stopped at question %d: the state is not the last completed step's",
                      loader ? "stream" : "memory", at);
            mt_trainer_set_stop(t, NULL, NULL, false, err);
            if (stops) mt_trainer_step(t, &r, err);
            uint8_t *s2 = state_of(t, &n2);
            CHECK(s2 && sw && n2 == nw && !memcmp(s2, sw, nw) && r.loss == r2.loss,
                  "%s loader, stopped at question %d, then a step: not the step of a trainer never stopped",
                  loader ? "stream" : "memory", at);
            free(s0), free(s1), free(s2);
            mt_trainer_free(t);
        }
        free(sw);
        mt_trainer_free(whole);
    }
}

int main(void)
{
    test_stop();
    test_image();
    test_manifest();
    test_changes();
    test_config_comments();
    return check_summary();
}
