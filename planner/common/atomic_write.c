/* atomic_write.c — write a file so that a reader sees the old or the new
 * content, never a part, and so that nothing planted at the path can redirect
 * the write: a temporary file created beside it with O_EXCL (mkstemp: a link
 * planted there is never followed), fsync, rename. A device or a FIFO at the
 * path (-o /dev/stdout, a pipe) is written through, never replaced; an existing
 * file keeps its mode and owner; temporary files a killed writer left behind
 * are removed. A bundle's files are all written or none (mp_write_files_atomic). */
#include "common/errors.h"
#include "common/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FAIL(...) (snprintf(err, MP_ERR_LEN, __VA_ARGS__), -1)
/* temporary names: ".NAME.memplan-PID-XXXXXX" beside NAME */
#define TMP_TAG ".memplan-"

static int write_all(int fd, const char *data, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        off += (size_t)w;
    }
    return 0;
}

/* dir and base of path ("a/b/c" -> "a/b", "c"; "c" -> ".", "c"); -1 when too long or base is empty */
static int split_path(const char *path, char *dir, size_t dlen, const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!**base) return -1;
    int n = slash ? snprintf(dir, dlen, "%.*s", slash == path ? 1 : (int)(slash - path), path)
                  : snprintf(dir, dlen, ".");
    return n < 0 || (size_t)n >= dlen ? -1 : 0;
}

/* What is at path now: 0 nothing, 1 a regular file (its status in *st), 2 a
 * device, FIFO or socket to write through, -1 with err for what cannot be written. */
static int destination(const char *path, struct stat *st, char *err)
{
    if (lstat(path, st)) {
        if (errno == ENOENT) return 0;
        return FAIL("cannot write '%.200s': %s", path, strerror(errno));
    }
    if (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode)) return S_ISREG(st->st_mode) ? 1 : 0;
    if (S_ISDIR(st->st_mode)) return FAIL("cannot write '%.200s': it is a directory", path);
    if (S_ISBLK(st->st_mode)) return FAIL("cannot write '%.200s': it is a block device", path);
    return 2;
}

static int write_through(const char *path, const char *data, size_t len, char *err)
{
    int fd = open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return FAIL("cannot write '%.200s': %s", path, strerror(errno));
    int rc = write_all(fd, data, len);
    int e = errno;
    if (close(fd) && !rc) rc = -1, e = errno;
    return rc ? FAIL("cannot write '%.200s': %s", path, strerror(e)) : 0;
}

/* Remove the temporary files of writers of `base` in `dir` that died before
 * renaming them (their process is gone), and those of the naming before
 * (NAME.tmp.PID). Only regular files whose name says so are touched. */
static void remove_stale(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d) return;
    size_t bl = strlen(base);
    int dfd = dirfd(d);
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name, *pid_at = NULL;
        if (n[0] == '.' && !strncmp(n + 1, base, bl) && !strncmp(n + 1 + bl, TMP_TAG, strlen(TMP_TAG)))
            pid_at = n + 1 + bl + strlen(TMP_TAG);
        else if (!strncmp(n, base, bl) && !strncmp(n + bl, ".tmp.", 5))
            pid_at = n + bl + 5;
        if (!pid_at) continue;
        char *end;
        long pid = strtol(pid_at, &end, 10);
        if (end == pid_at || pid <= 0 || (*end && *end != '-') || (!*end && pid_at[0] == '0')) continue;
        if (pid == (long)getpid() || !(kill((pid_t)pid, 0) && errno == ESRCH)) continue;
        struct stat st;
        if (!fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode)) unlinkat(dfd, n, 0);
    }
    closedir(d);
}

static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* A new file in `dir` holding data, fsync'd, with the mode (and owner) the
 * destination should have; its name in tmp. */
static int write_temp(const char *dir, const char *base, const char *data, size_t len, unsigned mode,
                      const struct stat *keep, char *tmp, size_t tlen, const char *path, char *err)
{
    if (snprintf(tmp, tlen, "%s/.%s%s%ld-XXXXXX", dir, base, TMP_TAG, (long)getpid()) >= (int)tlen)
        return FAIL("path too long '%.200s'", path);
    int fd = mkstemp(tmp);
    if (fd < 0) return FAIL("cannot write '%.200s': %s", path, strerror(errno));
    int rc = write_all(fd, data, len);
    /* an existing file keeps its bits and owner; a new one gets exactly `mode`, whatever the umask */
    if (!rc) rc = fchmod(fd, keep ? keep->st_mode & 07777 : (mode_t)mode);
    if (!rc && keep && (keep->st_uid != geteuid() || keep->st_gid != getegid()))
        rc = fchown(fd, keep->st_uid, keep->st_gid);
    if (!rc) rc = fsync(fd);
    int e = errno;
    if (close(fd) && !rc) rc = -1, e = errno;
    if (rc) {
        unlink(tmp);
        return FAIL("cannot write '%.200s': %s", path, strerror(e));
    }
    return 0;
}

int mp_write_file_atomic(const char *path, const char *data, size_t len, char *err)
{
    return mp_write_file_atomic_mode(path, data, len, 0644, err);
}

static int write_atomic(const char *path, const char *data, size_t len, unsigned mode, bool through, char *err);

