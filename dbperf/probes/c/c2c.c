/* Core to core: what one cache line costs to move between two vCPUs, for each pair of them (two threads pinned to
 * the pair take turns writing one line: each turn moves it across once, [Nielsen 2013-11-28]'s point that a
 * shared write is a transfer), and what a false-sharing set costs at this host's thread count (every vCPU a
 * thread incrementing its own counter, the counters on one line against a line each: [MySQL bug #97777]); and
 * the same for a pair. */
#include "probe.h"

struct line { _Alignas(128) volatile uint64_t v; char pad[120]; };
static struct line turn;
static uint64_t n_turns, n_ops;
static pthread_barrier_t gate;

struct job { int cpu; uint64_t parity; volatile uint64_t *counter; };

/* Waits for the line to show its own parity, then hands the turn over: one transfer of the line per turn. */
static void take_turns(uint64_t parity) {
    for (uint64_t i = parity; i < 2 * n_turns; i += 2) {
        while (turn.v != i) cpu_relax();
        turn.v = i + 1;
    }
}

static void *other_side(void *arg) {
    struct job *j = arg;
    pin(j->cpu);
    pthread_barrier_wait(&gate);
    take_turns(j->parity);
    return NULL;
}

static void pair(int r, int a, int b) {
    struct job other = {b, 1, NULL};
    pthread_t t;
    turn.v = 0;
    pthread_barrier_init(&gate, NULL, 2);
    pthread_create(&t, NULL, other_side, &other);
    pin(a);
    pthread_barrier_wait(&gate);
    struct sample s = start();
    take_turns(0);
    pthread_join(t, NULL);
    char extra[48], name[48];
    snprintf(extra, sizeof extra, "\"pair\":\"%d,%d\"", a, b);
    snprintf(name, sizeof name, "vCPU %d and vCPU %d", a, b);  /* named apart: a view that reads names alone */
    emit("one cache line, turn by turn", name, r, 2 * n_turns, s, extra);
    pthread_barrier_destroy(&gate);
}

static struct { _Alignas(128) volatile uint64_t slots[16 * 64]; } mem;

static void *increment(void *arg) {
    struct job *j = arg;
    pin(j->cpu);
    pthread_barrier_wait(&gate);
    for (uint64_t i = 0; i < n_ops; i++) (*j->counter)++;
    return NULL;
}

/* stride in 8-byte slots between neighbouring threads' counters: 1 shares a line, 16 gives each 128 bytes */
static void counters(int r, int threads, int stride, const char *name) {
    struct job jobs[64];
    pthread_t ts[64];
    memset((void *)&mem, 0, sizeof mem);
    pthread_barrier_init(&gate, NULL, (unsigned)threads);
    for (int i = 1; i < threads; i++) {
        jobs[i] = (struct job){i, 0, &mem.slots[i * stride]};
        pthread_create(&ts[i], NULL, increment, &jobs[i]);
    }
    pin(0);
    pthread_barrier_wait(&gate);
    struct sample s = start();
    for (uint64_t i = 0; i < n_ops; i++) mem.slots[0]++;
    for (int i = 1; i < threads; i++) pthread_join(ts[i], NULL);
    char extra[48], named[64];
    snprintf(extra, sizeof extra, "\"threads\":%d", threads);
    snprintf(named, sizeof named, "%s, %d threads", name, threads);
    emit("false sharing", named, r, n_ops, s, extra);
    pthread_barrier_destroy(&gate);
}

int main(int argc, char **argv) {
    int repeats;
    double scale;
    parse_args(argc, argv, &repeats, &scale);
    int n = ncpus();
    if (n < 2) {
        fprintf(stderr, "c2c needs two vCPUs\n");
        return 3;
    }
    int threads = n < 64 ? n : 64;
    n_turns = scaled(100000ull, scale);
    n_ops = scaled(50000000ull, scale);
    for (int r = 0; r < repeats; r++) {
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++) pair(r, a, b);
        for (int k = 2; k <= threads; k = k == threads ? threads + 1 : threads) { /* a pair, then every vCPU */
            counters(r, k, 1, "counters on one line");
            counters(r, k, 16, "a line per counter");
        }
    }
    return 0;
}
