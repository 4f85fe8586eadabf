/* MySQL's InnoDB busy-wait and backoff PRNGs ([Callaghan 2024-10-23], docs/sources.md), timed as the release has
 * them: ut_delay(), ut::random_from_interval() and ut::random_from_interval_fast(). Their text is read from the
 * release's Debian source package into extracted.h (dbperf/probes/server_code.py, checked against its checksums);
 * nothing of it is typed here. What follows stands in for the rest of the server, as a release build on x86-64
 * Linux has it. */
#include "probe.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

typedef unsigned long ulint;  /* univ.i on LP64 */
typedef unsigned long ulong;
typedef unsigned long long ulonglong;
typedef unsigned char byte;
#define ut_ad(EXPR) ((void)0)  /* ut0dbg.h: a debug build's assertion, nothing in a release build */
#define MY_ATTRIBUTE(A) __attribute__(A)
#if defined(__x86_64__)
#define HAVE_PAUSE_INSTRUCTION 1  /* CMake's configure check on x86 */
#define CRC32_x86_64 1            /* ut0crc32.h's choice on x86-64 */
#endif

/* Set by ut_crc32_init() from CPUID (SSE4.2): then ut::hash_uint64 is two crc32 instructions, else a table. */
bool ut_crc32_cpu_enabled;
namespace ut {
constexpr size_t INNODB_CACHE_LINE_SIZE = 64;
/* os0thread.h hashes the thread id; here it only seeds random_seed, whose value does not change a call's cost. */
thread_local uint64_t this_thread_hash = (uint64_t)pthread_self();
}  // namespace ut

#include "extracted.h"

/* ut_delay is defined in ut0ut.cc and called from other translation units: it is not inlined into its callers. */
static ulint (*volatile delay_fn)(ulint) = ut_delay;
static volatile uint64_t sink;

int main(int argc, char **argv) {
    int repeats;
    double scale;
    parse_args(argc, argv, &repeats, &scale);
    pin(0);
#if defined(__x86_64__)
    ut_crc32_cpu_enabled = __builtin_cpu_supports("sse4.2");
#endif
    uint64_t n_calls = scaled(20000000ull, scale), delays = scaled(20000ull, scale);
    char extra[120], name[40];
    snprintf(extra, sizeof extra, "\"crc32\":%d", ut_crc32_cpu_enabled ? 1 : 0);
    for (int r = 0; r < repeats; r++) {
        uint64_t acc = 0;
        struct sample s = start();
        for (uint64_t i = 0; i < n_calls; i++) acc += ut::random_from_interval(0, 6);
        emit("prng", "ut::random_from_interval(0, 6)", r, n_calls, s, extra);
        s = start();
        for (uint64_t i = 0; i < n_calls; i++) acc += ut::random_from_interval_fast(0, 6);
        emit("prng", "ut::random_from_interval_fast(0, 6)", r, n_calls, s, extra);
        for (ulint x = 1; x <= 6; x++) {
            snprintf(extra, sizeof extra, "\"x\":%lu,\"multiplier\":%lu", x, ut::spin_wait_pause_multiplier);
            snprintf(name, sizeof name, "ut_delay(%lu)", x);  /* named apart: a view that reads names alone */
            s = start();
            for (uint64_t c = 0; c < delays; c++) acc += delay_fn(x);
            emit("ut_delay", name, r, delays, s, extra);
        }
        snprintf(extra, sizeof extra, "\"crc32\":%d", ut_crc32_cpu_enabled ? 1 : 0);
        sink = acc;
    }
    return 0;
}
