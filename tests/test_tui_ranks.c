/* test_tui_ranks.c — a multi-rank run's metrics files: rank file names (as memtrain
 * writes them), finding the ranks (also those that appear later), refusing files of
 * another run, the heaviest rank, and the --once output of a run. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rank_snapshot.h"
#include "ranks.h"
#include "runset.h"
#include "snapshot_text.h"

static char dir[256];

static char *path_of(const char *name)
{
    static char p[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

/* A rank's file as memtrain writes it: the header, then one row whose peak
 * total is `peak` (settings without ranks= when ranks is 0). */
static void write_rank(const char *name, const char *model, int rank, int ranks, int zero, long peak)
{
    FILE *f = fopen(path_of(name), "w");
    if (!f) {
        perror(name);
        exit(2);
    }
    fprintf(f, "# memtrain metrics v1\n# model: %s\n# settings: family=gpt2 precision=fp32 batch=2", model);
    if (ranks) fprintf(f, " zero=%d rank=%d ranks=%d", zero, rank, ranks);
    fprintf(f, "\n# steps: 3\n# budget_bytes: 0\n# device: cpu\n");
    fprintf(f, "step,time_s,loss,cur_total,peak_total,pred_total\n1,0.1,5.5,1000,%ld,1100\n", peak);
    fclose(f);
}

static void clear_dir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not clear %s\n", dir);
}

static mtop_runset rs; /* large */

static int start(const char *name)
{
    char *paths[1] = {path_of(name)};
    mtop_runset_init(&rs, paths, 1, 16);
    return mtop_runset_poll(&rs, 1.0);
}

static bool slot_is(int i, const char *name, int rank)
{
    const char *p = rs.slot[i]->f.path, *slash = strrchr(p, '/');
    return rs.slot[i]->rank == rank && !strcmp(slash ? slash + 1 : p, name);
}

static void test_names(void)
{
    char out[256], base[256];
    mtop_rank_path("run.csv", 1, out, sizeof out);
    CHECK(!strcmp(out, "run.rank1.csv"), "run.csv, rank 1: run.rank1.csv (%s)", out);
    mtop_rank_path("out.d/run", 12, out, sizeof out);
    CHECK(!strcmp(out, "out.d/run.rank12"), "no extension: out.d/run.rank12 (%s)", out);
    mtop_rank_path("a.tar.gz", 0, out, sizeof out);
    CHECK(!strcmp(out, "a.tar.rank0.gz"), "the last extension: a.tar.rank0.gz, as memtrain (%s)", out);
    CHECK(mtop_rank_of_path("d/run.rank3.csv", base, sizeof base) == 3 && !strcmp(base, "d/run.csv"),
          "d/run.rank3.csv: rank 3 of d/run.csv (%s)", base);
    CHECK(mtop_rank_of_path("run.rank10", base, sizeof base) == 10 && !strcmp(base, "run"), "run.rank10: rank 10 of run");
    CHECK(mtop_rank_of_path("a.tar.rank0.gz", base, sizeof base) == 0 && !strcmp(base, "a.tar.gz"), "a.tar.rank0.gz: a.tar.gz");
    const char *not_ranks[] = {"run.csv", "run.rankx.csv", "run.rank.csv", "run.rank01.csv", "run.rank1.tar.gz",
                               "run.rank1.", ".rank1.csv", "ranks.rank/run.csv",
                               /* memtrain names rank 10 of d/run..run d/run..rank10.run (found by fuzz_runset) */
                               "d/run..run.rank10", "a.b.rank2"};
    int wrong = 0;
    for (size_t i = 0; i < sizeof not_ranks / sizeof *not_ranks; i++)
        if (mtop_rank_of_path(not_ranks[i], base, sizeof base) >= 0) wrong++;
    CHECK(wrong == 0, "other names are not rank files (%d taken for one)", wrong);
    int trips = 0;
    for (int k = 0; k < 130; k += 7) {
        mtop_rank_path("x/y.z/run.metrics.csv", k, out, sizeof out);
        trips += mtop_rank_of_path(out, base, sizeof base) == k && !strcmp(base, "x/y.z/run.metrics.csv");
    }
    CHECK(trips == 19, "a rank file's name gives back its rank and base (%d of 19)", trips);
}

