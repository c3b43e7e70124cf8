// SPDX-License-Identifier: MIT
/*
 * Replay driver for fuzz harnesses when libFuzzer is not in use: feeds every file named on the
 * command line (directories are walked one level) to LLVMFuzzerTestOneInput, plus a fixed set
 * of pseudo-random mutations of each, so the harness runs as an ordinary regression test.
 * "-mutations=N" first on the command line sets how many per file (default 2000): harnesses
 * that run a whole connection per input ask for fewer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long runs;
static long mutations = 2000;

static void run_mutations(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size + 64);
	uint32_t seed = 2463534242u;

	if (!buf)
		return;
	LLVMFuzzerTestOneInput(data, size);
	runs++;
	for (long i = 0; i < mutations; i++) {
		size_t n = size;

		memcpy(buf, data, size);
		for (int k = 0; k < 4; k++) {
			seed ^= seed << 13;
			seed ^= seed >> 17;
			seed ^= seed << 5;
			if (n && (seed & 3) != 3)
				buf[seed % n] ^= (uint8_t)(seed >> 8);
			else if ((seed & 7) == 3 && n)
				n = seed % n; /* truncate */
			else if (n < size + 64)
				buf[n++] = (uint8_t)(seed >> 16); /* extend */
		}
		LLVMFuzzerTestOneInput(buf, n);
		runs++;
	}
	free(buf);
}

static void run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(len > 0 ? len : 1);
	if (buf && fread(buf, 1, len, f) == (size_t)len)
		run_mutations(buf, len);
	free(buf);
	fclose(f);
}

int main(int argc, char **argv)
{
	int first = 1;

	if (argc > 1 && strncmp(argv[1], "-mutations=", 11) == 0) {
		mutations = strtol(argv[1] + 11, NULL, 10);
		first = 2;
	}
	for (int i = first; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *e;

			while (d && (e = readdir(d))) {
				char p[4096];

				if (e->d_name[0] == '.')
					continue;
				snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
				run_file(p);
			}
			if (d)
				closedir(d);
		} else {
			run_file(argv[i]);
		}
	}
	run_mutations((const uint8_t *)"", 0);
	printf("replayed %lu inputs\n", runs);
	return 0;
}
