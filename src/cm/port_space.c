// SPDX-License-Identifier: MIT
/*
 * The port space: which local TCP port an id gets, and with whom it may share it.
 *
 * Our RDMA ports are the host's TCP ports. Every id that holds a port owns a real TCP socket
 * bound to it, so the kernel enforces the host-wide rules (a TCP server on the port, other
 * processes, ports below ip_unprivileged_port_start -> EACCES) and firewalls and `ss -tn`
 * see RDMA connections as what they are. On top of that this file keeps the process's own
 * table of port owners and applies the rules of the kernel's RDMA CM, which a plain socket
 * bind cannot express:
 *
 * 1. Explicit port (rdma_bind_addr, or rdma_resolve_addr with a source port): for every
 *    other owner of the port, unless both ids set RDMA_OPTION_ID_REUSEADDR (a listener has
 *    dropped its reuse), or both are address-family-only and of different families:
 *    either address a wildcard (0.0.0.0, ::) or a loopback address -> EADDRNOTAVAIL;
 *    the same address -> EADDRINUSE; different specific addresses coexist.
 * 2. Port 0 (implicit binds at rdma_resolve_addr, rdma_listen on an unbound id, explicit
 *    binds to port 0): a port from net.ipv4.ip_local_port_range minus
 *    ip_local_reserved_ports, probed from a random start, that is "unique" against every
 *    other owner: their destination ports differ (both known), or their source addresses
 *    differ (both specific), or their destination addresses differ (both specific). An
 *    active id resolving an address knows its destination before it binds, so active ids
 *    share a port as long as their (source, source port, destination, destination port)
 *    tuples differ, exactly what TCP's connect() allows; ids without a destination
 *    (listeners, explicit binds) never share. One host therefore holds about 28,000
 *    connections per destination address and port rather than 28,000 in all.
 * 3. rdma_listen on a reuse id re-checks rule 1 as if it had no reuse (EADDRINUSE or
 *    EADDRNOTAVAIL when another id holds the port) and then clears reuse.
 *
 * Sockets of ids that may share carry SO_REUSEADDR, which lets several non-listening TCP
 * sockets bind one address and port; the kernel still refuses a bind next to a listening
 * socket (so a TCP server on the port makes our bind fail and we try the next port) and
 * refuses connect() for a 4-tuple already in use (including by TIME_WAIT sockets or other
 * processes' RDMA ids, which our table cannot see). When connect() says so (EADDRNOTAVAIL),
 * an implicitly bound id lets the kernel choose its port at connect, as for a TCP client
 * (IP_BIND_ADDRESS_NO_PORT), before anything goes on the wire; the new port is visible
 * through rdma_get_src_port() from then on. The same happens at resolve when every port
 * our table allows is held by sockets that do not share with ours (a plain TCP program's
 * connections or their TIME_WAIT: the kernel refuses our bind, but its own choice at connect
 * shares such ports by 4-tuple). The kernel's choice skips ports that someone bound
 * explicitly (ours among them); only when it finds nothing are those tried, connecting on
 * each, and then the connect fails with EADDRNOTAVAIL.
 *
 * Differences from the kernel CM, on purpose: an active id binds its route's source address,
 * not the wildcard, and loopback counts as a specific address for rule 2, so sharing follows
 * TCP's 4-tuple. Everything here runs under sr_cm_lock.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"
#include "common/sr_sockaddr.h"

/* Owners per port, singly linked through sr_cm_id.port_next (zero pages until used). */
static struct sr_cm_id *sr_port_owners[65536];

/* ------------------------------------------------------------ ranges -- */

/*
 * net.ipv4.ip_local_port_range, ip_local_reserved_ports and net.ipv6.bindv6only of the
 * caller's namespace, re-read at most once a second: a resolve storm or a port with many
 * owners must not cost file reads per id, and an administrator's change still takes effect
 * promptly.
 */
static struct {
	struct timespec read_at;
	bool valid;
	uint16_t lo, hi;
	bool bindv6only;
	uint8_t reserved[65536 / 8];
} sr_ps_range;

static void sr_ps_read_reserved(void)
{
	char buf[4096], *p;
	size_t n;
	FILE *f;

	memset(sr_ps_range.reserved, 0, sizeof(sr_ps_range.reserved));
	f = fopen("/proc/sys/net/ipv4/ip_local_reserved_ports", "re");
	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* "8080,9000-9100" */
	for (p = buf; *p;) {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a, i;

		if (end == p)
			break;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		for (i = a; i <= b && i < 65536; i++)
			sr_ps_range.reserved[i / 8] |= (uint8_t)(1u << (i % 8));
		p = *end == ',' ? end + 1 : end;
		while (*p == '\n' || *p == ' ')
			p++;
	}
}

