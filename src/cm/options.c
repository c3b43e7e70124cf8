// SPDX-License-Identifier: MIT
/* rdma_set_option and rdma_migrate_id. */
#include <errno.h>
#include <stdlib.h>

#include "cm/cm_priv.h"

static int sr_cm_set_id_option(struct sr_cm_id *s, int optname, const void *val, size_t len)
{
	int v;

	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (len != sizeof(uint8_t))
			return -EINVAL;
		s->tos = *(const uint8_t *)val;
		sr_cm_set_tos(s);
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
		if (len != sizeof(uint8_t))
			return -EINVAL;
		/* TCP retransmits on its own; the value is accepted and has no further use */
		return s->id.qp_type == IBV_QPT_RC ? 0 : -EINVAL;
	default:
		return -ENOSYS;
	}
}

SR_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			      size_t optlen)
{
	int err;

	if (!id || !optval)
		return sr_cm_fail(EINVAL);
	if (level != RDMA_OPTION_ID)
		return sr_cm_fail(ENOSYS); /* RDMA_OPTION_IB_PATH: no IB paths on iWARP */
	pthread_mutex_lock(&sr_cm_lock);
	err = sr_cm_set_id_option(to_sr_id(id), optname, optval, optlen);
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
