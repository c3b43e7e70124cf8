/*
 * An MPI job that checks every byte it moves, for Open MPI run unmodified over our libraries
 * (tests/integration/apps/mpi.sh): exactly 2 ranks, one per host.
 *   1. where it runs: each rank prints its network namespace and, when SR_EXPECT_LIBDIR is
 *      set, fails unless our librdmacm and libibverbs from there are mapped in it;
 *   2. ping-pong of several sizes, each message's contents checked at each end;
 *   3. MPI_Allreduce (sum) of 256 Ki integers, result checked;
 *   4. one-sided: each rank MPI_Puts 1 MiB into the other's window, then MPI_Gets 1 MiB from
 *      it, both checked (fences around each epoch).
 * With `perf` as argument it also prints the ping-pong latency (8 B) and bandwidth (1 MiB).
 * Exit 0 only if every check passed at both ranks.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int rank;

#define FAIL(...)                                              \
	do {                                                   \
		fprintf(stderr, "rank %d: FAIL: ", rank);      \
		fprintf(stderr, __VA_ARGS__);                  \
		fprintf(stderr, "\n");                         \
		MPI_Abort(MPI_COMM_WORLD, 1);                  \
	} while (0)

/* The byte at offset i of message n sent by rank r: differs across all three. */
static unsigned char pattern(int r, int n, size_t i)
{
	return (unsigned char)(i * 7 + (size_t)n * 13 + (size_t)r * 101 + (i >> 8));
}

static void fill(unsigned char *b, size_t len, int r, int n)
{
	for (size_t i = 0; i < len; i++)
		b[i] = pattern(r, n, i);
}

static void check(const unsigned char *b, size_t len, int r, int n, const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != pattern(r, n, i))
			FAIL("%s: %zu bytes, message %d: byte %zu is %u, expected %u", what, len, n, i,
			     b[i], pattern(r, n, i));
}

static void check_libraries(void)
{
	const char *dir = getenv("SR_EXPECT_LIBDIR");
	char line[4096];
	int found = 0;
	struct stat st;
	FILE *f;

	if (stat("/proc/self/ns/net", &st) != 0)
		FAIL("stat /proc/self/ns/net");
	if (!dir) { /* a run for comparison over another transport */
		printf("rank %d: netns %lu\n", rank, (unsigned long)st.st_ino);
		return;
	}
	f = fopen("/proc/self/maps", "r");
	if (!f)
		FAIL("cannot read /proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');

		if (!path || strncmp(path, dir, strlen(dir)) != 0)
			continue;
		if (strstr(path, "/librdmacm.so"))
			found |= 1;
		if (strstr(path, "/libibverbs.so"))
			found |= 2;
	}
	fclose(f);
	if (found != 3)
		FAIL("our librdmacm/libibverbs from %s are not mapped (found mask %d)", dir, found);
	printf("rank %d: netns %lu, our libraries mapped\n", rank, (unsigned long)st.st_ino);
}

/* Ping-pong of len bytes, iters round trips; returns the mean round-trip time in seconds. */
static double pingpong(unsigned char *buf, size_t len, int iters)
{
	int peer = 1 - rank;
	double t0 = MPI_Wtime();

	for (int n = 0; n < iters; n++) {
		if (rank == 0) {
			fill(buf, len, 0, n);
			MPI_Send(buf, (int)len, MPI_BYTE, peer, n, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)len, MPI_BYTE, peer, n, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check(buf, len, 1, n, "pong");
		} else {
			MPI_Recv(buf, (int)len, MPI_BYTE, peer, n, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check(buf, len, 0, n, "ping");
			fill(buf, len, 1, n);
			MPI_Send(buf, (int)len, MPI_BYTE, peer, n, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) / iters;
}

/* Unchecked ping-pong for the figures: the checks would dominate them. */
static double pingpong_fast(unsigned char *buf, size_t len, int iters)
{
	int peer = 1 - rank;
	double t0;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int n = 0; n < iters; n++) {
		if (rank == 0) {
			MPI_Send(buf, (int)len, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)len, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, (int)len, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)len, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) / iters;
}

static void allreduce(void)
{
	enum { N = 1 << 18 };
	int *in = malloc(N * sizeof(int)), *out = malloc(N * sizeof(int));

	if (!in || !out)
		FAIL("malloc");
	for (int i = 0; i < N; i++)
		in[i] = i * (rank + 1) + rank;
	MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < N; i++) /* rank 0 gave i, rank 1 gave 2i + 1 */
		if (out[i] != 3 * i + 1)
			FAIL("allreduce: element %d is %d, expected %d", i, out[i], 3 * i + 1);
	free(in);
	free(out);
}

static void one_sided(void)
{
	enum { LEN = 1 << 20 };
	int peer = 1 - rank;
	unsigned char *win_buf, *local = malloc(LEN);
	MPI_Win win;

	if (!local)
		FAIL("malloc");
	MPI_Alloc_mem(LEN, MPI_INFO_NULL, &win_buf);
	memset(win_buf, 0, LEN);
	MPI_Win_create(win_buf, LEN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);

	/* Put: my pattern into the peer's window */
	fill(local, LEN, rank, 1000);
	MPI_Win_fence(0, win);
	MPI_Put(local, LEN, MPI_BYTE, peer, 0, LEN, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	check(win_buf, LEN, peer, 1000, "put (window contents)");

	/* Get: the peer's window, refilled by the peer with its own new pattern */
	fill(win_buf, LEN, rank, 2000);
	memset(local, 0, LEN);
	MPI_Win_fence(0, win);
	MPI_Get(local, LEN, MPI_BYTE, peer, 0, LEN, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	check(local, LEN, peer, 2000, "get");

	MPI_Win_free(&win);
	MPI_Free_mem(win_buf);
	free(local);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 1, 8, 1000, 4096, 65536, 1 << 20 };
	int size, perf = argc > 1 && strcmp(argv[1], "perf") == 0;
	unsigned char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2)
		FAIL("needs 2 ranks, has %d", size);
	check_libraries();
	buf = malloc(1 << 20);
	if (!buf)
		FAIL("malloc");

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		pingpong(buf, sizes[s], sizes[s] >= 65536 ? 10 : 50);
	allreduce();
	one_sided();

	if (perf) {
		double lat = pingpong_fast(buf, 8, 2000), bw = pingpong_fast(buf, 1 << 20, 100);

		if (rank == 0)
			printf("perf: ping-pong 8 B half round trip %.2f us; 1 MiB %.1f MB/s\n",
			       lat / 2 * 1e6, 2.0 * (1 << 20) / bw / 1e6);
	}
	free(buf);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("OK: ping-pong, allreduce, put/get checked\n");
	MPI_Finalize();
	return 0;
}
