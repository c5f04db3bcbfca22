/*
 * check_odb.c - unit tests for the object database front end (src/odb/odb.c)
 * over the in-memory backend (src/odb/odb-mem.c) and over a store-backed
 * repository (src/store/odb-store.c).
 *
 * The "mem" and "store" test cases run the same tests; their checked
 * fixtures (run in the forked child, so LMDB never crosses a fork) set
 * up odb, the database under test, and raw, a backend of the same kind
 * whose slots the tests call directly to plant bytes under a wrong id.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aptix.h"
#include "aptix/sys/odb_backend.h"
#include "repo/repo.h"
#include "txn/txn.h"
#include "store/odb-store.h"
#include "object/zstream.h"
#include "unit.h"

#define HELLO_BLOB \
	"2cf8d83d9ee29543b34a87727421fdecb7e3f3a183d337639025de576db9ebb4"
#define MIN_TURN "{\"conversation\":\"c\",\"created_at\":5," \
	"\"instruction\":\"%s\",\"seq\":1,\"status\":\"pending\"," \
	"\"status_at\":5,\"usage\":{\"cached_tokens\":0,\"input_tokens\":0," \
	"\"model_requests\":0,\"output_tokens\":0,\"reasoning_tokens\":0," \
	"\"total_tokens\":0},\"v\":1}\n"

static aptix_odb *odb;		/* under test */
static aptix_odb_backend *raw;	/* its (only) writable backend's kind */
static aptix_odb_backend *raw_owned;	/* raw, when we must free it */
static aptix_repo *repo;
static char *tmpdir;

static void setup_mem(void)
{
	aptix_error_clear();
	ck_assert_int_eq(aptix_odb_new(&odb), 0);
	ck_assert_int_eq(aptix_odb_backend_mem(&raw), 0);
	ck_assert_int_eq(aptix_odb_add_backend(odb, raw, 1, 0), 0);
	raw_owned = NULL;
}

static void teardown_mem(void)
{
	aptix_odb_free(odb);
	odb = NULL;
	raw = NULL;
	aptix_error_clear();
}

static void setup_store(void)
{
	aptix_error_clear();
	tmpdir = unit_mkdtemp();
	ck_assert_int_eq(aptix_repo_init(&repo, tmpdir, NULL), 0);
	odb = aptix_repo_odb(repo);
	/* a second backend over the same store, for raw writes */
	ck_assert_int_eq(aptix_odb_backend_store(&raw, repo->store), 0);
	raw_owned = raw;
}

static void teardown_store(void)
{
	if (raw_owned)
		raw_owned->free(raw_owned);
	raw_owned = raw = NULL;
	aptix_repo_free(repo);
	repo = NULL;
	odb = NULL;
	unit_rmtree(tmpdir);
	free(tmpdir);
	tmpdir = NULL;
	aptix_error_clear();
}

static aptix_oid write_blob(aptix_odb *db, const void *data, size_t len)
{
	aptix_oid id;

	ck_assert_int_eq(aptix_odb_write(&id, db, APTIX_OBJ_BLOB, data, len),
			 0);
	return id;
}

static aptix_oid write_str(aptix_odb *db, const char *s)
{
	return write_blob(db, s, strlen(s));
}

static int count_cb(const aptix_oid *id, void *payload)
{
	(void)id;
	(*(size_t *)payload)++;
	return 0;
}

static size_t count_objects(aptix_odb *db)
{
	size_t n = 0;

	ck_assert_int_eq(aptix_odb_foreach(db, count_cb, &n), 0);
	return n;
}

static void assert_content(aptix_odb *db, const aptix_oid *id,
			   aptix_otype type, const void *data, size_t len)
{
	aptix_buf out = APTIX_BUF_INIT;
	aptix_otype t = APTIX_OBJ_BAD;
	size_t size = 0;

	ck_assert_int_eq(aptix_odb_read(&out, &t, db, id,
					APTIX_ODB_READ_VERIFY), 0);
	ck_assert_int_eq(t, type);
	ck_assert_uint_eq(out.len, len);
	if (len)
		ck_assert_int_eq(memcmp(out.ptr, data, len), 0);
	ck_assert_int_eq(out.ptr[len], '\0');
	t = APTIX_OBJ_BAD;
	ck_assert_int_eq(aptix_odb_read_header(&size, &t, db, id), 0);
	ck_assert_int_eq(t, type);
	ck_assert_uint_eq(size, len);
	ck_assert_int_eq(aptix_odb_exists(db, id), 1);
	aptix_buf_release(&out);
}

/* --- Tests run on both backends ---------------------------------------- */