static void test_meta(void)
{
    mtop_parser a, b;
    mtop_row r;
    mtop_parser_init(&a);
    mtop_parser_init(&b);
    const char *sa = "# settings: batch=2 zero=1 rank=1 ranks=2", *sb = "# settings: batch=2 zero=1 rank=0 ranks=3";
    mtop_parse_line(&a, "# model: gpt2", 13, &r);
    mtop_parse_line(&a, sa, strlen(sa), &r);
    mtop_parse_line(&b, "# model: gpt2", 13, &r);
    mtop_parse_line(&b, sb, strlen(sb), &r);
    CHECK(mtop_meta_rank(&a.meta) == 1 && mtop_meta_ranks(&a.meta) == 2 && mtop_meta_known(&a.meta),
          "rank=1 ranks=2 from the settings");
    char why[128] = "";
    CHECK(!mtop_same_run(&a.meta, &b.meta, why, sizeof why) && !strcmp(why, "ranks=3, not 2"),
          "ranks=3 and ranks=2 are two runs (%s)", why);
    mtop_parse_line(&b, "# model: llama", 14, &r);
    CHECK(!mtop_same_run(&a.meta, &b.meta, why, sizeof why) && strstr(why, "model 'llama', not 'gpt2'"),
          "another model is another run (%s)", why);
    CHECK(mtop_same_run(&a.meta, &a.meta, why, sizeof why), "a file is of its own run");
    mtop_parser_init(&b);
    CHECK(mtop_meta_rank(&b.meta) == -1 && mtop_meta_ranks(&b.meta) == -1 && !mtop_meta_known(&b.meta),
          "no header: no rank, no ranks");
}

static void test_heaviest(void)
{
    static mtop_snapshot s[4];
    const mtop_snapshot *p[4] = {&s[0], &s[1], &s[2], &s[3]};
    memset(s, 0, sizeof s);
    CHECK(mtop_heaviest(p, 4) == -1, "no peak total anywhere: no heaviest rank");
    double peaks[4] = {300, 500, 200, 500};
    for (int i = 0; i < 4; i++) s[i].tab[MTOP_TOTAL][MTOP_COL_PEAK] = (mtop_val){peaks[i], i != 2};
    CHECK(mtop_heaviest(p, 4) == 1, "the highest peak total; a tie goes to the first (rank 1, not 3)");
    s[0].tab[MTOP_TOTAL][MTOP_COL_PEAK].v = 900;
    s[0].tab[MTOP_TOTAL][MTOP_COL_PEAK].ok = false;
    CHECK(mtop_heaviest(p, 4) == 1, "a rank without a peak is never the heaviest");
    s[2].tab[MTOP_TOTAL][MTOP_COL_PEAK].ok = true;
    s[2].tab[MTOP_TOTAL][MTOP_COL_PEAK].v = 501;
    CHECK(mtop_heaviest(p, 4) == 2, "the current values do not matter, the peak does");
}

static void test_discovery(void)
{
    write_rank("one.csv", "gpt2", 0, 0, 0, 2000);
    start("one.csv");
    CHECK(!rs.ranked && rs.n == 1 && slot_is(0, "one.csv", 0), "a file that exists is followed alone, as ever");
    mtop_runset_free(&rs);

    write_rank("run.rank0.csv", "gpt2", 0, 2, 1, 2000);
    write_rank("run.rank1.csv", "gpt2", 1, 2, 1, 2600);
    write_rank("run.rank2.csv", "gpt2", 2, 4, 1, 9000); /* an older, larger run's */
    int rows = start("run.csv");
    CHECK(rs.ranked && rs.n == 2 && rs.ranks == 2 && slot_is(0, "run.rank0.csv", 0) && slot_is(1, "run.rank1.csv", 1),
          "run.csv absent: run.rank0.csv and run.rank1.csv, as ranks=2 says (%d slots)", rs.n);
    CHECK(rows == 2 && !rs.problem[0] && mtop_runset_missing(&rs) == -1, "both read, one run, none missing (%s)",
          rs.problem);
    mtop_snap_opts o;
    mtop_snap_opts_default(&o);
    mtop_runset_snapshots(&rs, &o, 2.0, false);
    static mtop_rank_table t;
    mtop_runset_table(&rs, -1, &t);
    CHECK(t.heaviest == 1 && t.selected == 1 && t.rank[1] == 1, "rank 1 is the heaviest and shown first");
    mtop_runset_table(&rs, 0, &t);
    CHECK(t.heaviest == 1 && t.selected == 0, "a rank chosen stays shown");
    mtop_runset_free(&rs);

    start("run.rank1.csv");
    CHECK(rs.ranked && rs.n == 2 && slot_is(0, "run.rank0.csv", 0) && !strcmp(rs.base + strlen(rs.base) - 7, "run.csv"),
          "memtop run.rank1.csv: the same run, from rank 0");
    mtop_runset_free(&rs);
}

