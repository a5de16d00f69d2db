/* doc.c — a config file as a tree (doc.h): libyaml's document, or jansson's
 * value, copied into ck_nodes under the bounds a stranger's file gets. */
#include "check/doc.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "common/errors.h"
#include "common/files.h"
#include "settings/options.h"

typedef struct builder {
    long nodes;               /* made so far: aliases expanded count each time */
    const char *name;
    char *err;
} builder;

static ck_node *node_new(builder *b, ck_kind kind, int line)
{
    if (++b->nodes > CK_MAX_NODES) {
        snprintf(b->err, MP_ERR_LEN, "config '%.150s' has more than %d values (aliases expanded): refused", b->name,
                 CK_MAX_NODES);
        return NULL;
    }
    ck_node *n = calloc(1, sizeof *n);
    if (!n) snprintf(b->err, MP_ERR_LEN, "out of memory reading config '%.150s'", b->name);
    else n->kind = kind, n->line = line;
    return n;
}

static char *dup_text(builder *b, const char *s, size_t len)
{
    char *t = malloc(len + 1);
    if (!t) {
        snprintf(b->err, MP_ERR_LEN, "out of memory reading config '%.150s'", b->name);
        return NULL;
    }
    memcpy(t, s, len);
    t[len] = 0;
    return t;
}

void ck_free(ck_node *n)
{
    while (n) {
        ck_node *next = n->next;
        ck_free(n->child);
        free(n->key), free(n->text), free(n);
        n = next;
    }
}

/* ---------- YAML ---------- */

static ck_node *from_yaml(builder *b, yaml_document_t *doc, yaml_node_t *y, int depth)
{
    if (depth > CK_MAX_DEPTH) {
        snprintf(b->err, MP_ERR_LEN, "config '%.150s' nests deeper than %d levels: refused", b->name, CK_MAX_DEPTH);
        return NULL;
    }
    int line = (int)y->start_mark.line + 1;
    ck_node *n = NULL, **tail;
    switch (y->type) {
    case YAML_SCALAR_NODE: {
        const char *v = (const char *)y->data.scalar.value;
        size_t len = y->data.scalar.length;
        if (memchr(v, 0, len)) {
            snprintf(b->err, MP_ERR_LEN, "config '%.150s' line %d: a value holds a NUL byte", b->name, line);
            return NULL;
        }
        bool plain = y->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        bool null = plain && (!len || !strcmp(v, "~") || !strcasecmp(v, "null"));
        if (!(n = node_new(b, null ? CK_NULL : CK_SCALAR, line))) return NULL;
        n->quoted = !plain;
        if (!null && !(n->text = dup_text(b, v, len))) return ck_free(n), NULL;
        return n;
    }
    case YAML_SEQUENCE_NODE:
        if (!(n = node_new(b, CK_LIST, line))) return NULL;
        tail = &n->child;
        for (yaml_node_item_t *i = y->data.sequence.items.start; i < y->data.sequence.items.top; i++) {
            ck_node *c = from_yaml(b, doc, yaml_document_get_node(doc, *i), depth + 1);
            if (!c) return ck_free(n), NULL;
            *tail = c, tail = &c->next;
        }
        return n;
    case YAML_MAPPING_NODE:
        if (!(n = node_new(b, CK_MAP, line))) return NULL;
        tail = &n->child;
        for (yaml_node_pair_t *p = y->data.mapping.pairs.start; p < y->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                snprintf(b->err, MP_ERR_LEN, "config '%.150s' line %d: a key that is not text", b->name, line);
                return ck_free(n), NULL;
            }
            ck_node *c = from_yaml(b, doc, yaml_document_get_node(doc, p->value), depth + 1);
            if (!c) return ck_free(n), NULL;
            if (!(c->key = dup_text(b, (const char *)k->data.scalar.value, k->data.scalar.length)))
                return ck_free(c), ck_free(n), NULL;
            *tail = c, tail = &c->next;
        }
        return n;
    default:
        return node_new(b, CK_NULL, line);
    }
}

static int parse_yaml(builder *b, const char *text, size_t len, ck_node **root)
{
    yaml_parser_t p;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&p)) return snprintf(b->err, MP_ERR_LEN, "out of memory"), -1;
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = -1;
    if (!yaml_parser_load(&p, &doc)) {
        snprintf(b->err, MP_ERR_LEN, "config '%.120s' is not valid YAML (line %d): %.80s", b->name,
                 (int)p.problem_mark.line + 1, p.problem ? p.problem : "unknown error");
    } else {
        yaml_node_t *top = yaml_document_get_root_node(&doc);
        if (!top) {
            snprintf(b->err, MP_ERR_LEN, "config '%.150s' is empty", b->name);
        } else if ((*root = from_yaml(b, &doc, top, 0))) {
            rc = 0;
        }
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&p);
    return rc;
}