START_TEST(test_write_read)
{
	aptix_buf out = APTIX_BUF_INIT;
	aptix_oid id, missing;
	aptix_otype t;
	size_t size;
	char turn[1024];
	unsigned char *big = malloc(300000);

	id = write_str(odb, "hello\n");
	ck_assert_str_eq(aptix_oid_hex(&id), HELLO_BLOB);
	assert_content(odb, &id, APTIX_OBJ_BLOB, "hello\n", 6);

	/* empty blob, compressible and incompressible ones */
	id = write_blob(odb, "", 0);
	assert_content(odb, &id, APTIX_OBJ_BLOB, "", 0);
	ck_assert_ptr_nonnull(big);
	memset(big, 'z', 300000);
	id = write_blob(odb, big, 300000);
	assert_content(odb, &id, APTIX_OBJ_BLOB, big, 300000);
	unit_fill_random(big, 300000, 3);
	id = write_blob(odb, big, 300000);
	assert_content(odb, &id, APTIX_OBJ_BLOB, big, 300000);

	/* a turn */
	snprintf(turn, sizeof(turn), MIN_TURN, HELLO_BLOB);
	ck_assert_int_eq(aptix_odb_write(&id, odb, APTIX_OBJ_TURN, turn,
					 strlen(turn)), 0);
	assert_content(odb, &id, APTIX_OBJ_TURN, turn, strlen(turn));
	/* the id does not need to be asked for */
	ck_assert_int_eq(aptix_odb_write(NULL, odb, APTIX_OBJ_BLOB, "x", 1), 0);
	ck_assert_uint_eq(count_objects(odb), 6);

	/* absent objects */
	memset(&missing, 0x5c, sizeof(missing));
	ck_assert_int_eq(aptix_odb_exists(odb, &missing), 0);
	aptix_buf_puts(&out, "keep");
	ck_assert_int_eq(aptix_odb_read(&out, &t, odb, &missing, 0),
			 APTIX_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     aptix_oid_hex(&missing)));
	ck_assert_int_eq(aptix_odb_read_header(&size, &t, odb, &missing),
			 APTIX_ENOTFOUND);
	aptix_buf_release(&out);
	free(big);
}
END_TEST

START_TEST(test_write_validates)
{
	aptix_oid id;

	/* turns and sessions must be canonical and complete */
	ck_assert_int_eq(aptix_odb_write(&id, odb, APTIX_OBJ_TURN, "{}\n", 3),
			 APTIX_ECORRUPT);
	ck_assert_int_eq(aptix_odb_write(&id, odb, APTIX_OBJ_SESSION,
					 "not json\n", 9), APTIX_ECORRUPT);
	ck_assert_int_eq(aptix_odb_write(&id, odb, APTIX_OBJ_BAD, "x", 1),
			 APTIX_EINVALID);
	ck_assert_uint_eq(count_objects(odb), 0);
}
END_TEST

START_TEST(test_idempotent)
{
	aptix_oid a, b;

	a = write_str(odb, "same");
	b = write_str(odb, "same");
	ck_assert_int_eq(aptix_oid_cmp(&a, &b), 0);
	ck_assert_uint_eq(count_objects(odb), 1);
	/* through the backend slot too: present is success */
	ck_assert_int_eq(raw->write(raw, &a, "same", 4, APTIX_OBJ_BLOB), 0);
	ck_assert_uint_eq(count_objects(odb), 1);
	assert_content(odb, &a, APTIX_OBJ_BLOB, "same", 4);
}
END_TEST

/*
 * Two blob contents whose ids share their first 4 hex digits but not
 * the 5th, found by brute force (deterministic).
 */
static void colliding_pair(char a[32], char b[32], aptix_oid *ida,
			   aptix_oid *idb)
{
	static int32_t seen[65536];
	int32_t i;

	memset(seen, 0xff, sizeof(seen));
	for (i = 0; i < 1000000; i++) {
		char s[32];
		aptix_oid id;
		unsigned k;

		snprintf(s, sizeof(s), "ambiguous-%d", (int)i);
		ck_assert_int_eq(aptix_object_hash(&id, APTIX_OBJ_BLOB, s,
						   strlen(s)), 0);
		k = (unsigned)id.id[0] << 8 | id.id[1];
		if (seen[k] >= 0) {
			snprintf(b, 32, "ambiguous-%d", (int)seen[k]);
			ck_assert_int_eq(aptix_object_hash(idb,
				APTIX_OBJ_BLOB, b, strlen(b)), 0);
			if ((idb->id[2] >> 4) != (id.id[2] >> 4)) {
				snprintf(a, 32, "%s", s);
				*ida = id;
				return;
			}
		}
		seen[k] = i;
	}
	ck_abort_msg("no colliding pair found");
}

