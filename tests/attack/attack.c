// SPDX-License-Identifier: MIT
/*
 * Attacker suite (issue 8): a hostile peer that speaks raw TCP and MPA to a victim running
 * on our libraries, and checks after every attack that
 *   - the victim is still running, and still serves good clients (our victim: a ping-pong
 *     over its long-lived good connection; rping -P: a new verified rping client;
 *     rdma_server: the real rdma_client ends 0),
 *   - no byte outside a registered region changed, nor any region the attacker had no
 *     right to write (our victim checks its canaries and patterns),
 *   - the victim answered with the Terminate RFC 5040 / docs/WIRE.md §2.6, §3.4 prescribe
 *     (or refused the MPA Request as §1.4 says), then closed the stream,
 *   - its descriptors are back to the count before the attack (/proc/<pid>/fd).
 *
 * usage: attack_peer ours|rping|rdma_server [case...]   (no case: all of that victim's cases)
 * Environment (from ctest): SR_LIBDIR, SR_TESTBIN, SR_PRELOAD as for the integration tests.
 *
 * The wire encoders here are deliberately our own small ones, not src/iwarp's: an attacker
 * that shared the victim's codec would share its mistakes.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attack_proto.h"

/*
 * Cases that fail on the current main because the fix belongs to another change of issue 8.
 * They still run; a failure prints XFAIL with the reason, a pass prints XPASS (re-enable
 * the case by deleting its line here).
 */
static const struct {
	const char *name;
	const char *why;
} xfails[] = {
	/* none: findings 1, 2, 4 and 5 of issue 8 are fixed (their cases run as any other) */
	{ NULL, NULL },
};

#define SR_MIN_FDS(a, b) ((b) >= 0 && (b) < (a) ? (b) : (a))
#define SAFETY_MS 15000 /* generous bound on every wait for an event */
#define FORGED_STAG 0x7fff0042u
/* Every program the suite starts runs with this soft descriptor limit, the common default
 * (the attacker raises its own for its floods). */
#define VICTIM_NOFILE 1024

enum victim_kind { V_OURS = 1, V_RPING = 2, V_RDMA_SERVER = 4 };

/* RDMAP opcodes and DDP flags (docs/WIRE.md §2.1, §3.2) */
enum { OP_WRITE, OP_RREQ, OP_RRESP, OP_SEND, OP_SEND_INV, OP_SEND_SE, OP_SEND_SE_INV, OP_TERM };
#define DDP_T 0x80
#define DDP_L 0x40
#define DDP_V1 0x01
#define RDMAP_V1 0x40

struct reg {
	uint32_t stag;
	uint64_t addr;
	uint32_t len;
};

struct victim {
	enum victim_kind kind;
	const char *name;
	pid_t pid;
	int in_fd;	 /* our victim's stdin */
	int out_fd;	 /* our victim's stdout */
	char obuf[8192]; /* its unread output */
	size_t ohave;
	pid_t good_pid; /* our victim's good client */
	int port;
	int base_fds;
	char log[512];	/* rping / rdma_server output */
};

struct raw {
	int fd;
	bool crc;
	int conn_no;
	struct reg reg[AV_NREG];
	uint64_t rr_src_off; /* offset in R of the Read Request whose response we check */
};

struct outcome {
	bool term;
	uint8_t layer, etype, ecode;
	uint16_t hdrct;
	uint8_t attached[18]; /* the offending DDP header the Terminate carries (with D) */
	bool closed;	 /* EOF or reset after everything */
	bool after_term; /* FPDUs after the Terminate */
	bool bad_crc;	 /* the victim's own FPDU failed our CRC check */
	bool partial;	 /* the stream ended inside an FPDU */
	int rresp;	 /* Read Response FPDUs seen */
	uint64_t rresp_bytes;
	bool rresp_mismatch; /* Read Response data differs from region R's pattern */
};

struct ctx {
	struct victim *v;
	const char *name;
	char why[256];
	int hold_fd;	/* a socket the attack keeps open through after_checks */
	bool good_done; /* the attack ran the good client itself (rdma_server serves one) */
};

/* false when the victim runs with SOFTRDMA_MPA_CRC=0: then nobody asks for CRC */
static bool want_crc = true;

static const char *libdir, *testbin, *preload;

static int fail(struct ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct ctx *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->why, sizeof(x->why), fmt, ap);
	va_end(ap);
	return -1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- wire encoding, independent of src/iwarp ---- */

static uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
	}
	return ~c;
}

static void be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void be32(uint8_t *p, uint32_t v)
{
	be16(p, (uint16_t)(v >> 16));
	be16(p + 2, (uint16_t)v);
}

static void be64(uint8_t *p, uint64_t v)
{
	be32(p, (uint32_t)(v >> 32));
	be32(p + 4, (uint32_t)v);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* A tagged ULPDU (Write, Read Response): 14-byte header + payload. */
static size_t u_tagged(uint8_t *u, int op, bool last, uint32_t stag, uint64_t to,
		       const void *pay, size_t plen)
{
	u[0] = DDP_T | (last ? DDP_L : 0) | DDP_V1;
	u[1] = RDMAP_V1 | (uint8_t)op;
	be32(u + 2, stag);
	be64(u + 6, to);
	if (plen)
		memcpy(u + 14, pay, plen);
	return 14 + plen;
}

/* An untagged ULPDU: 18-byte header + payload. */
static size_t u_untagged(uint8_t *u, int op, bool last, uint32_t inv, uint32_t qn, uint32_t msn,
			 uint32_t mo, const void *pay, size_t plen)
{
	u[0] = (last ? DDP_L : 0) | DDP_V1;
	u[1] = RDMAP_V1 | (uint8_t)op;
	be32(u + 2, inv);
	be32(u + 6, qn);
	be32(u + 10, msn);
	be32(u + 14, mo);
	if (plen)
		memcpy(u + 18, pay, plen);
	return 18 + plen;
}

static size_t u_rreq(uint8_t *u, uint32_t msn, uint32_t sink_stag, uint64_t sink_to,
		     uint32_t size, uint32_t src_stag, uint64_t src_to)
{
	uint8_t *r = u + u_untagged(u, OP_RREQ, true, 0, 1, msn, 0, NULL, 0);

	be32(r, sink_stag);
	be64(r + 4, sink_to);
	be32(r + 12, size);
	be32(r + 16, src_stag);
	be64(r + 20, src_to);
	return 46;
}

/*
 * Frame ULPDU @u (@n bytes) into an FPDU at @f: length, ULPDU, PAD, CRC (low byte first,
 * docs/WIRE.md §1.6; zeros with CRC off). @len_field overrides ULPDU_Length when >= 0.
 */
static size_t fpdu(const struct raw *r, uint8_t *f, const uint8_t *u, size_t n, int len_field)
{
	size_t pad = (4 - (n + 2) % 4) % 4, t = 2 + n + pad;
	uint32_t c;

	be16(f, (uint16_t)(len_field >= 0 ? len_field : (int)n));
	memmove(f + 2, u, n);
	memset(f + 2 + n, 0, pad);
	c = r->crc ? crc32c(f, t) : 0;
	for (int i = 0; i < 4; i++)
		f[t + i] = (uint8_t)(c >> (8 * i));
	return t + 4;
}

/* ---- sockets ---- */

static int send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t end = now_ms() + SAFETY_MS;

	while (n) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (k > 0) {
			b += k;
			n -= (size_t)k;
		} else if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };

			if (now_ms() > end)
				return -1;
			poll(&pf, 1, 100);
		} else {
			return -1;
		}
	}
	return 0;
}

/* Read exactly @n bytes by @end: 1 done, 0 clean EOF before any byte, -1 error/timeout,
 * -2 EOF inside. */
static int read_exact(int fd, void *p, size_t n, uint64_t end)
{
	uint8_t *b = p;
	size_t got = 0;

	while (got < n) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t t = now_ms();
		ssize_t k;

		if (t >= end)
			return -1;
		if (poll(&pf, 1, (int)(end - t)) <= 0)
			continue;
		k = recv(fd, b + got, n - got, MSG_DONTWAIT);
		if (k > 0)
			got += (size_t)k;
		else if (k == 0 || (k < 0 && errno == ECONNRESET))
			return got ? -2 : 0;
		else if (errno != EAGAIN && errno != EINTR)
			return -1;
	}
	return 1;
}

static int tcp_connect(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(0x7f000001) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Bytes until EOF or reset: how many came, -1 when the victim kept the socket open. */
static long drain_to_eof(int fd, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	static uint8_t sink[65536];
	long total = 0;

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t t = now_ms();
		ssize_t k;

		if (t >= end)
			return -1;
		if (poll(&pf, 1, (int)(end - t)) <= 0)
			continue;
		k = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno == ECONNRESET))
			return total;
		if (k > 0)
			total += k;
		else if (errno != EAGAIN && errno != EINTR)
			return total;
	}
}

/* ---- MPA setup (docs/WIRE.md §1.1 - §1.4) ---- */

#define MPA_M 0x80
#define MPA_C 0x40
#define MPA_R 0x20
#define MPA_ENH 0x10
#define RTR_WRITE 0x8000 /* in the ORD word */

struct mpa_req {
	uint8_t flags;
	uint8_t rev;
	uint16_t ird, ord_word; /* ord_word carries the RTR form bits */
	bool p2p;
	const void *ulp;
	size_t ulp_len;
	int pd_len; /* >= 0: a PD_Length that lies */
};

