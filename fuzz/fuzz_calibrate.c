/*
 * fuzz_calibrate.c — feeds the bytes as the measurements CSV of `memplan
 * calibrate FILE --framework pytorch-cpu --format json` (the whole command:
 * its reader, each row's settings parsed as the command line's, the fit and
 * the report), through a file under $TMPDIR.
 * Asserts: the command returns 0, 1 or 2 (its exit statuses) and is clean
 * under ASan/UBSan and the leak checker, whatever the file holds. The report
 * goes to /dev/null, the one-line errors to stderr (run with -close_fd_mask=2
 * to silence them).
 */
#include "fuzz.h"
#include "cmd/cli.h"

#include <unistd.h>

static char path[4096];

static void remove_file(void) { unlink(path); }

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/memplan-fuzz-calibrate-XXXXXX.csv", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemps(path, 4);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    close(fd);
    atexit(remove_file);
    char *dir = realpath("profiles", NULL);
    if (dir) setenv("MEMPLAN_PROFILES", dir, 0);
    free(dir);
    if (!freopen("/dev/null", "w", stdout)) exit(1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) abort();
    char *argv[] = {"calibrate", path, "--framework", "pytorch-cpu", "--format", "json", NULL};
    int rc = cmd_calibrate(6, argv);
    FUZZ_ASSERT(rc >= 0 && rc <= 2, "calibrate returned %d", rc);
    fflush(stdout);
    return 0;
}
