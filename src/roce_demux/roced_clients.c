// SPDX-License-Identifier: MIT
/*
 * softrdma-roced: who may register, what each client owns (QPN blocks, the GSI
 * subscription) and the requests of the control channel (rdx_proto.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "roced.h"
#include "common/sr_log.h"

/*
 * Only the daemon's own uid: its clients receive whatever arrives for their QPNs, and a
 * second user must never be handed a channel that carries the first user's traffic. The
 * refusal says whose daemon it is, so the second user learns why (one user per network
 * namespace; another namespace is the way out).
 */
static int roced_admit(struct roced *d, int ctl)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct rdx_msg m = { .op = RDX_HELLO, .status = -EACCES };

	if (getsockopt(ctl, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return -errno;
	if (cr.uid == d->uid)
		return 0;
	m.vals[0] = d->uid;
	m.vals[1] = (uint64_t)getpid();
	snprintf(m.text, sizeof(m.text),
		 "UDP port %u of this network namespace is served by softrdma-roced of uid %u "
		 "(pid %d); one user per network namespace may use soft RoCE",
		 d->port, (unsigned int)d->uid, (int)getpid());
	sr_info("refused uid %u (pid %d)", (unsigned int)cr.uid, (int)cr.pid);
	rdx_send(ctl, &m, -1);
	return -EACCES;
}

int roced_client_add(struct roced *d, int ctl)
{
	struct roced_client *c;
	unsigned int slot;
	struct epoll_event ev = { .events = EPOLLIN };

	if (roced_admit(d, ctl) < 0)
		return -EACCES;
	for (slot = 0; slot < d->ncl_slots && d->cl[slot]; slot++)
		;
	if (slot == d->ncl_slots) {
		unsigned int n = d->ncl_slots ? d->ncl_slots * 2 : 16;
		struct roced_client **cl;

		if (n > UINT16_MAX) /* owner[] holds slot + 1 in 16 bits */
			return -EMFILE;
		cl = realloc(d->cl, n * sizeof(*cl));
		if (!cl)
			return -ENOMEM;
		memset(cl + d->ncl_slots, 0, (n - d->ncl_slots) * sizeof(*cl));
		d->cl = cl;
		d->ncl_slots = n;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ctl = ctl;
	c->data = -1;
	ev.data.u64 = ROCED_TAG(ROCED_EV_CLIENT, slot);
	if (epoll_ctl(d->ep, EPOLL_CTL_ADD, ctl, &ev) < 0) {
		free(c);
		return -errno;
	}
	d->cl[slot] = c;
	d->nclients++;
	return 0;
}

/* Everything the client owned goes with it: its blocks route nowhere from now on. */
static void roced_client_del(struct roced *d, unsigned int slot)
{
	struct roced_client *c = d->cl[slot];

	for (unsigned int b = 0; b < RDX_NBLOCKS && c->nblocks; b++)
		if (d->owner[b] == slot + 1) {
			d->owner[b] = 0;
			c->nblocks--;
		}
	epoll_ctl(d->ep, EPOLL_CTL_DEL, c->ctl, NULL);
	close(c->ctl);
	if (c->data >= 0)
		close(c->data);
	free(c);
	d->cl[slot] = NULL;
	d->nclients--;
	if (d->listener_paused) {
		struct epoll_event ev = { .events = EPOLLIN,
					  .data.u64 = ROCED_TAG(ROCED_EV_LISTEN, 0) };

		if (epoll_ctl(d->ep, EPOLL_CTL_ADD, d->listener, &ev) == 0)
			d->listener_paused = false;
	}
}

/*
 * The data channel. SEQPACKET keeps datagram boundaries and turns our close into the
 * client's EOF. Its room is our send buffer: when a client does not read, its datagrams
 * are dropped (RDX_ST_FULL) and no other client waits.
 */
static int roced_hello(struct roced *d, struct roced_client *c, struct rdx_msg *r)
{
	int sv[2], sz = 4 << 20, e;

	if (c->data >= 0)
		return -EALREADY;
	if (r->arg != RDX_VERSION)
		return -EPROTONOSUPPORT;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return -errno;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	r->vals[0] = d->uid;
	r->vals[1] = (uint64_t)getpid();
	e = rdx_send(c->ctl, r, sv[1]);
	close(sv[1]);
	if (e < 0) {
		close(sv[0]);
		return e;
	}
	c->data = sv[0];
	return 1; /* replied */
}

static int roced_block_alloc(struct roced *d, unsigned int slot, struct rdx_msg *r)
{
	unsigned int span = RDX_BLOCK_LAST - RDX_BLOCK_FIRST + 1;

	for (unsigned int i = 0; i < span; i++) {
		unsigned int b = RDX_BLOCK_FIRST + (d->next_block + i) % span;

		if (!d->owner[b]) {
			d->owner[b] = (uint16_t)(slot + 1);
			d->cl[slot]->nblocks++;
			d->next_block = (b - RDX_BLOCK_FIRST + 1) % span;
			r->arg = b;
			return 0;
		}
	}
	return -ENOSPC;
}

static int roced_request(struct roced *d, unsigned int slot, struct rdx_msg *r)
{
	struct roced_client *c = d->cl[slot];

	if (r->op != RDX_HELLO && c->data < 0)
		return -ENOTCONN;
	switch (r->op) {
	case RDX_HELLO:
		return roced_hello(d, c, r);
	case RDX_BLOCK_ALLOC:
		return roced_block_alloc(d, slot, r);
	case RDX_BLOCK_FREE:
		if (r->arg >= RDX_NBLOCKS || d->owner[r->arg] != slot + 1)
			return -EINVAL;
		d->owner[r->arg] = 0;
		c->nblocks--;
		return 0;
	case RDX_GSI_JOIN:
	case RDX_GSI_LEAVE:
		c->gsi = r->op == RDX_GSI_JOIN;
		return 0;
	case RDX_STATS:
		memcpy(r->vals, d->st, sizeof(d->st));
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

void roced_client_input(struct roced *d, unsigned int slot)
{
	struct rdx_msg r;
	int e = rdx_recv(d->cl[slot]->ctl, &r, NULL, 0);

	if (e == -ETIMEDOUT || e == -EAGAIN)
		return;
	if (e < 0) { /* EOF (the client closed or died) or a broken client */
		roced_client_del(d, slot);
		return;
	}
	e = roced_request(d, slot, &r);
	if (e == 1)
		return;
	r.status = e;
	if (rdx_send(d->cl[slot]->ctl, &r, -1) < 0)
		roced_client_del(d, slot);
}

struct roced_client *roced_owner(struct roced *d, uint32_t qpn)
{
	uint16_t s = d->owner[qpn >> RDX_BLOCK_SHIFT];

	return s ? d->cl[s - 1] : NULL;
}
