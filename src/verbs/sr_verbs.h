/* SPDX-License-Identifier: MIT */
/*
 * Private verbs objects. Every public struct is the first member (or, for the context, the
 * verbs_context that ends with it) of our private struct; to_sr_*() reach the private part.
 */
#ifndef SR_VERBS_H
#define SR_VERBS_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>

#include "common/sr_list.h"
#include "engine/sr_engine.h"
#include "netdev/sr_netdev.h"
#include "transport/sr_xport_contract.h"
#include "verbs/rdma_core_private.h"
#include "verbs/sr_limits.h"

/*
 * One soft iWARP device per network interface. Devices live in a process-wide registry and
 * are reference counted: the registry holds one reference while the interface exists, every
 * device list and open context holds one more.
 */
struct sr_device {
	struct ibv_device ibdev;     /* must be first: applications hold &ibdev */
	int refcnt;                  /* protected by the registry lock */
	bool removed;                /* interface is gone */
	struct sr_netdev_link link;  /* current state; protected by the registry lock */
	__be64 node_guid;
	enum sr_xport_kind xport;    /* what carries its QPs (sr_xport_register) */
	struct sr_list node;         /* registry list */
	struct sr_list contexts;     /* open sr_contexts, for async events */
};

static inline struct sr_device *to_sr_dev(struct ibv_device *d)
{
	return sr_container_of(d, struct sr_device, ibdev);
}

struct sr_async_event {
	struct sr_list node;
	struct ibv_async_event ev;
};

/*
 * softrdma internals librdmacm needs, reached through the context instead of exported
 * symbols (the export maps stay exactly upstream's). One per transport kind, built from
 * the transport's registration (context.c); attach and disconnect are NULL when no
 * transport of the device's kind is linked in.
 */
struct sr_priv_ops {
	enum sr_xport_kind kind; /* the sr_xport_attach this context's QPs take */
	/* struct sr_xport_desc */
	int (*attach)(struct ibv_qp *qp, const struct sr_xport_attach *a);
	void (*disconnect)(struct ibv_qp *qp);
	/* The live QP numbered qpn on this context, or NULL (rdma_accept/rdma_establish with
	 * conn_param->qp_num for QPs the application created itself, e.g. rping -q). */
	struct ibv_qp *(*qp_by_num)(struct ibv_context *ctx, uint32_t qpn);
	/* The CM connects this QP: ibv_modify_qp may take it to RTS (verbs/qp_modify.c). */
	void (*llp_claim)(struct ibv_qp *qp);
	/* The CM has a connection for a QP the application moves itself: the next unclaimed
	 * QP of ctx moved to RTS is claimed for it. */
	void (*llp_grant)(struct ibv_context *ctx);
};

struct sr_context {
	struct verbs_context vctx; /* ends with struct ibv_context; must be first */
	uint32_t magic;            /* SR_CONTEXT_MAGIC: lets librdmacm recognise our contexts */
	const struct sr_priv_ops *priv_ops;
	struct sr_device *dev;
	pthread_mutex_t lock;
	struct sr_list async_events; /* queued, not yet fetched; one eventfd count each */
	struct sr_list dev_node;     /* in dev->contexts */
	uint32_t epoch;              /* the engine's epoch at open: another one means fork()
				      * (sr_ctx_inherited) */
	unsigned int llp_grants;     /* sr_qp_llp_grant()s not yet used; under lock */
};

#define SR_CONTEXT_MAGIC 0x53526378u /* "SRcx" */

static inline struct sr_context *to_sr_ctx(struct ibv_context *c)
{
	return sr_container_of(c, struct sr_context, vctx.context);
}

/*
 * A context the parent of a fork() opened, seen in the child (docs/ARCHITECTURE.md,
 * "fork()"): its QPs' sockets, eventfds and engine are the parent's, so the data path and
 * the event calls on it and its objects fail with EIO before touching any of them (or any
 * lock a thread of the parent may have held).
 */
static inline bool sr_ctx_inherited(struct ibv_context *c)
{
	return to_sr_ctx(c)->epoch != sr_engine_epoch();
}

/* device.c: registry */
void sr_device_registry_refresh(void);
void sr_device_get(struct sr_device *dev);
void sr_device_put(struct sr_device *dev);
/* Snapshot of the device's link state. */
void sr_device_link(struct sr_device *dev, struct sr_netdev_link *out, bool *removed);
/* Start the rtnetlink monitor that keeps devices current (idempotent). */
int sr_device_monitor_start(void);
/* Derivations from the link, shared by device list and queries. */
__be64 sr_device_guid_from_link(const struct sr_netdev_link *l);
void sr_device_gid_from_link(const struct sr_netdev_link *l, union ibv_gid *gid);
enum ibv_mtu sr_mtu_to_ib(unsigned int mtu);

/* context.c */
void sr_context_fill_ops(struct sr_context *ctx);

/* async.c */
void sr_async_post(struct sr_context *ctx, const struct ibv_async_event *ev);
/* Post to every open context of dev (registry lock held by caller is fine). */
void sr_async_post_device(struct sr_device *dev, enum ibv_event_type type);

/* query.c */
void sr_fill_device_attr(struct sr_device *dev, struct ibv_device_attr *a);
int sr_fill_port_attr(struct sr_device *dev, uint8_t port, struct ibv_port_attr *a);

/* Process-wide registry lock (device.c). Lock order: registry lock, then ctx->lock. */
extern pthread_mutex_t sr_registry_lock;

#endif
