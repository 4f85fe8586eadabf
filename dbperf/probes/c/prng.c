/* [Callaghan 2024-10-23] and [MySQL bug #97777] (docs/sources.md): ns per call of three backoff generators, and the
 * shared-counter LCG hammered by two threads (every call writes one global cache line, which then bounces between the
 * cores). */
#include "probe.h"

/* InnoDB's old ut_rnd_gen_ulint(): an LCG on one global counter. */
static volatile uint64_t ut_rnd_ulint_counter = 65654363;
static inline uint64_t lcg_global(void) {
    ut_rnd_ulint_counter = 151117737ull * ut_rnd_ulint_counter + 119785373ull;
    return ut_rnd_ulint_counter;
}

#if PROBE_X86
__attribute__((target("sse4.2"))) static inline uint64_t crc32_u64(uint64_t crc, uint64_t v) {
    return _mm_crc32_u64(crc, v);
}
#else
static inline uint64_t crc32_u64(uint64_t crc, uint64_t v) { /* bitwise CRC-32C where there is no instruction */
    crc = ~crc;
    for (int i = 0; i < 64; i++) crc = (crc >> 1) ^ (0x82F63B78u & -((crc ^ (v >> i)) & 1));
    return ~crc & 0xffffffffu;
}
#endif

/* A crc32-hash generator: hash of a thread-local counter. */
static __thread uint64_t local_counter;
static inline uint64_t crc_hash(void) { return crc32_u64(0, ++local_counter) * 0x9E3779B97F4A7C15ull; }

/* The "fast" one: the time stamp counter, hashed. */
static inline uint64_t rdtsc_hash(void) { return crc32_u64(0, ticks()) * 0x9E3779B97F4A7C15ull; }

static volatile uint64_t sink;
static uint64_t n_calls;
static pthread_barrier_t gate;

static void *hammer(void *arg) {
    int cpu = (int)(intptr_t)arg;
    pin(cpu);
    pthread_barrier_wait(&gate);
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n_calls; i++) acc += lcg_global();
    sink = acc;
    return NULL;
}

int main(int argc, char **argv) {
    int repeats;
    double scale;
    parse_args(argc, argv, &repeats, &scale);
    pin(0);
    n_calls = scaled(20000000ull, scale);
    for (int r = 0; r < repeats; r++) {
        uint64_t acc = 0;
        struct sample s = start();
        for (uint64_t i = 0; i < n_calls; i++) acc += lcg_global();
        emit("single", "LCG on a shared global counter", r, n_calls, s, NULL);
        s = start();
        for (uint64_t i = 0; i < n_calls; i++) acc += crc_hash();
        emit("single", "crc32 hash of a counter", r, n_calls, s, NULL);
        s = start();
        for (uint64_t i = 0; i < n_calls; i++) acc += rdtsc_hash();
        emit("single", "rdtsc, hashed", r, n_calls, s, NULL);
        sink = acc;
        if (ncpus() >= 2) {
            pthread_t t;
            pthread_barrier_init(&gate, NULL, 2);
            pthread_create(&t, NULL, hammer, (void *)(intptr_t)1);
            pthread_barrier_wait(&gate);
            s = start();
            for (uint64_t i = 0; i < n_calls; i++) acc += lcg_global();
            pthread_join(t, NULL);
            emit("contended", "LCG on a shared global counter, 2 threads", r, n_calls, s, NULL);
            pthread_barrier_destroy(&gate);
        }
        sink = acc;
    }
    return 0;
}
