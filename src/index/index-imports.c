/*
 * src/index/index-imports.c - the source keys of imported turns: the
 * index's imports table (objects-format.md, "The import keys").
 *
 * An importer names each turn it reads by a key of the source (Codex
 * thread id and line ordinal, Claude Code prompt uuid, Gemini CLI session
 * and message id, OpenCode part, llm message hash). A fork names its
 * parent's turn by such a key: when the parent was imported by an earlier
 * run, only the store can say which snapshot that is. So the importer
 * writes each key, in the batch that writes its turn:
 *
 *   sha256(source key)  ->  u8 version 1, session id (32; zero: the
 *                           start of the conversation), be64 seq,
 *                           str8 conversation id,
 *                           [5 x be64 cumulative usage: input, cached,
 *                            output, reasoning, total (Codex)]
 *
 * The table is kept by its writer, not derived from the objects: making
 * a key again takes the importer's reading of the source (import the
 * files again). reindex keeps it, less the keys whose snapshot the store
 * no longer holds (aptix_index__import_key_stale); fsck names those and
 * records it cannot read.
 */
#include "util/common.h"
#include "index/index.h"
#include "aptix/index.h"
#include "aptix/odb.h"
#include "aptix/sys/index_backend.h"

#define IMPORT_KEY_VERSION 1
#define FIXED (1 + 32 + 8 + 1)	/* before the conversation id */
#define USAGE_LEN (5 * 8)

void aptix_index__import_key_id(aptix_oid *out, const char *key)
{
	aptix_sha256(out, key, strlen(key));
}

int aptix_index__import_key_encode(aptix_buf *out,
				   const struct aptix_index_import_key *k)
{
	unsigned char fixed[FIXED], usage[USAGE_LEN];
	size_t n = strlen(k->conv);

	if (n > APTIX_CONV_MAXLEN) {
		aptix_error_set(APTIX_ERROR_INVALID, "conversation id '%.80s' "
				"too long for an import key", k->conv);
		return APTIX_EINVALID;
	}
	fixed[0] = IMPORT_KEY_VERSION;
	memcpy(fixed + 1, k->session.id, 32);
	aptix__put_be64(fixed + 33, (uint64_t)(k->seq < 0 ? 0 : k->seq));
	fixed[41] = (unsigned char)n;
	aptix_buf_clear(out);
	aptix_buf_put(out, fixed, sizeof(fixed));
	aptix_buf_put(out, k->conv, n);
	if (k->has_total) {
		aptix__put_be64(usage, (uint64_t)k->total.input_tokens);
		aptix__put_be64(usage + 8, (uint64_t)k->total.cached_tokens);
		aptix__put_be64(usage + 16, (uint64_t)k->total.output_tokens);
		aptix__put_be64(usage + 24,
				(uint64_t)k->total.reasoning_tokens);
		aptix__put_be64(usage + 32, (uint64_t)k->total.total_tokens);
		aptix_buf_put(out, usage, sizeof(usage));
	}
	return aptix_buf_oom(out) ? aptix_error_oom() : 0;
}

int aptix_index__import_key_decode(struct aptix_index_import_key *k,
				   const void *val, size_t len)
{
	const unsigned char *v = val;
	size_t n = len > 41 ? v[41] : 0;

	memset(k, 0, sizeof(*k));
	if (len < FIXED || v[0] != IMPORT_KEY_VERSION || !n ||
	    n > APTIX_CONV_MAXLEN || (len != FIXED + n &&
				      len != FIXED + n + USAGE_LEN))
		goto bad;
	memcpy(k->session.id, v + 1, 32);
	k->seq = (long)aptix__get_be64(v + 33);
	memcpy(k->conv, v + FIXED, n);
	k->conv[n] = '\0';
	if (memchr(k->conv, '\0', n))
		goto bad;
	if (len > FIXED + n) {
		v += FIXED + n;
		k->has_total = 1;
		k->total.input_tokens = (long)aptix__get_be64(v);
		k->total.cached_tokens = (long)aptix__get_be64(v + 8);
		k->total.output_tokens = (long)aptix__get_be64(v + 16);
		k->total.reasoning_tokens = (long)aptix__get_be64(v + 24);
		k->total.total_tokens = (long)aptix__get_be64(v + 32);
	}
	return 0;
bad:
	aptix_error_set(APTIX_ERROR_REPOSITORY, "malformed import key "
			"record (%zu bytes)", len);
	return APTIX_ECORRUPT;
}

int aptix_index__import_key_get(struct aptix_index_import_key *k,
				aptix_buf *raw, aptix_repo *repo,
				const aptix_oid *id)
{
	aptix_index_backend *ix = repo->backend->index;
	int r;

	if ((r = ix->get(raw, ix, NULL, APTIX_INDEX_IMPORTS, id->id, 32)) < 0)
		return r;
	if ((r = aptix_index__import_key_decode(k, raw->ptr, raw->len)) < 0)
		return r;
	if (!aptix_oid_is_zero(&k->session) &&
	    !aptix_odb_exists(repo->odb, &k->session)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "import key names "
				"snapshot '%s', which the store lacks",
				aptix_oid_hex(&k->session));
		return APTIX_ENOTFOUND;
	}
	return 0;
}

int aptix_index__import_key_stale(aptix_repo *repo, const void *val,
				  size_t len)
{
	struct aptix_index_import_key k;

	if (aptix_index__import_key_decode(&k, val, len) < 0) {
		aptix_error_clear();
		return 1;
	}
	return !aptix_oid_is_zero(&k.session) &&
		!aptix_odb_exists(repo->odb, &k.session);
}

/* --- fsck ---------------------------------------------------------------- */

struct check {
	aptix_repo *repo;
	aptix_index_recency_problem_fn problem;
	void *payload;
	size_t problems;
};

static int check_cb(const void *key, size_t klen, const void *val,
		    size_t vlen, void *payload)
{
	struct check *c = payload;
	struct aptix_index_import_key k;
	char msg[256], hex[2 * 32 + 1];
	size_t i;

	for (i = 0; i < klen && i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x",
			 ((const unsigned char *)key)[i]);
	hex[2 * i] = '\0';
	if (klen != 32 || aptix_index__import_key_decode(&k, val, vlen) < 0) {
		aptix_error_clear();
		snprintf(msg, sizeof(msg), "import key %s: malformed record "
			 "(%zu bytes)", hex, vlen);
	} else if (!aptix_oid_is_zero(&k.session) &&
		   !aptix_odb_exists(c->repo->odb, &k.session)) {
		snprintf(msg, sizeof(msg), "import key %s names snapshot %s "
			 "of '%s', which the store lacks", hex,
			 aptix_oid_hex(&k.session), k.conv);
	} else {
		return 0;
	}
	c->problems++;
	c->problem(msg, c->payload);
	return 0;
}

int aptix_index_check_imports(aptix_repo *repo,
			      aptix_index_recency_problem_fn fn,
			      void *payload)
{
	struct check c = { repo, fn, payload, 0 };
	int r;

	APTIX_ASSERT_ARG(repo);
	APTIX_ASSERT_ARG(fn);
	if ((r = repo->backend->index->iterate(repo->backend->index, NULL,
					       APTIX_INDEX_IMPORTS, NULL, 0,
					       0, check_cb, &c)) < 0)
		return r;
	return c.problems > INT32_MAX ? INT32_MAX : (int)c.problems;
}