START_TEST(test_resolve_prefix)
{
	char hex[APTIX_OID_HEXSZ + 1], upper[APTIX_OID_HEXSZ + 1];
	char a[32], b[32], none[8];
	aptix_oid ida, idb, out, x;
	size_t len, i;

	colliding_pair(a, b, &ida, &idb);
	out = write_str(odb, a);
	ck_assert_int_eq(aptix_oid_cmp(&out, &ida), 0);
	out = write_str(odb, b);
	ck_assert_int_eq(aptix_oid_cmp(&out, &idb), 0);
	x = write_str(odb, "hello\n");

	/* unique prefixes of every length from 5 up, odd ones included */
	aptix_oid_tostr(hex, &ida);
	for (len = 5; len <= APTIX_OID_HEXSZ; len++) {
		memset(&out, 0, sizeof(out));
		ck_assert_msg(aptix_odb_resolve_prefix(&out, odb, hex, len)
			      == 0, "len %zu: %s", len,
			      aptix_error_last()->message);
		ck_assert_int_eq(aptix_oid_cmp(&out, &ida), 0);
	}
	/* either case */
	for (i = 0; i <= APTIX_OID_HEXSZ; i++)
		upper[i] = (hex[i] >= 'a' && hex[i] <= 'f') ?
			(char)(hex[i] - 32) : hex[i];
	ck_assert_int_eq(aptix_odb_resolve_prefix(&out, odb, upper, 7), 0);
	ck_assert_int_eq(aptix_oid_cmp(&out, &ida), 0);
	aptix_oid_tostr(hex, &idb);
	ck_assert_int_eq(aptix_odb_resolve_prefix(&out, odb, hex, 5), 0);
	ck_assert_int_eq(aptix_oid_cmp(&out, &idb), 0);

	/* 4 shared digits: ambiguous */
	ck_assert_int_eq(aptix_odb_resolve_prefix(&out, odb, hex, 4),
			 APTIX_EAMBIGUOUS);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "ambiguous"));

	/* another object's prefix still resolves at 4 */
	aptix_oid_tostr(hex, &x);
	if (memcmp(x.id, ida.id, 2)) {
		ck_assert_int_eq(aptix_odb_resolve_prefix(&out, odb, hex, 4),
				 0);
		ck_assert_int_eq(aptix_oid_cmp(&out, &x), 0);
	}

	/* a prefix no object has */
	for (i = 0; i < 65536; i++) {
		unsigned char k[2] = { (unsigned char)(i >> 8),
				       (unsigned char)i };

		if (memcmp(k, ida.id, 2) && memcmp(k, x.id, 2))
			break;
	}
	snprintf(none, sizeof(none), "%04x", (unsigned)i);
	ck_assert_int_eq(aptix_odb_resolve_prefix(&out, odb, none, 4),
			 APTIX_ENOTFOUND);
	/* an odd prefix whose last digit differs */
	aptix_oid_tostr(hex, &x);
	hex[4] = hex[4] == '0' ? '1' : '0';
	ck_assert_int_eq(aptix_odb_resolve_prefix(&out, odb, hex, 5),
			 APTIX_ENOTFOUND);

	/* too short, too long, not hex */
	aptix_oid_tostr(hex, &x);
	ck_assert_int_eq(aptix_odb_resolve_prefix(&out, odb, hex, 3),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_odb_resolve_prefix(&out, odb, hex, 0),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_odb_resolve_prefix(&out, odb, "12345g", 6),
			 APTIX_EINVALID);
	{
		char longer[66];

		snprintf(longer, sizeof(longer), "%s0", hex);
		ck_assert_int_eq(aptix_odb_resolve_prefix(&out, odb, longer,
							  65), APTIX_EINVALID);
	}
}
END_TEST

struct collect {
	aptix_oid ids[256];
	size_t n;
	size_t stop_at;
};

static int collect_cb(const aptix_oid *id, void *payload)
{
	struct collect *c = payload;

	ck_assert_uint_lt(c->n, 256);
	c->ids[c->n++] = *id;
	if (c->stop_at && c->n == c->stop_at)
		return 77;
	return 0;
}

START_TEST(test_foreach_order)
{
	static struct collect c;
	aptix_oid written[100];
	size_t i, j;

	for (i = 0; i < 100; i++) {
		char s[32];

		snprintf(s, sizeof(s), "object %zu", i);
		written[i] = write_str(odb, s);
	}
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(aptix_odb_foreach(odb, collect_cb, &c), 0);
	ck_assert_uint_eq(c.n, 100);
	for (i = 1; i < c.n; i++)
		ck_assert_msg(aptix_oid_cmp(&c.ids[i - 1], &c.ids[i]) < 0,
			      "not in id order at %zu", i);
	for (i = 0; i < 100; i++) {
		for (j = 0; j < c.n; j++)
			if (!aptix_oid_cmp(&written[i], &c.ids[j]))
				break;
		ck_assert_uint_lt(j, c.n);
	}

	/* a non-zero return stops the walk and is returned */
	memset(&c, 0, sizeof(c));
	c.stop_at = 10;
	ck_assert_int_eq(aptix_odb_foreach(odb, collect_cb, &c), 77);
	ck_assert_uint_eq(c.n, 10);
}
END_TEST

