// SPDX-License-Identifier: MIT
/*
 * The devices librdmacm hands out as id->verbs: one context per soft iWARP device, opened
 * on first use and kept open while the library is loaded (as upstream's ucma does), so
 * every id on a device shares one context and one default PD.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"
#include "netdev/sr_route.h"
#include "verbs/sr_verbs.h"

/*
 * Opening a device (sr_cm_dev_by_ifindex: ibv_get_device_list, ibv_open_device,
 * ibv_query_device) never happens under sr_cm_lock. ibv_open_device starts libibverbs'
 * rtnetlink device monitor on libibverbs' engine and takes libibverbs' device registry
 * lock, and that engine's thread is the one that calls back into the CM with the CM lock
 * (sr_cm_link_closed); the listing reads sysfs and asks rtnetlink. Under the CM lock every
 * other CM call of the process would wait for all that, and the two libraries' locks would
 * be ordered. Callers holding the lock look with sr_cm_dev_find (opened devices only) and
 * let the lock go to open one (passive.c, addr.c).
 *
 * Lock order: sr_cm_lock, then sr_cm_dev_lock.
 */
static pthread_mutex_t sr_cm_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sr_cm_dev *sr_cm_devs;

static pthread_once_t sr_cm_once = PTHREAD_ONCE_INIT;
static int sr_cm_init_err;

static void sr_cm_do_init(void)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);

	if (!list)
		sr_cm_init_err = -(errno ? errno : ENODEV);
	else if (n == 0)
		sr_cm_init_err = -ENODEV;
	ibv_free_device_list(list);
}

int sr_cm_init(void)
{
	pthread_once(&sr_cm_once, sr_cm_do_init);
	return sr_cm_init_err;
}

static void sr_cm_devices_fork_child(void)
{
	/* Contexts of the parent's engine: left open (closing would touch their engine
	 * state); the child opens its own on first use. */
	pthread_mutex_init(&sr_cm_dev_lock, NULL);
	sr_cm_devs = NULL;
}

static uint8_t sr_u8(int v)
{
	return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static struct sr_cm_dev *sr_cm_dev_find_locked(int ifindex)
{
	sr_assert_held(&sr_cm_dev_lock);
	for (struct sr_cm_dev *d = sr_cm_devs; d; d = d->next)
		if (d->ifindex == ifindex)
			return d;
	return NULL;
}

struct sr_cm_dev *sr_cm_dev_find(int ifindex)
{
	struct sr_cm_dev *d;

	pthread_mutex_lock(&sr_cm_dev_lock);
	d = sr_cm_dev_find_locked(ifindex);
	pthread_mutex_unlock(&sr_cm_dev_lock);
	return d;
}

struct sr_cm_dev *sr_cm_dev_by_ifindex(int ifindex)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr attr;
	struct sr_cm_dev *d;
	int n = 0, err;

	d = sr_cm_dev_find(ifindex);
	if (d)
		return d;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (int i = 0; i < n; i++) {
		if (ibv_get_device_index(list[i]) == ifindex) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	}
	ibv_free_device_list(list);
	if (!ctx) {
		if (!errno)
			errno = ENODEV;
		return NULL;
	}

	/* The CM negotiates within what this device says it can do, like the kernel's CM. */
	err = ibv_query_device(ctx, &attr);
	d = err ? NULL : calloc(1, sizeof(*d));
	if (!d) {
		ibv_close_device(ctx);
		errno = err ? err : ENOMEM;
		return NULL;
	}
	d->verbs = ctx;
	d->ifindex = ifindex;
	d->max_resp_res = sr_u8(attr.max_qp_rd_atom);
	d->max_init_depth = sr_u8(attr.max_qp_init_rd_atom);

	pthread_mutex_lock(&sr_cm_dev_lock);
	if (sr_cm_dev_find_locked(ifindex)) {
		/* another thread opened it meanwhile: keep theirs */
		struct sr_cm_dev *other = sr_cm_dev_find_locked(ifindex);

		pthread_mutex_unlock(&sr_cm_dev_lock);
		ibv_close_device(ctx);
		free(d);
		return other;
	}
	d->next = sr_cm_devs;
	sr_cm_devs = d;
	pthread_mutex_unlock(&sr_cm_dev_lock);
	sr_dbg("opened %s for ifindex %d", ibv_get_device_name(ctx->device), ifindex);
	return d;
}

