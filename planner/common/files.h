/* files.h — what the library reads from and writes to files: input files
 * checked before they are opened, outputs written atomically. */
#ifndef MP_FILES_H
#define MP_FILES_H

#include <stddef.h>

/* Write `data` to `path` atomically: a temporary file made beside it with O_EXCL
 * (a link planted there is never followed), fsync, rename over the path (a link
 * at the path itself is replaced, not followed). "-" is standard output; a
 * character device, FIFO or socket at the path is written through, a directory
 * or block device refused; an existing file keeps its mode and owner, a new one
 * gets 0644; temporary files of writers that died are removed. */
int mp_write_file_atomic(const char *path, const char *data, size_t len, char *err);
/* The same with a new file's permission bits (0644, 0755). */
int mp_write_file_atomic_mode(const char *path, const char *data, size_t len, unsigned mode, char *err);
/* The same for a file that must be one (a checkpoint, a manifest): a device or
 * FIFO at the path is refused, not written through (a planted FIFO would block
 * the write until someone reads it); "-" is a file named "-". */
int mp_write_regular_file_atomic(const char *path, const char *data, size_t len, char *err);
/* Several files into the existing directory `dir`, all or none: each is
 * written in full into a temporary folder inside `dir` before any is renamed
 * into place, and a rename that fails puts back what the others replaced. */
typedef struct mp_out_file {
    const char *name;          /* a plain file name, no '/' */
    const char *data;
    size_t len;
    unsigned mode;             /* for a new file */
} mp_out_file;
#define MP_MAX_OUT_FILES 8
int mp_write_files_atomic(const char *dir, const mp_out_file *files, int n, char *err);
/* An input file `path` (a `what` such as "config"), before it is opened: 0 for
 * a regular file of at most max_bytes or one that does not exist (its open
 * says why), else -1 with err (a device or a pipe would be read forever). */
int mp_check_input_file(const char *what, const char *path, double max_bytes, char *err);

#endif
