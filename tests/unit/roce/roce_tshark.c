// SPDX-License-Identifier: MIT
/*
 * roce_tshark: packets built by the RoCE codec, written to a pcap as Ethernet / IPv4 or
 * IPv6 / UDP 4791 frames with their ICRC, and decoded by tshark (docs/WIRE.md §R9). Passes when tshark decodes every frame without "Malformed" and shows
 * the opcode, DestQP, PSN, RETH, AETH and DETH fields and the ICRC bytes as built. One more
 * frame, a Read Request cut in the middle of its RETH, must be called malformed: the check
 * can see what it looks for.
 *
 *   roce_tshark            run the check (exit 77 without tshark)
 *   roce_tshark -w FILE    only write the pcap
 *
 * FLUSH and ATOMIC WRITE are left out: tshark 4.0 does not know them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "roce/icrc.h"
#include "roce/packet.h"

struct frame {
	struct sr_roce_pkt p;
	uint16_t plen;
};

#define PSN(n) ((0xfffffe + (n)) & 0xffffff) /* across the 24-bit wrap */

/* The packets: one conversation's worth of every kind tshark knows. */
static const struct frame frames[] = {
	/* the worked example of docs/WIRE.md: RC SEND Only "hello" */
	{ { .opcode = 0x04, .pkey = 0xffff, .dqpn = 0x11, .ackreq = true, .psn = 0x123456 }, 5 },
	{ { .opcode = 0x00, .pkey = 0xffff, .dqpn = 0x11, .psn = 1 }, 256 },
	{ { .opcode = 0x01, .pkey = 0xffff, .dqpn = 0x11, .psn = 2 }, 256 },
	{ { .opcode = 0x03, .pkey = 0xffff, .dqpn = 0x11, .psn = 3, .se = true, .ackreq = true,
	    .imm = 0xdeadbeef }, 17 },
	{ { .opcode = 0x0a, .pkey = 0xffff, .dqpn = 0x11, .psn = 4, .ackreq = true,
	    .va = 0x7f1234560000, .rkey = 0x11223344, .dma_len = 64 }, 64 },
	{ { .opcode = 0x06, .pkey = 0xffff, .dqpn = 0x11, .psn = 5, .va = 0x1000, .rkey = 0x55,
	    .dma_len = 1100 }, 1024 },
	{ { .opcode = 0x09, .pkey = 0xffff, .dqpn = 0x11, .psn = 6, .ackreq = true, .imm = 7 }, 76 },
	{ { .opcode = 0x0c, .pkey = 0xffff, .dqpn = 0x11, .psn = 7, .ackreq = true, .va = 0x2000,
	    .rkey = 0x66, .dma_len = 3000 }, 0 },
	{ { .opcode = 0x0d, .pkey = 0xffff, .dqpn = 0x12, .psn = 7, .syndrome = 0x1f, .msn = 1 },
	  1024 },
	{ { .opcode = 0x0e, .pkey = 0xffff, .dqpn = 0x12, .psn = 8 }, 1024 },
	{ { .opcode = 0x0f, .pkey = 0xffff, .dqpn = 0x12, .psn = 9, .syndrome = 0x1f, .msn = 2 },
	  952 },
	{ { .opcode = 0x11, .pkey = 0xffff, .dqpn = 0x12, .psn = 6, .syndrome = 0x1f, .msn = 3 },
	  0 },
	{ { .opcode = 0x11, .pkey = 0xffff, .dqpn = 0x12, .psn = 10, .syndrome = 0x60, .msn = 3 },
	  0 },
	{ { .opcode = 0x11, .pkey = 0xffff, .dqpn = 0x12, .psn = 10, .syndrome = 0x2e, .msn = 3 },
	  0 },
	{ { .opcode = 0x13, .pkey = 0xffff, .dqpn = 0x11, .psn = 10, .ackreq = true, .va = 0x3008,
	    .rkey = 0x77, .swap_add = 5, .compare = 4 }, 0 },
	{ { .opcode = 0x14, .pkey = 0xffff, .dqpn = 0x11, .psn = 11, .ackreq = true, .va = 0x3010,
	    .rkey = 0x77, .swap_add = 1 }, 0 },
	{ { .opcode = 0x12, .pkey = 0xffff, .dqpn = 0x12, .psn = 11, .syndrome = 0x1f, .msn = 5,
	    .orig = 41 }, 0 },
	{ { .opcode = 0x17, .pkey = 0xffff, .dqpn = 0x11, .psn = 12, .ackreq = true,
	    .inv_rkey = 0x1234 }, 32 },
	{ { .opcode = 0x16, .pkey = 0xffff, .dqpn = 0x11, .psn = PSN(0), .ackreq = true,
	    .inv_rkey = 0x1234 }, 32 },
	{ { .opcode = 0x24, .pkey = 0xffff, .dqpn = 0x21, .psn = PSN(1) }, 100 },
	{ { .opcode = 0x2b, .pkey = 0xffff, .dqpn = 0x21, .psn = PSN(2), .va = 0x4000,
	    .rkey = 0x88, .dma_len = 20, .imm = 9 }, 20 },
	{ { .opcode = 0x64, .pkey = 0xffff, .dqpn = 0x30, .psn = 1, .qkey = 0x01234567,
	    .sqpn = 0x31 }, 200 },
	{ { .opcode = 0x65, .pkey = 0xffff, .dqpn = 0x30, .psn = 2, .qkey = 0x01234567,
	    .sqpn = 0x31, .imm = 3 }, 60 },
	/* the last NV6 go over IPv6 */
	{ { .opcode = 0x04, .pkey = 0xffff, .dqpn = 0x11, .ackreq = true, .psn = 0x123456 }, 5 },
	{ { .opcode = 0x0c, .pkey = 0xffff, .dqpn = 0x11, .psn = 7, .ackreq = true, .va = 0x2000,
	    .rkey = 0x66, .dma_len = 3000 }, 0 },
	{ { .opcode = 0x64, .pkey = 0xffff, .dqpn = 0x30, .psn = 1, .qkey = 0x01234567,
	    .sqpn = 0x31 }, 200 },
};
#define NFRAMES (sizeof(frames) / sizeof(frames[0]))
#define NV6 3

