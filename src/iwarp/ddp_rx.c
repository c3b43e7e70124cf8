// SPDX-License-Identifier: MIT
/*
 * Resumable receive parser for the MPA FPDU byte stream carrying DDP/RDMAP
 * segments. Three stages per FPDU, each resumable at any byte:
 *
 *   HDR      first SR_FPDU_HDR_MIN (16) bytes, which every valid FPDU has,
 *            give the opcode and so the full header length; then the rest
 *            of the header (Terminates: the whole ULPDU). All validation
 *            happens here, before the caller is asked to place payload.
 *   PAYLOAD  ULPDU_Length - header bytes, read by the caller straight into
 *            its memory; the CRC runs over them where they landed.
 *   TRAILER  PAD + CRC into a 7-byte buffer; CRC compared.
 *
 * Anything that fails moves the parser to FAILED for good: a byte stream
 * that lost sync cannot be recovered, the connection must be terminated.
 */
#include <errno.h>
#include <string.h>

#include "common/sr_dma.h"
#include "iwarp/crc32c.h"
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"

void sr_fpdu_rx_init(struct sr_fpdu_rx *rx, bool crc_on)
{
	memset(rx, 0, sizeof(*rx));
	rx->crc_on = crc_on;
	rx->stage = SR_FPDU_RX_HDR;
	rx->hdr_want = SR_FPDU_HDR_MIN;
	for (int q = 0; q < SR_DDP_QN_COUNT; q++)
		rx->next_msn[q] = SR_DDP_MSN_FIRST;
}

void sr_fpdu_rx_need(struct sr_fpdu_rx *rx, struct sr_fpdu_rx_need *need)
{
	need->stage = rx->stage;
	need->buf = NULL;
	need->len = 0;
	need->seg_off = 0;

	switch (rx->stage) {
	case SR_FPDU_RX_HDR:
		need->buf = rx->hdrbuf[rx->hdr_cur] + rx->hdr_have;
		need->len = rx->hdr_want - rx->hdr_have;
		break;
	case SR_FPDU_RX_PAYLOAD:
		need->len = rx->seg.payload_len - rx->data_done;
		need->seg_off = rx->data_done;
		break;
	case SR_FPDU_RX_TRAILER:
		need->buf = rx->trailer + rx->trl_have;
		need->len = rx->trl_want - rx->trl_have;
		break;
	case SR_FPDU_RX_FAILED:
		break;
	}
}

/*
 * @by_caller: the caller judged rx->seg, whose header is complete in its
 * own buffer; otherwise the parser failed on the header being read.
 */
static int sr_fpdu_rx_set_failed(struct sr_fpdu_rx *rx, enum sr_iw_err err,
				 int ret, bool by_caller)
{
	if (rx->stage == SR_FPDU_RX_FAILED)
		return rx->ret;
	rx->err = err;
	rx->ret = ret;
	rx->stage = SR_FPDU_RX_FAILED;
	if (by_caller) {
		rx->fail_buf = rx->seg_buf;
		rx->fail_have = rx->seg_valid ? rx->seg.hdr_len : 0;
	} else {
		rx->fail_buf = rx->hdr_cur;
		rx->fail_have = rx->hdr_have;
	}
	return rx->ret;
}

int sr_fpdu_rx_fail(struct sr_fpdu_rx *rx, enum sr_iw_err err)
{
	return sr_fpdu_rx_set_failed(rx, err, -EPROTO, true);
}

void sr_fpdu_rx_term(const struct sr_fpdu_rx *rx, struct sr_term_info *t)
{
	const uint8_t *h = rx->hdrbuf[rx->fail_buf];
	size_t have = rx->fail_have > SR_MPA_LEN_SIZE ?
			      rx->fail_have - SR_MPA_LEN_SIZE : 0;
	uint16_t ulpdu_len = 0;

	if (rx->fail_have >= SR_MPA_LEN_SIZE)
		ulpdu_len = sr_get_be16(h);

	sr_term_info_init(t, rx->err, have ? h + SR_MPA_LEN_SIZE : NULL, have,
			  ulpdu_len);
}

/* ULPDU bytes of the DDP/RDMAP header an opcode needs at least. */
static uint16_t sr_fpdu_rx_min_ulpdu(unsigned int opcode)
{
	switch (opcode) {
	case SR_RDMAP_OP_WRITE:
	case SR_RDMAP_OP_READ_RESP:
		return SR_DDP_TAGGED_HDR_LEN;
	case SR_RDMAP_OP_READ_REQ:
		return SR_DDP_UNTAGGED_HDR_LEN + SR_RDMAP_RREQ_HDR_LEN;
	case SR_RDMAP_OP_TERMINATE:
		return SR_DDP_UNTAGGED_HDR_LEN + SR_RDMAP_TERM_HDR_LEN;
	default:
		return SR_DDP_UNTAGGED_HDR_LEN;
	}
}

