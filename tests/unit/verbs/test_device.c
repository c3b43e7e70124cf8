// SPDX-License-Identifier: MIT
/* Device list, context, queries and async events against the real host interfaces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "verbs/sr_verbs.h"
#include "obj_helpers.h"

/* rdma-core's const char *ibv_get_sysfs_path(void) (the build checks the type): the same
 * string every call, "/sys" unless SYSFS_PATH says otherwise, without trailing slashes. */
static void sysfs_path(void **state)
{
	const char *env = getenv("SYSFS_PATH");
	const char *p = ibv_get_sysfs_path();

	assert_non_null(p);
	if (!env)
		assert_string_equal(p, "/sys");
	assert_true(strlen(p) == 1 || p[strlen(p) - 1] != '/');
	assert_ptr_equal(ibv_get_sysfs_path(), p);
}

static void guid_from_mac(void **state)
{
	struct sr_netdev_link l = { .has_mac = true, .addr = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 } };
	static const uint8_t zero[10];
	union ibv_gid gid, gid2;

	assert_int_equal(be64toh(sr_device_guid_from_link(&l)), 0x505400fffe123456ull);
	/* GID 0 as on a kernel iWARP port: the MAC in bytes 0-5, the rest zero. */
	sr_device_gid_from_link(&l, &gid);
	assert_memory_equal(gid.raw, l.addr, 6);
	assert_memory_equal(&gid.raw[6], zero, 10);

	memset(l.addr, 0, 6); /* loopback: a locally administered stand-in, stable per ifindex */
	l.ifindex = 1;
	assert_int_not_equal(sr_device_guid_from_link(&l), 0);
	sr_device_gid_from_link(&l, &gid);
	assert_int_equal(gid.raw[0] & 0x03, 0x02); /* locally administered, unicast */
	assert_memory_not_equal(gid.raw, zero, 6);
	assert_memory_equal(&gid.raw[6], zero, 10);
	sr_device_gid_from_link(&l, &gid2);
	assert_memory_equal(&gid, &gid2, sizeof(gid));

	l.has_mac = false; /* e.g. a tunnel: still unique per ifindex and non-zero */
	l.ifindex = 7;
	assert_int_not_equal(sr_device_guid_from_link(&l), 0);
	sr_device_gid_from_link(&l, &gid2);
	assert_memory_not_equal(gid.raw, gid2.raw, 6);
}

static void mtu_enum(void **state)
{
	assert_int_equal(sr_mtu_to_ib(65536), IBV_MTU_4096);
	assert_int_equal(sr_mtu_to_ib(4096), IBV_MTU_4096);
	assert_int_equal(sr_mtu_to_ib(4095), IBV_MTU_2048);
	assert_int_equal(sr_mtu_to_ib(1500), IBV_MTU_1024);
	assert_int_equal(sr_mtu_to_ib(576), IBV_MTU_512);
	assert_int_equal(sr_mtu_to_ib(68), IBV_MTU_256);
}

static void device_list_has_lo(void **state)
{
	int n = -1;
	struct ibv_device **list = ibv_get_device_list(&n);
	bool lo = false;

	assert_non_null(list);
	assert_true(n >= 1);
	assert_null(list[n]);
	for (int i = 0; i < n; i++) {
		assert_int_equal(list[i]->node_type, IBV_NODE_RNIC);
		assert_int_equal(list[i]->transport_type, IBV_TRANSPORT_IWARP);
		assert_int_not_equal(ibv_get_device_guid(list[i]), 0);
		lo |= strcmp(list[i]->name, "sriw_lo") == 0;
	}
	ibv_free_device_list(list);
	assert_true(lo);
}

/* Applications' inline functions call op slots directly: none may be NULL. */
static void no_null_op_slot(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct verbs_context *v = verbs_get_ctx(ctx);
	void **p;

	assert_non_null(v);
	assert_int_equal(v->sz, sizeof(*v));
	for (p = (void **)&ctx->ops; p < (void **)(&ctx->ops + 1); p++)
		assert_non_null(*p);
	for (p = (void **)v; p < (void **)&v->priv; p++)
		assert_non_null(*p);
	for (p = (void **)&v->query_device_ex; p < (void **)&v->_ABI_placeholder3; p++)
		assert_non_null(*p);
	/* and the not-supported ones answer the documented way */
	assert_null(ibv_create_cq_ex(ctx, &(struct ibv_cq_init_attr_ex){ .cqe = 1 }));
	assert_int_equal(errno, EOPNOTSUPP);
	ibv_close_device(ctx);
}

