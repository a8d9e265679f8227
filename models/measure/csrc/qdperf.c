/*
 * qdperf: request/response exchanges through the real kernel TCP stack (Queue Depth book).
 *
 * One binary, two roles:
 *
 *   qdperf server [options]   accept ONE connection, answer every request with a header and a
 *                             payload written by two send() calls, count requests handled per
 *                             wake-up (busy counts), print one JSON object on exit.
 *   qdperf client [options]   keep QD requests outstanding for a bounded time/count, time each
 *                             operation, print one JSON object.
 *
 * Wire format (both protocols): a request is REQ bytes whose first 8 bytes are
 * (u32 tag, u32 payload length); the response is HDR bytes echoing those 8 bytes, then the payload.
 *   --proto flory : REQ = HDR = 8   (Flory 2001: 8-byte request, 8-byte descriptor, N-byte payload)
 *   --proto iscsi : REQ = HDR = 48  (Butterfield 2017: 48-byte request, 48-byte header + IOSIZE)
 *
 * Socket modes of the server's response (--sock):
 *   nagle         header send(), data send()             (socket defaults: Nagle on)
 *   nodelay       TCP_NODELAY, header send(), data send()
 *   more          header send(MSG_MORE), data send()
 *   more_nodelay  TCP_NODELAY, header send(MSG_MORE), data send()
 *   more_all      header send(MSG_MORE), data send(MSG_MORE): the "promise never kept" misuse
 *
 * --cc-log-every N (server, 0 = off): before every N-th response (responses 0, N, 2N, ...) the server
 * reads its socket's TCP_INFO, TCP_CC_INFO (bbr's estimate and gains) and SO_MEMINFO (bytes still
 * charged to the socket's transmit memory) and keeps the reading; at most CC_LOG_MAX readings, printed
 * in the report as "cc_log" (one array per reading, the columns named by "cc_log_columns").  Each
 * reading costs three getsockopt() calls inside the server's loop.
 *
 * Every run is bounded: --time-limit (seconds, hard) on both sides, --duration/--count on the client.
 * Only the address given with --listen/--connect is used (the Python runner passes loopback or an
 * address inside a network namespace it created).
 *
 * Units: times in the JSON are microseconds (_us) or seconds (_s) as named; sizes in bytes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAYLOAD (4u * 1024u * 1024u) /* bytes: largest payload a request may ask for */
#define MAX_QD 4096
#define BUSY_BUCKETS 257 /* busy counts 0..255, and 256 for "256 or more" */
#define CC_LOG_MAX 20000 /* readings --cc-log-every keeps at most */
#define STALL_US 20000.0 /* an operation slower than 20 ms counts as stalled (timers are >= 40 ms) */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9; /* ns -> s */
}

static void die(const char *role, const char *what) {
    /* One JSON object even on failure, so the runner can report the reason. */
    printf("{\"role\": \"%s\", \"error\": \"%s: %s\"}\n", role, what, strerror(errno));
    fflush(stdout);
    exit(2);
}

static void fail(const char *role, const char *what) {
    printf("{\"role\": \"%s\", \"error\": \"%s\"}\n", role, what);
    fflush(stdout);
    exit(2);
}

/* ------------------------------------------------------------------ options */

struct opts {
    const char *role;
    const char *addr;
    int port;
    int req_size, hdr_size;
    const char *proto;
    const char *sock;
    const char *client_sock;
    const char *cc;
    int qd;
    long iosize;
    double duration_s, warmup_s, time_limit_s;
    long count;
    const char *lat_file;
    long cc_log_every;
};

static void usage(void) {
    fprintf(stderr,
            "usage: qdperf server [--listen ADDR] [--port P] [--proto flory|iscsi]\n"
            "                     [--sock nagle|nodelay|more|more_nodelay|more_all] [--cc NAME]\n"
            "                     [--time-limit S] [--cc-log-every N]\n"
            "       qdperf client --connect ADDR --port P [--proto flory|iscsi] [--qd N]\n"
            "                     [--iosize BYTES] [--duration S] [--warmup S] [--count N]\n"
            "                     [--client-sock nagle|nodelay] [--cc NAME] [--time-limit S]\n"
            "                     [--lat-file PATH]\n");
}

