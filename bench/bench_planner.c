/* bench_planner.c — planner speed: estimates per second and full searches per second.
 * Output: one "bench: NAME VALUE UNIT" line per figure (stable, parseable). */
#include "common/errors.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "profiles/profiles.h"
#include "search/search.h"
#include "settings/settings.h"
#include "estimate/reserve.h"

#include <stdio.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
    char err[MP_ERR_LEN];
    mp_model m;
    if (mp_model_from_params(7e9, &m, err)) {
        fprintf(stderr, "bench: %s\n", err);
        return 1;
    }
    mp_settings s;
    mp_settings_default(&s, &m);
    mp_gpu g;
    mp_gpu_lookup("12GB", &g, err);
    mp_estimate e;
    int n = 0;
    double t0 = now(), t;
    do {
        for (int i = 0; i < 1000; i++, n++) {
            s.batch = 1 + i % 16;
            mp_estimate_run(&m, &s, &g, &e, err);
        }
        t = now() - t0;
    } while (t < 1.0);
    printf("bench: estimate_per_s %.0f estimates/s\n", n / t);

    mp_search_opts o = {.task = MP_TASK_ANY, .budget_bytes = g.mem_bytes, .headroom = 0.1, .pinned = MP_PIN_SEQ};
    mp_search_result r;
    int searches = 0;
    size_t considered = 0, evaluated = 0;
    t0 = now();
    do {
        mp_search(&m, &s, &g, &o, &r, err);
        considered = r.considered, evaluated = r.evaluated;
        mp_search_free(&r);
        searches++;
        t = now() - t0;
    } while (t < 1.0);
    printf("bench: search_7b_12gb_ms %.2f ms\n", 1e3 * t / searches);
    printf("bench: plans_per_s %.0f plans/s\n", considered * searches / t);
    printf("bench: estimates_in_search_per_s %.0f estimates/s\n", evaluated * searches / t);

    /* the same search as a process's first: no replay made before it */
    searches = 0;
    t0 = now();
    do {
        replay_cache_clear();
        mp_search(&m, &s, &g, &o, &r, err);
        mp_search_free(&r);
        searches++;
        t = now() - t0;
    } while (t < 1.0);
    printf("bench: search_7b_12gb_cold_ms %.2f ms\n", 1e3 * t / searches);
    return 0;
}
