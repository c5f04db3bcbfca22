/*
 * check_zstream.c - unit tests for the stored form of objects
 * (src/object/zstream.c): type byte, LEB128 size, zlib or raw content.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "aptix.h"
#include "object/zstream.h"
#include "unit.h"

/* Test vectors: objects-format.md, "Stored form, format 2" */
#define DOC_TURN_STORED \
	"c2b5025e090c060263310d0480d095ffbc311407c7ec1ac1b0a8a4c6" \
	"ad3445e65debde822c218717414567b205ba78919252ec8c2704012d" \
	"060770656e64696e672e0480d095ffbc313509040400130400180400" \
	"1904001e04003104000036040100"
#define DOC_SPLICED_CONTENT "{\"text\":\"The parser reads a token, " \
	"then \\\"peeks\\\" at the next one.\\nCaf\\u00e9 is fine.\\n\"}"
#define DOC_SPLICED_STORED \
	"c15a016d17f0c44d476b718967863e84abf8794867e3267ccb1e2d69" \
	"aa88dfed1ae5de09010b7b2274657874223a22227d"
/* objects-format.md, "Based values" (format 3) */
#define DOC_BASED_CONTENT \
	"The parser reads a token, then \"peeks\" at the next two.\n" \
	"Caf\xc3\xa9 is fine.\n"
#define DOC_BASED_STORED \
	"21476d17f0c44d476b718967863e84abf8794867e3267ccb1e2d69aa" \
	"88dfed1ae5de783f7b0418720b21dd9892f27c0c63007cc7188a"

static void setup(void)
{
	aptix_error_clear();
}

static void teardown(void)
{
	aptix_error_clear();
}

/* Compressible text of len bytes. */
static char *text_data(size_t len)
{
	static const char words[] = "the quick brown fox jumps over the "
		"lazy dog; session turn blob snapshot\n";
	char *p = malloc(len + 1);
	size_t i;

	ck_assert_ptr_nonnull(p);
	for (i = 0; i < len; i++)
		p[i] = words[(i * 7 + i / 13) % (sizeof(words) - 1)];
	p[len] = '\0';
	return p;
}

static size_t varint_len(size_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Encode, check the header, decode, compare; returns whether raw. */
static int round_trip(aptix_otype type, const void *data, size_t len)
{
	aptix_buf enc = APTIX_BUF_INIT, dec = APTIX_BUF_INIT;
	aptix_otype t = APTIX_OBJ_BAD;
	size_t size = 12345, hlen = 0;
	int raw;

	ck_assert_int_eq(aptix_stored_encode(&enc, type, data, len), 0);
	ck_assert_uint_ge(enc.len, 2);
	raw = (enc.ptr[0] & APTIX_STORED_RAW) != 0;
	ck_assert_int_eq(enc.ptr[0] & 0x7f, (int)type);
	ck_assert_int_eq(aptix_stored_header(&t, &size, &hlen, enc.ptr,
					     enc.len), 0);
	ck_assert_int_eq(t, type);
	ck_assert_uint_eq(size, len);
	ck_assert_uint_eq(hlen, 1 + varint_len(len));
	if (raw)
		ck_assert_uint_eq(enc.len, hlen + len);
	else
		ck_assert_uint_lt(enc.len, hlen + len);

	aptix_buf_puts(&dec, "stale content");
	t = APTIX_OBJ_BAD;
	ck_assert_int_eq(aptix_stored_decode(&dec, &t, enc.ptr, enc.len), 0);
	ck_assert_int_eq(t, type);
	ck_assert_uint_eq(dec.len, len);
	if (len)
		ck_assert_int_eq(memcmp(dec.ptr, data, len), 0);
	ck_assert_int_eq(dec.ptr[len], '\0');

	/* encoding replaces what the output buffer held */
	ck_assert_int_eq(aptix_stored_encode(&dec, type, data, len), 0);
	ck_assert_uint_eq(dec.len, enc.len);
	ck_assert_int_eq(memcmp(dec.ptr, enc.ptr, enc.len), 0);

	aptix_buf_release(&enc);
	aptix_buf_release(&dec);
	return raw;
}

START_TEST(test_round_trip_sizes)
{
	static const size_t sizes[] = { 0, 1, 63, 64, 127, 128, 1000,
					16384, 1 << 20 };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *d = text_data(sizes[i]);
		int raw_blob = round_trip(APTIX_OBJ_BLOB, d, sizes[i]);

		round_trip(APTIX_OBJ_TURN, d, sizes[i]);
		round_trip(APTIX_OBJ_SESSION, d, sizes[i]);
		/* below 64 bytes content is always stored raw; longer
		 * text compresses */
		if (sizes[i] < 64)
			ck_assert_msg(raw_blob, "size %zu not raw", sizes[i]);
		else if (sizes[i] >= 1000)
			ck_assert_msg(!raw_blob, "size %zu raw", sizes[i]);
		free(d);
	}
}
END_TEST

