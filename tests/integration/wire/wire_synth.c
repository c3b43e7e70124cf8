// SPDX-License-Identifier: MIT
/*
 * wire_synth: put a hand-built iWARP conversation on a real TCP connection over loopback, so
 * the tshark assertions of wire_lib.sh can be tested against known-good and known-bad bytes.
 *
 *   wire_synth -p PORT [-a 127.0.0.1] [-c 0|1] [-b] [-m]
 *     -c 1   MPA Request and Reply ask for CRC (default), -c 0 neither does (CRC slot zero)
 *     -b     corrupt the CRC of one FPDU (the initiator's Send)
 *     -m     add one malformed FPDU: a Read Request whose ULPDU is too short for its header
 *     -r     raw: leave out the MPA Request/Reply (tshark must then decode nothing as iWARP)
 *     -t held    peer-to-peer, the Request offering only the Read RTR: the initiator's first
 *                FPDU is a zero-length Read Request, and the conversation goes on only after
 *                the responder's zero-length Read Response
 *     -t unheld  the same RTR, but the conversation follows it at once (no Read Response)
 *
 * Everything is built here from docs/WIRE.md §1-§3 (MPA rev 2 with the enhanced block, DDP,
 * RDMAP, CRC-32C stored least-significant byte first) and shares no code with src/iwarp, so
 * this program checks the checker, not the encoder under test.
 *
 * Conversation (initiator = the connecting socket):
 *   I->R MPA Request, R->I MPA Reply,
 *   I->R RDMA Write 64 B, RDMA Write 3000 B in two segments (both FPDUs in one send()),
 *        Send 64 B (MSN 1), Read Request 64 B (MSN 1),
 *   R->I Read Response 64 B, Send 8 B (MSN 1),
 *   I->R Send 6000 B in three segments, one FPDU per send(), the middle one split in two
 *        send() calls (byte-stream split inside an FPDU).
 * Every send() is followed by a short pause so MPA frames and FPDUs never share a TCP segment
 * (tshark does not decode an FPDU that shares a segment with the MPA Reply).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	while (n--)
		c = crc_table[(c ^ *p++) & 0xFF] ^ (c >> 8);
	return c ^ 0xFFFFFFFFu;
}

static void die(const char *what)
{
	fprintf(stderr, "wire_synth: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void pause_ms(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

static void send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("send");
		}
		p += n;
		len -= (size_t)n;
	}
	pause_ms(15);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, (uint32_t)v);
}

static int use_crc = 1;

/* A growable byte string for building one or more FPDUs. */
struct buf {
	uint8_t d[16384];
	size_t n;
};

/*
 * Append an FPDU with the given ULPDU; returns its offset in b. PAD to a multiple of 4, then
 * the CRC (little-endian on the wire) or zeros when CRC is off. @corrupt flips the CRC.
 */
static size_t fpdu(struct buf *b, const uint8_t *ulpdu, size_t ulen, int corrupt)
{
	size_t start = b->n, pad = (4 - (2 + ulen) % 4) % 4;

	put16(b->d + b->n, (uint16_t)ulen);
	memcpy(b->d + b->n + 2, ulpdu, ulen);
	memset(b->d + b->n + 2 + ulen, 0, pad);
	b->n += 2 + ulen + pad;
	uint32_t c = use_crc ? crc32c(b->d + start, b->n - start) : 0;

	if (corrupt)
		c ^= 0x00010000u;
	b->d[b->n++] = (uint8_t)c;
	b->d[b->n++] = (uint8_t)(c >> 8);
	b->d[b->n++] = (uint8_t)(c >> 16);
	b->d[b->n++] = (uint8_t)(c >> 24);
	return start;
}

#define RDMAP_CTL(op) (0x40 | (op)) /* RDMAP version 1 */

/* Tagged DDP segment (Write op 0, Read Response op 2). */
static size_t tagged(struct buf *b, int op, int last, uint32_t stag, uint64_t to,
		     const uint8_t *pl, size_t plen)
{
	uint8_t u[14 + 4096];

	u[0] = 0x80 | (last ? 0x40 : 0) | 0x01;
	u[1] = RDMAP_CTL(op);
	put32(u + 2, stag);
	put64(u + 6, to);
	memcpy(u + 14, pl, plen);
	return fpdu(b, u, 14 + plen, 0);
}

/* Untagged DDP segment; @hdr extra RDMAP header bytes (Read Request) follow the DDP header. */
static size_t untagged(struct buf *b, int op, int last, uint32_t qn, uint32_t msn, uint32_t mo,
		       const uint8_t *pl, size_t plen, int corrupt)
{
	uint8_t u[18 + 4096];

	u[0] = (last ? 0x40 : 0) | 0x01;
	u[1] = RDMAP_CTL(op);
	memset(u + 2, 0, 4);
	put32(u + 6, qn);
	put32(u + 10, msn);
	put32(u + 14, mo);
	memcpy(u + 18, pl, plen);
	return fpdu(b, u, 18 + plen, corrupt);
}

/* 0: no P2P; 1: P2P with a Read RTR, held; 2: the same, not held. */
static int rtr_mode;

