/* SPDX-License-Identifier: MIT */
/*
 * A connected pair of RC QPs in one process, over rdma_cm on loopback (or any address), for
 * data-path tests. Plain verbs and rdma_cm calls only: the same tests run on real rdma-core.
 */
#ifndef DP_COMMON_H
#define DP_COMMON_H

#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define DP_CHECK(cond, ...)                                                     \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__,  \
				__LINE__, #cond);                               \
			fprintf(stderr, __VA_ARGS__);                           \
			fprintf(stderr, "\n");                                  \
			exit(1);                                                \
		}                                                               \
	} while (0)

struct dp_side {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
};

struct dp_pair {
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listen;
	struct dp_side cli, srv;
	/* what the client's ESTABLISHED event reported (the server's IRD/ORD as negotiated) */
	uint8_t est_initiator_depth, est_responder_resources;
};

struct dp_opts {
	const char *addr;       /* default 127.0.0.1 */
	bool srv_srq;           /* server QP uses an SRQ */
	int max_send_wr, max_recv_wr, max_sge, max_inline;
	bool srv_qp_other_pd;   /* (unused) */
	int rd_atomic;          /* responder_resources and initiator_depth asked by both; 0: 8 */
};

void dp_connect(struct dp_pair *p, const struct dp_opts *o);
/* The client disconnects, the server answers; returns with both DISCONNECTED events seen
 * (every completion of both QPs is in their CQs by then). */
void dp_disconnect_wait(struct dp_pair *p);
/* Destroy both sides and the listener. */
void dp_teardown(struct dp_pair *p);
/* dp_disconnect_wait, then dp_teardown. */
void dp_disconnect(struct dp_pair *p);
/* Wait for one completion on cq (polling, bounded); returns it. */
struct ibv_wc dp_wait_wc(struct ibv_cq *cq, int timeout_ms);
/* True if no completion arrives within ms. */
bool dp_no_wc(struct ibv_cq *cq, int ms);
struct ibv_mr *dp_reg(struct ibv_pd *pd, void *buf, size_t len, int access);
void dp_post_recv(struct dp_side *s, uint64_t wr_id, struct ibv_mr *mr, void *buf, uint32_t len);
int dp_post_send(struct dp_side *s, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_mr *mr,
		 void *buf, uint32_t len, uint64_t raddr, uint32_t rkey, unsigned int flags);
void dp_fill(void *buf, size_t len, uint32_t seed);
bool dp_check(const void *buf, size_t len, uint32_t seed);

#endif