/*
 * The first 16 bytes: versions, opcode, buffer model, ULPDU_Length. Order
 * as siw checks them, so both report the same cause for the same garbage.
 */
static enum sr_iw_err sr_fpdu_rx_hdr_start(struct sr_fpdu_rx *rx)
{
	const uint8_t *h = rx->hdrbuf[rx->hdr_cur] + SR_MPA_LEN_SIZE;
	uint16_t ulpdu_len = sr_get_be16(rx->hdrbuf[rx->hdr_cur]);
	uint8_t ctrl = h[0], rctrl = h[1];
	unsigned int op = rctrl & SR_RDMAP_OPCODE_MASK;
	bool tagged = ctrl & SR_DDP_FLAG_TAGGED;
	uint16_t need;

	if ((ctrl & SR_DDP_DV_MASK) != SR_DDP_VERSION)
		return tagged ? SR_IW_ERR_DDP_T_VERSION :
				SR_IW_ERR_DDP_U_VERSION;
	if ((rctrl & SR_RDMAP_RV_MASK) >> SR_RDMAP_RV_SHIFT != SR_RDMAP_VERSION)
		return SR_IW_ERR_RDMAP_VERSION;
	/* 0x8..0xF: RFC 7306 and reserved opcodes, refused like siw does. */
	if (op >= SR_RDMAP_OP_COUNT)
		return SR_IW_ERR_RDMAP_OPCODE;
	if (tagged != sr_rdmap_op_tagged(op))
		return SR_IW_ERR_RDMAP_OPCODE;

	/*
	 * A ULPDU_Length too short for the header would make the payload
	 * length negative (the siw CVE fix maps this to LLP ecode 0x03).
	 * A Read Request carries no payload, and a Terminate must fit our
	 * header buffer whole.
	 */
	need = sr_fpdu_rx_min_ulpdu(op);
	if (ulpdu_len < need)
		return SR_IW_ERR_MPA_FRAMING;
	if (op == SR_RDMAP_OP_READ_REQ && ulpdu_len != need)
		return SR_IW_ERR_MPA_FRAMING;
	if (op == SR_RDMAP_OP_TERMINATE) {
		if (ulpdu_len > SR_FPDU_RX_HDRBUF - SR_MPA_LEN_SIZE)
			return SR_IW_ERR_MPA_FRAMING;
		need = ulpdu_len;
	}
	rx->hdr_want = SR_MPA_LEN_SIZE + need;
	return SR_IW_OK;
}

static void sr_fpdu_rx_decode_rreq(const uint8_t *b, struct sr_rdmap_rreq *rr)
{
	rr->sink_stag = sr_get_be32(b + SR_WOFF(sr_rdmap_rreq_hdr, sink_stag));
	rr->sink_to = sr_get_be64(b + SR_WOFF(sr_rdmap_rreq_hdr, sink_to));
	rr->size = sr_get_be32(b + SR_WOFF(sr_rdmap_rreq_hdr, size));
	rr->src_stag = sr_get_be32(b + SR_WOFF(sr_rdmap_rreq_hdr, src_stag));
	rr->src_to = sr_get_be64(b + SR_WOFF(sr_rdmap_rreq_hdr, src_to));
}

static enum sr_iw_err sr_fpdu_rx_tagged(struct sr_fpdu_rx *rx,
					struct sr_ddp_seg *s, const uint8_t *h)
{
	s->stag = sr_get_be32(h + SR_WOFF(sr_ddp_tagged_hdr, stag));
	s->to = sr_get_be64(h + SR_WOFF(sr_ddp_tagged_hdr, to));
	/* The last byte's address must not wrap the 64-bit TO space. */
	if (s->payload_len && s->to > UINT64_MAX - (s->payload_len - 1))
		return SR_IW_ERR_DDP_T_TO_WRAP;
	s->first = !rx->tagged_in_msg;
	rx->tagged_in_msg = !s->last;
	return SR_IW_OK;
}

