// SPDX-License-Identifier: MIT
/*
 * MPA parameter negotiation (RFC 5044 flags, RFC 6581 IRD/ORD and RTR), both
 * roles, as pure functions over parsed frames. docs/WIRE.md §1.2, §1.3 and §4
 * record what Linux siw and the iWARP RNICs do; the choices below keep us
 * compatible with all of them.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "common/sr_common.h"
#include "iwarp/mpa.h"

static uint16_t sr_mpa_clamp14(uint16_t v)
{
	return SR_MIN(v, (uint16_t)SR_MPA_V2_IRD_ORD_MASK);
}

void sr_mpa_request_params(const struct sr_mpa_local *loc,
			   struct sr_mpa_params *req)
{
	memset(req, 0, sizeof(*req));
	req->rev = SR_MPA_REV2;
	req->crc = loc->crc;
	req->enhanced = true;
	req->ird = sr_mpa_clamp14(loc->ird);
	req->ord = sr_mpa_clamp14(loc->ord);
	if (!loc->p2p)
		return;
	req->p2p = true;
	/*
	 * Nothing named: the Read alone. A responder picks among what we offer and
	 * siw picks Write whenever it may; only the Read is answered (a
	 * zero-length Read Response), which tells us the peer's receive side is
	 * up: Linux siw installs it only after sending its Reply and loses what
	 * arrives before (docs/COMPATIBILITY.md, Interoperability).
	 */
	req->rtr = loc->rtr & SR_MPA_RTR_ALL;
	if (!req->rtr)
		req->rtr = SR_MPA_RTR_READ;
	/* A Read RTR takes an ORD slot of its own (siw forces ORD >= 1). */
	if ((req->rtr & SR_MPA_RTR_READ) && req->ord == 0)
		req->ord = 1;
}

/* Our RTR preference among @offered; see sr_mpa_respond() in mpa.h. */
static uint8_t sr_mpa_pick_rtr(uint8_t offered, uint16_t our_ird)
{
	if ((offered & SR_MPA_RTR_READ) && our_ird >= 1)
		return SR_MPA_RTR_READ;
	if (offered & SR_MPA_RTR_WRITE)
		return SR_MPA_RTR_WRITE;
	if (offered & SR_MPA_RTR_SEND)
		return SR_MPA_RTR_SEND;
	return 0;
}

static void sr_mpa_reject_reply(const struct sr_mpa_params *req,
				struct sr_mpa_params *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->is_reply = true;
	rep->rev = req->rev;
	rep->crc = req->crc;
	rep->reject = true;
}

int sr_mpa_respond(const struct sr_mpa_params *req,
		   const struct sr_mpa_local *loc, struct sr_mpa_params *rep,
		   struct sr_mpa_conn *conn)
{
	uint16_t ird, ord;
	uint8_t accept, rtr = 0;

	memset(conn, 0, sizeof(*conn));
	if (req->markers) {
		/* We never insert markers; siw refuses the same way. */
		sr_mpa_reject_reply(req, rep);
		return SR_MPA_EMARKERS;
	}

	memset(rep, 0, sizeof(*rep));
	rep->is_reply = true;
	/* Answer with the Request's revision, as siw does. */
	rep->rev = req->rev;
	/* A Request with C=1 obliges us; our own wish also turns it on. */
	rep->crc = req->crc || loc->crc;
	conn->crc = rep->crc;

	if (!req->enhanced) {
		/* No IRD/ORD exchange: the ULP sized both ends itself. */
		conn->ird = loc->ird;
		conn->ord = loc->ord;
		return 0;
	}

	/*
	 * RFC 6581: never issue more Reads than the peer can queue, and
	 * queue as many as the peer will issue, within our limit. The 0x3FFF
	 * "unspecified" value needs no special case under min().
	 */
	ord = SR_MIN(sr_mpa_clamp14(loc->ord), req->ird);
	ird = SR_MIN(sr_mpa_clamp14(loc->ird), req->ord);

	if (req->p2p) {
		accept = loc->rtr ? loc->rtr : SR_MPA_RTR_ALL;
		rtr = sr_mpa_pick_rtr(req->rtr & accept, loc->ird);
		if (!rtr) {
			sr_mpa_reject_reply(req, rep);
			return SR_MPA_ENORTR;
		}
		/* The zero-length Read RTR lands in our IRD queue. */
		if (rtr == SR_MPA_RTR_READ && ird == 0)
			ird = 1;
	}

