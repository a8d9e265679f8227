/*
 * qdcosts: microbenchmarks of the host costs the simulator's Host part names (Queue Depth book).
 *
 *   qdcosts [--samples N] [--repeats R] [--gap-us G] [--time-limit S]
 *
 * Prints ONE JSON object of raw samples; the Python side (models/measure/costs.py) computes the
 * medians and percentiles, so the statistics live in one place.
 *
 *   wake.pipe, wake.futex  wake-up latency of a thread blocked in read() on a pipe, or in
 *                          FUTEX_WAIT, microseconds, where the scheduler places the threads;
 *   wake.pipe_cross        the same over a pipe with the sleeper pinned to another CPU than
 *                          the waker's (empty when fewer than two CPUs may be used): the
 *                          wake-up of a thread on a CPU that went idle.  Each: the waker
 *                          sleeps a short gap (G us, varied),
 *                          reads CLOCK_MONOTONIC, writes the time into the pipe (or a shared word,
 *                          then FUTEX_WAKE); the woken thread reads the clock at once.  N samples.
 *   wake.cross_by_gap[]    pipe_cross again, the waker spinning (not sleeping) for each of the
 *                          gaps GAPS_US (+-25 %, varied), so the sleeper's CPU has been idle for
 *                          about that long when the wake-up comes: how the wake-up's cost grows
 *                          with the idle time (a virtual CPU that halted only briefly may still
 *                          be polling, in the guest or in the hypervisor).  N / 4 samples per gap.
 *   wake.tcp_by_gap[]      cross_by_gap's gaps and sleeper's CPU again, over a connected loopback
 *                          TCP socket (TCP_NODELAY) instead of the pipe: the waker send()s the
 *                          time, the sleeper waits in poll() and reads the clock when poll()
 *                          returns (then recv()s it), as the harness's threads (qdperf.c) wait
 *                          for a request or a response.  Besides the wake-up it holds the
 *                          segment's trip through both stacks (the loopback's receive soft
 *                          interrupt runs on the waker's CPU, as in the harness) and poll()'s
 *                          own work.  N / 4 samples per gap.  Each sample also times the
 *                          waker's send() (waker_us, wall clock), and between every two samples
 *                          one more is taken with the sleeper spinning on a non-blocking peek
 *                          instead of poll() (spin_peer_lat_us, spin_peer_waker_us): no thread
 *                          sleeps, so no wake-up.  waker_us less spin_peer_waker_us is what
 *                          waking the peer adds to the send() that wakes it after that much idle
 *                          (the two interleaved, so a drift of the machine moves both alike).
 *   wake.tcp_by_long_gap[] the same for the long gaps LONG_GAPS_US, the waker asleep through each
 *                          gap (varied +-50 %), as in a loop that stalled.  N / 40 samples per
 *                          gap (at least 8), with the sleeper in poll() and spinning.
 *   pingpong               a request/response loop of two threads pinned to different CPUs over
 *                          a connected loopback TCP socket (TCP_NODELAY), 48 bytes each way, N
 *                          round trips, timed by the requester per round trip: poll_us, each
 *                          thread waiting in poll() between its messages (both CPUs idle in
 *                          turn, each woken by the other's segment, as the harness's threads
 *                          are at QD 1), and spin_us, each thread spinning on a non-blocking
 *                          recv() instead (no wake-up: the two trips and the four calls).
 *                          Half their difference is what one wake-up adds to a round trip
 *                          where the waker itself goes idle right after its send(), which the
 *                          one-way benchmarks above (the waker spins) do not see.
 *                          Both modes also time the requester's send() in its own thread's CPU
 *                          clock (poll_send_cpu_us, spin_send_cpu_us): in poll_us its segment
 *                          wakes the responder, in spin_us it does not; the difference is the
 *                          waker's share of a wake-up (on a virtual machine the interrupt to
 *                          the sleeper's idle CPU leaves the guest), the same clock reads in both.
 *   wake.cross_by_long_gap[] the same for the long gaps LONG_GAPS_US (2.5 to 40 ms, the idle a
 *                          40 ms delayed-ACK stall leaves behind at HZ 250): a virtual CPU idle
 *                          for milliseconds may have been descheduled by its host and wake slower
 *                          still.  N / 40 samples per gap (at least 8): each costs its gap.
 *                          Both also time the waker's write() (waker_us, wall clock): waking a
 *                          thread whose CPU idled costs the waker too (on a virtual machine an
 *                          interrupt to a halted virtual CPU is a trip through the hypervisor).
 *                          Each long gap is then measured again with the waker asleep through
 *                          the gap as well (asleep_lat_us, asleep_waker_us; the gap varied
 *                          +-50 %): in a two-thread loop one thread idles for milliseconds only
 *                          when the whole loop stalled, and then the waker had slept too and
 *                          runs on a CPU of its own that just came back.
 *                          The method is lmbench's pipe ping-pong (McVoy and Staelin 1996) with a
 *                          timestamp, so the one-way latency is measured, not a round trip.
 *   send[]                 per size (48, 512, 4096, 65536 bytes): R repeats of a batch of send()
 *                          calls (as many as fit in 32 KiB, at least one) on a connected loopback
 *                          TCP socket with TCP_NODELAY, timed with the thread's CPU clock
 *                          (CLOCK_THREAD_CPUTIME_ID) and the wall clock, per call, microseconds;
 *                          the receiver is drained (same thread, not timed) between batches, so no
 *                          call blocks; a batch where a call would block (EAGAIN, short write) is
 *                          discarded and counted.  The peer's data segments in (tcpi_data_segs_in)
 *                          give the segments per call.
 *   recv_large             R repeats: one 64 KiB send() that has arrived, read back with
 *                          recv() calls of up to 64 KiB; the thread's CPU for the whole read
 *                          and the segments it came in (with recv: the copy's cost per byte).
 *   large_cross            R repeats of the same 64 KiB transfer between two threads pinned to
 *                          different CPUs, as the client and server of a run usually are: one
 *                          thread's send() writes the bytes (its thread CPU timed), the other,
 *                          once they have all arrived, reads them back (its thread CPU timed).
 *                          The reader copies bytes another CPU's cache holds, and the writer
 *                          fills buffers the other CPU freed: the copies' cost per byte as a
 *                          request/response loop pays it, where send[] and recv_large (one
 *                          thread) find every byte in its own cache.  Empty with one CPU.
 *   loop_bytes             the harness's loop itself (qdperf.c): a server thread and a client
 *                          thread pinned to two CPUs over loopback TCP (TCP_NODELAY both), 8
 *                          requests of 48 bytes outstanding, each answered by a 48-byte header
 *                          and a payload of 4, 16 or 32 KiB in two send() calls; per chunk of 250
 *                          operations (R chunks per size, after 200 left out), the thread CPU of
 *                          the server's payload send() and of the client's recv() calls, the
 *                          calls, each thread's whole CPU and the server's data segments.  The
 *                          copies' cost per byte as the loop pays it, with many responses in
 *                          flight, where send[], recv_large and large_cross time one transfer
 *                          at a time.  Empty with one CPU.
 *   recv                   R repeats: 64 segments of 512 bytes are sent with TCP_NODELAY and
 *                          arrive; then they are read back with one recv() of 512 bytes each,
 *                          timed as above; per segment (tcpi_data_segs_in) and per call.
 *   ack                    the CPU of one pure ACK, sent and processed (both in the calling thread on
 *                          loopback), on a connection of its own: R repeats of two batches of
 *                          ACK_ITERS iterations, each iteration one 64-byte send() with TCP_NODELAY,
 *                          the receiver's recv() of it, then setsockopt(TCP_QUICKACK) on the
 *                          receiver.  The receiver is in pingpong (interactive) mode
 *                          (TCP_QUICKACK 0 before each batch), so a read alone does not ACK a
 *                          small segment.  Batch "ack" sets TCP_QUICKACK to 2: an ACK that is due
 *                          leaves now and the socket stays in pingpong mode (tcp.c,
 *                          __tcp_sock_set_quickack: odd values leave it); batch "held" sets 0
 *                          (nothing sent; the kernel still ACKs every second small segment).
 *                          Each batch: thread CPU per iteration, the receiver's segments out
 *                          (tcpi_segs_out: it sends nothing but pure ACKs) and the data segments
 *                          in, per iteration.  The batches alternate, so drift cancels; the
 *                          Python side divides the CPU difference by the ACK difference.
 *   timer_arm              R * 50 samples each: the wall time of timerfd_settime() arming a
 *                          timer 20 us ahead, which becomes the CPU's next timer event (the
 *                          clock event is reprogrammed; on a virtual machine that traps to the
 *                          hypervisor), and arming one 10 s ahead, which does not; each disarmed
 *                          at once.  What bbr's pacing timer costs the CPU that arms it
 *                          (Host.timer_arm_cpu_s): the difference.
 *   timer_fire             R * 50 samples: a thread spins reading the clock (vDSO, no system
 *                          call) through an 80 us window in which a timer it armed 20 us ahead
 *                          fires; the longest pause of its clock readings from FIRE_EARLY_US
 *                          before the timer's time on is the CPU the timer's interrupt took
 *                          from it (fire_gap_us; when it began, relative to the timer's time:
 *                          fire_at_us).  A hypervisor may deliver the interrupt early (KVM
 *                          advances a guest's deadline timer to hide its own latency): on the
 *                          fourth machine most pauses began 1-2 us before the timer's time and
 *                          a fifth to half of them more than 2 us before, which a window from
 *                          2 us before missed (the median then read no pause at all).  The same window spun without a timer gives the
 *                          longest pause that is not the timer's (base_gap_us).  What bbr's
 *                          pacing timer costs the CPU it fires on (Host.timer_fire_cpu_s): the
 *                          difference of the medians.
 *
 * Every run is bounded by --time-limit (seconds; alarm) and uses only 127.0.0.1.
 * Units: *_us are microseconds; sizes in bytes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/futex.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES 20000
#define MAX_REPEATS 1000
#define BATCH_BYTES 32768 /* bytes sent per timed batch, at most (one call at least) */
#define RECV_SEGMENTS 64  /* segments per receive batch */
#define RECV_BYTES 512    /* bytes per receive segment */
#define BIG 65536         /* bytes: largest send size */
#define ACK_ITERS 256     /* iterations per ACK batch */
#define ACK_BYTES 64      /* bytes per ACK batch iteration's send() */

