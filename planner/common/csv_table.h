/* csv_table.h — a whole CSV file read into memory (libcsv), for the library and its commands.
 * Not part of the public header: the profiles and memplan calibrate read their files with it. */
#ifndef CSV_TABLE_H
#define CSV_TABLE_H

#include <stdbool.h>

typedef struct csv_table {
    char **head;          /* the header's names */
    int nhead;
    char ***rows;         /* each padded with NULLs to at least nhead fields */
    int *nfields;         /* the fields each row really had */
    int nrows, cap;
    int records;          /* records seen, header included */
    /* while parsing */
    char **cur;
    int ncur, curcap;
    bool oom;
} csv_table;

/* Read PATH; lines starting with '#' where a record would start are comments.
 * `what` names the file in errors ("profile", "measurements"). 0, or -1 with err
 * (MP_ERR_LEN bytes); the table is to be freed either way. */
int csv_table_read(const char *path, const char *what, csv_table *t, char *err);
void csv_table_free(csv_table *t);
/* The column's index, or -1. */
int csv_table_col(const csv_table *t, const char *name);

#endif
