// SPDX-License-Identifier: MIT
/*
 * Writes the generated seeds of tests/fuzz/corpus/ with the library's own encoders, so each
 * target starts from valid frames of every kind it handles:
 *
 *   build/tests/fuzz_gen_corpus tests/fuzz/corpus
 *
 * fuzz_roce_packet gets one datagram per RoCE opcode (roce/fz_roce.h).
 *
 * fuzz_iwarp_mpa_rr's and fuzz_iwarp_fpdu's hand-made seeds predate it and are kept as they
 * are; the files written here start with "gen_".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "roce/fz_roce.h"
#include "roce/packet.h"
#include "transport/fz_build.h"

static const char *root;

static void put(const char *target, const char *name, const uint8_t *b, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, target);
	if (mkdir(path, 0755) && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/gen_%s", root, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(b, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* Records: kind, target, off (be16), len (be16), flags, fill (fz_build.h). */
#define R(kind, target, off, len, flags, fill)                                           \
	kind, target, (uint8_t)((off) >> 8), (uint8_t)(off), (uint8_t)((len) >> 8),       \
		(uint8_t)(len), flags, fill

static const struct {
	const char *name;
	uint8_t rec[64];
	size_t n;
} scenes[] = {
	{ "write", { R(FZ_WRITE, 0, 16, 100, 0, 0xaa) }, 8 },
	{ "write_two_segs", { R(FZ_WRITE, 0, 0, 64, 1, 1), R(FZ_WRITE, 0, 64, 64, 0, 2) }, 16 },
	{ "write_ro", { R(FZ_WRITE, 1, 0, 16, 0, 3) }, 8 },
	{ "write_otherpd", { R(FZ_WRITE, 4, 0, 16, 0, 4) }, 8 },
	{ "write_past_end", { R(FZ_WRITE, 0, 8190, 16, 0, 5) }, 8 },
	{ "write_before", { R(FZ_WRITE, 0, 0xfff0, 32, 0, 6) }, 8 },
	{ "send", { R(FZ_SEND, 0, 0, 200, 0, 7) }, 8 },
	{ "send_two_msgs", { R(FZ_SEND, 0, 0, 10, 0, 8), R(FZ_SEND, 0, 0, 1024, 0, 9) }, 16 },
	{ "send_segs", { R(FZ_SEND, 0, 0, 100, 1, 10), R(FZ_SEND, 0, 0, 100, 0, 11) }, 16 },
	{ "send_too_long", { R(FZ_SEND, 0, 0, 1500, 0, 12) }, 8 },
	{ "send_inv", { R(FZ_SEND, 0, 0, 4, 0x20 | 0x40, 13) }, 8 },
	{ "send_three", { R(FZ_SEND, 0, 0, 1, 0, 1), R(FZ_SEND, 0, 0, 1, 0, 2),
			  R(FZ_SEND, 0, 0, 1, 0, 3) }, 24 },
	{ "read", { R(FZ_RREQ, 0, 0, 512, 0, 0) }, 8 },
	{ "read_ro", { R(FZ_RREQ, 1, 100, 4000, 0, 0) }, 8 },
	{ "read_local", { R(FZ_RREQ, 3, 0, 16, 0, 0) }, 8 },
	{ "read_wo", { R(FZ_RREQ, 5, 0, 16, 0, 0) }, 8 },
	{ "read_otherpd", { R(FZ_RREQ, 4, 0, 16, 0, 0) }, 8 },
	{ "read_many", { R(FZ_RREQ, 0, 0, 8, 0, 0), R(FZ_RREQ, 0, 8, 8, 0, 0),
			 R(FZ_RREQ, 0, 16, 8, 0, 0), R(FZ_RREQ, 0, 24, 8, 0, 0),
			 R(FZ_RREQ, 0, 32, 8, 0, 0) }, 40 },
	{ "read_resp", { R(FZ_RRESP, 0, 0, 8, 0, 0) }, 8 },
	{ "term", { R(FZ_TERM, 0, 0, 0, 0, 5) }, 8 },
	{ "write_then_read", { R(FZ_WRITE, 0, 0, 32, 0, 0x55), R(FZ_RREQ, 0, 0, 32, 0, 0) }, 16 },
	{ "bad_crc", { R(FZ_WRITE, 0, 0, 32, 8, 0x66) }, 8 },
	{ "bad_stag", { R(FZ_WRITE, 7, 0x1234, 32, 0, 0x56) }, 8 },
	/* issue 8 finding 4: zero-length Send segments without L took a receive each */
	{ "zero_len_no_last", { R(FZ_SEND, 0, 0, 0, 1, 0x11), R(FZ_SEND, 0, 0, 0, 3, 0x12),
				R(FZ_SEND, 0, 0, 0, 3, 0x13) }, 24 },
	{ "raw", { R(FZ_RAW, 0, 0, 6, 0, 0), 0, 4, 0x41, 0x40, 1, 2 }, 14 },
};

