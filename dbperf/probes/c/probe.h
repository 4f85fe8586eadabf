/* Shared by every probe: clocks, pinning and the output format.
 * A probe prints one JSON line per sample: {"name": ..., "ops": N, "ns": wall ns, "ticks": TSC ticks, ...};
 * dbperf turns samples into per-operation figures and takes median, min and max over the repeats. */
#ifndef DBPERF_PROBE_H
#define DBPERF_PROBE_H
#ifndef _GNU_SOURCE /* g++ defines it */
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define PROBE_X86 1
static inline uint64_t ticks(void) { return __rdtsc(); }
static inline void cpu_relax(void) { _mm_pause(); }
#else
#define PROBE_X86 0
static inline uint64_t ticks(void) { return 0; }
static inline void cpu_relax(void) { __asm__ __volatile__("" ::: "memory"); }
#endif

/* Keeps the compiler from deleting or merging the loops we time. */
#define COMPILER_BARRIER() __asm__ __volatile__("" ::: "memory")

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int ncpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Pins the calling thread to one CPU so that a figure is not an average over migrations. */
static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % ncpus(), &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

struct sample { uint64_t t0_ns, t0_ticks; };

static inline struct sample start(void) {
    struct sample s;
    s.t0_ns = now_ns();
    s.t0_ticks = ticks();
    return s;
}

static void emit(const char *group, const char *name, int repeat, uint64_t ops, struct sample s, const char *extra) {
    uint64_t tk = ticks() - s.t0_ticks, ns = now_ns() - s.t0_ns;
    printf("{\"group\":\"%s\",\"name\":\"%s\",\"repeat\":%d,\"ops\":%llu,\"ns\":%llu,\"ticks\":%llu%s%s}\n", group, name,
           repeat, (unsigned long long)ops, (unsigned long long)ns, (unsigned long long)tk, extra ? "," : "",
           extra ? extra : "");
    fflush(stdout);
}

/* argv: REPEATS SCALE. SCALE multiplies every iteration count (tests run tiny ones). */
static void parse_args(int argc, char **argv, int *repeats, double *scale) {
    *repeats = argc > 1 ? atoi(argv[1]) : 5;
    *scale = argc > 2 ? atof(argv[2]) : 1.0;
    if (*repeats < 1) *repeats = 1;
    if (*scale <= 0) *scale = 1.0;
}

static uint64_t scaled(uint64_t n, double scale) {
    uint64_t v = (uint64_t)((double)n * scale);
    return v ? v : 1;
}
#endif