START_TEST(test_round_trip_binary)
{
	unsigned char all[256];
	char *zeros = calloc(1, 1 << 20);
	int i;

	ck_assert_ptr_nonnull(zeros);
	for (i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	round_trip(APTIX_OBJ_BLOB, all, sizeof(all));
	round_trip(APTIX_OBJ_BLOB, "\0", 1);
	ck_assert_int_eq(round_trip(APTIX_OBJ_BLOB, zeros, 1 << 20), 0);
	ck_assert_int_eq(round_trip(APTIX_OBJ_BLOB, zeros, 64), 0);
	free(zeros);
}
END_TEST

START_TEST(test_incompressible_raw)
{
	static const size_t sizes[] = { 64, 100, 4096, 1 << 20 };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned char *d = malloc(sizes[i]);

		ck_assert_ptr_nonnull(d);
		unit_fill_random(d, sizes[i], 7 + i);
		ck_assert_msg(round_trip(APTIX_OBJ_BLOB, d, sizes[i]),
			      "random data of %zu bytes was not stored raw",
			      sizes[i]);
		free(d);
	}
}
END_TEST

START_TEST(test_header_layout)
{
	aptix_buf enc = APTIX_BUF_INIT;
	char *d = text_data(300);

	/* raw: flag | type, LEB128 size, bytes */
	ck_assert_int_eq(aptix_stored_encode(&enc, APTIX_OBJ_SESSION, "ab", 2),
			 0);
	ck_assert_uint_eq(enc.len, 4);
	ck_assert_mem_eq(enc.ptr, "\x83\x02" "ab", 4);
	ck_assert_int_eq(aptix_stored_encode(&enc, APTIX_OBJ_BLOB, "", 0), 0);
	ck_assert_uint_eq(enc.len, 2);
	ck_assert_mem_eq(enc.ptr, "\x81\x00", 2);
	/* compressed: type, 300 = 0xac 0x02, then a zlib stream */
	ck_assert_int_eq(aptix_stored_encode(&enc, APTIX_OBJ_TURN, d, 300), 0);
	ck_assert_mem_eq(enc.ptr, "\x02\xac\x02\x78", 4);
	aptix_buf_release(&enc);
	free(d);
}
END_TEST

/* Every proper prefix of an encoded value is detected as damaged. */
static void assert_truncations_corrupt(const aptix_buf *enc)
{
	aptix_buf dec = APTIX_BUF_INIT;
	aptix_otype t;
	size_t len, size, hlen;
	int r;

	for (len = 0; len < enc->len; len++) {
		/* a private copy, so that reading past len is caught */
		char *copy = malloc(len ? len : 1);

		ck_assert_ptr_nonnull(copy);
		memcpy(copy, enc->ptr, len);
		aptix_buf_puts(&dec, "x");
		r = aptix_stored_decode(&dec, &t, copy, len);
		ck_assert_msg(r == APTIX_ECORRUPT,
			      "truncated to %zu of %zu bytes: got %d", len,
			      enc->len, r);
		ck_assert_int_eq(dec.ptr[dec.len], '\0');
		ck_assert(dec.len == 0 || !strcmp(dec.ptr, "x"));
		aptix_buf_clear(&dec);
		r = aptix_stored_header(&t, &size, &hlen, copy, len);
		ck_assert(r == 0 || r == APTIX_ECORRUPT);
		if (r == 0)
			ck_assert_uint_le(hlen, len);
		free(copy);
	}
	aptix_buf_release(&dec);
}

START_TEST(test_truncation)
{
	aptix_buf enc = APTIX_BUF_INIT;
	unsigned char rnd[300];
	char *d = text_data(5000);

	unit_fill_random(rnd, sizeof(rnd), 99);
	/* raw, empty content */
	aptix_stored_encode(&enc, APTIX_OBJ_BLOB, "", 0);
	assert_truncations_corrupt(&enc);
	/* raw, short text */
	aptix_stored_encode(&enc, APTIX_OBJ_TURN, "hello\n", 6);
	assert_truncations_corrupt(&enc);
	/* raw, 2-byte varint */
	aptix_stored_encode(&enc, APTIX_OBJ_BLOB, rnd, sizeof(rnd));
	ck_assert(enc.ptr[0] & APTIX_STORED_RAW);
	assert_truncations_corrupt(&enc);
	/* compressed */
	aptix_stored_encode(&enc, APTIX_OBJ_BLOB, d, 1000);
	ck_assert(!(enc.ptr[0] & APTIX_STORED_RAW));
	assert_truncations_corrupt(&enc);
	aptix_stored_encode(&enc, APTIX_OBJ_SESSION, d, 5000);
	ck_assert(!(enc.ptr[0] & APTIX_STORED_RAW));
	assert_truncations_corrupt(&enc);
	aptix_buf_release(&enc);
	free(d);
}
END_TEST

