// SPDX-License-Identifier: MIT
/*
 * log_probe: lists the devices through our libibverbs (which logs them at debug level) and
 * prints how many there are. log_file.sh runs it, also as a set-group-ID copy, to see where
 * the library's log lines go. It finds our library through its RUNPATH: a set-group-ID
 * program ignores LD_LIBRARY_PATH.
 */
#include <stdio.h>

#include <infiniband/verbs.h>

int main(void)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);

	if (!l)
		return 1;
	ibv_free_device_list(l);
	printf("devices %d\n", n);
	return 0;
}
