/*
 * check_oid.c - unit tests for src/object/oid.c (aptix/oid.h) and object ids.
 *
 * The expected blob ids are git's SHA-256 object ids: aptix names a
 * blob exactly as `git init --object-format=sha256` + `git hash-object`
 * does (checked with git 2.x when these tests were written).
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aptix.h"
#include "unit.h"

#define EMPTY_BLOB \
	"473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"
#define HELLO_BLOB \
	"2cf8d83d9ee29543b34a87727421fdecb7e3f3a183d337639025de576db9ebb4"
#define HELLO_WORLD_BLOB \
	"fee53a18d32820613c0527aa79be5cb30173c823a9b448fa4817767cc84c6f03"
#define ZEROS_1000_BLOB \
	"3fb93f5ff25e070a78b2025e843191ac25db74fb9ea0f9307b92713c1d765605"

static void setup(void)
{
	aptix_error_clear();
}

static void teardown(void)
{
	aptix_error_clear();
}

START_TEST(test_hex_round_trip)
{
	aptix_oid a, b;
	char hex[APTIX_OID_HEXSZ + 1], upper[APTIX_OID_HEXSZ + 1];
	int i, k;

	for (k = 0; k < 8; k++) {
		for (i = 0; i < APTIX_OID_RAWSZ; i++)
			a.id[i] = (unsigned char)(i * 8 + k * 37);
		ck_assert_ptr_eq(aptix_oid_tostr(hex, &a), hex);
		ck_assert_uint_eq(strlen(hex), APTIX_OID_HEXSZ);
		ck_assert_int_eq(aptix_is_hex(hex, APTIX_OID_HEXSZ), 1);
		for (i = 0; i < APTIX_OID_HEXSZ; i++)
			ck_assert_msg((hex[i] >= '0' && hex[i] <= '9') ||
				      (hex[i] >= 'a' && hex[i] <= 'f'),
				      "not lowercase hex: %s", hex);
		memset(&b, 0xee, sizeof(b));
		ck_assert_int_eq(aptix_oid_fromstr(&b, hex), 0);
		ck_assert_int_eq(aptix_oid_cmp(&a, &b), 0);
		ck_assert_str_eq(aptix_oid_hex(&b), hex);

		/* upper case is accepted and means the same */
		for (i = 0; i <= APTIX_OID_HEXSZ; i++)
			upper[i] = (hex[i] >= 'a' && hex[i] <= 'f') ?
				(char)(hex[i] - 'a' + 'A') : hex[i];
		ck_assert_int_eq(aptix_oid_fromstr(&b, upper), 0);
		ck_assert_int_eq(aptix_oid_cmp(&a, &b), 0);
	}

	memset(&a, 0, sizeof(a));
	ck_assert_str_eq(aptix_oid_tostr(hex, &a),
			 "0000000000000000000000000000000000000000000000000000000000000000");
	memset(&a, 0xff, sizeof(a));
	ck_assert_str_eq(aptix_oid_tostr(hex, &a),
			 "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff");
}
END_TEST

START_TEST(test_fromstr_invalid)
{
	static const char *const bad[] = {
		"",
		"0",
		/* 63 digits */
		"473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a30372181",
		/* 65 digits */
		"473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a3037218130",
		/* a non-hex digit in various places */
		"g73a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
		"473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a30372181g",
		"473a0f4c3be8a93681a267e3b1e9a7d a1185436fe141f7749120a303721813",
		"473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a30372181-",
		"0x3a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
	};
	aptix_oid id;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		aptix_error_clear();
		ck_assert_msg(aptix_oid_fromstr(&id, bad[i]) == APTIX_EINVALID,
			      "accepted '%s'", bad[i]);
		ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
					     "not an object id"));
	}
	/* an embedded NUL ends the string: what follows is not read */
	ck_assert_int_eq(aptix_oid_fromstr(&id, EMPTY_BLOB "\0" "00"), 0);
	ck_assert_int_eq(aptix_oid_fromstrn(&id, "12\0" "4", 4),
			 APTIX_EINVALID);
}
END_TEST