/* bytes per send() call, and its flags: the last, 48 bytes with MSG_MORE, is a call whose bytes
 * join a held buffer (no segment leaves), so the cost of a call alone is pinned down. */
static const int SIZES[] = {48, 512, 4096, 65536, 48};
static const int FLAGS[] = {0, 0, 0, 0, MSG_MORE};
#define NSIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

static void fail(const char *what) {
    printf("{\"tool\": \"qdcosts\", \"error\": \"%s: %s\"}\n", what, strerror(errno));
    fflush(stdout);
    exit(2);
}

static double clock_us(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3; /* s, ns -> us */
}

static void sleep_us(double us) {
    struct timespec ts = {(time_t)(us / 1e6), (long)((us - (double)(time_t)(us / 1e6) * 1e6) * 1e3)};
    nanosleep(&ts, NULL); /* us -> s + ns */
}

/* The idle gaps of wake.cross_by_gap, microseconds. */
static const double GAPS_US[] = {2.0, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0, 1280.0};
#define NGAPS ((int)(sizeof GAPS_US / sizeof GAPS_US[0]))
/* The long idle gaps of wake.cross_by_long_gap, microseconds. */
static const double LONG_GAPS_US[] = {2500.0, 5000.0, 10000.0, 20000.0, 40000.0};
#define NLONG ((int)(sizeof LONG_GAPS_US / sizeof LONG_GAPS_US[0]))

/* A fixed-seed linear congruential generator: the gaps vary, the run repeats. */
static uint32_t lcg = 12345u;
static double next_unit(void) {
    lcg = lcg * 1664525u + 1013904223u;
    return (double)(lcg >> 8) / (double)(1u << 24);
}

/* ------------------------------------------------------------------ wake-ups */

struct wake {
    int n;
    double gap_us;
    int pipe_fd[2];
    _Atomic uint32_t word; /* futex word: the sample number posted */
    _Atomic double posted_us;
    _Atomic int acked; /* samples the sleeper has recorded */
    _Atomic int ready; /* the sleeper runs on its CPU: the first sample times no thread start */
    double *lat_us;
    double *waker_us; /* the waker's write(), wall clock, or NULL */
    int use_futex;
    int use_tcp;   /* a loopback TCP connection instead of the pipe: send(), poll() */
    int sock_w, sock_r; /* its two ends (TCP_NODELAY), with use_tcp */
    int cpu; /* the sleeper's CPU, or -1 for anywhere */
    int spin; /* the waker spins through the gap instead of sleeping */
    int peer_spin; /* with use_tcp: 1, the sleeper spins on a non-blocking peek and never sleeps;
                      2, it does so for the odd samples only (and sleeps in poll() for the even) */
};

/* Pin the calling thread to one CPU; 0 on success. */
static int pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val) {
    return syscall(SYS_futex, (uint32_t *)addr, op, val, NULL, NULL, 0);
}

static void *sleeper(void *arg) {
    struct wake *w = arg;
    if (w->cpu >= 0 && pin_to(w->cpu) != 0) fail("pin sleeper");
    atomic_store(&w->ready, 1);
    for (int i = 0; i < w->n; i++) {
        double t0;
        if (w->use_tcp) { /* the harness's loop: poll() until readable, then recv() */
            struct pollfd p = {w->sock_r, POLLIN, 0};
            char peek;
            int spin_now = w->peer_spin == 2 ? (i & 1) : w->peer_spin;
            if (spin_now) /* no sleep, so no wake-up: the baseline of the waker's send() */
                while (recv(w->sock_r, &peek, 1, MSG_PEEK | MSG_DONTWAIT) != 1) {
                }
            else
                while (poll(&p, 1, -1) != 1) {
                }
            double t1 = clock_us(CLOCK_MONOTONIC);
            size_t got = 0;
            while (got < sizeof t0) {
                ssize_t r = recv(w->sock_r, (char *)&t0 + got, sizeof t0 - got, 0);
                if (r <= 0) fail("tcp wake recv");
                got += (size_t)r;
            }
            w->lat_us[i] = t1 - t0;
        } else if (w->use_futex) {
            uint32_t want = (uint32_t)i + 1u;
            while (atomic_load(&w->word) != want) futex(&w->word, FUTEX_WAIT_PRIVATE, want - 1u);
            double t1 = clock_us(CLOCK_MONOTONIC);
            t0 = atomic_load(&w->posted_us);
            w->lat_us[i] = t1 - t0;
        } else {
            if (read(w->pipe_fd[0], &t0, sizeof t0) != (ssize_t)sizeof t0) fail("pipe read");
            w->lat_us[i] = clock_us(CLOCK_MONOTONIC) - t0;
        }
        atomic_store(&w->acked, i + 1);
    }
    return NULL;
}