static int parse_opts(int argc, char **argv, struct opts *o) {
    static struct option lo[] = {
        {"listen", 1, 0, 'l'},   {"connect", 1, 0, 'c'},     {"port", 1, 0, 'p'},
        {"proto", 1, 0, 'P'},    {"sock", 1, 0, 's'},        {"client-sock", 1, 0, 'S'},
        {"cc", 1, 0, 'C'},       {"qd", 1, 0, 'q'},          {"iosize", 1, 0, 'n'},
        {"duration", 1, 0, 'd'}, {"warmup", 1, 0, 'w'},      {"count", 1, 0, 'k'},
        {"time-limit", 1, 0, 't'}, {"lat-file", 1, 0, 'L'},
        {"cc-log-every", 1, 0, 'G'}, {0, 0, 0, 0}};
    if (argc < 2) return -1;
    o->role = argv[1];
    o->addr = "127.0.0.1";
    o->port = 0;
    o->proto = "iscsi";
    o->sock = "nagle";
    o->client_sock = "nagle";
    o->cc = NULL;
    o->qd = 1;
    o->iosize = 512;
    o->duration_s = 2.0;
    o->warmup_s = 0.3;
    o->time_limit_s = 30.0;
    o->count = 10000000;
    o->lat_file = NULL;
    o->cc_log_every = 0;
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'l': case 'c': o->addr = optarg; break;
        case 'p': o->port = atoi(optarg); break;
        case 'P': o->proto = optarg; break;
        case 's': o->sock = optarg; break;
        case 'S': o->client_sock = optarg; break;
        case 'C': o->cc = optarg; break;
        case 'q': o->qd = atoi(optarg); break;
        case 'n': o->iosize = atol(optarg); break;
        case 'd': o->duration_s = atof(optarg); break;
        case 'w': o->warmup_s = atof(optarg); break;
        case 'k': o->count = atol(optarg); break;
        case 't': o->time_limit_s = atof(optarg); break;
        case 'L': o->lat_file = optarg; break;
        case 'G': o->cc_log_every = atol(optarg); break;
        default: return -1;
        }
    }
    if (strcmp(o->proto, "flory") == 0) o->req_size = o->hdr_size = 8;
    else if (strcmp(o->proto, "iscsi") == 0) o->req_size = o->hdr_size = 48;
    else { fprintf(stderr, "unknown --proto %s\n", o->proto); return -1; }
    if (o->qd < 1 || o->qd > MAX_QD) { fprintf(stderr, "--qd must be 1..%d, got %d\n", MAX_QD, o->qd); return -1; }
    if (o->iosize < 0 || o->iosize > (long)MAX_PAYLOAD) { fprintf(stderr, "--iosize must be 0..%u, got %ld\n", MAX_PAYLOAD, o->iosize); return -1; }
    if (o->cc_log_every < 0 || o->cc_log_every > 1000000) {
        fprintf(stderr, "--cc-log-every must be 0..1000000, got %ld\n", o->cc_log_every);
        return -1;
    }
    if (!(o->time_limit_s > 0) || !(o->duration_s > 0) || o->warmup_s < 0 || o->count < 1) {
        fprintf(stderr, "--time-limit and --duration must be > 0, --warmup >= 0, --count >= 1\n");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ kernel counters */

/* Reads TcpExt and Tcp counters of this process's network namespace from /proc/net/{netstat,snmp}. */
#define MAX_CTR 512
struct counters { int n; char name[MAX_CTR][48]; unsigned long long val[MAX_CTR]; };

static void read_counter_file(const char *path, struct counters *c) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    static char hdr[16384], val[16384];
    while (fgets(hdr, sizeof hdr, f) && fgets(val, sizeof val, f)) {
        char *sp1, *sp2;
        char *h = strtok_r(hdr, " \n", &sp1);
        char *v = strtok_r(val, " \n", &sp2);
        if (!h || !v || strcmp(h, v) != 0) continue;
        if (strcmp(h, "TcpExt:") != 0 && strcmp(h, "Tcp:") != 0) continue;
        char prefix[8];
        snprintf(prefix, sizeof prefix, "%s", strcmp(h, "Tcp:") == 0 ? "Tcp" : "TcpExt");
        for (;;) {
            h = strtok_r(NULL, " \n", &sp1);
            v = strtok_r(NULL, " \n", &sp2);
            if (!h || !v || c->n >= MAX_CTR) break;
            snprintf(c->name[c->n], sizeof c->name[0], "%s%s", prefix, h);
            c->val[c->n] = strtoull(v, NULL, 10);
            c->n++;
        }
    }
    fclose(f);
}