START_TEST(test_flipped_byte)
{
	static const unsigned char masks[] = { 0xff, 0x01, 0x80, 0x40, 0x10 };
	aptix_buf enc = APTIX_BUF_INIT, dec = APTIX_BUF_INIT;
	char *d = text_data(1000);
	aptix_otype t;
	size_t i, m, undetected = 0;

	aptix_stored_encode(&enc, APTIX_OBJ_BLOB, d, 1000);
	ck_assert(!(enc.ptr[0] & APTIX_STORED_RAW));
	for (i = 0; i < enc.len; i++) {
		for (m = 0; m < sizeof(masks); m++) {
			char *copy = malloc(enc.len);
			int r;

			ck_assert_ptr_nonnull(copy);
			memcpy(copy, enc.ptr, enc.len);
			copy[i] = (char)(copy[i] ^ masks[m]);
			r = aptix_stored_decode(&dec, &t, copy, enc.len);
			/*
			 * Detected, or harmless: the unused padding bits of
			 * the last deflate byte carry nothing, so flipping
			 * them still inflates to exactly the same content.
			 */
			if (r == 0) {
				ck_assert_msg(i >= enc.len - 5, "byte %zu of "
					      "%zu ^ 0x%02x not detected", i,
					      enc.len, masks[m]);
				ck_assert_int_eq(t, APTIX_OBJ_BLOB);
				ck_assert_uint_eq(dec.len, 1000);
				ck_assert_int_eq(memcmp(dec.ptr, d, 1000), 0);
				undetected++;
			} else {
				ck_assert_msg(r == APTIX_ECORRUPT, "byte %zu "
					      "of %zu ^ 0x%02x: got %d (%s)",
					      i, enc.len, masks[m], r,
					      aptix_error_last()->message);
				ck_assert_uint_eq(dec.len, 0);
			}
			free(copy);
		}
	}
	/* the adler32 trailer catches every change to the data itself */
	ck_assert_uint_le(undetected, 3);
	aptix_buf_release(&enc);
	aptix_buf_release(&dec);
	free(d);
}
END_TEST

START_TEST(test_bad_type_byte)
{
	/* 4 and 5 are tool calls and results (issue 24) */
	static const unsigned char types[] = { 0x00, 0x06, 0x07, 0x7f, 0x80,
					       0x86, 0xff };
	unsigned char v[8];
	aptix_buf dec = APTIX_BUF_INIT;
	aptix_otype t;
	size_t size, hlen, i;

	for (i = 0; i < sizeof(types); i++) {
		v[0] = types[i];
		v[1] = 2;
		v[2] = 'o';
		v[3] = 'k';
		ck_assert_int_eq(aptix_stored_header(&t, &size, &hlen, v, 4),
				 APTIX_ECORRUPT);
		ck_assert_int_eq(aptix_stored_decode(&dec, &t, v, 4),
				 APTIX_ECORRUPT);
		ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
					     "corrupt"));
	}
	/* the three valid types, raw */
	for (i = 1; i <= 3; i++) {
		v[0] = (unsigned char)(0x80 | i);
		ck_assert_int_eq(aptix_stored_decode(&dec, &t, v, 4), 0);
		ck_assert_int_eq(t, (int)i);
		ck_assert_str_eq(dec.ptr, "ok");
	}
	aptix_buf_release(&dec);
}
END_TEST

START_TEST(test_overlong_varint)
{
	unsigned char v[32];
	aptix_buf dec = APTIX_BUF_INIT;
	aptix_otype t;
	size_t size, hlen;
	int i;

	/* ten continuation bytes and more: never terminated in time */
	v[0] = 0x81;
	for (i = 1; i < 32; i++)
		v[i] = 0x80;
	ck_assert_int_eq(aptix_stored_header(&t, &size, &hlen, v, sizeof(v)),
			 APTIX_ECORRUPT);
	ck_assert_int_eq(aptix_stored_decode(&dec, &t, v, sizeof(v)),
			 APTIX_ECORRUPT);
	/* eleven bytes of varint, the last one terminating */
	v[11] = 0x00;
	ck_assert_int_eq(aptix_stored_header(&t, &size, &hlen, v, 12),
			 APTIX_ECORRUPT);
	/* ten bytes, value 0: over-long but in range */
	for (i = 1; i < 10; i++)
		v[i] = 0x80;
	v[10] = 0x00;
	ck_assert_int_eq(aptix_stored_header(&t, &size, &hlen, v, 11), 0);
	ck_assert_uint_eq(size, 0);
	ck_assert_uint_eq(hlen, 11);
	/* sizes beyond SIZE_MAX / 2 */
	for (i = 1; i < 10; i++)
		v[i] = 0xff;
	v[10] = 0x01;
	ck_assert_int_eq(aptix_stored_header(&t, &size, &hlen, v, 11),
			 APTIX_ECORRUPT);
	ck_assert_int_eq(aptix_stored_decode(&dec, &t, v, 11),
			 APTIX_ECORRUPT);
	/* the varint runs to the end of the value */
	ck_assert_int_eq(aptix_stored_header(&t, &size, &hlen, v, 5),
			 APTIX_ECORRUPT);
	aptix_buf_release(&dec);
}
END_TEST

