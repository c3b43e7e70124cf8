/* SPDX-License-Identifier: MIT */
/*
 * MPA connection setup (RFC 5044 Request/Reply, RFC 6581 enhanced setup) and
 * FPDU size arithmetic. Pure functions: the connection code reads and writes
 * the socket, these build, parse and negotiate.
 *
 * Initiator: sr_mpa_request_params() -> sr_mpa_build_frame() -> send;
 *	read 20 bytes -> sr_mpa_parse_header(expect_reply) -> read PD_Length
 *	-> sr_mpa_parse_pd() -> sr_mpa_check_reply() -> FPDU mode (send the
 *	RTR first if conn.p2p).
 * Responder: read 20 -> sr_mpa_parse_header(!expect_reply) -> read PD ->
 *	sr_mpa_parse_pd() -> hand the ULP PD up -> sr_mpa_respond() ->
 *	sr_mpa_build_frame() -> send; if conn.p2p wait for the RTR before
 *	sending any FPDU.
 * Errors from any of these map to a Terminate cause with sr_mpa_err_code().
 */
#ifndef SR_IWARP_MPA_H
#define SR_IWARP_MPA_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "iwarp/term.h"
#include "iwarp/wire.h"

/* RTR (ready-to-receive) message kinds of RFC 6581, as a bit set. */
enum {
	SR_MPA_RTR_SEND = 0x1,	/* zero-length Send (QN 0) */
	SR_MPA_RTR_WRITE = 0x2,	/* zero-length RDMA Write, STag 1 */
	SR_MPA_RTR_READ = 0x4,	/* zero-length RDMA Read Request */
	SR_MPA_RTR_ALL = 0x7,
};

/* Everything a Request or Reply frame says, host form. */
struct sr_mpa_params {
	bool is_reply;
	uint8_t rev;		/* 1 or 2 */
	bool crc;
	bool markers;		/* we never ask for markers */
	bool reject;		/* Reply only */
	bool enhanced;		/* rev 2 IRD/ORD block present */
	/* fields of the enhanced block; ignored when !enhanced */
	bool p2p;
	uint16_t ird;		/* 14 bits */
	uint16_t ord;		/* 14 bits */
	uint8_t rtr;		/* SR_MPA_RTR_*: offered / chosen (Reply) */
};

/* Largest ULP private data we send with / without the v2 block. */
#define SR_MPA_ULP_PD_MAX_V2 (SR_MPA_PD_SEND_MAX - SR_MPA_V2_BLOCK_LEN) /*252*/
#define SR_MPA_ULP_PD_MAX_V1 SR_MPA_PD_SEND_MAX			      /*256*/
/* Largest frame sr_mpa_build_frame() writes. */
#define SR_MPA_FRAME_MAX (SR_MPA_RR_HDR_LEN + SR_MPA_PD_SEND_MAX)

/**
 * sr_mpa_build_frame - encode a Request or Reply frame.
 * @ulp_pd: ULP private data, may be NULL when @ulp_pd_len is 0.
 * Returns: frame length; -EINVAL for bad @p (revision not 1/2, enhanced
 *	without rev 2, reject in a Request, IRD/ORD over 14 bits, unknown RTR
 *	bits) or ULP data over 252 bytes (v2 block) / 256 (no block);
 *	-ENOSPC when @cap is short.
 */
ssize_t sr_mpa_build_frame(uint8_t *out, size_t cap,
			   const struct sr_mpa_params *p,
			   const void *ulp_pd, size_t ulp_pd_len);

/* The fixed 20 bytes of a received frame. */
struct sr_mpa_hdr_info {
	bool is_reply;
	uint8_t flags;		/* raw flags byte */
	uint8_t rev;
	uint16_t pd_len;	/* bytes still to read */
};

/*
 * Distinct parse errors. All of them mean "invalid MPA Request/Reply frame"
 * on the wire (Terminate LLP ecode 0x04, sr_mpa_err_code()).
 */
