// SPDX-License-Identifier: MIT
/*
 * Transmit side of DDP/RDMAP over MPA: FPDU header and trailer encoders and
 * the segmenter. They write only the few bytes around the payload; the
 * payload itself goes from registered memory to the socket (one sendmsg of
 * header + payload iovecs + trailer).
 */
#include <errno.h>
#include <string.h>

#include "common/sr_common.h"
#include "iwarp/crc32c.h"
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"

bool sr_rdmap_op_tagged(unsigned int opcode)
{
	return opcode == SR_RDMAP_OP_WRITE || opcode == SR_RDMAP_OP_READ_RESP;
}

int sr_rdmap_op_qn(unsigned int opcode)
{
	switch (opcode) {
	case SR_RDMAP_OP_SEND:
	case SR_RDMAP_OP_SEND_INV:
	case SR_RDMAP_OP_SEND_SE:
	case SR_RDMAP_OP_SEND_SE_INV:
		return SR_DDP_QN_SEND;
	case SR_RDMAP_OP_READ_REQ:
		return SR_DDP_QN_READ_REQ;
	case SR_RDMAP_OP_TERMINATE:
		return SR_DDP_QN_TERMINATE;
	default:
		return -EINVAL;
	}
}

static uint8_t sr_ddp_ctrl(bool tagged, bool last)
{
	return (tagged ? SR_DDP_FLAG_TAGGED : 0) |
	       (last ? SR_DDP_FLAG_LAST : 0) | SR_DDP_VERSION;
}

static uint8_t sr_rdmap_ctrl(unsigned int opcode)
{
	return (uint8_t)(SR_RDMAP_VERSION << SR_RDMAP_RV_SHIFT) |
	       (opcode & SR_RDMAP_OPCODE_MASK);
}

ssize_t sr_fpdu_put_tagged(uint8_t *out, size_t cap, unsigned int opcode,
			   bool last, uint32_t stag, uint64_t to,
			   size_t payload_len)
{
	uint8_t *h = out + SR_MPA_LEN_SIZE;

	if (!sr_rdmap_op_tagged(opcode))
		return -EINVAL;
	if (payload_len > SR_MPA_ULPDU_MAX - SR_DDP_TAGGED_HDR_LEN)
		return -EMSGSIZE;
	if (cap < SR_FPDU_HDR_TAGGED)
		return -ENOSPC;

	sr_put_be16(out, (uint16_t)(SR_DDP_TAGGED_HDR_LEN + payload_len));
	h[SR_WOFF(sr_ddp_tagged_hdr, ddp_ctrl)] = sr_ddp_ctrl(true, last);
	h[SR_WOFF(sr_ddp_tagged_hdr, rdmap_ctrl)] = sr_rdmap_ctrl(opcode);
	sr_put_be32(h + SR_WOFF(sr_ddp_tagged_hdr, stag), stag);
	sr_put_be64(h + SR_WOFF(sr_ddp_tagged_hdr, to), to);
	return SR_FPDU_HDR_TAGGED;
}

static void sr_put_untagged_hdr(uint8_t *h, unsigned int opcode, bool last,
				uint32_t qn, uint32_t msn, uint32_t mo,
				uint32_t inval_stag)
{
	h[SR_WOFF(sr_ddp_untagged_hdr, ddp_ctrl)] = sr_ddp_ctrl(false, last);
	h[SR_WOFF(sr_ddp_untagged_hdr, rdmap_ctrl)] = sr_rdmap_ctrl(opcode);
	sr_put_be32(h + SR_WOFF(sr_ddp_untagged_hdr, inval_stag), inval_stag);
	sr_put_be32(h + SR_WOFF(sr_ddp_untagged_hdr, qn), qn);
	sr_put_be32(h + SR_WOFF(sr_ddp_untagged_hdr, msn), msn);
	sr_put_be32(h + SR_WOFF(sr_ddp_untagged_hdr, mo), mo);
}

