/* False sharing ([MySQL bug #97777], docs/sources.md): two threads incrementing their own counters when the counters
 * share a cache line, sit 64 bytes apart, or 128 bytes apart; and a reader of a read-mostly flag that shares its line
 * with a counter another thread keeps writing, against the same flag on a line of its own. */
#include "probe.h"

struct layout { _Alignas(256) volatile uint64_t slots[64]; };
static struct layout mem;

static uint64_t n_ops;
static volatile int stop_writer;
static pthread_barrier_t gate;

struct job { volatile uint64_t *counter; int cpu; };

static void *increment(void *arg) {
    struct job *j = arg;
    pin(j->cpu);
    pthread_barrier_wait(&gate);
    for (uint64_t i = 0; i < n_ops; i++) (*j->counter)++;
    return NULL;
}

static void *keep_writing(void *arg) {
    struct job *j = arg;
    pin(j->cpu);
    pthread_barrier_wait(&gate);
    while (!stop_writer) (*j->counter)++;
    return NULL;
}

/* offset in bytes between the two threads' counters */
static void pair(int r, int offset, const char *name) {
    memset((void *)&mem, 0, sizeof mem);
    struct job a = {&mem.slots[0], 0}, b = {&mem.slots[offset / 8], 1};
    pthread_t t;
    pthread_barrier_init(&gate, NULL, 2);
    pthread_create(&t, NULL, increment, &b);
    pin(0);
    pthread_barrier_wait(&gate);
    struct sample s = start();
    for (uint64_t i = 0; i < n_ops; i++) (*a.counter)++;
    pthread_join(t, NULL);
    char extra[40];
    snprintf(extra, sizeof extra, "\"offset\":%d", offset);
    emit("counters", name, r, n_ops, s, extra);
    pthread_barrier_destroy(&gate);
}

/* flag_offset: where the read-mostly flag sits relative to the written counter */
static void flag_reader(int r, int flag_offset, const char *name) {
    memset((void *)&mem, 0, sizeof mem);
    volatile uint64_t *flag = &mem.slots[flag_offset / 8];
    *flag = 1;
    struct job w = {&mem.slots[0], 1};
    pthread_t t;
    stop_writer = 0;
    pthread_barrier_init(&gate, NULL, 2);
    pthread_create(&t, NULL, keep_writing, &w);
    pin(0);
    pthread_barrier_wait(&gate);
    uint64_t hits = 0;
    struct sample s = start();
    for (uint64_t i = 0; i < n_ops; i++) hits += *flag;
    char extra[60];
    snprintf(extra, sizeof extra, "\"flag_offset\":%d,\"hits\":%llu", flag_offset, (unsigned long long)hits);
    emit("flag", name, r, n_ops, s, extra);
    stop_writer = 1;
    pthread_join(t, NULL);
    pthread_barrier_destroy(&gate);
}

int main(int argc, char **argv) {
    int repeats;
    double scale;
    parse_args(argc, argv, &repeats, &scale);
    n_ops = scaled(50000000ull, scale);
    if (ncpus() < 2) {
        fprintf(stderr, "sharing needs two CPUs\n");
        return 3;
    }
    for (int r = 0; r < repeats; r++) {
        pair(r, 8, "same cache line");
        pair(r, 64, "64 bytes apart");
        pair(r, 128, "128 bytes apart");
        flag_reader(r, 8, "flag shares the written counter's line");
        flag_reader(r, 128, "flag on a line of its own");
    }
    return 0;
}