/* ---------- JSON ---------- */

static ck_node *from_json(builder *b, json_t *j, int depth)
{
    if (depth > CK_MAX_DEPTH) {
        snprintf(b->err, MP_ERR_LEN, "config '%.150s' nests deeper than %d levels: refused", b->name, CK_MAX_DEPTH);
        return NULL;
    }
    ck_node *n, **tail;
    char num[64];
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        if (!(n = node_new(b, CK_MAP, 0))) return NULL;
        tail = &n->child;
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) {
            ck_node *c = from_json(b, v, depth + 1);
            if (!c) return ck_free(n), NULL;
            if (!(c->key = dup_text(b, k, strlen(k)))) return ck_free(c), ck_free(n), NULL;
            *tail = c, tail = &c->next;
        }
        return n;
    }
    case JSON_ARRAY: {
        if (!(n = node_new(b, CK_LIST, 0))) return NULL;
        tail = &n->child;
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) {
            ck_node *c = from_json(b, v, depth + 1);
            if (!c) return ck_free(n), NULL;
            *tail = c, tail = &c->next;
        }
        return n;
    }
    case JSON_STRING:
        if (!(n = node_new(b, CK_SCALAR, 0))) return NULL;
        n->quoted = true;
        if (!(n->text = dup_text(b, json_string_value(j), json_string_length(j)))) return ck_free(n), NULL;
        return n;
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(j));
        goto number;
    case JSON_REAL:
        snprintf(num, sizeof num, "%.17g", json_real_value(j));
        goto number;
    case JSON_TRUE:
        snprintf(num, sizeof num, "true");
        goto number;
    case JSON_FALSE:
        snprintf(num, sizeof num, "false");
    number:
        if (!(n = node_new(b, CK_SCALAR, 0))) return NULL;
        if (!(n->text = dup_text(b, num, strlen(num)))) return ck_free(n), NULL;
        return n;
    default:
        return node_new(b, CK_NULL, 0);
    }
}

static int parse_json(builder *b, const char *text, size_t len, ck_node **root)
{
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        snprintf(b->err, MP_ERR_LEN, "config '%.150s' is not valid JSON (line %d): %.60s", b->name, je.line, je.text);
        return -1;
    }
    *root = from_json(b, j, 0);
    json_decref(j);
    return *root ? 0 : -1;
}

/* ---------- key = value lines (memtrain's config) ---------- */

/* The first line that is neither blank nor a '#' comment reads "word = ...",
 * a word of letters, digits, '-' and '_' (YAML would say "word: ..."). */
static bool kv_lines(const char *text, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t e = i;
        while (e < len && text[e] != '\n') e++;
        size_t p = i;
        while (p < e && (text[p] == ' ' || text[p] == '\t' || text[p] == '\r')) p++;
        if (p < e && text[p] != '#') {
            size_t w = p;
            while (w < e && (text[w] == '-' || text[w] == '_' || (text[w] >= 'a' && text[w] <= 'z') ||
                             (text[w] >= 'A' && text[w] <= 'Z') || (text[w] >= '0' && text[w] <= '9')))
                w++;
            while (w < e && (text[w] == ' ' || text[w] == '\t')) w++;
            return w > p && w < e && text[w] == '=';
        }
        i = e + 1;
    }
    return false;
}

static int parse_kv(builder *b, const char *text, size_t len, ck_node **root)
{
    char *copy = dup_text(b, text, len); /* the reader writes NULs into its text */
    if (!copy) return -1;
    if (memchr(copy, 0, len)) {
        snprintf(b->err, MP_ERR_LEN, "config '%.150s' holds a NUL byte", b->name);
        free(copy);
        return -1;
    }
    ck_node *map = node_new(b, CK_MAP, 1), **tail = map ? &map->child : NULL;
    mp_kv_reader r;
    mp_kv_start(&r, copy, len, MP_KV_LINES);
    const char *key, *value;
    char why[MP_OPT_ERR_LEN];
    int rc = map ? 0 : -1, got;
    while (!rc && (got = mp_kv_next(&r, &key, &value, why)) != 0) {
        if (got < 0 || !value) {
            snprintf(b->err, MP_ERR_LEN, "config '%.100s' line %d: %.120s", b->name, r.line,
                     got < 0 ? why : "not 'key = value'");
            rc = -1;
            break;
        }
        for (ck_node *k = map->child; k; k = k->next)
            if (!strcmp(k->key, key)) {
                snprintf(b->err, MP_ERR_LEN, "config '%.150s' line %d: '%.40s' given twice", b->name, r.line, key);
                rc = -1;
            }
        ck_node *n = rc ? NULL : node_new(b, CK_SCALAR, r.line);
        if (!n || !(n->key = dup_text(b, key, strlen(key))) || !(n->text = dup_text(b, value, strlen(value)))) {
            ck_free(n);
            rc = -1;
            break;
        }
        *tail = n, tail = &n->next;
    }
    free(copy);
    if (rc) ck_free(map), map = NULL;
    *root = map;
    return rc;
}