#define SR_MPA_EBADKEY (-EBADMSG)		/* not the expected key */
#define SR_MPA_EBADREV (-EPROTONOSUPPORT)	/* revision not 1 or 2 */
#define SR_MPA_ETOOLONG (-EMSGSIZE)		/* PD_Length over 512 */
#define SR_MPA_ETRUNC (-ENODATA)		/* fewer PD bytes than needed */

/**
 * sr_mpa_parse_header - check the first 20 bytes of a Request or Reply.
 * @expect_reply: which key is acceptable ("Rep" on the Initiator).
 * Returns: PD_Length, the bytes to read next (0..512); SR_MPA_EBADKEY,
 *	SR_MPA_EBADREV, SR_MPA_ETOOLONG, or SR_MPA_ETRUNC when a rev 2 frame
 *	flags the enhanced block but PD_Length is under 4.
 */
int sr_mpa_parse_header(const uint8_t hdr[SR_MPA_RR_HDR_LEN], bool expect_reply,
			struct sr_mpa_hdr_info *out);

/**
 * sr_mpa_parse_pd - decode the private data of a frame whose header parsed.
 * @pd, @len: the bytes after the header; only hi->pd_len of them are used.
 * @ulp_pd, @ulp_len: the ULP part, pointing into @pd (v2 block skipped).
 * Reserved flag bits are ignored; a Request's R bit is ignored.
 * Returns: 0, or SR_MPA_ETRUNC when @len < hi->pd_len.
 */
int sr_mpa_parse_pd(const struct sr_mpa_hdr_info *hi, const uint8_t *pd,
		    size_t len, struct sr_mpa_params *out,
		    const uint8_t **ulp_pd, size_t *ulp_len);

/* ---------------------------- negotiation ---------------------------- */

/* Our side's wishes and limits. */
struct sr_mpa_local {
	uint16_t ird;		/* inbound Read Requests we can queue */
	uint16_t ord;		/* Read Requests we want outstanding */
	bool crc;		/* ask for CRC */
	bool p2p;		/* Initiator: ask for an RTR exchange */
	uint8_t rtr;		/* Initiator: RTR kinds we can send (offer);
				 * Responder: RTR kinds we accept (0 = all) */
};

/* The outcome both sides run the connection with. */
struct sr_mpa_conn {
	bool crc;		/* generate and check CRCs */
	bool p2p;		/* an RTR opens the stream */
	uint8_t rtr;		/* the one RTR kind, 0 without p2p */
	uint16_t ird;		/* our IRD: Read Requests we accept */
	uint16_t ord;		/* our ORD: Read Requests we may issue */
};

/* Additional negotiation errors (besides the parse errors above). */
#define SR_MPA_EMARKERS (-EOPNOTSUPP)	/* peer wants markers: reject */
#define SR_MPA_EREJECTED (-ECONNREFUSED)	/* Reply had R set */
#define SR_MPA_EIRD (-ENOBUFS)		/* Terminate 0x06 */
#define SR_MPA_ENORTR (-ENOPROTOOPT)	/* Terminate 0x07 */
#define SR_MPA_EINVALID (-EPROTO)	/* inconsistent Reply: 0x04 */

/**
 * sr_mpa_request_params - the Request we send: rev 2 with the enhanced
 * block, CRC if asked, no markers, our IRD/ORD, P2P with every RTR kind in
 * @loc->rtr if @loc->p2p (none named: the zero-length Read alone, the one
 * form Linux siw answers, so we learn when it is ready). With a Read RTR
 * offered the ORD is raised to 1, since the RTR itself uses an ORD slot.
 */
void sr_mpa_request_params(const struct sr_mpa_local *loc,
			   struct sr_mpa_params *req);

