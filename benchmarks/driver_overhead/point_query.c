/* The minimal client dbperf-driver is measured against: one connection, one prepared point query, a closed loop.
 * SQLite is dlopen()ed from the same shared library the driver uses, so both run the same engine code.
 * Usage: point_query LIBRARY DATABASE TABLE_SIZE WARMUP_S TIME_S   -> prints "qps <number>" */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SQLITE_ROW 100
#define SQLITE_INTEGER 1
#define OPEN_FLAGS (0x2 | 0x4 | 0x8000) /* READWRITE | CREATE | NOMUTEX, as the driver opens */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) { fprintf(stderr, "missing symbol %s\n", name); exit(2); }
    return p;
}

int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: %s LIBRARY DATABASE TABLE_SIZE WARMUP_S TIME_S\n", argv[0]); return 2; }
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

    void *db, *stmt;
    if (open_v2(argv[2], &db, OPEN_FLAGS, NULL) != 0) { fprintf(stderr, "cannot open %s\n", argv[2]); return 2; }
    if (prepare_v2(db, "SELECT c FROM sbtest1 WHERE id = ?", -1, &stmt, NULL) != 0) {
        fprintf(stderr, "prepare failed\n");
        return 2;
    }
    uint64_t n = strtoull(argv[3], NULL, 10), x = 88172645463325252ULL, queries = 0, sink = 0;
    double warm_end = now() + atof(argv[4]), end = warm_end + atof(argv[5]);
    double t;
    while ((t = now()) < end) {
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
    printf("qps %.1f\n", queries / atof(argv[5]));
    return sink == 42 ? 1 : 0; /* keeps the reads observable */
}
