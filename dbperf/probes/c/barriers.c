/* [Nielsen 2013-11-28] (docs/sources.md): the cost of keeping a thread-state update (pointer + length guarded by a
 * version word) SMP-safe, in that article's four variants, and the cost of single atomic operations and fences. */
#include "probe.h"

struct thread_state {
    volatile uint64_t version;
    const char *volatile ptr;
    volatile uint64_t len;
};

static struct thread_state st;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static const char text[] = "SELECT 1";

/* The original: two locked cmpxchg (full barriers) around the update. */
static void update_cmpxchg(uint64_t i) {
    uint64_t v = st.version;
    __sync_val_compare_and_swap(&st.version, v, v + 1);
    st.ptr = text + (i & 7);
    st.len = i;
    __sync_val_compare_and_swap(&st.version, v + 1, v + 2);
}

/* A seqlock writer: seq++; wmb; data; wmb; seq++. On x86 a write barrier is only a compiler barrier. */
static void update_seqlock(uint64_t i) {
    uint64_t v = st.version;
    __atomic_store_n(&st.version, v + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    st.ptr = text + (i & 7);
    st.len = i;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&st.version, v + 2, __ATOMIC_RELAXED);
}

/* No barrier at all: not SMP safe, the reference. The seqlock writer's memory operations exactly (one load of the
 * version, a store of v + 1, the two data stores, a store of v + 2), without its fences, so that it is the floor of
 * the barrier variants: each of them does these operations and more. */
static void update_plain(uint64_t i) {
    uint64_t v = st.version;
    __atomic_store_n(&st.version, v + 1, __ATOMIC_RELAXED);
    st.ptr = text + (i & 7);
    st.len = i;
    __atomic_store_n(&st.version, v + 2, __ATOMIC_RELAXED);
}

static void update_mutex(uint64_t i) {
    pthread_mutex_lock(&mutex);
    st.version = st.version + 1;
    st.ptr = text + (i & 7);
    st.len = i;
    st.version = st.version + 1;
    pthread_mutex_unlock(&mutex);
}

static volatile uint64_t word;

#define OP_LOOP(group, name, n, r, body)                  \
    do {                                                  \
        struct sample s = start();                        \
        for (uint64_t i = 0; i < (n); i++) { body; }      \
        emit(group, name, r, n, s, NULL);                 \
    } while (0)

int main(int argc, char **argv) {
    int repeats;
    double scale;
    parse_args(argc, argv, &repeats, &scale);
    pin(0);
    uint64_t n = scaled(100000000ull, scale), k = scaled(20000000ull, scale);
    for (int r = 0; r < repeats; r++) {
        OP_LOOP("state-update", "two locked cmpxchg (original)", n, r, update_cmpxchg(i));
        OP_LOOP("state-update", "write barriers only (seqlock)", n, r, update_seqlock(i));
        OP_LOOP("state-update", "no barrier (not SMP safe)", n, r, update_plain(i));
        OP_LOOP("state-update", "pthread mutex", n, r, update_mutex(i));

        OP_LOOP("single-op", "empty loop", k, r, COMPILER_BARRIER());
        OP_LOOP("single-op", "plain store", k, r, word = i);
        OP_LOOP("single-op", "release store", k, r, __atomic_store_n(&word, i, __ATOMIC_RELEASE));
        OP_LOOP("single-op", "seq_cst store (xchg)", k, r, __atomic_store_n(&word, i, __ATOMIC_SEQ_CST));
        OP_LOOP("single-op", "lock add", k, r, __atomic_fetch_add(&word, 1, __ATOMIC_SEQ_CST));
        OP_LOOP("single-op", "lock cmpxchg", k, r, {
            uint64_t expected = word;
            __atomic_compare_exchange_n(&word, &expected, expected + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        });
#if PROBE_X86
        OP_LOOP("single-op", "mfence", k, r, _mm_mfence());
#else
        OP_LOOP("single-op", "full fence", k, r, __atomic_thread_fence(__ATOMIC_SEQ_CST));
#endif
        OP_LOOP("single-op", "pthread mutex lock+unlock (uncontended)", k, r, {
            pthread_mutex_lock(&mutex);
            pthread_mutex_unlock(&mutex);
        });
    }
    return 0;
}
