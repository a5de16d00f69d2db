/* csv_table.c — read a CSV file whole with libcsv (see csv_table.h). */
#include "common/csv_table.h"
#include "common/errors.h"
#include "common/files.h"

#include <csv.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_field(void *s, size_t len, void *data)
{
    csv_table *t = data;
    if (t->ncur == t->curcap) {
        int cap = t->curcap ? 2 * t->curcap : 32;
        char **p = realloc(t->cur, sizeof *p * (size_t)cap);
        if (!p) { t->oom = true; return; }
        t->cur = p, t->curcap = cap;
    }
    char *f = malloc(len + 1);
    if (!f) { t->oom = true; return; }
    if (len) memcpy(f, s, len);
    f[len] = 0;
    t->cur[t->ncur++] = f;
}

static void drop_current(csv_table *t)
{
    for (int i = 0; i < t->ncur; i++) free(t->cur[i]);
    t->ncur = 0;
}

static void on_row(int c, void *data)
{
    csv_table *t = data;
    (void)c;
    /* rows are padded to the header's width so that a short row reads as empty cells */
    int width = t->records == 0 || t->ncur > t->nhead ? t->ncur : t->nhead;
    char **fields = calloc((size_t)(width ? width : 1), sizeof *fields);
    if (!fields) { t->oom = true; drop_current(t); return; }
    if (t->ncur) memcpy(fields, t->cur, sizeof *fields * (size_t)t->ncur);
    if (t->records++ == 0) {
        t->head = fields, t->nhead = t->ncur;
    } else {
        if (t->nrows == t->cap) {
            int cap = t->cap ? 2 * t->cap : 32;
            char ***r = realloc(t->rows, sizeof *r * (size_t)cap);
            if (r) t->rows = r;
            int *n = realloc(t->nfields, sizeof *n * (size_t)cap);
            if (n) t->nfields = n;
            if (!r || !n) { t->oom = true; free(fields); drop_current(t); return; }
            t->cap = cap;
        }
        t->rows[t->nrows] = fields;
        t->nfields[t->nrows++] = t->ncur;
    }
    t->ncur = 0;
}

void csv_table_free(csv_table *t)
{
    for (int i = 0; i < t->nhead; i++) free(t->head[i]);
    free(t->head);
    for (int r = 0; r < t->nrows; r++) {
        for (int i = 0; i < t->nfields[r]; i++) free(t->rows[r][i]);
        free(t->rows[r]);
    }
    free(t->rows);
    free(t->nfields);
    drop_current(t);
    free(t->cur);
    memset(t, 0, sizeof *t);
}

int csv_table_col(const csv_table *t, const char *name)
{
    for (int i = 0; i < t->nhead; i++)
        if (!strcmp(t->head[i], name)) return i;
    return -1;
}

int csv_table_read(const char *path, const char *what, csv_table *t, char *err)
{
    memset(t, 0, sizeof *t);
    if (mp_check_input_file(what, path, 256.0 * 1048576, err)) return -1; /* measurements, profiles */
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, MP_ERR_LEN, "cannot open %s '%.180s': %s", what, path, strerror(errno));
        return -1;
    }
    struct csv_parser p;
    if (csv_init(&p, CSV_APPEND_NULL | CSV_STRICT | CSV_STRICT_FINI)) {
        fclose(f);
        snprintf(err, MP_ERR_LEN, "out of memory");
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    bool at_start = true; /* the next line begins a record */
    int rc = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        if (at_start && line[0] == '#') continue;
        int before = t->records;
        if (csv_parse(&p, line, (size_t)n, on_field, on_row, t) != (size_t)n) {
            rc = -1;
            break;
        }
        bool blank = strspn(line, " \t\r\n") == (size_t)n;
        at_start = t->records != before || (at_start && blank);
    }
    if (rc || (!ferror(f) && csv_fini(&p, on_field, on_row, t)))
        snprintf(err, MP_ERR_LEN, "%s '%.180s' is not valid CSV (record %d): %s", what, path,
                 t->records + 1, csv_strerror(csv_error(&p))), rc = -1;
    else if (ferror(f))
        snprintf(err, MP_ERR_LEN, "cannot read %s '%.180s': %s", what, path, strerror(errno)), rc = -1;
    else if (t->oom)
        snprintf(err, MP_ERR_LEN, "out of memory reading %s '%.180s'", what, path), rc = -1;
    free(line);
    csv_free(&p);
    fclose(f);
    return rc;
}