static void spin_us(double us) {
    double end = clock_us(CLOCK_MONOTONIC) + us;
    while (clock_us(CLOCK_MONOTONIC) < end) {
    }
}

static void connected_pair(int *snd, int *rcv);

/* kind: WAKE_PIPE, WAKE_FUTEX, WAKE_TCP (a loopback TCP connection, the sleeper in poll()) or
   WAKE_TCP_ALT (the same connection, the sleeper in poll() for the even samples and spinning on
   a non-blocking peek, no wake-up, for the odd: the two alternate, so a drift of the machine
   moves both alike) */
enum { WAKE_PIPE, WAKE_FUTEX, WAKE_TCP, WAKE_TCP_ALT };

/* Split n alternating samples: the even ones to even[], the odd ones to odd[]. */
static void split_alternate(const double *both, int n, double *even, double *odd) {
    for (int i = 0; i < n; i++) (i & 1 ? odd : even)[i / 2] = both[i];
}

static void measure_wake(int n, double gap_us, int kind, int cpu, int spin, double *out,
                         double *waker_out) {
    int use_futex = kind == WAKE_FUTEX, use_tcp = kind == WAKE_TCP || kind == WAKE_TCP_ALT;
    struct wake w = {.n = n, .gap_us = gap_us, .lat_us = out, .waker_us = waker_out,
                     .use_futex = use_futex, .use_tcp = use_tcp, .cpu = cpu, .spin = spin,
                     .peer_spin = kind == WAKE_TCP_ALT ? 2 : 0};
    atomic_store(&w.word, 0u);
    atomic_store(&w.acked, 0);
    atomic_store(&w.ready, 0);
    if (use_tcp)
        connected_pair(&w.sock_w, &w.sock_r);
    else if (!use_futex && pipe(w.pipe_fd) != 0)
        fail("pipe");
    pthread_t th;
    if (pthread_create(&th, NULL, sleeper, &w) != 0) fail("pthread_create");
    /* the sleeper's start and its move to its CPU take milliseconds: not a wake-up's latency */
    while (!atomic_load(&w.ready)) sched_yield();
    for (int i = 0; i < n; i++) {
        if (spin) { /* the sleeper blocks again, then its CPU idles for the gap */
            while (atomic_load(&w.acked) < i) {
            }
            spin_us(gap_us * (0.75 + 0.5 * next_unit()));
        } else {
            /* a gap long enough for the sleeper to block again, varied so no timer aliases */
            sleep_us(gap_us * (0.5 + next_unit()));
        }
        while (atomic_load(&w.acked) < i) sched_yield(); /* the sleeper took the last one */
        double t0 = clock_us(CLOCK_MONOTONIC);
        if (use_tcp) {
            if (send(w.sock_w, &t0, sizeof t0, 0) != (ssize_t)sizeof t0) fail("tcp wake send");
        } else if (use_futex) {
            atomic_store(&w.posted_us, t0);
            atomic_store(&w.word, (uint32_t)i + 1u);
            futex(&w.word, FUTEX_WAKE_PRIVATE, 1);
        } else if (write(w.pipe_fd[1], &t0, sizeof t0) != (ssize_t)sizeof t0) {
            fail("pipe write");
        }
        if (w.waker_us) w.waker_us[i] = clock_us(CLOCK_MONOTONIC) - t0;
    }
    pthread_join(th, NULL);
    if (use_tcp) {
        close(w.sock_w);
        close(w.sock_r);
    } else if (!use_futex) {
        close(w.pipe_fd[0]);
        close(w.pipe_fd[1]);
    }
}

static void print_array(const char *name, const double *x, int n);

/* The TCP wake-ups of n_gaps gaps, n samples each, as JSON objects (the list's brackets are the
   caller's): the peer asleep (lat, waker) and spinning (spin_lat, spin_waker). */
static void print_tcp_gaps(const double *gaps_us, int n_gaps, int n, const double *lat,
                           const double *waker, const double *spin_lat,
                           const double *spin_waker) {
    for (int g = 0; g < n_gaps; g++) {
        size_t at = (size_t)g * (size_t)n;
        printf("%s{\"gap_us\": %.1f, ", g ? ", " : "", gaps_us[g]);
        print_array("lat_us", lat + at, n);
        printf(", ");
        print_array("waker_us", waker + at, n);
        printf(", ");
        print_array("spin_peer_lat_us", spin_lat + at, n);
        printf(", ");
        print_array("spin_peer_waker_us", spin_waker + at, n);
        printf("}");
    }
}

/* ------------------------------------------------------------------ ping-pong */

#define PP_BYTES 48

struct pingpong {
    int fd, cpu, n, spin;
};

/* Wait until fd has bytes: poll(), or a spin on a non-blocking peek. */
static void pp_wait(int fd, int spin) {
    if (spin) {
        char b;
        while (recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) != 1) {
        }
        return;
    }
    struct pollfd p = {fd, POLLIN, 0};
    while (poll(&p, 1, -1) != 1) {
    }
}

static void pp_read(int fd, char *buf, int spin) {
    int got = 0;
    while (got < PP_BYTES) {
        pp_wait(fd, spin);
        ssize_t r = recv(fd, buf + got, (size_t)(PP_BYTES - got), MSG_DONTWAIT);
        if (r > 0) got += (int)r;
        else if (r == 0) fail("pingpong: peer closed");
    }
}

static void *pp_responder(void *arg) {
    struct pingpong *pp = arg;
    char buf[PP_BYTES];
    if (pin_to(pp->cpu) != 0) fail("pin responder");
    for (int i = 0; i < pp->n; i++) {
        pp_read(pp->fd, buf, pp->spin);
        if (send(pp->fd, buf, PP_BYTES, 0) != PP_BYTES) fail("pingpong send");
    }
    return NULL;
}

/* n round trips from CPU a to a responder on CPU b; out[i] the i-th, microseconds; send_cpu[i]
   the requester's thread CPU in its i-th send() (microseconds; the responder asleep in poll()
   or spinning, by spin). */
static void measure_pingpong(int n, int a, int b, int spin, double *out, double *send_cpu) {
    int req, rsp;
    connected_pair(&req, &rsp);
    struct pingpong pp = {rsp, b, n, spin};
    pthread_t th;
    if (pin_to(a) != 0) fail("pin requester");
    if (pthread_create(&th, NULL, pp_responder, &pp) != 0) fail("pthread_create");
    char buf[PP_BYTES];
    memset(buf, 1, sizeof buf);
    for (int i = 0; i < n; i++) {
        double t0 = clock_us(CLOCK_MONOTONIC);
        double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
        if (send(req, buf, PP_BYTES, 0) != PP_BYTES) fail("pingpong send");
        send_cpu[i] = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
        pp_read(req, buf, spin);
        out[i] = clock_us(CLOCK_MONOTONIC) - t0;
    }
    pthread_join(th, NULL);
    close(req);
    close(rsp);
}

/* ------------------------------------------------------------------ sockets */