static void test_waiting(void)
{
    clear_dir();
    start("live.csv");
    CHECK(!rs.ranked && rs.n == 1 && rs.slot[0]->f.state == MTOP_FOLLOW_WAITING, "nothing yet: waiting for live.csv");
    write_rank("live.rank0.csv", "gpt2", 0, 3, 0, 100);
    mtop_runset_poll(&rs, 2.0);
    CHECK(rs.ranked && rs.n == 3 && rs.ranks == 3 && slot_is(0, "live.rank0.csv", 0),
          "live.rank0.csv appears: the run's 3 ranks are followed");
    CHECK(mtop_runset_missing(&rs) == 1 && rs.slot[2]->f.state == MTOP_FOLLOW_WAITING && !rs.problem[0],
          "ranks 1 and 2 not there yet: waited for, not an error");
    write_rank("live.rank2.csv", "gpt2", 2, 3, 0, 300);
    write_rank("live.rank1.csv", "gpt2", 1, 3, 0, 200);
    mtop_runset_poll(&rs, 3.0);
    CHECK(mtop_runset_missing(&rs) == -1 && rs.slot[1]->h.pushed == 1 && rs.slot[2]->h.pushed == 1,
          "they appear later and are read");
    mtop_runset_free(&rs);

    clear_dir();
    write_rank("gap.rank0.csv", "gpt2", 0, 3, 0, 100);
    write_rank("gap.rank2.csv", "gpt2", 2, 3, 0, 100);
    start("gap.csv");
    CHECK(rs.n == 3 && mtop_runset_missing(&rs) == 1, "a file missing in the middle: rank 1 is named (%d)",
          mtop_runset_missing(&rs));
    mtop_runset_free(&rs);
}

static void test_other_runs(void)
{
    clear_dir();
    write_rank("run.rank0.csv", "gpt2", 0, 2, 1, 100);
    write_rank("run.rank1.csv", "gpt2", 1, 3, 1, 100);
    start("run.csv");
    CHECK(strstr(rs.problem, "run.rank1.csv' is from another run: ranks=3, not 2 as in '") != NULL,
          "ranks=3 beside ranks=2: named (%s)", rs.problem);
    mtop_runset_free(&rs);
    write_rank("run.rank1.csv", "gpt2", 0, 2, 1, 100);
    start("run.csv");
    CHECK(strstr(rs.problem, "run.rank1.csv' says rank=0: it is not rank 1") != NULL, "a file of the wrong rank (%s)",
          rs.problem);
    mtop_runset_free(&rs);

    write_rank("b.rank1.csv", "llama", 1, 2, 1, 100);
    write_rank("single.csv", "gpt2", 0, 0, 0, 100);
    char *listed[3] = {path_of("run.rank0.csv"), path_of("b.rank1.csv"), NULL};
    mtop_runset_init(&rs, listed, 2, 16);
    mtop_runset_poll(&rs, 1.0);
    CHECK(rs.listed && strstr(rs.problem, "b.rank1.csv' is from another run: model 'llama', not 'gpt2'"),
          "two files of two models: named (%s)", rs.problem);
    mtop_runset_free(&rs);
    listed[1] = path_of("single.csv");
    mtop_runset_init(&rs, listed, 2, 16);
    mtop_runset_poll(&rs, 1.0);
    CHECK(strstr(rs.problem, "single.csv' is not a rank of a multi-rank run"), "a one-process file among ranks (%s)",
          rs.problem);
    mtop_runset_free(&rs);
    listed[1] = path_of("run.rank0.csv");
    mtop_runset_init(&rs, listed, 2, 16);
    mtop_runset_poll(&rs, 1.0);
    CHECK(strstr(rs.problem, "is rank 0 again"), "the same rank twice (%s)", rs.problem);
    mtop_runset_free(&rs);
}