static enum sr_iw_err sr_fpdu_rx_untagged(struct sr_fpdu_rx *rx,
					  struct sr_ddp_seg *s,
					  const uint8_t *h)
{
	uint32_t qn, want_mo;

	s->qn = qn = sr_get_be32(h + SR_WOFF(sr_ddp_untagged_hdr, qn));
	s->msn = sr_get_be32(h + SR_WOFF(sr_ddp_untagged_hdr, msn));
	s->mo = sr_get_be32(h + SR_WOFF(sr_ddp_untagged_hdr, mo));
	if (s->opcode == SR_RDMAP_OP_SEND_INV ||
	    s->opcode == SR_RDMAP_OP_SEND_SE_INV)
		s->inval_stag = sr_get_be32(
			h + SR_WOFF(sr_ddp_untagged_hdr, inval_stag));

	if ((int)qn != sr_rdmap_op_qn(s->opcode))
		return SR_IW_ERR_DDP_U_QN;
	/* Single-segment messages; more would overrun their one buffer. */
	if (!s->last && (s->opcode == SR_RDMAP_OP_READ_REQ ||
			 s->opcode == SR_RDMAP_OP_TERMINATE))
		return SR_IW_ERR_DDP_U_TOO_LONG;
	/* RFC 5041 §5: MSNs count up from 1 per queue, in order. */
	if (s->msn != rx->next_msn[qn])
		return SR_IW_ERR_DDP_U_MSN_RANGE;
	/* MO is where this segment sits: right after the previous one. */
	want_mo = rx->in_msg[qn] ? rx->next_mo[qn] : 0;
	if (s->mo != want_mo)
		return SR_IW_ERR_DDP_U_MO;
	if (s->payload_len > UINT32_MAX - s->mo)
		return SR_IW_ERR_DDP_U_TOO_LONG;

	s->first = !rx->in_msg[qn];
	if (s->last) {
		rx->next_msn[qn]++;
		rx->in_msg[qn] = false;
		rx->next_mo[qn] = 0;
	} else {
		rx->in_msg[qn] = true;
		rx->next_mo[qn] = s->mo + s->payload_len;
	}
	return SR_IW_OK;
}

/* The whole header is in: decode it and check what needs all of it. */
static enum sr_iw_err sr_fpdu_rx_hdr_end(struct sr_fpdu_rx *rx)
{
	struct sr_ddp_seg *s = &rx->seg;
	const uint8_t *h = rx->hdrbuf[rx->hdr_cur] + SR_MPA_LEN_SIZE;
	const uint8_t *body = h + SR_DDP_UNTAGGED_HDR_LEN;
	enum sr_iw_err err;

	/* seg is rewritten: the previous segment can no longer be judged. */
	rx->seg_valid = false;
	memset(s, 0, sizeof(*s));
	s->opcode = h[1] & SR_RDMAP_OPCODE_MASK;
	s->tagged = h[0] & SR_DDP_FLAG_TAGGED;
	s->last = h[0] & SR_DDP_FLAG_LAST;
	s->ulpdu_len = sr_get_be16(rx->hdrbuf[rx->hdr_cur]);
	s->hdr_len = rx->hdr_want;
	s->payload_len = (uint32_t)s->ulpdu_len + SR_MPA_LEN_SIZE - s->hdr_len;

	if (s->tagged)
		return sr_fpdu_rx_tagged(rx, s, h);

	err = sr_fpdu_rx_untagged(rx, s, h);
	if (err)
		return err;
	if (s->opcode == SR_RDMAP_OP_READ_REQ) {
		sr_fpdu_rx_decode_rreq(body, &s->rreq);
		/* The source range must not wrap, like any tagged access. */
		if (s->rreq.size &&
		    s->rreq.src_to > UINT64_MAX - (s->rreq.size - 1))
			return SR_IW_ERR_RDMAP_TO_WRAP;
	} else if (s->opcode == SR_RDMAP_OP_TERMINATE) {
		/* Length >= 22 was checked: the parse cannot fail. */
		sr_term_parse(body, s->ulpdu_len - SR_DDP_UNTAGGED_HDR_LEN,
			      &s->term);
	}
	return SR_IW_OK;
}