/*
 * Ports whose bind failed (EADDRINUSE, EACCES) lately: a socket of another program that does
 * not share holds them (a listener, or a plain TCP connection or its TIME_WAIT, which lasts
 * 60 s). Next to thousands of them, finding out again costs a failed bind each (six system
 * calls, under sr_cm_lock), so they are forgotten only every SR_PS_HELD_S seconds. A port
 * remembered too long costs nothing but our own choice: an id that finds only such ports
 * gets the kernel's choice, which may still pick them.
 */
#define SR_PS_HELD_S 30
static uint8_t sr_ps_held[65536 / 8];
static time_t sr_ps_held_since;

static bool sr_ps_is_held(uint16_t port)
{
	return sr_ps_held[port / 8] & (1u << (port % 8));
}

static void sr_ps_refresh_range(void)
{
	unsigned int lo = 32768, hi = 60999;
	struct timespec now;
	FILE *f;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	if (sr_ps_range.valid && now.tv_sec == sr_ps_range.read_at.tv_sec)
		return;
	f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
	if (f) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2 || lo == 0 || lo > hi || hi > 65535) {
			lo = 32768;
			hi = 60999;
		}
		fclose(f);
	}
	sr_ps_range.lo = (uint16_t)lo;
	sr_ps_range.hi = (uint16_t)hi;
	sr_ps_read_reserved();
	if (now.tv_sec - sr_ps_held_since >= SR_PS_HELD_S) {
		memset(sr_ps_held, 0, sizeof(sr_ps_held));
		sr_ps_held_since = now.tv_sec;
	}
	sr_ps_range.bindv6only = false;
	f = fopen("/proc/sys/net/ipv6/bindv6only", "re");
	if (f) {
		char c = '0';

		sr_ps_range.bindv6only = fread(&c, 1, 1, f) == 1 && c == '1';
		fclose(f);
	}
	sr_ps_range.read_at = now;
	sr_ps_range.valid = true;
}

static bool sr_ps_reserved(uint16_t port)
{
	return sr_ps_range.reserved[port / 8] & (1u << (port % 8));
}

