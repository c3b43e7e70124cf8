// SPDX-License-Identifier: MIT
/*
 * The device registry: one soft iWARP device per network interface of this network
 * namespace, found with an rtnetlink dump and kept current by an rtnetlink subscription
 * running on the progress engine.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "common/sr_config.h"
#include "common/sr_fork.h"
#include "common/sr_log.h"
#include "engine/sr_engine.h"
#include "verbs/sr_verbs.h"

pthread_mutex_t sr_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sr_list sr_devices = SR_LIST_INIT(sr_devices);

/*
 * The 6-byte hardware address that stands for the device, as the kernel's iWARP drivers keep
 * one: the MAC, or for a link without one (loopback's MAC is all zero, tunnels have none) a
 * locally administered address built from the interface index, so that it is non-zero,
 * unique on the host and stable across processes (the kernel's siw draws a random one; a
 * userspace library re-deriving it in every process must not).
 */
static void sr_device_hwaddr(const struct sr_netdev_link *l, uint8_t mac[6])
{
	static const uint8_t zero[6];

	if (l->has_mac && memcmp(l->addr, zero, 6) != 0) {
		memcpy(mac, l->addr, 6);
		return;
	}
	mac[0] = 0x02;
	mac[1] = 0x53; /* 'S' */
	mac[2] = (uint8_t)(l->ifindex >> 24);
	mac[3] = (uint8_t)(l->ifindex >> 16);
	mac[4] = (uint8_t)(l->ifindex >> 8);
	mac[5] = (uint8_t)l->ifindex;
}

/*
 * Node GUID: modified EUI-64 of that address (universal/local bit flipped, ff:fe in the
 * middle), as siw derives its node GUID from its GID address.
 */
__be64 sr_device_guid_from_link(const struct sr_netdev_link *l)
{
	uint8_t mac[6];
	uint8_t g[8];
	uint64_t v = 0;

	sr_device_hwaddr(l, mac);
	g[0] = mac[0] ^ 0x02;
	g[1] = mac[1];
	g[2] = mac[2];
	g[3] = 0xff;
	g[4] = 0xfe;
	g[5] = mac[3];
	g[6] = mac[4];
	g[7] = mac[5];
	for (int i = 0; i < 8; i++)
		v = (v << 8) | g[i];
	return htobe64(v);
}

/*
 * GID 0 as the kernel's iWARP drivers (siw, irdma, cxgb4) lay it out: the address in bytes
 * 0-5, the rest zero. Consumers tell iWARP from InfiniBand by it: libfabric's verbs provider
 * takes a GID with both a non-zero prefix and a non-zero interface id for an IB address and
 * then asks for the IB port space.
 */
void sr_device_gid_from_link(const struct sr_netdev_link *l, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	sr_device_hwaddr(l, gid->raw);
}