START_TEST(test_fromstrn_prefixes)
{
	const char *hex = HELLO_BLOB;
	aptix_oid full, p;
	size_t len, i;

	ck_assert_int_eq(aptix_oid_fromstr(&full, hex), 0);
	for (len = 0; len <= APTIX_OID_HEXSZ; len++) {
		memset(&p, 0xaa, sizeof(p));
		ck_assert_int_eq(aptix_oid_fromstrn(&p, hex, len), 0);
		/* whole bytes copied */
		for (i = 0; i < len / 2; i++)
			ck_assert_uint_eq(p.id[i], full.id[i]);
		/* an odd length leaves a high nibble, low nibble zero */
		if (len % 2)
			ck_assert_uint_eq(p.id[len / 2], full.id[len / 2] & 0xf0);
		/* the rest is zero-filled */
		for (i = (len + 1) / 2; i < APTIX_OID_RAWSZ; i++)
			ck_assert_uint_eq(p.id[i], 0);
	}
	ck_assert_int_eq(aptix_oid_fromstrn(&p, "abc", 3), 0);
	ck_assert_uint_eq(p.id[0], 0xab);
	ck_assert_uint_eq(p.id[1], 0xc0);
	ck_assert_uint_eq(p.id[2], 0);
	ck_assert_int_eq(aptix_oid_fromstrn(&p, "F", 1), 0);
	ck_assert_uint_eq(p.id[0], 0xf0);

	/* only the first len characters are looked at */
	ck_assert_int_eq(aptix_oid_fromstrn(&p, "ab!?", 2), 0);
	ck_assert_uint_eq(p.id[0], 0xab);
	ck_assert_int_eq(aptix_oid_fromstrn(&p, "abz", 3), APTIX_EINVALID);
	ck_assert_int_eq(aptix_oid_fromstrn(&p, "xbc", 3), APTIX_EINVALID);
	/* longer than an id */
	ck_assert_int_eq(aptix_oid_fromstrn(&p, HELLO_BLOB "0", 65),
			 APTIX_EINVALID);
}
END_TEST

START_TEST(test_is_hex)
{
	ck_assert_int_eq(aptix_is_hex("", 0), 1);
	ck_assert_int_eq(aptix_is_hex("0123456789abcdefABCDEF", 22), 1);
	ck_assert_int_eq(aptix_is_hex("abcg", 4), 0);
	ck_assert_int_eq(aptix_is_hex("abcg", 3), 1);
	ck_assert_int_eq(aptix_is_hex("ab\0d", 4), 0);
	ck_assert_int_eq(aptix_is_hex(" a", 2), 0);
	ck_assert_int_eq(aptix_is_hex("\xe0", 1), 0);
}
END_TEST

START_TEST(test_cmp_zero_hex_slots)
{
	aptix_oid a, b, c, d;
	const char *s[4];

	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(aptix_oid_is_zero(&a), 1);
	b = a;
	b.id[31] = 1;
	ck_assert_int_eq(aptix_oid_is_zero(&b), 0);
	c = a;
	c.id[0] = 1;
	ck_assert_int_lt(aptix_oid_cmp(&a, &b), 0);
	ck_assert_int_lt(aptix_oid_cmp(&b, &c), 0);
	ck_assert_int_gt(aptix_oid_cmp(&c, &a), 0);
	ck_assert_int_eq(aptix_oid_cmp(&c, &c), 0);

	/* four rotating buffers: four results stay valid together */
	d = a;
	d.id[15] = 0x42;
	s[0] = aptix_oid_hex(&a);
	s[1] = aptix_oid_hex(&b);
	s[2] = aptix_oid_hex(&c);
	s[3] = aptix_oid_hex(&d);
	ck_assert_str_eq(s[0], "0000000000000000000000000000000000000000000000000000000000000000");
	ck_assert_str_eq(s[1], "0000000000000000000000000000000000000000000000000000000000000001");
	ck_assert_str_eq(s[2], "0100000000000000000000000000000000000000000000000000000000000000");
	ck_assert_str_eq(s[3], "0000000000000000000000000000004200000000000000000000000000000000");
}
END_TEST

