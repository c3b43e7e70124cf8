// SPDX-License-Identifier: MIT
/*
 * Error identities to Terminate causes, and the Terminate message codec
 * (RFC 5040 §4.8 layout, docs/WIRE.md §3.4).
 *
 * Which offending headers a Terminate carries follows what siw sends, since
 * siw and tshark are the peers we are checked against: nothing when the
 * header layout itself is in doubt (LLP errors, version and opcode errors,
 * catastrophic errors); the DDP header for DDP errors and RDMAP operation
 * errors; DDP + RDMAP (Read Request) header for RDMAP protection errors.
 *
 * tshark decodes the copied DDP header as 14 bytes whenever EType == 1, even
 * for RDMAP-layer terminates (docs/WIRE.md §5). We copy the real header length
 * (chosen by its T bit) instead; for an RDMAP protection error on a Read
 * Request tshark then shows the copy misaligned. The wire is right, the
 * dissector is not.
 */
#include <errno.h>
#include <string.h>

#include "common/sr_common.h"
#include "iwarp/crc32c.h"
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"
#include "iwarp/term.h"

enum sr_term_attach {
	SR_TERM_ATTACH_NONE,
	SR_TERM_ATTACH_DDP,		/* M, D */
	SR_TERM_ATTACH_DDP_RDMAP,	/* M, D, R (if a Read Request) */
};

struct sr_iw_err_desc {
	struct sr_term_cause cause;
	uint8_t attach;
	const char *str;
};

#define SR_E(id, l, t, c, a, s) \
	[id] = { .cause = { (l), (t), (c) }, .attach = (a), .str = (s) }

#define L_RDMAP SR_TERM_LAYER_RDMAP
#define L_DDP SR_TERM_LAYER_DDP
#define L_LLP SR_TERM_LAYER_LLP
#define A_NONE SR_TERM_ATTACH_NONE
#define A_DDP SR_TERM_ATTACH_DDP
#define A_BOTH SR_TERM_ATTACH_DDP_RDMAP