START_TEST(test_read_verify)
{
	aptix_buf out = APTIX_BUF_INIT;
	aptix_oid right, wrong;
	aptix_otype t;

	right = write_str(odb, "genuine");
	ck_assert_int_eq(aptix_odb_read(&out, &t, odb, &right,
					APTIX_ODB_READ_VERIFY), 0);

	/* bytes planted under an id they do not hash to */
	ck_assert_int_eq(aptix_object_hash(&wrong, APTIX_OBJ_BLOB, "other",
					   5), 0);
	ck_assert_int_eq(raw->write(raw, &wrong, "forged", 6,
				    APTIX_OBJ_BLOB), 0);
	ck_assert_int_eq(aptix_odb_exists(odb, &wrong), 1);
	/*
	 * unverified reads return them from memory; a store hashes again
	 * every value short enough to be kept in place, without a
	 * checksum of its own (objects-format.md)
	 */
	if (raw_owned) {
		ck_assert_int_eq(aptix_odb_read(&out, &t, odb, &wrong, 0),
				 APTIX_EMISMATCH);
	} else {
		ck_assert_int_eq(aptix_odb_read(&out, &t, odb, &wrong, 0), 0);
		ck_assert_str_eq(out.ptr, "forged");
	}
	/* verified reads catch the mismatch */
	ck_assert_int_eq(aptix_odb_read(&out, &t, odb, &wrong,
					APTIX_ODB_READ_VERIFY),
			 APTIX_EMISMATCH);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     aptix_oid_hex(&wrong)));

	/* the right bytes under the wrong type */
	ck_assert_int_eq(aptix_object_hash(&wrong, APTIX_OBJ_BLOB, "typed",
					   5), 0);
	ck_assert_int_eq(raw->write(raw, &wrong, "typed", 5,
				    APTIX_OBJ_SESSION), 0);
	ck_assert_int_eq(aptix_odb_read(&out, &t, odb, &wrong,
					APTIX_ODB_READ_VERIFY),
			 APTIX_EMISMATCH);
	aptix_buf_release(&out);
}
END_TEST

/* --- Several backends -------------------------------------------------- */

START_TEST(test_priority)
{
	aptix_odb *db;
	aptix_odb_backend *lo, *mid, *hi;
	aptix_buf out = APTIX_BUF_INIT;
	aptix_oid id, only_lo;
	aptix_otype t;

	ck_assert_int_eq(aptix_odb_new(&db), 0);
	ck_assert_int_eq(aptix_odb_backend_mem(&lo), 0);
	ck_assert_int_eq(aptix_odb_backend_mem(&mid), 0);
	ck_assert_int_eq(aptix_odb_backend_mem(&hi), 0);
	/* added out of order: priority decides */
	ck_assert_int_eq(aptix_odb_add_backend(db, mid, 5, 0), 0);
	ck_assert_int_eq(aptix_odb_add_backend(db, lo, 1, 0), 0);
	ck_assert_int_eq(aptix_odb_add_backend(db, hi, 10, 0), 0);
	ck_assert_ptr_eq(lo->odb, db);

	/* different bytes under one id in each: the highest one wins */
	ck_assert_int_eq(aptix_object_hash(&id, APTIX_OBJ_BLOB, "v", 1), 0);
	ck_assert_int_eq(lo->write(lo, &id, "low", 3, APTIX_OBJ_BLOB), 0);
	ck_assert_int_eq(mid->write(mid, &id, "mid", 3, APTIX_OBJ_BLOB), 0);
	ck_assert_int_eq(aptix_odb_read(&out, &t, db, &id, 0), 0);
	ck_assert_str_eq(out.ptr, "mid");
	ck_assert_int_eq(hi->write(hi, &id, "high", 4, APTIX_OBJ_BLOB), 0);
	ck_assert_int_eq(aptix_odb_read(&out, &t, db, &id, 0), 0);
	ck_assert_str_eq(out.ptr, "high");

	/* misses fall through to lower priorities */
	only_lo = write_str(db, "written");
	ck_assert_int_eq(hi->exists(hi, &only_lo), 1);	/* first writable */
	ck_assert_int_eq(mid->exists(mid, &only_lo), 0);
	ck_assert_int_eq(aptix_object_hash(&only_lo, APTIX_OBJ_BLOB, "lo", 2),
			 0);
	ck_assert_int_eq(lo->write(lo, &only_lo, "lo", 2, APTIX_OBJ_BLOB), 0);
	assert_content(db, &only_lo, APTIX_OBJ_BLOB, "lo", 2);

	aptix_buf_release(&out);
	aptix_odb_free(db);
}
END_TEST

