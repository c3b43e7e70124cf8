// SPDX-License-Identifier: MIT
/*
 * MPA Request/Reply frame codec (RFC 5044 §7.1, RFC 6581 enhanced block) and
 * the MULPDU arithmetic. Frames are short and built once per connection, so
 * clarity wins over speed here.
 */
#include <errno.h>
#include <string.h>

#include "iwarp/mpa.h"

static uint16_t sr_mpa_v2_ird_word(const struct sr_mpa_params *p)
{
	uint16_t w = p->ird & SR_MPA_V2_IRD_ORD_MASK;

	if (p->p2p)
		w |= SR_MPA_V2_P2P;
	if (p->rtr & SR_MPA_RTR_SEND)
		w |= SR_MPA_V2_RTR_SEND;
	return w;
}

static uint16_t sr_mpa_v2_ord_word(const struct sr_mpa_params *p)
{
	uint16_t w = p->ord & SR_MPA_V2_IRD_ORD_MASK;

	if (p->rtr & SR_MPA_RTR_WRITE)
		w |= SR_MPA_V2_RTR_WRITE;
	if (p->rtr & SR_MPA_RTR_READ)
		w |= SR_MPA_V2_RTR_READ;
	return w;
}

static int sr_mpa_params_check(const struct sr_mpa_params *p, size_t ulp_len)
{
	if (p->rev != SR_MPA_REV1 && p->rev != SR_MPA_REV2)
		return -EINVAL;
	if (p->enhanced && p->rev != SR_MPA_REV2)
		return -EINVAL;
	if (p->reject && !p->is_reply)
		return -EINVAL;
	if (p->enhanced && (p->ird > SR_MPA_V2_IRD_ORD_MASK ||
			    p->ord > SR_MPA_V2_IRD_ORD_MASK ||
			    (p->rtr & ~SR_MPA_RTR_ALL)))
		return -EINVAL;
	/*
	 * Stay within what siw accepts: 256 bytes of PD_Length, v2 block
	 * included (docs/WIRE.md §4).
	 */
	if (ulp_len > (p->enhanced ? SR_MPA_ULP_PD_MAX_V2 :
				     SR_MPA_ULP_PD_MAX_V1))
		return -EINVAL;
	return 0;
}

ssize_t sr_mpa_build_frame(uint8_t *out, size_t cap,
			   const struct sr_mpa_params *p,
			   const void *ulp_pd, size_t ulp_pd_len)
{
	size_t blk = p->enhanced ? SR_MPA_V2_BLOCK_LEN : 0;
	size_t total;
	uint8_t flags = 0;
	int rc;

	rc = sr_mpa_params_check(p, ulp_pd_len);
	if (rc)
		return rc;
	if (ulp_pd_len && !ulp_pd)
		return -EINVAL;
	total = SR_MPA_RR_HDR_LEN + blk + ulp_pd_len;
	if (cap < total)
		return -ENOSPC;

	if (p->markers)
		flags |= SR_MPA_FLAG_MARKERS;
	if (p->crc)
		flags |= SR_MPA_FLAG_CRC;
	if (p->reject)
		flags |= SR_MPA_FLAG_REJECT;
	if (p->enhanced)
		flags |= SR_MPA_FLAG_ENHANCED;

	memcpy(out + SR_WOFF(sr_mpa_rr_hdr, key),
	       p->is_reply ? SR_MPA_KEY_REP : SR_MPA_KEY_REQ, SR_MPA_KEY_LEN);
	out[SR_WOFF(sr_mpa_rr_hdr, flags)] = flags;
	out[SR_WOFF(sr_mpa_rr_hdr, rev)] = p->rev;
	sr_put_be16(out + SR_WOFF(sr_mpa_rr_hdr, pd_len),
		    (uint16_t)(blk + ulp_pd_len));
	if (blk) {
		uint8_t *b = out + SR_MPA_RR_HDR_LEN;

		sr_put_be16(b + SR_WOFF(sr_mpa_v2_block, ird),
			    sr_mpa_v2_ird_word(p));
		sr_put_be16(b + SR_WOFF(sr_mpa_v2_block, ord),
			    sr_mpa_v2_ord_word(p));
	}
	if (ulp_pd_len)
		memcpy(out + SR_MPA_RR_HDR_LEN + blk, ulp_pd, ulp_pd_len);
	return (ssize_t)total;
}

