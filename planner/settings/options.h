/*
 * options.h — command-line options declared once, for memplan, memtop and memtrain.
 *
 * Each flag is one row: its name, the field it fills (by offset, in whatever
 * struct the row's group points at), its range or choices, the MP_PIN_* bit it
 * sets and its help. From the rows come getopt_long's table, the checking of
 * every value (with the same messages in every command) and the help text.
 * Choices are read from memplan.h's names (mp_*_name, mp_*_parse), never
 * retyped.
 *
 *     static const mp_opt rows[] = {
 *         {"top", MP_OPT_INT, MP_OPT_AT(cli, top), .lo = 0, .hi = 1000, .arg = "N", .help = "..."},
 *         {0},
 *     };
 */
#ifndef MEMPLAN_OPTIONS_H
#define MEMPLAN_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The names an enum takes: a table of names, or memplan.h's mp_*_name over 0..n-1. */
typedef struct mp_vocab {
    int n;
    const char *const *names;            /* names[v], or NULL and name(v) */
    const char *(*name)(int v);
    int (*parse)(const char *s, int *v); /* NULL: a name of the list, exactly; a parse may return
                                          * values, not positions, for a list of only some values */
} mp_vocab;
/* The other spellings v's parse takes for value k, between blanks, or NULL (the settings'
 * vocabularies: their rows' aliases): help lists them, and a mistyped value is matched
 * against them too. */
const char *mp_vocab_aliases(const mp_vocab *v, int k);
/* Why v refuses `value` when it knows the word (an engine's name for what is not
 * modelled: "transformers' optim 'lion_8bit' is not modelled"), or NULL. */
const char *mp_vocab_refusal(const mp_vocab *v, const char *value);

extern const mp_vocab mp_vocab_precision, mp_vocab_optimizer, mp_vocab_ckpt, mp_vocab_attention,
    mp_vocab_quant, mp_vocab_offload, mp_vocab_ce, mp_vocab_loader, mp_vocab_task, mp_vocab_step_impl,
    mp_vocab_method, mp_vocab_reference, mp_vocab_logits, mp_vocab_rollout;

typedef enum {
    MP_OPT_FLAG,     /* no value: the field (bool or int) becomes 1 */
    MP_OPT_STRING,   /* const char *, as given; a vocab only names the choices (mp_opt_choose) */
    MP_OPT_ENUM,     /* one of vocab's names, stored as its index (an enum, int or bool field) */
    MP_OPT_INT,      /* an integer from lo to hi (int64_t, int or bool field) */
    MP_OPT_REAL,     /* a number from lo to hi (double; an int field keeps the whole part) */
    MP_OPT_FLOAT,    /* a number from lo to hi into a float field */
    MP_OPT_FRACTION, /* 0 to 0.99, or 0% to 99% (double) */
    MP_OPT_SIZE,     /* bytes, as mp_parse_size reads them (double) */
    MP_OPT_COUNT,    /* a count, as mp_parse_count reads it (double) */
    MP_OPT_BOOL,     /* 0|1, also no|yes and false|true (bool or int field) */
    MP_OPT_CUSTOM,   /* read() does it */
} mp_opt_kind;

/* Messages about a flag quote its value: they get a buffer this long. */
#define MP_OPT_ERR_LEN 2048