int mp_write_file_atomic_mode(const char *path, const char *data, size_t len, unsigned mode, char *err)
{
    return write_atomic(path, data, len, mode, true, err);
}

int mp_write_regular_file_atomic(const char *path, const char *data, size_t len, char *err)
{
    return write_atomic(path, data, len, 0644, false, err);
}

static int write_atomic(const char *path, const char *data, size_t len, unsigned mode, bool through, char *err)
{
    if (through && !strcmp(path, "-")) {
        if (write_all(STDOUT_FILENO, data, len)) return FAIL("cannot write to standard output: %s", strerror(errno));
        return 0;
    }
    struct stat st;
    int kind = destination(path, &st, err);
    if (kind < 0) return -1;
    if (kind == 2 && !through)
        return FAIL("cannot write '%.150s': not a regular file (this output replaces a file, never writes through)",
                    path);
    if (kind == 2) return write_through(path, data, len, err);
    char dir[4096], tmp[4200];
    const char *base;
    if (split_path(path, dir, sizeof dir, &base)) return FAIL("cannot write '%.200s': not a file name", path);
    remove_stale(dir, base);
    if (write_temp(dir, base, data, len, mode, kind == 1 ? &st : NULL, tmp, sizeof tmp, path, err)) return -1;
    if (rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return FAIL("cannot write '%.200s': %s", path, strerror(e));
    }
    sync_dir(dir);
    return 0;
}

/* ---------- several files, all or none ---------- */

int mp_write_files_atomic(const char *dir, const mp_out_file *files, int n, char *err)
{
    char tmpdir[4096], path[4300], tmp[4300], old[4300];
    struct stat st[MP_MAX_OUT_FILES];
    bool existed[MP_MAX_OUT_FILES] = {0};
    if (n > MP_MAX_OUT_FILES) return FAIL("too many files for one bundle (%d)", n);
    size_t dl = strlen(dir);
    const char *sep = dl && dir[dl - 1] == '/' ? "" : "/";
    /* what is there must be a file (or nothing) that a rename may replace */
    for (int i = 0; i < n; i++) {
        if (snprintf(path, sizeof path, "%s%s%s", dir, sep, files[i].name) >= (int)sizeof path)
            return FAIL("path too long '%.200s'", dir);
        int kind = destination(path, &st[i], err);
        if (kind < 0) return -1;
        if (kind == 2) return FAIL("cannot write '%.150s': not a regular file (a bundle replaces files)", path);
        existed[i] = kind == 1;
        remove_stale(dir, files[i].name);
    }
    if (snprintf(tmpdir, sizeof tmpdir, "%s%s.memplan-bundle-%ld-XXXXXX", dir, sep, (long)getpid())
        >= (int)sizeof tmpdir)
        return FAIL("path too long '%.200s'", dir);
    if (!mkdtemp(tmpdir)) return FAIL("cannot write into '%.200s': %s", dir, strerror(errno));
    int rc = 0, done = 0;
    /* every file in full first: a failure here leaves the bundle as it was */
    for (int i = 0; i < n && !rc; i++) {
        snprintf(path, sizeof path, "%s%s%s", dir, sep, files[i].name);
        snprintf(tmp, sizeof tmp, "%s/%s", tmpdir, files[i].name);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            rc = FAIL("cannot write '%.200s': %s", path, strerror(errno));
            break;
        }
        int w = write_all(fd, files[i].data, files[i].len);
        if (!w) w = fchmod(fd, existed[i] ? st[i].st_mode & 07777 : (mode_t)files[i].mode);
        if (!w && existed[i] && (st[i].st_uid != geteuid() || st[i].st_gid != getegid()))
            w = fchown(fd, st[i].st_uid, st[i].st_gid);
        if (!w) w = fsync(fd);
        int e = errno;
        if (close(fd) && !w) w = -1, e = errno;
        if (w) rc = FAIL("cannot write '%.200s': %s", path, strerror(e));
        /* the file it replaces, kept (a second name) until every rename is done */
        snprintf(old, sizeof old, "%s/%s.old", tmpdir, files[i].name);
        if (!rc && existed[i] && link(path, old))
            rc = FAIL("cannot write '%.200s': %s", path, strerror(errno));
    }
    for (; !rc && done < n; done++) {
        snprintf(path, sizeof path, "%s%s%s", dir, sep, files[done].name);
        snprintf(tmp, sizeof tmp, "%s/%s", tmpdir, files[done].name);
        if (rename(tmp, path)) rc = FAIL("cannot write '%.200s': %s", path, strerror(errno));
    }
    if (rc) /* put back what the renames replaced */
        for (int i = 0; i < done; i++) {
            snprintf(path, sizeof path, "%s%s%s", dir, sep, files[i].name);
            snprintf(old, sizeof old, "%s/%s.old", tmpdir, files[i].name);
            if (existed[i]) rename(old, path);
            else unlink(path);
        }
    for (int i = 0; i < n; i++) {
        snprintf(tmp, sizeof tmp, "%s/%s", tmpdir, files[i].name);
        unlink(tmp);
        snprintf(old, sizeof old, "%s/%s.old", tmpdir, files[i].name);
        unlink(old);
    }
    rmdir(tmpdir);
    sync_dir(dir);
    return rc;
}
