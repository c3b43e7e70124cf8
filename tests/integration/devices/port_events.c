// SPDX-License-Identifier: MIT
/*
 * Waits for port async events on a device, the way an application would: poll() on the
 * context's async_fd, then ibv_get_async_event/ibv_ack_async_event.
 * usage: port_events DEVICE COUNT   (prints one line per event, then exits 0)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_async_event ev;
	struct ibv_port_attr pa;
	int n, want;

	if (argc != 3)
		return 2;
	want = atoi(argv[2]);
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), argv[1]) == 0)
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "no device %s\n", argv[1]);
		return 1;
	}
	/* A non-blocking async fd with nothing queued must say EAGAIN, not block. */
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	if (ibv_get_async_event(ctx, &ev) == 0 || errno != EAGAIN) {
		fprintf(stderr, "expected EAGAIN from an empty non-blocking async fd\n");
		return 1;
	}
	if (ibv_query_port(ctx, 1, &pa))
		return 1;
	printf("ready %s\n", ibv_port_state_str(pa.state));
	fflush(stdout);
	while (want-- > 0) {
		struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };

		if (poll(&p, 1, 20000) != 1) {
			fprintf(stderr, "timeout waiting for an async event\n");
			return 1;
		}
		if (ibv_get_async_event(ctx, &ev)) {
			perror("ibv_get_async_event");
			return 1;
		}
		if (ibv_query_port(ctx, 1, &pa))
			return 1;
		printf("event %s port %d state %s\n", ibv_event_type_str(ev.event_type),
		       ev.element.port_num, ibv_port_state_str(pa.state));
		fflush(stdout);
		ibv_ack_async_event(&ev);
	}
	ibv_close_device(ctx);
	return 0;
}