static const struct sr_iw_err_desc sr_iw_err_tab[SR_IW_ERR_COUNT] = {
	SR_E(SR_IW_ERR_MPA_TCP_LOST, L_LLP, SR_TERM_LLP_ETYPE_MPA,
	     SR_TERM_MPA_TCP_LOST, A_NONE, "MPA: TCP connection lost"),
	SR_E(SR_IW_ERR_MPA_CRC, L_LLP, SR_TERM_LLP_ETYPE_MPA, SR_TERM_MPA_CRC,
	     A_NONE, "MPA: CRC error"),
	SR_E(SR_IW_ERR_MPA_FRAMING, L_LLP, SR_TERM_LLP_ETYPE_MPA,
	     SR_TERM_MPA_MARKER_LEN, A_NONE,
	     "MPA: ULPDU_Length disagrees with the header"),
	SR_E(SR_IW_ERR_MPA_INVALID_RR, L_LLP, SR_TERM_LLP_ETYPE_MPA,
	     SR_TERM_MPA_INVALID_RR, A_NONE, "MPA: invalid Request/Reply"),
	SR_E(SR_IW_ERR_MPA_LOCAL_CATA, L_LLP, SR_TERM_LLP_ETYPE_MPA,
	     SR_TERM_MPA_LOCAL_CATASTROPHIC, A_NONE,
	     "MPA: local catastrophic error"),
	SR_E(SR_IW_ERR_MPA_IRD, L_LLP, SR_TERM_LLP_ETYPE_MPA,
	     SR_TERM_MPA_INSUFFICIENT_IRD, A_NONE,
	     "MPA: insufficient IRD resources"),
	SR_E(SR_IW_ERR_MPA_NO_RTR, L_LLP, SR_TERM_LLP_ETYPE_MPA,
	     SR_TERM_MPA_NO_MATCHING_RTR, A_NONE, "MPA: no matching RTR"),

	SR_E(SR_IW_ERR_DDP_CATA, L_DDP, SR_TERM_DDP_ETYPE_CATASTROPHIC,
	     SR_TERM_DDP_CATASTROPHIC, A_NONE, "DDP: catastrophic error"),
	SR_E(SR_IW_ERR_DDP_T_STAG, L_DDP, SR_TERM_DDP_ETYPE_TAGGED,
	     SR_TERM_DDP_T_INVALID_STAG, A_DDP, "DDP: invalid STag"),
	SR_E(SR_IW_ERR_DDP_T_BOUNDS, L_DDP, SR_TERM_DDP_ETYPE_TAGGED,
	     SR_TERM_DDP_T_BASE_BOUNDS, A_DDP, "DDP: base or bounds violation"),
	SR_E(SR_IW_ERR_DDP_T_NOT_ASSOC, L_DDP, SR_TERM_DDP_ETYPE_TAGGED,
	     SR_TERM_DDP_T_STAG_NOT_ASSOC, A_DDP,
	     "DDP: STag not associated with the stream"),
	SR_E(SR_IW_ERR_DDP_T_TO_WRAP, L_DDP, SR_TERM_DDP_ETYPE_TAGGED,
	     SR_TERM_DDP_T_TO_WRAP, A_DDP, "DDP: tagged offset wrap"),
	SR_E(SR_IW_ERR_DDP_T_VERSION, L_DDP, SR_TERM_DDP_ETYPE_TAGGED,
	     SR_TERM_DDP_T_INVALID_VERSION, A_NONE,
	     "DDP: invalid version (tagged)"),
	SR_E(SR_IW_ERR_DDP_U_QN, L_DDP, SR_TERM_DDP_ETYPE_UNTAGGED,
	     SR_TERM_DDP_U_INVALID_QN, A_DDP, "DDP: invalid queue number"),
	SR_E(SR_IW_ERR_DDP_U_MSN_NOBUF, L_DDP, SR_TERM_DDP_ETYPE_UNTAGGED,
	     SR_TERM_DDP_U_MSN_NO_BUFFER, A_DDP, "DDP: no buffer for MSN"),
	SR_E(SR_IW_ERR_DDP_U_MSN_RANGE, L_DDP, SR_TERM_DDP_ETYPE_UNTAGGED,
	     SR_TERM_DDP_U_MSN_RANGE, A_DDP, "DDP: MSN out of range"),
	SR_E(SR_IW_ERR_DDP_U_MO, L_DDP, SR_TERM_DDP_ETYPE_UNTAGGED,
	     SR_TERM_DDP_U_INVALID_MO, A_DDP, "DDP: invalid message offset"),
	SR_E(SR_IW_ERR_DDP_U_TOO_LONG, L_DDP, SR_TERM_DDP_ETYPE_UNTAGGED,
	     SR_TERM_DDP_U_TOO_LONG, A_DDP, "DDP: message too long for buffer"),
	SR_E(SR_IW_ERR_DDP_U_VERSION, L_DDP, SR_TERM_DDP_ETYPE_UNTAGGED,
	     SR_TERM_DDP_U_INVALID_VERSION, A_NONE,
	     "DDP: invalid version (untagged)"),

	SR_E(SR_IW_ERR_RDMAP_CATA, L_RDMAP, SR_TERM_RDMAP_ETYPE_CATASTROPHIC,
	     0x00, A_NONE, "RDMAP: local catastrophic error"),
	SR_E(SR_IW_ERR_RDMAP_UNSPEC, L_RDMAP, SR_TERM_RDMAP_ETYPE_CATASTROPHIC,
	     SR_TERM_RDMAP_UNSPECIFIED, A_NONE, "RDMAP: unspecified error"),
	SR_E(SR_IW_ERR_RDMAP_STAG, L_RDMAP, SR_TERM_RDMAP_ETYPE_PROTECTION,
	     SR_TERM_RDMAP_INVALID_STAG, A_BOTH, "RDMAP: invalid STag"),
	SR_E(SR_IW_ERR_RDMAP_BOUNDS, L_RDMAP, SR_TERM_RDMAP_ETYPE_PROTECTION,
	     SR_TERM_RDMAP_BASE_BOUNDS, A_BOTH,
	     "RDMAP: base or bounds violation"),
	SR_E(SR_IW_ERR_RDMAP_ACCESS, L_RDMAP, SR_TERM_RDMAP_ETYPE_PROTECTION,
	     SR_TERM_RDMAP_ACCESS_RIGHTS, A_BOTH,
	     "RDMAP: access rights violation"),
	SR_E(SR_IW_ERR_RDMAP_NOT_ASSOC, L_RDMAP, SR_TERM_RDMAP_ETYPE_PROTECTION,
	     SR_TERM_RDMAP_STAG_NOT_ASSOC, A_BOTH,
	     "RDMAP: STag not associated (PD mismatch)"),
	SR_E(SR_IW_ERR_RDMAP_TO_WRAP, L_RDMAP, SR_TERM_RDMAP_ETYPE_PROTECTION,
	     SR_TERM_RDMAP_TO_WRAP, A_BOTH, "RDMAP: tagged offset wrap"),
	SR_E(SR_IW_ERR_RDMAP_INV_PROT, L_RDMAP, SR_TERM_RDMAP_ETYPE_PROTECTION,
	     SR_TERM_RDMAP_CANNOT_INVALIDATE, A_BOTH,
	     "RDMAP: STag cannot be invalidated (protection)"),
	SR_E(SR_IW_ERR_RDMAP_VERSION, L_RDMAP, SR_TERM_RDMAP_ETYPE_OPERATION,
	     SR_TERM_RDMAP_INVALID_VERSION, A_NONE, "RDMAP: invalid version"),
	SR_E(SR_IW_ERR_RDMAP_OPCODE, L_RDMAP, SR_TERM_RDMAP_ETYPE_OPERATION,
	     SR_TERM_RDMAP_UNEXPECTED_OPCODE, A_NONE,
	     "RDMAP: unexpected opcode"),
	SR_E(SR_IW_ERR_RDMAP_CATA_STREAM, L_RDMAP,
	     SR_TERM_RDMAP_ETYPE_OPERATION, SR_TERM_RDMAP_CATASTROPHIC_STREAM,
	     A_DDP,
	     "RDMAP: catastrophic error, stream"),
	SR_E(SR_IW_ERR_RDMAP_CATA_GLOBAL, L_RDMAP,
	     SR_TERM_RDMAP_ETYPE_OPERATION, SR_TERM_RDMAP_CATASTROPHIC_GLOBAL,
	     A_DDP,
	     "RDMAP: catastrophic error, global"),
	SR_E(SR_IW_ERR_RDMAP_INV_OP, L_RDMAP, SR_TERM_RDMAP_ETYPE_OPERATION,
	     SR_TERM_RDMAP_CANNOT_INVALIDATE, A_DDP,
	     "RDMAP: STag cannot be invalidated"),
};