typedef struct mp_opt mp_opt;
struct mp_opt {
    const char *name;        /* the long flag, without "--"; NULL ends a list of rows */
    mp_opt_kind kind;
    size_t offset, size;     /* the field: MP_OPT_AT(type, field) */
    double lo, hi;           /* INT, REAL */
    const mp_vocab *vocab;   /* ENUM; STRING (optional) */
    unsigned pin;            /* MP_PIN_* bits set when the flag is given */
    const char *arg;         /* the value in help ("B", "FILE"); NULL: the choices, or lo..hi */
    const char *help;        /* NULL: not listed */
    int set;                 /* FLAG: the value it stores (0: 1), as --lora stores the task */
    char short_name;         /* 'o' for -o, or 0 */
    bool or_last;            /* the choices read "a, b or c" (else "a, b, c") */
    int list_from;           /* the choices are listed from this one on, then the first ones */
    /* CUSTOM: read `value` into the struct `base`; 0, or -1 with the message in err
     * (MP_OPT_ERR_LEN bytes) */
    int (*read)(const mp_opt *o, const char *value, void *base, char *err);
    /* CUSTOM: the field in `base` as text read() takes back (into buf, len bytes);
     * NULL: the field has no written form (not set) */
    const char *(*write)(const mp_opt *o, const void *base, char *buf, size_t len);
    /* ENUM: after a value is read, what else that spelling says (transformers'
     * adamw_torch_fused: the AdamW, and its fused step) into `base`; NULL: nothing */
    void (*also)(const mp_opt *o, const char *value, void *base);
};

#define MP_OPT_AT(type, field) offsetof(type, field), sizeof(((type *)0)->field)

/* The training settings (fields of mp_settings) every command that plans takes. */
extern const mp_opt mp_settings_opts[];

/* Where the model comes from: --model NAME, --hf-config FILE or --params N. */
typedef struct mp_model_source {
    const char *name, *hf_config;
    double params;           /* 0: not given */
    const char *reward_model, *value_model; /* an online method's other models: a profile or a config.json */
} mp_model_source;
extern const mp_opt mp_model_source_opts[];

/* Rows that fill one struct, under one heading of the help. */
typedef struct mp_opt_group {
    const char *title;       /* NULL: under the heading before */
    const mp_opt *rows;
    void *base;              /* the struct the rows' fields are in */
    const char *const *only; /* the rows taken, by name, in this order (NULL-ended); NULL: all */
} mp_opt_group;
/* A name given twice: the first row counts (so a command's own row replaces a shared one). */

#define MP_OPT_MAX 96           /* rows one parser takes (memplan: 60) */
typedef struct mp_opt_parser {
    struct option longopts[MP_OPT_MAX + 1];
    char shortopts[2 * MP_OPT_MAX + 2];
    const mp_opt *rows[MP_OPT_MAX];
    void *bases[MP_OPT_MAX];
    int group[MP_OPT_MAX];    /* the group each row came from */
    bool given[MP_OPT_MAX];
    int n, argc;
    char **argv;
    unsigned *pinned;
} mp_opt_parser;

enum { MP_OPT_DONE = 0, MP_OPT_GIVEN = 1, MP_OPT_BAD = -1, MP_OPT_UNKNOWN = -2 };

/* Parse argv[1..argc-1] (getopt_long, operands moved to the end) by the groups' rows. */
void mp_opt_start(mp_opt_parser *p, const mp_opt_group *g, int ngroups, unsigned *pinned, int argc,
                  char **argv);
/* Read the next flag into its field: MP_OPT_GIVEN with *row; MP_OPT_DONE at the end (optind is
 * then the first operand); MP_OPT_BAD (a bad or missing value) or MP_OPT_UNKNOWN, with err
 * (an unknown flag with the rows nearest to it: "; did you mean --optimizer?"). */
int mp_opt_next(mp_opt_parser *p, const mp_opt **row, char *err);
/* Whether the flag `name` was given. */
bool mp_opt_given(const mp_opt_parser *p, const char *name);

/* Read one value as the row says into the struct `base`, and pin; 0, or -1 with err. */
int mp_opt_read(const mp_opt *o, const char *value, void *base, unsigned *pinned, char *err);
/* The row called `name` in a list, or NULL. */
const mp_opt *mp_opt_find(const mp_opt *rows, const char *name);
/* Copy the row's field from one struct to another. */
void mp_opt_copy(const mp_opt *o, void *dst, const void *src);
/* The value `value` names in v (its index, or what v->parse makes of it), or -1 with
 * "invalid value ... for --NAME (CHOICES)" in err, the choices listed as o says, then the
 * spellings nearest to it ("; did you mean bf16 (amp-bf16)?"). */
