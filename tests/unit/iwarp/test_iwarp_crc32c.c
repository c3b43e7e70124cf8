// SPDX-License-Identifier: MIT
/*
 * CRC-32C: the check values of docs/WIRE.md §1.6 and RFC 3720 (iSCSI), the
 * incremental convention, hardware == table path, and the LSB-first wire
 * order MPA uses. Random buffers of every length up to 4 KiB and some large,
 * misaligned ones are checked against a bit-at-a-time reference, which
 * exercises every stripe tier and tail of the multi-stream path.
 */
#include "iw_test.h"

#include "iwarp/crc32c.h"


/* Bit-at-a-time CRC-32C, same finished-value convention as sr_crc32c(). */
static uint32_t ref_crc32c(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

/* xorshift64*, so failures reproduce. */
static uint64_t rnd_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 0x2545F4914F6CDD1Dull;
}

static uint8_t *rnd_buf(size_t len)
{
	uint8_t *b = malloc(len ? len : 1);

	assert_non_null(b);
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(rnd() >> 56);
	return b;
}

static void test_vectors(void **state)
{
	uint8_t buf[32];

	assert_int_equal(sr_crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(sr_crc32c_sw(0, "123456789", 9), 0xE3069283u);

	memset(buf, 0, sizeof(buf));
	assert_int_equal(sr_crc32c(0, buf, 32), 0x8A9136AAu);
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(sr_crc32c(0, buf, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	assert_int_equal(sr_crc32c(0, buf, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	assert_int_equal(sr_crc32c(0, buf, 32), 0x113FDB5Cu);

	/* No bytes: CRC 0, and 0 stays the starting point. */
	assert_int_equal(sr_crc32c(0, NULL, 0), 0);
	assert_int_equal(sr_crc32c(0xE3069283u, NULL, 0), 0xE3069283u);
	assert_int_equal(ref_crc32c(0, (const uint8_t *)"123456789", 9),
			 0xE3069283u);
}

static void test_incremental(void **state)
{
	uint8_t buf[300];
	uint32_t whole;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	whole = sr_crc32c(0, buf, sizeof(buf));
	for (size_t split = 0; split <= sizeof(buf); split++) {
		uint32_t c = sr_crc32c(0, buf, split);

		c = sr_crc32c(c, buf + split, sizeof(buf) - split);
		assert_int_equal(c, whole);
	}
	/* Three pieces, the way an FPDU is summed: header, payload, pad. */
	assert_int_equal(
		sr_crc32c(sr_crc32c(sr_crc32c(0, buf, 16), buf + 16, 281),
			  buf + 297, 3),
		whole);
}

static void test_hw_matches_sw(void **state)
{
	uint8_t *buf = malloc(4096 + 16);
	uint32_t seed = 12345;

	assert_non_null(buf);
	for (size_t i = 0; i < 4096 + 16; i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
	/* Every alignment and many lengths, through both paths. */
	for (size_t a = 0; a < 16; a++)
		for (size_t len = 0; len < 600; len += 1 + len / 8)
			assert_int_equal(sr_crc32c(0x1234u, buf + a, len),
					 sr_crc32c_sw(0x1234u, buf + a, len));
	assert_int_equal(sr_crc32c(0, buf, 4096), sr_crc32c_sw(0, buf, 4096));
	print_message("crc32c path: %s\n", sr_crc32c_hw() ? "sse4.2" : "table");
	free(buf);
}

/* Every length 0..4096 at a varying misalignment, from a varying start CRC. */
static void test_all_lengths(void **state)
{
	const size_t max = 4096;
	uint8_t *buf = rnd_buf(max + 8);

	for (size_t len = 0; len <= max; len++) {
		size_t off = len % 8;
		uint32_t seed = len & 1 ? (uint32_t)rnd() : 0;
		uint32_t want = ref_crc32c(seed, buf + off, len);

		if (sr_crc32c(seed, buf + off, len) != want ||
		    sr_crc32c_sw(seed, buf + off, len) != want)
			fail_msg("len %zu off %zu: hw %08x sw %08x ref %08x",
				 len, off, sr_crc32c(seed, buf + off, len),
				 sr_crc32c_sw(seed, buf + off, len), want);
	}
	free(buf);
}

/* Large buffers, 64 KiB around every alignment and odd lengths, 1 MiB. */
static void test_large(void **state)
{
	const size_t max = (1u << 20) + 64;
	uint8_t *buf = rnd_buf(max);
	static const size_t lens[] = {
		65536,	   65536 + 1,  65536 - 1, 65536 + 7, 65536 + 13,
		3 * 8192,  6 * 2048,   6 * 2048 - 1, 6 * 2048 + 1,
		12345,	   40000,      100003,	  (1u << 20) - 3,
		1u << 20,  (1u << 20) + 5,
	};

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (size_t off = 0; off < 16; off += (i < 4 ? 1 : 5)) {
			size_t len = lens[i];
			uint32_t want;

			if (off + len > max)
				continue;
			want = ref_crc32c(0x5a5a5a5au, buf + off, len);
			assert_int_equal(sr_crc32c(0x5a5a5a5au, buf + off, len),
					 want);
			assert_int_equal(
				sr_crc32c_sw(0x5a5a5a5au, buf + off, len),
				want);
		}
	/* All zeros and all ones stress the shift constants differently. */
	memset(buf, 0, max);
	assert_int_equal(sr_crc32c(0, buf, 1u << 20),
			 ref_crc32c(0, buf, 1u << 20));
	memset(buf, 0xff, max);
	assert_int_equal(sr_crc32c(0, buf + 3, 1u << 20),
			 ref_crc32c(0, buf + 3, 1u << 20));
	free(buf);
}

/* Chained calls split at random points equal one call over everything. */
static void test_random_chaining(void **state)
{
	const size_t max = 256 * 1024;
	uint8_t *buf = rnd_buf(max);

	for (int round = 0; round < 200; round++) {
		size_t len = (size_t)(rnd() % max), done = 0;
		uint32_t whole = sr_crc32c(0, buf, len), c = 0;

		/* Short pieces in some rounds, long ones in others. */
		size_t cap = round % 3 == 0 ? 300 : len + 1;

		while (done < len) {
			size_t n = (size_t)(rnd() % cap);

			if (n > len - done)
				n = len - done;
			c = sr_crc32c(c, buf + done, n);
			done += n;
		}
		assert_int_equal(c, whole);
		if (round % 20 == 0)
			assert_int_equal(whole, ref_crc32c(0, buf, len));
	}
	free(buf);
}

static void test_wire_order(void **state)
{
	uint8_t z[32] = { 0 }, w[4];

	sr_crc32c_put_wire(w, sr_crc32c(0, z, 32));
	assert_int_equal(w[0], 0xaa);
	assert_int_equal(w[1], 0x36);
	assert_int_equal(w[2], 0x91);
	assert_int_equal(w[3], 0x8a);
	assert_int_equal(sr_crc32c_get_wire(w), 0x8A9136AAu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_incremental),
		cmocka_unit_test(test_hw_matches_sw),
		cmocka_unit_test(test_all_lengths),
		cmocka_unit_test(test_large),
		cmocka_unit_test(test_random_chaining),
		cmocka_unit_test(test_wire_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
