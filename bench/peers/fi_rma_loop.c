/*
 * fi_rma_loop: RMA bandwidth and latency over a libfabric provider (default
 * "tcp", FI_EP_MSG), the libfabric peer of bench/twohost/run-twohost.sh.
 * Written from libfabric's man pages (fi_getinfo(3), fi_endpoint(3),
 * fi_cm(3), fi_rma(3), fi_mr(3), fi_cq(3), fi_eq(3)); not part of librma.
 *
 *   server: fi_rma_loop [-P prov] [-p port] -b <bind addr>
 *   client: fi_rma_loop [-P prov] [-p port] -t write_bw|read_bw|write_lat
 *                       [-s size] [-n iters] [-w window] <server addr>
 *
 * The client chooses the test and tells the server in the first message, so
 * one server process serves exactly one test, as perftest's tools do.
 *  write_bw / read_bw: `iters` fi_write / fi_read of `size` bytes with up to
 *    `window` outstanding; the clock stops after a final message round trip
 *    (the server answers only after everything before it on the connection
 *    arrived), so a write counts only once it reached the server.
 *  write_lat: 8 B (or `size`) fi_write ping-pong; each side busy-polls its
 *    memory for the peer's write and its CQ (which drives the provider).
 *    Reports the median and the average of half the round trip.
 * The client prints one line:
 *   RESULT <test> <size> <iters> <MiB/s> <Mmsg/s>        (bandwidth)
 *   RESULT <test> <size> <iters> <typical us> <avg us>   (latency)
 * MiB = 2^20 bytes, as perftest's and ucx_perftest's MB/s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

enum test_kind { T_WRITE_BW = 1, T_READ_BW = 2, T_WRITE_LAT = 3 };

/* First message of each side: where its buffer is and how to reach it. */
struct hello {
  uint64_t addr;  /* remote address to use in fi_write/fi_read */
  uint64_t key;
  uint64_t size;  /* bytes of the buffer's remotely accessible half */
  uint32_t test;  /* client -> server only */
  uint32_t iters;
};

struct ctx {
  const char* prov;
  const char* port;
  struct fi_info* info;   /* of the connected endpoint */
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_eq* eq;
  struct fid_pep* pep;
  struct fid_ep* ep;
  struct fid_cq* cq;
  struct fid_mr* mr;      /* covers buf: [0, size) remote side, [size, 2*size) local source */
  char* buf;
  size_t size;
  struct fid_mr* msg_mr;  /* covers msgbuf (messages) */
  struct hello msgbuf[2]; /* [0] receive, [1] send */
  long outstanding;       /* posted RMA operations not yet completed */
  int connect_timeout_ms;
};

