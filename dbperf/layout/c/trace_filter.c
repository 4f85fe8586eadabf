/* Reads valgrind's lackey memory trace (--trace-mem=yes) interleaved with its scheduler trace (--trace-sched=yes)
 * on stdin and counts loads and stores per (valgrind thread id, address) inside the mappings of the objects named
 * on the command line (their file mappings and the anonymous .bss mapping right after them). The mappings are read
 * from /proc/PID/maps of the valgrind process at the first record and every REMAP records, so libraries loaded
 * later (dlopen) are seen too. Output, one record a line:
 *   MAP <object index> <start> <end> <file offset>    (hex, the mappings seen)
 *   C <tid> <address> <loads> <stores>                 (address hex)
 *   T <records> <records counted> <thread switches>
 * Lackey prints no thread ids; valgrind runs one thread at a time and "SCHED[n]:  acquired lock" says which.
 * Progress goes to stderr about twice a second: P <records> <records counted>. At end of file, or at SIGTERM (when
 * the lab stops the trace at its budget and something still holds the pipe open), the counts so far are printed.
 * PID 0: the traced process is not known when the filter starts (a server the lab launches under valgrind, its trace
 * through a FIFO); its pid is read from valgrind's first "==PID==" line. SIGUSR1 zeroes the counts (the server's
 * start-up is left out: the lab sends it once the server is ready, before the workload starts).
 * With PID 0 the trace is valgrind's log, so valgrind's own lines ("==PID== ..." and its decoder's "vex ...": an
 * instruction it cannot decode, a fatal signal) arrive here too: they are passed on to stderr as "V <line>", for
 * the lab to say why a run failed. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REMAP 65536
#define MAX_RANGES 256

struct range { uint64_t start, end, offset; int object; };
static struct range ranges[MAX_RANGES];
static int n_ranges;
static char **objects;
static int n_objects;
static char maps_path[64];

struct entry { uint64_t key_addr; uint32_t tid; uint32_t used; uint64_t loads, stores; };
static struct entry *table;
static uint64_t capacity = 1 << 16, used;

static void remap(void) {
    FILE *f = fopen(maps_path, "r");
    if (!f) return;
    char line[4096];
    int n = 0, last_object = -1;
    uint64_t last_end = 0;
    while (fgets(line, sizeof line, f) && n < MAX_RANGES) {
        unsigned long long start, end, offset;
        char perms[8];
        int path_at = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &path_at) < 4) continue;
        char *path = line + path_at;
        path[strcspn(path, "\n")] = 0;
        int object = -1;
        for (int i = 0; i < n_objects && path_at; i++)
            if (strcmp(path, objects[i]) == 0) object = i;
        if (object < 0 && (!path_at || path[0] == 0) && last_object >= 0 && start == last_end)
            object = last_object; /* .bss beyond the file's last page */
        if (object >= 0) {
            ranges[n].start = start; ranges[n].end = end; ranges[n].offset = offset; ranges[n].object = object;
            n++;
        }
        last_object = object; last_end = end;
    }
    fclose(f);
    if (n > 0 || n_ranges == 0) n_ranges = n; /* keep the last good view once the process has gone */
}

static int in_ranges(uint64_t a) {
    for (int i = 0; i < n_ranges; i++)
        if (a >= ranges[i].start && a < ranges[i].end) return 1;
    return 0;
}

static void grow(void);

static struct entry *slot(uint32_t tid, uint64_t addr) {
    uint64_t h = (addr * 0x9E3779B97F4A7C15ULL) ^ (tid * 0xC2B2AE3D27D4EB4FULL);
    for (uint64_t i = h & (capacity - 1);; i = (i + 1) & (capacity - 1)) {
        struct entry *e = &table[i];
        if (!e->used) {
            if ((used + 1) * 2 > capacity) { grow(); return slot(tid, addr); }
            e->used = 1; e->tid = tid; e->key_addr = addr; used++;
            return e;
        }
        if (e->key_addr == addr && e->tid == tid) return e;
    }
}

static void grow(void) {
    struct entry *old = table;
    uint64_t old_capacity = capacity;
    capacity *= 2; used = 0;
    table = calloc(capacity, sizeof *table);
    if (!table) { perror("trace_filter"); exit(1); }
    for (uint64_t i = 0; i < old_capacity; i++)
        if (old[i].used) {
            struct entry *e = slot(old[i].tid, old[i].key_addr);
            e->loads = old[i].loads; e->stores = old[i].stores;
        }
    free(old);
}