static const struct sr_iw_err_desc *sr_iw_err_desc(enum sr_iw_err err)
{
	if ((unsigned int)err == SR_IW_OK ||
	    (unsigned int)err >= SR_IW_ERR_COUNT)
		return NULL;
	return &sr_iw_err_tab[err];
}

int sr_iw_err_cause(enum sr_iw_err err, struct sr_term_cause *out)
{
	const struct sr_iw_err_desc *d = sr_iw_err_desc(err);

	if (!d)
		return -EINVAL;
	*out = d->cause;
	return 0;
}

const char *sr_iw_err_str(enum sr_iw_err err)
{
	const struct sr_iw_err_desc *d = sr_iw_err_desc(err);

	if (err == SR_IW_OK)
		return "no error";
	return d ? d->str : "unknown error";
}

/* Length of the DDP header that starts with control byte @ctrl. */
static uint8_t sr_term_ddp_len(uint8_t ctrl)
{
	return (ctrl & SR_DDP_FLAG_TAGGED) ? SR_DDP_TAGGED_HDR_LEN :
					     SR_DDP_UNTAGGED_HDR_LEN;
}

void sr_term_info_init(struct sr_term_info *t, enum sr_iw_err err,
		       const uint8_t *ulpdu, size_t have, uint16_t ulpdu_len)
{
	const struct sr_iw_err_desc *d = sr_iw_err_desc(err);
	uint8_t dlen, op;

	memset(t, 0, sizeof(*t));
	if (!d)
		return;	/* RDMAP/0/0: local catastrophic, the safe default */
	t->cause = d->cause;
	if (d->attach == SR_TERM_ATTACH_NONE || !ulpdu || have < 1)
		return;

	dlen = sr_term_ddp_len(ulpdu[0]);
	if (have < dlen)
		return;
	memcpy(t->ddp_hdr, ulpdu, dlen);
	t->ddp_hdr_len = dlen;
	/*
	 * The whole ULPDU length (DDP header + payload). siw puts the payload
	 * length alone here; either is informational (docs/WIRE.md §3.4).
	 */
	t->ddp_seg_len = ulpdu_len;
	t->hdrct = SR_TERM_HDRCT_M | SR_TERM_HDRCT_D;

	op = ulpdu[1] & SR_RDMAP_OPCODE_MASK;
	if (d->attach == SR_TERM_ATTACH_DDP_RDMAP &&
	    dlen == SR_DDP_UNTAGGED_HDR_LEN && op == SR_RDMAP_OP_READ_REQ &&
	    have >= (size_t)dlen + SR_RDMAP_RREQ_HDR_LEN) {
		memcpy(t->rdmap_hdr, ulpdu + dlen, SR_RDMAP_RREQ_HDR_LEN);
		t->rdmap_hdr_len = SR_RDMAP_RREQ_HDR_LEN;
		t->hdrct |= SR_TERM_HDRCT_R;
	}
}