START_TEST(test_readonly_alternate)
{
	aptix_odb *db;
	aptix_odb_backend *main_b, *alt;
	aptix_oid id, in_alt, both, out;
	char hex[APTIX_OID_HEXSZ + 1];
	static struct collect c;

	ck_assert_int_eq(aptix_odb_new(&db), 0);
	ck_assert_int_eq(aptix_odb_backend_mem(&main_b), 0);
	ck_assert_int_eq(aptix_odb_backend_mem(&alt), 0);
	/* the alternate is tried first for reads, never written */
	ck_assert_int_eq(aptix_odb_add_backend(db, alt, 100, 1), 0);
	ck_assert_int_eq(aptix_odb_add_backend(db, main_b, 1, 0), 0);

	id = write_str(db, "new object");
	ck_assert_int_eq(main_b->exists(main_b, &id), 1);
	ck_assert_int_eq(alt->exists(alt, &id), 0);

	/* objects only in the alternate are found everywhere */
	ck_assert_int_eq(aptix_object_hash(&in_alt, APTIX_OBJ_BLOB, "old", 3),
			 0);
	ck_assert_int_eq(alt->write(alt, &in_alt, "old", 3, APTIX_OBJ_BLOB),
			 0);
	assert_content(db, &in_alt, APTIX_OBJ_BLOB, "old", 3);
	ck_assert_int_eq(aptix_odb_resolve_prefix(&out, db,
			 aptix_oid_tostr(hex, &in_alt), 8), 0);
	ck_assert_int_eq(aptix_oid_cmp(&out, &in_alt), 0);

	/* an object in both is not ambiguous with itself */
	ck_assert_int_eq(aptix_object_hash(&both, APTIX_OBJ_BLOB, "both", 4),
			 0);
	ck_assert_int_eq(alt->write(alt, &both, "both", 4, APTIX_OBJ_BLOB), 0);
	ck_assert_int_eq(aptix_odb_write(&out, db, APTIX_OBJ_BLOB, "both", 4),
			 0);
	ck_assert_int_eq(main_b->exists(main_b, &both), 1);
	ck_assert_int_eq(aptix_odb_resolve_prefix(&out, db,
			 aptix_oid_tostr(hex, &both), 6), 0);
	ck_assert_int_eq(aptix_oid_cmp(&out, &both), 0);

	/* foreach visits every backend, each in id order */
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(aptix_odb_foreach(db, collect_cb, &c), 0);
	ck_assert_uint_eq(c.n, 4);
	aptix_odb_free(db);

	/* only read-only backends: nowhere to write */
	ck_assert_int_eq(aptix_odb_new(&db), 0);
	ck_assert_int_eq(aptix_odb_backend_mem(&alt), 0);
	ck_assert_int_eq(aptix_odb_add_backend(db, alt, 1, 1), 0);
	ck_assert_int_eq(aptix_odb_write(&id, db, APTIX_OBJ_BLOB, "x", 1),
			 APTIX_ERROR);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "writable"));
	ck_assert_int_eq(alt->exists(alt, &id), 0);
	aptix_odb_free(db);

	/* no backend at all */
	ck_assert_int_eq(aptix_odb_new(&db), 0);
	ck_assert_int_eq(aptix_odb_exists(db, &id), 0);
	{
		size_t size;
		aptix_otype t;

		ck_assert_int_eq(aptix_odb_read_header(&size, &t, db, &id),
				 APTIX_ENOTFOUND);
	}
	ck_assert_int_eq(aptix_odb_resolve_prefix(&out, db, hex, 8),
			 APTIX_ENOTFOUND);
	aptix_odb_free(db);
	aptix_odb_free(NULL);
}
END_TEST

START_TEST(test_store_as_alternate)
{
	aptix_odb *db;
	aptix_odb_backend *mem, *st;
	aptix_oid in_store, id;

	/* a repository's store as a read-only alternate of a mem odb */
	ck_assert_int_eq(aptix_odb_new(&db), 0);
	ck_assert_int_eq(aptix_odb_backend_mem(&mem), 0);
	ck_assert_int_eq(aptix_odb_backend_store(&st, repo->store), 0);
	ck_assert_int_eq(aptix_odb_add_backend(db, st, 10, 1), 0);
	ck_assert_int_eq(aptix_odb_add_backend(db, mem, 1, 0), 0);

	in_store = write_str(aptix_repo_odb(repo), "in the store");
	assert_content(db, &in_store, APTIX_OBJ_BLOB, "in the store", 12);
	id = write_str(db, "scratch");
	ck_assert_int_eq(mem->exists(mem, &id), 1);
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo), &id), 0);
	ck_assert_uint_eq(count_objects(aptix_repo_odb(repo)), 1);
	aptix_odb_free(db);
	/* the store outlives the backend over it */
	assert_content(aptix_repo_odb(repo), &in_store, APTIX_OBJ_BLOB,
		       "in the store", 12);
}
END_TEST

/* Text much like the last, so that a base saves more than a quarter. */
static void version_text(aptix_buf *out, int v)
{
	int i;

	aptix_buf_clear(out);
	for (i = 0; i < 40; i++)
		aptix_buf_printf(out, "line %d of the parser: token %d\n", i,
				 i == 20 ? v : i * 7);
}

/* Where a based value's base id is: after the flags and the size. */
static size_t base_at(const aptix_buf *v)
{
	size_t i = 1;

	while ((unsigned char)v->ptr[i] & 0x80)
		i++;
	return i + 1;
}