/**
 * sr_mpa_respond - Responder decision from a parsed Request.
 *
 * Reply revision = the Request's; CRC on if either side asks; markers are
 * refused. IRD/ORD per RFC 6581: our ORD <= the peer's IRD, our IRD is the
 * peer's ORD capped at our limit. With P2P, exactly one RTR is chosen from
 * those offered (and accepted by @loc->rtr): zero-length Read first (what
 * Chelsio and Intel RNICs prefer; it consumes no receive buffer and is
 * answered by a zero-length Read Response, so it needs our IRD >= 1), then
 * Write, and Send only if nothing else was offered (it consumes MSN 1 of
 * the Send queue).
 *
 * Returns: 0 with @rep and @conn filled; SR_MPA_EMARKERS with @rep filled
 *	as a rejecting Reply to send; SR_MPA_ENORTR when P2P offers no RTR we
 *	accept (@rep then also a rejecting Reply).
 */
int sr_mpa_respond(const struct sr_mpa_params *req,
		   const struct sr_mpa_local *loc, struct sr_mpa_params *rep,
		   struct sr_mpa_conn *conn);

/**
 * sr_mpa_check_reply - Initiator validation of a parsed Reply.
 * @req: the Request we sent.
 *
 * A rev 1 Reply to our rev 2 Request is accepted (no IRD/ORD exchange, no
 * RTR). Peer IRD/ORD 0x3FFF (Intel's "unspecified") is not a limit.
 * Returns: 0 with @conn; SR_MPA_EREJECTED, SR_MPA_EMARKERS, SR_MPA_EBADREV
 *	(Reply revision above ours), SR_MPA_EINVALID (P2P or block we did not
 *	ask for), SR_MPA_ENORTR (P2P Reply whose RTR is not exactly one of the
 *	offered kinds), SR_MPA_EIRD (peer ORD above our IRD).
 */
int sr_mpa_check_reply(const struct sr_mpa_params *req,
		       const struct sr_mpa_params *rep,
		       const struct sr_mpa_local *loc,
		       struct sr_mpa_conn *conn);

/**
 * sr_mpa_rtr_parse - the RTR kinds named in @text: a comma-separated list of
 * "read", "write" and "send" (case-insensitive, blanks around names allowed),
 * or "all".
 * Returns: the SR_MPA_RTR_* set (never 0); -EINVAL for an empty list or an
 *	unknown name.
 */
int sr_mpa_rtr_parse(const char *text);

/*
 * Error from any function above to the Terminate to send: the parse errors,
 * SR_MPA_EMARKERS and SR_MPA_EINVALID -> SR_IW_ERR_MPA_INVALID_RR (0x04),
 * SR_MPA_EIRD -> SR_IW_ERR_MPA_IRD (0x06), SR_MPA_ENORTR ->
 * SR_IW_ERR_MPA_NO_RTR (0x07); SR_IW_OK (send no Terminate) for a peer's
 * reject and anything else.
 */
enum sr_iw_err sr_mpa_err_code(int err);

/* ---------------------------- FPDU sizes ---------------------------- */

/* PAD bytes after a ULPDU so that 2 + ULPDU + PAD is a multiple of 4. */
static inline size_t sr_mpa_pad(size_t ulpdu_len)
{
	return (size_t)(-(ulpdu_len + SR_MPA_LEN_SIZE)) & 3;
}

/* Whole FPDU on the wire: length field, ULPDU, PAD, CRC (no markers). */
static inline size_t sr_mpa_fpdu_len(size_t ulpdu_len)
{
	return SR_MPA_LEN_SIZE + ulpdu_len + sr_mpa_pad(ulpdu_len) +
	       SR_MPA_CRC_SIZE;
}

/* Smallest MULPDU we use: room for the largest header plus payload. */
#define SR_MPA_MULPDU_MIN 126
/* Largest MULPDU: 65535 rounded down so that full FPDUs need no PAD. */
#define SR_MPA_MULPDU_MAX 65534

/**
 * sr_mpa_mulpdu - largest ULPDU for an effective MSS (RFC 5044, no
 * markers): EMSS - 6 - (EMSS mod 4), so an FPDU of that size exactly fills
 * a segment and needs no PAD. Clamped to [126, 65534], both = 2 mod 4.
 */
uint32_t sr_mpa_mulpdu(uint32_t emss);

#endif