int mp_opt_choose(const mp_opt *o, const mp_vocab *v, const char *value, char *err);
/* "fp32, amp-bf16, ..." (or "... or pure-bf16"), as the row lists v. */
const char *mp_opt_choices(const mp_opt *o, const mp_vocab *v, char *buf, size_t len);

/* ---------- settings as text: 'key = value' lines, or 'key=value' words ----------
 * One writer and one reader for every file that carries settings (memtrain's
 * config, its metrics header, memtop's run plan): a key is a row's name, a value
 * is what mp_opt_read takes, written so that it reads back to the same value. */

/* The longest value a row writes (a path, quoted, at most). */
#define MP_OPT_VALUE_LEN 1024
/* The field's value as the row reads it back: an enum's name, an integer in
 * decimal, a real in the fewest digits that read back the same, a flag or
 * bool as 0 or 1, a custom row by its write(). NULL (nothing written) for a
 * value that is not set: a NULL string, a size or count of 0, a custom row
 * whose write() says so. */
const char *mp_opt_format(const mp_opt *o, const void *base, char *buf, size_t len);

typedef enum {
    MP_KV_LINES, /* "key = value" a line; a value with a blank, '#' or '"' at its ends is "quoted"; '#'
                  * starts a comment line, or a comment after a blank; blank lines are skipped */
    MP_KV_WORDS, /* "key=value" words between blanks; no quoting (a value has no blank) */
} mp_kv_form;
/* The longest line MP_KV_LINES reads (its newline apart). */
#define MP_KV_LINE_MAX 1022

/* The groups' rows (each group's `only`, in that order, else all of them), each
 * a key with its value, in the form. Rows with nothing written are left out.
 * The text goes to buf (len bytes, NUL-terminated); returns its length, or -1
 * with err (MP_OPT_ERR_LEN) when buf is too short or a value cannot be written
 * in the form (a line break; a blank in a word). */
int mp_opt_write_kv(const mp_opt_group *g, int ngroups, mp_kv_form form, char *buf, size_t len, char *err);

/* The same keys and values as a JSON object (a jansson json_t *, new reference):
 * integers and reals as numbers, flags and bools as true/false, the others as
 * the text the writer writes; a row with nothing written is null. */
struct json_t;
struct json_t *mp_opt_json(const mp_opt_group *g, int ngroups);

/* Reads pairs from a text in place (NULs are written into it; text[len] must
 * be writable). */
typedef struct mp_kv_reader {
    char *p, *end;
    mp_kv_form form;
    int line;                /* MP_KV_LINES: the line of the last pair, from 1 */
} mp_kv_reader;
void mp_kv_start(mp_kv_reader *r, char *text, size_t len, mp_kv_form form);
/* The next pair: 1 with *key and *value (pointers into the text; *value is NULL
 * for a line or word without '=' or with nothing before it), 0 at the end, -1
 * with why in err (MP_OPT_ERR_LEN): a line longer than MP_KV_LINE_MAX or
 * holding a NUL, a quoted value not closed or followed by text. */
int mp_kv_next(mp_kv_reader *r, const char **key, const char **value, char *err);
/* Read one pair through the groups' rows (a flag's value as a bool): 0; -1 with
 * the row's message in err; -2 when no row has the key (err untouched). */
int mp_opt_read_kv(const mp_opt_group *g, int ngroups, const char *key, const char *value, unsigned *pinned,
                   char *err);
/* The row and its struct for a key among the groups; NULL when none. */
const mp_opt *mp_opt_group_find(const mp_opt_group *g, int ngroups, const char *key, void **base);

/* The help: each group's heading, then a line "  --name ARG   help" for each row, wrapped
 * at `width`; an enum's choices follow its help unless they are its ARG. */
void mp_opt_help(FILE *f, const mp_opt_group *g, int ngroups, int width);
/* One group in brief: "  --name ARG" joined by sep, in lines of at most `width`. */
void mp_opt_synopsis(FILE *f, const mp_opt_group *g, const char *sep, int width);

#endif