static int put_raw(aptix_store_wtxn *w, void *payload)
{
	aptix_buf *vals = payload;	/* key, value, key, value */

	return repo->store->wput(w, APTIX_TABLE_OBJECTS, vals[0].ptr, 32,
				 vals[1].ptr, vals[1].len) ||
		repo->store->wput(w, APTIX_TABLE_OBJECTS, vals[2].ptr, 32,
				  vals[3].ptr, vals[3].len);
}

START_TEST(test_based_store)
{
	aptix_buf text = APTIX_BUF_INIT, val = APTIX_BUF_INIT,
		out = APTIX_BUF_INIT, loop[4];
	aptix_oid a, b, c, on;
	aptix_otype type;
	aptix_txn *tx;
	int i;

	version_text(&text, 1);
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_write_object(&a, tx, APTIX_OBJ_BLOB,
						text.ptr, text.len), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
	/* b is stored against a; c, like b, against b's base: a */
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	version_text(&text, 2);
	ck_assert_int_eq(aptix_txn_write_object_like(&b, tx, APTIX_OBJ_BLOB,
						     text.ptr, text.len, &a), 0);
	version_text(&text, 3);
	ck_assert_int_eq(aptix_txn_write_object_like(&c, tx, APTIX_OBJ_BLOB,
						     text.ptr, text.len, &b), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
	ck_assert_int_eq(repo->store->get(&val, repo->store,
					  APTIX_TABLE_OBJECTS, b.id, 32), 0);
	ck_assert_int_eq(aptix_stored_based_on(&on, val.ptr, val.len), 1);
	ck_assert(!aptix_oid_cmp(&on, &a));
	ck_assert_int_eq(repo->store->get(&val, repo->store,
					  APTIX_TABLE_OBJECTS, c.id, 32), 0);
	ck_assert_int_eq(aptix_stored_based_on(&on, val.ptr, val.len), 1);
	ck_assert(!aptix_oid_cmp(&on, &a));
	ck_assert_int_eq(aptix_odb_read(&out, &type, odb, &c, 1), 0);
	ck_assert_str_eq(out.ptr, text.ptr);
	/* the store's format says a based value can be in it */
	ck_assert_int_eq(repo->store->get(&val, repo->store, APTIX_TABLE_META,
					  "format", 6), 0);
	ck_assert_int_ge(strtol(val.ptr, NULL, 10), 3);
	/* two values based on each other: corrupt, not a loop */
	for (i = 0; i < 4; i++)
		aptix_buf_init(&loop[i], 0);
	ck_assert_int_eq(repo->store->get(&loop[1], repo->store,
					  APTIX_TABLE_OBJECTS, b.id, 32), 0);
	ck_assert_int_eq(repo->store->get(&loop[3], repo->store,
					  APTIX_TABLE_OBJECTS, c.id, 32), 0);
	aptix_buf_set(&loop[0], b.id, 32);
	aptix_buf_set(&loop[2], c.id, 32);
	/* b becomes based on c, c on b */
	memcpy(loop[1].ptr + base_at(&loop[1]), c.id, 32);
	memcpy(loop[3].ptr + base_at(&loop[3]), b.id, 32);
	ck_assert_int_eq(repo->store->write(repo->store, put_raw, loop), 0);
	ck_assert_int_eq(aptix_odb_read(&out, &type, odb, &b, 0),
			 APTIX_ECORRUPT);
	ck_assert_ptr_nonnull(aptix_error_last());
	for (i = 0; i < 4; i++)
		aptix_buf_release(&loop[i]);
	aptix_buf_release(&text);
	aptix_buf_release(&val);
	aptix_buf_release(&out);
}
END_TEST

static int del_object(aptix_store_wtxn *w, void *payload)
{
	return repo->store->wdel(w, APTIX_TABLE_OBJECTS,
				 ((aptix_oid *)payload)->id, 32);
}

START_TEST(test_based_base_gone)
{
	aptix_buf text = APTIX_BUF_INIT, out = APTIX_BUF_INIT;
	aptix_oid a, b;
	aptix_otype type;
	aptix_txn *tx;

	version_text(&text, 1);
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_write_object(&a, tx, APTIX_OBJ_BLOB,
						text.ptr, text.len), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
	/* b is encoded against a; a goes (a purge) before b's write */
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	version_text(&text, 2);
	ck_assert_int_eq(aptix_txn_write_object_like(&b, tx, APTIX_OBJ_BLOB,
						     text.ptr, text.len, &a), 0);
	ck_assert_int_eq(repo->store->write(repo->store, del_object, &a), 0);
	ck_assert_int_lt(aptix_txn_commit(tx), 0);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "was purged meanwhile"));
	aptix_txn_free(tx);
	ck_assert_int_eq(aptix_odb_read(&out, &type, odb, &b, 0),
			 APTIX_ENOTFOUND);
	/* written again, it is stored without the base */
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_write_object_like(&b, tx, APTIX_OBJ_BLOB,
						     text.ptr, text.len, &a), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
	ck_assert_int_eq(aptix_odb_read(&out, &type, odb, &b, 1), 0);
	ck_assert_str_eq(out.ptr, text.ptr);
	aptix_buf_release(&text);
	aptix_buf_release(&out);
}
END_TEST

