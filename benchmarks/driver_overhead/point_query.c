/* The minimal client dbperf-driver is measured against: one connection, one prepared point query, a closed loop.
 * SQLite is dlopen()ed from the same shared library the driver uses, so both run the same engine code.
 * Usage: point_query LIBRARY DATABASE TABLE_SIZE WARMUP_S TIME_S [SETTINGS_SQL]   -> prints "qps <number> ..."
 *        WARMUP_S "events" and TIME_S N: exactly N queries, no warm-up (the simulated comparison runs two counts under
 *        cachegrind and takes the difference); the loop still reads the clock once a query, as the timed loop does.
 * SETTINGS_SQL (e.g. "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL") runs once after opening, as the driver
 * applies a target's PRAGMAs. DATABASE ":memory:" creates and fills sbtest1 in memory first (the driver does the
 * same for an in-memory run), with sysbench-shaped rows: id, random k, 119- and 59-character digit strings. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define SQLITE_ROW 100
#define SQLITE_INTEGER 1
#define OPEN_FLAGS (0x2 | 0x4 | 0x8000) /* READWRITE | CREATE | NOMUTEX, as the driver opens */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* User + system CPU seconds of this process so far. */
static double cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) { fprintf(stderr, "missing symbol %s\n", name); exit(2); }
    return p;
}

int main(int argc, char **argv) {
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: %s LIBRARY DATABASE TABLE_SIZE WARMUP_S TIME_S [SETTINGS_SQL]\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    int (*open_v2)(const char *, void **, int, const char *) = sym(lib, "sqlite3_open_v2");
    int (*prepare_v2)(void *, const char *, int, void **, const char **) = sym(lib, "sqlite3_prepare_v2");
    int (*bind_int64)(void *, int, int64_t) = sym(lib, "sqlite3_bind_int64");
    int (*step)(void *) = sym(lib, "sqlite3_step");
    int (*reset)(void *) = sym(lib, "sqlite3_reset");
    int (*column_count)(void *) = sym(lib, "sqlite3_column_count");
    int (*column_type)(void *, int) = sym(lib, "sqlite3_column_type");
    int64_t (*column_int64)(void *, int) = sym(lib, "sqlite3_column_int64");
    int (*column_bytes)(void *, int) = sym(lib, "sqlite3_column_bytes");
    int (*exec)(void *, const char *, void *, void *, char **) = sym(lib, "sqlite3_exec");
    int (*bind_text)(void *, int, const char *, int, void *) = sym(lib, "sqlite3_bind_text");

    void *db, *stmt;
    if (open_v2(argv[2], &db, OPEN_FLAGS, NULL) != 0) { fprintf(stderr, "cannot open %s\n", argv[2]); return 2; }
    if (argc == 7 && exec(db, argv[6], NULL, NULL, NULL) != 0) { fprintf(stderr, "settings failed\n"); return 2; }
    uint64_t rows = strtoull(argv[3], NULL, 10);
    if (strcmp(argv[2], ":memory:") == 0) {
        void *ins;
        char c[120], pad[60];
        exec(db, "CREATE TABLE sbtest1 (id INTEGER PRIMARY KEY, k INTEGER NOT NULL DEFAULT 0, "
                 "c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT ''); BEGIN", NULL, NULL, NULL);
        prepare_v2(db, "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)", -1, &ins, NULL);
        for (uint64_t id = 1; id <= rows; id++) {
            for (int i = 0; i < 119; i++) c[i] = (i % 12 == 11) ? '-' : (char)('0' + rand() % 10);
            for (int i = 0; i < 59; i++) pad[i] = (i % 12 == 11) ? '-' : (char)('0' + rand() % 10);
            bind_int64(ins, 1, (int64_t)id);
            bind_int64(ins, 2, (int64_t)(rand() % rows) + 1);
            bind_text(ins, 3, c, 119, (void *)-1);
            bind_text(ins, 4, pad, 59, (void *)-1);
            step(ins);
            reset(ins);
        }
        exec(db, "COMMIT; CREATE INDEX k_1 ON sbtest1(k)", NULL, NULL, NULL);
    }
    if (prepare_v2(db, "SELECT c FROM sbtest1 WHERE id = ?", -1, &stmt, NULL) != 0) {
        fprintf(stderr, "prepare failed\n");
        return 2;
    }
    uint64_t n = strtoull(argv[3], NULL, 10), x = 88172645463325252ULL, queries = 0, sink = 0;
    int counted = strcmp(argv[4], "events") == 0;
    uint64_t limit = counted ? strtoull(argv[5], NULL, 10) : UINT64_MAX;
    double warm_end = counted ? 0 : now() + atof(argv[4]), end = counted ? 1e300 : warm_end + atof(argv[5]);
    double t, cpu_start = -1;
    while ((t = now()) < end && queries < limit) {
        if (cpu_start < 0 && t >= warm_end) cpu_start = cpu();
        x ^= x << 13; x ^= x >> 7; x ^= x << 17; /* xorshift64 */
        bind_int64(stmt, 1, (int64_t)(x % n) + 1);
        while (step(stmt) == SQLITE_ROW) {
            for (int c = 0; c < column_count(stmt); c++)
                sink += column_type(stmt, c) == SQLITE_INTEGER ? (uint64_t)column_int64(stmt, c)
                                                               : (uint64_t)column_bytes(stmt, c);
        }
        reset(stmt);
        if (t >= warm_end) queries++;
    }
    /* qps over the measured wall-clock time; the CPU seconds of the measured window, for queries per CPU second */
    printf("qps %.1f cpu_s %.6f queries %llu\n", counted ? 0.0 : queries / atof(argv[5]), cpu() - cpu_start,
           (unsigned long long)queries);
    return sink == 42 ? 1 : 0; /* keeps the reads observable */
}
