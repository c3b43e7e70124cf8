/* SPDX-License-Identifier: MIT */
/*
 * Client of the RoCE demultiplexer (softrdma-roced), for the soft RoCE transport of
 * libibverbs (docs/ARCHITECTURE.md, "Soft RoCE: one UDP port for many processes").
 *
 * Every RoCE v2 datagram of a network namespace arrives on one UDP port; one daemon per
 * namespace owns it and hands each datagram to the process that owns its DestQP. A process
 * opens one struct sr_rdx per namespace it uses (when its first RoCE device is opened;
 * nothing else calls this, so a process using only iWARP devices never starts the daemon),
 * takes QPNs from it, watches sr_rdx_fd() in its engine and reads datagrams with
 * sr_rdx_recv(). Sending does not go through the daemon: a process sends from its own UDP
 * socket (docs/roce-wire §1).
 *
 * Thread safety: every call may come from any thread; sr_rdx_recv() from one thread at a
 * time (the engine's). sr_rdx_close() must not race with the others.
 */
#ifndef SR_RDX_H
#define SR_RDX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdx_proto.h"

struct sr_rdx;

/*
 * Called once when the daemon is found gone (its channel at EOF, a request unanswered):
 * the owner moves its QPs to the error state. It runs in the thread that noticed, inside
 * sr_rdx_recv() or a request; it must not call sr_rdx_close(). A later sr_rdx_open() starts
 * a new daemon.
 */
typedef void (*sr_rdx_dead_fn)(void *arg);

/*
 * Connects to the daemon of this network namespace, or starts it (as this user) and
 * connects. 0, or -errno with a sentence in why[] (also logged as an error):
 *   -EACCES      another user's daemon serves the namespace (the sentence names its uid);
 *   -EADDRINUSE  the UDP port is held by something else (names the uid holding it);
 *   -ENOENT      softrdma-roced was not found (SOFTRDMA_ROCED names it);
 *   -ETIMEDOUT   the daemon did not answer within 10 s.
 */
int sr_rdx_open(struct sr_rdx **out, sr_rdx_dead_fn dead, void *arg, char *why, size_t whylen);
/* Frees the QPNs and, when it was the last client, lets the daemon exit. */
void sr_rdx_close(struct sr_rdx *x);

/* Readable when datagrams wait; readable with EOF when the daemon is gone. */
int sr_rdx_fd(const struct sr_rdx *x);

/*
 * One datagram: its metadata in *m and its UDP payload (BTH first) in buf. Never waits.
 * Returns the payload length, -EAGAIN when none waits, -EPIPE once the daemon is gone
 * (after calling the dead callback). A datagram for a QPN of our blocks that is not
 * allocated, or longer than len, is dropped and counted (sr_rdx_dropped()).
 */
ssize_t sr_rdx_recv(struct sr_rdx *x, struct rdx_meta *m, void *buf, size_t len);
uint64_t sr_rdx_dropped(const struct sr_rdx *x);

/*
 * A QPN of this process: datagrams to it come to this sr_rdx until it is freed. Taken from
 * the blocks of 256 QPNs the daemon gave us, a new block asked for when they are full.
 * A freed QPN is handed out again only after the others of its block (next-fit).
 */
int sr_rdx_qpn_alloc(struct sr_rdx *x, uint32_t *qpn);
int sr_rdx_qpn_free(struct sr_rdx *x, uint32_t qpn);

/*
 * QP1: datagrams to DestQP 1 come to every process that joined (the CM's MADs; routed by
 * MAD once rdma_cm runs on RoCE). sr_rdx_recv() returns them with DestQP 1 in the BTH.
 */
int sr_rdx_gsi(struct sr_rdx *x, bool join);

/* The daemon's counters (enum rdx_stat). */
int sr_rdx_stats(struct sr_rdx *x, uint64_t st[RDX_ST_COUNT]);
pid_t sr_rdx_daemon_pid(const struct sr_rdx *x);

#endif