static size_t mpa_request(uint8_t *f, const struct mpa_req *q)
{
	size_t pd = 0;

	memcpy(f, "MPA ID Req Frame", 16);
	f[16] = q->flags;
	f[17] = q->rev;
	if (q->flags & MPA_ENH) {
		be16(f + 20, (uint16_t)((q->p2p ? 0x8000 : 0) | q->ird));
		be16(f + 22, q->ord_word);
		pd = 4;
	}
	if (q->ulp_len)
		memcpy(f + 20 + pd, q->ulp, q->ulp_len);
	pd += q->ulp_len;
	be16(f + 18, (uint16_t)(q->pd_len >= 0 ? q->pd_len : (int)pd));
	return 20 + pd;
}

struct mpa_rep {
	uint8_t flags, rev;
	uint16_t pd_len;
	uint8_t pd[600];
};

/* 1: a Reply was read; 0: the victim closed without one; -1: timeout or malformed. */
static int mpa_reply(int fd, struct mpa_rep *r)
{
	uint8_t h[20];
	uint64_t end = now_ms() + SAFETY_MS;
	int k = read_exact(fd, h, 20, end);

	if (k <= 0)
		return k == 0 ? 0 : -1;
	if (memcmp(h, "MPA ID Rep Frame", 16))
		return -1;
	r->flags = h[16];
	r->rev = h[17];
	r->pd_len = (uint16_t)(h[18] << 8 | h[19]);
	if (r->pd_len > sizeof(r->pd))
		return -1;
	return read_exact(fd, r->pd, r->pd_len, end) == 1 || r->pd_len == 0 ? 1 : -1;
}

/*
 * A whole connection: rev 2 Request (CRC as asked, P2P offering the Write RTR), the Reply
 * checked, the RTR sent. Our victim is told @nrecv/@ird/@act and answers with its regions.
 */
static int raw_open(struct ctx *x, struct raw *r, int nrecv, int ird, int act, bool crc)
{
	uint8_t ulp[AV_REQ_LEN] = { 'S', 'R', 'A', 'Q', (uint8_t)nrecv, (uint8_t)ird,
				    (uint8_t)act, 0 };
	struct mpa_req q = { .flags = MPA_ENH | (crc ? MPA_C : 0), .rev = 2, .ird = 4,
			     .ord_word = RTR_WRITE | 4, .p2p = true, .pd_len = -1 };
	uint8_t f[128], u[32];
	struct mpa_rep rep;
	size_t n;
	int k;

	memset(r, 0, sizeof(*r));
	if (x->v->kind == V_OURS) {
		q.ulp = ulp;
		q.ulp_len = sizeof(ulp);
	}
	r->fd = tcp_connect(x->v->port);
	if (r->fd < 0)
		return fail(x, "connect: %s", strerror(errno));
	n = mpa_request(f, &q);
	if (send_all(r->fd, f, n))
		return fail(x, "sending the MPA Request");
	k = mpa_reply(r->fd, &rep);
	if (k != 1)
		return fail(x, "no MPA Reply (%d)", k);
	if (rep.flags & MPA_R)
		return fail(x, "the victim rejected a valid Request");
	if (rep.rev != 2 || !(rep.flags & MPA_ENH) || rep.pd_len < 4)
		return fail(x, "Reply rev %u flags %#x pd %u", rep.rev, rep.flags, rep.pd_len);
	/* The Reply must agree to P2P and pick the one RTR form we offered. */
	if (!(rep.pd[0] & 0x80) || (rep.pd[2] & 0xC0) != 0x80 || (rep.pd[0] & 0x40))
		return fail(x, "Reply's RTR choice %02x%02x %02x%02x", rep.pd[0], rep.pd[1],
			    rep.pd[2], rep.pd[3]);
	r->crc = crc || (rep.flags & MPA_C);
	if (x->v->kind == V_OURS) {
		const uint8_t *p = rep.pd + 4;

		if (rep.pd_len < 4 + AV_REPLY_LEN || memcmp(p, AV_REPLY_MAGIC, 4))
			return fail(x, "Reply carries no region list");
		r->conn_no = p[4];
		for (int i = 0; i < AV_NREG; i++) {
			r->reg[i].stag = get32(p + 8 + 16 * i);
			r->reg[i].addr = get64(p + 12 + 16 * i);
			r->reg[i].len = get32(p + 20 + 16 * i);
		}
	}
	n = fpdu(r, f, u, u_tagged(u, OP_WRITE, true, 1, 0, NULL, 0), -1);
	return send_all(r->fd, f, n) ? fail(x, "sending the RTR") : 0;
}

/*
 * Read what the victim sends until it closes: FPDUs are checked (CRC when on), Read
 * Responses counted, the Terminate decoded (docs/WIRE.md §3.4).
 */
static void read_outcome(struct raw *r, struct outcome *o, int ms)
{
	static uint8_t b[65536 + 8];
	uint64_t end = now_ms() + (uint64_t)ms;

	memset(o, 0, sizeof(*o));
	for (;;) {
		size_t n, pad;
		uint32_t c;
		int k = read_exact(r->fd, b, 2, end);

		if (k != 1) {
			o->closed = k == 0;
			o->partial = k == -2;
			return;
		}
		n = (size_t)(b[0] << 8 | b[1]);
		pad = (4 - (n + 2) % 4) % 4;
		k = read_exact(r->fd, b + 2, n + pad + 4, end);
		if (k != 1) {
			o->partial = true;
			return;
		}
		c = (uint32_t)b[2 + n + pad] | (uint32_t)b[3 + n + pad] << 8 |
		    (uint32_t)b[4 + n + pad] << 16 | (uint32_t)b[5 + n + pad] << 24;
		if (r->crc && c != crc32c(b, 2 + n + pad))
			o->bad_crc = true;
		if (o->term)
			o->after_term = true;
		if (n >= 2 && (b[3] & 0x0F) == OP_RRESP && n >= 14) {
			uint64_t to = get64(b + 8);
			const struct reg *R = &r->reg[AV_REG_R];

			o->rresp++;
			o->rresp_bytes += n - 14;
			/* the victim's region R holds byte i = i * 7 + 3; our sink TO starts
			 * at 0 where the request's source offset starts */
			for (size_t i = 0; R->len && i < n - 14; i++)
				if (b[16 + i] != (uint8_t)((r->rr_src_off + to + i) * 7 + 3))
					o->rresp_mismatch = true;
		} else if (n >= 22 && (b[3] & 0x0F) == OP_TERM) {
			o->term = true;
			o->layer = b[20] >> 4;
			o->etype = b[20] & 0x0F;
			o->ecode = b[21];
			o->hdrct = (uint16_t)(b[22] << 8 | b[23]);
			if (n >= 24 + 14)
				memcpy(o->attached, b + 26,
				       n - 24 < sizeof(o->attached) ? n - 24 : sizeof(o->attached));
		}
	}
}

static int send_fpdus(struct ctx *x, struct raw *r, const uint8_t *f, size_t n)
{
	return send_all(r->fd, f, n) ? fail(x, "send: %s", strerror(errno)) : 0;
}

/*
 * Send @n bytes at @f (then our FIN if @fin), read everything the victim sends until it
 * closes, close our end.
 */
static int exchange(struct ctx *x, struct raw *r, const uint8_t *f, size_t n, bool fin,
		    struct outcome *o)
{
	int rc = send_fpdus(x, r, f, n);

	if (!rc) {
		if (fin)
			shutdown(r->fd, SHUT_WR);
		read_outcome(r, o, SAFETY_MS);
	}
	close(r->fd);
	return rc;
}

#define HDRCT_M 0x8000
#define HDRCT_D 0x4000
#define HDRCT_R 0x2000

/*
 * Which headers a Terminate for this cause attaches (docs/WIRE.md §3.4, as siw does): none
 * for MPA errors, version and opcode errors; the DDP header (M, D) for the other DDP errors
 * and RDMAP operation errors; for RDMAP protection errors also the Read Request header (R)
 * when the offending segment was one.
 */
static uint16_t want_hdrct(int layer, int etype, int ecode, bool rreq)
{
	if (layer == 2 || (layer == 1 && etype == 1 && ecode == 0x04) ||
	    (layer == 1 && etype == 2 && ecode == 0x06) ||
	    (layer == 0 && etype == 2 && (ecode == 0x05 || ecode == 0x06)))
		return 0;
	if (layer == 0 && etype == 1 && rreq)
		return HDRCT_M | HDRCT_D | HDRCT_R;
	return HDRCT_M | HDRCT_D;
}

/*
 * The victim must answer with exactly this Terminate, then close. @sent, when not NULL: the
 * offending ULPDU, whose DDP header the Terminate must carry back.
 */
static int expect_term_hdr(struct ctx *x, struct raw *r, int layer, int etype, int ecode,
			   const uint8_t *sent)
{
	struct outcome o;
	uint16_t want;

	read_outcome(r, &o, SAFETY_MS);
	close(r->fd);
	if (o.bad_crc)
		return fail(x, "the victim's FPDU has a bad CRC");
	if (!o.term)
		return fail(x, "no Terminate (stream %s)", o.closed ? "closed" : "left open");
	if (o.layer != layer || o.etype != etype || o.ecode != ecode)
		return fail(x, "Terminate layer %u etype %u ecode %#x, want %d/%d/%#x", o.layer,
			    o.etype, o.ecode, layer, etype, ecode);
	if (o.after_term)
		return fail(x, "FPDUs after the Terminate");
	if (!o.closed)
		return fail(x, "stream not closed after the Terminate");
	if (!sent)
		return 0;
	want = want_hdrct(layer, etype, ecode, (sent[1] & 0x0F) == OP_RREQ);
	if ((o.hdrct & (HDRCT_M | HDRCT_D | HDRCT_R)) != want)
		return fail(x, "Terminate Hdrct %#x, want %#x", o.hdrct, want);
	if ((want & HDRCT_D) && memcmp(o.attached, sent, sent[0] & DDP_T ? 14 : 18))
		return fail(x, "the DDP header in the Terminate is not the one we sent");
	return 0;
}