static void connected_pair(int *snd, int *rcv) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0) fail("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0) fail("bind");
    if (listen(ls, 1) != 0) fail("listen");
    if (getsockname(ls, (struct sockaddr *)&a, &len) != 0) fail("getsockname");
    *snd = socket(AF_INET, SOCK_STREAM, 0);
    if (*snd < 0) fail("socket");
    if (connect(*snd, (struct sockaddr *)&a, sizeof a) != 0) fail("connect");
    *rcv = accept(ls, NULL, NULL);
    if (*rcv < 0) fail("accept");
    close(ls);
    int one = 1;
    if (setsockopt(*snd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) fail("TCP_NODELAY");
    if (setsockopt(*rcv, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) fail("TCP_NODELAY");
}

/* fd's TCP_INFO. */
static struct tcp_info tcp_info_of(int fd) {
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) fail("TCP_INFO");
    return ti;
}

/* Segments sent by fd's socket so far (tcpi_segs_out). */
static unsigned segs_out(int fd) { return tcp_info_of(fd).tcpi_segs_out; }

static unsigned data_segs_in(int fd) { return tcp_info_of(fd).tcpi_data_segs_in; }

static int mss_of(int fd) {
    int mss = 0;
    socklen_t len = sizeof mss;
    if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) != 0) fail("TCP_MAXSEG");
    return mss;
}

/* Read everything the peer has sent so far (``want`` bytes), untimed. */
static void drain(int fd, char *buf, long want) {
    while (want > 0) {
        ssize_t r = recv(fd, buf, BIG, 0);
        if (r <= 0) fail("drain");
        want -= r;
    }
}

/* Longest wait for bytes sent to arrive, us (untimed: no benchmark's window holds it). */
#define AWAIT_US 2e6

/* Wait until ``want`` bytes are readable on fd.  Loopback often delivers within the send, but not
 * always: after the 64 KiB sends the receiver takes 32 KiB for a full segment (rcv_mss), so 512-byte
 * segments earn no ACK on every second one, and the sender, held by its congestion window (cwnd =
 * unacked, 10-60 segments), waits for ACKs that came 5-32 ms later, in 4-ms ticks, on a 2-CPU
 * machine at HZ 250.  So the bound is time, not a count of polls: 100,000 polls took about 35 ms
 * there and the run failed. */
static void await_bytes(int fd, long want) {
    double t0 = clock_us(CLOCK_MONOTONIC);
    for (;;) {
        int avail = 0;
        if (ioctl(fd, FIONREAD, &avail) != 0) fail("FIONREAD");
        if (avail >= want) return;
        if (clock_us(CLOCK_MONOTONIC) - t0 > AWAIT_US) break;
        sched_yield();
    }
    errno = ETIMEDOUT;
    fail("await_bytes");
}

struct batch {
    double cpu_us, wall_us; /* per call */
    double segments;        /* peer's data segments in, per call */
    int ok;
};

static struct batch send_batch(int snd, int rcv, int size, int flags, char *buf) {
    int calls = BATCH_BYTES / size > 0 ? BATCH_BYTES / size : 1;
    unsigned seg0 = data_segs_in(rcv);
    struct batch b = {0, 0, 0, 1};
    long sent = 0;
    double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID), w0 = clock_us(CLOCK_MONOTONIC);
    for (int i = 0; i < calls; i++) {
        ssize_t r = send(snd, buf, (size_t)size, MSG_DONTWAIT | flags);
        if (r > 0) sent += r;
        if (r != size) {
            b.ok = 0;
            break;
        }
    }
    double c1 = clock_us(CLOCK_THREAD_CPUTIME_ID), w1 = clock_us(CLOCK_MONOTONIC);
    if (flags & MSG_MORE) { /* push what is held: an empty-flag send of nothing does not, so uncork */
        int zero = 0, one = 1;
        setsockopt(snd, IPPROTO_TCP, TCP_CORK, &one, sizeof one);
        setsockopt(snd, IPPROTO_TCP, TCP_CORK, &zero, sizeof zero);
    }
    drain(rcv, buf, sent);
    b.cpu_us = (c1 - c0) / calls;
    b.wall_us = (w1 - w0) / calls;
    b.segments = (double)(data_segs_in(rcv) - seg0) / calls;
    return b;
}

static struct batch recv_batch(int snd, int rcv, char *buf) {
    unsigned seg0 = data_segs_in(rcv);
    for (int i = 0; i < RECV_SEGMENTS; i++)
        if (send(snd, buf, RECV_BYTES, 0) != RECV_BYTES) fail("send");
    await_bytes(rcv, (long)RECV_SEGMENTS * RECV_BYTES);
    unsigned segs = data_segs_in(rcv) - seg0;
    struct batch b = {0, 0, 0, 1};
    int calls = 0;
    long got = 0;
    double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID), w0 = clock_us(CLOCK_MONOTONIC);
    while (got < (long)RECV_SEGMENTS * RECV_BYTES) {
        ssize_t r = recv(rcv, buf, RECV_BYTES, 0);
        if (r <= 0) fail("recv");
        got += r;
        calls++;
    }
    double c1 = clock_us(CLOCK_THREAD_CPUTIME_ID), w1 = clock_us(CLOCK_MONOTONIC);
    b.segments = segs > 0 ? (double)segs : 1.0;
    b.cpu_us = (c1 - c0) / b.segments; /* per segment */
    b.wall_us = (w1 - w0) / calls;     /* per call */
    return b;
}

/* One ACK batch (see "ack" above): quickack is the TCP_QUICKACK value set after each read, 2 (an
 * ACK that is due leaves now) or 0 (it stays delayed).  Per iteration: the thread's CPU, the
 * receiver's pure ACKs and its data segments in (a check: 1). */
struct ack_batch {
    double cpu_us, acks, segs_in;
};

static struct ack_batch ack_batch(int snd, int rcv, int quickack, char *buf) {
    int zero = 0, two = 2;
    /* a clean start: any due ACK out, then pingpong mode (untimed) */
    if (setsockopt(rcv, IPPROTO_TCP, TCP_QUICKACK, &two, sizeof two) != 0) fail("TCP_QUICKACK");
    if (setsockopt(rcv, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof zero) != 0) fail("TCP_QUICKACK");
    unsigned acks0 = segs_out(rcv), seg0 = data_segs_in(rcv);
    double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < ACK_ITERS; i++) {
        if (send(snd, buf, ACK_BYTES, 0) != ACK_BYTES) fail("send");
        if (recv(rcv, buf, ACK_BYTES, 0) != ACK_BYTES) fail("recv");
        if (setsockopt(rcv, IPPROTO_TCP, TCP_QUICKACK, &quickack, sizeof quickack) != 0)
            fail("TCP_QUICKACK");
    }
    double c1 = clock_us(CLOCK_THREAD_CPUTIME_ID);
    struct ack_batch b;
    b.cpu_us = (c1 - c0) / ACK_ITERS;
    b.acks = (double)(segs_out(rcv) - acks0) / ACK_ITERS;
    b.segs_in = (double)(data_segs_in(rcv) - seg0) / ACK_ITERS;
    return b;
}

static void print_array(const char *name, const double *x, int n);

/* The timer_arm benchmark (see above): n samples of arming a timer near (20 us) and far (10 s). */
static void measure_timer_arm(int n) {
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    if (fd < 0) fail("timerfd_create");
    double *near_us = calloc((size_t)n, sizeof(double));
    double *far_us = calloc((size_t)n, sizeof(double));
    if (!near_us || !far_us) fail("calloc timer_arm");
    struct itimerspec near = {{0, 0}, {0, 20000}}, far = {{0, 0}, {10, 0}}, off = {{0, 0}, {0, 0}};
    for (int k = 0; k < 2; k++) {
        const struct itimerspec *when = k ? &far : &near;
        double *out = k ? far_us : near_us;
        for (int i = 0; i < n; i++) {
            double t0 = clock_us(CLOCK_MONOTONIC);
            if (timerfd_settime(fd, 0, when, NULL) != 0) fail("timerfd_settime");
            out[i] = clock_us(CLOCK_MONOTONIC) - t0;
            if (timerfd_settime(fd, 0, &off, NULL) != 0) fail("timerfd_settime");
        }
    }
    print_array("near_us", near_us, n);
    printf(", ");
    print_array("far_us", far_us, n);
    close(fd);
    free(near_us);
    free(far_us);
}