enum ibv_mtu sr_mtu_to_ib(unsigned int mtu)
{
	if (mtu >= 4096)
		return IBV_MTU_4096;
	if (mtu >= 2048)
		return IBV_MTU_2048;
	if (mtu >= 1024)
		return IBV_MTU_1024;
	if (mtu >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

void sr_device_get(struct sr_device *dev)
{
	pthread_mutex_lock(&sr_registry_lock);
	dev->refcnt++;
	pthread_mutex_unlock(&sr_registry_lock);
}

static void sr_device_put_locked(struct sr_device *dev)
{
	sr_assert_held(&sr_registry_lock);
	if (--dev->refcnt == 0)
		free(dev);
}

void sr_device_put(struct sr_device *dev)
{
	pthread_mutex_lock(&sr_registry_lock);
	sr_device_put_locked(dev);
	pthread_mutex_unlock(&sr_registry_lock);
}

void sr_device_link(struct sr_device *dev, struct sr_netdev_link *out, bool *removed)
{
	pthread_mutex_lock(&sr_registry_lock);
	*out = dev->link;
	if (removed)
		*removed = dev->removed;
	pthread_mutex_unlock(&sr_registry_lock);
}

static struct sr_device *sr_device_find_locked(int ifindex)
{
	struct sr_list *pos, *tmp;

	sr_assert_held(&sr_registry_lock);
	sr_list_for_each_safe(pos, tmp, &sr_devices) {
		struct sr_device *dev = sr_list_entry(pos, struct sr_device, node);

		if (dev->link.ifindex == ifindex)
			return dev;
	}
	return NULL;
}

static void sr_device_add_locked(const struct sr_netdev_link *l)
{
	struct sr_device *dev = calloc(1, sizeof(*dev));
	const char *prefix = sr_config_str("SOFTRDMA_DEVICE_PREFIX");

	sr_assert_held(&sr_registry_lock);
	if (!dev)
		return;
	dev->refcnt = 1; /* the registry's */
	dev->link = *l;
	dev->node_guid = sr_device_guid_from_link(l);
	sr_list_init(&dev->contexts);
	dev->ibdev.node_type = IBV_NODE_RNIC;
	dev->ibdev.transport_type = IBV_TRANSPORT_IWARP;
	dev->xport = SR_XPORT_IWARP; /* every interface's device is soft iWARP */
	snprintf(dev->ibdev.name, sizeof(dev->ibdev.name), "%s%s", prefix, l->name);
	snprintf(dev->ibdev.dev_name, sizeof(dev->ibdev.dev_name), "%s", dev->ibdev.name);
	/* No kernel objects back these paths; sysfs reads through them fail cleanly. */
	snprintf(dev->ibdev.dev_path, sizeof(dev->ibdev.dev_path),
		 "/sys/class/infiniband_verbs/%s", dev->ibdev.name);
	snprintf(dev->ibdev.ibdev_path, sizeof(dev->ibdev.ibdev_path),
		 "/sys/class/infiniband/%s", dev->ibdev.name);
	sr_list_add_tail(&sr_devices, &dev->node);
	sr_dbg("device %s for ifindex %d", dev->ibdev.name, l->ifindex);
}

/* Apply a new link state, telling open contexts what changed. */
static void sr_device_update_locked(struct sr_device *dev, const struct sr_netdev_link *l)
{
	bool was = sr_netdev_link_running(&dev->link);
	bool now = sr_netdev_link_running(l);
	bool mac_changed = memcmp(dev->link.addr, l->addr, 6) != 0;

	sr_assert_held(&sr_registry_lock);
	dev->link = *l;
	/* The device name and node GUID are fixed at discovery, like a NIC's. The GID follows. */
	if (was != now)
		sr_async_post_device(dev, now ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
	if (mac_changed)
		sr_async_post_device(dev, IBV_EVENT_GID_CHANGE);
}

static void sr_device_remove_locked(struct sr_device *dev)
{
	sr_assert_held(&sr_registry_lock);
	dev->removed = true;
	sr_async_post_device(dev, IBV_EVENT_DEVICE_FATAL);
	sr_list_del(&dev->node);
	sr_device_put_locked(dev);
}

void sr_device_registry_refresh(void)
{
	struct sr_netdev_link *links;
	struct sr_list *pos, *tmp;
	size_t n;

	if (sr_netdev_dump_links(&links, &n) < 0)
		return;
	pthread_mutex_lock(&sr_registry_lock);
	sr_list_for_each_safe(pos, tmp, &sr_devices) {
		struct sr_device *dev = sr_list_entry(pos, struct sr_device, node);
		bool found = false;

		for (size_t i = 0; i < n; i++)
			found |= links[i].ifindex == dev->link.ifindex;
		if (!found)
			sr_device_remove_locked(dev);
	}
	for (size_t i = 0; i < n; i++) {
		struct sr_device *dev = sr_device_find_locked(links[i].ifindex);

		if (dev)
			sr_device_update_locked(dev, &links[i]);
		else
			sr_device_add_locked(&links[i]);
	}
	pthread_mutex_unlock(&sr_registry_lock);
	free(links);
}

/* ---- rtnetlink monitor on the engine thread ---- */

static struct {
	pthread_once_t once;
	int err;
	struct sr_netdev_monitor *mon;
	struct sr_engine_handler h;
} sr_mon = { .once = PTHREAD_ONCE_INIT };

static void sr_device_on_link(void *arg, enum sr_netdev_event ev, const struct sr_netdev_link *l)
{
	struct sr_device *dev;

	pthread_mutex_lock(&sr_registry_lock);
	dev = sr_device_find_locked(l->ifindex);
	if (ev == SR_NETDEV_LINK_DEL) {
		if (dev)
			sr_device_remove_locked(dev);
	} else if (dev) {
		sr_device_update_locked(dev, l);
	} else {
		sr_device_add_locked(l);
	}
	pthread_mutex_unlock(&sr_registry_lock);
}

static void sr_device_monitor_ready(struct sr_engine_handler *h, uint32_t events)
{
	if (sr_netdev_monitor_process(sr_mon.mon) == -ENOBUFS)
		sr_device_registry_refresh(); /* missed notifications: resynchronise */
}

static void sr_device_monitor_init(void)
{
	sr_mon.mon = sr_netdev_monitor_open(sr_device_on_link, NULL);
	if (!sr_mon.mon) {
		sr_mon.err = -errno;
		return;
	}
	sr_mon.h.fd = sr_netdev_monitor_fd(sr_mon.mon);
	sr_mon.h.cb = sr_device_monitor_ready;
	/* This starts the data path's engine: a blocking ibv_get_cq_event may help it. */
	sr_engine_allow_helpers();
	sr_mon.err = sr_engine_add(&sr_mon.h, EPOLLIN);
	/* Subscribed first, dumped second: no change can fall between the two. */
	sr_device_registry_refresh();
}

/*
 * fork(): the child's monitor socket is a copy of the parent's (reading it would take the
 * parent's notifications) and its handler is in the parent's engine. Drop the copy; the
 * child's next ibv_open_device subscribes anew on the child's own engine.
 */
static void sr_device_fork_child(void)
{
	if (sr_mon.mon)
		sr_netdev_monitor_close(sr_mon.mon);
	memset(&sr_mon, 0, sizeof(sr_mon));
	sr_mon.once = (pthread_once_t)PTHREAD_ONCE_INIT;
}

SR_FORK_SAFE_MUTEX(sr_registry, &sr_registry_lock, sr_device_fork_child)

int sr_device_monitor_start(void)
{
	pthread_once(&sr_mon.once, sr_device_monitor_init);
	return sr_mon.err;
}

/* ---- public API ---- */

SR_EXPORT struct ibv_device **(ibv_get_device_list)(int *num_devices)
{
	struct ibv_device **list;
	struct sr_list *pos, *tmp;
	int n = 0, i = 0;

	sr_device_registry_refresh();
	pthread_mutex_lock(&sr_registry_lock);
	sr_list_for_each_safe(pos, tmp, &sr_devices)
		n++;
	list = calloc(n + 1, sizeof(*list));
	if (!list) {
		pthread_mutex_unlock(&sr_registry_lock);
		errno = ENOMEM;
		return NULL;
	}
	sr_list_for_each_safe(pos, tmp, &sr_devices) {
		struct sr_device *dev = sr_list_entry(pos, struct sr_device, node);

		dev->refcnt++;
		list[i++] = &dev->ibdev;
	}
	pthread_mutex_unlock(&sr_registry_lock);
	if (num_devices)
		*num_devices = n;
	return list;
}

SR_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	if (!list)
		return;
	for (struct ibv_device **d = list; *d; d++)
		sr_device_put(to_sr_dev(*d));
	free(list);
}

SR_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

SR_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return to_sr_dev(device)->node_guid;
}

SR_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return to_sr_dev(device)->link.ifindex;
}