static void read_counters(struct counters *c) {
    c->n = 0;
    read_counter_file("/proc/net/netstat", c);
    read_counter_file("/proc/net/snmp", c);
}

static void print_counter_deltas(const struct counters *a, const struct counters *b) {
    printf("\"netstat_delta\": {");
    int first = 1;
    for (int i = 0; i < b->n; i++) {
        for (int j = 0; j < a->n; j++) {
            if (strcmp(a->name[j], b->name[i]) == 0) {
                long long d = (long long)(b->val[i] - a->val[j]);
                if (d != 0) {
                    printf("%s\"%s\": %lld", first ? "" : ", ", b->name[i], d);
                    first = 0;
                }
                break;
            }
        }
    }
    printf("}");
}

/* ------------------------------------------------------------------ sockets */

static void print_tcp_info(int fd) {
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    int mss = 0;
    socklen_t ml = sizeof mss;
    char cc[32] = "";
    socklen_t cl = sizeof cc;
    getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &ml);
    getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &cl);
    cc[sizeof cc - 1] = 0;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) {
        printf("\"tcp_info\": null, \"tcp_maxseg_bytes\": %d, \"cc\": \"%s\"", mss, cc);
        return;
    }
    printf("\"tcp_maxseg_bytes\": %d, \"cc\": \"%s\", \"tcp_info\": {"
           "\"snd_mss\": %u, \"rcv_mss\": %u, \"advmss\": %u, \"rto_us\": %u, \"ato_us\": %u, "
           "\"rtt_us\": %u, \"rttvar_us\": %u, \"min_rtt_us\": %u, \"snd_cwnd\": %u, "
           "\"total_retrans\": %u, \"segs_out\": %u, \"segs_in\": %u, \"data_segs_out\": %u, "
           "\"data_segs_in\": %u, \"delivered\": %u, \"pacing_rate_Bps\": %llu, "
           "\"bytes_sent\": %llu, \"bytes_received\": %llu, \"busy_time_us\": %llu}",
           mss, cc, ti.tcpi_snd_mss, ti.tcpi_rcv_mss, ti.tcpi_advmss, ti.tcpi_rto, ti.tcpi_ato,
           ti.tcpi_rtt, ti.tcpi_rttvar, ti.tcpi_min_rtt, ti.tcpi_snd_cwnd, ti.tcpi_total_retrans,
           ti.tcpi_segs_out, ti.tcpi_segs_in, ti.tcpi_data_segs_out, ti.tcpi_data_segs_in,
           ti.tcpi_delivered, (unsigned long long)ti.tcpi_pacing_rate,
           (unsigned long long)ti.tcpi_bytes_sent, (unsigned long long)ti.tcpi_bytes_received,
           (unsigned long long)ti.tcpi_busy_time);
}

/* One reading of --cc-log-every: the socket's congestion state before a response is written. */
struct cc_reading {
    double t_s;                     /* CLOCK_MONOTONIC seconds */
    unsigned long long op;          /* responses written before this one */
    unsigned long long pacing_Bps;  /* sk_pacing_rate, bytes/s */
    unsigned long long delivery_Bps; /* the kept rate sample, bytes/s */
    unsigned app_limited;           /* that sample was application-limited */
    unsigned long long bw_Bps;      /* bbr's bandwidth estimate, bytes/s (0: not bbr) */
    unsigned bbr_min_rtt_us, pacing_gain, cwnd_gain; /* gains in 1/256 (bbr) */
    unsigned cwnd, unacked, notsent_bytes, delivered;
    unsigned rtt_us;
    int wmem_alloc;                 /* bytes charged to the transmit memory (SO_MEMINFO) */
};

static const char *CC_LOG_COLUMNS =
    "\"t_us\", \"op\", \"pacing_Bps\", \"delivery_Bps\", \"app_limited\", \"bw_Bps\", "
    "\"bbr_min_rtt_us\", \"pacing_gain_x256\", \"cwnd_gain_x256\", \"cwnd\", \"unacked\", "
    "\"notsent_bytes\", \"delivered\", \"rtt_us\", \"wmem_alloc\"";

