// SPDX-License-Identifier: MIT
/* Helpers on IPv4/IPv6 socket addresses (see sr_sockaddr.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "common/sr_sockaddr.h"

unsigned int sr_addr_len(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

bool sr_addr_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

bool sr_addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_LOOPBACK(a))
			return true;
		/* ::ffff:127.x.y.z is loopback too */
		return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
	}
	return false;
}

bool sr_addr_is_v4mapped(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

uint16_t sr_addr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

void sr_addr_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

bool sr_addr_same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	const struct sockaddr_in6 *a6, *b6;

	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family != AF_INET6)
		return false;
	a6 = (const struct sockaddr_in6 *)a;
	b6 = (const struct sockaddr_in6 *)b;
	if (memcmp(&a6->sin6_addr, &b6->sin6_addr, 16))
		return false;
	return !IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr) || a6->sin6_scope_id == b6->sin6_scope_id;
}

void sr_addr_store(struct sockaddr_storage *slot, const struct sockaddr *sa)
{
	memset(slot, 0, sizeof(*slot));
	if (sr_addr_is_v4mapped(sa)) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		struct sockaddr_in *s4 = (struct sockaddr_in *)slot;

		s4->sin_family = AF_INET;
		s4->sin_port = s6->sin6_port;
		memcpy(&s4->sin_addr, &s6->sin6_addr.s6_addr[12], 4);
		return;
	}
	memcpy(slot, sa, sr_addr_len(sa));
}