START_TEST(test_backend_version)
{
	aptix_odb *db;
	aptix_odb_backend *b;

	ck_assert_int_eq(aptix_odb_new(&db), 0);
	ck_assert_int_eq(aptix_odb_backend_mem(&b), 0);
	b->version = APTIX_ODB_BACKEND_VERSION + 1;
	ck_assert_int_eq(aptix_odb_add_backend(db, b, 1, 0), APTIX_EINVALID);
	b->free(b);
	ck_assert_int_eq(aptix_odb_add_backend(db, NULL, 1, 0),
			 APTIX_EINVALID);
	aptix_odb_free(db);
}
END_TEST

struct headers {
	aptix_oid ids[64];
	aptix_otype types[64];
	size_t sizes[64];
	size_t n;
};

static int header_cb(const aptix_oid *id, aptix_otype type, size_t size,
		     void *payload)
{
	struct headers *h = payload;

	ck_assert_uint_lt(h->n, 64);
	h->ids[h->n] = *id;
	h->types[h->n] = type;
	h->sizes[h->n++] = size;
	return h->n == 3 ? 55 : 0;
}

/*
 * foreach_header: the objects of foreach, in its order, each with what
 * read_header says, or BAD where the backend cannot tell (mem); a
 * non-zero return stops the walk.
 */
START_TEST(test_foreach_header)
{
	static struct collect c;
	static struct headers h;
	char turn[512];
	aptix_oid blob, id;
	aptix_otype type;
	size_t i, size;

	blob = write_str(odb, "hello");
	snprintf(turn, sizeof(turn), MIN_TURN, aptix_oid_hex(&blob));
	ck_assert_int_eq(aptix_odb_write(&id, odb, APTIX_OBJ_TURN, turn,
					 strlen(turn)), 0);
	write_str(odb, "");
	write_str(odb, "and a third");
	memset(&c, 0, sizeof(c));
	memset(&h, 0, sizeof(h));
	ck_assert_int_eq(aptix_odb_foreach(odb, collect_cb, &c), 0);
	ck_assert_int_eq(aptix_odb_foreach_header(odb, header_cb, &h), 55);
	ck_assert_uint_eq(c.n, 4);
	ck_assert_uint_eq(h.n, 3);
	for (i = 0; i < h.n; i++) {
		ck_assert(!aptix_oid_cmp(&h.ids[i], &c.ids[i]));
		if (h.types[i] == APTIX_OBJ_BAD && !raw_owned)
			continue;	/* mem: the backend cannot say */
		ck_assert_int_eq(aptix_odb_read_header(&size, &type, odb,
						       &h.ids[i]), 0);
		ck_assert_int_eq(h.types[i], type);
		ck_assert_uint_eq(h.sizes[i], size);
	}
}
END_TEST

/* A stored value whose header is damaged comes as BAD, the walk goes on. */
static int put_bad_header(aptix_store_wtxn *w, void *payload)
{
	static const unsigned char val[] = { 0x0f, 0x80, 0x80 };

	return repo->store->wput(w, APTIX_TABLE_OBJECTS, payload, 32, val,
				 sizeof(val));
}

START_TEST(test_foreach_header_damaged)
{
	static struct headers h;
	aptix_oid bad;
	size_t i, nbad = 0;

	write_str(odb, "one");
	write_str(odb, "two");
	memset(bad.id, 0x42, sizeof(bad.id));
	ck_assert_int_eq(repo->store->write(repo->store, put_bad_header,
					    bad.id), 0);
	memset(&h, 0, sizeof(h));
	ck_assert_int_eq(aptix_odb_foreach_header(odb, header_cb, &h), 55);
	ck_assert_uint_eq(h.n, 3);
	for (i = 0; i < h.n; i++) {
		if (!aptix_oid_cmp(&h.ids[i], &bad)) {
			ck_assert_int_eq(h.types[i], APTIX_OBJ_BAD);
			nbad++;
		} else {
			ck_assert_int_eq(h.types[i], APTIX_OBJ_BLOB);
		}
	}
	ck_assert_uint_eq(nbad, 1);
}
END_TEST

struct walked {
	aptix_oid ids[64];
	aptix_otype types[64];
	int has[64];
	size_t n;
};

/* Each object the walk gives has the content aptix_odb_read() gives. */
static int walked_cb(const aptix_oid *id, aptix_otype type, const void *data,
		     size_t len, void *payload)
{
	struct walked *w = payload;
	aptix_buf out = APTIX_BUF_INIT;
	aptix_otype t;

	ck_assert_uint_lt(w->n, 64);
	w->ids[w->n] = *id;
	w->types[w->n] = type;
	w->has[w->n++] = data != NULL;
	if (data) {
		ck_assert_int_eq(aptix_odb_read(&out, &t, odb, id, 0), 0);
		ck_assert_int_eq(t, type);
		ck_assert_uint_eq(out.len, len);
		ck_assert(!memcmp(out.ptr, data, len));
	}
	aptix_buf_release(&out);
	return 0;
}