	rep->enhanced = true;
	rep->p2p = req->p2p;
	rep->rtr = rtr;
	rep->ird = ird;
	rep->ord = ord;
	conn->p2p = req->p2p;
	conn->rtr = rtr;
	conn->ird = ird;
	conn->ord = ord;
	return 0;
}

static bool sr_mpa_one_bit(uint8_t v)
{
	return v && !(v & (v - 1));
}

int sr_mpa_check_reply(const struct sr_mpa_params *req,
		       const struct sr_mpa_params *rep,
		       const struct sr_mpa_local *loc,
		       struct sr_mpa_conn *conn)
{
	memset(conn, 0, sizeof(*conn));
	if (rep->reject)
		return SR_MPA_EREJECTED;
	if (rep->markers)
		return SR_MPA_EMARKERS;
	if (rep->rev > req->rev)
		return SR_MPA_EBADREV;

	conn->crc = req->crc || rep->crc;

	if (!rep->enhanced) {
		/*
		 * A rev 1 (or rev 2 without block) Reply: the peer does not
		 * do RFC 6581. Unlike siw we carry on, as rev 1 allows.
		 */
		conn->ird = loc->ird;
		conn->ord = loc->ord;
		return 0;
	}
	if (!req->enhanced)
		return SR_MPA_EINVALID;
	if (rep->p2p && !req->p2p)
		return SR_MPA_EINVALID;
	if (rep->p2p &&
	    (!sr_mpa_one_bit(rep->rtr) || (rep->rtr & ~req->rtr)))
		return SR_MPA_ENORTR;
	/* The peer would issue more Reads than we said we can queue. */
	if (rep->ord > req->ird && rep->ord != SR_MPA_V2_IRD_ORD_UNSPEC)
		return SR_MPA_EIRD;

	conn->p2p = rep->p2p;
	conn->rtr = rep->p2p ? rep->rtr : 0;
	conn->ird = req->ird;
	/*
	 * Our ORD is capped by the peer's IRD. A Read RTR is sent regardless:
	 * the peer picked it, so it takes that one zero-length Read.
	 */
	if (rep->ird == SR_MPA_V2_IRD_ORD_UNSPEC)
		conn->ord = req->ord;
	else
		conn->ord = SR_MIN(req->ord, rep->ird);
	return 0;
}

int sr_mpa_rtr_parse(const char *text)
{
	static const struct {
		const char *name;
		uint8_t bits;
	} names[] = {
		{ "read", SR_MPA_RTR_READ },
		{ "write", SR_MPA_RTR_WRITE },
		{ "send", SR_MPA_RTR_SEND },
		{ "all", SR_MPA_RTR_ALL },
	};
	uint8_t set = 0;
	const char *p = text;

	if (!p)
		return -EINVAL;
	for (;;) {
		size_t len, i;

		p += strspn(p, " \t");
		len = strcspn(p, ", \t");
		for (i = 0; i < SR_ARRAY_SIZE(names); i++)
			if (len == strlen(names[i].name) && !strncasecmp(p, names[i].name, len))
				break;
		if (!len || i == SR_ARRAY_SIZE(names))
			return -EINVAL;
		set |= names[i].bits;
		p += len;
		p += strspn(p, " \t");
		if (!*p)
			return set;
		if (*p++ != ',')
			return -EINVAL;
	}
}

enum sr_iw_err sr_mpa_err_code(int err)
{
	switch (err) {
	case SR_MPA_EBADKEY:
	case SR_MPA_EBADREV:
	case SR_MPA_ETOOLONG:
	case SR_MPA_ETRUNC:
	case SR_MPA_EMARKERS:
	case SR_MPA_EINVALID:
		return SR_IW_ERR_MPA_INVALID_RR;
	case SR_MPA_EIRD:
		return SR_IW_ERR_MPA_IRD;
	case SR_MPA_ENORTR:
		return SR_IW_ERR_MPA_NO_RTR;
	default:
		return SR_IW_OK;
	}
}