static void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fi_rma_loop: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void check(int rc, const char* what) {
  if (rc) die("%s failed: %s (%d)", what, fi_strerror(-rc), rc);
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Markers for the contexts of posted operations: completions of messages
 * are told apart from RMA completions by them. */
static char ctx_recv, ctx_send, ctx_rma;

/* Reads completions until none is left; returns how many receives and sends
 * completed (RMA completions are subtracted from c->outstanding). */
static void drain_cq(struct ctx* c, int* recvs, int* sends) {
  struct fi_cq_entry e[16];
  for (;;) {
    ssize_t n = fi_cq_read(c->cq, e, 16);
    if (n == -FI_EAGAIN) return;
    if (n == -FI_EAVAIL) {
      struct fi_cq_err_entry err;
      memset(&err, 0, sizeof err);
      fi_cq_readerr(c->cq, &err, 0);
      die("completion error: %s (prov_errno %d: %s)", fi_strerror(err.err), err.prov_errno,
          fi_cq_strerror(c->cq, err.prov_errno, err.err_data, NULL, 0));
    }
    if (n < 0) die("fi_cq_read: %s", fi_strerror((int)-n));
    for (ssize_t i = 0; i < n; i++) {
      if (e[i].op_context == &ctx_recv) (*recvs)++;
      else if (e[i].op_context == &ctx_send) (*sends)++;
      else c->outstanding--;
    }
  }
}

static void post_recv(struct ctx* c) {
  ssize_t rc;
  while ((rc = fi_recv(c->ep, &c->msgbuf[0], sizeof c->msgbuf[0], fi_mr_desc(c->msg_mr), 0, &ctx_recv)) ==
         -FI_EAGAIN) {
    int r = 0, s = 0;
    drain_cq(c, &r, &s);
  }
  check((int)rc, "fi_recv");
}

/* Sends msgbuf[1] and waits for its completion and for `need_recvs`
 * receives (posted before); a receive may complete while the send waits. */
static void send_then_wait(struct ctx* c, int need_recvs) {
  ssize_t rc;
  int recvs = 0, sends = 0;
  while ((rc = fi_send(c->ep, &c->msgbuf[1], sizeof c->msgbuf[1], fi_mr_desc(c->msg_mr), 0, &ctx_send)) ==
         -FI_EAGAIN)
    drain_cq(c, &recvs, &sends);
  check((int)rc, "fi_send");
  while (recvs < need_recvs || sends < 1) drain_cq(c, &recvs, &sends);
}

static void send_and_wait_recv(struct ctx* c) { send_then_wait(c, 1); }

static void wait_recv(struct ctx* c) {
  int recvs = 0, sends = 0;
  while (recvs < 1) drain_cq(c, &recvs, &sends);
}

static void send_msg(struct ctx* c) { send_then_wait(c, 0); }

static struct fi_info* make_hints(const char* prov) {
  struct fi_info* h = fi_allocinfo();
  if (!h) die("fi_allocinfo failed");
  h->ep_attr->type = FI_EP_MSG;
  h->caps = FI_MSG | FI_RMA;
  h->mode = 0;  /* our contexts are markers, not struct fi_context */
  /* Every mode we can honour; the provider clears what it does not need. */
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  h->fabric_attr->prov_name = strdup(prov);
  return h;
}

static void open_domain(struct ctx* c, struct fi_info* fi) {
  check(fi_fabric(fi->fabric_attr, &c->fabric, NULL), "fi_fabric");
  struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
  check(fi_eq_open(c->fabric, &eq_attr, &c->eq, NULL), "fi_eq_open");
  check(fi_domain(c->fabric, fi, &c->domain, NULL), "fi_domain");
}

/* Opens the endpoint, its CQ and the message buffer's registration, and posts
 * the first receive (before the connection exists, so the peer's first
 * message always finds it). */
static void open_ep(struct ctx* c, struct fi_info* fi) {
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .size = 1024, .wait_obj = FI_WAIT_NONE};
  check(fi_cq_open(c->domain, &cq_attr, &c->cq, NULL), "fi_cq_open");
  check(fi_endpoint(c->domain, fi, &c->ep, NULL), "fi_endpoint");
  check(fi_ep_bind(c->ep, &c->eq->fid, 0), "fi_ep_bind(eq)");
  check(fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
  check(fi_enable(c->ep), "fi_enable");
  if (!c->msg_mr)
    check(fi_mr_reg(c->domain, c->msgbuf, sizeof c->msgbuf, FI_SEND | FI_RECV, 0, 1, 0, &c->msg_mr, NULL),
          "fi_mr_reg(messages)");
  post_recv(c);
}

static void close_ep(struct ctx* c) {
  if (c->ep) fi_close(&c->ep->fid);
  if (c->cq) fi_close(&c->cq->fid);
  c->ep = NULL;
  c->cq = NULL;
}

/* Waits for one event of the given kind on the EQ; dies on an error event. */
static int wait_event(struct ctx* c, uint32_t want, struct fi_eq_cm_entry* entry, int timeout_ms, int soft) {
  uint32_t event = 0;
  ssize_t n = fi_eq_sread(c->eq, &event, entry, sizeof *entry, timeout_ms, 0);
  if (n == -FI_EAVAIL) {
    struct fi_eq_err_entry err;
    memset(&err, 0, sizeof err);
    fi_eq_readerr(c->eq, &err, 0);
    if (soft) return -err.err;
    die("connection error: %s", fi_strerror(err.err));
  }
  if (n == -FI_EAGAIN || n == -FI_ETIMEDOUT) {
    if (soft) return -FI_ETIMEDOUT;
    die("no connection event within %d ms", timeout_ms);
  }
  if (n < 0) die("fi_eq_sread: %s", fi_strerror((int)-n));
  if (event != want) die("unexpected connection event %u (wanted %u)", event, want);
  return 0;
}

static void register_buffer(struct ctx* c, size_t size) {
  c->size = size;
  size_t bytes = 2 * size;
  if (posix_memalign((void**)&c->buf, 4096, bytes)) die("out of memory (%zu bytes)", bytes);
  memset(c->buf, 0, bytes);
  uint64_t key = (c->info->domain_attr->mr_mode & FI_MR_PROV_KEY) ? 0 : 0x5eed;
  check(fi_mr_reg(c->domain, c->buf, bytes, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, key, 0,
                  &c->mr, NULL),
        "fi_mr_reg(buffer)");
}

static void fill_hello(struct ctx* c, uint32_t test, uint32_t iters) {
  struct hello* h = &c->msgbuf[1];
  h->addr = (c->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)c->buf : 0;
  h->key = fi_mr_key(c->mr);
  h->size = c->size;
  h->test = test;
  h->iters = iters;
}

/* ---- the measurements ---------------------------------------------------- */

/* Posts one RMA operation, reading completions while the provider is full. */
static void post_rma(struct ctx* c, int write, const struct hello* peer, size_t size) {
  void* local = c->buf + c->size;  /* the local half */
  ssize_t rc;
  for (;;) {
    rc = write ? fi_write(c->ep, local, size, fi_mr_desc(c->mr), 0, peer->addr, peer->key, &ctx_rma)
               : fi_read(c->ep, local, size, fi_mr_desc(c->mr), 0, peer->addr, peer->key, &ctx_rma);
    if (rc != -FI_EAGAIN) break;
    int r = 0, s = 0;
    drain_cq(c, &r, &s);
  }
  check((int)rc, write ? "fi_write" : "fi_read");
  c->outstanding++;
}

static void client_bw(struct ctx* c, int write, const struct hello* peer, size_t size, long iters, long window) {
  int r = 0, s = 0;
  /* A short warm-up: connections and the provider's buffers settle. */
  for (long i = 0; i < (iters < 16 ? iters : 16); i++) {
    while (c->outstanding >= window) drain_cq(c, &r, &s);
    post_rma(c, write, peer, size);
  }
  while (c->outstanding > 0) drain_cq(c, &r, &s);

  double t0 = now_us();
  for (long i = 0; i < iters; i++) {
    while (c->outstanding >= window) drain_cq(c, &r, &s);
    post_rma(c, write, peer, size);
  }
  while (c->outstanding > 0) drain_cq(c, &r, &s);
  /* Round trip behind the data: the server answers only once everything
   * before its message on this connection was processed. */
  post_recv(c);
  memset(&c->msgbuf[1], 0, sizeof c->msgbuf[1]);
  send_and_wait_recv(c);
  double t = (now_us() - t0) / 1e6;
  printf("RESULT %s %zu %ld %.2f %.4f\n", write ? "write_bw" : "read_bw", size, iters,
         (double)size * (double)iters / t / 1048576.0, (double)iters / t / 1e6);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Ping-pong by RMA WRITE: the first 8 bytes of each side's remote half carry
 * the iteration number; the writer's source is its local half. */
static void ping_pong(struct ctx* c, const struct hello* peer, size_t size, long iters, int client) {
  volatile uint64_t* seen = (volatile uint64_t*)c->buf;
  uint64_t* out = (uint64_t*)(c->buf + c->size);
  double* rtt = client ? calloc((size_t)iters, sizeof *rtt) : NULL;
  const long warm = 100;
  int r = 0, s = 0;
  if (client && !rtt) die("out of memory");
  for (long i = 1; i <= iters + warm; i++) {
    double t0 = now_us();
    if (client) {
      *out = (uint64_t)i;
      post_rma(c, 1, peer, size);
    }
    while (*seen != (uint64_t)i) drain_cq(c, &r, &s);
    if (!client) {
      *out = (uint64_t)i;
      post_rma(c, 1, peer, size);
    }
    /* Our own write's completion: reaped here so the window never fills. */
    while (c->outstanding > 0) drain_cq(c, &r, &s);
    if (client && i > warm) rtt[i - warm - 1] = now_us() - t0;
  }
  if (client) {
    double sum = 0;
    for (long i = 0; i < iters; i++) sum += rtt[i];
    qsort(rtt, (size_t)iters, sizeof *rtt, cmp_double);
    printf("RESULT write_lat %zu %ld %.3f %.3f\n", size, iters, rtt[iters / 2] / 2, sum / (double)iters / 2);
    free(rtt);
  }
}

/* ---- server and client ---------------------------------------------------- */

static void run_server(struct ctx* c, const char* bind) {
  struct fi_info* hints = make_hints(c->prov);
  struct fi_info* fi = NULL;
  check(fi_getinfo(FI_VERSION(1, 17), bind, c->port, FI_SOURCE, hints, &fi), "fi_getinfo(server)");
  open_domain(c, fi);
  check(fi_passive_ep(c->fabric, fi, &c->pep, NULL), "fi_passive_ep");
  check(fi_pep_bind(c->pep, &c->eq->fid, 0), "fi_pep_bind");
  check(fi_listen(c->pep), "fi_listen");
  fprintf(stderr, "fi_rma_loop: %s listening on %s:%s\n", fi->fabric_attr->prov_name, bind, c->port);

  struct fi_eq_cm_entry entry;
  wait_event(c, FI_CONNREQ, &entry, c->connect_timeout_ms, 0);
  c->info = entry.info;
  open_ep(c, c->info);
  check(fi_accept(c->ep, NULL, 0), "fi_accept");
  wait_event(c, FI_CONNECTED, &entry, c->connect_timeout_ms, 0);

  wait_recv(c);  /* the client's hello: the test */
  struct hello peer = c->msgbuf[0];
  register_buffer(c, peer.size);
  fill_hello(c, 0, 0);
  post_recv(c);  /* for the client's final message */
  send_msg(c);
  if (peer.test == T_WRITE_LAT) {
    ping_pong(c, &peer, peer.size, peer.iters, 0);
  } else {
    wait_recv(c);
    memset(&c->msgbuf[1], 0, sizeof c->msgbuf[1]);
    send_msg(c);
  }
  fi_freeinfo(hints);
  fi_freeinfo(fi);
}

static void run_client(struct ctx* c, const char* server, int test, size_t size, long iters, long window) {
  struct fi_info* hints = make_hints(c->prov);
  struct fi_info* fi = NULL;
  /* The server may still be starting: retry refused connections. */
  double deadline = now_us() + c->connect_timeout_ms * 1000.0;
  for (;;) {
    check(fi_getinfo(FI_VERSION(1, 17), server, c->port, 0, hints, &fi), "fi_getinfo(client)");
    if (!c->fabric) open_domain(c, fi);
    c->info = fi;
    open_ep(c, fi);
    check(fi_connect(c->ep, fi->dest_addr, NULL, 0), "fi_connect");
    struct fi_eq_cm_entry entry;
    int rc = wait_event(c, FI_CONNECTED, &entry, c->connect_timeout_ms, 1);
    if (rc == 0) break;
    if (now_us() > deadline) die("cannot connect to %s:%s: %s", server, c->port, fi_strerror(-rc));
    close_ep(c);
    fi_freeinfo(fi);
    usleep(100000);
  }
  register_buffer(c, size);
  fill_hello(c, (uint32_t)test, (uint32_t)iters);
  send_and_wait_recv(c);  /* ours out, the server's in */
  struct hello peer = c->msgbuf[0];
  if (test == T_WRITE_LAT) ping_pong(c, &peer, size, iters, 1);
  else client_bw(c, test == T_WRITE_BW, &peer, size, iters, window);
  fi_freeinfo(hints);
}

static void usage(void) {
  fputs("usage: fi_rma_loop [-P provider] [-p port] -b <bind addr>                  (server)\n"
        "       fi_rma_loop [-P provider] [-p port] -t write_bw|read_bw|write_lat\n"
        "                   [-s size] [-n iters] [-w window] [-T connect_ms] <server addr>  (client)\n",
        stderr);
  exit(2);
}

static long parse_long(const char* opt, const char* s, long lo, long hi) {
  char* end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) die("option %s: '%s' must be an integer in [%ld, %ld]", opt, s, lo, hi);
  return v;
}

int main(int argc, char** argv) {
  struct ctx c;
  memset(&c, 0, sizeof c);
  c.prov = "tcp";
  c.port = "18900";
  c.connect_timeout_ms = 10000;
  const char* bind = NULL;
  int test = 0;
  long size = 8, iters = 1000, window = 64;
  int opt;
  while ((opt = getopt(argc, argv, "P:p:b:t:s:n:w:T:h")) != -1) {
    switch (opt) {
      case 'P': c.prov = optarg; break;
      case 'p': c.port = optarg; break;
      case 'b': bind = optarg; break;
      case 't':
        if (!strcmp(optarg, "write_bw")) test = T_WRITE_BW;
        else if (!strcmp(optarg, "read_bw")) test = T_READ_BW;
        else if (!strcmp(optarg, "write_lat")) test = T_WRITE_LAT;
        else die("-t: unknown test '%s' (write_bw, read_bw, write_lat)", optarg);
        break;
      case 's': size = parse_long("-s", optarg, 8, 1L << 30); break;
      case 'n': iters = parse_long("-n", optarg, 1, 1L << 30); break;
      case 'w': window = parse_long("-w", optarg, 1, 4096); break;
      case 'T': c.connect_timeout_ms = (int)parse_long("-T", optarg, 1, 3600000); break;
      default: usage();
    }
  }
  if (bind && optind == argc) {
    run_server(&c, bind);
  } else if (!bind && optind == argc - 1) {
    if (!test) die("the client needs -t write_bw|read_bw|write_lat");
    run_client(&c, argv[optind], test, (size_t)size, iters, window);
  } else {
    usage();
  }
  fflush(stdout);
  /* Orderly teardown; errors here do not change the measurement. */
  if (c.mr) fi_close(&c.mr->fid);
  if (c.msg_mr) fi_close(&c.msg_mr->fid);
  close_ep(&c);
  if (c.pep) fi_close(&c.pep->fid);
  if (c.eq) fi_close(&c.eq->fid);
  if (c.domain) fi_close(&c.domain->fid);
  if (c.fabric) fi_close(&c.fabric->fid);
  free(c.buf);
  return 0;
}