static int expect_term(struct ctx *x, struct raw *r, int layer, int etype, int ecode)
{
	return expect_term_hdr(x, r, layer, etype, ecode, NULL);
}

/* ---- the victims ---- */

static pid_t spawn(char *const argv[], int *in, int *out, const char *log)
{
	int pi[2] = { -1, -1 }, po[2] = { -1, -1 };
	pid_t pid;

	pid_t parent = getpid();

	if ((in && pipe(pi)) || (out && pipe(po)))
		return -1;
	pid = fork();
	if (pid == 0) {
		char ld[512], asan[256];
		struct rlimit nf;

		/* a victim never outlives this program, however it ends (a failed check's early
		 * return, ctest's SIGKILL at its timeout): the kernel kills it then */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(127);
		/* the common soft limit (the attacker raised its own for its floods) */
		if (getrlimit(RLIMIT_NOFILE, &nf) == 0 && nf.rlim_max >= VICTIM_NOFILE) {
			nf.rlim_cur = VICTIM_NOFILE;
			setrlimit(RLIMIT_NOFILE, &nf);
		}
		snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", libdir);
		putenv(ld);
		if (preload && *preload) {
			setenv("LD_PRELOAD", preload, 1);
		}
		snprintf(asan, sizeof(asan), "%s:detect_leaks=0",
			 getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "");
		setenv("ASAN_OPTIONS", asan, 1);
		if (in) {
			dup2(pi[0], 0);
			close(pi[1]);
		}
		if (out) {
			dup2(po[1], 1);
			close(po[0]);
		} else if (log) {
			int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
		}
		/* nothing of ours leaks in: the floods' sockets would exceed its limit */
		close_range(3, ~0u, 0);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (in) {
		close(pi[0]);
		*in = pi[1];
	}
	if (out) {
		close(po[1]);
		*out = po[0];
	}
	return pid;
}

static int count_fds(pid_t pid)
{
	char p[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	d = opendir(p);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static bool alive(pid_t pid)
{
	int st;

	return pid > 0 && waitpid(pid, &st, WNOHANG) == 0;
}

static void victim_reaped(struct victim *v)
{
	if (v->pid > 0 && !alive(v->pid))
		v->pid = 0; /* reaped: never signal a pid that may be reused */
}

/* The next line of our victim's output that starts with @prefix (others are echoed). */
static int victim_line(struct victim *v, const char *prefix, char *line, size_t cap, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	snprintf(line, cap, "(nothing within %d ms)", ms);
	for (;;) {
		char *nl = memchr(v->obuf, '\n', v->ohave);

		if (nl) {
			size_t len = (size_t)(nl - v->obuf);
			bool match = !strncmp(v->obuf, prefix, strlen(prefix));

			if (match) {
				snprintf(line, cap, "%.*s", (int)len, v->obuf);
			}
			v->ohave -= len + 1;
			memmove(v->obuf, nl + 1, v->ohave);
			if (match)
				return 0;
			continue;
		}
		struct pollfd pf = { .fd = v->out_fd, .events = POLLIN };
		uint64_t t = now_ms();
		ssize_t k;

		if (t >= end || v->ohave == sizeof(v->obuf))
			return -1;
		if (poll(&pf, 1, (int)(end - t)) <= 0)
			continue;
		k = read(v->out_fd, v->obuf + v->ohave, sizeof(v->obuf) - v->ohave);
		if (k <= 0)
			return -1;
		v->ohave += (size_t)k;
	}
}

static int victim_cmd(struct victim *v, const char *cmd, const char *prefix, char *line,
		      size_t cap)
{
	size_t n = strlen(cmd);

	if (write(v->in_fd, cmd, n) != (ssize_t)n || write(v->in_fd, "\n", 1) != 1)
		return -1;
	return victim_line(v, prefix, line, cap, 2 * SAFETY_MS);
}

/* Is something listening on 127.0.0.1:@port? (/proc/net/tcp: state 0A) */
static bool listening(int port)
{
	char l[256], want[32];
	FILE *f = fopen("/proc/net/tcp", "r");
	bool found = false;

	if (!f)
		return false;
	snprintf(want, sizeof(want), ":%04X ", port);
	while (!found && fgets(l, sizeof(l), f))
		found = strstr(l, want) && strstr(l, want) < l + 30 && strstr(l, " 0A ");
	fclose(f);
	return found;
}

static int run_wait(char *const argv[], const char *log, int ms, int *status)
{
	pid_t pid = spawn(argv, NULL, NULL, log);
	uint64_t end = now_ms() + (uint64_t)ms;

	while (waitpid(pid, status, WNOHANG) == 0) {
		if (now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			return -1;
		}
		usleep(10000);
	}
	return 0;
}

static int good_client(struct ctx *x);

static int victim_start(struct victim *v)
{
	char line[128], port[16];

	v->ohave = 0;
	if (v->kind == V_OURS) {
		char bin[512];
		char *argv[] = { bin, "server", NULL };

		snprintf(bin, sizeof(bin), "%s/attack_victim", testbin);
		v->pid = spawn(argv, &v->in_fd, &v->out_fd, NULL);
		if (v->pid < 0 || victim_line(v, "PORT ", line, sizeof(line), SAFETY_MS))
			return -1;
		v->port = atoi(line + 5);
		snprintf(port, sizeof(port), "%d", v->port);
		char *cargv[] = { bin, "client", port, NULL };

		v->good_pid = spawn(cargv, NULL, NULL, NULL);
		/* the good client connects: wait for its first ping-pong */
		for (uint64_t end = now_ms() + SAFETY_MS;;) {
			if (victim_cmd(v, "ping", "PONG", line, sizeof(line)))
				return -1;
			if (!strncmp(line, "PONG ok", 7))
				break;
			if (now_ms() > end) {
				fprintf(stderr, "good connection: %s\n", line);
				return -1;
			}
			usleep(20000);
		}
	} else {
		char p[16];
		char *rping[] = { "rping", "-s", "-P", "-a", "127.0.0.1", "-p", p, NULL };
		char *srv[] = { "rdma_server", "-s", "127.0.0.1", "-p", p, NULL };

		int tries = 0;

		/* a port somebody else holds makes the program exit: try another */
		do {
			if (++tries > 5)
				return -1;
			if (!v->port || tries > 1)
				v->port = 20000 + (int)((unsigned int)rand() % 20000);
			snprintf(p, sizeof(p), "%d", v->port);
			v->pid = spawn(v->kind == V_RPING ? rping : srv, NULL, NULL, v->log);
			for (uint64_t end = now_ms() + SAFETY_MS; !listening(v->port);) {
				if (now_ms() > end)
					return -1;
				if (!alive(v->pid)) {
					v->pid = 0;
					break;
				}
				usleep(20000);
			}
		} while (!v->pid);
	}
	v->base_fds = count_fds(v->pid);
	if (v->kind == V_RPING) {
		/* the first connection opens the library's lasting descriptors (engine, netlink):
		 * the baseline is what stays after one good client, the least seen in 500 ms */
		struct ctx x = { .v = v };

		if (good_client(&x)) {
			fprintf(stderr, "first good client: %s\n", x.why);
			return -1;
		}
		v->base_fds = count_fds(v->pid);
		for (uint64_t end = now_ms() + 500; now_ms() < end; usleep(20000))
			v->base_fds = SR_MIN_FDS(v->base_fds, count_fds(v->pid));
	}
	return 0;
}

static void victim_stop(struct victim *v)
{
	int st;

	if (v->pid > 0) {
		kill(v->pid, SIGTERM);
		waitpid(v->pid, &st, 0);
	}
	if (v->good_pid > 0) {
		kill(v->good_pid, SIGTERM);
		waitpid(v->good_pid, &st, 0);
	}
	if (v->kind == V_OURS) {
		close(v->in_fd);
		close(v->out_fd);
	}
	v->pid = v->good_pid = 0;
}

/* The log of rping / rdma_server and their clients: printed if @failed, then removed (the
 * test leaves no file behind). */
static void show_log(struct victim *v, bool failed)
{
	char l[512];
	FILE *f;

	if (!v->log[0])
		return;
	f = failed ? fopen(v->log, "r") : NULL;
	if (f) {
		printf("--- victim output (%s)\n", v->log);
		while (fgets(l, sizeof(l), f))
			fputs(l, stdout);
		fclose(f);
	}
	unlink(v->log);
}

/* A real client of the victim program through our libraries. */
static int good_client(struct ctx *x)
{
	char p[16];
	char *rping[] = { "rping", "-c", "-a", "127.0.0.1", "-p", p, "-C", "2", "-V", NULL };
	char *cli[] = { "rdma_client", "-s", "127.0.0.1", "-p", p, NULL };
	int st;

	snprintf(p, sizeof(p), "%d", x->v->port);
	if (run_wait(x->v->kind == V_RPING ? rping : cli, x->v->log, 2 * SAFETY_MS, &st))
		return fail(x, "the good client hung");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return fail(x, "the good client failed (status %#x), see %s", st, x->v->log);
	return 0;
}

/* Descriptors back to the count before the attack, within SAFETY_MS. */
static int fds_back(struct ctx *x)
{
	int n = -1;

	for (uint64_t end = now_ms() + SAFETY_MS; now_ms() < end; usleep(20000)) {
		n = count_fds(x->v->pid);
		if (n >= 0 && n <= x->v->base_fds)
			return 0;
	}
	return fail(x, "victim holds %d fds, %d before the attack", n, x->v->base_fds);
}

/* The victim ends by itself within SAFETY_MS (then reaped: pid 0), else -1. */
static int wait_exit(struct victim *v, int *st)
{
	for (uint64_t end = now_ms() + SAFETY_MS; waitpid(v->pid, st, WNOHANG) == 0;) {
		if (now_ms() > end)
			return -1;
		usleep(20000);
	}
	v->pid = 0;
	return 0;
}

/* Everything every case must leave true (see the top of the file). */
static int after_checks(struct ctx *x, bool victim_exits)
{
	struct victim *v = x->v;
	char line[256];

	if (v->kind == V_RDMA_SERVER) {
		int st;

		if (!victim_exits) {
			if (!x->good_done && good_client(x))
				return -1;
			/* rdma_server serves one client and ends: it must end 0 */
			if (wait_exit(v, &st))
				return fail(x, "rdma_server did not end after its client");
			return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 :
				fail(x, "rdma_server ended with status %#x", st);
		}
		/* one-shot: the attacked rdma_server must end by itself, never by a signal */
		if (wait_exit(v, &st))
			return fail(x, "rdma_server still running %d ms after the attack",
				    SAFETY_MS);
		if (!WIFEXITED(st))
			return fail(x, "rdma_server died of signal %d", WTERMSIG(st));
		return 0;
	}
	if (!alive(v->pid))
		return fail(x, "the victim died");
	if (v->kind == V_RPING)
		return good_client(x) ?: fds_back(x);
	for (uint64_t end = now_ms() + SAFETY_MS;;) {
		if (victim_cmd(v, "conns", "CONNS", line, sizeof(line)))
			return fail(x, "victim does not answer");
		if (!strcmp(line, "CONNS 0"))
			break;
		if (now_ms() > end)
			return fail(x, "attacker connection still open in the victim: %s", line);
		usleep(20000);
	}
	if (fds_back(x))
		return -1;
	if (victim_cmd(v, "ping", "PONG", line, sizeof(line)) || strncmp(line, "PONG ok", 7))
		return fail(x, "good connection: %s (the good client is %s)", line,
			    alive(v->good_pid) ? "running" : "gone");
	if (victim_cmd(v, "check", "CHECK", line, sizeof(line)) || strcmp(line, "CHECK ok"))
		return fail(x, "memory: %s", line);
	return 0;
}

/* ---- the attacks ---- */

static uint8_t U[70000], F[140000];
static const uint8_t PAY[64] = "attacker bytes attacker bytes attacker bytes attacker bytes!!!";

#define OPEN(nrecv, ird, act, crc)                          \
	do {                                                \
		if (raw_open(x, &r, nrecv, ird, act, crc)) { \
			close(r.fd);                        \
			return -1;                          \
		}                                           \
	} while (0)

/* Send the @n bytes of FPDUs in F, then expect that Terminate. */
static int send_term(struct ctx *x, struct raw *r, size_t n, int layer, int etype, int ecode)
{
	if (send_fpdus(x, r, F, n)) {
		close(r->fd);
		return -1;
	}
	return expect_term(x, r, layer, etype, ecode);
}

/*
 * One segment that the victim must answer with one Terminate (layer/etype/ecode), then
 * close. Most attacks are one of these: the table below says what is forged.
 */
struct seg_attack {
	int op;		   /* RDMAP opcode: tagged (Write, Read Response), untagged, Read Request */
	int reg;	   /* whose STag (sink or source): an enum av_region, or -1: forged */
	bool from_end;	   /* TO counts from the region's end instead of its start */
	int64_t to_delta;  /* TO = region address (or end) + to_delta ... */
	uint64_t to_abs;   /* ... or this, when not 0 */
	uint32_t qn, msn, mo; /* msn 0: 1 */
	uint32_t plen;	   /* payload bytes, for a Read Request its size; 0: 8 (Send), else 16 */
	uint32_t extra;	   /* bytes appended behind a Read Request header */
	bool bad_len;	   /* ULPDU_Length is len_field, not the true one */
	int len_field;
	uint8_t ctrl[2];   /* if not 0: replaces the DDP / RDMAP control byte */
	bool no_recv;	   /* the victim posts no receive (else one) */
	int layer, etype, ecode;
};

#define T(reg_, ...) .op = OP_WRITE, .reg = reg_, __VA_ARGS__
#define RR(reg_, ...) .op = OP_RRESP, .reg = reg_, __VA_ARGS__
#define RQ(reg_, ...) .op = OP_RREQ, .reg = reg_, __VA_ARGS__
#define S(...) .op = OP_SEND, .reg = -1, __VA_ARGS__

static const struct seg_attack
	s_write_forged_stag = { T(-1, .layer = 1, .etype = 1, .ecode = 0x00) },
	s_write_other_pd = { T(AV_REG_B, .layer = 1, .etype = 1, .ecode = 0x02) },
	s_write_oob_end = { T(AV_REG_W, .from_end = true, .to_delta = -8, .layer = 1, .etype = 1,
			      .ecode = 0x01) },
	s_write_oob_before = { T(AV_REG_W, .to_delta = -8, .layer = 1, .etype = 1, .ecode = 0x01) },
	/* TO + length wraps the 64-bit space: it must not pass a bounds check by overflow */
	s_write_to_wrap = { T(AV_REG_W, .to_abs = UINT64_MAX - 7, .layer = 1, .etype = 1,
			      .ecode = 0x03) },
	/* inside the 64-bit space, but a naive "addr + len" check would overflow */
	s_write_to_huge = { T(AV_REG_W, .to_delta = INT64_MIN, .layer = 1, .etype = 1,
			      .ecode = 0x01) },
	s_write_no_rights = { T(AV_REG_N, .layer = 0, .etype = 1, .ecode = 0x02) },
	s_write_read_only = { T(AV_REG_R, .layer = 0, .etype = 1, .ecode = 0x02) },
	/* the receive buffers' region has no remote rights either */
	s_write_recv_buf = { T(AV_REG_RB, .layer = 0, .etype = 1, .ecode = 0x02) },
	s_unsolicited_rresp = { RR(AV_REG_W, .layer = 1, .etype = 1, .ecode = 0x00) },
	s_ulpdu_zero = { T(-1, .bad_len = true, .len_field = 0, .layer = 2, .etype = 0,
			   .ecode = 0x03) },
	/* ULPDU_Length 10 for a tagged header of 14: the payload length would be negative */
	s_ulpdu_short = { T(-1, .bad_len = true, .len_field = 10, .layer = 2, .etype = 0,
			    .ecode = 0x03) },
	s_bad_ddp_version = { T(-1, .ctrl = { DDP_T | DDP_L | 2, 0 }, .layer = 1, .etype = 1,
				.ecode = 0x04) },
	s_read_forged_stag = { RQ(-1, .layer = 0, .etype = 1, .ecode = 0x00) },
	s_read_no_rights = { RQ(AV_REG_W, .layer = 0, .etype = 1, .ecode = 0x02) },
	s_read_other_pd = { RQ(AV_REG_B, .layer = 0, .etype = 1, .ecode = 0x03) },
	s_read_oob = { RQ(AV_REG_R, .from_end = true, .to_delta = -8, .layer = 0, .etype = 1,
			  .ecode = 0x01) },
	/* a Read Request's ULPDU must be exactly 46 bytes */
	s_rreq_len = { RQ(-1, .extra = 8, .layer = 2, .etype = 0, .ecode = 0x03) },
	s_send_no_recv = { S(.no_recv = true, .layer = 1, .etype = 2, .ecode = 0x02) },
	/* longer than the posted receive (64 bytes here, 16 in rping and rdma_server) */
	s_send_too_long = { S(.plen = 200, .layer = 1, .etype = 2, .ecode = 0x05) },
	s_send_bad_msn = { S(.msn = 5, .layer = 1, .etype = 2, .ecode = 0x03) },
	s_send_bad_qn = { S(.qn = 3, .layer = 1, .etype = 2, .ecode = 0x01) },
	s_send_bad_mo = { S(.mo = 100, .layer = 1, .etype = 2, .ecode = 0x04) },
	s_bad_rdmap_version = { S(.ctrl = { DDP_L | DDP_V1, 0x80 | OP_SEND }, .layer = 0,
				  .etype = 2, .ecode = 0x05) },
	s_bad_opcode = { S(.ctrl = { DDP_L | DDP_V1, RDMAP_V1 | 0x9 }, .layer = 0, .etype = 2,
			   .ecode = 0x06) };

static int seg_case(struct ctx *x, const struct seg_attack *a)
{
	static uint8_t pay[256];
	struct raw r;
	uint32_t stag;
	uint64_t to;
	size_t n;
	uint32_t plen = a->plen ? a->plen : a->op == OP_SEND ? 8 : 16, msn = a->msn ? a->msn : 1;
	uint8_t sent[18];

	memset(pay, 0x5A, sizeof(pay));
	OPEN(a->no_recv ? 0 : 1, 1, 0, want_crc);
	stag = a->reg < 0 ? FORGED_STAG : r.reg[a->reg].stag;
	to = a->reg < 0 ? 0 : r.reg[a->reg].addr + (a->from_end ? r.reg[a->reg].len : 0);
	to = a->to_abs ? a->to_abs : to + (uint64_t)a->to_delta;
	if (a->op == OP_RREQ) {
		n = u_rreq(U, msn, 0x1234, 0, plen, stag, to);
		memset(U + n, 0, a->extra);
		n += a->extra;
	} else if (a->op == OP_WRITE || a->op == OP_RRESP) {
		n = u_tagged(U, a->op, true, stag, to, pay, plen);
	} else {
		n = u_untagged(U, a->op, true, 0, a->qn, msn, a->mo, pay, plen);
	}
	if (a->ctrl[0])
		memcpy(U, a->ctrl, 2);
	memcpy(sent, U, sizeof(sent));
	n = fpdu(&r, F, U, n, a->bad_len ? a->len_field : -1);
	if (send_fpdus(x, &r, F, n)) {
		close(r.fd);
		return -1;
	}
	return expect_term_hdr(x, &r, a->layer, a->etype, a->ecode, sent);
}

/* Source TO + size wraps: RFC 5040 has a code for it, we report it as out of bounds. */
static int a_read_to_wrap(struct ctx *x)
{
	struct raw r;
	struct outcome o;

	OPEN(1, 1, 0, want_crc);
	size_t n = fpdu(&r, F, U, u_rreq(U, 1, 0x1234, 0, 16, r.reg[AV_REG_R].stag,
					 UINT64_MAX - 7), -1);

	if (exchange(x, &r, F, n, false, &o))
		return -1;
	if (!o.term || o.layer != 0 || o.etype != 1 || (o.ecode != 0x01 && o.ecode != 0x04))
		return fail(x, "Terminate %d %u/%u/%#x, want 0/1/0x01 or 0x04", o.term, o.layer,
			    o.etype, o.ecode);
	return o.closed ? 0 : fail(x, "stream not closed");
}

/* A legal Read: the data that comes back is region R's, exactly the size asked. */
static int a_read_legal(struct ctx *x)
{
	struct raw r;
	struct outcome o;

	OPEN(1, 1, 0, want_crc);
	size_t n = fpdu(&r, F, U, u_rreq(U, 1, 0x1234, 0, 200000, r.reg[AV_REG_R].stag,
					 r.reg[AV_REG_R].addr + 1000), -1);

	r.rr_src_off = 1000;
	if (exchange(x, &r, F, n, true, &o))
		return -1;
	if (o.rresp_bytes != 200000 || o.rresp_mismatch || o.bad_crc)
		return fail(x, "Read Response: %llu bytes, data %s, crc %s",
			    (unsigned long long)o.rresp_bytes, o.rresp_mismatch ? "wrong" : "ok",
			    o.bad_crc ? "bad" : "ok");
	return 0;
}

/*
 * IRD 1 and two Read Requests of all of R (32 MiB) back to back, not reading: the first
 * response cannot have left when the second request arrives.
 */
static int a_read_over_ird(struct ctx *x)
{
	struct raw r;
	struct outcome o;

	OPEN(1, 1, 0, want_crc);
	struct reg *R = &r.reg[AV_REG_R];
	size_t n = fpdu(&r, F, U, u_rreq(U, 1, 0x1234, 0, R->len, R->stag, R->addr), -1);

	n += fpdu(&r, F + n, U, u_rreq(U, 2, 0x1234, 0, R->len, R->stag, R->addr), -1);
	if (exchange(x, &r, F, n, false, &o))
		return -1;
	if (!o.term || o.layer != 0 || o.etype != 2 || o.ecode != 0x07)
		return fail(x, "Terminate %d %u/%u/%#x after %llu response bytes, want 0/2/0x07",
			    o.term, o.layer, o.etype, o.ecode,
			    (unsigned long long)o.rresp_bytes);
	if (o.rresp_mismatch || o.bad_crc)
		return fail(x, "Read Response data or CRC wrong");
	return o.closed ? 0 : fail(x, "stream not closed");
}

/* The same, cut into segments: the overflow is in the second one. */
static int a_send_too_long_seg(struct ctx *x)
{
	struct raw r;

	OPEN(1, 1, 0, want_crc);
	size_t n = fpdu(&r, F, U, u_untagged(U, OP_SEND, false, 0, 0, 1, 0, PAY, 40), -1);

	n += fpdu(&r, F + n, U, u_untagged(U, OP_SEND, true, 0, 0, 1, 40, PAY, 40), -1);
	return send_term(x, &r, n, 1, 2, 0x05);
}

/*
 * Send with Invalidate naming region N, which has no remote rights and was never meant to
 * be invalidated remotely: refused with a Terminate RDMAP "cannot invalidate" (0x09).
 */
static int a_send_inv_foreign(struct ctx *x)
{
	struct raw r;
	struct outcome o;

	OPEN(2, 1, 0, want_crc);
	size_t n = fpdu(&r, F, U, u_untagged(U, OP_SEND_INV, true, r.reg[AV_REG_N].stag, 0, 1,
					     0, PAY, 8), -1);

	if (exchange(x, &r, F, n, true, &o))
		return -1;
	if (!o.term || o.layer != 0 || o.ecode != 0x09)
		return fail(x, "no Terminate 0/x/0x09 (got %d %u/%u/%#x): the STag was invalidated",
			    o.term, o.layer, o.etype, o.ecode);
	return 0;
}

/*
 * Zero-length untagged segments without Last are part of one message: they must not each
 * take a receive. Five of them, then the last segment, then a second message: two
 * receives posted, both messages complete, no Terminate.
 */
static int a_send_zero_nolast(struct ctx *x)
{
	char line[128];
	struct raw r;
	size_t n = 0;

	OPEN(2, 1, 0, want_crc);
	for (int i = 0; i < 5; i++)
		n += fpdu(&r, F + n, U, u_untagged(U, OP_SEND, false, 0, 0, 1, 0, NULL, 0), -1);
	n += fpdu(&r, F + n, U, u_untagged(U, OP_SEND, true, 0, 0, 1, 0, PAY, 8), -1);
	n += fpdu(&r, F + n, U, u_untagged(U, OP_SEND, true, 0, 0, 2, 0, PAY, 9), -1);
	if (send_fpdus(x, &r, F, n))
		return -1;
	for (int want = 8; want <= 9; want++) {
		char exp[64];

		char pre[32];

		snprintf(exp, sizeof(exp), "RECV %d 0 %d", r.conn_no, want);
		snprintf(pre, sizeof(pre), "RECV %d ", r.conn_no);
		if (victim_line(x->v, pre, line, sizeof(line), SAFETY_MS) || strcmp(line, exp)) {
			close(r.fd);
			return fail(x, "victim reported '%s', want '%s'", line, exp);
		}
	}
	close(r.fd);
	return 0;
}

/* ULPDU_Length longer than the segment sent: the next FPDU is eaten and the CRC fails. */
static int a_ulpdu_long(struct ctx *x)
{
	struct raw r;

	OPEN(2, 1, 0, want_crc);
	size_t n = u_untagged(U, OP_SEND, true, 0, 0, 1, 0, PAY, 8);

	n = fpdu(&r, F, U, n, (int)n + 12);
	n += fpdu(&r, F + n, U, u_untagged(U, OP_SEND, true, 0, 0, 2, 0, PAY, 8), -1);
	return send_term(x, &r, n, 2, 0, 0x02);
}

static int a_bad_crc(struct ctx *x)
{
	struct raw r;

	OPEN(1, 1, 0, want_crc);
	size_t n = fpdu(&r, F, U, u_untagged(U, OP_SEND, true, 0, 0, 1, 0, PAY, 8), -1);

	F[n - 1] ^= 0x5A;
	return send_term(x, &r, n, 2, 0, 0x02);
}

/* Without CRC (neither side asks: SOFTRDMA_MPA_CRC=0 in the victim) garbage in the CRC
 * field is ignored, but every other check still holds. */
static int a_nocrc_forged(struct ctx *x)
{
	struct raw r;

	OPEN(1, 1, 0, false);
	if (want_crc || r.crc)
		return fail(x, "victim asked for CRC although SOFTRDMA_MPA_CRC=0");
	size_t n = fpdu(&r, F, U, u_tagged(U, OP_WRITE, true, FORGED_STAG, 0, PAY, 16), -1);

	memcpy(F + n - 4, "\xde\xad\xbe\xef", 4);
	return send_term(x, &r, n, 1, 1, 0x00);
}

/* A Terminate from the peer ends the stream; no Terminate comes back. */
static int a_peer_terminate(struct ctx *x)
{
	struct raw r;
	struct outcome o;

	OPEN(1, 1, 0, want_crc);
	size_t n = u_untagged(U, OP_TERM, true, 0, 2, 1, 0, "\x02\x00\x00\x00", 4);

	n = fpdu(&r, F, U, n, -1);
	if (exchange(x, &r, F, n, false, &o))
		return -1;
	if (o.term)
		return fail(x, "a Terminate answered a Terminate");
	return o.closed ? 0 : fail(x, "stream not closed after our Terminate");
}

/*
 * Half an FPDU with a valid header (a Write into W; a Send into the posted receive where we
 * know no region), then FIN: nothing but the bytes sent may be placed.
 */
static int a_truncated(struct ctx *x)
{
	struct raw r;
	struct outcome o;

	OPEN(1, 1, 0, want_crc);
	size_t n = x->v->kind == V_OURS ?
			   fpdu(&r, F, U, u_tagged(U, OP_WRITE, true, r.reg[AV_REG_W].stag,
						   r.reg[AV_REG_W].addr, PAY, 64), -1) :
			   fpdu(&r, F, U, u_untagged(U, OP_SEND, true, 0, 0, 1, 0, PAY, 16), -1);

	if (exchange(x, &r, F, n / 2, true, &o))
		return -1;
	/* a Terminate "TCP connection lost" is allowed, nothing else */
	if (o.term && (o.layer != 2 || o.etype != 0 || o.ecode != 0x01))
		return fail(x, "Terminate %u/%u/%#x for a lost connection", o.layer, o.etype,
			    o.ecode);
	return o.closed ? 0 : fail(x, "stream not closed after our FIN");
}

/*
 * A Write FPDU into W whose second half arrives after the victim deregistered W: not one
 * more byte may land (the victim compares W with its snapshot at ibv_dereg_mr).
 */
static int a_dereg_midwrite(struct ctx *x)
{
	static uint8_t big[60000];
	char line[128];
	struct raw r;
	struct outcome o;

	memset(big, 0xEE, sizeof(big));
	OPEN(1, 1, 0, want_crc);
	struct reg *w = &r.reg[AV_REG_W];
	size_t n = fpdu(&r, F, U, u_tagged(U, OP_WRITE, true, w->stag, w->addr, big, w->len), -1);

	if (send_fpdus(x, &r, F, 16 + 1000))
		return -1;
	/* the victim has read these bytes (or they wait in its socket): either way they
	 * precede the deregistration, and whatever is still unplaced must stay so */
	if (victim_cmd(x->v, "dereg", "DEREG", line, sizeof(line)) || strcmp(line, "DEREG ok"))
		return fail(x, "dereg: %s", line);
	/* The victim cuts the Write off (a Terminate for the dead STag, then the close), so
	 * the rest may meet a closed stream: that is the expected end, not an error. */
	if (send_all(r.fd, F + 16 + 1000, n - 16 - 1000) && errno != EPIPE && errno != ECONNRESET)
		return fail(x, "send: %s", strerror(errno));
	shutdown(r.fd, SHUT_WR);
	read_outcome(&r, &o, SAFETY_MS);
	close(r.fd);
	if (o.term && (o.layer != 1 || o.etype != 1 || o.ecode != 0x00))
		return fail(x, "Terminate %u/%u/0x%02x, want DDP 1/1/0x00 (invalid STag)",
			    o.layer, o.etype, o.ecode);
	return 0; /* after_checks compares W with the snapshot */
}

/*
 * A peer that never reads: a 32 MiB Read fills the socket both ways, then a forged Write
 * makes the victim send a Terminate into the full socket. Meanwhile the good connection
 * must keep working (shared engine thread), and the victim must close the stream.
 */
static int a_no_read(struct ctx *x)
{
	char line[128];
	struct raw r;

	OPEN(1, 1, 0, want_crc);
	struct reg *R = &r.reg[AV_REG_R];
	size_t n = fpdu(&r, F, U, u_rreq(U, 1, 0x1234, 0, R->len, R->stag, R->addr), -1);

	if (send_fpdus(x, &r, F, n))
		return -1;
	if (victim_cmd(x->v, "ping", "PONG", line, sizeof(line)) || strncmp(line, "PONG ok", 7))
		return fail(x, "good connection while the attacker does not read: %s", line);
	printf("  ping while a peer does not read: %s us\n", line + 8);
	n = fpdu(&r, F, U, u_tagged(U, OP_WRITE, true, FORGED_STAG, 0, PAY, 16), -1);
	if (send_fpdus(x, &r, F, n))
		return -1;
	if (victim_cmd(x->v, "ping", "PONG", line, sizeof(line)) || strncmp(line, "PONG ok", 7))
		return fail(x, "good connection after a Terminate into a full socket: %s", line);
	printf("  ping after a Terminate into a full socket: %s us\n", line + 8);
	/* the victim must let go of the connection although we never read: after_checks
	 * waits for it; only then do we close */
	int rc = 0;

	for (uint64_t end = now_ms() + SAFETY_MS;;) {
		if (victim_cmd(x->v, "conns", "CONNS", line, sizeof(line)))
			return fail(x, "victim does not answer");
		if (!strcmp(line, "CONNS 0"))
			break;
		if (now_ms() > end) {
			rc = fail(x, "victim keeps the connection of a peer that never reads");
			break;
		}
		usleep(20000);
	}
	close(r.fd);
	return rc;
}

/*
 * The victim disconnects (ours: as soon as it is established; rdma_server: after its one
 * Send/receive exchange); the peer neither reads nor sends FIN. The victim's teardown must
 * end within a bounded time anyway: after_checks waits for it while we keep the socket.
 */
static int a_never_fin(struct ctx *x)
{
	struct raw r;

	if (x->v->kind == V_RDMA_SERVER) {
		/* play rdma_client: a 16-byte Send, then just sit there */
		OPEN(1, 1, 0, want_crc);
		size_t n = fpdu(&r, F, U, u_untagged(U, OP_SEND, true, 0, 0, 1, 0, PAY, 16), -1);

		if (send_fpdus(x, &r, F, n)) {
			close(r.fd);
			return -1;
		}
	} else {
		OPEN(1, 1, AV_ACT_DISCONNECT, want_crc);
	}
	x->hold_fd = r.fd;
	return 0;
}

/* ---- MPA-stage attacks: each must be refused without a Reply (or with R set) ---- */

static int mpa_expect(struct ctx *x, int fd, bool want_reject)
{
	struct mpa_rep rep;
	int k = mpa_reply(fd, &rep);

	if (want_reject) {
		if (k != 1 || !(rep.flags & MPA_R))
			return fail(x, "no rejecting Reply (%d, flags %#x)", k,
				    k == 1 ? rep.flags : 0);
	} else if (k == 1) {
		return fail(x, "a Reply (flags %#x) to an invalid Request", rep.flags);
	} else if (k < 0) {
		return fail(x, "neither Reply nor close within %d ms", SAFETY_MS);
	}
	return drain_to_eof(fd, SAFETY_MS) < 0 ? fail(x, "stream left open") : 0;
}

static int mpa_case(struct ctx *x, const struct mpa_req *q, const void *extra, size_t elen,
		    bool want_reject)
{
	uint8_t f[2048];
	int fd = tcp_connect(x->v->port), rc;
	size_t n;

	if (fd < 0)
		return fail(x, "connect: %s", strerror(errno));
	n = mpa_request(f, q);
	if (elen)
		memcpy(f + n, extra, elen);
	rc = send_all(fd, f, n + elen) ? fail(x, "send") : mpa_expect(x, fd, want_reject);
	close(fd);
	return rc;
}

static const struct mpa_req good_req = { .flags = MPA_ENH | MPA_C, .rev = 2, .ird = 1,
					 .ord_word = RTR_WRITE | 1, .p2p = true, .pd_len = -1 };

static int a_mpa_garbage(struct ctx *x)
{
	int fd = tcp_connect(x->v->port), rc;
	char junk[300];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 31 + 7);
	if (fd < 0)
		return fail(x, "connect");
	rc = send_all(fd, junk, sizeof(junk)) ? fail(x, "send") : mpa_expect(x, fd, false);
	close(fd);
	return rc;
}

/* A Request that differs from good_req as said; refused (want_reject: with R set). */
struct mpa_attack {
	uint8_t flags_or;
	uint8_t rev;	    /* 0: 2 */
	int pd_len;	    /* PD_Length that lies, when >= 0 ... */
	bool bad_pd_len;    /* ... and this is set */
	size_t ulp_len;	    /* private data bytes sent behind the block */
	const char *extra;  /* 4 bytes sent right behind the Request */
	bool want_reject;
};

static const struct mpa_attack
	m_markers = { .flags_or = MPA_M, .want_reject = true },
	m_bad_rev = { .rev = 3 },
	/* PD_Length 1000 (RFC 5044 allows 512), and the 1000 bytes really sent */
	m_pd_oversized = { .ulp_len = 996 },
	/* PD_Length 65535 with only a few bytes behind it: refused at once, not waited for */
	m_pd_lie = { .bad_pd_len = true, .pd_len = 65535 },
	/* rev 2 with the enhanced flag but no room for the block */
	m_pd_short = { .bad_pd_len = true, .pd_len = 2 },
	/* an FPDU right behind the Request, before any Reply */
	m_bytes_after = { .extra = "\x00\x0e\xc1\x40" };

static int mpa_attack(struct ctx *x, const struct mpa_attack *a)
{
	static const uint8_t pd[1024];
	struct mpa_req q = good_req;

	q.flags |= a->flags_or;
	q.rev = a->rev ? a->rev : 2;
	if (a->bad_pd_len)
		q.pd_len = a->pd_len;
	q.ulp = pd;
	q.ulp_len = a->ulp_len;
	return mpa_case(x, &q, a->extra, a->extra ? 4 : 0, a->want_reject);
}

/* Half a Request, then silence: the victim gives up after its Request timer (5 s). */
static int a_mpa_truncated(struct ctx *x)
{
	uint8_t f[64];
	int fd = tcp_connect(x->v->port), rc;

	if (fd < 0)
		return fail(x, "connect");
	mpa_request(f, &good_req);
	rc = send_all(fd, f, 10) ? fail(x, "send") : mpa_expect(x, fd, false);
	close(fd);
	return rc;
}

/* Rev 1 with the largest private data RFC 5044 allows (512): the victim may accept (it
 * rejects: not our magic) or refuse, but must answer or close. */
static int a_mpa_rev1_maxpd(struct ctx *x)
{
	static uint8_t pd[512];
	struct mpa_req q = { .flags = MPA_C, .rev = 1, .ulp = pd, .ulp_len = sizeof(pd),
			     .pd_len = -1 };
	uint8_t f[600];
	int fd = tcp_connect(x->v->port);
	struct mpa_rep rep;
	size_t n;
	int k;

	if (fd < 0)
		return fail(x, "connect");
	n = mpa_request(f, &q);
	k = send_all(fd, f, n) ? -1 : mpa_reply(fd, &rep);
	close(fd);
	return k < 0 ? fail(x, "neither Reply nor close") : 0;
}

/* Close the flood's sockets (-1: none). */
static void close_all(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* A real connection while a flood is held: our victim answers a raw MPA client (which
 * then ends with a Terminate), a program victim serves its real client. */
static int good_during_flood(struct ctx *x)
{
	uint64_t t0 = now_ms();
	int rc = 0;

	if (x->v->kind == V_OURS) {
		struct raw r;

		if (!raw_open(x, &r, 1, 1, 0, want_crc)) {
			/* a clean end: our Terminate */
			size_t n = u_untagged(U, OP_TERM, true, 0, 2, 1, 0, "\x00\x00\x00\x00", 4);

			n = fpdu(&r, F, U, n, -1);
			send_all(r.fd, F, n);
		} else {
			rc = -1;
		}
		close(r.fd);
	} else {
		rc = good_client(x);
		x->good_done = true;
	}
	printf("  a good client during the flood: %llu ms%s\n",
	       (unsigned long long)(now_ms() - t0), rc ? " (failed)" : "");
	return rc;
}

/*
 * 300 idle TCP connections (more than the per-source bound of 256): while they stay open,
 * a real MPA connection must still be accepted, and every fd is returned afterwards.
 */
static int a_halfopen_flood(struct ctx *x)
{
	enum { N = 300 };
	static int fds[N];
	int rc = 0, opened = 0;
	uint64_t t0 = now_ms();

	for (int i = 0; i < N; i++) {
		fds[i] = tcp_connect(x->v->port);
		opened += fds[i] >= 0;
	}
	printf("  %d idle connections opened in %llu ms\n", opened,
	       (unsigned long long)(now_ms() - t0));
	if (opened < N)
		rc = fail(x, "only %d of %d connects succeeded", opened, N);
	if (!rc)
		rc = good_during_flood(x);
	close_all(fds, N);
	return rc;
}

/*
 * Issue 15, item 2: 1,024 connections from one address that each send the first byte of an
 * MPA Request, then nothing (they were never "idle", so none was ever dropped for a
 * newcomer, and a real client was refused). While they are held a real client must get
 * through, at once (the source is over its bound with none slow yet) and once the victim
 * has brought the source back to its bound of 256 by itself: it lets go of the rest (a FIN
 * or a reset on our side) within SR_CM_HANDSHAKE_SLOW_MS, long before its Request timer
 * (5 s) would drop them all.
 */
static int a_halfopen_onebyte(struct ctx *x)
{
	enum { N = 1024, PER_SOURCE = 256, REQUEST_TIMEOUT_MS = 5000 };
	static int fds[N];
	static bool gone[N];
	int rc = 0, opened = 0, closed = 0;
	uint64_t t0 = now_ms(), t_open;

	for (int i = 0; i < N; i++) {
		fds[i] = tcp_connect(x->v->port);
		gone[i] = false;
		if (fds[i] >= 0 && send(fds[i], "M", 1, MSG_NOSIGNAL) == 1)
			opened++;
	}
	t_open = now_ms();
	printf("  %d one-byte connections opened in %llu ms\n", opened,
	       (unsigned long long)(t_open - t0));
	if (opened < N)
		rc = fail(x, "only %d of %d connects succeeded", opened, N);
	/* rdma_server serves one client and ends: its client comes after the bound's check */
	if (!rc && x->v->kind != V_RDMA_SERVER)
		rc = good_during_flood(x);
	/* the victim lets go of all but PER_SOURCE of ours: wait for that many closes */
	while (!rc && closed < N - PER_SOURCE) {
		struct pollfd pf[N];
		int k = 0, idx[N];

		if (now_ms() - t_open > SAFETY_MS) {
			rc = fail(x, "the victim still holds %d of our one-byte connections",
				  N - closed);
			break;
		}
		for (int i = 0; i < N; i++)
			if (fds[i] >= 0 && !gone[i]) {
				pf[k] = (struct pollfd){ .fd = fds[i], .events = POLLIN | POLLRDHUP };
				idx[k++] = i;
			}
		if (poll(pf, (nfds_t)k, 100) <= 0)
			continue;
		for (int j = 0; j < k; j++)
			if (pf[j].revents) {
				gone[idx[j]] = true;
				closed++;
			}
	}
	if (!rc && now_ms() - t_open >= REQUEST_TIMEOUT_MS - 1000)
		rc = fail(x, "the source came back to its bound only after %llu ms: the Request "
			  "timer did it, not the bound", (unsigned long long)(now_ms() - t_open));
	printf("  back to %d held by the victim %llu ms after the flood\n", N - closed,
	       (unsigned long long)(now_ms() - t_open));
	if (!rc)
		rc = good_during_flood(x);
	close_all(fds, N);
	return rc;
}

/* ---- issue 15, item 3: dropped handshakes that linger ---- */

#define FLOOD_RING 2048 /* sockets the flooder holds: more than the victim's VICTIM_NOFILE */
#define MAX_LINGERING 256  /* SR_CM_MAX_LINGERING */

struct flood {
	int port;
	atomic_bool stop;
	atomic_uint opened; /* connections that sent their garbage */
	int ring[FLOOD_RING];
};

/* A TCP connection to 127.0.0.1:port within ms (a victim out of descriptors stops
 * accepting: the connect then waits for SYN retransmits), or -1. */
static int tcp_connect_within(int port, int ms)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(0x7f000001) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), err = 0;
	socklen_t len = sizeof(err);
	struct pollfd pf;

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) && errno != EINPROGRESS)
		goto fail;
	pf = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&pf, 1, ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/* Connect, send garbage, never close (until the ring wraps), as fast as the victim takes it. */