static int sr_fpdu_rx_hdr_bytes(struct sr_fpdu_rx *rx, size_t n)
{
	enum sr_iw_err err;

	if (n > (size_t)(rx->hdr_want - rx->hdr_have))
		return -EINVAL;
	rx->hdr_have += n;
	if (rx->hdr_have < rx->hdr_want)
		return SR_FPDU_RX_MORE;

	if (rx->hdr_want == SR_FPDU_HDR_MIN) {
		err = sr_fpdu_rx_hdr_start(rx);
		if (err)
			return sr_fpdu_rx_set_failed(rx, err, -EPROTO, false);
		if (rx->hdr_have < rx->hdr_want)
			return SR_FPDU_RX_MORE;
	}
	err = sr_fpdu_rx_hdr_end(rx);
	if (err)
		return sr_fpdu_rx_set_failed(rx, err, -EPROTO, false);
	rx->seg_valid = true;
	rx->seg_buf = rx->hdr_cur;

	if (rx->crc_on)
		rx->crc = sr_crc32c(0, rx->hdrbuf[rx->hdr_cur], rx->hdr_have);
	rx->data_done = 0;
	rx->trl_have = 0;
	rx->trl_want = sr_mpa_pad(rx->seg.ulpdu_len) + SR_MPA_CRC_SIZE;
	rx->stage = rx->seg.payload_len ? SR_FPDU_RX_PAYLOAD :
					  SR_FPDU_RX_TRAILER;
	return SR_FPDU_RX_HDR_DONE;
}

static int sr_fpdu_rx_payload_bytes(struct sr_fpdu_rx *rx, size_t n,
				    const void *payload)
{
	if (n > rx->seg.payload_len - rx->data_done)
		return -EINVAL;
	if (rx->crc_on && n) {
		if (!payload)
			return -EINVAL;
		sr_dma_read_begin(); /* placed payload: registered memory */
		rx->crc = sr_crc32c(rx->crc, payload, n);
		sr_dma_read_end();
	}
	rx->data_done += n;
	if (rx->data_done == rx->seg.payload_len)
		rx->stage = SR_FPDU_RX_TRAILER;
	return SR_FPDU_RX_MORE;
}

static int sr_fpdu_rx_trailer_bytes(struct sr_fpdu_rx *rx, size_t n)
{
	uint8_t pad = rx->trl_want - SR_MPA_CRC_SIZE;

	if (n > (size_t)(rx->trl_want - rx->trl_have))
		return -EINVAL;
	rx->trl_have += n;
	if (rx->trl_have < rx->trl_want)
		return SR_FPDU_RX_MORE;

	/* CRC off: the field is present but not checked (docs/WIRE.md §1.2). */
	if (rx->crc_on) {
		uint32_t crc = sr_crc32c(rx->crc, rx->trailer, pad);

		if (crc != sr_crc32c_get_wire(rx->trailer + pad))
			return sr_fpdu_rx_set_failed(rx, SR_IW_ERR_MPA_CRC,
						     -EBADMSG, false);
	}
	/* The next header goes to the other buffer; this one stays for seg. */
	rx->hdr_cur ^= 1;
	rx->stage = SR_FPDU_RX_HDR;
	rx->hdr_have = 0;
	rx->hdr_want = SR_FPDU_HDR_MIN;
	return SR_FPDU_RX_SEG_DONE;
}

size_t sr_fpdu_rx_lookahead(const struct sr_fpdu_rx *rx)
{
	switch (rx->stage) {
	case SR_FPDU_RX_PAYLOAD:
		return (size_t)rx->trl_want + SR_FPDU_HDR_MIN;
	case SR_FPDU_RX_TRAILER:
		return SR_FPDU_HDR_MIN;
	default:
		return 0;
	}
}

size_t sr_fpdu_rx_fpdu_rest(const struct sr_fpdu_rx *rx)
{
	const uint8_t *h = rx->hdrbuf[rx->hdr_cur];
	size_t whole;

	switch (rx->stage) {
	case SR_FPDU_RX_HDR:
		if (rx->hdr_have < SR_MPA_LEN_SIZE)
			return (size_t)(rx->hdr_want - rx->hdr_have);
		whole = SR_MPA_LEN_SIZE + (size_t)sr_get_be16(h) +
			sr_mpa_pad(sr_get_be16(h)) + SR_MPA_CRC_SIZE;
		return whole - rx->hdr_have;
	case SR_FPDU_RX_PAYLOAD:
		return (size_t)(rx->seg.payload_len - rx->data_done) + rx->trl_want;
	case SR_FPDU_RX_TRAILER:
		return (size_t)(rx->trl_want - rx->trl_have);
	default:
		return 0;
	}
}

int sr_fpdu_rx_advance(struct sr_fpdu_rx *rx, size_t n, const void *payload)
{
	switch (rx->stage) {
	case SR_FPDU_RX_HDR:
		return sr_fpdu_rx_hdr_bytes(rx, n);
	case SR_FPDU_RX_PAYLOAD:
		return sr_fpdu_rx_payload_bytes(rx, n, payload);
	case SR_FPDU_RX_TRAILER:
		return sr_fpdu_rx_trailer_bytes(rx, n);
	case SR_FPDU_RX_FAILED:
		break;
	}
	return rx->ret;
}