START_TEST(test_huge_declared_size)
{
	aptix_buf enc = APTIX_BUF_INIT, dec = APTIX_BUF_INIT;
	unsigned char v[64];
	char *d = text_data(1000);
	aptix_otype t;
	size_t hlen, i;

	/*
	 * A compressed value claiming a size its few bytes of zlib could
	 * never inflate to (2^40 and 2^62 bytes): damaged, not "out of
	 * memory", and no huge allocation.
	 */
	aptix_stored_encode(&enc, APTIX_OBJ_BLOB, d, 1000);
	hlen = 3;
	ck_assert_uint_ge(enc.len, hlen + 32);
	v[0] = APTIX_OBJ_BLOB;
	for (i = 1; i < 6; i++)
		v[i] = 0x80;
	v[6] = 0x20;			/* 2^40 */
	memcpy(v + 7, enc.ptr + hlen, 32);
	ck_assert_int_eq(aptix_stored_decode(&dec, &t, v, 39),
			 APTIX_ECORRUPT);
	for (i = 1; i < 9; i++)
		v[i] = 0x80;
	v[9] = 0x40;			/* 2^62 */
	memcpy(v + 10, enc.ptr + hlen, 32);
	ck_assert_int_eq(aptix_stored_decode(&dec, &t, v, 42),
			 APTIX_ECORRUPT);
	/* 64 MiB declared, the real zlib stream of 1000 bytes follows */
	v[1] = 0x80;
	v[2] = 0x80;
	v[3] = 0x80;
	v[4] = 0x20;
	memcpy(v + 5, enc.ptr + hlen, 32);
	ck_assert_int_eq(aptix_stored_decode(&dec, &t, v, 37),
			 APTIX_ECORRUPT);
	ck_assert_uint_eq(dec.len, 0);
	aptix_buf_release(&enc);
	aptix_buf_release(&dec);
	free(d);
}
END_TEST

START_TEST(test_size_mismatch)
{
	aptix_buf enc = APTIX_BUF_INIT, dec = APTIX_BUF_INIT;
	char *d = text_data(1000), *copy;
	aptix_otype t;

	/* compressed: one more and one fewer than the content inflates to */
	aptix_stored_encode(&enc, APTIX_OBJ_BLOB, d, 1000);
	copy = malloc(enc.len);
	ck_assert_ptr_nonnull(copy);
	memcpy(copy, enc.ptr, enc.len);
	ck_assert_uint_eq((unsigned char)copy[1], 0xe8);	/* 1000 */
	copy[1] = (char)0xe9;
	ck_assert_int_eq(aptix_stored_decode(&dec, &t, copy, enc.len),
			 APTIX_ECORRUPT);
	copy[1] = (char)0xe7;
	ck_assert_int_eq(aptix_stored_decode(&dec, &t, copy, enc.len),
			 APTIX_ECORRUPT);
	free(copy);

	/* raw: trailing garbage */
	aptix_stored_encode(&enc, APTIX_OBJ_BLOB, "abc", 3);
	aptix_buf_putc(&enc, 'd');
	ck_assert_int_eq(aptix_stored_decode(&dec, &t, enc.ptr, enc.len),
			 APTIX_ECORRUPT);
	aptix_buf_release(&enc);
	aptix_buf_release(&dec);
	free(d);
}
END_TEST

/*
 * Find content whose zlib stream (level 1) is exactly len - want bytes:
 * random bytes then a run of zeros, the run grown one byte at a time
 * (each zero costs well under a byte, so len - clen rises by about 1).
 */
static unsigned char *content_saving(size_t want, size_t *len_out)
{
	static unsigned char buf[4096];
	size_t k, z;

	for (k = 200; k < 2000; k += 37) {
		unit_fill_random(buf, k, k);
		for (z = 0; k + z < sizeof(buf); z++) {
			uLongf clen = compressBound((uLong)(k + z));
			unsigned char *c = malloc(clen);
			int zr;

			ck_assert_ptr_nonnull(c);
			buf[k + z] = 0;
			zr = compress2(c, &clen, buf, (uLong)(k + z), 1);
			free(c);
			ck_assert_int_eq(zr, Z_OK);
			if (clen + want == k + z) {
				*len_out = k + z;
				return buf;
			}
			if (clen + want < k + z)
				break;
		}
	}
	ck_abort_msg("no content saving exactly %zu bytes", want);
	return NULL;
}