static void *flooder(void *arg)
{
	struct flood *f = arg;
	char junk[300];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 31 + 7);
	while (!atomic_load(&f->stop)) {
		int fd = tcp_connect_within(f->port, 200);
		unsigned int slot;

		if (fd < 0)
			continue;
		if (send(fd, junk, sizeof(junk), MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof(junk)) {
			close(fd);
			continue;
		}
		slot = atomic_load(&f->opened) % FLOOD_RING;
		if (f->ring[slot] >= 0)
			close(f->ring[slot]);
		f->ring[slot] = fd;
		atomic_fetch_add(&f->opened, 1);
	}
	return NULL;
}

/*
 * A peer that connects, sends garbage and never closes, sustained: each dropped handshake
 * lingered for SR_CM_DISCONNECT_TIMEOUT_MS (3 s) outside every bound, until the victim ran
 * out of its 1,024 descriptors. With the flood held (2,048 such connections open, more coming),
 * the victim must hold at most MAX_LINGERING of them, and a real client must get through.
 */
static int a_dropped_flood(struct ctx *x)
{
	static struct flood f;
	int rc = 0, n = -1, most = 0;
	uint64_t t0 = now_ms();
	pthread_t th;

	f.port = x->v->port;
	atomic_store(&f.stop, false);
	atomic_store(&f.opened, 0);
	for (int i = 0; i < FLOOD_RING; i++)
		f.ring[i] = -1;
	if (pthread_create(&th, NULL, flooder, &f))
		return fail(x, "pthread_create");
	/* held: the ring is full, and the victim holds what it lets linger */
	for (;;) {
		n = count_fds(x->v->pid);
		most = n > most ? n : most;
		if (atomic_load(&f.opened) >= FLOOD_RING && n >= x->v->base_fds + MAX_LINGERING / 2)
			break;
		if (now_ms() - t0 > SAFETY_MS) {
			rc = fail(x, "flood not held: %u connections, victim at %d fds (%d before)",
				  atomic_load(&f.opened), n, x->v->base_fds);
			break;
		}
		usleep(10000);
	}
	printf("  %u garbage connections in %llu ms, victim at %d fds (%d before)\n",
	       atomic_load(&f.opened), (unsigned long long)(now_ms() - t0), n, x->v->base_fds);
	/* the limit: what lingers, a few handshakes in progress, the good client's */
	if (!rc && most > x->v->base_fds + MAX_LINGERING + 32)
		rc = fail(x, "the victim held %d fds under the flood, %d before", most,
			  x->v->base_fds);
	if (!rc)
		rc = good_during_flood(x);
	atomic_store(&f.stop, true);
	pthread_join(th, NULL);
	close_all(f.ring, FLOOD_RING);
	return rc;
}

