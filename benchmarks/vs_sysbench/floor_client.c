/* The floor a point-query client can reach over loopback TCP: connect and prepare with the engine's C library
 * (libmariadb or libpq), then per query exactly one send() of a pre-built execute message (only the 4-byte id
 * changes) and recv() into a large buffer until the response is complete, parsing nothing but message framing.
 * No result decoding, no latency histogram, no timestamps but one clock read per 1,024 queries. benchmarks/
 * vs_sysbench compiles it with the machine's compiler and measures it like the other two clients, so that the
 * system time per query any client must pay for the same queries over the same transport is on record.
 *
 * usage: floor_client mariadb|postgres PORT TABLE_SIZE SECONDS EVENTS   (password in DBPERF_FLOOR_PASSWORD;
 *        user dbperf, database sbtest, table sbtest1 on 127.0.0.1; EVENTS > 0 stops after that many queries)
 * prints: queries N
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <libpq-fe.h>
#include <mysql.h>

static unsigned char buf[1 << 16];

static void die(const char *what) {
    fprintf(stderr, "floor_client: %s\n", what);
    exit(1);
}

static uint64_t rng = 88172645463325252ULL;

static uint32_t next_id(uint32_t table_size) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % table_size) + 1;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void send_all(int fd, const unsigned char *msg, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, msg, len, 0);
        if (n <= 0) die("send failed");
        msg += n;
        len -= (size_t)n;
    }
}

/* Receives until `complete` says the bytes so far hold a whole response; returns the bytes received. */
static size_t recv_response(int fd, int (*complete)(const unsigned char *, size_t)) {
    size_t have = 0;
    do {
        ssize_t n = recv(fd, buf + have, sizeof buf - have, 0);
        if (n <= 0) die("recv failed (connection closed?)");
        have += (size_t)n;
        if (have == sizeof buf) die("response larger than the buffer");
    } while (!complete(buf, have));
    return have;
}

/* PostgreSQL: messages are type (1 byte) + length (4, big-endian, counting itself); done at ReadyForQuery. */
static int pg_complete(const unsigned char *p, size_t have) {
    size_t at = 0;
    while (at + 5 <= have) {
        uint32_t len = ((uint32_t)p[at + 1] << 24) | ((uint32_t)p[at + 2] << 16) | ((uint32_t)p[at + 3] << 8) |
                       p[at + 4];
        if (at + 1 + len > have) return 0;
        if (p[at] == 'E') die("the server answered with an error");
        if (p[at] == 'Z') return 1;
        at += 1 + len;
    }
    return 0;
}

/* MariaDB binary result set: packets of 3-byte length + sequence; column count, column definitions, (EOF), rows
 * starting 0x00, then a packet starting 0xFE ends it. Done at the first 0xFE packet after a row. */
static int my_complete(const unsigned char *p, size_t have) {
    size_t at = 0;
    int packet = 0, rows = 0;
    uint64_t columns = 0;
    while (at + 4 <= have) {
        size_t len = (size_t)p[at] | ((size_t)p[at + 1] << 8) | ((size_t)p[at + 2] << 16);
        if (at + 4 + len > have) return 0;
        unsigned char first = len ? p[at + 4] : 0;
        if (first == 0xFF) die("the server answered with an error");
        if (packet == 0) columns = first;
        else if ((uint64_t)packet > columns && first == 0x00) rows++;
        else if ((uint64_t)packet > columns && first == 0xFE && rows > 0) return 1;
        packet++;
        at += 4 + len;
    }
    return 0;
}

static int loop(int fd, unsigned char *msg, size_t len, unsigned char *id_at, int big_endian, uint32_t table_size,
                double seconds, long events, int (*complete)(const unsigned char *, size_t)) {
    long queries = 0;
    double end = now() + seconds;
    /* libpq leaves its socket non-blocking: the loop blocks in recv() like the other clients. */
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) die("fcntl failed");
    int one = 1; /* as every client of the comparison does: a request is never held back by Nagle */
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) die("setsockopt TCP_NODELAY failed");
    for (;;) {
        uint32_t id = next_id(table_size);
        uint32_t wire = big_endian ? htonl(id) : id; /* x86: host order is little-endian */
        memcpy(id_at, &wire, 4);
        send_all(fd, msg, len);
        recv_response(fd, complete);
        queries++;
        if (events > 0 ? queries >= events : ((queries & 1023) == 0 && now() >= end)) break;
    }
    printf("queries %ld\n", queries);
    return 0;
}