/* xorshift, seeded once: where a probe starts only has to be unpredictable enough. */
static uint32_t sr_ps_random(void)
{
	static uint32_t x;

	if (!x && (getrandom(&x, sizeof(x), GRND_NONBLOCK) != sizeof(x) || !x))
		x = (uint32_t)getpid() * 2654435761u ^ (uint32_t)time(NULL) ^ 1u;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

/* ------------------------------------------------------------- rules -- */

/* Rule 1's notion of "wildcard": the kernel CM's cma_any_addr() includes loopback. */
static bool sr_ps_any_or_loopback(const struct sockaddr *sa)
{
	return sr_addr_len(sa) == 0 || sr_addr_is_any(sa) || sr_addr_is_loopback(sa);
}

/* Rule 2's "not known": no address yet, or a wildcard one. */
static bool sr_ps_unknown(const struct sockaddr *sa)
{
	return sr_addr_len(sa) == 0 || sr_addr_is_any(sa);
}

int sr_cm_port_rule_explicit(const struct sockaddr *a, bool a_reuse, bool a_afonly,
			     const struct sockaddr *b, bool b_reuse, bool b_afonly)
{
	if (a_reuse && b_reuse)
		return 0;
	if (a->sa_family != b->sa_family && a_afonly && b_afonly)
		return 0;
	if (sr_ps_any_or_loopback(a) || sr_ps_any_or_loopback(b))
		return -EADDRNOTAVAIL;
	if (sr_addr_same_ip(a, b))
		return -EADDRINUSE;
	return 0;
}

bool sr_cm_port_rule_unique(const struct sockaddr *src_a, const struct sockaddr *dst_a,
			    const struct sockaddr *src_b, const struct sockaddr *dst_b)
{
	uint16_t pa = sr_addr_len(dst_a) ? sr_addr_port(dst_a) : 0;
	uint16_t pb = sr_addr_len(dst_b) ? sr_addr_port(dst_b) : 0;

	if (pa && pb && pa != pb)
		return true;
	if (!sr_ps_unknown(src_a) && !sr_ps_unknown(src_b) && !sr_addr_same_ip(src_a, src_b))
		return true;
	if (!sr_ps_unknown(dst_a) && !sr_ps_unknown(dst_b) && !sr_addr_same_ip(dst_a, dst_b))
		return true;
	return false;
}

/* Whether an id binds for its own family only (reads sr_ps_range, refreshed by callers). */
static bool sr_ps_afonly(const struct sr_cm_id *id, int family)
{
	if (family == AF_INET)
		return true; /* the kernel CM sets afonly for every AF_INET bind */
	if (id->afonly >= 0)
		return id->afonly;
	return sr_ps_range.bindv6only;
}

/* Rule 1 against every owner of addr's port; reuse is id's as the caller wants it. */
static int sr_ps_check_explicit(const struct sr_cm_id *id, const struct sockaddr *addr,
				bool reuse)
{
	const struct sr_cm_id *o;
	bool afonly;
	int err;

	sr_ps_refresh_range();
	afonly = sr_ps_afonly(id, addr->sa_family);
	for (o = sr_port_owners[sr_addr_port(addr)]; o; o = o->port_next) {
		const struct sockaddr *oa = &o->id.route.addr.src_addr;

		if (o == id)
			continue;
		err = sr_cm_port_rule_explicit(addr, reuse, afonly, oa, o->reuseaddr,
					       sr_ps_afonly(o, oa->sa_family));
		if (err)
			return err;
	}
	return 0;
}

/* Rule 2 against every owner of port, for an id with this source and destination. */
static bool sr_ps_port_unique(const struct sr_cm_id *id, uint16_t port,
			      const struct sockaddr *src, const struct sockaddr *dst)
{
	const struct sr_cm_id *o;

	for (o = sr_port_owners[port]; o; o = o->port_next) {
		if (o == id)
			continue;
		if (!sr_cm_port_rule_unique(src, dst, &o->id.route.addr.src_addr,
					    &o->id.route.addr.dst_addr))
			return false;
	}
	return true;
}

/* ----------------------------------------------------------- sockets -- */

static void sr_ps_link(struct sr_cm_id *id, uint16_t port, enum sr_cm_port_kind kind)
{
	id->port = port;
	id->port_kind = kind;
	id->port_next = sr_port_owners[port];
	sr_port_owners[port] = id;
}

void sr_cm_port_release_locked(struct sr_cm_id *id)
{
	struct sr_cm_id **pp;

	sr_cm_assert_locked();
	if (id->port_kind == SR_CM_PORT_NONE)
		return;
	if (id->port_kind == SR_CM_PORT_KERNEL) { /* no port yet: in no list */
		id->port_kind = SR_CM_PORT_NONE;
		return;
	}
	for (pp = &sr_port_owners[id->port]; *pp; pp = &(*pp)->port_next) {
		if (*pp == id) {
			*pp = id->port_next;
			break;
		}
	}
	id->port_next = NULL;
	id->port_kind = SR_CM_PORT_NONE;
}

/* The id's wire options (options.c) on a socket of its: every CM socket is made here, or
 * accepted from one made here, or had them when they were set. */
void sr_cm_apply_sockopts(const struct sr_cm_id *id, int fd)
{
	int domain = AF_INET;
	socklen_t len = sizeof(domain);

	if (fd < 0)
		return;
	if (id->tos >= 0) {
		getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len);
		/* best effort, as the kernel CM treats TOS: a hint for the path */
		setsockopt(fd, IPPROTO_IP, IP_TOS, &id->tos, sizeof(id->tos));
		if (domain == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &id->tos, sizeof(id->tos));
	}
	if (id->user_timeout_ms >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &id->user_timeout_ms,
			   sizeof(id->user_timeout_ms));
}


/*
 * A non-blocking TCP socket with the id's options, bound to addr; fd or negative errno. With
 * no_port (addr's port is 0) the bind takes the address only and connect() picks the port,
 * as for a plain TCP client: among every port nobody bound explicitly, one whose 4-tuple is
 * free (IP_BIND_ADDRESS_NO_PORT).
 */
