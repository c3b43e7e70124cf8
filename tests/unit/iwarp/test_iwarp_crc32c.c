// SPDX-License-Identifier: MIT
/*
 * CRC-32C: the check values of wire.md §1.6 and RFC 3720 (iSCSI), the
 * incremental convention, hardware == table path, and the LSB-first wire
 * order MPA uses.
 */
#include "iw_test.h"

#include "iwarp/crc32c.h"

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
		cmocka_unit_test(test_wire_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