int sr_mpa_parse_header(const uint8_t hdr[SR_MPA_RR_HDR_LEN], bool expect_reply,
			struct sr_mpa_hdr_info *out)
{
	const char *key = expect_reply ? SR_MPA_KEY_REP : SR_MPA_KEY_REQ;
	uint8_t flags = hdr[SR_WOFF(sr_mpa_rr_hdr, flags)];
	uint8_t rev = hdr[SR_WOFF(sr_mpa_rr_hdr, rev)];
	uint16_t pd_len = sr_get_be16(hdr + SR_WOFF(sr_mpa_rr_hdr, pd_len));

	if (memcmp(hdr + SR_WOFF(sr_mpa_rr_hdr, key), key, SR_MPA_KEY_LEN))
		return SR_MPA_EBADKEY;
	/* Rev 0 (pre-standard drafts) is refused, unlike siw. */
	if (rev != SR_MPA_REV1 && rev != SR_MPA_REV2)
		return SR_MPA_EBADREV;
	if (pd_len > SR_MPA_PD_MAX)
		return SR_MPA_ETOOLONG;
	if (rev == SR_MPA_REV2 && (flags & SR_MPA_FLAG_ENHANCED) &&
	    pd_len < SR_MPA_V2_BLOCK_LEN)
		return SR_MPA_ETRUNC;

	out->is_reply = expect_reply;
	out->flags = flags;
	out->rev = rev;
	out->pd_len = pd_len;
	return pd_len;
}

int sr_mpa_parse_pd(const struct sr_mpa_hdr_info *hi, const uint8_t *pd,
		    size_t len, struct sr_mpa_params *out,
		    const uint8_t **ulp_pd, size_t *ulp_len)
{
	size_t skip = 0;

	if (len < hi->pd_len)
		return SR_MPA_ETRUNC;

	memset(out, 0, sizeof(*out));
	out->is_reply = hi->is_reply;
	out->rev = hi->rev;
	out->markers = hi->flags & SR_MPA_FLAG_MARKERS;
	out->crc = hi->flags & SR_MPA_FLAG_CRC;
	/* R is meaningful only in a Reply; elsewhere it is a reserved bit. */
	out->reject = hi->is_reply && (hi->flags & SR_MPA_FLAG_REJECT);
	/* In rev 1 the enhanced bit is reserved: no block (docs/WIRE.md §1.3). */
	out->enhanced = hi->rev == SR_MPA_REV2 &&
			(hi->flags & SR_MPA_FLAG_ENHANCED);

	if (out->enhanced) {
		uint16_t ird, ord;

		/* sr_mpa_parse_header() refused pd_len < 4 already. */
		if (hi->pd_len < SR_MPA_V2_BLOCK_LEN)
			return SR_MPA_ETRUNC;
		ird = sr_get_be16(pd + SR_WOFF(sr_mpa_v2_block, ird));
		ord = sr_get_be16(pd + SR_WOFF(sr_mpa_v2_block, ord));
		out->p2p = ird & SR_MPA_V2_P2P;
		out->ird = ird & SR_MPA_V2_IRD_ORD_MASK;
		out->ord = ord & SR_MPA_V2_IRD_ORD_MASK;
		if (ird & SR_MPA_V2_RTR_SEND)
			out->rtr |= SR_MPA_RTR_SEND;
		if (ord & SR_MPA_V2_RTR_WRITE)
			out->rtr |= SR_MPA_RTR_WRITE;
		if (ord & SR_MPA_V2_RTR_READ)
			out->rtr |= SR_MPA_RTR_READ;
		skip = SR_MPA_V2_BLOCK_LEN;
	}
	*ulp_pd = hi->pd_len > skip ? pd + skip : NULL;
	*ulp_len = hi->pd_len - skip;
	return 0;
}

uint32_t sr_mpa_mulpdu(uint32_t emss)
{
	uint32_t m;

	if (emss < SR_MPA_MULPDU_MIN + 6)
		return SR_MPA_MULPDU_MIN;
	m = emss - 6 - (emss % 4);
	if (m < SR_MPA_MULPDU_MIN)
		return SR_MPA_MULPDU_MIN;
	if (m > SR_MPA_MULPDU_MAX)
		return SR_MPA_MULPDU_MAX;
	return m;
}