static volatile sig_atomic_t stop, zero;
static void on_term(int sig) { (void)sig; stop = 1; }
static void on_zero(int sig) { (void)sig; zero = 1; }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t hex(const char *p) {
    uint64_t v = 0;
    for (;; p++) {
        char c = *p;
        if (c >= '0' && c <= '9') v = v * 16 + (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v = v * 16 + (uint64_t)(c - 'a' + 10);
        else return v;
    }
}

int main(int argc, char **argv) {
    /* -n LIMIT: count the first LIMIT memory records only (the access budget), reading the rest until the end. */
    uint64_t limit = UINT64_MAX;
    if (argc > 2 && strcmp(argv[1], "-n") == 0) {
        limit = strtoull(argv[2], NULL, 10);
        argc -= 2; argv += 2;
    }
    if (argc < 3) { fprintf(stderr, "usage: trace_filter [-n LIMIT] PID OBJECT...\n"); return 2; }
    int pid_known = strcmp(argv[1], "0") != 0;
    int from_log = !pid_known;
    if (pid_known) snprintf(maps_path, sizeof maps_path, "/proc/%s/maps", argv[1]);
    objects = argv + 2; n_objects = argc - 2;
    table = calloc(capacity, sizeof *table);
    /* No SA_RESTART: the blocked read returns EINTR, fgets returns NULL, and the counts so far are printed. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    /* SA_RESTART: zeroing must not end the read loop as SIGTERM does. */
    struct sigaction sz;
    memset(&sz, 0, sizeof sz);
    sz.sa_handler = on_zero;
    sz.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sz, NULL);
    double reported = now();
    int limit_said = 0;
    static char buf[1 << 20];
    setvbuf(stdin, buf, _IOFBF, sizeof buf);
    char line[512];
    uint32_t tid = 1;
    uint64_t records = 0, counted = 0, switches = 0;
    while (!stop && fgets(line, sizeof line, stdin)) {
        if (zero) {
            memset(table, 0, capacity * sizeof *table);
            used = 0; records = 0; counted = 0; switches = 0; limit_said = 0;
            zero = 0;
        }
        char c = line[1];
        if (line[0] == ' ' && (c == 'L' || c == 'S' || c == 'M')) {
            if (records == limit) {
                if (!limit_said) {
                    fprintf(stderr, "P %llu %llu\n", (unsigned long long)records, (unsigned long long)counted);
                    limit_said = 1;
                }
                continue;
            }
            if ((records++ & (REMAP - 1)) == 0) {
                remap();
                double t = now();
                if (t - reported >= 0.5) {
                    fprintf(stderr, "P %llu %llu\n", (unsigned long long)records, (unsigned long long)counted);
                    reported = t;
                }
            }
            uint64_t a = hex(line + 3);
            if (!in_ranges(a)) continue;
            struct entry *e = slot(tid, a);
            if (c != 'S') e->loads++;
            if (c != 'L') e->stores++;
            counted++;
        } else if (from_log && ((line[0] == '=' && line[1] == '=') || strncmp(line, "vex ", 4) == 0)) {
            if (!pid_known && line[0] == '=') {
                long pid = strtol(line + 2, NULL, 10);
                if (pid > 0) { snprintf(maps_path, sizeof maps_path, "/proc/%ld/maps", pid); pid_known = 1; }
            }
            fprintf(stderr, "V %s%s", line, strchr(line, '\n') ? "" : "\n");
        } else if (line[0] == '-') {
            char *s = strstr(line, "SCHED[");
            if (s && strstr(s, "acquired lock")) { tid = (uint32_t)atoi(s + 6); switches++; }
        }
    }
    remap();
    for (int i = 0; i < n_ranges; i++)
        printf("MAP %d %llx %llx %llx\n", ranges[i].object, (unsigned long long)ranges[i].start,
               (unsigned long long)ranges[i].end, (unsigned long long)ranges[i].offset);
    for (uint64_t i = 0; i < capacity; i++)
        if (table[i].used)
            printf("C %u %llx %llu %llu\n", table[i].tid, (unsigned long long)table[i].key_addr,
                   (unsigned long long)table[i].loads, (unsigned long long)table[i].stores);
    printf("T %llu %llu %llu\n", (unsigned long long)records, (unsigned long long)counted,
           (unsigned long long)switches);
    return 0;
}
