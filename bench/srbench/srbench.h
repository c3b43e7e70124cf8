/* SPDX-License-Identifier: MIT */
/*
 * srbench: RDMA WRITE / READ / SEND bandwidth and SEND/RECV ping-pong latency over rdma_cm
 * (RDMA_PS_TCP, RC), next to a plain TCP socket baseline on the same address measured in the
 * same run. Written against the public <infiniband/verbs.h> and <rdma/rdma_cma.h> only, so it
 * runs on softrdma (LD_LIBRARY_PATH=build/lib) and on rdma-core alike.
 *
 *   server: srbench -s [-a addr] [-p port] [-o]
 *   client: srbench -c -a addr [-p port] [-t write|read|send|lat|all[,...]] [-S sizes]
 *                   [-d seconds] [-T both|rdma|tcp] [-w window] [-P spin_us] [-L size]
 *                   [-M | -K]
 *
 * Protocol. Every measurement uses a fresh RC connection. The client's connect private data
 * says what it measures (operation, size, window) and carries its buffer's address and rkey;
 * the server's accept private data answers with its buffer's address, rkey, receive depth and
 * IRD. Small control messages (12 bytes) travel as SEND/RECV on the same QP: VERIFY (server
 * checks its buffer against a byte pattern), END (end of a SEND stream), CREDIT (the server
 * reposted receives: iWARP has no RNR retry, so a SEND must never find no receive), RESULT.
 * The TCP baseline listens on port+1 of the same address: one connection per measurement, a
 * 16-byte header, then a stream of messages of the same size (or 8-byte ping-pong).
 *
 * Timing. Bandwidth counts payload bytes from the first post (first send()) until the
 * receiver has confirmed the last byte: RESULT for WRITE/SEND (TCP: the server's reply after
 * EOF); the last READ completion (TCP "read": EOF of the server's stream). 1 MB = 10^6 bytes.
 * Latency is the round-trip time of an 8-byte (-L) SEND answered by a SEND of the same size
 * (TCP: write/read of that size), median and 99th percentile in microseconds, after 100
 * warm-up round trips. With -P both sides busy-poll: the CQ (softrdma) or a non-blocking
 * socket (TCP); without it both block (completion channel / recv()).
 *
 * CPU time. Each side takes getrusage(RUSAGE_SELF) (all its threads, so softrdma's engine
 * threads count) before the connection and after its teardown; -K prints both sides' seconds
 * per measurement, the server's on its own stdout.
 *
 * Correctness. WRITE: the first transfer and the last of each stream carry distinct byte
 * patterns that the server verifies. READ: the first and last READ land in zeroed buffers and
 * are verified by the client. SEND: the server verifies the first and last message and the
 * count. Ping-pong: every pong must echo its sequence number. TCP: first and last message.
 */
#ifndef SRBENCH_H
#define SRBENCH_H

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* Errors: the name die() prints first ("srbench", "srbench server", "srbench client"). */
extern const char *g_role;

#include "../bench_util.h"

/* ------------------------------------------------------------------------------------------ */
/* Options and wire formats                                                                   */

enum op { OP_WRITE = 1, OP_READ, OP_SEND, OP_LAT, OP_BYE };
extern const char *const op_name[];

struct srbench_opt {
	const char *addr;
	int port;
	bool server, client, once, markdown;
	unsigned int ops; /* bit per enum op */
	bool do_rdma, do_tcp;
	double duration;
	unsigned int window; /* 0: by size */
	unsigned int spin_us;
	size_t lat_size;
	bool kv; /* -K: one key=value line per measurement instead of the tables */
	size_t sizes[32];
	unsigned int nsizes;
};
extern struct srbench_opt opt;

#define SR_MAGIC 0x53524231u /* "SRB1" */
#define SR_VERSION 1
#define MIN_SIZE 16
#define MAX_SIZE (64u << 20)
#define LAT_MIN 8 /* a ping carries its 8-byte sequence number */
#define LAT_RECVS 16
#define WARMUP 100
#define MAX_SAMPLES 2000000

/* Connect private data (client -> server), 32 bytes, big-endian. */
struct conn_req {
	uint32_t magic;
	uint8_t version, op;
	uint16_t window;
	uint32_t size;
	uint32_t rkey;
	uint64_t addr;
	uint32_t spin_us; /* OP_LAT: the server busy-polls like the client */
	uint32_t rsvd;
};

/* Accept private data (server -> client), 32 bytes, big-endian. */
struct conn_rep {
	uint32_t magic;
	uint8_t version, op;
	uint16_t recv_depth;
	uint32_t size;
	uint32_t rkey;
	uint64_t addr;
	uint32_t ird;
	uint32_t rsvd;
};

/* Control message carried by SEND/RECV, 12 bytes, big-endian. */
enum ctrl_type { CT_VERIFY = 1, CT_RESULT, CT_END, CT_CREDIT };
#define CTRL_LEN 12
#define CTRL_SLOT 64
#define CTRL_RECV_SLOTS 48
#define CTRL_SEND_SLOTS 16