static void mpa_frame(int fd, int reply)
{
	/* rev 2, enhanced, IRD 1 (+ P2P), ORD 1 (+ Read RTR), then 8 bytes of ULP private data */
	uint8_t f[20 + 12];

	memcpy(f, reply ? "MPA ID Rep Frame" : "MPA ID Req Frame", 16);
	f[16] = (use_crc ? 0x40 : 0) | 0x10;
	f[17] = 2;
	put16(f + 18, 12);
	put16(f + 20, rtr_mode ? 0x8001 : 1);
	put16(f + 22, rtr_mode ? 0x4001 : 1);
	memcpy(f + 24, reply ? "srsynthR" : "srsynthQ", 8);
	send_all(fd, f, sizeof(f));
}

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1";
	int port = 0, corrupt = 0, malformed = 0, raw = 0, opt;

	while ((opt = getopt(argc, argv, "a:p:c:bmrt:")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'c': use_crc = atoi(optarg) != 0; break;
		case 'b': corrupt = 1; break;
		case 'm': malformed = 1; break;
		case 'r': raw = 1; break;
		case 't': rtr_mode = strcmp(optarg, "held") == 0 ? 1 : 2; break;
		default:
			fprintf(stderr, "usage: %s -p port [-a addr] [-c 0|1] [-b] [-m] [-r] "
				"[-t held|unheld]\n", argv[0]);
			return 2;
		}
	}
	if (port <= 0 || port > 65535) {
		fprintf(stderr, "wire_synth: -p port required\n");
		return 2;
	}
	crc_init();

	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "wire_synth: bad address %s\n", addr);
		return 2;
	}
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	if (lfd < 0)
		die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("bind");
	if (listen(lfd, 1) < 0)
		die("listen");
	int ifd = socket(AF_INET, SOCK_STREAM, 0);

	if (ifd < 0)
		die("socket");
	if (connect(ifd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	int rfd = accept(lfd, NULL, NULL);

	if (rfd < 0)
		die("accept");
	close(lfd);
	setsockopt(ifd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(rfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	if (!raw) {
		mpa_frame(ifd, 0);
		mpa_frame(rfd, 1);
	}

	uint8_t pl[4096];
	struct buf *b = calloc(1, sizeof(*b));

	if (!b)
		die("calloc");
	for (size_t i = 0; i < sizeof(pl); i++)
		pl[i] = (uint8_t)(i * 7 + 3);

	const uint32_t r_stag = 0x00ab1200, i_stag = 0x00cd3400;
	const uint64_t r_to = 0x7f1234560000ull, i_to = 0x7f6543210000ull;

	uint8_t rr[28];

	if (rtr_mode) {
		/* I->R: the Read RTR (zero-length Read Request, source STag 1), MSN 1 */
		memset(rr, 0, sizeof(rr));
		put32(rr + 16, 1);
		b->n = 0;
		untagged(b, 1, 1, 1, 1, 0, rr, sizeof(rr), 0);
		send_all(ifd, b->d, b->n);
		if (rtr_mode == 1) {
			/* R->I: its zero-length Read Response (sink STag 0) */
			b->n = 0;
			tagged(b, 2, 1, 0, 0, rr, 0);
			send_all(rfd, b->d, b->n);
		}
	}
	/* I->R: Write 64 B. */
	b->n = 0;
	tagged(b, 0, 1, r_stag, r_to, pl, 64);
	send_all(ifd, b->d, b->n);
	/* I->R: Write 3000 B as two segments (1500 + 1500), both FPDUs in one send(). */
	b->n = 0;
	tagged(b, 0, 0, r_stag, r_to + 64, pl, 1500);
	tagged(b, 0, 1, r_stag, r_to + 64 + 1500, pl + 1500, 1500);
	send_all(ifd, b->d, b->n);
	/* I->R: Send 64 B, MSN 1 (optionally with a bad CRC). */
	b->n = 0;
	untagged(b, 3, 1, 0, 1, 0, pl, 64, corrupt);
	send_all(ifd, b->d, b->n);
	/* I->R: Read Request for 64 B: sink = initiator's buffer, source = responder's. */
	put32(rr, i_stag);
	put64(rr + 4, i_to);
	put32(rr + 12, 64);
	put32(rr + 16, r_stag);
	put64(rr + 20, r_to);
	b->n = 0;
	untagged(b, 1, 1, 1, 1, 0, rr, sizeof(rr), 0);
	send_all(ifd, b->d, b->n);
	/* R->I: Read Response, then Send 8 B. */
	b->n = 0;
	tagged(b, 2, 1, i_stag, i_to, pl, 64);
	send_all(rfd, b->d, b->n);
	b->n = 0;
	untagged(b, 3, 1, 0, 1, 0, pl, 8, 0);
	send_all(rfd, b->d, b->n);
	/* I->R: Send 6000 B in three segments; the middle FPDU goes out in two pieces. */
	for (int s = 0; s < 3; s++) {
		b->n = 0;
		untagged(b, 3, s == 2, 0, 2, (uint32_t)s * 2000, pl + s * 1000, 2000, 0);
		if (s == 1) {
			send_all(ifd, b->d, 700);
			send_all(ifd, b->d + 700, b->n - 700);
		} else {
			send_all(ifd, b->d, b->n);
		}
	}
	if (malformed) {
		/* A Read Request (opcode 1) whose ULPDU holds only the DDP header and 2 bytes. */
		b->n = 0;
		untagged(b, 1, 1, 1, 2, 0, rr, 2, 0);
		send_all(ifd, b->d, b->n);
	}

	/* Drain what each side received, then close in order (FIN, not RST). */
	shutdown(ifd, SHUT_WR);
	shutdown(rfd, SHUT_WR);
	for (int k = 0; k < 2; k++) {
		int fd = k ? rfd : ifd;

		for (;;) {
			ssize_t n = recv(fd, b->d, sizeof(b->d), 0);

			if (n == 0)
				break;
			if (n < 0) {
				if (errno == EINTR)
					continue;
				die("recv");
			}
		}
	}
	close(ifd);
	close(rfd);
	free(b);
	printf("wire_synth: sent conversation on port %d (crc=%d corrupt=%d malformed=%d raw=%d)\n",
	       port, use_crc, corrupt, malformed, raw);
	return 0;
}
