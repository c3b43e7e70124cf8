/* SPDX-License-Identifier: MIT */
/*
 * Reading and dropping what a peer sends on a socket whose input nobody wants any more: a
 * stream about to be closed (unread bytes at close() make the kernel send a reset instead of
 * a FIN), a handshake the CM gave up on, a QP-less connection. These run on an engine
 * thread, which serves every connection of the process, so one call reads at most
 * SR_DRAIN_MAX bytes: a peer that keeps sending cannot keep the thread in the loop. A
 * level-triggered handler is called again for the rest once the engine has served the others.
 */
#ifndef SR_DRAIN_H
#define SR_DRAIN_H

#define SR_DRAIN_CHUNK 4096u                   /* one recv() */
#define SR_DRAIN_MAX   (256u * SR_DRAIN_CHUNK) /* 1 MiB per call: 256 recv() at most */

enum sr_drain_result {
	SR_DRAIN_EMPTY, /* the socket holds nothing more now */
	SR_DRAIN_MORE,  /* SR_DRAIN_MAX read and dropped, there may be more */
	SR_DRAIN_END,   /* the peer's FIN or an error: the stream is over */
};

/* Read and drop up to SR_DRAIN_MAX bytes of fd (non-blocking reads). */
enum sr_drain_result sr_drain(int fd);

#endif