/* TCP baseline header, 20 bytes, big-endian. */
struct tcp_hdr {
	uint32_t magic, op, size, duration_ms, flags;
};
#define TCP_F_BUSY 1u /* ping-pong: both sides spin on non-blocking sockets */

/* ------------------------------------------------------------------------------------------ */
/* RDMA connection plumbing shared by client and server                                       */

enum wr_kind { WK_RCTRL = 1, WK_RDATA, WK_SCTRL, WK_SDATA };
#define WRID(kind, idx) (((uint64_t)(kind) << 48) | (uint64_t)(idx))
#define WR_KIND(id) ((unsigned int)((id) >> 48))
#define WR_IDX(id) ((id) & 0xFFFFFFFFFFFFull)

struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *ctrl; /* CTRL_RECV_SLOTS + CTRL_SEND_SLOTS slots of CTRL_SLOT bytes */
	struct ibv_mr *ctrl_mr;
	uint8_t *data;
	size_t data_len;
	struct ibv_mr *data_mr;
	unsigned int ctrl_send_next;
	unsigned int sends_out; /* signaled control sends not yet completed */
	int cq_events;
	unsigned int spin_us; /* wait_cq busy-polls this long before sleeping */
};

/* ---- common.c ---- */

void *xmalloc(size_t n); /* page-aligned, zeroed; dies when out of memory */
double now_s(void);
/* CPU seconds (user + system) of the whole process, all threads. */
double cpu_s(void);

/* Byte patterns */
enum { SEED_WRITE_FIRST = 1, SEED_WRITE_STREAM, SEED_WRITE_LAST, SEED_READ,
       SEED_SEND_FIRST, SEED_SEND_LAST };
void pattern_fill(void *buf, size_t len, uint32_t seed);
/* Returns -1 if buf holds the pattern, else the first differing offset. */
long pattern_check(const void *buf, size_t len, uint32_t seed);

void conn_setup(struct conn *c, struct rdma_cm_id *id, size_t data_len, unsigned int send_depth,
		unsigned int recv_depth);
void conn_teardown(struct conn *c);
void post_recv(struct conn *c, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey);
void post_ctrl_recv(struct conn *c, unsigned int slot);
void post_send(struct conn *c, uint64_t wr_id, enum ibv_wr_opcode opc, void *addr, uint32_t len,
	       uint32_t lkey, bool signaled, uint64_t raddr, uint32_t rkey);
/* Send a 12-byte control message from the next send slot (always signaled). */
void send_ctrl(struct conn *c, uint32_t type, uint32_t a, uint32_t b);
void parse_ctrl(const void *p, uint32_t *type, uint32_t *a, uint32_t *b);
const char *wc_op_str(enum ibv_wc_opcode o);
/*
 * Wait for at least one completion: poll for up to c->spin_us, then arm the CQ and sleep on
 * the completion channel. Returns the number of completions in wc (1..max). With extra_fd
 * (server: the CM channel) returns 0 when that fd became readable and no completion arrived.
 * Dies after deadline (absolute, now_s() scale; 0 = none).
 */
int wait_cq(struct conn *c, struct ibv_wc *wc, int max, double deadline, int extra_fd,
	    const char *what);
void wc_check(const struct ibv_wc *wc, const char *what);
void expect_cm_event(struct rdma_event_channel *ec, enum rdma_cm_event_type type, double timeout,
		     struct rdma_cm_event **out);
struct rdma_event_channel *make_event_channel(void);
unsigned int window_for(size_t size);
struct addrinfo *resolve(const char *addr, int port, bool passive);

/* ---- server.c ---- */

/* Set to end the server (-o: the client said BYE; the TCP listener failed). */
extern volatile sig_atomic_t g_quit;
int run_server(void);

/* ---- client.c ---- */

/* The server's address (client side). */
extern struct addrinfo *g_dst;
/* The last bandwidth measurement's message count and timed seconds (for -K). */
extern uint64_t g_msgs;
extern double g_secs;

struct lat_result {
	double median, p99; /* µs; < 0: not measured */
	uint64_t n;
};
/*
 * The ping-pong both the verbs and the TCP client run: WARMUP round trips, then as many as
 * opt.duration allows (at most MAX_SAMPLES), each with a new sequence number in the first
 * 8 bytes of ping (filled with SEED_SEND_FIRST first). round_trip sends ping and waits for
 * its echo, dies on a wrong one, and returns when (now_s()) the echo was in; its time from
 * t0 is the sample. Prints the count as "<impl> lat" and returns the statistics.
 */
typedef double (*lat_round_trip)(void *ctx, uint8_t *ping, size_t size, uint64_t seq, double t0);
uint64_t lat_loop(double *samples, uint8_t *ping, size_t size, lat_round_trip round_trip,
		  void *ctx);
struct lat_result lat_report(const char *impl, size_t size, double *samples, uint64_t n);
int run_client(void);

/* ---- tcp.c ---- */

/* The baseline's listener on port+1 of addr and the thread serving it. */
void tcp_server_start(const char *addr, int port);
void tcp_server_stop(void);
double cli_tcp_bw(enum op op, size_t size);
struct lat_result cli_tcp_lat(double *samples);
/* Tells the server that this client is done (a server with -o exits). */
void cli_bye(void);
#endif
