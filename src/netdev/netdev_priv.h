/* SPDX-License-Identifier: MIT */
#ifndef SR_NETDEV_PRIV_H
#define SR_NETDEV_PRIV_H

#include <netlink/route/link.h>
#include "netdev/sr_netdev.h"

/* Fill our plain description from a libnl link object. */
void sr_netdev_link_from_nl(struct rtnl_link *nl, struct sr_netdev_link *out);

#endif
