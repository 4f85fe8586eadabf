/* What reading the time costs: the TSC, and the clocks a database uses for timeouts and statistics. */
#include "probe.h"

#include <sys/time.h>

static volatile uint64_t sink;

#define TIME_LOOP(name, n, r, expr)                        \
    do {                                                   \
        uint64_t acc = 0;                                  \
        struct sample s = start();                         \
        for (uint64_t i = 0; i < (n); i++) acc += (expr);  \
        emit("timer", name, r, n, s, NULL);                \
        sink = acc;                                        \
    } while (0)

static inline uint64_t clock_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_nsec;
}

static inline uint64_t tod(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_usec;
}

int main(int argc, char **argv) {
    int repeats;
    double scale;
    parse_args(argc, argv, &repeats, &scale);
    pin(0);
    uint64_t n = scaled(5000000ull, scale);
    for (int r = 0; r < repeats; r++) {
#if PROBE_X86
        unsigned aux;
        TIME_LOOP("rdtsc", n, r, __rdtsc());
        TIME_LOOP("rdtscp", n, r, __rdtscp(&aux));
#endif
        TIME_LOOP("clock_gettime(CLOCK_MONOTONIC)", n, r, clock_ns(CLOCK_MONOTONIC));
        TIME_LOOP("clock_gettime(CLOCK_REALTIME)", n, r, clock_ns(CLOCK_REALTIME));
        TIME_LOOP("clock_gettime(CLOCK_MONOTONIC_RAW)", n, r, clock_ns(CLOCK_MONOTONIC_RAW));
        TIME_LOOP("clock_gettime(CLOCK_MONOTONIC_COARSE)", n, r, clock_ns(CLOCK_MONOTONIC_COARSE));
        TIME_LOOP("gettimeofday", n, r, tod());
    }
    return 0;
}