/*
 * The kernel's listen queue of the victim's listener is not the application's backlog
 * (rping asks for 3): a burst of connects must not overflow it (docs/SECURITY.md).
 */
static int a_listen_backlog(struct ctx *x)
{
	char cmd[128], l[512];
	long q = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ss -Hltn 'sport = :%d' 2>/dev/null", x->v->port);
	f = popen(cmd, "r");
	if (!f)
		return fail(x, "popen ss");
	/* State Recv-Q Send-Q ...: for a listener Send-Q is the backlog */
	if (fgets(l, sizeof(l), f) && sscanf(l, "%*s %*s %ld", &q) != 1)
		q = -1;
	pclose(f);
	if (q < 0)
		return fail(x, "no listener on port %d in ss output", x->v->port);
	return q >= 1024 ? 0 : fail(x, "kernel listen backlog %ld, want >= 1024", q);
}

struct acase {
	const char *name;
	unsigned int victims;
	int (*fn)(struct ctx *x);
	bool victim_exits; /* rdma_server: the attack kills its one connection */
	bool only_named;   /* runs only when named on the command line */
	const struct seg_attack *seg; /* when fn is NULL ... */
	const struct mpa_attack *mpa; /* ... or this */
};

#define ALL (V_OURS | V_RPING | V_RDMA_SERVER)
#define OR (V_OURS | V_RPING)

