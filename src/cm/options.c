// SPDX-License-Identifier: MIT
/*
 * rdma_set_option and rdma_migrate_id.
 *
 * Options of the RDMA_OPTION_ID level that touch the wire become options of the id's TCP
 * socket, applied when the socket is made (bind) and to the socket of the moment when set:
 *   RDMA_OPTION_ID_TOS         -> IP_TOS (IPv4) / IPV6_TCLASS (IPv6; IP_TOS too, for
 *                                 v4-mapped peers)
 *   RDMA_OPTION_ID_ACK_TIMEOUT -> TCP_USER_TIMEOUT of 4.096 us * 2^v, rounded up to whole
 *                                 milliseconds, v capped at 31 (IB's 5-bit field); v = 0 is
 *                                 IB's "wait for ever" and leaves TCP's own limit in place.
 * TCP_USER_TIMEOUT bounds how long sent data may stay unacknowledged before the kernel
 * gives up on the connection: the same job as the IB local ACK timeout, so a dead path
 * ends the connection (flushed QP, DISCONNECTED) in about the time asked for, instead of
 * after TCP's ~15 minutes of retransmissions. Like the kernel's iWARP CM, set after the
 * connection is handed to its QP they no longer reach it.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <infiniband/sa.h>

#include "cm/cm_priv.h"

/* IB encodes the local ACK timeout in 5 bits. */
#define SR_CM_ACK_TIMEOUT_MAX 31

/* 4.096 us * 2^v in ms, rounded up; 0 for v == 0 (no limit of ours). */
static int sr_cm_ack_timeout_ms(uint8_t v)
{
	uint64_t ns;

	if (!v)
		return 0;
	if (v > SR_CM_ACK_TIMEOUT_MAX)
		v = SR_CM_ACK_TIMEOUT_MAX;
	ns = 4096ull << v;
	return (int)((ns + 999999) / 1000000);
}

/* The socket the id has right now: bound/listening, or its connection's (lock held). */
static int sr_cm_id_sock(const struct sr_cm_id *s)
{
	if (s->fd >= 0)
		return s->fd;
	if (s->conn && !s->conn->dead)
		return s->conn->sock.fd;
	return -1;
}

static int sr_cm_set_id_option(struct sr_cm_id *s, int optname, const void *val, size_t len)
{
	int v;

	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (len != sizeof(uint8_t))
			return -EINVAL;
		s->tos = *(const uint8_t *)val;
		sr_cm_apply_sockopts(s, sr_cm_id_sock(s));
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
		if (len != sizeof(int))
			return -EINVAL;
		v = *(const int *)val;
		/* set in any state but LISTEN; cleared only while IDLE */
		if (s->state == SR_CM_LISTEN || (!v && s->state != SR_CM_IDLE))
			return -EINVAL;
		s->reuseaddr = v != 0;
		return 0;
	case RDMA_OPTION_ID_AFONLY:
		if (len != sizeof(int))
			return -EINVAL;
		if (s->state != SR_CM_IDLE && s->state != SR_CM_BOUND)
			return -EINVAL;
		/* takes effect on the socket at bind time */
		s->afonly = *(const int *)val ? 1 : 0;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (len != sizeof(uint8_t) || s->id.qp_type != IBV_QPT_RC)
			return -EINVAL;
		s->user_timeout_ms = sr_cm_ack_timeout_ms(*(const uint8_t *)val);
		s->ack_timeout = *(const uint8_t *)val;
		sr_cm_apply_sockopts(s, sr_cm_id_sock(s));
		return 0;
	default:
		return -ENOSYS;
	}
}

/*
 * RDMA_OPTION_IB_PATH hands the CM a resolved path instead of rdma_resolve_route. The
 * kernel CM takes it on any device in ADDR_RESOLVED (an iWARP id has no use for the path
 * record itself) and reports ROUTE_RESOLVED; so do we. The array must hold a primary,
 * bidirectional GMP path, as the kernel checks.
 */
static int sr_cm_set_ib_path(struct sr_cm_id *s, const void *val, size_t len)
{
	const uint32_t want = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
			      IBV_PATH_FLAG_BIDIRECTIONAL;
	const struct ibv_path_data *p = val;
	bool found = false;

	if (!len || len % sizeof(*p))
		return -EINVAL;
	for (size_t i = 0; i < len / sizeof(*p) && !found; i++)
		found = p[i].flags == want;
	if (!found || !s->dev || s->state != SR_CM_ADDR_RESOLVED)
		return -EINVAL;
	sr_cm_state_set(s, SR_CM_ROUTE_RESOLVED);
	sr_cm_post(s, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
	return 0;
}

SR_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			      size_t optlen)
{
	int err;

	if (!id || !optval)
		return sr_cm_fail(EINVAL);
	pthread_mutex_lock(&sr_cm_lock);
	if (level == RDMA_OPTION_ID)
		err = sr_cm_set_id_option(to_sr_id(id), optname, optval, optlen);
	else if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
		err = sr_cm_set_ib_path(to_sr_id(id), optval, optlen);
	else
		err = -ENOSYS;
	pthread_mutex_unlock(&sr_cm_lock);
	return err ? sr_cm_fail(-err) : 0;
}

SR_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct sr_cm_channel *to, *from;
	struct sr_cm_id *s;
	bool was_sync;

	if (!id)
		return sr_cm_fail(EINVAL);
	s = to_sr_id(id);
	if (!channel && s->sync)
		return sr_cm_fail(EINVAL);
	if (channel) {
		to = to_sr_chan(channel);
	} else {
		to = sr_cm_channel_new(true);
		if (!to)
			return -1;
	}
	if (s->sync && id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}

	pthread_mutex_lock(&sr_cm_lock);
	from = s->chan;
	was_sync = s->sync;
	/* queued events follow the id, in order */
	sr_cm_chan_take(from, s, to, NULL);
	s->chan = to;
	id->channel = &to->ch;
	s->sync = channel == NULL;
	/* events already fetched from the old channel must be acked first */
	while (s->reported != s->acked)
		pthread_cond_wait(&sr_cm_cond, &sr_cm_lock);
	pthread_mutex_unlock(&sr_cm_lock);
	if (was_sync)
		sr_cm_channel_free(from);
	return 0;
}
