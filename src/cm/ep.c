// SPDX-License-Identifier: MIT
/*
 * The synchronous endpoint API: rdma_getaddrinfo / rdma_freeaddrinfo, rdma_create_ep /
 * rdma_destroy_ep and rdma_get_request (rdma_server, rdma_client, rsockets).
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_priv.h"
#include "netdev/sr_route.h"
#include <rdma/rdma_verbs.h>

static int sr_copy_addr(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src,
			socklen_t len)
{
	*dst = malloc(len);
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

static void sr_rai_to_ai(const struct rdma_addrinfo *h, struct addrinfo *ai)
{
	memset(ai, 0, sizeof(*ai));
	if (h->ai_flags & RAI_PASSIVE)
		ai->ai_flags |= AI_PASSIVE;
	if (h->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (h->ai_family == AF_INET || h->ai_family == AF_INET6)
		ai->ai_family = h->ai_family;
	switch (h->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}
	switch (h->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	default:
		break;
	}
}

/* One entry, as upstream: a passive wildcard lookup prefers 0.0.0.0 over ::. */
static const struct addrinfo *sr_pick(const struct addrinfo *list, bool prefer_v4)
{
	if (prefer_v4)
		for (const struct addrinfo *a = list; a; a = a->ai_next)
			if (a->ai_family == AF_INET)
				return a;
	for (const struct addrinfo *a = list; a; a = a->ai_next)
		if (a->ai_family == AF_INET || a->ai_family == AF_INET6)
			return a;
	return NULL;
}

SR_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			       const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	const struct addrinfo *pick;
	struct rdma_addrinfo *rai;
	struct addrinfo ah, *ai = NULL;
	bool passive;
	int err;

	if ((!node && !service && !hints) || !res)
		return sr_cm_fail(EINVAL);
	err = sr_cm_init();
	if (err)
		return sr_cm_fail(-err);
	if (!hints)
		hints = &nohints;
	/* iWARP devices have no IB addressing: an AF_IB answer could not be used anywhere */
	if (hints->ai_family == AF_IB)
		return sr_cm_fail(EAFNOSUPPORT);
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return sr_cm_fail(ENOMEM);
	passive = hints->ai_flags & RAI_PASSIVE;

	if (node || service) {
		sr_rai_to_ai(hints, &ah);
		err = getaddrinfo(node, service, hints == &nohints ? NULL : &ah, &ai);
		if (err) {
			int e = errno;

			free(rai);
			/* upstream hands back the EAI_* code in errno (EAI_SYSTEM keeps errno) */
			errno = err == EAI_SYSTEM ? e : err;
			return -1;
		}
		pick = sr_pick(ai, passive && !node && !hints->ai_family);
		if (!pick) {
			freeaddrinfo(ai);
			free(rai);
			return sr_cm_fail(EADDRNOTAVAIL);
		}
		rai->ai_family = pick->ai_family;
		rai->ai_qp_type = hints->ai_qp_type ? hints->ai_qp_type :
				  pick->ai_socktype == SOCK_DGRAM ? IBV_QPT_UD : IBV_QPT_RC;
		rai->ai_port_space = hints->ai_port_space ? hints->ai_port_space :
				     pick->ai_protocol == IPPROTO_UDP ? RDMA_PS_UDP : RDMA_PS_TCP;
		if (passive) {
			rai->ai_flags = RAI_PASSIVE;
			err = sr_copy_addr(&rai->ai_src_addr, &rai->ai_src_len, pick->ai_addr,
					   pick->ai_addrlen);
			if (!err && pick->ai_canonname)
				rai->ai_src_canonname = strdup(pick->ai_canonname);
		} else {
			err = sr_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, pick->ai_addr,
					   pick->ai_addrlen);
			if (!err && pick->ai_canonname)
				rai->ai_dst_canonname = strdup(pick->ai_canonname);
		}
		freeaddrinfo(ai);
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len)
			err = sr_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, hints->ai_dst_addr,
					   hints->ai_dst_len);
	}
	if (!err && !rai->ai_src_len && hints->ai_src_len)
		err = sr_copy_addr(&rai->ai_src_addr, &rai->ai_src_len, hints->ai_src_addr,
				   hints->ai_src_len);
	if (err) {
		rdma_freeaddrinfo(rai);
		return sr_cm_fail(-err);
	}
	*res = rai;
	return 0;
}

SR_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

SR_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			     struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	struct sr_cm_id *s;
	int err;

	if (!id || !res)
		return sr_cm_fail(EINVAL);
	if (rdma_create_id(NULL, &cm_id, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	s = to_sr_id(cm_id);

	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(cm_id, res->ai_src_addr))
			goto fail;
		if (pd)
			cm_id->pd = pd;
		if (qp_init_attr) {
			/* rdma_get_request() creates each request's QP from these */
			s->ep_attr = malloc(sizeof(*s->ep_attr));
			if (!s->ep_attr) {
				errno = ENOMEM;
				goto fail;
			}
			*s->ep_attr = *qp_init_attr;
			s->ep_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		}
		*id = cm_id;
		return 0;
	}

	if (rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000))
		goto fail;
	if (rdma_resolve_route(cm_id, 2000))
		goto fail;
	if (qp_init_attr) {
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		if (rdma_create_qp(cm_id, pd, qp_init_attr))
			goto fail;
	}
	*id = cm_id;
	return 0;
fail:
	err = errno;
	rdma_destroy_ep(cm_id);
	errno = err;
	return -1;
}

SR_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

SR_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rdma_cm_event *ev;
	struct sr_cm_id *s;

	if (!listen || !id)
		return sr_cm_fail(EINVAL);
	s = to_sr_id(listen);
	if (!s->sync)
		return sr_cm_fail(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->status) {
		listen->event = ev;
		return sr_cm_fail(ev->status < 0 ? -ev->status : ev->status);
	}
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		listen->event = ev;
		return sr_cm_fail(EINVAL);
	}
	if (s->ep_attr) {
		struct ibv_qp_init_attr attr = *s->ep_attr;

		if (rdma_create_qp(ev->id, listen->pd, &attr)) {
			listen->event = ev;
			return -1;
		}
	}
	*id = ev->id;
	(*id)->event = ev;
	return 0;
}