static void assert_blob_id(const void *data, size_t len, const char *expect)
{
	aptix_oid id;
	char hex[APTIX_OID_HEXSZ + 1];

	ck_assert_int_eq(aptix_object_hash(&id, APTIX_OBJ_BLOB, data, len), 0);
	ck_assert_str_eq(aptix_oid_tostr(hex, &id), expect);
}

START_TEST(test_object_hash_git)
{
	char *zeros = calloc(1, 1000);

	ck_assert_ptr_nonnull(zeros);
	assert_blob_id("", 0, EMPTY_BLOB);
	assert_blob_id("hello\n", 6, HELLO_BLOB);
	assert_blob_id("hello world", 11, HELLO_WORLD_BLOB);
	assert_blob_id(zeros, 1000, ZEROS_1000_BLOB);
	/* the hash context is reused: same answers in another order */
	assert_blob_id("hello\n", 6, HELLO_BLOB);
	assert_blob_id("", 0, EMPTY_BLOB);
	free(zeros);
}
END_TEST

START_TEST(test_object_hash_types)
{
	aptix_oid blob, turn, session, plain;

	ck_assert_int_eq(aptix_object_hash(&blob, APTIX_OBJ_BLOB, "x", 1), 0);
	ck_assert_int_eq(aptix_object_hash(&turn, APTIX_OBJ_TURN, "x", 1), 0);
	ck_assert_int_eq(aptix_object_hash(&session, APTIX_OBJ_SESSION, "x",
					   1), 0);
	/* the type is part of the name */
	ck_assert_int_ne(aptix_oid_cmp(&blob, &turn), 0);
	ck_assert_int_ne(aptix_oid_cmp(&turn, &session), 0);
	/* "turn 1\0x" hashed by hand */
	ck_assert_int_eq(aptix_sha256(&plain, "turn 1\0x", 8), 0);
	ck_assert_int_eq(aptix_oid_cmp(&plain, &turn), 0);

	ck_assert_int_eq(aptix_object_hash(&blob, APTIX_OBJ_BAD, "x", 1),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_object_hash(&blob, (aptix_otype)7, "x", 1),
			 APTIX_EINVALID);
}
END_TEST

