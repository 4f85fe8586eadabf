/* [Callaghan 2024-10-23], [Intel optimization manual], [MDEV-19845] (docs/sources.md): PAUSE latency; InnoDB's
 * ut_delay(X) (X * multiplier PAUSEs, multiplier 50) against MariaDB's (X * calibrated/4 PAUSEs, calibrated = 200, or
 * 100 when a PAUSE takes over 30 TSC ticks); and the mean delay of random(0..N-1) against random(0..N), the off-by-one
 * that made backoff 20% longer. */
#include "probe.h"

#define INNODB_MULTIPLIER 50

static void pauses(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) cpu_relax();
}

/* MariaDB my_cpu_init(): two runs of 16 PAUSEs between TSC reads; long PAUSEs get the smaller multiplier. */
static unsigned mariadb_multiplier(void) {
    uint64_t t0 = ticks();
    pauses(16);
    uint64_t t1 = ticks();
    pauses(16);
    uint64_t t2 = ticks();
    return (t2 - t1 > 30 * 16 && t1 - t0 > 30 * 16) ? 100 : 200;
}

static uint64_t lcg_state = 12345;
static uint64_t lcg(void) {
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return lcg_state >> 33;
}

int main(int argc, char **argv) {
    int repeats;
    double scale;
    parse_args(argc, argv, &repeats, &scale);
    int delay = argc > 3 ? atoi(argv[3]) : 6;
    pin(0);
    unsigned maria = mariadb_multiplier();
    char extra[160];
    uint64_t n = scaled(2000000ull, scale), calls = scaled(20000ull, scale), draws = scaled(10000000ull, scale);
    for (int r = 0; r < repeats; r++) {
        struct sample s = start();
        pauses(n);
        emit("pause", "PAUSE", r, n, s, NULL);
        for (int x = 0; x <= delay; x++) {
            snprintf(extra, sizeof extra, "\"x\":%d,\"multiplier\":%d", x, INNODB_MULTIPLIER);
            s = start();
            for (uint64_t c = 0; c < calls; c++) pauses((uint64_t)x * INNODB_MULTIPLIER);
            emit("ut_delay", "InnoDB", r, calls, s, extra);
            snprintf(extra, sizeof extra, "\"x\":%d,\"multiplier\":%u", x, maria / 4);
            s = start();
            for (uint64_t c = 0; c < calls; c++) pauses((uint64_t)x * (maria / 4));
            emit("ut_delay", "MariaDB (calibrated)", r, calls, s, extra);
        }
        uint64_t sum_old = 0, sum_new = 0;
        s = start();
        for (uint64_t d = 0; d < draws; d++) {
            uint64_t v = lcg();
            sum_old += v % (uint64_t)delay;        /* random(0..N-1) */
            sum_new += v % ((uint64_t)delay + 1);  /* random(0..N) */
        }
        snprintf(extra, sizeof extra, "\"mean_0_to_n_minus_1\":%.4f,\"mean_0_to_n\":%.4f,\"n\":%d",
                 (double)sum_old / (double)draws, (double)sum_new / (double)draws, delay);
        emit("backoff", "random delay draw", r, draws, s, extra);
    }
    return 0;
}
