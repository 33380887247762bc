// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"

#include <string.h>

#include "modsig.h"

/* The last 40 bytes of a module: info struct, then the magic. */
static void make_tail(uint8_t *t, uint8_t id_type, uint32_t sig_len, uint8_t junk_at)
{
	memset(t, 0, MODSIG_INFO_LEN);
	t[2] = id_type;
	t[8] = (uint8_t)(sig_len >> 24);
	t[9] = (uint8_t)(sig_len >> 16);
	t[10] = (uint8_t)(sig_len >> 8);
	t[11] = (uint8_t)sig_len;
	if (junk_at < 8)
		t[junk_at] = 1;
	memcpy(t + MODSIG_INFO_LEN, MODSIG_MAGIC, MODSIG_MAGIC_LEN);
}

static void test_tail(void **state)
{
	uint8_t t[MODSIG_TAIL_LEN];
	struct modsig_layout l;
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(MODSIG_TAIL_LEN, 40);
	make_tail(t, 2, 700, 99);
	assert_int_equal(modsig_parse_tail(t, sizeof(t), 10000, &l, &e), 0);
	assert_int_equal(l.sig_len, 700);
	assert_int_equal(l.sig_off, 10000 - 40 - 700);
	assert_int_equal(l.signed_len, l.sig_off);

	/* The kernel's checks, in its order. */
	make_tail(t, 2, 10000 - 40, 99);
	assert_int_equal(modsig_parse_tail(t, sizeof(t), 10000, &l, &e), -1);
	assert_non_null(strstr(e.msg, "corrupt signature length"));
	make_tail(t, 2, 10000 - 41, 99);
	assert_int_equal(modsig_parse_tail(t, sizeof(t), 100000, &l, &e), 0);
	make_tail(t, 1, 700, 99);
	assert_int_equal(modsig_parse_tail(t, sizeof(t), 10000, &l, &e), -1);
	assert_non_null(strstr(e.msg, "not PKCS#7"));
	for (uint8_t i = 0; i < 8; i++) {
		if (i == 2)
			continue;
		make_tail(t, 2, 700, i);
		assert_int_equal(modsig_parse_tail(t, sizeof(t), 10000, &l, &e), -1);
		assert_non_null(strstr(e.msg, "non-zero"));
	}
	make_tail(t, 2, 0xffffffffu, 99);
	assert_int_equal(modsig_parse_tail(t, sizeof(t), 1ull << 40, &l, &e), -1);
	assert_non_null(strstr(e.msg, "implausibly large"));

	/* No magic, or too short to hold one: unsigned, not an error. */
	make_tail(t, 2, 700, 99);
	t[MODSIG_TAIL_LEN - 2] = 'X';
	assert_int_equal(modsig_parse_tail(t, sizeof(t), 10000, &l, &e), 1);
	assert_int_equal(modsig_parse_tail(t, 10, 10, &l, &e), 1);
	assert_int_equal(modsig_parse_tail(t, 0, 0, &l, &e), 1);
	/* Exactly the tail and nothing before it: the length check catches it. */
	make_tail(t, 2, 0, 99);
	assert_int_equal(modsig_parse_tail(t, sizeof(t), sizeof(t), &l, &e), -1);
}

static void test_certs(void **state)
{
	struct modsig_certs *c = NULL;
	char *bad[] = {(char *)"/nonexistent.pem"};
	char *notcert[] = {(char *)"/etc/hostname"};
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(modsig_certs_load(NULL, 0, &c, &e), 0);
	assert_int_equal(modsig_certs_count(c), 0);
	modsig_certs_free(c);
	assert_int_equal(modsig_certs_load(bad, 1, &c, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_int_equal(modsig_certs_load(notcert, 1, &c, &e), -1);
	assert_non_null(strstr(e.msg, "not a PEM or DER X.509 certificate"));
	modsig_certs_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_certs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