ssize_t sr_fpdu_put_untagged(uint8_t *out, size_t cap, unsigned int opcode,
			     bool last, uint32_t msn, uint32_t mo,
			     uint32_t inval_stag, size_t payload_len)
{
	int qn = sr_rdmap_op_qn(opcode);
	bool inv = opcode == SR_RDMAP_OP_SEND_INV ||
		   opcode == SR_RDMAP_OP_SEND_SE_INV;

	/* Read Requests have their own encoder: their body is header. */
	if (qn < 0 || opcode == SR_RDMAP_OP_READ_REQ)
		return -EINVAL;
	if (inval_stag && !inv)
		return -EINVAL;
	if (payload_len > SR_MPA_ULPDU_MAX - SR_DDP_UNTAGGED_HDR_LEN)
		return -EMSGSIZE;
	if (cap < SR_FPDU_HDR_UNTAGGED)
		return -ENOSPC;

	sr_put_be16(out, (uint16_t)(SR_DDP_UNTAGGED_HDR_LEN + payload_len));
	sr_put_untagged_hdr(out + SR_MPA_LEN_SIZE, opcode, last, (uint32_t)qn,
			    msn, mo, inval_stag);
	return SR_FPDU_HDR_UNTAGGED;
}

ssize_t sr_fpdu_put_rreq(uint8_t *out, size_t cap, uint32_t msn,
			 const struct sr_rdmap_rreq *rr)
{
	uint8_t *b = out + SR_FPDU_HDR_UNTAGGED;

	if (cap < SR_FPDU_HDR_RREQ)
		return -ENOSPC;

	sr_put_be16(out, SR_DDP_UNTAGGED_HDR_LEN + SR_RDMAP_RREQ_HDR_LEN);
	/* RFC 5040: a Read Request is one segment, MO 0, L set. */
	sr_put_untagged_hdr(out + SR_MPA_LEN_SIZE, SR_RDMAP_OP_READ_REQ, true,
			    SR_DDP_QN_READ_REQ, msn, 0, 0);
	sr_put_be32(b + SR_WOFF(sr_rdmap_rreq_hdr, sink_stag), rr->sink_stag);
	sr_put_be64(b + SR_WOFF(sr_rdmap_rreq_hdr, sink_to), rr->sink_to);
	sr_put_be32(b + SR_WOFF(sr_rdmap_rreq_hdr, size), rr->size);
	sr_put_be32(b + SR_WOFF(sr_rdmap_rreq_hdr, src_stag), rr->src_stag);
	sr_put_be64(b + SR_WOFF(sr_rdmap_rreq_hdr, src_to), rr->src_to);
	return SR_FPDU_HDR_RREQ;
}

size_t sr_fpdu_put_trailer(uint8_t out[SR_FPDU_TRAILER_MAX], size_t ulpdu_len,
			   uint32_t crc, bool crc_on)
{
	size_t pad = sr_mpa_pad(ulpdu_len);

	/* PAD is zero and, like every byte before it, covered by the CRC. */
	memset(out, 0, pad);
	if (crc_on)
		crc = sr_crc32c(crc, out, pad);
	else
		crc = 0;
	sr_crc32c_put_wire(out + pad, crc);
	return pad + SR_MPA_CRC_SIZE;
}

int sr_ddp_segmenter_init(struct sr_ddp_segmenter *s, uint32_t msg_len,
			  uint32_t mulpdu, uint32_t ddp_hdr_len)
{
	mulpdu = SR_MIN(mulpdu, (uint32_t)SR_MPA_ULPDU_MAX);
	if (mulpdu <= ddp_hdr_len)
		return -EINVAL;
	s->msg_len = msg_len;
	s->off = 0;
	s->max_payload = mulpdu - ddp_hdr_len;
	s->done = false;
	return 0;
}

bool sr_ddp_segmenter_next(struct sr_ddp_segmenter *s, struct sr_ddp_chunk *c)
{
	uint32_t left;

	if (s->done)
		return false;
	left = s->msg_len - s->off;
	c->off = s->off;
	c->len = SR_MIN(left, s->max_payload);
	c->last = c->len == left;
	s->off += c->len;
	s->done = c->last;
	return true;
}