static struct sr_icrc_flow flow(bool v6)
{
	struct sr_icrc_flow f = { .sport = 0xc132, .dport = SR_ROCE_UDP_PORT };

	if (v6) {
		f.family = AF_INET6;
		inet_pton(AF_INET6, "2001:db8::1", f.src);
		inet_pton(AF_INET6, "2001:db8::2", f.dst);
	} else {
		f.family = AF_INET;
		inet_pton(AF_INET, "192.0.2.1", f.src);
		inet_pton(AF_INET, "192.0.2.2", f.dst);
		f.ipv4_df = true;
	}
	return f;
}

/* RFC 1071 checksum of an IPv4 header. */
static uint16_t ip_csum(const uint8_t *h, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i < n; i += 2)
		s += (uint32_t)h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* One Ethernet frame for @fr into @out; returns its length. *@icrc gets the ICRC value. */
static size_t frame_bytes(const struct frame *fr, bool v6, uint8_t *out, uint32_t *icrc)
{
	struct sr_icrc_flow f = flow(v6);
	uint8_t *ip = out + 14, *udp = ip + (v6 ? 40 : 20), *dg = udp + 8;
	struct sr_icrc c;
	ssize_t h = sr_roce_build(dg, SR_ROCE_HDR_MAX, &fr->p, fr->plen);
	size_t dlen;

	if (h < 0) {
		fprintf(stderr, "roce_tshark: build of opcode 0x%02x failed: %zd\n",
			fr->p.opcode, h);
		exit(1);
	}
	for (size_t i = 0; i < fr->plen; i++)
		dg[h + i] = (uint8_t)(0x20 + (i * 7 + fr->p.opcode) % 90);
	dlen = (size_t)h + fr->plen + sr_roce_pad(fr->plen) + SR_ROCE_ICRC_LEN;
	sr_icrc_begin(&c, &f, dlen);
	sr_icrc_hdrs(&c, dg, (size_t)h);
	sr_icrc_data(&c, dg + h, fr->plen);
	sr_roce_put_trailer(dg + h + fr->plen, fr->plen, &c);
	*icrc = sr_icrc_get(dg + dlen - 4);

	/* Ethernet: locally administered MACs */
	memcpy(out, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	sr_put_be16(out + 12, v6 ? 0x86dd : 0x0800);
	if (v6) {
		sr_put_be32(ip, 0x60000000);
		sr_put_be16(ip + 4, (uint16_t)(8 + dlen));
		ip[6] = 17;
		ip[7] = 64;
		memcpy(ip + 8, f.src, 16);
		memcpy(ip + 24, f.dst, 16);
	} else {
		ip[0] = 0x45;
		ip[1] = 0;
		sr_put_be16(ip + 2, (uint16_t)(20 + 8 + dlen));
		sr_put_be16(ip + 4, 0);
		sr_put_be16(ip + 6, 0x4000);
		ip[8] = 64;
		ip[9] = 17;
		ip[10] = ip[11] = 0;
		memcpy(ip + 12, f.src, 4);
		memcpy(ip + 16, f.dst, 4);
		sr_put_be16(ip + 10, ip_csum(ip, 20));
	}
	sr_put_be16(udp, f.sport);
	sr_put_be16(udp + 2, f.dport);
	sr_put_be16(udp + 4, (uint16_t)(8 + dlen));
	sr_put_be16(udp + 6, 0); /* as rxe sends it */
	return (size_t)(dg - out) + dlen;
}

static void put_le32(FILE *f, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	fwrite(b, 1, 4, f);
}

static int write_pcap(const char *path, uint32_t *icrcs)
{
	static uint8_t buf[2048];
	FILE *f = fopen(path, "wb");

	if (!f) {
		perror(path);
		return -1;
	}
	/* classic pcap header: magic, 2.4, zone 0, sigfigs 0, snaplen, Ethernet */
	put_le32(f, 0xa1b2c3d4);
	put_le32(f, 2 | 4u << 16);
	put_le32(f, 0);
	put_le32(f, 0);
	put_le32(f, 65535);
	put_le32(f, 1);
	for (size_t i = 0; i <= NFRAMES; i++) {
		size_t n;

		if (i < NFRAMES) {
			n = frame_bytes(&frames[i], i >= NFRAMES - NV6, buf, &icrcs[i]);
		} else {
			uint32_t unused;

			/* the control: frame 8 without the second half of its RETH */
			n = frame_bytes(&frames[7], false, buf, &unused) - 8 - SR_ROCE_ICRC_LEN;
			sr_put_be16(buf + 14 + 2, (uint16_t)(n - 14));
			sr_put_be16(buf + 14 + 10, 0);
			sr_put_be16(buf + 14 + 10, ip_csum(buf + 14, 20));
			sr_put_be16(buf + 14 + 20 + 4, (uint16_t)(n - 14 - 20));
		}
		put_le32(f, 1700000000 + (uint32_t)i);
		put_le32(f, 0);
		put_le32(f, (uint32_t)n);
		put_le32(f, (uint32_t)n);
		fwrite(buf, 1, n, f);
	}
	if (fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

/* The fields read back, in this order, '|'-separated. */
static const char *const fields[] = {
	"frame.number",		  "_ws.malformed",	     "infiniband.bth.opcode",
	"infiniband.bth.destqp",  "infiniband.bth.psn",      "infiniband.bth.padcnt",
	"infiniband.bth.a",	  "infiniband.bth.se",	     "infiniband.reth.va",
	"infiniband.reth.r_key",  "infiniband.reth.dmalen",  "infiniband.aeth.syndrome",
	"infiniband.aeth.msn",	  "infiniband.deth.q_key",   "infiniband.deth.srcqp",
	"infiniband.invariant.crc",
};
enum { F_NUM, F_MALFORMED, F_OP, F_QP, F_PSN, F_PAD, F_A, F_SE, F_VA, F_RKEY, F_LEN, F_SYN,
       F_MSN, F_QKEY, F_SQPN, F_ICRC, F_COUNT };

static int bad;

/* tshark prints integers in decimal or 0x-hex depending on the field; take either. */
static void expect(size_t i, const char *what, const char *got, uint64_t want, bool present)
{
	char *end;
	uint64_t v;

	if (!present) {
		if (*got) {
			printf("frame %zu: %s present (%s) but the opcode has none\n", i + 1, what,
			       got);
			bad = 1;
		}
		return;
	}
	errno = 0;
	v = strtoull(got, &end, 0);
	if (!*got || *end || errno || v != want) {
		printf("frame %zu (opcode 0x%02x): %s is \"%s\", built 0x%" PRIx64 "\n", i + 1,
		       frames[i].p.opcode, what, got, want);
		bad = 1;
	}
}

static void check_line(size_t i, char *line, uint32_t icrc)
{
	const struct sr_roce_pkt *p;
	const struct sr_roce_opinfo *op;
	char *f[F_COUNT], *s = line;
	uint32_t icrc_be;

	for (int k = 0; k < F_COUNT; k++) {
		f[k] = s;
		s = s ? strchr(s, '|') : NULL;
		if (s)
			*s++ = '\0';
		if (!f[k]) {
			printf("frame %zu: only %d fields\n", i + 1, k);
			bad = 1;
			return;
		}
	}
	if (i == NFRAMES) {
		if (!*f[F_MALFORMED]) {
			printf("frame %zu, a Read Request cut short, is not called malformed\n",
			       i + 1);
			bad = 1;
		}
		return;
	}
	p = &frames[i].p;
	op = sr_roce_opinfo(p->opcode);
	if (*f[F_MALFORMED]) {
		printf("frame %zu (opcode 0x%02x): %s\n", i + 1, p->opcode, f[F_MALFORMED]);
		bad = 1;
	}
	expect(i, "frame number", f[F_NUM], i + 1, true);
	expect(i, "opcode", f[F_OP], p->opcode, true);
	expect(i, "DestQP", f[F_QP], p->dqpn, true);
	expect(i, "PSN", f[F_PSN], p->psn, true);
	expect(i, "PadCnt", f[F_PAD], sr_roce_pad(frames[i].plen), true);
	expect(i, "AckReq", f[F_A], p->ackreq, true);
	expect(i, "SE", f[F_SE], p->se, true);
	/* tshark files the AtomicETH's VA and R_Key under the RETH's field names */
	expect(i, "VA", f[F_VA], p->va, op->hdrs & (SR_ROCE_H_RETH | SR_ROCE_H_ATOMIC));
	expect(i, "R_Key", f[F_RKEY], p->rkey, op->hdrs & (SR_ROCE_H_RETH | SR_ROCE_H_ATOMIC));
	expect(i, "RETH length", f[F_LEN], p->dma_len, op->hdrs & SR_ROCE_H_RETH);
	expect(i, "AETH syndrome", f[F_SYN], p->syndrome, op->hdrs & SR_ROCE_H_AETH);
	expect(i, "AETH MSN", f[F_MSN], p->msn, op->hdrs & SR_ROCE_H_AETH);
	expect(i, "DETH Q_Key", f[F_QKEY], p->qkey, op->hdrs & SR_ROCE_H_DETH);
	expect(i, "DETH SrcQP", f[F_SQPN], p->sqpn, op->hdrs & SR_ROCE_H_DETH);
	/* tshark shows the 4 ICRC bytes as they lie, read big-endian */
	icrc_be = __builtin_bswap32(icrc);
	expect(i, "ICRC", f[F_ICRC], icrc_be, true);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	char pcap[1024], cmd[4096], line[4096];
	uint32_t icrcs[NFRAMES + 1] = { 0 };
	size_t n = 0, len;
	FILE *t;
	int fd;

	if (argc == 3 && strcmp(argv[1], "-w") == 0)
		return write_pcap(argv[2], icrcs) ? 1 : 0;
	if (system("tshark -v >/dev/null 2>&1") != 0) {
		printf("SKIP: tshark is not installed\n");
		return 77;
	}
	snprintf(pcap, sizeof(pcap), "%s/roce_tshark.XXXXXX.pcap", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemps(pcap, 5);
	if (fd < 0) {
		perror("mkstemps");
		return 1;
	}
	close(fd);
	if (write_pcap(pcap, icrcs))
		return 1;

	len = (size_t)snprintf(cmd, sizeof(cmd),
			       "tshark -r %s --disable-heuristic rpcrdma_infiniband -T fields "
			       "-E separator='|' -E occurrence=f",
			       pcap);
	for (size_t k = 0; k < F_COUNT; k++)
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, " -e %s", fields[k]);
	snprintf(cmd + len, sizeof(cmd) - len, " 2>&1");
	t = popen(cmd, "r");
	if (!t) {
		perror("popen tshark");
		return 1;
	}
	while (fgets(line, sizeof(line), t)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "Running as user", 15) == 0)
			continue;
		if (n > NFRAMES) {
			printf("unexpected tshark line: %s\n", line);
			bad = 1;
			continue;
		}
		check_line(n, line, icrcs[n]);
		n++;
	}
	if (pclose(t) != 0) {
		printf("tshark failed\n");
		bad = 1;
	}
	if (n != NFRAMES + 1) {
		printf("tshark decoded %zu frames, %zu written\n", n, NFRAMES + 1);
		bad = 1;
	}
	if (bad) {
		printf("FAIL: the capture stays in %s (%s)\n", pcap, cmd);
		return 1;
	}
	unlink(pcap);
	printf("ok: %zu RoCE frames decoded by tshark as built, none malformed\n", NFRAMES);
	return 0;
}