ssize_t sr_term_build(uint8_t *out, size_t cap, const struct sr_term_info *t,
		      uint32_t msn, bool crc_on)
{
	bool m = t->hdrct & SR_TERM_HDRCT_M;
	bool d = t->hdrct & SR_TERM_HDRCT_D;
	bool r = t->hdrct & SR_TERM_HDRCT_R;
	size_t body = SR_RDMAP_TERM_HDR_LEN, total, off;
	uint32_t crc = 0;
	uint8_t *b;

	/* The segment length and RDMAP header travel behind the DDP header. */
	if ((m || r) && !d)
		return -EINVAL;
	if (d && (t->ddp_hdr_len != sr_term_ddp_len(t->ddp_hdr[0])))
		return -EINVAL;
	if (r && t->rdmap_hdr_len != SR_RDMAP_RREQ_HDR_LEN)
		return -EINVAL;
	if (t->cause.layer > 0xf || t->cause.etype > 0xf)
		return -EINVAL;
	if (d)
		body += 2 + t->ddp_hdr_len;
	if (r)
		body += SR_RDMAP_RREQ_HDR_LEN;
	total = SR_FPDU_HDR_UNTAGGED + body;
	if (cap < sr_mpa_fpdu_len(total - SR_MPA_LEN_SIZE))
		return -ENOSPC;

	/* siw always sends MO 0 and L set; it checks QN 2, MSN and MO. */
	sr_fpdu_put_untagged(out, cap, SR_RDMAP_OP_TERMINATE, true, msn, 0, 0,
			     body);
	b = out + SR_FPDU_HDR_UNTAGGED;
	b[SR_WOFF(sr_rdmap_term_hdr, layer_etype)] =
		(uint8_t)(t->cause.layer << SR_TERM_LAYER_SHIFT) |
		t->cause.etype;
	b[SR_WOFF(sr_rdmap_term_hdr, ecode)] = t->cause.ecode;
	sr_put_be16(b + SR_WOFF(sr_rdmap_term_hdr, hdrct),
		    t->hdrct & (SR_TERM_HDRCT_M | SR_TERM_HDRCT_D |
				SR_TERM_HDRCT_R));
	off = SR_RDMAP_TERM_HDR_LEN;
	if (d) {
		sr_put_be16(b + off, m ? t->ddp_seg_len : 0);
		memcpy(b + off + 2, t->ddp_hdr, t->ddp_hdr_len);
		off += 2 + t->ddp_hdr_len;
	}
	if (r)
		memcpy(b + off, t->rdmap_hdr, SR_RDMAP_RREQ_HDR_LEN);

	if (crc_on)
		crc = sr_crc32c(0, out, total);
	total += sr_fpdu_put_trailer(out + total, total - SR_MPA_LEN_SIZE, crc,
				     crc_on);
	return (ssize_t)total;
}

int sr_term_parse(const uint8_t *body, size_t len, struct sr_term_info *t)
{
	uint16_t hdrct;
	size_t off = SR_RDMAP_TERM_HDR_LEN;
	uint8_t dlen;

	memset(t, 0, sizeof(*t));
	if (len < SR_RDMAP_TERM_HDR_LEN)
		return -EBADMSG;
	t->cause.layer = body[0] >> SR_TERM_LAYER_SHIFT;
	t->cause.etype = body[0] & SR_TERM_ETYPE_MASK;
	t->cause.ecode = body[1];
	hdrct = sr_get_be16(body + SR_WOFF(sr_rdmap_term_hdr, hdrct));

	if (hdrct & SR_TERM_HDRCT_D) {
		if (len < off + 2 + 1)
			return 0;
		dlen = sr_term_ddp_len(body[off + 2]);
		if (len < off + 2 + dlen)
			return 0;
		t->ddp_seg_len = sr_get_be16(body + off);
		memcpy(t->ddp_hdr, body + off + 2, dlen);
		t->ddp_hdr_len = dlen;
		t->hdrct |= SR_TERM_HDRCT_D | (hdrct & SR_TERM_HDRCT_M);
		off += 2 + dlen;
	}
	/* R on a Send error comes without an RDMAP header (siw): skip it. */
	if ((hdrct & SR_TERM_HDRCT_R) && len >= off + SR_RDMAP_RREQ_HDR_LEN) {
		memcpy(t->rdmap_hdr, body + off, SR_RDMAP_RREQ_HDR_LEN);
		t->rdmap_hdr_len = SR_RDMAP_RREQ_HDR_LEN;
		t->hdrct |= SR_TERM_HDRCT_R;
	}
	return 0;
}