static int run_postgres(const char *port, const char *password, uint32_t table_size, double seconds, long events) {
    const char *keys[] = {"host", "port", "user", "dbname", "password", "sslmode", "gssencmode", NULL};
    const char *values[] = {"127.0.0.1", port, "dbperf", "sbtest", password, "disable", "disable", NULL};
    PGconn *conn = PQconnectdbParams(keys, values, 0);
    if (PQstatus(conn) != CONNECTION_OK) die(PQerrorMessage(conn));
    PGresult *r = PQprepare(conn, "s1", "SELECT c FROM sbtest1 WHERE id = $1", 1, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) die(PQerrorMessage(conn));
    PQclear(r);
    /* Bind (unnamed portal, statement s1, one binary int4 parameter, text results), Execute, Sync: one write. */
    static const unsigned char bind_head[] = {'B', 0, 0, 0, 24, 0, 's', '1', 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 4};
    static const unsigned char tail[] = {0, 0, 'E', 0, 0, 0, 9, 0, 0, 0, 0, 0, 'S', 0, 0, 0, 4};
    unsigned char msg[sizeof bind_head + 4 + sizeof tail];
    memcpy(msg, bind_head, sizeof bind_head);
    memcpy(msg + sizeof bind_head + 4, tail, sizeof tail);
    int rc = loop(PQsocket(conn), msg, sizeof msg, msg + sizeof bind_head, 1, table_size, seconds, events,
                  pg_complete);
    PQfinish(conn);
    return rc;
}

static int run_mariadb(const char *port, const char *password, uint32_t table_size, double seconds, long events) {
    MYSQL *my = mysql_init(NULL);
    if (!mysql_real_connect(my, "127.0.0.1", "dbperf", password, "sbtest", (unsigned)atoi(port), NULL, 0))
        die(mysql_error(my));
    MYSQL_STMT *stmt = mysql_stmt_init(my);
    const char *sql = "SELECT c FROM sbtest1 WHERE id = ?";
    if (mysql_stmt_prepare(stmt, sql, strlen(sql))) die(mysql_stmt_error(stmt));
    /* COM_STMT_EXECUTE: statement id, no cursor, 1 iteration, null bitmap, types bound, LONG, the value. */
    unsigned char msg[4 + 18] = {18, 0, 0, 0, 0x17};
    uint32_t id = (uint32_t)stmt->stmt_id;
    memcpy(msg + 5, &id, 4);
    const unsigned char rest[] = {0, 1, 0, 0, 0, 0, 1, MYSQL_TYPE_LONG, 0};
    memcpy(msg + 9, rest, sizeof rest);
    int rc = loop((int)mysql_get_socket(my), msg, sizeof msg, msg + 18, 0, table_size, seconds, events,
                  my_complete);
    mysql_stmt_close(stmt);
    mysql_close(my);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 6) die("usage: floor_client mariadb|postgres PORT TABLE_SIZE SECONDS EVENTS");
    const char *password = getenv("DBPERF_FLOOR_PASSWORD");
    if (!password) die("DBPERF_FLOOR_PASSWORD is not set");
    uint32_t table_size = (uint32_t)strtoul(argv[3], NULL, 10);
    double seconds = atof(argv[4]);
    long events = atol(argv[5]);
    if (table_size == 0) die("TABLE_SIZE must be positive");
    if (strcmp(argv[1], "postgres") == 0) return run_postgres(argv[2], password, table_size, seconds, events);
    if (strcmp(argv[1], "mariadb") == 0) return run_mariadb(argv[2], password, table_size, seconds, events);
    die("engine must be mariadb or postgres");
}