/*
 * foreach_object: the objects of foreach from start, in its order, with
 * their content for the types asked; the mem backend has no such walk.
 */
START_TEST(test_foreach_object)
{
	static struct collect c;
	static struct walked w;
	char turn[512];
	aptix_oid blob, id;
	size_t i, with = 0;

	blob = write_str(odb, "hello");
	snprintf(turn, sizeof(turn), MIN_TURN, aptix_oid_hex(&blob));
	ck_assert_int_eq(aptix_odb_write(&id, odb, APTIX_OBJ_TURN, turn,
					 strlen(turn)), 0);
	write_str(odb, "");
	write_str(odb, "and a third, long enough to have a checksum of its own "
		  "in the values table of the store");
	memset(&c, 0, sizeof(c));
	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(aptix_odb_foreach(odb, collect_cb, &c), 0);
	if (!raw_owned) {
		ck_assert_int_eq(aptix_odb_foreach_object(odb, NULL, ~0u, 0,
							  walked_cb, &w),
				 APTIX_PASSTHROUGH);
		ck_assert_uint_eq(w.n, 0);
		return;
	}
	ck_assert_int_eq(aptix_odb_foreach_object(odb, NULL,
						  APTIX_ODB_TYPE(APTIX_OBJ_TURN),
						  0, walked_cb, &w), 0);
	ck_assert_uint_eq(w.n, 4);
	for (i = 0; i < w.n; i++) {
		ck_assert(!aptix_oid_cmp(&w.ids[i], &c.ids[i]));
		ck_assert_int_eq(w.has[i], w.types[i] == APTIX_OBJ_TURN);
		with += w.has[i];
	}
	ck_assert_uint_eq(with, 1);
	/* every type, verified, from the third object on */
	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(aptix_odb_foreach_object(odb, &c.ids[2], ~0u,
						  APTIX_ODB_READ_VERIFY,
						  walked_cb, &w), 0);
	ck_assert_uint_eq(w.n, 2);
	for (i = 0; i < w.n; i++) {
		ck_assert(!aptix_oid_cmp(&w.ids[i], &c.ids[i + 2]));
		ck_assert(w.has[i]);
	}
}
END_TEST

/* A damaged header: BAD, without content; the walk goes on. */
START_TEST(test_foreach_object_damaged)
{
	static struct walked w;
	aptix_oid bad;
	size_t i;

	write_str(odb, "one");
	write_str(odb, "two");
	memset(bad.id, 0x42, sizeof(bad.id));
	ck_assert_int_eq(repo->store->write(repo->store, put_bad_header,
					    bad.id), 0);
	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(aptix_odb_foreach_object(odb, NULL, ~0u, 0,
						  walked_cb, &w), 0);
	ck_assert_uint_eq(w.n, 3);
	for (i = 0; i < w.n; i++) {
		int is_bad = !aptix_oid_cmp(&w.ids[i], &bad);

		ck_assert_int_eq(w.types[i], is_bad ? APTIX_OBJ_BAD :
				 APTIX_OBJ_BLOB);
		ck_assert_int_eq(w.has[i], !is_bad);
	}
}
END_TEST

static void add_common(TCase *tc)
{
	tcase_add_test(tc, test_foreach_header);
	tcase_add_test(tc, test_foreach_object);
	tcase_add_test(tc, test_write_read);
	tcase_add_test(tc, test_write_validates);
	tcase_add_test(tc, test_idempotent);
	tcase_add_test(tc, test_resolve_prefix);
	tcase_add_test(tc, test_foreach_order);
	tcase_add_test(tc, test_read_verify);
}

Suite *odb_suite(void)
{
	Suite *s = suite_create("odb");
	TCase *mem = tcase_create("mem");
	TCase *store = tcase_create("store");
	TCase *multi = tcase_create("backends");

	tcase_add_checked_fixture(mem, setup_mem, teardown_mem);
	add_common(mem);
	suite_add_tcase(s, mem);

	tcase_add_checked_fixture(store, setup_store, teardown_store);
	tcase_set_timeout(store, 20);
	add_common(store);
	tcase_add_test(store, test_store_as_alternate);
	tcase_add_test(store, test_based_store);
	tcase_add_test(store, test_based_base_gone);
	tcase_add_test(store, test_foreach_header_damaged);
	tcase_add_test(store, test_foreach_object_damaged);
	suite_add_tcase(s, store);

	tcase_add_checked_fixture(multi, setup_mem, teardown_mem);
	tcase_add_test(multi, test_priority);
	tcase_add_test(multi, test_readonly_alternate);
	tcase_add_test(multi, test_backend_version);
	suite_add_tcase(s, multi);
	return s;
}