START_TEST(test_sha256)
{
	aptix_oid id;

	/* FIPS 180-2 test vectors */
	ck_assert_int_eq(aptix_sha256(&id, "abc", 3), 0);
	ck_assert_str_eq(aptix_oid_hex(&id),
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	ck_assert_int_eq(aptix_sha256(&id, "", 0), 0);
	ck_assert_str_eq(aptix_oid_hex(&id),
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
END_TEST

START_TEST(test_otype_names)
{
	ck_assert_str_eq(aptix_otype_name(APTIX_OBJ_BLOB), "blob");
	ck_assert_str_eq(aptix_otype_name(APTIX_OBJ_TURN), "turn");
	ck_assert_str_eq(aptix_otype_name(APTIX_OBJ_SESSION), "session");
	ck_assert_ptr_null(aptix_otype_name(APTIX_OBJ_BAD));
	ck_assert_str_eq(aptix_otype_name(APTIX_OBJ_TOOL_CALL), "tool-call");
	ck_assert_str_eq(aptix_otype_name(APTIX_OBJ_TOOL_RESULT),
			 "tool-result");
	ck_assert_ptr_null(aptix_otype_name((aptix_otype)6));
	ck_assert_ptr_null(aptix_otype_name((aptix_otype)-1));
	ck_assert_int_eq(aptix_otype_from_name("blob"), APTIX_OBJ_BLOB);
	ck_assert_int_eq(aptix_otype_from_name("turn"), APTIX_OBJ_TURN);
	ck_assert_int_eq(aptix_otype_from_name("session"), APTIX_OBJ_SESSION);
	ck_assert_int_eq(aptix_otype_from_name("tool-result"),
			 APTIX_OBJ_TOOL_RESULT);
	ck_assert_int_eq(aptix_otype_from_name("Blob"), APTIX_OBJ_BAD);
	ck_assert_int_eq(aptix_otype_from_name(""), APTIX_OBJ_BAD);
	ck_assert_int_eq(aptix_otype_from_name("commit"), APTIX_OBJ_BAD);
}
END_TEST

START_TEST(test_hex_value)
{
	ck_assert_int_eq(aptix_hex_value('0'), 0);
	ck_assert_int_eq(aptix_hex_value('9'), 9);
	ck_assert_int_eq(aptix_hex_value('a'), 10);
	ck_assert_int_eq(aptix_hex_value('F'), 15);
	ck_assert_int_eq(aptix_hex_value('g'), -1);
	ck_assert_int_eq(aptix_hex_value('\0'), -1);
	ck_assert_int_eq(aptix_hex_value(-61), -1);
	ck_assert_int_eq(aptix_hex_value(0xe9), -1);
}
END_TEST

START_TEST(test_uuid)
{
	static const unsigned char raw[16] = {
		0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef,
		0x80, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0xff
	};
	char a[APTIX_UUID_STRSZ + 1], b[APTIX_UUID_STRSZ + 1];
	unsigned char u[16];
	size_t i;

	aptix_uuid_format(a, raw);
	ck_assert_str_eq(a, "12345678-9abc-4def-8001-0203040506ff");
	ck_assert_int_eq(aptix_uuid_parse(u, a), 0);
	ck_assert_int_eq(memcmp(u, raw, 16), 0);
	ck_assert_int_eq(aptix_uuid_parse(u, "123456789ABC4DEF800102030405"
					  "06FF"), 0);
	ck_assert_int_eq(memcmp(u, raw, 16), 0);
	ck_assert_int_eq(aptix_uuid_parse(u, "not-a-uuid"), APTIX_EINVALID);
	ck_assert_int_eq(aptix_uuid_parse(u, ""), APTIX_EINVALID);
	ck_assert_int_eq(aptix_uuid_parse(u, "12345678-9abc-4def-8001-"
					  "0203040506ff0"), APTIX_EINVALID);
	ck_assert_int_eq(aptix_uuid_parse(u, "1234567-89abc-4def-8001-"
					  "0203040506ff"), APTIX_EINVALID);

	ck_assert_int_eq(aptix_uuid_v4(a), 0);
	ck_assert_int_eq(aptix_uuid_v4(b), 0);
	ck_assert_uint_eq(strlen(a), APTIX_UUID_STRSZ);
	ck_assert_str_ne(a, b);
	for (i = 0; i < APTIX_UUID_STRSZ; i++)
		if (i == 8 || i == 13 || i == 18 || i == 23)
			ck_assert_int_eq(a[i], '-');
		else
			ck_assert(aptix_hex_value(a[i]) >= 0 &&
				  !(a[i] >= 'A' && a[i] <= 'F'));
	ck_assert_int_eq(a[14], '4');
	ck_assert(strchr("89ab", a[19]) != NULL);
}
END_TEST

/* Distinct ids, with equal first bytes every 4 to force collisions. */
static void map_id(aptix_oid *id, size_t i)
{
	memset(id, 0, sizeof(*id));
	id->id[0] = (unsigned char)(i / 4);
	id->id[30] = (unsigned char)(i >> 8);
	id->id[31] = (unsigned char)i;
}

static int sum_cb(const aptix_oid *id, size_t value, void *payload)
{
	size_t *st = payload;

	/* visits in insertion order: the value is the position */
	ck_assert_uint_eq(value, st[0]);
	ck_assert_uint_eq(id->id[31], (unsigned char)value);
	st[0]++;
	st[1] += value;
	return value == st[2] ? 42 : 0;
}

START_TEST(test_oidmap)
{
	aptix_oidmap m = APTIX_OIDMAP_INIT;
	aptix_oid id;
	size_t i, v, st[3];

	map_id(&id, 0);
	ck_assert_int_eq(aptix_oidmap_get(&v, &m, &id), APTIX_ENOTFOUND);
	ck_assert_uint_eq(aptix_oidmap_size(&m), 0);
	for (i = 0; i < 1000; i++) {
		map_id(&id, i);
		ck_assert_int_eq(aptix_oidmap_put(&m, &id, i), 0);
	}
	ck_assert_uint_eq(aptix_oidmap_size(&m), 1000);
	for (i = 0; i < 1000; i++) {
		map_id(&id, i);
		v = 12345;
		ck_assert_int_eq(aptix_oidmap_get(&v, &m, &id), 0);
		ck_assert_uint_eq(v, i);
	}
	map_id(&id, 1000);
	ck_assert_int_eq(aptix_oidmap_get(NULL, &m, &id), APTIX_ENOTFOUND);
	ck_assert_str_eq(aptix_error_last()->message, "no error");

	/* replacing keeps the size and the order */
	map_id(&id, 7);
	ck_assert_int_eq(aptix_oidmap_put(&m, &id, 7), 0);
	ck_assert_uint_eq(aptix_oidmap_size(&m), 1000);

	st[0] = st[1] = 0;
	st[2] = (size_t)-1;
	ck_assert_int_eq(aptix_oidmap_foreach(&m, sum_cb, st), 0);
	ck_assert_uint_eq(st[0], 1000);
	ck_assert_uint_eq(st[1], 999 * 1000 / 2);
	st[0] = st[1] = 0;
	st[2] = 9;
	ck_assert_int_eq(aptix_oidmap_foreach(&m, sum_cb, st), 42);
	ck_assert_uint_eq(st[0], 10);

	map_id(&id, 3);
	ck_assert_int_eq(aptix_oidmap_put(&m, &id, 99), 0);
	ck_assert_int_eq(aptix_oidmap_get(&v, &m, &id), 0);
	ck_assert_uint_eq(v, 99);

	aptix_oidmap_clear(&m);
	ck_assert_uint_eq(aptix_oidmap_size(&m), 0);
	ck_assert_int_eq(aptix_oidmap_get(&v, &m, &id), APTIX_ENOTFOUND);
	ck_assert_int_eq(aptix_oidmap_put(&m, &id, 5), 0);
	ck_assert_int_eq(aptix_oidmap_get(&v, &m, &id), 0);
	ck_assert_uint_eq(v, 5);
	aptix_oidmap_release(&m);
	ck_assert_uint_eq(aptix_oidmap_size(&m), 0);
	ck_assert_int_eq(aptix_oidmap_get(&v, &m, &id), APTIX_ENOTFOUND);
	aptix_oidmap_release(&m);
}
END_TEST

Suite *oid_suite(void)
{
	Suite *s = suite_create("oid");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_hex_round_trip);
	tcase_add_test(tc, test_fromstr_invalid);
	tcase_add_test(tc, test_fromstrn_prefixes);
	tcase_add_test(tc, test_is_hex);
	tcase_add_test(tc, test_cmp_zero_hex_slots);
	tcase_add_test(tc, test_object_hash_git);
	tcase_add_test(tc, test_object_hash_types);
	tcase_add_test(tc, test_sha256);
	tcase_add_test(tc, test_otype_names);
	tcase_add_test(tc, test_hex_value);
	tcase_add_test(tc, test_uuid);
	tcase_add_test(tc, test_oidmap);
	suite_add_tcase(s, tc);
	return s;
}