static void read_cc(int fd, unsigned long long op, struct cc_reading *r) {
    struct tcp_info ti;
    union tcp_cc_info cci;
    unsigned mem[SK_MEMINFO_VARS];
    socklen_t tl = sizeof ti, cl = sizeof cci, ml = sizeof mem;
    memset(&ti, 0, sizeof ti);
    memset(&cci, 0, sizeof cci);
    memset(mem, 0, sizeof mem);
    memset(r, 0, sizeof *r);
    r->t_s = now_s();
    r->op = op;
    getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl);
    r->pacing_Bps = (unsigned long long)ti.tcpi_pacing_rate;
    r->delivery_Bps = (unsigned long long)ti.tcpi_delivery_rate;
    r->app_limited = ti.tcpi_delivery_rate_app_limited;
    r->cwnd = ti.tcpi_snd_cwnd;
    r->unacked = ti.tcpi_unacked;
    r->notsent_bytes = ti.tcpi_notsent_bytes;
    r->delivered = ti.tcpi_delivered;
    r->rtt_us = ti.tcpi_rtt;
    if (getsockopt(fd, IPPROTO_TCP, TCP_CC_INFO, &cci, &cl) == 0 && cl >= sizeof cci.bbr) {
        /* (under reno or cubic the kernel returns nothing here: the fields stay 0) */
        r->bw_Bps = ((unsigned long long)cci.bbr.bbr_bw_hi << 32) | cci.bbr.bbr_bw_lo;
        r->bbr_min_rtt_us = cci.bbr.bbr_min_rtt;
        r->pacing_gain = cci.bbr.bbr_pacing_gain;
        r->cwnd_gain = cci.bbr.bbr_cwnd_gain;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &ml) == 0) r->wmem_alloc = (int)mem[SK_MEMINFO_WMEM_ALLOC];
}

static void print_cc_log(const struct cc_reading *log, long n, double t0) {
    printf("\"cc_log_columns\": [%s], \"cc_log\": [", CC_LOG_COLUMNS);
    for (long i = 0; i < n; i++) {
        const struct cc_reading *r = &log[i];
        printf("%s[%.3f, %llu, %llu, %llu, %u, %llu, %u, %u, %u, %u, %u, %u, %u, %u, %d]",
               i ? ", " : "", (r->t_s - t0) * 1e6 /* s -> us */, r->op, r->pacing_Bps,
               r->delivery_Bps, r->app_limited, r->bw_Bps, r->bbr_min_rtt_us, r->pacing_gain,
               r->cwnd_gain, r->cwnd, r->unacked, r->notsent_bytes, r->delivered, r->rtt_us,
               r->wmem_alloc);
    }
    printf("]");
}

static void set_cc(const char *role, int fd, const char *cc) {
    if (cc && *cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, strlen(cc)) != 0)
        die(role, "setsockopt TCP_CONGESTION");
}

static void set_nodelay(const char *role, int fd, int on) {
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0) die(role, "setsockopt TCP_NODELAY");
}

static int fill_addr(const char *addr, int port, struct sockaddr_in *sa) {
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, addr, &sa->sin_addr) == 1 ? 0 : -1;
}

/* Waits until fd is readable/writable or the absolute deadline passes. Returns 1 ready, 0 timeout. */
static int wait_fd(int fd, short events, double deadline) {
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0) return 0;
        struct pollfd p = {fd, events, 0};
        int ms = (int)(left * 1000.0) + 1; /* s -> ms, rounded up */
        int r = poll(&p, 1, ms);
        if (r > 0) return 1;
        if (r < 0 && errno != EINTR) return -1;
    }
}

static int send_all(int fd, const char *buf, size_t len, int flags, double deadline) {
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, buf + off, len - off, flags | MSG_NOSIGNAL);
        if (n > 0) { off += (size_t)n; continue; }
        if (n < 0 && (errno == EINTR)) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_fd(fd, POLLOUT, deadline) <= 0) return -1;
            continue;
        }
        return -1;
    }
    return 0;
}

static uint32_t get_u32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static void put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }

/* ------------------------------------------------------------------ server */

