// SPDX-License-Identifier: MIT
/*
 * rdma_resolve_addr's next-hop resolution (src/cm/resolve.c), run by cm_addr.sh inside
 * network namespaces. Usage: cm_addr <case> <destination> [timeout_ms]; exit 0 = pass.
 *   ok       the next hop answers: ADDR_RESOLVED, the id can resolve its route
 *   timeout  nobody answers within timeout_ms: ADDR_ERROR -ETIMEDOUT after 0.9..1.1 x timeout
 *   failed   the neighbour table gives up first: ADDR_ERROR -EHOSTUNREACH; the id may retry
 *   shared   three ids wait for one silent next hop; each gets its own ADDR_ERROR
 *   destroy  ids destroyed while they wait: no event, no crash
 */
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "../../common/cm_test.h"

static struct sockaddr_storage dst;

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int start(struct rdma_event_channel *ch, struct rdma_cm_id **id, int ms)
{
	CT_CHECK(rdma_create_id(ch, id, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(rdma_resolve_addr(*id, NULL, (struct sockaddr *)&dst, ms) == 0);
	return 0;
}

static int expect_error(struct rdma_event_channel *ch, struct rdma_cm_id *id, int status,
			int wait_ms)
{
	struct rdma_cm_event *ev = ct_expect(ch, RDMA_CM_EVENT_ADDR_ERROR, wait_ms);

	CT_CHECK(ev != NULL);
	CT_CHECK(ev->id == id);
	if (ev->status != status)
		CT_FAIL("status %d, wanted %d", ev->status, status);
	rdma_ack_cm_event(ev);
	return 0;
}

static int t_ok(int ms)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	CT_CHECK(ch);
	if (start(ch, &id, ms))
		return 1;
	ev = ct_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, ms + 5000);
	CT_CHECK(ev && ev->id == id && ev->status == 0);
	rdma_ack_cm_event(ev);
	CT_CHECK(id->verbs != NULL);
	CT_CHECK(rdma_resolve_route(id, 2000) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int t_timeout(int ms)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	double t0, dt;

	CT_CHECK(ch);
	t0 = now_ms();
	if (start(ch, &id, ms))
		return 1;
	/* nothing yet: the id waits in the kernel's neighbour resolution */
	CT_CHECK(rdma_resolve_route(id, 2000) == -1 && errno == EINVAL);
	if (expect_error(ch, id, -ETIMEDOUT, ms * 3))
		return 1;
	dt = now_ms() - t0;
	printf("ADDR_ERROR -ETIMEDOUT after %.0f ms (timeout %d ms)\n", dt, ms);
	CT_CHECK(dt >= 0.9 * ms && dt <= 1.1 * ms);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int t_failed(int ms)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	CT_CHECK(ch);
	if (start(ch, &id, ms))
		return 1;
	if (expect_error(ch, id, -EHOSTUNREACH, ms + 5000))
		return 1;
	/* back to bound: it may try again (and fails the same way) */
	CT_CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, ms) == 0);
	if (expect_error(ch, id, -EHOSTUNREACH, ms + 5000))
		return 1;
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int t_shared(int ms)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id[3];
	bool seen[3] = { false };
	int i, j;

	CT_CHECK(ch);
	for (i = 0; i < 3; i++)
		if (start(ch, &id[i], ms + 100 * i))
			return 1;
	for (i = 0; i < 3; i++) {
		struct rdma_cm_event *ev = ct_expect(ch, RDMA_CM_EVENT_ADDR_ERROR, ms * 3 + 5000);

		CT_CHECK(ev && ev->status == -ETIMEDOUT);
		for (j = 0; j < 3; j++)
			if (ev->id == id[j])
				seen[j] = true;
		rdma_ack_cm_event(ev);
	}
	CT_CHECK(seen[0] && seen[1] && seen[2]);
	for (i = 0; i < 3; i++)
		rdma_destroy_id(id[i]);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int t_destroy(int ms)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *a, *b;
	struct rdma_cm_event *ev;

	CT_CHECK(ch);
	if (start(ch, &a, ms) || start(ch, &b, ms))
		return 1;
	CT_CHECK(rdma_destroy_id(a) == 0);
	/* the other waiter still gets its answer, and only it */
	ev = ct_get(ch, ms * 3 + 5000);
	CT_CHECK(ev && ev->id == b && ev->event == RDMA_CM_EVENT_ADDR_ERROR);
	rdma_ack_cm_event(ev);
	if (start(ch, &a, ms))
		return 1;
	CT_CHECK(rdma_destroy_id(a) == 0);
	CT_CHECK(ct_get(ch, ms + 500) == NULL);
	rdma_destroy_id(b);
	rdma_destroy_event_channel(ch);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int);
	} tests[] = {
		{ "ok", t_ok }, { "timeout", t_timeout }, { "failed", t_failed },
		{ "shared", t_shared }, { "destroy", t_destroy },
	};
	int ms;

	if (argc < 3 || ct_addr(argv[2], 0, &dst)) {
		fprintf(stderr, "usage: %s ok|timeout|failed|shared|destroy <dst> [ms]\n", argv[0]);
		return 2;
	}
	ms = argc > 3 ? atoi(argv[3]) : 2000;
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (strcmp(tests[i].name, argv[1]) == 0) {
			int r = tests[i].fn(ms);

			printf("%s %s %s\n", r ? "FAIL" : "PASS", argv[1], argv[2]);
			return r;
		}
	}
	fprintf(stderr, "unknown test %s\n", argv[1]);
	return 2;
}
