/* SPDX-License-Identifier: MIT */
/*
 * Small helpers on IPv4/IPv6 socket addresses, shared by the route queries (netdev/) and
 * the connection manager (cm/). They only look at AF_INET and AF_INET6; anything else is
 * "not an address" (length 0, port 0, never equal).
 */
#ifndef SR_SOCKADDR_H
#define SR_SOCKADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Length of the sockaddr for its family, 0 for an unsupported family or NULL. */
unsigned int sr_addr_len(const struct sockaddr *sa);
/* 0.0.0.0 or :: */
bool sr_addr_is_any(const struct sockaddr *sa);
/* 127.0.0.0/8, ::1 and ::ffff:127.x.y.z */
bool sr_addr_is_loopback(const struct sockaddr *sa);
bool sr_addr_is_v4mapped(const struct sockaddr *sa);
/* Port in host order; 0 for other families. */
uint16_t sr_addr_port(const struct sockaddr *sa);
void sr_addr_set_port(struct sockaddr *sa, uint16_t port);
/*
 * Same family and same IP (IPv6 link-local addresses also need the same scope id, as two
 * interfaces can carry the same fe80:: address). Ports are not compared.
 */
bool sr_addr_same_ip(const struct sockaddr *a, const struct sockaddr *b);
/* Copy sa into slot, zero-filled, turning a v4-mapped IPv6 address into AF_INET. */
void sr_addr_store(struct sockaddr_storage *slot, const struct sockaddr *sa);

#endif