START_TEST(test_compression_threshold)
{
	aptix_buf enc = APTIX_BUF_INIT;
	unsigned char *d;
	size_t len;

	/* zlib saving exactly 8 bytes: not worth it, stored raw */
	d = content_saving(8, &len);
	ck_assert_int_eq(aptix_stored_encode(&enc, APTIX_OBJ_BLOB, d, len), 0);
	ck_assert_msg(enc.ptr[0] & APTIX_STORED_RAW, "%zu bytes saving 8 "
		      "were compressed", len);
	round_trip(APTIX_OBJ_BLOB, d, len);
	/* saving 9: compressed */
	d = content_saving(9, &len);
	ck_assert_int_eq(aptix_stored_encode(&enc, APTIX_OBJ_BLOB, d, len), 0);
	ck_assert_msg(!(enc.ptr[0] & APTIX_STORED_RAW), "%zu bytes saving 9 "
		      "were stored raw", len);
	round_trip(APTIX_OBJ_BLOB, d, len);
	aptix_buf_release(&enc);
}
END_TEST

/* --- format 2: packed turns, spliced blobs (objects-format.md) -------- */

static const char doc_turn[] =
	"{\"conversation\":\"c1\",\"created_at\":1700000000000,"
	"\"instruction\":\"c7ec1ac1b0a8a4c6ad3445e65debde822c218717414567b2"
	"05ba78919252ec8c\",\"seq\":1,\"status\":\"pending\",\"status_at\":"
	"1700000000000,\"usage\":{\"cached_tokens\":0,\"input_tokens\":0,"
	"\"model_requests\":0,\"output_tokens\":0,\"reasoning_tokens\":0,"
	"\"total_tokens\":0},\"v\":1}\n";

/* The stored value of doc_turn, as objects-format.md gives it. */
static const char doc_turn_stored[] = DOC_TURN_STORED;

static const char doc_base[] =
	"The parser reads a token, then \"peeks\" at the next one.\n"
	"Caf\xc3\xa9 is fine.\n";
static const char doc_spliced_content[] = DOC_SPLICED_CONTENT;
static const char doc_spliced_stored[] = DOC_SPLICED_STORED;

static char *hex_of(const aptix_buf *b)
{
	char *h = malloc(b->len * 2 + 1);
	size_t i;

	for (i = 0; i < b->len; i++)
		snprintf(h + 2 * i, 3, "%02x", (unsigned char)b->ptr[i]);
	h[b->len * 2] = '\0';
	return h;
}

static void from_hex(aptix_buf *out, const char *h)
{
	unsigned v;

	aptix_buf_clear(out);
	for (; h[0] && h[1]; h += 2) {
		sscanf(h, "%2x", &v);
		aptix_buf_putc(out, (char)v);
	}
}

START_TEST(test_packed_turn_vector)
{
	aptix_buf enc = APTIX_BUF_INIT, dec = APTIX_BUF_INIT;
	aptix_otype type;
	char *h;

	ck_assert_int_eq(aptix_stored_encode(&enc, APTIX_OBJ_TURN, doc_turn,
					     strlen(doc_turn)), 0);
	h = hex_of(&enc);
	ck_assert_msg(!strcmp(h, doc_turn_stored), "stored turn is %s", h);
	free(h);
	from_hex(&enc, doc_turn_stored);
	ck_assert_int_eq(aptix_stored_decode(&dec, &type, enc.ptr, enc.len),
			 0);
	ck_assert_int_eq(type, APTIX_OBJ_TURN);
	ck_assert_int_eq(dec.len, strlen(doc_turn));
	ck_assert(!memcmp(dec.ptr, doc_turn, dec.len));
	/* every truncation is refused, never a crash */
	while (--enc.len > 0)
		ck_assert_int_lt(aptix_stored_decode(&dec, &type, enc.ptr,
						     enc.len), 0);
	aptix_buf_release(&enc);
	aptix_buf_release(&dec);
}
END_TEST

START_TEST(test_packed_keeps_odd_json)
{
	/* not canonical or not packable: stored plain, still exact */
	static const char *const odd[] = {
		"{\"a\":01}\n", "{\"a\":1.5}\n", "{\"a\":\"x\"} \n",
		"{\"k\":\"C7EC1AC1B0A8A4C6AD3445E65DEBDE822C218717414567B2"
		"05BA78919252EC8C\"}\n", "{\"unknown_key\":[[],{},-7,null]}\n",
		"{}\n", "[]\n", "{\"a\":-0}\n"
	};
	size_t i;

	aptix_buf enc = APTIX_BUF_INIT, dec = APTIX_BUF_INIT;
	aptix_otype type;
	size_t size, hlen;

	for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		ck_assert_int_eq(aptix_stored_encode(&enc, APTIX_OBJ_TURN,
						     odd[i], strlen(odd[i])),
				 0);
		ck_assert_int_eq(aptix_stored_header(&type, &size, &hlen,
						     enc.ptr, enc.len), 0);
		ck_assert_int_eq(type, APTIX_OBJ_TURN);
		ck_assert_uint_eq(size, strlen(odd[i]));
		ck_assert_int_eq(aptix_stored_decode(&dec, &type, enc.ptr,
						     enc.len), 0);
		ck_assert_str_eq(dec.ptr, odd[i]);
	}
	aptix_buf_release(&enc);
	aptix_buf_release(&dec);
}
END_TEST