int ck_parse(const char *text, size_t len, const char *name, ck_node **root, char *err)
{
    builder b = {0, name, err};
    *root = NULL;
    if (len > CK_MAX_BYTES) {
        snprintf(err, MP_ERR_LEN, "config '%.150s' has %zu bytes, more than the %d a config may have", name, len,
                 CK_MAX_BYTES);
        return -1;
    }
    size_t i = 0;
    while (i < len && strchr(" \t\r\n", text[i])) i++;
    bool json = i < len && (text[i] == '{' || text[i] == '[');
    int rc = json ? parse_json(&b, text, len, root)
           : kv_lines(text, len) ? parse_kv(&b, text, len, root) : parse_yaml(&b, text, len, root);
    if (!rc && (*root)->kind != CK_MAP) {
        snprintf(err, MP_ERR_LEN, "config '%.150s' is not a map of keys", name);
        ck_free(*root);
        *root = NULL;
        rc = -1;
    }
    return rc;
}

int ck_read(const char *path, ck_node **root, char *err)
{
    *root = NULL;
    if (mp_check_input_file("config", path, CK_MAX_BYTES, err)) return -1;
    FILE *f = fopen(path, "rb");
    if (!f) {
        char q[160];
        snprintf(err, MP_ERR_LEN, "cannot read config '%s': %s", mp_quote(path, q, sizeof q), strerror(errno));
        return -1;
    }
    char *buf = malloc(CK_MAX_BYTES + 1);
    size_t n = buf ? fread(buf, 1, CK_MAX_BYTES + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        snprintf(err, MP_ERR_LEN, "cannot read config '%.150s'", path);
        return -1;
    }
    int rc = ck_parse(buf, n, path, root, err);
    free(buf);
    return rc;
}

/* ---------- values ---------- */

const ck_node *ck_get(const ck_node *map, const char *path)
{
    while (map && map->kind == CK_MAP && path && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        const ck_node *c = map->child;
        while (c && !(strlen(c->key) == n && !strncmp(c->key, path, n))) c = c->next;
        if (!dot) return c;
        map = c;
        path = dot + 1;
    }
    return NULL;
}

bool ck_null(const ck_node *n) { return !n || n->kind == CK_NULL || (n->kind == CK_SCALAR && !n->text[0]); }

const char *ck_text(const ck_node *n) { return n && n->kind == CK_SCALAR ? n->text : NULL; }

/* YAML 1.1's booleans as PyYAML resolves them: each word in lower case, with a
 * capital, or in capitals */
int ck_bool(const ck_node *n, bool *out)
{
    static const char *const words[] = {"true", "yes", "on", "false", "no", "off"};
    if (!n || n->kind != CK_SCALAR || n->quoted) return -1;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        const char *w = words[i], *t = n->text;
        if (strcasecmp(t, w)) continue;
        bool lower = !strcmp(t, w), upper = true, capital = t[0] == (char)(w[0] - 32) && !strcmp(t + 1, w + 1);
        for (const char *c = t; *c; c++) upper = upper && !(*c >= 'a' && *c <= 'z');
        if (!lower && !upper && !capital) return -1;
        *out = i < 3;
        return 0;
    }
    return -1;
}

int ck_real(const ck_node *n, double *out)
{
    if (!n || n->kind != CK_SCALAR || n->quoted || !n->text[0]) return -1;
    /* YAML 1.1 numbers may group digits with '_' (PyYAML reads 500_000 as 500000) */
    char digits[64];
    const char *t = n->text, *d = t + (*t == '-' || *t == '+');
    if (strchr(t, '_') && *d >= '0' && *d <= '9' && strlen(t) < sizeof digits) {
        size_t k = 0;
        for (const char *c = t; *c; c++)
            if (*c != '_') digits[k++] = *c;
        digits[k] = 0;
        t = digits;
    }
    char *end;
    errno = 0;
    double v = strtod(t, &end);
    /* plain decimals only: not strtod's hexadecimal, inf or nan */
    if (*end || errno || !isfinite(v) || strpbrk(t, "xXnN")) return -1;
    *out = v;
    return 0;
}

int ck_int(const ck_node *n, int64_t *out)
{
    double v;
    if (ck_real(n, &v) || v != floor(v) || fabs(v) > 9007199254740992.0) return -1;
    *out = (int64_t)v;
    return 0;
}