static void test_output(void)
{
    clear_dir();
    write_rank("out.rank0.csv", "gpt2", 0, 2, 1, 2000);
    write_rank("out.rank1.csv", "gpt2", 1, 2, 1, 2600);
    start("out.csv");
    mtop_snap_opts o;
    mtop_snap_opts_default(&o);
    mtop_runset_snapshots(&rs, &o, 2.0, false);
    static mtop_rank_table t;
    mtop_runset_table(&rs, -1, &t);
    char *js = mtop_ranks_json(&t);
    json_error_t je;
    json_t *j = js ? json_loads(js, 0, &je) : NULL;
    json_t *ranks = j ? json_object_get(j, "ranks") : NULL;
    CHECK(j && json_integer_value(json_object_get(j, "heaviest_rank")) == 1 && json_array_size(ranks) == 2,
          "JSON: heaviest_rank 1, a ranks array of 2");
    int fields = 0;
    for (size_t i = 0; i < json_array_size(ranks); i++) {
        json_t *r = json_array_get(ranks, i);
        fields += json_integer_value(json_object_get(r, "rank")) == (json_int_t)i &&
                  json_is_boolean(json_object_get(r, "heaviest")) && json_object_get(r, "components") &&
                  json_object_get(r, "step") && json_object_get(r, "state");
    }
    CHECK(fields == 2, "each rank: rank, heaviest and the one-file fields");
    CHECK(j && json_integer_value(json_object_get(json_object_get(json_object_get(j, "components"), "total"), "peak")) == 2600,
          "the top level is the heaviest rank's snapshot");
    json_decref(j);
    free(js);
    char *text = mtop_ranks_text(&t);
    CHECK(text && strstr(text, "2 ranks, heaviest rank 1 (*") && strstr(text, "\n*   1  live") && strstr(text, "\n    0  live"),
          "text: the rank table, the heaviest marked '*'");
    free(text);
    char *csv = mtop_ranks_csv(&t);
    int lines = 0;
    for (const char *c = csv; c && *c; c++) lines += *c == '\n';
    CHECK(csv && !strncmp(csv, "rank,heaviest,file,", 19) && lines == 3 && strstr(csv, "\n1,true,"),
          "CSV: rank and heaviest first, a row per rank");
    free(csv);
    mtop_runset_free(&rs);
}

/* Issue 36: a header count out of range is refused by name, never truncated
 * into another rank or run size (4294967298 = 2^32 + 2 would be 2 as an int). */
static void write_settings(const char *name, const char *settings)
{
    FILE *f = fopen(path_of(name), "w");
    if (!f) {
        perror(name);
        exit(2);
    }
    fprintf(f, "# memtrain metrics v1\n# model: gpt2\n# settings: %s\n# steps: 3\n"
               "step,time_s,loss,cur_total,peak_total,pred_total\n1,0.1,5.5,1000,1200,1100\n",
            settings);
    fclose(f);
}

static void test_bad_counts(void)
{
    clear_dir();
    write_settings("big.rank0.csv", "zero=1 rank=0 ranks=4294967298");
    write_settings("big.rank1.csv", "zero=1 rank=1 ranks=4294967298");
    write_settings("big.rank2.csv", "zero=1 rank=2 ranks=4294967298");
    start("big.csv");
    CHECK(rs.ranks != 2 && strstr(rs.problem, "big.rank0.csv': ranks=4294967298: not a number of ranks"),
          "ranks=4294967298: the file named with the value, not a run of 2 (%s)", rs.problem);
    mtop_runset_free(&rs);

    write_settings("one.csv", "batch=2 zero=4294967296");
    start("one.csv");
    CHECK(!rs.ranked && strstr(rs.problem, "one.csv': zero=4294967296: not a ZeRO stage"),
          "one file with zero=4294967296 (0 as an int): refused too (%s)", rs.problem);
    mtop_runset_free(&rs);

    write_settings("r.rank0.csv", "zero=1 rank=0 ranks=2");
    write_settings("r.rank1.csv", "zero=1 rank=4294967297 ranks=2");
    start("r.csv");
    CHECK(strstr(rs.problem, "r.rank1.csv': rank=4294967297: not a rank"), "rank=4294967297 (1 as an int): named (%s)",
          rs.problem);
    mtop_runset_free(&rs);

    write_settings("s.rank0.csv", "zero=1 rank=0 ranks=2");
    write_settings("s.rank1.csv", "zero=1 rank=2 ranks=2");
    start("s.csv");
    CHECK(strstr(rs.problem, "s.rank1.csv': rank=2: not below ranks=2"), "rank=2 of 2 ranks: named (%s)", rs.problem);
    mtop_runset_free(&rs);

    /* a bad count that turns up later is named as soon as it is read */
    write_settings("late.csv", "batch=2");
    start("late.csv");
    CHECK(!rs.problem[0], "a good header: no problem");
    FILE *f = fopen(path_of("late.csv"), "a");
    fputs("# steps: 99999999999999999999\n", f);
    fclose(f);
    mtop_runset_poll(&rs, 2.0);
    CHECK(strstr(rs.problem, "late.csv': steps '99999999999999999999'"), "a bad steps line appended: named (%s)",
          rs.problem);
    mtop_runset_free(&rs);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/test_tui_ranks.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    test_names();
    test_meta();
    test_heaviest();
    test_discovery();
    test_waiting();
    test_other_runs();
    test_output();
    test_bad_counts();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary();
}