static int base_fn(aptix_buf *out, const aptix_oid *id, aptix_otype type,
		   int splice, void *payload)
{
	(void)payload;
	(void)type;
	(void)splice;
	if (aptix_oid_is_zero(id))
		return APTIX_ENOTFOUND;
	return aptix_buf_set(out, doc_base, strlen(doc_base));
}

START_TEST(test_spliced_blob_vector)
{
	aptix_buf enc = APTIX_BUF_INIT, dec = APTIX_BUF_INIT;
	aptix_stored_splice sp;
	aptix_otype type;
	const char *at;
	char *h;

	ck_assert_int_eq(aptix_object_hash(&sp.base, APTIX_OBJ_BLOB, doc_base,
					   strlen(doc_base)), 0);
	at = strstr(doc_spliced_content, "The parser");
	ck_assert_ptr_nonnull(at);
	sp.at = (size_t)(at - doc_spliced_content);
	sp.len = strlen(doc_spliced_content) - sp.at - 2;
	sp.kind = 1;
	ck_assert_int_eq(aptix_stored_encode_spliced(&enc,
		doc_spliced_content, strlen(doc_spliced_content), &sp, 1,
		NULL, base_fn, NULL), 0);
	h = hex_of(&enc);
	ck_assert_msg(!strcmp(h, doc_spliced_stored), "stored blob is %s", h);
	free(h);
	ck_assert(aptix_stored_is_spliced(enc.ptr, enc.len));
	ck_assert_int_eq(aptix_stored_decode_with(&dec, &type, enc.ptr,
						  enc.len, base_fn, NULL), 0);
	ck_assert_int_eq(type, APTIX_OBJ_BLOB);
	ck_assert_str_eq(dec.ptr, doc_spliced_content);
	/* no base reader, or a missing base: an error, not a crash */
	ck_assert_int_eq(aptix_stored_decode(&dec, &type, enc.ptr, enc.len),
			 APTIX_ECORRUPT);
	memset(enc.ptr + 3, 0, APTIX_OID_RAWSZ);
	ck_assert_int_eq(aptix_stored_decode_with(&dec, &type, enc.ptr,
						  enc.len, base_fn, NULL),
			 APTIX_ECORRUPT);
	/* a splice that does not give the bytes back: stored plain */
	sp.kind = 0;
	ck_assert_int_eq(aptix_stored_encode_spliced(&enc,
		doc_spliced_content, strlen(doc_spliced_content), &sp, 1,
		NULL, base_fn, NULL), 0);
	ck_assert(!aptix_stored_is_spliced(enc.ptr, enc.len));
	aptix_buf_release(&enc);
	aptix_buf_release(&dec);
}
END_TEST

/* Bases for test_spliced_several: the text whose id is asked for. */
static const char *const several_texts[] = {
	"first base: the parser reads a token, then peeks at the next one "
	"and decides.\n",
	"second base: the lexer keeps its buffer and its offset, and "
	"refills both.\n",
};

static int several_fn(aptix_buf *out, const aptix_oid *id, aptix_otype type,
		      int splice, void *payload)
{
	aptix_oid t;
	size_t i;

	(void)type;
	(void)splice;
	(void)payload;
	for (i = 0; i < 2; i++) {
		const char *text = several_texts[i];

		aptix_object_hash(&t, APTIX_OBJ_BLOB, text, strlen(text));
		if (!aptix_oid_cmp(&t, id))
			return aptix_buf_set(out, text, strlen(text));
	}
	return APTIX_ENOTFOUND;
}

/*
 * Several splices: each goes back in at its own byte of the body
 * (ascending), so a request carrying an instruction and files is kept
 * without the texts of all of them. (A reader that took each position
 * as counted from the previous splice put every splice after the first
 * in the wrong place, and the writer's check stored such values
 * plainly.)
 */