int main(int argc, char **argv)
{
	static uint8_t stream[1 << 16];

	if (argc != 2) {
		fprintf(stderr, "usage: %s <tests/fuzz/corpus>\n", argv[0]);
		return 2;
	}
	root = argv[1];

	for (size_t i = 0; i < sizeof(scenes) / sizeof(scenes[0]); i++) {
		for (int crc = 0; crc < 2; crc++) {
			uint8_t in[1 + sizeof(scenes[0].rec)];
			struct fz_builder b;
			size_t pos = 0, len = 1, used;
			char name[128];

			/* place: byte 0 = CRC, IRD 2; then the records */
			in[0] = (uint8_t)(crc | 2 << 2);
			memcpy(in + 1, scenes[i].rec, scenes[i].n);
			snprintf(name, sizeof(name), "%s_crc%d", scenes[i].name, crc);
			put("fuzz_xport_place", name, in, 1 + scenes[i].n);

			/* stream: the same FPDUs as bytes; byte 0 also asks for CRC repair */
			fz_builder_init(&b, crc, NULL);
			stream[0] = (uint8_t)(crc | 2 | 2 << 2);
			while (pos + FZ_REC <= scenes[i].n) {
				len += fz_build(&b, scenes[i].rec + pos, scenes[i].rec + pos + FZ_REC,
						scenes[i].n - pos - FZ_REC, &used, stream + len,
						sizeof(stream) - len);
				pos += FZ_REC + used;
			}
			put("fuzz_xport_stream", name, stream, len);
			/* fpdu: the same stream, chunked by byte 0's upper bits */
			stream[0] = (uint8_t)(crc | 2 | (uint8_t)(i << 2));
			put("fuzz_iwarp_fpdu", name, stream, len);
		}
	}

	/* rdmap: Read Requests (plain, zero-length RTR, wrapping) and Terminates. */
	{
		static const uint8_t rr[][1 + SR_RDMAP_RREQ_HDR_LEN] = {
			{ 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 16, 0, 0, 2, 0, 0, 0, 0,
			  0, 0, 2, 0, 0 },
			{ 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
			  0, 0, 0, 0, 0 },
			{ 6, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0xff, 0xff,
			  0xff, 0xff, 0xff, 0xff, 0xff, 0xf0 }, /* 256 bytes from 2^64 - 16 */
		};
		static const enum sr_iw_err errs[] = { SR_IW_ERR_DDP_T_STAG,
						       SR_IW_ERR_RDMAP_ACCESS,
						       SR_IW_ERR_DDP_U_MSN_NOBUF,
						       SR_IW_ERR_MPA_CRC };
		uint8_t seg[SR_FPDU_HDR_RREQ];
		struct sr_rdmap_rreq q = { 0x100, 0x10000, 64, 0x200, 0x20000 };

		put("fuzz_iwarp_rdmap", "rreq", rr[0], sizeof(rr[0]));
		put("fuzz_iwarp_rdmap", "rreq_rtr_crc", rr[1], sizeof(rr[1]));
		put("fuzz_iwarp_rdmap", "rreq_wrap_bytewise", rr[2], sizeof(rr[2]));
		/* Terminates quoting a Read Request header (M, D, R) or less */
		sr_fpdu_put_rreq(seg, sizeof(seg), 1, &q);
		for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
			struct sr_term_info t;
			ssize_t n;
			char name[64];

			sr_term_info_init(&t, errs[i], seg + SR_MPA_LEN_SIZE,
					  sizeof(seg) - SR_MPA_LEN_SIZE,
					  SR_FPDU_HDR_RREQ - SR_MPA_LEN_SIZE);
			n = sr_term_build(stream + 1, sizeof(stream) - 1, &t, 1, false);
			if (n < SR_FPDU_HDR_UNTAGGED)
				return 1;
			/* the body: after the DDP header, without pad and CRC */
			stream[SR_FPDU_HDR_UNTAGGED] = 1 | (uint8_t)(i & 1) << 1;
			snprintf(name, sizeof(name), "term_%zu", i);
			put("fuzz_iwarp_rdmap", name, stream + SR_FPDU_HDR_UNTAGGED,
			    1 + sr_get_be16(stream + 1) - SR_DDP_UNTAGGED_HDR_LEN);
		}
	}

	/* cm_pd: MPA Requests as our initiator and others send them, with private data. */
	{
		static const struct {
			const char *name;
			struct sr_mpa_local loc;
			size_t ulp;
			int rev1; /* 1: revision 1, no block; 2: markers asked; 3: trailing byte */
		} reqs[] = {
			{ "v2_nopd", { .ird = 4, .ord = 4 }, 0, 0 },
			{ "v2_pd", { .ird = 16, .ord = 2, .crc = true }, 40, 0 },
			{ "v2_p2p_read", { .ird = 1, .ord = 1, .p2p = true }, 8, 0 },
			{ "v2_p2p_all", { .ird = 300, .ord = 300, .p2p = true,
					  .rtr = SR_MPA_RTR_ALL }, 252, 0 },
			{ "v1_pd", { 0 }, 256, 1 },
			{ "v2_markers", { .ird = 1, .ord = 1 }, 4, 2 },
			{ "v2_trailing", { .ird = 1, .ord = 1 }, 4, 3 },
		};

		for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
			struct sr_mpa_params p;
			uint8_t ulp[SR_MPA_ULP_PD_MAX_V1];
			ssize_t n;

			sr_mpa_request_params(&reqs[i].loc, &p);
			if (reqs[i].rev1 == 1)
				p = (struct sr_mpa_params){ .rev = 1 };
			for (size_t k = 0; k < sizeof(ulp); k++)
				ulp[k] = (uint8_t)(k * 13 + i);
			n = sr_mpa_build_frame(stream, sizeof(stream), &p, ulp, reqs[i].ulp);
			if (n < 0)
				return 1;
			if (reqs[i].rev1 == 2)
				stream[16] |= SR_MPA_FLAG_MARKERS;
			if (reqs[i].rev1 == 3)
				stream[n++] = 0;
			put("fuzz_cm_pd", reqs[i].name, stream, (size_t)n);
		}
	}

	/*
	 * roce_packet: every opcode the codec knows, with its ICRC for the flow byte 0 names
	 * (IPv4 for even opcodes, IPv6 for odd), 5 bytes of payload where there is one; every
	 * other seed asks the harness to repair the ICRC of what mutation makes of it.
	 */
	for (unsigned int oc = 0; oc < 256; oc++) {
		const struct sr_roce_opinfo *op = sr_roce_opinfo((uint8_t)oc);
		const struct sr_icrc_flow *f = oc & 1 ? &fz_roce_flow6 : &fz_roce_flow4;
		struct sr_roce_pkt p = {
			.opcode = (uint8_t)oc, .pkey = SR_ROCE_PKEY_DEFAULT, .dqpn = 0x11 + oc,
			.ackreq = !(oc & 0x20), .psn = 0xfffff0 + (oc & 15), .qkey = 0x01234567,
			.sqpn = 0x12, .flush_sel = 1, .flush_plt = 1, .va = 0x7f0000001000,
			.rkey = 0x1234, .dma_len = 5, .swap_add = 1, .compare = 2,
			.syndrome = SR_AETH_ACK_NO_CREDIT, .msn = 3, .orig = 4, .imm = 0xabcd,
			.inv_rkey = 0x1234,
		};
		uint8_t *dg = stream + 1;
		struct sr_icrc c;
		size_t plen, len;
		ssize_t h;
		char name[64];

		if (!op)
			continue;
		plen = op->payload_fixed ? op->payload_fixed : op->flags & SR_ROCE_F_PAYLOAD ? 5 : 0;
		h = sr_roce_build(dg, SR_ROCE_HDR_MAX, &p, plen);
		if (h < 0)
			return 1;
		memset(dg + h, 'a' + (int)(oc % 26), plen);
		len = (size_t)h + plen + sr_roce_pad((uint32_t)plen) + SR_ROCE_ICRC_LEN;
		sr_icrc_begin(&c, f, len);
		sr_icrc_hdrs(&c, dg, (size_t)h);
		sr_icrc_data(&c, dg + h, plen);
		sr_roce_put_trailer(dg + h + plen, (uint32_t)plen, &c);
		stream[0] = (uint8_t)((oc & 1 ? FZ_ROCE_IPV6 : 0) | ((oc >> 1) & FZ_ROCE_FIX_ICRC));
		snprintf(name, sizeof(name), "%s", op->name);
		for (char *q = name; *q; q++)
			*q = (char)(*q >= 'A' && *q <= 'Z' ? *q - 'A' + 'a' : *q);
		put("fuzz_roce_packet", name, stream, 1 + len);
	}
	return 0;
}