static const struct acase cases[] = {
	{ "mpa_garbage", ALL, a_mpa_garbage, false, false, NULL, NULL },
	{ "mpa_markers", ALL, NULL, false, false, NULL, &m_markers },
	{ "mpa_bad_rev", ALL, NULL, false, false, NULL, &m_bad_rev },
	{ "mpa_pd_oversized", ALL, NULL, false, false, NULL, &m_pd_oversized },
	{ "mpa_pd_lie", OR, NULL, false, false, NULL, &m_pd_lie },
	{ "mpa_pd_short", V_OURS, NULL, false, false, NULL, &m_pd_short },
	{ "mpa_bytes_after", OR, NULL, false, false, NULL, &m_bytes_after },
	{ "mpa_rev1_maxpd", V_OURS, a_mpa_rev1_maxpd, false, false, NULL, NULL },
	{ "mpa_truncated", V_OURS, a_mpa_truncated, false, false, NULL, NULL },
	{ "listen_backlog", OR, a_listen_backlog, false, false, NULL, NULL },
	{ "halfopen_flood", ALL, a_halfopen_flood, false, false, NULL, NULL },
	{ "halfopen_onebyte", ALL, a_halfopen_onebyte, false, false, NULL, NULL },
	{ "dropped_flood", ALL, a_dropped_flood, false, false, NULL, NULL },
	{ "write_forged_stag", ALL, NULL, true, false, &s_write_forged_stag, NULL },
	{ "write_other_pd", V_OURS, NULL, true, false, &s_write_other_pd, NULL },
	{ "write_oob_end", V_OURS, NULL, true, false, &s_write_oob_end, NULL },
	{ "write_oob_before", V_OURS, NULL, true, false, &s_write_oob_before, NULL },
	{ "write_to_wrap", V_OURS, NULL, true, false, &s_write_to_wrap, NULL },
	{ "write_to_huge", V_OURS, NULL, true, false, &s_write_to_huge, NULL },
	{ "write_no_rights", V_OURS, NULL, true, false, &s_write_no_rights, NULL },
	{ "write_read_only", V_OURS, NULL, true, false, &s_write_read_only, NULL },
	{ "write_recv_buf", V_OURS, NULL, true, false, &s_write_recv_buf, NULL },
	{ "read_forged_stag", OR, NULL, true, false, &s_read_forged_stag, NULL },
	{ "read_no_rights", V_OURS, NULL, true, false, &s_read_no_rights, NULL },
	{ "read_other_pd", V_OURS, NULL, true, false, &s_read_other_pd, NULL },
	{ "read_oob", V_OURS, NULL, true, false, &s_read_oob, NULL },
	{ "read_to_wrap", V_OURS, a_read_to_wrap, true, false, NULL, NULL },
	{ "read_legal", V_OURS, a_read_legal, true, false, NULL, NULL },
	{ "read_over_ird", V_OURS, a_read_over_ird, true, false, NULL, NULL },
	{ "unsolicited_rresp", OR, NULL, true, false, &s_unsolicited_rresp, NULL },
	{ "send_no_recv", V_OURS, NULL, true, false, &s_send_no_recv, NULL },
	{ "send_too_long", ALL, NULL, true, false, &s_send_too_long, NULL },
	{ "send_too_long_seg", V_OURS, a_send_too_long_seg, true, false, NULL, NULL },
	{ "send_bad_msn", OR, NULL, true, false, &s_send_bad_msn, NULL },
	{ "send_bad_qn", V_OURS, NULL, true, false, &s_send_bad_qn, NULL },
	{ "send_bad_mo", V_OURS, NULL, true, false, &s_send_bad_mo, NULL },
	{ "send_inv_foreign", V_OURS, a_send_inv_foreign, true, false, NULL, NULL },
	{ "send_zero_nolast", V_OURS, a_send_zero_nolast, true, false, NULL, NULL },
	{ "ulpdu_zero", OR, NULL, true, false, &s_ulpdu_zero, NULL },
	{ "ulpdu_short", V_OURS, NULL, true, false, &s_ulpdu_short, NULL },
	{ "rreq_len", V_OURS, NULL, true, false, &s_rreq_len, NULL },
	{ "ulpdu_long", V_OURS, a_ulpdu_long, true, false, NULL, NULL },
	{ "bad_crc", ALL, a_bad_crc, true, false, NULL, NULL },
	{ "bad_ddp_version", V_OURS, NULL, true, false, &s_bad_ddp_version, NULL },
	{ "bad_rdmap_version", V_OURS, NULL, true, false, &s_bad_rdmap_version, NULL },
	{ "bad_opcode", OR, NULL, true, false, &s_bad_opcode, NULL },
	{ "peer_terminate", OR, a_peer_terminate, true, false, NULL, NULL },
	{ "truncated", OR, a_truncated, true, false, NULL, NULL },
	{ "dereg_midwrite", V_OURS, a_dereg_midwrite, true, false, NULL, NULL },
	{ "no_read", V_OURS, a_no_read, true, false, NULL, NULL },
	{ "never_fin", V_OURS | V_RDMA_SERVER, a_never_fin, true, false, NULL, NULL },
	{ "nocrc_forged", V_OURS, a_nocrc_forged, true, true, NULL, NULL },
};