struct sr_cm_dev *sr_cm_dev_by_verbs(struct ibv_context *verbs)
{
	struct sr_cm_dev *d;

	pthread_mutex_lock(&sr_cm_dev_lock);
	for (d = sr_cm_devs; d; d = d->next)
		if (d->verbs == verbs)
			break;
	pthread_mutex_unlock(&sr_cm_dev_lock);
	return d;
}

int sr_cm_dev_ifindex_for_local(const struct sockaddr *sa)
{
	struct sockaddr_storage a;
	struct sr_route rt;
	int ifindex, err;

	sr_addr_store(&a, sa);
	/*
	 * Loopback addresses are lo's, and the kernel numbers lo 1 in every namespace
	 * (LOOPBACK_IFINDEX): no address dump per accepted connection on 127.0.0.1.
	 */
	if (sr_addr_is_loopback((struct sockaddr *)&a))
		return SR_LOOPBACK_IFINDEX;
	ifindex = sr_addr_owner((struct sockaddr *)&a);
	if (ifindex <= 0) {
		/* 127.0.0.2 and friends: owned by no interface, routed to lo */
		err = sr_route_lookup((struct sockaddr *)&a, NULL, 0, &rt);
		if (err) {
			errno = -err;
			return 0;
		}
		ifindex = rt.dev_ifindex;
	}
	return ifindex;
}

struct sr_cm_dev *sr_cm_dev_for_local(const struct sockaddr *sa)
{
	int ifindex = sr_cm_dev_ifindex_for_local(sa);

	return ifindex > 0 ? sr_cm_dev_by_ifindex(ifindex) : NULL;
}

struct ibv_pd *sr_cm_dev_get_pd(struct sr_cm_dev *dev)
{
	struct ibv_pd *pd;

	pthread_mutex_lock(&sr_cm_dev_lock);
	if (!dev->pd)
		dev->pd = ibv_alloc_pd(dev->verbs);
	pd = dev->pd;
	if (pd)
		dev->pd_users++;
	pthread_mutex_unlock(&sr_cm_dev_lock);
	return pd;
}

void sr_cm_dev_put_pd(struct sr_cm_dev *dev)
{
	pthread_mutex_lock(&sr_cm_dev_lock);
	/* If the application still has MRs on it, keep it for the next user. */
	if (--dev->pd_users == 0 && ibv_dealloc_pd(dev->pd) == 0)
		dev->pd = NULL;
	pthread_mutex_unlock(&sr_cm_dev_lock);
}

const struct sr_priv_ops *sr_cm_priv_ops(struct ibv_context *verbs)
{
	struct sr_context *c;

	if (!verbs)
		return NULL;
	c = to_sr_ctx(verbs);
	return c->magic == SR_CONTEXT_MAGIC ? c->priv_ops : NULL;
}

/* fork(): registered here, not in core.c, so that the core calls no CM file. */
__attribute__((constructor)) static void sr_cm_devices_fork_register(void)
{
	pthread_atfork(NULL, NULL, sr_cm_devices_fork_child);
}

SR_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_device **list;
	struct ibv_context **out;
	int n = 0, k = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	out = calloc((size_t)n + 1, sizeof(*out));
	if (!out) {
		ibv_free_device_list(list);
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		struct sr_cm_dev *d = sr_cm_dev_by_ifindex(ibv_get_device_index(list[i]));

		if (d)
			out[k++] = d->verbs;
	}
	ibv_free_device_list(list);
	if (num_devices)
		*num_devices = k;
	return out;
}

SR_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list); /* the contexts stay open, as upstream's do */
}