START_TEST(test_spliced_several)
{
	aptix_buf data = APTIX_BUF_INIT, enc = APTIX_BUF_INIT,
		dec = APTIX_BUF_INIT, esc = APTIX_BUF_INIT;
	aptix_stored_splice sp[3];
	aptix_oid bases[APTIX_STORED_MAX_SPLICES];
	aptix_otype type;
	size_t i;

	/* {"a":"<t0>","x":"<t1>","x":"<t0>"}: three splices */
	aptix_buf_puts(&data, "{\"a\":\"");
	for (i = 0; i < 3; i++) {
		const char *t = several_texts[i % 2];

		aptix__json_escape(&esc, t, strlen(t), 0);
		sp[i].at = data.len;
		sp[i].len = esc.len;
		sp[i].kind = 0;
		ck_assert_int_eq(aptix_object_hash(&sp[i].base, APTIX_OBJ_BLOB,
						   t, strlen(t)), 0);
		aptix_buf_put(&data, esc.ptr, esc.len);
		aptix_buf_puts(&data, i < 2 ? "\",\"x\":\"" : "\"}\n");
	}
	/* given out of order: the writer sorts them */
	{
		aptix_stored_splice t = sp[0];

		sp[0] = sp[2];
		sp[2] = t;
	}
	ck_assert_int_eq(aptix_stored_encode_spliced(&enc, data.ptr, data.len,
						     sp, 3, NULL,
						     several_fn, NULL), 0);
	ck_assert(aptix_stored_is_spliced(enc.ptr, enc.len));
	ck_assert_int_eq(aptix_stored_splice_bases(bases,
		APTIX_STORED_MAX_SPLICES, enc.ptr, enc.len), 3);
	/* kept without the texts: smaller than any one of them twice */
	ck_assert_uint_lt(enc.len, strlen(several_texts[0]) +
			  strlen(several_texts[1]));
	ck_assert_int_eq(aptix_stored_decode_with(&dec, &type, enc.ptr,
						  enc.len, several_fn, NULL),
			 0);
	ck_assert_uint_eq(dec.len, data.len);
	ck_assert(!memcmp(dec.ptr, data.ptr, data.len));
	aptix_buf_release(&data);
	aptix_buf_release(&enc);
	aptix_buf_release(&dec);
	aptix_buf_release(&esc);
}
END_TEST

/* --- format 3: based values (objects-format.md, "Based values") ------- */

static int unhex(aptix_buf *out, const char *hex)
{
	size_t i, n = strlen(hex) / 2;

	aptix_buf_clear(out);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)(aptix_hex_value(hex[2 * i]) << 4 |
				  aptix_hex_value(hex[2 * i + 1]));

		aptix_buf_put(out, &c, 1);
	}
	return 0;
}

static const char *other_text;	/* what other_fn gives for any base */

static int other_fn(aptix_buf *out, const aptix_oid *id, aptix_otype type,
		    int splice, void *payload)
{
	(void)id;
	(void)type;
	(void)splice;
	(void)payload;
	return aptix_buf_set(out, other_text, strlen(other_text));
}

START_TEST(test_based_blob_vector)
{
	aptix_buf enc = APTIX_BUF_INIT, dec = APTIX_BUF_INIT,
		val = APTIX_BUF_INIT;
	aptix_stored_base base;
	aptix_oid on;
	aptix_otype type;

	/* the documented value reads back, given its base */
	unhex(&val, DOC_BASED_STORED);
	ck_assert(aptix_stored_needs_bases(val.ptr, val.len));
	ck_assert_int_eq(aptix_stored_based_on(&on, val.ptr, val.len), 1);
	ck_assert_str_eq(aptix_oid_hex(&on), "6d17f0c44d476b718967863e84abf87"
			 "94867e3267ccb1e2d69aa88dfed1ae5de");
	ck_assert_int_eq(aptix_stored_decode_with(&dec, &type, val.ptr,
						  val.len, base_fn, NULL), 0);
	ck_assert_int_eq(type, APTIX_OBJ_BLOB);
	ck_assert_str_eq(dec.ptr, DOC_BASED_CONTENT);
	/* the writer makes the same kind of value, which reads back */
	ck_assert_int_eq(aptix_object_hash(&base.id, APTIX_OBJ_BLOB, doc_base,
					   strlen(doc_base)), 0);
	base.type = APTIX_OBJ_BLOB;
	base.content = doc_base;
	base.len = strlen(doc_base);
	ck_assert_int_eq(aptix_stored_encode_against(&enc, APTIX_OBJ_BLOB,
		DOC_BASED_CONTENT, strlen(DOC_BASED_CONTENT), &base), 0);
	ck_assert(enc.ptr[0] & APTIX_STORED_BASED);
	ck_assert(!(enc.ptr[0] & APTIX_STORED_RAW));
	ck_assert_int_eq(aptix_stored_decode_with(&dec, &type, enc.ptr,
						  enc.len, base_fn, NULL), 0);
	ck_assert_str_eq(dec.ptr, DOC_BASED_CONTENT);
	/* without a reader of its base, or with another base text: corrupt */
	ck_assert_int_eq(aptix_stored_decode(&dec, &type, val.ptr, val.len),
			 APTIX_ECORRUPT);
	ck_assert_uint_eq(dec.len, 0);
	other_text = "The parser reads a token.\n";
	ck_assert_int_eq(aptix_stored_decode_with(&dec, &type, val.ptr,
						  val.len, other_fn, NULL),
			 APTIX_ECORRUPT);
	/* a missing base is named */
	memset(val.ptr + 2, 0, APTIX_OID_RAWSZ);
	ck_assert_int_eq(aptix_stored_decode_with(&dec, &type, val.ptr,
						  val.len, base_fn, NULL),
			 APTIX_ECORRUPT);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message, "00000000"));
	/* raw and based at once, or cut short: corrupt */
	unhex(&val, DOC_BASED_STORED);
	val.ptr[0] |= (char)APTIX_STORED_RAW;
	ck_assert_int_eq(aptix_stored_decode_with(&dec, &type, val.ptr,
						  val.len, base_fn, NULL),
			 APTIX_ECORRUPT);
	unhex(&val, DOC_BASED_STORED);
	ck_assert_int_eq(aptix_stored_decode_with(&dec, &type, val.ptr, 20,
						  base_fn, NULL),
			 APTIX_ECORRUPT);
	/* a base that saves less than a quarter is not used */
	base.content = "0123456789abcdefghijklmnopqrstuvwxyz";
	base.len = strlen(base.content);
	ck_assert_int_eq(aptix_stored_encode_against(&enc, APTIX_OBJ_BLOB,
		DOC_BASED_CONTENT, strlen(DOC_BASED_CONTENT), &base), 0);
	ck_assert(!(enc.ptr[0] & APTIX_STORED_BASED));
	aptix_buf_release(&enc);
	aptix_buf_release(&dec);
	aptix_buf_release(&val);
}
END_TEST