/* How early (us) before a timer's time the timer_fire window opens: the timer is armed 20 us
 * ahead and arming takes a few microseconds (timer_arm), so the window still opens after the
 * loop starts. */
#define FIRE_EARLY_US 10.0

/* The timer_fire benchmark (see above): n samples of the longest pause of a spinning thread's
 * clock readings in a window where its timer fires, and in one where none does. */
static void measure_timer_fire(int n) {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    if (fd < 0) fail("timerfd_create");
    double *gap_us = calloc((size_t)n, sizeof(double));
    double *at_us = calloc((size_t)n, sizeof(double));
    double *base_us = calloc((size_t)n, sizeof(double));
    if (!gap_us || !at_us || !base_us) fail("calloc timer_fire");
    for (int i = 0; i < n; i++) {
        for (int armed = 1; armed >= 0; armed--) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            double target = t.tv_sec * 1e6 + t.tv_nsec * 1e-3 + 20.0; /* ns -> us */
            if (armed) {
                long ns = t.tv_nsec + 20000; /* 20 us ahead, absolute */
                struct itimerspec it = {{0, 0}, {t.tv_sec + ns / 1000000000, ns % 1000000000}};
                if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &it, NULL) != 0)
                    fail("timerfd_settime");
            }
            double prev = clock_us(CLOCK_MONOTONIC), longest = 0.0, began = 0.0;
            for (;;) {
                double c = clock_us(CLOCK_MONOTONIC);
                if (prev >= target - FIRE_EARLY_US && c - prev > longest) {
                    longest = c - prev;
                    began = prev;
                }
                prev = c;
                if (c > target + 60.0) break;
            }
            if (armed) {
                uint64_t expirations;
                if (read(fd, &expirations, sizeof expirations) != sizeof expirations)
                    fail("read timerfd");
                gap_us[i] = longest;
                at_us[i] = began - target;
            } else {
                base_us[i] = longest;
            }
        }
    }
    print_array("fire_gap_us", gap_us, n);
    printf(", ");
    print_array("fire_at_us", at_us, n);
    printf(", ");
    print_array("base_gap_us", base_us, n);
    close(fd);
    free(gap_us);
    free(at_us);
    free(base_us);
}

/* The "ack" benchmark on a connection of its own (its ACK state is the batches'): three warm-up
 * pairs, then ``repeats`` pairs of an "ack" and a "held" batch; prints the six arrays. */
static void measure_ack(int repeats, char *buf) {
    static const char *names[6] = {"ack_cpu_us_per_iter",  "ack_acks_per_iter",
                                   "ack_segs_in_per_iter", "held_cpu_us_per_iter",
                                   "held_acks_per_iter",   "held_segs_in_per_iter"};
    double *x[6];
    for (int k = 0; k < 6; k++)
        if (!(x[k] = calloc((size_t)repeats, sizeof(double)))) fail("calloc ack");
    int snd, rcv;
    connected_pair(&snd, &rcv);
    for (int w = 0; w < 3; w++) { /* past the connection's quick-ACK start */
        ack_batch(snd, rcv, 2, buf);
        ack_batch(snd, rcv, 0, buf);
    }
    for (int i = 0; i < repeats; i++) {
        struct ack_batch b[2] = {ack_batch(snd, rcv, 2, buf), ack_batch(snd, rcv, 0, buf)};
        for (int v = 0; v < 2; v++) {
            x[3 * v][i] = b[v].cpu_us;
            x[3 * v + 1][i] = b[v].acks;
            x[3 * v + 2][i] = b[v].segs_in;
        }
    }
    for (int k = 0; k < 6; k++) {
        if (k) printf(", ");
        print_array(names[k], x[k], repeats);
        free(x[k]);
    }
    close(snd);
    close(rcv);
}

/* One BIG-byte send() that has arrived, read back with recv() calls of up to BIG bytes: the
 * thread's CPU for the whole read (cpu_us) and the segments it came in (the copy's per-byte
 * cost is what this adds over small reads). */
static struct batch recv_large(int snd, int rcv, char *buf) {
    unsigned seg0 = data_segs_in(rcv);
    if (send(snd, buf, BIG, 0) != BIG) fail("send");
    await_bytes(rcv, (long)BIG);
    struct batch b = {0, 0, 0, 1};
    long got = 0;
    double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID), w0 = clock_us(CLOCK_MONOTONIC);
    while (got < (long)BIG) {
        ssize_t r = recv(rcv, buf, (size_t)(BIG - got), 0);
        if (r <= 0) fail("recv");
        got += r;
    }
    b.cpu_us = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
    b.wall_us = clock_us(CLOCK_MONOTONIC) - w0;
    b.segments = (double)(data_segs_in(rcv) - seg0);
    return b;
}

/* One side of large_cross: the writer (role 0) sends BIG bytes on its turn, the reader
 * (role 1) waits for them, reads them back, and hands the turn back.  Each pinned to its CPU;
 * thread CPU per transfer into cpu_us[i]. */
struct cross {
    int fd, cpu, role, n;
    _Atomic int *turn; /* transfers completed by the reader; the writer sends transfer turn */
    char *buf;
    double *cpu_us, *segs;
};

static void *cross_side(void *arg) {
    struct cross *x = arg;
    if (pin_to(x->cpu) != 0) fail("pin large_cross");
    for (int i = 0; i < x->n; i++) {
        if (x->role == 0) {
            while (atomic_load(x->turn) != i) sched_yield();
            double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
            if (send(x->fd, x->buf, BIG, 0) != BIG) fail("send large_cross");
            x->cpu_us[i] = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
        } else {
            unsigned seg0 = data_segs_in(x->fd);
            await_bytes(x->fd, (long)BIG);
            long got = 0;
            double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
            while (got < (long)BIG) {
                ssize_t r = recv(x->fd, x->buf, (size_t)(BIG - got), 0);
                if (r <= 0) fail("recv large_cross");
                got += r;
            }
            x->cpu_us[i] = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
            x->segs[i] = (double)(data_segs_in(x->fd) - seg0);
            atomic_store(x->turn, i + 1);
        }
    }
    return NULL;
}

/* large_cross: n transfers of BIG bytes from a writer on CPU a to a reader on CPU b. */
static void measure_cross(int snd, int rcv, int a, int b, int n, double *send_us, double *recv_us,
                          double *segs) {
    _Atomic int turn = 0;
    char *wbuf = calloc(1, BIG), *rbuf = calloc(1, BIG);
    if (!wbuf || !rbuf) fail("calloc large_cross");
    memset(wbuf, 7, BIG); /* the writer's own buffer, touched once as an application's is */
    struct cross w = {snd, a, 0, n, &turn, wbuf, send_us, segs};
    struct cross r = {rcv, b, 1, n, &turn, rbuf, recv_us, segs};
    pthread_t tw, tr;
    if (pthread_create(&tr, NULL, cross_side, &r) != 0 ||
        pthread_create(&tw, NULL, cross_side, &w) != 0)
        fail("pthread_create large_cross");
    pthread_join(tw, NULL);
    pthread_join(tr, NULL);
    free(wbuf);
    free(rbuf);
}

/* ------------------------------------------------------------------ loop_bytes */

