/*
 * t/fuzz/fuzz_object.c - the object parsers: canonical turns and
 * sessions (aptix_turn_parse, aptix_session_parse), the loose JSON of
 * write-turn and commit-session, the stored form (zstream.h), and
 * aptix_object_validate / aptix_object_foreach_ref.
 *
 * The first byte picks what the rest is fed to; every input also goes
 * through validation as each type. Invariants: what parses serializes
 * into bytes that parse again and serialize the same (canonical form is
 * a fixed point), and that validate accepts; encode then decode gives
 * the bytes back.
 */
#include <string.h>
#include "fuzz.h"
#include "util/common.h"
#include "object/zstream.h"
#include "aptix/object.h"

static int count_ref(const aptix_oid *id, aptix_otype type,
		     const char *field, void *payload)
{
	(void)id;
	(void)type;
	(void)field;
	(*(size_t *)payload)++;
	return 0;
}

static void check_turn_fixed_point(const aptix_turn *t)
{
	aptix_buf a = APTIX_BUF_INIT, b = APTIX_BUF_INIT;
	aptix_turn t2;

	if (aptix_turn_serialize(&a, t) == 0) {
		FUZZ_CHECK(aptix_turn_parse(&t2, a.ptr, a.len) == 0);
		FUZZ_CHECK(aptix_turn_serialize(&b, &t2) == 0);
		FUZZ_CHECK(a.len == b.len && !memcmp(a.ptr, b.ptr, a.len));
		FUZZ_CHECK(aptix_object_validate(APTIX_OBJ_TURN, a.ptr,
						 a.len) == 0);
		aptix_turn_release(&t2);
	}
	aptix_buf_release(&a);
	aptix_buf_release(&b);
}

static void check_session_fixed_point(const aptix_session *s)
{
	aptix_buf a = APTIX_BUF_INIT, b = APTIX_BUF_INIT;
	aptix_session s2;

	if (aptix_session_serialize(&a, s) == 0) {
		FUZZ_CHECK(aptix_session_parse(&s2, a.ptr, a.len) == 0);
		FUZZ_CHECK(aptix_session_serialize(&b, &s2) == 0);
		FUZZ_CHECK(a.len == b.len && !memcmp(a.ptr, b.ptr, a.len));
		FUZZ_CHECK(aptix_object_validate(APTIX_OBJ_SESSION, a.ptr,
						 a.len) == 0);
		aptix_session_release(&s2);
	}
	aptix_buf_release(&a);
	aptix_buf_release(&b);
}

static void fuzz_turn(const char *p, size_t n)
{
	aptix_turn t;

	if (aptix_turn_parse(&t, p, n) == 0) {
		check_turn_fixed_point(&t);
		aptix_turn_release(&t);
	}
}

static void fuzz_session(const char *p, size_t n)
{
	aptix_session s;

	if (aptix_session_parse(&s, p, n) == 0) {
		check_session_fixed_point(&s);
		aptix_session_release(&s);
	}
}

static void fuzz_loose(const char *p, size_t n, int session)
{
	if (session) {
		aptix_session s;

		if (aptix_session_from_json(&s, p, n) == 0) {
			check_session_fixed_point(&s);
			aptix_session_release(&s);
		}
	} else {
		aptix_turn t;

		if (aptix_turn_from_json(&t, p, n) == 0) {
			check_turn_fixed_point(&t);
			aptix_turn_release(&t);
		}
	}
}

static void fuzz_stored(const char *p, size_t n)
{
	aptix_buf out = APTIX_BUF_INIT, enc = APTIX_BUF_INIT,
		  dec = APTIX_BUF_INIT;
	aptix_otype type, t2;
	size_t size, hlen;

	if (aptix_stored_header(&type, &size, &hlen, p, n) == 0)
		FUZZ_CHECK(hlen <= n);
	if (aptix_stored_decode(&out, &type, p, n) == 0) {
		FUZZ_CHECK(aptix_stored_header(&t2, &size, &hlen, p, n) == 0);
		FUZZ_CHECK(t2 == type && size == out.len);
		/* what decodes encodes and decodes back to the same bytes */
		FUZZ_CHECK(aptix_stored_encode(&enc, type, out.ptr,
					       out.len) == 0);
		FUZZ_CHECK(aptix_stored_decode(&dec, &t2, enc.ptr,
					       enc.len) == 0);
		FUZZ_CHECK(t2 == type && dec.len == out.len &&
			   !memcmp(dec.ptr, out.ptr, out.len));
	}
	aptix_buf_release(&out);
	aptix_buf_release(&enc);
	aptix_buf_release(&dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 1;
	size_t n = size ? size - 1 : 0, refs = 0;
	aptix_oid id;
	int t;

	if (!size)
		return 0;
	switch (data[0] % 6) {
	case 0: fuzz_turn(p, n); break;
	case 1: fuzz_session(p, n); break;
	case 2: fuzz_loose(p, n, 0); break;
	case 3: fuzz_loose(p, n, 1); break;
	case 4: fuzz_stored(p, n); break;
	case 5:
		/* an encode/decode round trip of arbitrary content */
		{
			aptix_buf enc = APTIX_BUF_INIT, dec = APTIX_BUF_INIT;
			aptix_otype t2;

			FUZZ_CHECK(aptix_stored_encode(&enc, APTIX_OBJ_BLOB, p,
						       n) == 0);
			FUZZ_CHECK(aptix_stored_decode(&dec, &t2, enc.ptr,
						       enc.len) == 0);
			FUZZ_CHECK(t2 == APTIX_OBJ_BLOB && dec.len == n &&
				   (!n || !memcmp(dec.ptr, p, n)));
			aptix_buf_release(&enc);
			aptix_buf_release(&dec);
		}
		break;
	}
	for (t = APTIX_OBJ_BLOB; t <= APTIX_OBJ_SESSION; t++) {
		if (aptix_object_validate((aptix_otype)t, p, n) == 0)
			aptix_object_foreach_ref((aptix_otype)t, p, n,
						 count_ref, &refs);
		aptix_object_hash(&id, (aptix_otype)t, p, n);
	}
	aptix_error_clear();
	return 0;
}
