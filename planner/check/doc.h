/* doc.h — a training config as a tree, read alike from YAML (libyaml) and JSON
 * (jansson): maps, lists and scalars with their line, so that each format's
 * reader walks one structure. Files come from strangers: size, depth and node
 * count are bounded, YAML aliases are expanded within that bound, and a bad
 * file is one line of error. */
#ifndef MP_CHECK_DOC_H
#define MP_CHECK_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { CK_NULL, CK_SCALAR, CK_MAP, CK_LIST } ck_kind;

typedef struct ck_node ck_node;
struct ck_node {
    ck_kind kind;
    char *key;                /* the key this value has in its map, else NULL */
    char *text;               /* a scalar as written (no quotes), else NULL */
    bool quoted;              /* a quoted scalar: a string, never a number, bool or null */
    int line;                 /* 1-based, in its file */
    ck_node *child, *next;    /* a map's entries or a list's items, in order */
};

enum { CK_MAX_BYTES = 1 << 20, CK_MAX_NODES = 200000, CK_MAX_DEPTH = 64 };

/* The file at path: JSON when its first non-blank byte is '{' or '[', "key =
 * value" lines (memtrain's config, settings/options.h's reader) when its first
 * line that is not a comment reads so, else YAML.
 * 0 with *root (free with ck_free), or -1 with err. */
int ck_read(const char *path, ck_node **root, char *err);
/* The same from text in memory; `name` names it in errors. */
int ck_parse(const char *text, size_t len, const char *name, ck_node **root, char *err);
void ck_free(ck_node *n);

/* A map's value at `key`, or a dotted path ("fsdp_config.fsdp_offload_params");
 * NULL when absent or not a map. */
const ck_node *ck_get(const ck_node *map, const char *path);
/* A scalar's meaning, as YAML 1.1 (PyYAML) and JSON read it: 0, or -1 when
 * the node is not one (a string for a number, a list for a bool...). */
int ck_bool(const ck_node *n, bool *out);    /* true/false, yes/no, on/off */
int ck_int(const ck_node *n, int64_t *out);  /* a whole number, in range */
int ck_real(const ck_node *n, double *out);  /* a finite number */
bool ck_null(const ck_node *n);              /* absent, null, ~, or empty */
/* A scalar's text, or NULL for anything else (null included). */
const char *ck_text(const ck_node *n);

#endif