static int sr_ps_socket(const struct sr_cm_id *id, const struct sockaddr *addr, bool no_port)
{
	int fd, one = 1, err;

	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (addr->sa_family == AF_INET6 && id->afonly >= 0)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &id->afonly, sizeof(id->afonly));
	/* Sharing a port between non-listening sockets (rule 2), and a restarted server
	 * must not be locked out by its old TIME_WAIT connections. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* MPA frames and FPDUs go out whole: no Nagle. Set here, where accepted sockets
	 * inherit it from their listener, rather than per connection at the QP's attach. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	sr_cm_apply_sockopts(id, fd); /* TOS, the ACK timeout */
	if (no_port)
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	if (bind(fd, addr, sr_addr_len(addr)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/*
 * The id now holds fd, bound to addr: record it. Its port is never 0 here (we chose it or
 * the application did) and a link-local one carries its scope id (sr_cm_bind_locked), so
 * the kernel would report nothing else: no getsockname per connection.
 */
static void sr_ps_take(struct sr_cm_id *id, int fd, const struct sockaddr *addr,
		       enum sr_cm_port_kind kind)
{
	sr_addr_store(&id->id.route.addr.src_storage, addr);
	id->fd = fd;
	sr_ps_link(id, sr_addr_port(&id->id.route.addr.src_addr), kind);
}

/*
 * The id's port is left to the kernel's choice at connect (SR_CM_PORT_KERNEL): a socket bound
 * to src's address only. Until connect the id has port 0 and is in no list.
 */
static int sr_ps_defer(struct sr_cm_id *id, const struct sockaddr *src)
{
	struct sockaddr_storage a;
	int fd;

	memcpy(&a, src, sr_addr_len(src));
	sr_addr_set_port((struct sockaddr *)&a, 0);
	fd = sr_ps_socket(id, (struct sockaddr *)&a, true);
	if (fd < 0)
		return fd;
	sr_addr_store(&id->id.route.addr.src_storage, (struct sockaddr *)&a);
	id->fd = fd;
	id->port = 0;
	id->port_kind = SR_CM_PORT_KERNEL;
	return 0;
}

/* connect() on a non-blocking socket: 0, -EINPROGRESS or another negative errno. */
static int sr_ps_connect(int fd, const struct sockaddr *dst)
{
	return connect(fd, dst, sr_addr_len(dst)) == 0 ? 0 : -errno;
}

/*
 * Rule 2: the first port from a random start that is unique for (src, dst) and that the
 * kernel lets us bind, other than avoid (0: none); with connect_too, also one on which
 * connect() finds the 4-tuple free (its result is returned: 0, -EINPROGRESS, or an error of
 * the connection itself). The id then holds it (id->fd bound, its address updated).
 *
 * An active id for which every unique port is held by someone else's socket (a listener, a
 * plain TCP connection or its TIME_WAIT: they do not share with SO_REUSEADDR sockets) is left
 * to the kernel's choice at connect, which shares such ports by 4-tuple as TCP's connect()
 * does; without unique ports at all, or without any in a scan at connect, -EADDRNOTAVAIL.
 */
static int sr_ps_alloc(struct sr_cm_id *id, const struct sockaddr *src, enum sr_cm_port_kind kind,
		       uint16_t avoid, bool connect_too)
{
	const struct sockaddr *dst = &id->id.route.addr.dst_addr;
	struct sockaddr_storage a;
	uint32_t n, start, i;
	bool held = false;

	sr_ps_refresh_range();
	n = (uint32_t)sr_ps_range.hi - sr_ps_range.lo + 1;
	start = sr_ps_random() % n;
	memcpy(&a, src, sr_addr_len(src));
	for (i = 0; i < n; i++) {
		uint16_t port = (uint16_t)(sr_ps_range.lo + (start + i) % n);
		int fd, err = 0;

		if (port == avoid || sr_ps_reserved(port) ||
		    !sr_ps_port_unique(id, port, src, dst))
			continue;
		if (kind == SR_CM_PORT_ACTIVE && sr_ps_is_held(port)) {
			/* per port, not per address: at worst an id of another source address
			 * also gets the kernel's choice */
			held = true;
			continue;
		}
		sr_addr_set_port((struct sockaddr *)&a, port);
		fd = sr_ps_socket(id, (struct sockaddr *)&a, false);
		if (fd == -EADDRINUSE || fd == -EACCES) {
			sr_ps_held[port / 8] |= (uint8_t)(1u << (port % 8));
			held = true;
			continue;
		}
		if (fd < 0)
			return fd;
		if (connect_too) {
			err = sr_ps_connect(fd, dst);
			if (err == -EADDRNOTAVAIL) { /* taken where our table cannot see */
				close(fd);
				continue;
			}
		}
		sr_ps_take(id, fd, (struct sockaddr *)&a, kind);
		return err;
	}
	if (kind == SR_CM_PORT_ACTIVE && held && !connect_too)
		return sr_ps_defer(id, src);
	return -EADDRNOTAVAIL;
}

int sr_cm_port_bind_locked(struct sr_cm_id *id, const struct sockaddr *addr)
{
	int fd, err;

	sr_cm_assert_locked();
	if (!sr_addr_port(addr))
		return sr_ps_alloc(id, addr, SR_CM_PORT_BOUND, 0, false);
	err = sr_ps_check_explicit(id, addr, id->reuseaddr);
	if (err)
		return err;
	fd = sr_ps_socket(id, addr, false);
	if (fd < 0)
		return fd;
	sr_ps_take(id, fd, addr, SR_CM_PORT_BOUND);
	return 0;
}

int sr_cm_port_bind_active_locked(struct sr_cm_id *id, const struct sockaddr *src)
{
	sr_cm_assert_locked();
	if (sr_addr_port(src))
		return sr_cm_port_bind_locked(id, src);
	return sr_ps_alloc(id, src, SR_CM_PORT_ACTIVE, 0, false);
}

int sr_cm_port_listen_locked(struct sr_cm_id *id)
{
	int err;

	sr_cm_assert_locked();
	if (id->reuseaddr) {
		err = sr_ps_check_explicit(id, &id->id.route.addr.src_addr, false);
		if (err)
			return err;
	}
	id->reuseaddr = false; /* the kernel CM clears it when an id listens */
	return 0;
}

/* A kernel-chosen port is known once connect() ran: enter it in the table (lock held). */
static void sr_ps_learn(struct sr_cm_id *id, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
	    !sr_addr_port((struct sockaddr *)&ss))
		return; /* cannot happen after connect(); the id then just stays out of the table */
	sr_addr_store(&id->id.route.addr.src_storage, (struct sockaddr *)&ss);
	sr_ps_link(id, sr_addr_port((struct sockaddr *)&ss), SR_CM_PORT_ACTIVE);
}

/*
 * The id gives up its socket *fd (the caller's) and its port, before anything went on the
 * wire: connect() found the 4-tuple taken.
 */
static void sr_ps_drop(struct sr_cm_id *id, int *fd)
{
	sr_cm_port_release_locked(id);
	close(*fd);
	*fd = -1;
	id->fd = -1;
}

int sr_cm_port_connect_locked(struct sr_cm_id *id, int *fd)
{
	const struct sockaddr *dst = &id->id.route.addr.dst_addr;
	struct sockaddr_storage src;
	uint16_t taken = id->port;
	int err;

	sr_cm_assert_locked();
	memcpy(&src, &id->id.route.addr.src_storage, sizeof(src));
	sr_addr_set_port((struct sockaddr *)&src, 0);
	err = sr_ps_connect(*fd, dst);
	if (err == -EADDRNOTAVAIL && id->port_kind == SR_CM_PORT_ACTIVE) {
		/* Our choice's tuple is in use where our table cannot see: another process, or
		 * a TIME_WAIT socket. Let the kernel choose, as for a plain TCP client. */
		sr_dbg("id %p: port %u taken for this destination; the kernel chooses",
		       (void *)id, taken);
		sr_ps_drop(id, fd);
		err = sr_ps_defer(id, (struct sockaddr *)&src);
		if (err)
			return err;
		*fd = id->fd;
		id->fd = -1; /* the caller's *fd owns it */
		err = sr_ps_connect(*fd, dst);
	}
	if (err == -EADDRNOTAVAIL && id->port_kind == SR_CM_PORT_KERNEL) {
		/* No free tuple on a port nobody bound explicitly; the kernel skips ports that
		 * are (our own processes' among them), which may still have one: try those. */
		sr_dbg("id %p: the kernel found no free tuple; trying bound ports", (void *)id);
		sr_ps_drop(id, fd);
		err = sr_ps_alloc(id, (struct sockaddr *)&src, SR_CM_PORT_ACTIVE, taken, true);
		*fd = id->fd;
		id->fd = -1;
		return err;
	}
	if ((err == 0 || err == -EINPROGRESS) && id->port_kind == SR_CM_PORT_KERNEL)
		sr_ps_learn(id, *fd);
	return err;
}