static const char *xfail_reason(const char *victim, const char *name)
{
	char full[128];

	snprintf(full, sizeof(full), "%s/%s", victim, name);
	for (size_t i = 0; xfails[i].name; i++)
		if (!strcmp(xfails[i].name, full))
			return xfails[i].why;
	return NULL;
}

static bool selected(const struct acase *c, int argc, char **argv)
{
	if (argc <= 2)
		return !c->only_named;
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], c->name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	struct victim v = { 0 };
	int failed = 0, passed = 0, xfailed = 0;
	uint64_t t0 = now_ms();

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	srand((unsigned int)getpid() ^ (unsigned int)now_ms());
	libdir = getenv("SR_LIBDIR");
	testbin = getenv("SR_TESTBIN");
	preload = getenv("SR_PRELOAD");
	if (argc < 2 || !libdir || !testbin) {
		fprintf(stderr, "usage: SR_LIBDIR=.. SR_TESTBIN=.. %s ours|rping|rdma_server "
				"[case...]\n", argv[0]);
		return 2;
	}
	{
		/* the floods hold a few thousand sockets of ours */
		struct rlimit nf;

		if (getrlimit(RLIMIT_NOFILE, &nf) == 0) {
			nf.rlim_cur = nf.rlim_max = nf.rlim_max > 8192 ? nf.rlim_max : 8192;
			if (setrlimit(RLIMIT_NOFILE, &nf)) {
				getrlimit(RLIMIT_NOFILE, &nf);
				nf.rlim_cur = nf.rlim_max;
				setrlimit(RLIMIT_NOFILE, &nf);
			}
		}
	}
	v.name = argv[1];
	want_crc = !getenv("SOFTRDMA_MPA_CRC") || atoi(getenv("SOFTRDMA_MPA_CRC")) != 0;
	if (!strcmp(argv[1], "ours"))
		v.kind = V_OURS;
	else if (!strcmp(argv[1], "rping"))
		v.kind = V_RPING;
	else if (!strcmp(argv[1], "rdma_server"))
		v.kind = V_RDMA_SERVER;
	else
		return 2;
	if (v.kind != V_OURS) {
		const char *prog = v.kind == V_RPING ? "rping" : "rdma_server";
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null && command -v %s >/dev/null",
			 prog, v.kind == V_RPING ? "rping" : "rdma_client");
		if (system(cmd)) {
			printf("SKIP: %s not installed\n", prog);
			return 77;
		}
		snprintf(v.log, sizeof(v.log), "%s/attack-%s-%d.log",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", prog, (int)getpid());
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct acase *c = &cases[i];
		struct ctx x = { .v = &v, .name = c->name, .hold_fd = -1 };
		const char *xr = xfail_reason(v.name, c->name);
		uint64_t t = now_ms();
		int rc;

		if (!(c->victims & v.kind) || !selected(c, argc, argv))
			continue;
		if (!v.pid && victim_start(&v)) {
			printf("FAIL: cannot start the %s victim\n", v.name);
			victim_stop(&v);
			show_log(&v, true);
			return 1;
		}
		rc = c->fn ? c->fn(&x) : c->seg ? seg_case(&x, c->seg) : mpa_attack(&x, c->mpa);
		if (!rc)
			rc = after_checks(&x, c->victim_exits);
		if (x.hold_fd >= 0)
			close(x.hold_fd);
		else
			victim_reaped(&v);
		if (rc && xr) {
			printf("XFAIL %s/%s: %s [%s]\n", v.name, c->name, x.why, xr);
			xfailed++;
		} else if (rc) {
			printf("FAIL %s/%s: %s\n", v.name, c->name, x.why);
			failed++;
		} else {
			printf("%s %s/%s (%llu ms)\n", xr ? "XPASS (re-enable it)" : "ok", v.name,
			       c->name, (unsigned long long)(now_ms() - t));
			passed++;
		}
		/* a victim in an unknown state is replaced */
		victim_reaped(&v);
		if (rc || !v.pid)
			victim_stop(&v);
	}
	victim_stop(&v);
	printf("%s: %d passed, %d failed, %d expected failures, %llu ms\n", v.name, passed, failed,
	       xfailed, (unsigned long long)(now_ms() - t0));
	show_log(&v, failed);
	return failed ? 1 : 0;
}