/* The harness's request/response loop (qdperf.c) in two threads pinned to two CPUs over a
 * loopback TCP connection, both ends TCP_NODELAY, LOOP_QD requests outstanding: a 48-byte
 * request, answered by a 48-byte header and a payload of LOOP_SIZES[k] bytes in two send()
 * calls.  The server's payload send() and every recv() of the client are timed in the thread's
 * CPU clock and summed per chunk of LOOP_CHUNK operations, after LOOP_WARM operations left out.
 * The payloads stay below the loopback's MSS (65483 bytes), one segment each: on the seventh
 * machine the loop fell from 96,000 to 26,000 operations per second between 60,000- and
 * 65,536-byte payloads (the second segment), the server's send() CPU from 8.7 to 37 us, which
 * is not a cost per byte. */
#define LOOP_QD 8
#define LOOP_HDR 48
#define LOOP_CHUNK 250
#define LOOP_WARM 200
static const int LOOP_SIZES[] = {4096, 16384, 32768};
#define NLOOP ((int)(sizeof LOOP_SIZES / sizeof LOOP_SIZES[0]))

struct loop {
    int fd, cpu, size, chunks;
    long total; /* operations, warm-up included */
    double *cpu_us; /* per chunk: the timed calls' thread CPU, us, summed */
    double *calls;  /* per chunk: the timed calls made */
    double *thread_us; /* per chunk: the thread's whole CPU, us */
    double *segs;   /* per chunk (server): data segments sent (tcpi_data_segs_out) */
};

static int loop_wait(int fd) {
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 1000);
}

static void loop_send_all(int fd, const char *buf, long len) {
    while (len > 0) {
        ssize_t n = send(fd, buf, (size_t)len, MSG_NOSIGNAL);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            fail("send loop_bytes");
        }
        buf += n;
        len -= n;
    }
}

/* Chunk k of operation i, or -1 while warming up. */
static int loop_chunk(long i, int chunks) {
    long k = (i - LOOP_WARM) / LOOP_CHUNK;
    return i < LOOP_WARM || k >= chunks ? -1 : (int)k;
}

static void *loop_server(void *arg) {
    struct loop *x = arg;
    if (pin_to(x->cpu) != 0) fail("pin loop_bytes");
    char *payload = malloc((size_t)x->size), hdr[LOOP_HDR] = {0}, in[4096];
    if (!payload) fail("malloc loop_bytes");
    memset(payload, 'q', (size_t)x->size);
    size_t have = 0;
    long ops = 0;
    unsigned seg0 = tcp_info_of(x->fd).tcpi_data_segs_out;
    double th0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
    while (ops < x->total) {
        if (loop_wait(x->fd) <= 0) fail("poll loop_bytes server");
        for (;;) {
            ssize_t n = recv(x->fd, in + have, sizeof in - have, MSG_DONTWAIT);
            if (n <= 0) break;
            have += (size_t)n;
            size_t off = 0;
            while (have - off >= LOOP_HDR && ops < x->total) {
                loop_send_all(x->fd, hdr, LOOP_HDR);
                double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
                loop_send_all(x->fd, payload, x->size);
                double c1 = clock_us(CLOCK_THREAD_CPUTIME_ID);
                int k = loop_chunk(ops, x->chunks);
                if (k >= 0) {
                    x->cpu_us[k] += c1 - c0;
                    x->calls[k] += 1;
                }
                off += LOOP_HDR;
                ops++;
                if ((ops - LOOP_WARM) % LOOP_CHUNK == 0 && ops >= LOOP_WARM) {
                    /* a chunk ended (or the warm-up did): its thread CPU and segments */
                    unsigned seg = tcp_info_of(x->fd).tcpi_data_segs_out;
                    double th = clock_us(CLOCK_THREAD_CPUTIME_ID);
                    int done = loop_chunk(ops - 1, x->chunks);
                    if (done >= 0) {
                        x->thread_us[done] = th - th0;
                        x->segs[done] = (double)(seg - seg0);
                    }
                    th0 = th;
                    seg0 = seg;
                }
            }
            memmove(in, in + off, have - off);
            have -= off;
        }
    }
    free(payload);
    return NULL;
}

static void loop_client(struct loop *x) {
    size_t msg = (size_t)(LOOP_HDR + x->size), cap = msg * 4 > (1u << 20) ? msg * 4 : (1u << 20);
    char *buf = malloc(cap), req[LOOP_HDR] = {0};
    if (!buf) fail("malloc loop_bytes");
    memset(buf, 1, cap); /* touched once, as an application's buffer is */
    long issued = 0, done = 0;
    for (; issued < LOOP_QD && issued < x->total; issued++) loop_send_all(x->fd, req, LOOP_HDR);
    size_t have = 0;
    double th0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
    while (done < x->total) {
        if (loop_wait(x->fd) <= 0) fail("poll loop_bytes client");
        double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
        ssize_t n = recv(x->fd, buf + have, cap - have, 0);
        double c1 = clock_us(CLOCK_THREAD_CPUTIME_ID);
        if (n <= 0) fail("recv loop_bytes");
        int k = loop_chunk(done, x->chunks);
        if (k >= 0) {
            x->cpu_us[k] += c1 - c0;
            x->calls[k] += 1;
        }
        have += (size_t)n;
        size_t off = 0;
        while (have - off >= msg) {
            off += msg;
            done++;
            if (issued < x->total) {
                loop_send_all(x->fd, req, LOOP_HDR);
                issued++;
            }
            if (done >= LOOP_WARM && (done - LOOP_WARM) % LOOP_CHUNK == 0) {
                double th = clock_us(CLOCK_THREAD_CPUTIME_ID);
                int ended = loop_chunk(done - 1, x->chunks);
                if (ended >= 0) x->thread_us[ended] = th - th0;
                th0 = th;
            }
        }
        memmove(buf, buf + off, have - off);
        have -= off;
    }
    free(buf);
}

/* loop_bytes for one payload size: the server on CPU a, the client (this thread) on CPU b;
 * per chunk of LOOP_CHUNK operations, the server's payload send() CPU and calls (srv), the
 * client's recv() CPU and calls (cli), each thread's whole CPU and the server's data segments. */
static double measure_loop(int a, int b, int size, int chunks, struct loop *srv, struct loop *cli) {
    int cfd, sfd;
    connected_pair(&cfd, &sfd);
    long total = LOOP_WARM + (long)chunks * LOOP_CHUNK;
    srv->fd = sfd, srv->cpu = a, srv->size = size, srv->chunks = chunks, srv->total = total;
    cli->fd = cfd, cli->cpu = b, cli->size = size, cli->chunks = chunks, cli->total = total;
    pthread_t ts;
    if (pthread_create(&ts, NULL, loop_server, srv) != 0) fail("pthread_create loop_bytes");
    if (pin_to(b) != 0) fail("pin loop_bytes");
    double w0 = clock_us(CLOCK_MONOTONIC);
    loop_client(cli);
    double wall = clock_us(CLOCK_MONOTONIC) - w0;
    pthread_join(ts, NULL);
    close(cfd);
    close(sfd);
    return wall / (double)total; /* us per operation, warm-up included */
}

/* ------------------------------------------------------------------ output */

static void print_array(const char *name, const double *x, int n) {
    printf("\"%s\": [", name);
    for (int i = 0; i < n; i++) printf("%s%.4f", i ? ", " : "", x[i]);
    printf("]");
}