static void queries(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_device_attr_ex ax;
	struct ibv_device_attr a;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge;
	union ibv_gid gid;
	__be16 pkey;

	assert_int_equal(ibv_query_device(ctx, &a), 0);
	assert_int_equal(a.phys_port_cnt, 1);
	assert_int_equal(a.max_qp, SR_MAX_QP);
	assert_int_equal(a.max_qp_rd_atom, SR_MAX_QP_RD_ATOM);
	/* every object and queue limit at least what the kernel's siw advertises (siw.h) */
	assert_true(a.max_qp >= 102400 && a.max_cq >= 102400 && a.max_pd >= 102400);
	assert_true(a.max_srq >= 102400 && a.max_mr >= 1024000 && a.max_cqe >= 3276800);
	assert_true(a.max_qp_wr >= 32768 && a.max_srq_wr >= 327680);
	assert_true(a.max_sge >= 6 && a.max_sge_rd >= 1 && a.max_srq_sge >= 6);
	assert_true(a.max_qp_rd_atom >= 128 && a.max_qp_init_rd_atom >= 128);
	assert_true(a.max_res_rd_atom >= 13107200);
	assert_int_equal(a.atomic_cap, IBV_ATOMIC_NONE);
	assert_int_equal(ibv_query_device_ex(ctx, NULL, &ax), 0);
	assert_memory_equal(&ax.orig_attr, &a, sizeof(a));
	assert_int_equal(ax.phys_port_cnt_ex, 1); /* was left 0 */
	assert_int_equal(ibv_query_device_ex(ctx, &(struct ibv_query_device_ex_input){ .comp_mask = 1 },
					     &ax), EINVAL);

	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	assert_int_equal(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(pa.gid_tbl_len, 1);
	assert_int_equal(ibv_query_port(ctx, 2, &pa), EINVAL);
	assert_int_equal(ibv_query_port(ctx, 0, &pa), EINVAL);

	assert_int_equal(ibv_query_gid(ctx, 1, 0, &gid), 0);
	assert_int_equal(gid.raw[0] & 0x02, 0x02); /* lo: the locally administered stand-in */
	assert_memory_equal(&gid.raw[6], (uint8_t[10]){ 0 }, 10);
	assert_int_equal(ibv_query_gid(ctx, 1, 1, &gid), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_query_gid_ex(ctx, 1, 0, &ge, 0), 0);
	assert_memory_equal(&ge.gid, &gid, sizeof(gid));
	assert_int_equal(ge.ndev_ifindex, ibv_get_device_index(ctx->device));
	assert_int_equal(ibv_query_gid_ex(ctx, 1, 0, &ge, 1), EINVAL);
	assert_int_equal(ibv_query_gid_table(ctx, &ge, 1, 0), 1);
	/* No P_Key table, as on a kernel iWARP port. */
	assert_int_equal(a.max_pkeys, 0);
	assert_int_equal(pa.pkey_tbl_len, 0);
	errno = 0;
	assert_int_equal(ibv_query_pkey(ctx, 1, 0, &pkey), -1);
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_int_equal(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)), -1);
	assert_int_equal(errno, ENOENT);
	ibv_close_device(ctx);
}

static void async_events_through_fd(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_async_event ev;

	fcntl(ctx->async_fd, F_SETFL, O_NONBLOCK);
	assert_int_equal(ibv_get_async_event(ctx, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	sr_async_post(to_sr_ctx(ctx), &(struct ibv_async_event){
		.event_type = IBV_EVENT_PORT_ERR, .element.port_num = 1 });
	sr_async_post(to_sr_ctx(ctx), &(struct ibv_async_event){
		.event_type = IBV_EVENT_PORT_ACTIVE, .element.port_num = 1 });
	assert_int_equal(ibv_get_async_event(ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_PORT_ERR);
	ibv_ack_async_event(&ev);
	assert_int_equal(ibv_get_async_event(ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_PORT_ACTIVE);
	assert_int_equal(ibv_get_async_event(ctx, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	/* queued events are freed by close (ASan checks) */
	sr_async_post(to_sr_ctx(ctx), &(struct ibv_async_event){ .event_type = IBV_EVENT_GID_CHANGE });
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void strings(void **state)
{
	assert_string_equal(ibv_node_type_str(IBV_NODE_RNIC), "iWARP NIC");
	assert_string_equal(ibv_port_state_str(IBV_PORT_ACTIVE), "active");
	assert_string_equal(ibv_port_state_str(99), "unknown");
	assert_string_equal(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
	assert_string_equal(ibv_wc_status_str(-1), "unknown");
	assert_string_equal(ibv_event_type_str(IBV_EVENT_PORT_ERR), "port error");
	assert_int_equal(ibv_rate_to_mult(IBV_RATE_10_GBPS), 4);
	assert_int_equal(mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_25_GBPS), 25781);
	assert_int_equal(mbps_to_ibv_rate(7), IBV_RATE_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sysfs_path),
		cmocka_unit_test(guid_from_mac),
		cmocka_unit_test(mtu_enum),
		cmocka_unit_test(device_list_has_lo),
		cmocka_unit_test(no_null_op_slot),
		cmocka_unit_test(queries),
		cmocka_unit_test(async_events_through_fd),
		cmocka_unit_test(strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
