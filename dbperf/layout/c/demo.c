/* The pattern of [MySQL bug #97777] (docs/sources.md) and its decoys, for `dbperf layout`.
 *
 * The planted line: demo_search_enabled (read-mostly, read by the reader on every iteration, like btr_search_enabled)
 * sits in the same cache line as demo_rnd_counter (a PRNG state written by the writer on every iteration, like
 * ut_rnd_ulint_counter). Decoys that must NOT be flagged:
 *   - demo_table: read-mostly, read on every iteration, alone on its line;
 *   - demo_ops: written on every iteration, alone on its line;
 *   - demo_config_word: written once at start-up, sharing a line with demo_limit (read on every iteration);
 *   - demo_tls_count: thread-local counters (TLS, never shared);
 *   - demo_primes: constants (.rodata).
 * Built with -fno-toplevel-reorder so the variables keep this order inside .data; every group starts a line
 * (aligned to DEMO_LINE) and is followed by the next group's alignment. All are initialised (non-zero) so they stay
 * together in .data rather than some going to .bss.
 *
 * Usage: demo [ITERATIONS] -> prints the reader's CPU time per iteration (CLOCK_THREAD_CPUTIME_ID: stalls on a
 * line the writer holds count, time spent descheduled on a loaded machine does not) and its wall-clock time; the
 * writer makes between ITERATIONS and 4 x ITERATIONS updates, stopping in between once the reader is done.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef DEMO_LINE
#define DEMO_LINE 128 /* keeps groups apart on 64 B and 128 B lines alike */
#endif
#define ALIGNED __attribute__((aligned(DEMO_LINE)))

/* The planted line. */
ALIGNED volatile int demo_search_enabled = 1;
volatile unsigned long demo_rnd_counter = 1;

/* Decoy: read-mostly table alone on its line. */
ALIGNED volatile int demo_table[8] = {1, 2, 3, 4, 5, 6, 7, 8};

/* Decoy: hot written counter alone on its line (padded to the whole line). */
ALIGNED volatile unsigned long demo_ops = 1;
char demo_ops_pad[DEMO_LINE - sizeof(unsigned long)] = {1};

/* Decoy: configuration word written once at start-up, beside a read-mostly limit. */
ALIGNED volatile int demo_config_word = 1;
volatile int demo_limit = 1000;
char demo_config_pad[DEMO_LINE - 2 * sizeof(int)] = {1};

/* Decoys: thread-local counters and constants. */
__thread unsigned long demo_tls_count;
static const int demo_primes[16] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53};

static long iterations = 2000000;
static volatile int writer_go = 1;
/* Both threads start together, so that they overlap (valgrind reuses a thread id once its thread has exited). */
static pthread_barrier_t start;

static void *writer(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    /* At least ITERATIONS updates (so the pattern is there whatever order valgrind runs the threads in), at most
     * 4 x ITERATIONS (so the trace stays short), stopping in between once the reader is done. */
    for (long n = 0; n < 4 * iterations && (writer_go || n < iterations); n++) {
        demo_rnd_counter = demo_rnd_counter * 6364136223846793005UL + 1442695040888963407UL;
        demo_ops = demo_ops + 1;
        demo_tls_count++;
    }
    return NULL;
}

static double reader_cpu_ns;

static void *reader(void *arg) {
    struct timespec c0, c1;
    pthread_barrier_wait(&start);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    long sum = 0;
    for (long i = 0; i < iterations; i++) {
        if (demo_search_enabled)
            sum += demo_table[i & 7] + demo_primes[i & 15] + (i < demo_limit);
        demo_tls_count++;
    }
    *(long *)arg = sum;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    reader_cpu_ns = (c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        iterations = atol(argv[1]);
    demo_config_word = argc; /* written once, at start-up */
    struct timespec t0, t1;
    pthread_t w, r;
    long sum = 0;
    pthread_barrier_init(&start, NULL, 2);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (pthread_create(&w, NULL, writer, NULL) || pthread_create(&r, NULL, reader, &sum)) {
        perror("pthread_create");
        return 1;
    }
    pthread_join(r, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    writer_go = 0;
    pthread_join(w, NULL);
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    double n = iterations ? (double)iterations : 1.0;
    printf("%.3f ns/iteration reader CPU, %.3f ns/iteration wall (sum %ld)\n", reader_cpu_ns / n, ns / n, sum);
    return 0;
}
