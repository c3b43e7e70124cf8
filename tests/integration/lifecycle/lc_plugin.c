// SPDX-License-Identifier: MIT
/*
 * A plugin as Open MPI's transports are: a module the program dlopen()s, linked against
 * librdmacm and libibverbs, which the program itself does not link. lc_plugin_run() opens
 * a connection over loopback, exchanges a Send and starts a disconnect without waiting for
 * it, as a transport's finalize may: the program then dlclose()s the plugin with the
 * connection still open and the engines still busy with it (lc_unload.c).
 */
#include <errno.h>
#include <string.h>

#include "../datapath/dp_common.h"

__attribute__((visibility("default"))) int lc_plugin_run(const char *addr);

int lc_plugin_run(const char *addr)
{
	struct dp_opts o = { .addr = addr };
	struct dp_pair p;
	static char sbuf[64], rbuf[64];
	struct ibv_mr *smr, *rmr;
	struct ibv_wc wc;

	dp_connect(&p, &o);
	smr = dp_reg(p.cli.pd, sbuf, sizeof(sbuf), IBV_ACCESS_LOCAL_WRITE);
	rmr = dp_reg(p.srv.pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	dp_post_recv(&p.srv, 1, rmr, rbuf, sizeof(rbuf));
	dp_fill(sbuf, sizeof(sbuf), 7);
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 2, smr, sbuf, sizeof(sbuf), 0, 0,
			      IBV_SEND_SIGNALED) == 0, "post_send: %s", strerror(errno));
	wc = dp_wait_wc(p.srv.cq, 10000);
	DP_CHECK(wc.status == IBV_WC_SUCCESS && dp_check(rbuf, sizeof(rbuf), 7), "receive");
	wc = dp_wait_wc(p.cli.cq, 10000);
	DP_CHECK(wc.status == IBV_WC_SUCCESS, "send");
	/* Left for the engines to finish after the plugin is gone: the FIN, the peer's
	 * DISCONNECTED, its answer. Nothing is destroyed. */
	rdma_disconnect(p.cli.id);
	return 0;
}