static int run_server(const struct opts *o) {
    const char *R = "server";
    int sock_nodelay = 0, hdr_flags = 0, data_flags = 0;
    if (strcmp(o->sock, "nagle") == 0) {}
    else if (strcmp(o->sock, "nodelay") == 0) sock_nodelay = 1;
    else if (strcmp(o->sock, "more") == 0) hdr_flags = MSG_MORE;
    else if (strcmp(o->sock, "more_nodelay") == 0) { sock_nodelay = 1; hdr_flags = MSG_MORE; }
    else if (strcmp(o->sock, "more_all") == 0) { hdr_flags = MSG_MORE; data_flags = MSG_MORE; }
    else fail(R, "unknown --sock");

    double deadline = now_s() + o->time_limit_s;
    /* Allocate and touch every buffer before accepting, so the first request is not slowed by page faults. */
    static unsigned char inbuf[1 << 16];
    size_t have = 0;
    unsigned char *hdr = calloc(1, (size_t)o->hdr_size);
    char *payload = malloc(MAX_PAYLOAD);
    if (!hdr || !payload) fail(R, "out of memory");
    memset(payload, 'q', MAX_PAYLOAD);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0) die(R, "socket");
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    set_cc(R, ls, o->cc); /* inherited by the accepted socket */
    struct sockaddr_in sa;
    if (fill_addr(o->addr, o->port, &sa) != 0) fail(R, "bad --listen address");
    if (bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0) die(R, "bind");
    if (listen(ls, 1) != 0) die(R, "listen");
    socklen_t sl = sizeof sa;
    getsockname(ls, (struct sockaddr *)&sa, &sl);
    printf("PORT %d\n", ntohs(sa.sin_port));
    fflush(stdout);

    if (wait_fd(ls, POLLIN, deadline) <= 0) fail(R, "no client connected before --time-limit");
    int fd = accept(ls, NULL, NULL);
    if (fd < 0) die(R, "accept");
    close(ls);
    if (sock_nodelay) set_nodelay(R, fd, 1);
    double t_accept = now_s();
    struct cc_reading *cc_log = NULL;
    long cc_n = 0;
    if (o->cc_log_every > 0) {
        cc_log = calloc(CC_LOG_MAX, sizeof *cc_log);
        if (!cc_log) fail(R, "out of memory");
    }

    struct counters c0, c1;
    read_counters(&c0);


    static unsigned long long busy_hist[BUSY_BUCKETS];
    /* requests handled in busy periods that land in the last ("256 or more") bucket, so that the busy
       counts still account for every request: sum(k * hist[k], k < 256) + busy_overflow_ops == ops */
    unsigned long long busy_overflow_ops = 0;
    unsigned long long ops = 0, wakeups = 0, bytes_out = 0;
    double t_first = 0, t_last = 0;
    const char *end_reason = "eof";
    int eof = 0;

    while (!eof) {
        /* Idle: sleep until a request (or EOF) arrives. */
        int w = wait_fd(fd, POLLIN, deadline);
        if (w == 0) { end_reason = "time_limit"; break; }
        if (w < 0) die(R, "poll");
        wakeups++;
        long busy = 0;
        /* Busy: handle requests until the receive queue has no complete request. */
        for (;;) {
            ssize_t n = recv(fd, inbuf + have, sizeof inbuf - have, MSG_DONTWAIT);
            if (n == 0) { eof = 1; break; }
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) break;
                die(R, "recv");
            }
            have += (size_t)n;
            size_t off = 0;
            while (have - off >= (size_t)o->req_size) {
                const unsigned char *rq = inbuf + off;
                uint32_t tag = get_u32(rq), len = get_u32(rq + 4);
                if (len > MAX_PAYLOAD) fail(R, "request asks for more than MAX_PAYLOAD bytes");
                put_u32(hdr, tag);
                put_u32(hdr + 4, len);
                if (cc_log && ops % (unsigned long long)o->cc_log_every == 0 && cc_n < CC_LOG_MAX)
                    read_cc(fd, ops, &cc_log[cc_n++]);
                if (send_all(fd, (char *)hdr, (size_t)o->hdr_size, hdr_flags, deadline) != 0 ||
                    (len > 0 && send_all(fd, payload, len, data_flags, deadline) != 0)) {
                    end_reason = "send_failed";
                    eof = 1;
                    break;
                }
                bytes_out += (unsigned long long)o->hdr_size + len;
                t_last = now_s();
                if (ops == 0) t_first = t_last;
                ops++;
                busy++;
                off += (size_t)o->req_size;
            }
            memmove(inbuf, inbuf + off, have - off);
            have -= off;
            if (eof) break;
        }
        if (busy < BUSY_BUCKETS - 1) {
            busy_hist[busy]++;
        } else {
            busy_hist[BUSY_BUCKETS - 1]++;
            busy_overflow_ops += (unsigned long long)busy;
        }
    }
    read_counters(&c1);
    printf("{\"role\": \"server\", \"error\": null, \"end\": \"%s\", \"proto\": \"%s\", \"sock\": \"%s\", "
           "\"ops\": %llu, \"wakeups\": %llu, \"bytes_out\": %llu, \"active_s\": %.6f, "
           "\"busy_overflow_ops\": %llu, \"busy_hist\": {",
           end_reason, o->proto, o->sock, ops, wakeups, bytes_out, t_last - t_first, busy_overflow_ops);
    int first = 1;
    for (int i = 0; i < BUSY_BUCKETS; i++)
        if (busy_hist[i]) { printf("%s\"%d\": %llu", first ? "" : ", ", i, busy_hist[i]); first = 0; }
    printf("}, ");
    print_tcp_info(fd);
    printf(", ");
    print_counter_deltas(&c0, &c1);
    if (cc_log) {
        printf(", ");
        print_cc_log(cc_log, cc_n, t_accept);
    }
    printf("}\n");
    fflush(stdout);
    free(cc_log);
    close(fd);
    return strcmp(end_reason, "eof") == 0 ? 0 : 3;
}

