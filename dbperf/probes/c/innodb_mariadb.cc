/* MariaDB's InnoDB busy-wait and backoff PRNG ([MDEV-19845], [Callaghan 2024-10-23], docs/sources.md), timed as
 * the release has them: ut_delay() with the multiplier my_cpu_init() calibrates, and ut_rnd_interval(). Their text
 * is read from the release's Debian source package into extracted.h (dbperf/probes/server_code.py, checked against
 * its checksums); nothing of it is typed here. What follows stands in for the rest of the server, as a release
 * build on x86-64 Linux has it. */
#include "probe.h"

#include <atomic>
#include <cstdint>

typedef unsigned long ulint;  /* univ.i on LP64 */
typedef unsigned long long ulonglong;
#define UNIV_UNLIKELY(cond) __builtin_expect(!!(cond), 0)  /* univ.i */
#define HMT_low()     /* my_cpu.h: empty except on POWER8 */
#define HMT_medium()
/* mysys: a monotonic ns clock; ut_rnd_gen() reads it once, to seed. */
static ulonglong my_interval_timer(void) { return now_ns(); }

#include "extracted.h"

static volatile uint64_t sink;

int main(int argc, char **argv) {
    int repeats;
    double scale;
    parse_args(argc, argv, &repeats, &scale);
    pin(0);
#ifdef HAVE_PAUSE_INSTRUCTION
    my_cpu_init();  /* the server calls it at startup: 200, or 100 where a PAUSE takes over 30 TSC ticks */
#endif
    uint64_t n_calls = scaled(20000000ull, scale), delays = scaled(20000ull, scale);
    char extra[120], name[40];
    for (int r = 0; r < repeats; r++) {
        uint64_t acc = 0;
        struct sample s = start();
        for (uint64_t i = 0; i < n_calls; i++) acc += ut_rnd_interval(7);
        emit("prng", "ut_rnd_interval(7)", r, n_calls, s, NULL);
        for (unsigned x = 1; x <= 6; x++) {
            snprintf(extra, sizeof extra, "\"x\":%u,\"multiplier\":%u", x, my_cpu_relax_multiplier / 4);
            snprintf(name, sizeof name, "ut_delay(%u)", x);  /* named apart: a view that reads names alone */
            s = start();
            for (uint64_t c = 0; c < delays; c++) ut_delay(x);
            emit("ut_delay", name, r, delays, s, extra);
        }
        sink = acc;
    }
    return 0;
}
