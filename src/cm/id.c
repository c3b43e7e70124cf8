// SPDX-License-Identifier: MIT
/*
 * The id's bookkeeping: creation, holds, its device, its release. The layer above channels,
 * devices and the port space and below everything that works on an id; rdma_create_id and
 * rdma_destroy_id, which tear down what the layers above hang on an id, are id_api.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"

const char *sr_cm_state_str(enum sr_cm_state s)
{
	static const char *const names[] = {
		[SR_CM_IDLE] = "IDLE",
		[SR_CM_BOUND] = "BOUND",
		[SR_CM_ADDR_QUERY] = "ADDR_QUERY",
		[SR_CM_ADDR_RESOLVED] = "ADDR_RESOLVED",
		[SR_CM_ROUTE_RESOLVED] = "ROUTE_RESOLVED",
		[SR_CM_LISTEN] = "LISTEN",
		[SR_CM_CONNECTING] = "CONNECTING",
		[SR_CM_RESPONDED] = "RESPONDED",
		[SR_CM_CONN_RECV] = "CONN_RECV",
		[SR_CM_ESTABLISHED] = "ESTABLISHED",
		[SR_CM_DISCONNECTING] = "DISCONNECTING",
		[SR_CM_DISCONNECTED] = "DISCONNECTED",
		[SR_CM_FAILED] = "FAILED",
		[SR_CM_DESTROYING] = "DESTROYING",
	};

	return (unsigned int)s < SR_ARRAY_SIZE(names) ? names[s] : "?";
}

struct sr_cm_id *sr_cm_id_new_locked(struct sr_cm_channel *chan, void *context,
				     enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct sr_cm_id *id = calloc(1, sizeof(*id));

	sr_cm_assert_locked();
	if (!id) {
		errno = ENOMEM;
		return NULL;
	}
	if (!chan) {
		chan = sr_cm_channel_new(true);
		if (!chan) {
			free(id);
			return NULL;
		}
		id->sync = true;
	}
	id->chan = chan;
	id->id.channel = &chan->ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qp_type;
	id->fd = -1;
	id->afonly = -1;
	id->tos = -1;
	id->user_timeout_ms = -1;
	id->ack_timeout = -1;
	id->listen_h.fd = -1;
	sr_list_init(&id->hs_list);
	sr_list_init(&id->orphan_node);
	sr_list_init(&id->nwait_node);
	sr_list_add_tail(&sr_cm_ids, &id->node);
	return id;
}

struct sr_cm_id *sr_cm_id_new(struct sr_cm_channel *chan, void *context,
			      enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct sr_cm_id *id;

	pthread_mutex_lock(&sr_cm_lock);
	id = sr_cm_id_new_locked(chan, context, ps, qp_type);
	pthread_mutex_unlock(&sr_cm_lock);
	return id;
}

void sr_cm_id_set_dev(struct sr_cm_id *id, struct sr_cm_dev *dev)
{
	id->dev = dev;
	id->id.verbs = dev->verbs;
	id->id.port_num = 1;
	/*
	 * As librdmacm (cma.c, ucma_get_device): an id that has a device has that device's
	 * default PD in id->pd, held until the id is destroyed (sr_cm_id_release), so
	 * rdma_reg_msgs and QP creation on id->pd work. If it cannot be allocated now, QP
	 * creation tries again (qp.c, sr_cm_id_pd).
	 */
	if (!id->id.pd && !id->uses_default_pd) {
		id->id.pd = sr_cm_dev_get_pd(dev);
		id->uses_default_pd = id->id.pd != NULL;
	}
}

void sr_cm_id_hold(struct sr_cm_id *id)
{
	id->busy++;
}

void sr_cm_id_unhold(struct sr_cm_id *id)
{
	pthread_mutex_lock(&sr_cm_lock);
	id->busy--;
	pthread_cond_broadcast(&sr_cm_cond);
	pthread_mutex_unlock(&sr_cm_lock);
}

/* Last step of every id's life (lock NOT held). */
void sr_cm_id_release(struct sr_cm_id *id)
{
	if (id->fd >= 0)
		close(id->fd);
	if (id->uses_default_pd)
		sr_cm_dev_put_pd(id->dev);
	free(id->ep_attr);
	if (id->sync)
		sr_cm_channel_free(id->chan);
	free(id);
}