START_TEST(test_based_turn)
{
	aptix_buf enc = APTIX_BUF_INIT, dec = APTIX_BUF_INIT,
		next = APTIX_BUF_INIT;
	aptix_stored_base base;
	aptix_otype type;
	char *at;

	/* the next turn of the same conversation: mostly the same bytes */
	aptix_buf_set(&next, doc_turn, strlen(doc_turn));
	at = strstr(next.ptr, "\"seq\":1");
	ck_assert_ptr_nonnull(at);
	at[6] = '2';
	ck_assert_int_eq(aptix_object_hash(&base.id, APTIX_OBJ_TURN, doc_turn,
					   strlen(doc_turn)), 0);
	base.type = APTIX_OBJ_TURN;
	base.content = doc_turn;
	base.len = strlen(doc_turn);
	ck_assert_int_eq(aptix_stored_encode_against(&enc, APTIX_OBJ_TURN,
		next.ptr, next.len, &base), 0);
	ck_assert(enc.ptr[0] & APTIX_STORED_BASED);
	ck_assert(enc.ptr[0] & APTIX_STORED_PACKED);
	other_text = doc_turn;
	ck_assert_int_eq(aptix_stored_decode_with(&dec, &type, enc.ptr,
						  enc.len, other_fn, NULL), 0);
	ck_assert_int_eq(type, APTIX_OBJ_TURN);
	ck_assert_str_eq(dec.ptr, next.ptr);
	/* a base of another type is not used */
	base.type = APTIX_OBJ_SESSION;
	ck_assert_int_eq(aptix_stored_encode_against(&enc, APTIX_OBJ_TURN,
		next.ptr, next.len, &base), 0);
	ck_assert(!(enc.ptr[0] & APTIX_STORED_BASED));
	aptix_buf_release(&enc);
	aptix_buf_release(&dec);
	aptix_buf_release(&next);
}
END_TEST

/* A reader that follows a value's base to the value itself: a loop. */
static aptix_buf loop_val;

static int loop_fn(aptix_buf *out, const aptix_oid *id, aptix_otype type,
		   int splice, void *payload)
{
	aptix_otype t;

	(void)id;
	(void)type;
	(void)splice;
	return aptix_stored_decode_with(out, &t, loop_val.ptr, loop_val.len,
					loop_fn, payload);
}

START_TEST(test_based_loop)
{
	aptix_buf dec = APTIX_BUF_INIT;
	aptix_otype type;

	aptix_buf_init(&loop_val, 0);
	unhex(&loop_val, DOC_BASED_STORED);
	ck_assert_int_eq(aptix_stored_decode_with(&dec, &type, loop_val.ptr,
						  loop_val.len, loop_fn, NULL),
			 APTIX_ECORRUPT);
	aptix_buf_release(&loop_val);
	aptix_buf_release(&dec);
}
END_TEST

Suite *zstream_suite(void)
{
	Suite *s = suite_create("zstream");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_round_trip_sizes);
	tcase_add_test(tc, test_based_blob_vector);
	tcase_add_test(tc, test_based_turn);
	tcase_add_test(tc, test_based_loop);
	tcase_add_test(tc, test_round_trip_binary);
	tcase_add_test(tc, test_incompressible_raw);
	tcase_add_test(tc, test_header_layout);
	tcase_add_test(tc, test_truncation);
	tcase_add_test(tc, test_flipped_byte);
	tcase_add_test(tc, test_bad_type_byte);
	tcase_add_test(tc, test_overlong_varint);
	tcase_add_test(tc, test_huge_declared_size);
	tcase_add_test(tc, test_size_mismatch);
	tcase_add_test(tc, test_compression_threshold);
	tcase_add_test(tc, test_packed_turn_vector);
	tcase_add_test(tc, test_packed_keeps_odd_json);
	tcase_add_test(tc, test_spliced_blob_vector);
	tcase_add_test(tc, test_spliced_several);
	suite_add_tcase(s, tc);
	return s;
}