int main(int argc, char **argv) {
    int samples = 2000, repeats = 40;
    double gap_us = 100.0, limit_s = 30.0;
    static const struct option longs[] = {{"samples", required_argument, 0, 'n'},
                                          {"repeats", required_argument, 0, 'r'},
                                          {"gap-us", required_argument, 0, 'g'},
                                          {"time-limit", required_argument, 0, 't'},
                                          {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 'n': samples = atoi(optarg); break;
        case 'r': repeats = atoi(optarg); break;
        case 'g': gap_us = atof(optarg); break;
        case 't': limit_s = atof(optarg); break;
        default: errno = EINVAL; fail("usage: qdcosts [--samples N] [--repeats R] [--gap-us G] [--time-limit S]");
        }
    }
    if (samples < 1 || samples > MAX_SAMPLES || repeats < 1 || repeats > MAX_REPEATS ||
        !(gap_us >= 1.0 && gap_us <= 10000.0) || !(limit_s > 0 && limit_s <= 600)) {
        errno = EINVAL;
        fail("samples 1..20000, repeats 1..1000, gap-us 1..10000, time-limit (0, 600]");
    }
    alarm((unsigned)(limit_s + 0.999)); /* hard bound: SIGALRM ends the process */

    double *pipe_us = calloc((size_t)samples, sizeof(double));
    double *futex_us = calloc((size_t)samples, sizeof(double));
    double *cross_us = calloc((size_t)samples, sizeof(double));
    int gap_n = samples / 4 > 0 ? samples / 4 : 1;
    double *by_gap = calloc((size_t)NGAPS * (size_t)gap_n, sizeof(double));
    int long_n = samples / 40 > 8 ? samples / 40 : 8;
    double *by_long = calloc((size_t)NLONG * (size_t)long_n, sizeof(double));
    double *waker_gap = calloc((size_t)NGAPS * (size_t)gap_n, sizeof(double));
    double *tcp_gap = calloc((size_t)NGAPS * (size_t)gap_n, sizeof(double));
    /* the TCP wake-ups' waker: its send() with the peer asleep and with it spinning, and the
       spinning peer's latency; short gaps (the waker spinning) and long (the waker asleep) */
    double *tcp_waker = calloc((size_t)NGAPS * (size_t)gap_n, sizeof(double));
    double *tcp_spin_lat = calloc((size_t)NGAPS * (size_t)gap_n, sizeof(double));
    double *tcp_spin_waker = calloc((size_t)NGAPS * (size_t)gap_n, sizeof(double));
    double *tcp_long = calloc((size_t)NLONG * (size_t)long_n, sizeof(double));
    double *tcp_long_waker = calloc((size_t)NLONG * (size_t)long_n, sizeof(double));
    double *tcp_long_spin_lat = calloc((size_t)NLONG * (size_t)long_n, sizeof(double));
    double *tcp_long_spin_waker = calloc((size_t)NLONG * (size_t)long_n, sizeof(double));
    int alt_n = 2 * (gap_n > long_n ? gap_n : long_n); /* one gap's alternating samples */
    double *alt_lat = calloc((size_t)alt_n, sizeof(double));
    double *alt_waker = calloc((size_t)alt_n, sizeof(double));
    double *pp_poll = calloc((size_t)samples, sizeof(double));
    double *pp_spin = calloc((size_t)samples, sizeof(double));
    double *pp_poll_send = calloc((size_t)samples, sizeof(double));
    double *pp_spin_send = calloc((size_t)samples, sizeof(double));
    double *waker_long = calloc((size_t)NLONG * (size_t)long_n, sizeof(double));
    double *asleep_long = calloc((size_t)NLONG * (size_t)long_n, sizeof(double));
    double *asleep_waker = calloc((size_t)NLONG * (size_t)long_n, sizeof(double));
    double *cpu = calloc((size_t)repeats, sizeof(double));
    double *wall = calloc((size_t)repeats, sizeof(double));
    double *segs = calloc((size_t)repeats, sizeof(double));
    char *buf = calloc(1, BIG);
    if (!pipe_us || !futex_us || !cross_us || !by_gap || !by_long || !waker_gap || !tcp_gap || !pp_poll || !pp_spin || !pp_poll_send || !pp_spin_send ||
        !waker_long ||
        !asleep_long || !asleep_waker || !cpu || !wall || !segs || !buf || !tcp_waker ||
        !tcp_spin_lat || !tcp_spin_waker || !tcp_long || !tcp_long_waker || !tcp_long_spin_lat ||
        !tcp_long_spin_waker || !alt_lat || !alt_waker)
        fail("calloc");

    double t0 = clock_us(CLOCK_MONOTONIC);
    measure_wake(samples, gap_us, 0, -1, 0, pipe_us, NULL);
    measure_wake(samples, gap_us, 1, -1, 0, futex_us, NULL);
    /* two CPUs this process may use: the waker on the first, the sleeper on the second */
    int n_cross = 0, n_gaps = 0, n_long = 0, n_pp = 0, first = -1, second = -1;
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) >= 2) {
        for (int c = 0; c < CPU_SETSIZE && second < 0; c++)
            if (CPU_ISSET(c, &allowed)) {
                if (first < 0)
                    first = c;
                else
                    second = c;
            }
        if (pin_to(first) == 0) {
            measure_wake(samples, gap_us, 0, second, 0, cross_us, NULL);
            n_cross = samples;
            for (int g = 0; g < NGAPS; g++)
                measure_wake(gap_n, GAPS_US[g], 0, second, 1, by_gap + (size_t)g * gap_n,
                             waker_gap + (size_t)g * gap_n);
            for (int g = 0; g < NGAPS; g++) {
                size_t at = (size_t)g * gap_n;
                measure_wake(2 * gap_n, GAPS_US[g], WAKE_TCP_ALT, second, 1, alt_lat, alt_waker);
                split_alternate(alt_lat, 2 * gap_n, tcp_gap + at, tcp_spin_lat + at);
                split_alternate(alt_waker, 2 * gap_n, tcp_waker + at, tcp_spin_waker + at);
            }
            n_gaps = NGAPS;
            measure_pingpong(samples, first, second, 0, pp_poll, pp_poll_send);
            measure_pingpong(samples, first, second, 1, pp_spin, pp_spin_send);
            n_pp = samples;
            for (int g = 0; g < NLONG; g++)
                measure_wake(long_n, LONG_GAPS_US[g], 0, second, 1, by_long + (size_t)g * long_n,
                             waker_long + (size_t)g * long_n);
            for (int g = 0; g < NLONG; g++)
                measure_wake(long_n, LONG_GAPS_US[g], 0, second, 0,
                             asleep_long + (size_t)g * long_n, asleep_waker + (size_t)g * long_n);
            for (int g = 0; g < NLONG; g++) { /* the waker asleep through the gap, as in a stall */
                size_t at = (size_t)g * long_n;
                measure_wake(2 * long_n, LONG_GAPS_US[g], WAKE_TCP_ALT, second, 0, alt_lat,
                             alt_waker);
                split_alternate(alt_lat, 2 * long_n, tcp_long + at, tcp_long_spin_lat + at);
                split_alternate(alt_waker, 2 * long_n, tcp_long_waker + at,
                                tcp_long_spin_waker + at);
            }
            n_long = NLONG;
            pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
        }
    }
    double t_wake = clock_us(CLOCK_MONOTONIC) - t0;

    int snd, rcv;
    connected_pair(&snd, &rcv);
    printf("{\"tool\": \"qdcosts\", \"version\": 1, \"samples\": %d, \"repeats\": %d, "
           "\"gap_us\": %.1f, \"mss_bytes\": %d, \"wake\": {",
           samples, repeats, gap_us, mss_of(snd));
    print_array("pipe_us", pipe_us, samples);
    printf(", ");
    print_array("futex_us", futex_us, samples);
    printf(", ");
    print_array("pipe_cross_us", cross_us, n_cross);
    printf(", \"cross_by_gap\": [");
    for (int g = 0; g < n_gaps; g++) {
        printf("%s{\"gap_us\": %.1f, ", g ? ", " : "", GAPS_US[g]);
        print_array("lat_us", by_gap + (size_t)g * gap_n, gap_n);
        printf(", ");
        print_array("waker_us", waker_gap + (size_t)g * gap_n, gap_n);
        printf("}");
    }
    printf("], \"tcp_by_gap\": [");
    print_tcp_gaps(GAPS_US, n_gaps, gap_n, tcp_gap, tcp_waker, tcp_spin_lat, tcp_spin_waker);
    printf("], \"tcp_by_long_gap\": [");
    print_tcp_gaps(LONG_GAPS_US, n_long, long_n, tcp_long, tcp_long_waker, tcp_long_spin_lat,
                   tcp_long_spin_waker);
    printf("], \"pingpong\": {\"bytes\": %d, ", PP_BYTES);
    print_array("poll_us", pp_poll, n_pp);
    printf(", ");
    print_array("spin_us", pp_spin, n_pp);
    printf(", ");
    print_array("poll_send_cpu_us", pp_poll_send, n_pp);
    printf(", ");
    print_array("spin_send_cpu_us", pp_spin_send, n_pp);
    printf("}, \"cross_by_long_gap\": [");
    for (int g = 0; g < n_long; g++) {
        printf("%s{\"gap_us\": %.1f, ", g ? ", " : "", LONG_GAPS_US[g]);
        print_array("lat_us", by_long + (size_t)g * long_n, long_n);
        printf(", ");
        print_array("waker_us", waker_long + (size_t)g * long_n, long_n);
        printf(", ");
        print_array("asleep_lat_us", asleep_long + (size_t)g * long_n, long_n);
        printf(", ");
        print_array("asleep_waker_us", asleep_waker + (size_t)g * long_n, long_n);
        printf("}");
    }
    printf("]}, \"send\": [");
    for (int s = 0; s < NSIZES; s++) {
        int n = 0, discarded = 0;
        for (int w = 0; w < 3; w++) send_batch(snd, rcv, SIZES[s], FLAGS[s], buf); /* warm-up */
        while (n < repeats && discarded < 10 * repeats) {
            struct batch b = send_batch(snd, rcv, SIZES[s], FLAGS[s], buf);
            if (!b.ok) {
                discarded++;
                continue;
            }
            cpu[n] = b.cpu_us;
            wall[n] = b.wall_us;
            segs[n] = b.segments;
            n++;
        }
        int calls = BATCH_BYTES / SIZES[s] > 0 ? BATCH_BYTES / SIZES[s] : 1;
        printf("%s{\"bytes\": %d, \"msg_more\": %s, \"calls_per_batch\": %d, \"discarded\": %d, ",
               s ? ", " : "", SIZES[s], FLAGS[s] ? "true" : "false", calls, discarded);
        print_array("cpu_us_per_call", cpu, n);
        printf(", ");
        print_array("wall_us_per_call", wall, n);
        printf(", ");
        print_array("segments_per_call", segs, n);
        printf("}");
    }
    printf("], \"recv\": {\"bytes_per_segment\": %d, \"segments_per_batch\": %d, ", RECV_BYTES,
           RECV_SEGMENTS);
    for (int w = 0; w < 3; w++) recv_batch(snd, rcv, buf); /* warm-up */
    for (int i = 0; i < repeats; i++) {
        struct batch b = recv_batch(snd, rcv, buf);
        cpu[i] = b.cpu_us;
        wall[i] = b.wall_us;
        segs[i] = b.segments;
    }
    print_array("cpu_us_per_segment", cpu, repeats);
    printf(", ");
    print_array("wall_us_per_call", wall, repeats);
    printf(", ");
    print_array("segments", segs, repeats);
    printf("}, \"recv_large\": {\"bytes\": %d, ", BIG);
    for (int w = 0; w < 3; w++) recv_large(snd, rcv, buf); /* warm-up */
    for (int i = 0; i < repeats; i++) {
        struct batch b = recv_large(snd, rcv, buf);
        cpu[i] = b.cpu_us;
        wall[i] = b.wall_us;
        segs[i] = b.segments;
    }
    print_array("cpu_us", cpu, repeats);
    printf(", ");
    print_array("wall_us", wall, repeats);
    printf(", ");
    print_array("segments", segs, repeats);
    printf("}, \"large_cross\": {\"bytes\": %d, ", BIG);
    int n_large = 0;
    double *send_x = calloc((size_t)repeats + 3, sizeof(double));
    double *recv_x = calloc((size_t)repeats + 3, sizeof(double));
    double *segs_x = calloc((size_t)repeats + 3, sizeof(double));
    if (!send_x || !recv_x || !segs_x) fail("calloc large_cross");
    if (second >= 0) { /* three warm-up transfers first, dropped */
        measure_cross(snd, rcv, first, second, repeats + 3, send_x, recv_x, segs_x);
        n_large = repeats;
    }
    print_array("send_cpu_us", send_x + 3, n_large);
    printf(", ");
    print_array("recv_cpu_us", recv_x + 3, n_large);
    printf(", ");
    print_array("segments", segs_x + 3, n_large);
    printf("}, \"ack\": {\"iterations\": %d, \"bytes\": %d, ", ACK_ITERS, ACK_BYTES);
    measure_ack(repeats, buf);
    printf("}, \"timer_arm\": {");
    measure_timer_arm(repeats * 50);
    printf("}, \"timer_fire\": {");
    measure_timer_fire(repeats * 50);
    printf("}, \"loop_bytes\": {\"qd\": %d, \"chunk_ops\": %d, \"warm_ops\": %d, \"sizes\": [",
           LOOP_QD, LOOP_CHUNK, LOOP_WARM);
    if (second >= 0) { /* two CPUs: the server on the first, the client on the second */
        for (int k = 0; k < NLOOP; k++) {
            double *v = calloc((size_t)repeats * 7, sizeof(double));
            if (!v) fail("calloc loop_bytes");
            struct loop srv = {.cpu_us = v, .calls = v + repeats, .thread_us = v + 2 * repeats,
                               .segs = v + 3 * repeats};
            struct loop cli = {.cpu_us = v + 4 * repeats, .calls = v + 5 * repeats,
                               .thread_us = v + 6 * repeats};
            double wall = measure_loop(first, second, LOOP_SIZES[k], repeats, &srv, &cli);
            printf("%s{\"bytes\": %d, \"wall_us_per_op\": %.4f, ", k ? ", " : "", LOOP_SIZES[k],
                   wall);
            /* the seven arrays in v, in the order the struct fields above take them */
            static const char *const names[] = {"send_cpu_us", "send_calls", "server_thread_us",
                                                "server_segments", "recv_cpu_us", "recv_calls",
                                                "client_thread_us"};
            for (int j = 0; j < 7; j++) {
                if (j) printf(", ");
                print_array(names[j], v + (size_t)j * (size_t)repeats, repeats);
            }
            printf("}");
            free(v);
        }
    }
    printf("]}, \"elapsed_s\": {\"wake\": %.3f, \"total\": %.3f}}\n", t_wake * 1e-6,
           (clock_us(CLOCK_MONOTONIC) - t0) * 1e-6); /* us -> s */
    fflush(stdout);
    close(snd);
    close(rcv);
    return 0;
}