/* ------------------------------------------------------------------ client */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *sorted, long n, double p) {
    if (n <= 0) return -1;
    long i = (long)(p / 100.0 * (double)(n - 1) + 0.5);
    return sorted[i];
}

static int run_client(const struct opts *o) {
    const char *R = "client";
    double t_begin = now_s();
    double deadline = t_begin + o->time_limit_s;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die(R, "socket");
    set_cc(R, fd, o->cc);
    if (strcmp(o->client_sock, "nodelay") == 0) set_nodelay(R, fd, 1);
    else if (strcmp(o->client_sock, "nagle") != 0) fail(R, "unknown --client-sock");
    struct sockaddr_in sa;
    if (fill_addr(o->addr, o->port, &sa) != 0) fail(R, "bad --connect address");
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) die(R, "connect");

    struct counters c0, c1;
    read_counters(&c0);

    const int qd = o->qd;
    const size_t msg = (size_t)o->hdr_size + (size_t)o->iosize; /* bytes per response */
    size_t cap = msg * 4 > (1u << 20) ? msg * 4 : (1u << 20);
    unsigned char *buf = malloc(cap);
    unsigned char *req = calloc(1, (size_t)o->req_size);
    double *sent_at = calloc((size_t)qd, sizeof(double));
    long lat_cap = o->count < 4000000 ? o->count : 4000000;
    double *lat = malloc((size_t)lat_cap * sizeof(double));
    if (!buf || !req || !sent_at || !lat) fail(R, "out of memory");

    uint32_t next_tag = 0, expect_tag = 0;
    long issued = 0, completed = 0, in_window = 0, stalled = 0;
    double t_warm = t_begin + o->warmup_s, t_stop_at = t_warm + o->duration_s, t_stopped = 0;
    int stopping = 0;
    const char *end_reason = "duration";

    /* Issue QD requests, each with its own send() call, as an initiator does. */
    for (int i = 0; i < qd; i++) {
        put_u32(req, next_tag);
        put_u32(req + 4, (uint32_t)o->iosize);
        sent_at[next_tag % (uint32_t)qd] = now_s();
        if (send_all(fd, (char *)req, (size_t)o->req_size, 0, deadline) != 0) die(R, "send");
        next_tag++;
        issued++;
    }
    size_t have = 0;
    while (issued > completed) {
        int w = wait_fd(fd, POLLIN, deadline);
        if (w == 0) { end_reason = "time_limit"; break; }
        if (w < 0) die(R, "poll");
        ssize_t n = recv(fd, buf + have, cap - have, 0);
        if (n == 0) { end_reason = "server_closed"; break; }
        if (n < 0) { if (errno == EINTR) continue; die(R, "recv"); }
        have += (size_t)n;
        size_t off = 0;
        while (have - off >= msg) {
            double t = now_s();
            uint32_t tag = get_u32(buf + off), len = get_u32(buf + off + 4);
            if (tag != expect_tag || len != (uint32_t)o->iosize) fail(R, "response out of order or wrong length");
            expect_tag++;
            completed++;
            off += msg;
            double l_us = (t - sent_at[tag % (uint32_t)qd]) * 1e6; /* s -> us */
            if (!stopping && t >= t_warm) {
                if (in_window < lat_cap) lat[in_window] = l_us;
                in_window++;
                if (l_us > STALL_US) stalled++;
            }
            if (!stopping && (t >= t_stop_at || completed >= o->count)) {
                stopping = 1;
                t_stopped = t;
                end_reason = completed >= o->count ? "count" : "duration";
            }
            if (!stopping) {
                put_u32(req, next_tag);
                put_u32(req + 4, (uint32_t)o->iosize);
                sent_at[next_tag % (uint32_t)qd] = now_s();
                if (send_all(fd, (char *)req, (size_t)o->req_size, 0, deadline) != 0) die(R, "send");
                next_tag++;
                issued++;
            }
        }
        memmove(buf, buf + off, have - off);
        have -= off;
    }
    read_counters(&c1);
    if (t_stopped == 0) t_stopped = now_s();
    double window = t_stopped - t_warm;
    long nl = in_window < lat_cap ? in_window : lat_cap;
    if (o->lat_file) {
        FILE *f = fopen(o->lat_file, "w");
        if (f) { for (long i = 0; i < nl; i++) fprintf(f, "%.3f\n", lat[i]); fclose(f); }
    }
    double sum = 0, ssum = 0;
    for (long i = 0; i < nl; i++) sum += lat[i];
    long ns = 0;
    for (long i = 0; i < nl; i++) if (lat[i] > STALL_US) { ssum += lat[i]; ns++; }
    qsort(lat, (size_t)nl, sizeof(double), cmp_double);
    printf("{\"role\": \"client\", \"error\": %s, \"end\": \"%s\", \"proto\": \"%s\", \"qd\": %d, "
           "\"iosize\": %ld, \"client_sock\": \"%s\", \"issued\": %ld, \"completed\": %ld, "
           "\"window_ops\": %ld, \"window_s\": %.6f, \"iops\": %.3f, \"lat_mean_us\": %.3f, "
           "\"lat_p50_us\": %.3f, \"lat_p10_us\": %.3f, \"lat_p90_us\": %.3f, \"lat_p99_us\": %.3f, "
           "\"lat_min_us\": %.3f, \"lat_max_us\": %.3f, \"stall_threshold_us\": %.1f, \"stalled_ops\": %ld, "
           "\"stall_mean_us\": %.3f, ",
           strcmp(end_reason, "time_limit") == 0 || strcmp(end_reason, "server_closed") == 0
               ? "\"run ended early\"" : "null",
           end_reason, o->proto, qd, o->iosize, o->client_sock, issued, completed, in_window, window,
           window > 0 ? (double)in_window / window : 0.0, nl ? sum / (double)nl : -1.0,
           pct(lat, nl, 50), pct(lat, nl, 10), pct(lat, nl, 90), pct(lat, nl, 99),
           nl ? lat[0] : -1.0, nl ? lat[nl - 1] : -1.0, STALL_US, stalled, ns ? ssum / (double)ns : -1.0);
    print_tcp_info(fd);
    printf(", ");
    print_counter_deltas(&c0, &c1);
    printf("}\n");
    fflush(stdout);
    shutdown(fd, SHUT_WR);
    close(fd);
    return strcmp(end_reason, "time_limit") == 0 ? 3 : 0;
}

int main(int argc, char **argv) {
    struct opts o;
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the harness that started us */
    if (parse_opts(argc, argv, &o) != 0) { usage(); return 1; }
    if (strcmp(o.role, "server") == 0) return run_server(&o);
    if (strcmp(o.role, "client") == 0) return run_client(&o);
    usage();
    return 1;
}
