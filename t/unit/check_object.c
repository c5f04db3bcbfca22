/*
 * check_object.c - unit tests for the turn and session codec
 * (src/object/object.c, src/util/cjson.c): canonical JSON, strict parsing, the
 * loose-JSON readers and the walk over referenced ids.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aptix.h"
#include "unit.h"

#define OID1 "1111111111111111111111111111111111111111111111111111111111111111"
#define OID2 "2222222222222222222222222222222222222222222222222222222222222222"
#define OID3 "3333333333333333333333333333333333333333333333333333333333333333"
#define OIDA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

#define USAGE0 "\"usage\":{\"cached_tokens\":0,\"input_tokens\":0," \
	"\"model_requests\":0,\"output_tokens\":0,\"reasoning_tokens\":0," \
	"\"total_tokens\":0}"
/* The smallest turn, in the canonical form written by hand. */
#define MIN_TURN "{\"conversation\":\"c\",\"created_at\":5," \
	"\"instruction\":\"" OID1 "\",\"seq\":1,\"status\":\"pending\"," \
	"\"status_at\":5," USAGE0 ",\"v\":1}\n"
#define SUSAGE0 "\"usage\":{\"completion_tokens\":0,\"model_requests\":0," \
	"\"prompt_tokens\":0,\"total_tokens\":0}"
#define MIN_SESSION "{\"conversation\":\"c\",\"created_at\":5," \
	"\"metadata\":{\"session_type\":\"agent\"}," \
	"\"run_summary\":{\"duration_ms\":0," SUSAGE0 "}," \
	"\"status\":\"created\",\"turn\":\"" OID2 "\",\"v\":1}\n"

static void setup(void)
{
	aptix_error_clear();
}

static void teardown(void)
{
	aptix_error_clear();
}

static aptix_oid oid_of(const char *hex)
{
	aptix_oid id;

	ck_assert_int_eq(aptix_oid_fromstr(&id, hex), 0);
	return id;
}

static aptix_oid blob_id(const char *s)
{
	aptix_oid id;

	ck_assert_int_eq(aptix_object_hash(&id, APTIX_OBJ_BLOB, s, strlen(s)),
			 0);
	return id;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	ck_assert_ptr_nonnull(p);
	return p;
}

static const char *errmsg(void)
{
	return aptix_error_last()->message;
}

#define assert_error_names(field) \
	ck_assert_msg(strstr(errmsg(), "'" field "'") != NULL, \
		      "error does not name '%s': %s", field, errmsg())

static void min_turn(aptix_turn *t)
{
	aptix_turn_init(t);
	t->conversation = xstrdup("c");
	t->seq = 1;
	t->created_at = 5;
	t->status_at = 5;
	t->instruction = oid_of(OID1);
}

/* A turn with every field set. */
static void full_turn(aptix_turn *t)
{
	aptix_turn_init(t);
	t->conversation = xstrdup("conv-42");
	t->seq = 7;
	t->status = APTIX_TURN_COMPLETED;
	t->mode = xstrdup("edit");
	t->model = xstrdup("gpt-test-1");
	t->workspace = xstrdup("/home/u/project");
	t->repo = xstrdup("git@example.com:u/project.git");
	t->created_at = 1700000000123LL;
	t->status_at = 1700000000456LL;
	t->response_at = 1700000000789LL;
	t->chain_expires_at = 1700003600000LL;
	t->instruction = blob_id("instruction");
	t->answer = blob_id("answer");
	t->request = blob_id("request");
	t->response = blob_id("response");
	t->response_id = xstrdup("resp_0002");
	t->previous_response_id = xstrdup("resp_0001");
	t->usage.input_tokens = 1001;
	t->usage.output_tokens = 202;
	t->usage.total_tokens = 1203;
	t->usage.cached_tokens = 512;
	t->usage.reasoning_tokens = 64;
	t->usage.model_requests = 3;
	t->nchunks = 2;
	t->chunks = calloc(2, sizeof(*t->chunks));
	ck_assert_ptr_nonnull(t->chunks);
	t->chunks[0].chunk_id = xstrdup("0b3c6c1e-5b7a-4d8e-9f00-123456789abc");
	t->chunks[0].path = xstrdup("src/main.c");
	t->chunks[0].start_line = 10;
	t->chunks[0].end_line = 42;
	t->chunks[0].content_hash = xstrdup(OIDA);
	t->chunks[0].score = 876543;
	t->chunks[0].snippet = blob_id("snippet");
	t->chunks[0].sent = 1;
	t->chunks[1].chunk_id = xstrdup("ffffffff-0000-4000-8000-000000000000");
	t->chunks[1].path = xstrdup("README.md");
	t->chunks[1].start_line = 1;
	t->chunks[1].end_line = 1;
	t->chunks[1].content_hash = xstrdup(OID3);
	t->chunks[1].score = -5;
	t->nfiles = 2;
	t->files = calloc(2, sizeof(*t->files));
	ck_assert_ptr_nonnull(t->files);
	t->files[0].path = xstrdup("src/main.c");
	t->files[0].sha256 = xstrdup(OID2);
	t->files[0].size = 4096;
	t->files[0].touched = 1;
	t->files[0].sent = 1;
	t->files[0].content = blob_id("file content");
	t->files[0].has_content = 1;
	t->files[1].path = xstrdup("big.bin");
	t->files[1].sha256 = xstrdup(OIDA);
	t->files[1].size = 99999999;
	t->files[1].too_large = 1;
	t->files[1].binary = 1;
	t->nwarnings = 2;
	t->warnings = calloc(2, sizeof(char *));
	ck_assert_ptr_nonnull(t->warnings);
	t->warnings[0] = xstrdup("context truncated: \"big.bin\" skipped");
	t->warnings[1] = xstrdup("tab\there\\back\nline");
	t->nerrors = 1;
	t->errors = calloc(1, sizeof(char *));
	ck_assert_ptr_nonnull(t->errors);
	t->errors[0] = xstrdup("tool failed: exit 1");
	t->chain_restarted = 1;
}

static void assert_str_eq_null(const char *a, const char *b)
{
	if (!a || !b)
		ck_assert_ptr_eq(a, b);
	else
		ck_assert_str_eq(a, b);
}

static void assert_oid_eq(const aptix_oid *a, const aptix_oid *b)
{
	ck_assert_msg(!aptix_oid_cmp(a, b), "%s != %s", aptix_oid_hex(a),
		      aptix_oid_hex(b));
}

static void assert_turn_eq(const aptix_turn *a, const aptix_turn *b)
{
	size_t i;

	ck_assert_int_eq(a->version, b->version);
	assert_str_eq_null(a->conversation, b->conversation);
	ck_assert_int_eq(a->seq, b->seq);
	ck_assert_int_eq(a->status, b->status);
	assert_str_eq_null(a->mode, b->mode);
	assert_str_eq_null(a->model, b->model);
	assert_str_eq_null(a->workspace, b->workspace);
	assert_str_eq_null(a->repo, b->repo);
	ck_assert_int_eq(a->created_at, b->created_at);
	ck_assert_int_eq(a->status_at, b->status_at);
	ck_assert_int_eq(a->response_at, b->response_at);
	ck_assert_int_eq(a->chain_expires_at, b->chain_expires_at);
	assert_oid_eq(&a->instruction, &b->instruction);
	assert_oid_eq(&a->answer, &b->answer);
	assert_oid_eq(&a->request, &b->request);
	assert_oid_eq(&a->response, &b->response);
	assert_str_eq_null(a->response_id, b->response_id);
	assert_str_eq_null(a->previous_response_id, b->previous_response_id);
	ck_assert_int_eq(a->usage.input_tokens, b->usage.input_tokens);
	ck_assert_int_eq(a->usage.output_tokens, b->usage.output_tokens);
	ck_assert_int_eq(a->usage.total_tokens, b->usage.total_tokens);
	ck_assert_int_eq(a->usage.cached_tokens, b->usage.cached_tokens);
	ck_assert_int_eq(a->usage.reasoning_tokens,
			 b->usage.reasoning_tokens);
	ck_assert_int_eq(a->usage.model_requests, b->usage.model_requests);
	ck_assert_uint_eq(a->nchunks, b->nchunks);
	for (i = 0; i < a->nchunks; i++) {
		const aptix_chunk_ref *x = &a->chunks[i], *y = &b->chunks[i];

		assert_str_eq_null(x->chunk_id, y->chunk_id);
		assert_str_eq_null(x->path, y->path);
		ck_assert_int_eq(x->start_line, y->start_line);
		ck_assert_int_eq(x->end_line, y->end_line);
		assert_str_eq_null(x->content_hash, y->content_hash);
		ck_assert_int_eq(x->score, y->score);
		assert_oid_eq(&x->snippet, &y->snippet);
		ck_assert_int_eq(x->sent, y->sent);
	}
	ck_assert_uint_eq(a->nfiles, b->nfiles);
	for (i = 0; i < a->nfiles; i++) {
		const aptix_file_ref *x = &a->files[i], *y = &b->files[i];

		assert_str_eq_null(x->path, y->path);
		assert_str_eq_null(x->sha256, y->sha256);
		ck_assert_int_eq(x->size, y->size);
		ck_assert_int_eq(x->touched, y->touched);
		ck_assert_int_eq(x->sent, y->sent);
		ck_assert_int_eq(x->too_large, y->too_large);
		ck_assert_int_eq(x->binary, y->binary);
		assert_oid_eq(&x->content, &y->content);
		ck_assert_int_eq(x->has_content, y->has_content);
	}
	ck_assert_uint_eq(a->nwarnings, b->nwarnings);
	for (i = 0; i < a->nwarnings; i++)
		ck_assert_str_eq(a->warnings[i], b->warnings[i]);
	ck_assert_uint_eq(a->nerrors, b->nerrors);
	for (i = 0; i < a->nerrors; i++)
		ck_assert_str_eq(a->errors[i], b->errors[i]);
	ck_assert_int_eq(a->chain_restarted, b->chain_restarted);
}

static void min_session(aptix_session *s)
{
	aptix_session_init(s);
	s->conversation = xstrdup("c");
	s->created_at = 5;
	s->turn = oid_of(OID2);
	s->session_type = xstrdup("agent");
}

static void full_session(aptix_session *s)
{
	aptix_session_init(s);
	s->parent = oid_of(OID1);
	s->has_parent = 1;
	s->conversation = xstrdup("conv-42");
	s->turn = oid_of(OID2);
	s->status = APTIX_SESSION_AWAITING_TOOL_RESULTS;
	s->created_at = 1700000000999LL;
	s->duration_ms = 12345;
	s->usage.input_tokens = 10;
	s->usage.output_tokens = 20;
	s->usage.total_tokens = 30;
	s->usage.model_requests = 2;
	s->session_type = xstrdup("agent");
	s->transport = xstrdup("sse");
	s->workspace = xstrdup("/home/u/project");
	s->title = xstrdup("Fix the \"parser\"");
	s->forked_from = xstrdup("conv-41");
}

static void assert_session_eq(const aptix_session *a, const aptix_session *b)
{
	ck_assert_int_eq(a->version, b->version);
	assert_oid_eq(&a->parent, &b->parent);
	ck_assert_int_eq(a->has_parent, b->has_parent);
	assert_str_eq_null(a->conversation, b->conversation);
	assert_oid_eq(&a->turn, &b->turn);
	ck_assert_int_eq(a->status, b->status);
	ck_assert_int_eq(a->created_at, b->created_at);
	ck_assert_int_eq(a->duration_ms, b->duration_ms);
	ck_assert_int_eq(a->usage.input_tokens, b->usage.input_tokens);
	ck_assert_int_eq(a->usage.output_tokens, b->usage.output_tokens);
	ck_assert_int_eq(a->usage.total_tokens, b->usage.total_tokens);
	ck_assert_int_eq(a->usage.model_requests, b->usage.model_requests);
	assert_str_eq_null(a->session_type, b->session_type);
	assert_str_eq_null(a->transport, b->transport);
	assert_str_eq_null(a->workspace, b->workspace);
	assert_str_eq_null(a->title, b->title);
	assert_str_eq_null(a->forked_from, b->forked_from);
}

/*
 * Canonical form: one line ending in "\n", no white space outside
 * strings, the keys of every object in strictly increasing byte order.
 */
static void assert_canonical_shape(const char *p, size_t len)
{
	/* the last key seen at each nesting depth */
	char last[16][64];
	int depth = -1, in_str = 0, is_key = 0;
	size_t i, kstart = 0;
	int expect_key[16];

	ck_assert_uint_ge(len, 3);
	ck_assert_int_eq(p[len - 1], '\n');
	ck_assert_ptr_eq(memchr(p, '\n', len), p + len - 1);
	ck_assert_ptr_null(memchr(p, '\0', len));
	for (i = 0; i < len - 1; i++) {
		char c = p[i];

		if (in_str) {
			if (c == '\\') {
				i++;
				continue;
			}
			if (c != '"')
				continue;
			in_str = 0;
			if (is_key) {
				size_t n = i - kstart;

				ck_assert_uint_lt(n, 64);
				if (last[depth][0] != '\x01') {
					char cur[64];

					memcpy(cur, p + kstart, n);
					cur[n] = '\0';
					ck_assert_msg(strcmp(last[depth], cur)
						      < 0, "key '%s' after "
						      "'%s'", cur,
						      last[depth]);
				}
				memcpy(last[depth], p + kstart, n);
				last[depth][n] = '\0';
			}
			continue;
		}
		ck_assert_msg(c != ' ' && c != '\t' && c != '\r' && c != '\n',
			      "white space at byte %zu", i);
		if (c == '{') {
			depth++;
			ck_assert_int_lt(depth, 16);
			last[depth][0] = '\x01';
			last[depth][1] = '\0';
			expect_key[depth] = 1;
		} else if (c == '[') {
			depth++;
			ck_assert_int_lt(depth, 16);
			expect_key[depth] = 0;
		} else if (c == '}' || c == ']') {
			depth--;
		} else if (c == ',' && depth >= 0 && expect_key[depth] == 2) {
			expect_key[depth] = 1;
		} else if (c == ':') {
			expect_key[depth] = 2;
		} else if (c == '"') {
			in_str = 1;
			is_key = depth >= 0 && expect_key[depth] == 1;
			kstart = i + 1;
		}
	}
	ck_assert_int_eq(depth, -1);
}

static char *turn_with(const char *base, const char *from, const char *to);

/* --- Turns ------------------------------------------------------------ */

START_TEST(test_turn_minimal_canonical)
{
	aptix_turn t, u;
	aptix_buf out = APTIX_BUF_INIT;

	min_turn(&t);
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), 0);
	ck_assert_str_eq(out.ptr, MIN_TURN);
	assert_canonical_shape(out.ptr, out.len);

	/* serialize appends */
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), 0);
	ck_assert_uint_eq(out.len, 2 * strlen(MIN_TURN));

	ck_assert_int_eq(aptix_turn_parse(&u, MIN_TURN, strlen(MIN_TURN)), 0);
	assert_turn_eq(&t, &u);
	ck_assert_ptr_null(u.mode);
	ck_assert_ptr_null(u.chunks);
	ck_assert_int_eq(aptix_oid_is_zero(&u.answer), 1);
	aptix_turn_release(&u);
	aptix_turn_release(&t);
	/* release resets: a second one is harmless */
	aptix_turn_release(&t);
	aptix_turn_release(NULL);
	aptix_buf_release(&out);
}
END_TEST

START_TEST(test_turn_round_trip_full)
{
	static const char *const keys[] = {
		"answer", "chain_expires_at", "chain_restarted", "chunks",
		"conversation", "created_at", "errors", "files",
		"instruction", "mode", "model", "previous_response_id",
		"repo", "request", "response", "response_at", "response_id",
		"seq", "status", "status_at", "usage", "v", "warnings",
		"workspace"
	};
	aptix_turn t, u;
	aptix_buf out = APTIX_BUF_INIT, again = APTIX_BUF_INIT;
	size_t i;

	full_turn(&t);
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), 0);
	assert_canonical_shape(out.ptr, out.len);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char pat[64];

		snprintf(pat, sizeof(pat), "\"%s\":", keys[i]);
		ck_assert_msg(strstr(out.ptr, pat) != NULL, "no %s", pat);
	}
	ck_assert_ptr_nonnull(strstr(out.ptr, "\"score_micro\":-5"));
	ck_assert_ptr_nonnull(strstr(out.ptr, "\"chain_restarted\":true"));
	ck_assert_ptr_nonnull(strstr(out.ptr, "\"too_large\":false"));

	ck_assert_int_eq(aptix_turn_parse(&u, out.ptr, out.len), 0);
	assert_turn_eq(&t, &u);
	ck_assert_int_eq(aptix_turn_serialize(&again, &u), 0);
	ck_assert_uint_eq(again.len, out.len);
	ck_assert_int_eq(memcmp(again.ptr, out.ptr, out.len), 0);

	/* the loose reader takes canonical input too */
	aptix_turn_release(&u);
	ck_assert_int_eq(aptix_turn_from_json(&u, out.ptr, out.len), 0);
	assert_turn_eq(&t, &u);
	ck_assert_int_eq(aptix_object_validate(APTIX_OBJ_TURN, out.ptr,
					       out.len), 0);

	aptix_turn_release(&u);
	aptix_turn_release(&t);
	aptix_buf_release(&out);
	aptix_buf_release(&again);
}
END_TEST

START_TEST(test_turn_serialize_errors)
{
	aptix_turn t;
	aptix_buf out = APTIX_BUF_INIT;

	aptix_turn_init(&t);
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), APTIX_EINVALID);
	assert_error_names("conversation");
	aptix_turn_release(&t);

	min_turn(&t);
	memset(&t.instruction, 0, sizeof(t.instruction));
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), APTIX_EINVALID);
	assert_error_names("instruction");
	aptix_turn_release(&t);

	min_turn(&t);
	t.seq = 0;
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), APTIX_EINVALID);
	assert_error_names("seq");
	aptix_turn_release(&t);

	min_turn(&t);
	t.conversation[0] = '\0';
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), APTIX_EINVALID);
	assert_error_names("conversation");
	aptix_turn_release(&t);

	full_turn(&t);
	t.chunks[1].end_line = 0;
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), APTIX_EINVALID);
	assert_error_names("start_line");
	aptix_turn_release(&t);

	full_turn(&t);
	t.files[0].size = -1;
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), APTIX_EINVALID);
	assert_error_names("size");
	aptix_turn_release(&t);

	/* not UTF-8 */
	min_turn(&t);
	t.model = xstrdup("bad \xff byte");
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), APTIX_EINVALID);
	assert_error_names("model");
	aptix_turn_release(&t);

	full_turn(&t);
	free(t.warnings[1]);
	t.warnings[1] = xstrdup("\xc3");
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), APTIX_EINVALID);
	assert_error_names("warnings");
	aptix_turn_release(&t);

	/* beyond the integers JSON readers represent exactly */
	min_turn(&t);
	t.created_at = (int64_t)1 << 60;
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), APTIX_EINVALID);
	aptix_turn_release(&t);

	ck_assert_uint_eq(out.len, 0);
	aptix_buf_release(&out);
}
END_TEST

START_TEST(test_escaping)
{
	aptix_turn t, u;
	aptix_buf out = APTIX_BUF_INIT, expect = APTIX_BUF_INIT;
	char raw[64];
	int c, n = 0;

	/* every control character, DEL, quote, backslash, slash, UTF-8 */
	for (c = 1; c < 0x20; c++)
		raw[n++] = (char)c;
	raw[n++] = 0x7f;
	raw[n++] = '"';
	raw[n++] = '\\';
	raw[n++] = '/';
	raw[n++] = '\'';
	memcpy(raw + n, "\xc3\xa9\xe2\x82\xac", 5);	/* e-acute, euro */
	n += 5;
	raw[n] = '\0';

	aptix_buf_putc(&expect, '"');
	for (c = 1; c < 0x20; c++) {
		switch (c) {
		case '\b': aptix_buf_puts(&expect, "\\b"); break;
		case '\t': aptix_buf_puts(&expect, "\\t"); break;
		case '\n': aptix_buf_puts(&expect, "\\n"); break;
		case '\f': aptix_buf_puts(&expect, "\\f"); break;
		case '\r': aptix_buf_puts(&expect, "\\r"); break;
		default: aptix_buf_printf(&expect, "\\u%04x", c);
		}
	}
	aptix_buf_puts(&expect, "\\u007f\\\"\\\\/'\xc3\xa9\xe2\x82\xac\"");

	min_turn(&t);
	t.nwarnings = 1;
	t.warnings = calloc(1, sizeof(char *));
	ck_assert_ptr_nonnull(t.warnings);
	t.warnings[0] = xstrdup(raw);
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), 0);
	assert_canonical_shape(out.ptr, out.len);
	ck_assert_msg(strstr(out.ptr, expect.ptr) != NULL,
		      "expected %s in %s", expect.ptr, out.ptr);
	ck_assert_ptr_nonnull(strstr(out.ptr, "\\u0001\\u0002"));
	ck_assert_ptr_nonnull(strstr(out.ptr, "\\u001f"));

	ck_assert_int_eq(aptix_turn_parse(&u, out.ptr, out.len), 0);
	ck_assert_uint_eq(u.nwarnings, 1);
	ck_assert_str_eq(u.warnings[0], raw);
	aptix_turn_release(&u);

	/* the same text escaped differently is not canonical */
	{
		char *alt = turn_with(out.ptr, "\\u001f", "\\u001F");

		ck_assert_int_eq(aptix_turn_parse(&u, alt, strlen(alt)),
				 APTIX_ECORRUPT);
		free(alt);
		alt = turn_with(out.ptr, "\\b", "\\u0008");
		ck_assert_int_eq(aptix_turn_parse(&u, alt, strlen(alt)),
				 APTIX_ECORRUPT);
		free(alt);
		alt = turn_with(out.ptr, "\\u007f", "\x7f");
		ck_assert_int_eq(aptix_turn_parse(&u, alt, strlen(alt)),
				 APTIX_ECORRUPT);
		free(alt);
	}

	aptix_turn_release(&t);
	aptix_buf_release(&out);
	aptix_buf_release(&expect);
}
END_TEST

/* A copy of MIN_TURN with the first "from" replaced by "to". */
static char *turn_with(const char *base, const char *from, const char *to)
{
	const char *p = strstr(base, from);
	size_t n;
	char *s;

	ck_assert_msg(p != NULL, "'%s' not in '%s'", from, base);
	n = strlen(base) - strlen(from) + strlen(to);
	s = malloc(n + 1);
	ck_assert_ptr_nonnull(s);
	memcpy(s, base, (size_t)(p - base));
	memcpy(s + (p - base), to, strlen(to));
	strcpy(s + (p - base) + strlen(to), p + strlen(from));
	return s;
}

START_TEST(test_parse_rejects_noncanonical)
{
	static const char *const edits[][2] = {
		{ "{\"conversation\"", "{ \"conversation\"" },	/* space */
		{ "\"seq\":1", "\"seq\": 1" },
		{ "\"seq\":1,", "\"seq\":1 ," },
		{ "\"v\":1}", "\"v\":1 }" },
		{ "\"v\":1}\n", "\"v\":1}\t\n" },
		/* unsorted keys */
		{ "\"conversation\":\"c\",\"created_at\":5",
		  "\"created_at\":5,\"conversation\":\"c\"" },
		{ "\"cached_tokens\":0,\"input_tokens\":0",
		  "\"input_tokens\":0,\"cached_tokens\":0" },
		/* duplicate keys */
		{ "\"seq\":1,", "\"seq\":1,\"seq\":1," },
		/* real numbers */
		{ "\"seq\":1", "\"seq\":1.0" },
		{ "\"created_at\":5", "\"created_at\":5e0" },
		{ "\"created_at\":5", "\"created_at\":0.5e1" },
		/* other spellings of the same numbers and strings */
		{ "\"created_at\":5", "\"created_at\":05" },
		{ "\"total_tokens\":0", "\"total_tokens\":-0" },
		{ "\"conversation\":\"c\"", "\"conversation\":\"\\u0063\"" },
		{ "\"conversation\":\"c\"", "\"conversation\":\"c\\/\"" },
		/* NUL, escaped or raw */
		{ "\"conversation\":\"c\"", "\"conversation\":\"c\\u0000\"" },
		/* line endings */
		{ "}\n", "}\r\n" },
		{ "}\n", "}\n\n" },
		{ "}\n", "}" },
		{ "{", "\n{" },
		/* not JSON, or not an object */
		{ "\"v\":1}", "\"v\":1" },
		{ "\"v\":1}", "\"v\":1}}" },
	};
	static const char *const whole[] = {
		"", "\n", "[]\n", "\"turn\"\n", "null\n", "1\n", "{}\n",
	};
	aptix_turn t;
	size_t i;

	for (i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		char *s = turn_with(MIN_TURN, edits[i][0], edits[i][1]);
		int r;

		aptix_error_clear();
		r = aptix_turn_parse(&t, s, strlen(s));
		ck_assert_msg(r == APTIX_ECORRUPT, "accepted (%d): %s", r, s);
		ck_assert_ptr_null(t.conversation);	/* left clean */
		ck_assert_str_ne(errmsg(), "no error");
		ck_assert_int_eq(aptix_object_validate(APTIX_OBJ_TURN, s,
						       strlen(s)),
				 APTIX_ECORRUPT);
		free(s);
	}
	for (i = 0; i < sizeof(whole) / sizeof(whole[0]); i++)
		ck_assert_msg(aptix_turn_parse(&t, whole[i], strlen(whole[i]))
			      == APTIX_ECORRUPT, "accepted '%s'", whole[i]);

	/* a raw NUL byte anywhere */
	{
		char *s = xstrdup(MIN_TURN);

		s[18] = '\0';
		ck_assert_int_eq(aptix_turn_parse(&t, s, strlen(MIN_TURN)),
				 APTIX_ECORRUPT);
		free(s);
	}
	/* a missing required field in otherwise canonical bytes */
	{
		char *s = turn_with(MIN_TURN, "\"seq\":1,", "");

		ck_assert_int_eq(aptix_turn_parse(&t, s, strlen(s)),
				 APTIX_ECORRUPT);
		assert_error_names("seq");
		free(s);
	}
	/* the unmodified text is accepted */
	ck_assert_int_eq(aptix_turn_parse(&t, MIN_TURN, strlen(MIN_TURN)), 0);
	aptix_turn_release(&t);
}
END_TEST

START_TEST(test_version)
{
	aptix_turn t;
	aptix_session s;
	/* version 2 is a turn with tool calls: 3 is the first newer one */
	char *v3 = turn_with(MIN_TURN, "\"v\":1", "\"v\":3");
	char *v0 = turn_with(MIN_TURN, "\"v\":1", "\"v\":0");
	char *vs = turn_with(MIN_TURN, "\"v\":1", "\"v\":\"1\"");
	char *nov = turn_with(MIN_TURN, ",\"v\":1", "");
	char *s2 = turn_with(MIN_SESSION, "\"v\":1", "\"v\":2");
	char *s0 = turn_with(MIN_SESSION, "\"v\":1", "\"v\":0");
	/* a newer version may change anything, even required fields */
	char *v9 = turn_with(MIN_TURN, "\"seq\":1,", "");
	char *v9b = turn_with(v9, "\"v\":1", "\"v\":99");

	ck_assert_int_eq(aptix_turn_parse(&t, v3, strlen(v3)), APTIX_EVERSION);
	ck_assert_ptr_nonnull(strstr(errmsg(), "upgrade"));
	ck_assert_int_eq(aptix_turn_parse(&t, v9b, strlen(v9b)),
			 APTIX_EVERSION);
	ck_assert_int_eq(aptix_object_validate(APTIX_OBJ_TURN, v3, strlen(v3)),
			 APTIX_EVERSION);
	ck_assert_int_eq(aptix_turn_from_json(&t, v3, strlen(v3)),
			 APTIX_EVERSION);
	ck_assert_int_eq(aptix_turn_parse(&t, v0, strlen(v0)), APTIX_ECORRUPT);
	assert_error_names("v");
	ck_assert_int_eq(aptix_turn_parse(&t, vs, strlen(vs)), APTIX_ECORRUPT);
	ck_assert_int_eq(aptix_turn_parse(&t, nov, strlen(nov)),
			 APTIX_ECORRUPT);
	assert_error_names("v");

	ck_assert_int_eq(aptix_session_parse(&s, s2, strlen(s2)),
			 APTIX_EVERSION);
	ck_assert_int_eq(aptix_object_validate(APTIX_OBJ_SESSION, s2,
					       strlen(s2)), APTIX_EVERSION);
	ck_assert_int_eq(aptix_session_from_json(&s, s2, strlen(s2)),
			 APTIX_EVERSION);
	ck_assert_int_eq(aptix_session_parse(&s, s0, strlen(s0)),
			 APTIX_ECORRUPT);
	free(v3);
	free(v0);
	free(vs);
	free(nov);
	free(s2);
	free(s0);
	free(v9);
	free(v9b);
}
END_TEST

START_TEST(test_unknown_keys)
{
	aptix_turn t;
	aptix_session s;
	/* unknown keys in sorted place: top level, usage, a chunk */
	char *top = turn_with(MIN_TURN, "\"v\":1}", "\"v\":1,\"zz\":{\"a\":[1]}}");
	char *use = turn_with(MIN_TURN, "\"input_tokens\"",
			      "\"extra_tokens\":9,\"input_tokens\"");
	char *st = turn_with(MIN_SESSION, "\"session_type\"",
			     "\"color\":\"red\",\"session_type\"");
	char *rs = turn_with(MIN_SESSION, "\"usage\":{\"completion",
			     "\"retries\":2,\"usage\":{\"completion");
	char *stop = turn_with(MIN_SESSION, "\"v\":1}", "\"v\":1,\"w\":true}");

	/* stored objects from a newer writer: ignored */
	ck_assert_int_eq(aptix_turn_parse(&t, top, strlen(top)), 0);
	ck_assert_str_eq(t.conversation, "c");
	aptix_turn_release(&t);
	ck_assert_int_eq(aptix_turn_parse(&t, use, strlen(use)), 0);
	aptix_turn_release(&t);
	ck_assert_int_eq(aptix_session_parse(&s, st, strlen(st)), 0);
	ck_assert_str_eq(s.session_type, "agent");
	aptix_session_release(&s);
	ck_assert_int_eq(aptix_session_parse(&s, rs, strlen(rs)), 0);
	aptix_session_release(&s);
	ck_assert_int_eq(aptix_session_parse(&s, stop, strlen(stop)), 0);
	aptix_session_release(&s);

	/* input from users: rejected, naming the key */
	ck_assert_int_eq(aptix_turn_from_json(&t, top, strlen(top)),
			 APTIX_EINVALID);
	assert_error_names("zz");
	ck_assert_ptr_nonnull(strstr(errmsg(), "unknown"));
	ck_assert_ptr_null(t.conversation);
	ck_assert_int_eq(aptix_turn_from_json(&t, use, strlen(use)),
			 APTIX_EINVALID);
	assert_error_names("extra_tokens");
	ck_assert_int_eq(aptix_session_from_json(&s, st, strlen(st)),
			 APTIX_EINVALID);
	assert_error_names("color");
	ck_assert_int_eq(aptix_session_from_json(&s, rs, strlen(rs)),
			 APTIX_EINVALID);
	assert_error_names("retries");
	ck_assert_int_eq(aptix_session_from_json(&s, stop, strlen(stop)),
			 APTIX_EINVALID);
	assert_error_names("w");

	free(top);
	free(use);
	free(st);
	free(rs);
	free(stop);
}
END_TEST

START_TEST(test_turn_from_json)
{
	static const char loose[] =
		"{\n  \"v\": 1,\n  \"seq\": 1, \"status\": \"pending\",\n"
		"  \"instruction\": \"" OID1 "\",\n"
		"  \"usage\": {\"total_tokens\": 0, \"input_tokens\": 0,"
		" \"output_tokens\": 0, \"cached_tokens\": 0,"
		" \"reasoning_tokens\": 0, \"model_requests\": 0},\n"
		"  \"created_at\": 5, \"status_at\": 5,"
		" \"conversation\": \"c\"\n}\n";
	/* optional parts may be left out: no v, no usage */
	static const char lean[] =
		"{\"conversation\":\"c\",\"seq\":1,\"status\":\"pending\","
		"\"instruction\":\"" OID1 "\",\"created_at\":5,"
		"\"status_at\":5}";
	aptix_turn t;
	aptix_buf out = APTIX_BUF_INIT;

	ck_assert_int_eq(aptix_turn_from_json(&t, loose, strlen(loose)), 0);
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), 0);
	ck_assert_str_eq(out.ptr, MIN_TURN);
	aptix_turn_release(&t);
	aptix_buf_clear(&out);

	ck_assert_int_eq(aptix_turn_from_json(&t, lean, strlen(lean)), 0);
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), 0);
	ck_assert_str_eq(out.ptr, MIN_TURN);
	aptix_turn_release(&t);
	aptix_buf_release(&out);
}
END_TEST

/* The work tree's commit, branch and dirty flag (issue 12). */
START_TEST(test_turn_worktree)
{
	static const char with[] =
		"{\"conversation\":\"c\",\"created_at\":5,"
		"\"instruction\":\"" OID1 "\",\"seq\":1,"
		"\"status\":\"pending\",\"status_at\":5," USAGE0 ",\"v\":1,"
		"\"worktree\":{\"branch\":\"main\",\"commit\":"
		"\"0123456789abcdef0123456789abcdef01234567\","
		"\"dirty\":true}}\n";
	aptix_turn t, back;
	aptix_buf out = APTIX_BUF_INIT;

	min_turn(&t);
	t.has_worktree = 1;
	t.worktree.branch = xstrdup("main");
	t.worktree.commit = xstrdup("0123456789abcdef0123456789abcdef"
				    "01234567");
	t.worktree.dirty = 1;
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), 0);
	ck_assert_str_eq(out.ptr, with);
	ck_assert_int_eq(aptix_turn_parse(&back, out.ptr, out.len), 0);
	ck_assert_int_eq(back.has_worktree, 1);
	ck_assert_str_eq(back.worktree.branch, "main");
	ck_assert_str_eq(back.worktree.commit, t.worktree.commit);
	ck_assert_int_eq(back.worktree.dirty, 1);
	aptix_turn_release(&back);

	/* unborn and detached: only the dirty flag, false */
	free(t.worktree.branch);
	free(t.worktree.commit);
	t.worktree.branch = t.worktree.commit = NULL;
	t.worktree.dirty = 0;
	aptix_buf_clear(&out);
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), 0);
	ck_assert_ptr_nonnull(strstr(out.ptr,
				     "\"worktree\":{\"dirty\":false}}"));
	ck_assert_int_eq(aptix_turn_parse(&back, out.ptr, out.len), 0);
	ck_assert_int_eq(back.has_worktree, 1);
	ck_assert_ptr_null(back.worktree.branch);
	ck_assert_ptr_null(back.worktree.commit);
	aptix_turn_release(&back);

	/* a bad commit is refused on write */
	t.worktree.commit = xstrdup("not-hex");
	aptix_buf_clear(&out);
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(errmsg(), "'commit'"));

	/* no work tree: no field */
	aptix_turn_release(&t);
	min_turn(&t);
	aptix_buf_clear(&out);
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), 0);
	ck_assert_str_eq(out.ptr, MIN_TURN);
	ck_assert_int_eq(aptix_turn_parse(&back, out.ptr, out.len), 0);
	ck_assert_int_eq(back.has_worktree, 0);
	aptix_turn_release(&back);
	aptix_turn_release(&t);
	aptix_buf_release(&out);
}
END_TEST

struct bad_input {
	const char *from, *to;	/* edit of MIN_TURN */
	const char *field;	/* the field the message must name */
};

START_TEST(test_turn_from_json_errors)
{
	static const struct bad_input bad[] = {
		{ "\"conversation\":\"c\",", "", "conversation" },
		{ "\"conversation\":\"c\"", "\"conversation\":7",
		  "conversation" },
		{ "\"conversation\":\"c\"", "\"conversation\":\"\"",
		  "conversation" },
		{ "\"seq\":1", "\"seq\":\"1\"", "seq" },
		{ "\"seq\":1", "\"seq\":0", "seq" },
		{ "\"created_at\":5,", "", "created_at" },
		{ "\"created_at\":5", "\"created_at\":null", "created_at" },
		{ "\"instruction\":\"" OID1 "\",", "", "instruction" },
		{ "\"instruction\":\"" OID1 "\"", "\"instruction\":\"111\"",
		  "instruction" },
		{ "\"instruction\":\"1111", "\"instruction\":\"A111",
		  "instruction" },
		{ "\"instruction\":\"1111111111111111111111111111111111111111"
		  "111111111111111111111111\"",
		  "\"instruction\":\"0000000000000000000000000000000000000000"
		  "000000000000000000000000\"", "instruction" },
		{ "\"status\":\"pending\"", "\"status\":\"done\"", "status" },
		{ "\"status\":\"pending\",", "", "status" },
		{ "\"status\":\"pending\"", "\"status\":1", "status" },
		{ "\"usage\":{", "\"usage\":{\"bogus\":1,", "bogus" },
		{ "\"input_tokens\":0", "\"input_tokens\":\"0\"",
		  "input_tokens" },
		{ "\"cached_tokens\":0,", "", "cached_tokens" },
		{ USAGE0, "\"usage\":[]", "usage" },
		{ "\"v\":1", "\"v\":1,\"warnings\":[1]", "warnings" },
		{ "\"v\":1", "\"v\":1,\"warnings\":\"w\"", "warnings" },
		{ "\"v\":1", "\"v\":1,\"chain_restarted\":1",
		  "chain_restarted" },
		{ "\"v\":1", "\"v\":1,\"mode\":false", "mode" },
		{ "\"v\":1", "\"v\":1,\"answer\":\"x\"", "answer" },
		{ "\"v\":1", "\"v\":1,\"chunks\":{}", "chunks" },
		{ "\"v\":1", "\"v\":1,\"chunks\":[1]", "chunks" },
		{ "\"v\":1", "\"v\":1,\"chunks\":[{\"chunk_id\":\"k\","
		  "\"content_hash\":\"h\",\"end_line\":2,\"score_micro\":1,"
		  "\"sent\":true,\"start_line\":1}]", "path" },
		{ "\"v\":1", "\"v\":1,\"chunks\":[{\"chunk_id\":\"k\","
		  "\"content_hash\":\"h\",\"end_line\":2,\"path\":\"p\","
		  "\"score_micro\":1,\"sent\":true,\"start_line\":3}]",
		  "start_line" },
		{ "\"v\":1", "\"v\":1,\"files\":[{\"binary\":false,"
		  "\"path\":\"p\",\"sent\":false,\"sha256\":\"s\","
		  "\"size\":\"big\",\"too_large\":false,\"touched\":false}]",
		  "size" },
		{ "\"v\":1", "\"v\":1,\"files\":[{\"binary\":false,"
		  "\"path\":\"p\",\"sent\":false,\"sha256\":\"s\","
		  "\"size\":1,\"too_large\":false,\"touched\":false,"
		  "\"mtime\":3}]", "mtime" },
		{ "\"v\":1", "\"v\":1,\"worktree\":true", "worktree" },
		{ "\"v\":1", "\"v\":1,\"worktree\":{}", "dirty" },
		{ "\"v\":1", "\"v\":1,\"worktree\":{\"dirty\":false,"
		  "\"commit\":\"ABCD\"}", "commit" },
		{ "\"v\":1", "\"v\":1,\"worktree\":{\"dirty\":false,"
		  "\"branch\":\"\"}", "branch" },
		{ "\"v\":1", "\"v\":1,\"worktree\":{\"dirty\":false,"
		  "\"upstream\":\"x\"}", "upstream" },
		{ "\"v\":1", "\"v\":1,\"worktree\":{\"dirty\":false,"
		  "\"remote\":\"\"}", "remote" },
	};
	aptix_turn t;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *s = turn_with(MIN_TURN, bad[i].from, bad[i].to);
		char pat[80];
		int r;

		aptix_error_clear();
		r = aptix_turn_from_json(&t, s, strlen(s));
		ck_assert_msg(r == APTIX_EINVALID, "%zu: got %d for %s", i, r,
			      s);
		snprintf(pat, sizeof(pat), "'%s'", bad[i].field);
		ck_assert_msg(strstr(errmsg(), pat) != NULL,
			      "%zu: '%s' not named in: %s", i, bad[i].field,
			      errmsg());
		ck_assert_ptr_null(t.conversation);
		ck_assert_ptr_null(t.chunks);
		aptix_turn_release(&t);
		free(s);
	}

	/* not JSON, or not an object */
	ck_assert_int_eq(aptix_turn_from_json(&t, "{", 1), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(errmsg(), "malformed JSON"));
	ck_assert_int_eq(aptix_turn_from_json(&t, "[1]", 3), APTIX_EINVALID);
	ck_assert_int_eq(aptix_turn_from_json(&t, "", 0), APTIX_EINVALID);
	/* duplicate keys, even in loose input */
	ck_assert_int_eq(aptix_turn_from_json(&t, "{\"seq\":1,\"seq\":2}", 17),
			 APTIX_EINVALID);
}
END_TEST

/* --- Sessions --------------------------------------------------------- */

START_TEST(test_session_round_trip)
{
	aptix_session s, u;
	aptix_buf out = APTIX_BUF_INIT, again = APTIX_BUF_INIT;

	min_session(&s);
	ck_assert_int_eq(aptix_session_serialize(&out, &s), 0);
	ck_assert_str_eq(out.ptr, MIN_SESSION);
	assert_canonical_shape(out.ptr, out.len);
	ck_assert_int_eq(aptix_session_parse(&u, out.ptr, out.len), 0);
	assert_session_eq(&s, &u);
	ck_assert_int_eq(u.has_parent, 0);
	aptix_session_release(&u);
	aptix_session_release(&s);
	aptix_buf_clear(&out);

	full_session(&s);
	ck_assert_int_eq(aptix_session_serialize(&out, &s), 0);
	assert_canonical_shape(out.ptr, out.len);
	ck_assert_ptr_nonnull(strstr(out.ptr,
		"\"status\":\"awaiting_tool_results\""));
	ck_assert_ptr_nonnull(strstr(out.ptr, "\"parent\":\"" OID1 "\""));
	ck_assert_ptr_nonnull(strstr(out.ptr, "\"forked_from\":\"conv-41\""));
	ck_assert_ptr_nonnull(strstr(out.ptr, "\"duration_ms\":12345"));
	ck_assert_ptr_nonnull(strstr(out.ptr, "\"prompt_tokens\":10"));
	ck_assert_ptr_nonnull(strstr(out.ptr, "\"completion_tokens\":20"));
	ck_assert_int_eq(aptix_session_parse(&u, out.ptr, out.len), 0);
	assert_session_eq(&s, &u);
	ck_assert_int_eq(aptix_session_serialize(&again, &u), 0);
	ck_assert_uint_eq(again.len, out.len);
	ck_assert_int_eq(memcmp(again.ptr, out.ptr, out.len), 0);
	aptix_session_release(&u);

	ck_assert_int_eq(aptix_session_from_json(&u, out.ptr, out.len), 0);
	assert_session_eq(&s, &u);
	aptix_session_release(&u);
	aptix_session_release(&s);
	aptix_session_release(NULL);
	aptix_buf_release(&out);
	aptix_buf_release(&again);
}
END_TEST

START_TEST(test_session_statuses)
{
	static const char *const names[] = {
		"created", "committed", "awaiting_tool_results", "failed",
		"archived"
	};
	aptix_session s, u;
	aptix_buf out = APTIX_BUF_INIT;
	int i;

	for (i = 0; i < 5; i++) {
		ck_assert_str_eq(aptix_session_status_name(
					 (aptix_session_status)i), names[i]);
		ck_assert_int_eq(aptix_session_status_from_name(names[i]), i);
		min_session(&s);
		s.status = (aptix_session_status)i;
		aptix_buf_clear(&out);
		ck_assert_int_eq(aptix_session_serialize(&out, &s), 0);
		ck_assert_int_eq(aptix_session_parse(&u, out.ptr, out.len), 0);
		ck_assert_int_eq(u.status, i);
		aptix_session_release(&u);
		aptix_session_release(&s);
	}
	ck_assert_str_eq(aptix_session_status_name((aptix_session_status)9),
			 "unknown");
	ck_assert_int_eq(aptix_session_status_from_name("Committed"), -1);
	ck_assert_str_eq(aptix_turn_status_name(APTIX_TURN_PENDING), "pending");
	ck_assert_str_eq(aptix_turn_status_name(APTIX_TURN_COMPLETED),
			 "completed");
	ck_assert_str_eq(aptix_turn_status_name(APTIX_TURN_FAILED), "failed");
	ck_assert_str_eq(aptix_turn_status_name((aptix_turn_status)3),
			 "unknown");
	aptix_buf_release(&out);
}
END_TEST

START_TEST(test_session_errors)
{
	static const struct bad_input bad[] = {
		{ "\"turn\":\"" OID2 "\",", "", "turn" },
		{ "\"conversation\":\"c\",", "", "conversation" },
		{ "\"status\":\"created\"", "\"status\":\"done\"", "status" },
		{ "\"duration_ms\":0", "\"duration_ms\":-1", "duration_ms" },
		{ "\"duration_ms\":0", "\"duration_ms\":\"0\"", "duration_ms" },
		{ "\"created_at\":5", "\"created_at\":5,\"parent\":\"0000000000"
		  "000000000000000000000000000000000000000000000000000000\"",
		  "parent" },
		{ "\"created_at\":5", "\"created_at\":5,\"parent\":\"xyz\"",
		  "parent" },
		{ "\"metadata\":{", "\"metadata\":{\"title\":3,", "title" },
		{ "\"metadata\":{\"session_type\":\"agent\"}",
		  "\"metadata\":[]", "metadata" },
		{ "\"prompt_tokens\":0", "\"prompt_tokens\":true",
		  "prompt_tokens" },
	};
	aptix_session s;
	aptix_buf out = APTIX_BUF_INIT;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *j = turn_with(MIN_SESSION, bad[i].from, bad[i].to);
		char pat[80];

		aptix_error_clear();
		ck_assert_msg(aptix_session_from_json(&s, j, strlen(j)) ==
			      APTIX_EINVALID, "%zu accepted: %s", i, j);
		snprintf(pat, sizeof(pat), "'%s'", bad[i].field);
		ck_assert_msg(strstr(errmsg(), pat) != NULL,
			      "%zu: '%s' not named in: %s", i, bad[i].field,
			      errmsg());
		ck_assert_ptr_null(s.conversation);
		free(j);
	}

	/* loose input may leave out metadata: the type defaults to agent */
	{
		static const char j[] = "{\"conversation\":\"c\","
			"\"created_at\":5,\"status\":\"created\","
			"\"turn\":\"" OID2 "\"}";

		ck_assert_int_eq(aptix_session_from_json(&s, j, strlen(j)), 0);
		ck_assert_str_eq(s.session_type, "agent");
		ck_assert_int_eq(aptix_session_serialize(&out, &s), 0);
		ck_assert_str_eq(out.ptr, MIN_SESSION);
		aptix_session_release(&s);
	}

	/* serializing an incomplete session */
	aptix_session_init(&s);
	ck_assert_int_eq(aptix_session_serialize(&out, &s), APTIX_EINVALID);
	assert_error_names("conversation");
	min_session(&s);
	free(s.session_type);
	s.session_type = NULL;
	ck_assert_int_eq(aptix_session_serialize(&out, &s), APTIX_EINVALID);
	assert_error_names("session_type");
	aptix_session_release(&s);
	min_session(&s);
	memset(&s.turn, 0, sizeof(s.turn));
	ck_assert_int_eq(aptix_session_serialize(&out, &s), APTIX_EINVALID);
	assert_error_names("turn");
	aptix_session_release(&s);
	min_session(&s);
	s.duration_ms = -3;
	ck_assert_int_eq(aptix_session_serialize(&out, &s), APTIX_EINVALID);
	assert_error_names("duration_ms");
	aptix_session_release(&s);

	/* non-canonical session bytes */
	{
		char *j = turn_with(MIN_SESSION, "\"metadata\":{",
				    "\"metadata\": {");

		ck_assert_int_eq(aptix_session_parse(&s, j, strlen(j)),
				 APTIX_ECORRUPT);
		free(j);
		j = turn_with(MIN_SESSION, "\"run_summary\":{\"duration_ms\":0,"
			      SUSAGE0 "},", "");
		ck_assert_int_eq(aptix_session_parse(&s, j, strlen(j)),
				 APTIX_ECORRUPT);
		assert_error_names("run_summary");
		free(j);
	}
	aptix_buf_release(&out);
}
END_TEST

/* --- References ------------------------------------------------------- */

struct seen_ref {
	aptix_oid id;
	aptix_otype type;
	char field[32];
};

struct ref_log {
	struct seen_ref refs[16];
	int n, stop_after, stop_code;
};

static int log_ref(const aptix_oid *id, aptix_otype type, const char *field,
		   void *payload)
{
	struct ref_log *log = payload;

	ck_assert_int_lt(log->n, 16);
	log->refs[log->n].id = *id;
	log->refs[log->n].type = type;
	snprintf(log->refs[log->n].field, sizeof(log->refs[0].field), "%s",
		 field);
	log->n++;
	if (log->stop_after && log->n == log->stop_after)
		return log->stop_code;
	return 0;
}

static void assert_ref(const struct ref_log *log, int i, const aptix_oid *id,
		       aptix_otype type, const char *field)
{
	ck_assert_int_lt(i, log->n);
	assert_oid_eq(&log->refs[i].id, id);
	ck_assert_int_eq(log->refs[i].type, type);
	ck_assert_str_eq(log->refs[i].field, field);
}

START_TEST(test_foreach_ref)
{
	aptix_turn t;
	aptix_session s;
	aptix_buf out = APTIX_BUF_INIT;
	struct ref_log log;
	aptix_oid id;

	full_turn(&t);
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), 0);
	memset(&log, 0, sizeof(log));
	ck_assert_int_eq(aptix_object_foreach_ref(APTIX_OBJ_TURN, out.ptr,
						  out.len, log_ref, &log), 0);
	ck_assert_int_eq(log.n, 6);
	assert_ref(&log, 0, &t.instruction, APTIX_OBJ_BLOB, "instruction");
	assert_ref(&log, 1, &t.answer, APTIX_OBJ_BLOB, "answer");
	assert_ref(&log, 2, &t.request, APTIX_OBJ_BLOB, "request");
	assert_ref(&log, 3, &t.response, APTIX_OBJ_BLOB, "response");
	/* only the first chunk has a snippet, only the first file content */
	assert_ref(&log, 4, &t.chunks[0].snippet, APTIX_OBJ_BLOB,
		   "chunk snippet");
	assert_ref(&log, 5, &t.files[0].content, APTIX_OBJ_BLOB,
		   "file content");

	/* a non-zero return stops the walk and is passed back */
	memset(&log, 0, sizeof(log));
	log.stop_after = 2;
	log.stop_code = 42;
	ck_assert_int_eq(aptix_object_foreach_ref(APTIX_OBJ_TURN, out.ptr,
						  out.len, log_ref, &log), 42);
	ck_assert_int_eq(log.n, 2);
	aptix_turn_release(&t);

	/* the minimal turn: the instruction alone */
	memset(&log, 0, sizeof(log));
	ck_assert_int_eq(aptix_object_foreach_ref(APTIX_OBJ_TURN, MIN_TURN,
						  strlen(MIN_TURN), log_ref,
						  &log), 0);
	ck_assert_int_eq(log.n, 1);
	id = oid_of(OID1);
	assert_ref(&log, 0, &id, APTIX_OBJ_BLOB, "instruction");

	/* sessions: parent (a session) and turn */
	aptix_buf_clear(&out);
	full_session(&s);
	ck_assert_int_eq(aptix_session_serialize(&out, &s), 0);
	memset(&log, 0, sizeof(log));
	ck_assert_int_eq(aptix_object_foreach_ref(APTIX_OBJ_SESSION, out.ptr,
						  out.len, log_ref, &log), 0);
	ck_assert_int_eq(log.n, 2);
	assert_ref(&log, 0, &s.parent, APTIX_OBJ_SESSION, "parent");
	assert_ref(&log, 1, &s.turn, APTIX_OBJ_TURN, "turn");
	aptix_session_release(&s);

	memset(&log, 0, sizeof(log));
	ck_assert_int_eq(aptix_object_foreach_ref(APTIX_OBJ_SESSION,
						  MIN_SESSION,
						  strlen(MIN_SESSION),
						  log_ref, &log), 0);
	ck_assert_int_eq(log.n, 1);
	id = oid_of(OID2);
	assert_ref(&log, 0, &id, APTIX_OBJ_TURN, "turn");

	/* blobs reference nothing; damaged objects are reported */
	memset(&log, 0, sizeof(log));
	ck_assert_int_eq(aptix_object_foreach_ref(APTIX_OBJ_BLOB, MIN_TURN,
						  strlen(MIN_TURN), log_ref,
						  &log), 0);
	ck_assert_int_eq(log.n, 0);
	ck_assert_int_eq(aptix_object_foreach_ref(APTIX_OBJ_TURN, "{}\n", 3,
						  log_ref, &log),
			 APTIX_ECORRUPT);
	ck_assert_int_eq(aptix_object_foreach_ref(APTIX_OBJ_SESSION,
						  MIN_TURN, strlen(MIN_TURN),
						  log_ref, &log),
			 APTIX_ECORRUPT);
	ck_assert_int_eq(log.n, 0);
	aptix_buf_release(&out);
}
END_TEST

/* aptix_object_scan_refs() gives what aptix_object_foreach_ref() gives. */
static void assert_scan_same(aptix_otype type, const char *text, size_t len,
			     int want_failed)
{
	struct ref_log a, b;
	int i, failed = -1;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	ck_assert_int_eq(aptix_object_foreach_ref(type, text, len, log_ref,
						  &a), 0);
	ck_assert_int_eq(aptix_object_scan_refs(type, text, len, log_ref, &b,
						&failed), 0);
	ck_assert_int_eq(b.n, a.n);
	for (i = 0; i < a.n; i++)
		assert_ref(&b, i, &a.refs[i].id, a.refs[i].type,
			   a.refs[i].field);
	ck_assert_int_eq(failed, want_failed);
}

START_TEST(test_scan_refs)
{
	aptix_turn t;
	aptix_session s;
	aptix_buf out = APTIX_BUF_INIT;
	struct ref_log log;
	static const char *const bad[] = {
		"", "[]\n", "{", "{\"instruction\":\"" OID1 "\"",
		"{\"instruction\":\"abc\"}\n",
		"{\"instruction\":\"" OID1 "x\"}\n",
		"{\"tool_calls\":[\"nothex\"]}\n",
		"{\"chunks\":[{\"snippet\":\"zz\"}]}\n",
		"{\"instruction\":\"" OID1 "\"} x\n",
	};
	size_t i;

	full_turn(&t);
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), 0);
	assert_scan_same(APTIX_OBJ_TURN, out.ptr, out.len, 0);
	/* tool calls and results too, after the blobs */
	t.version = 2;
	t.ntool_calls = 2;
	t.tool_calls = calloc(2, sizeof(*t.tool_calls));
	t.ntool_results = 1;
	t.tool_results = calloc(1, sizeof(*t.tool_results));
	ck_assert_ptr_nonnull(t.tool_calls);
	ck_assert_ptr_nonnull(t.tool_results);
	t.tool_calls[0] = blob_id("call 1");
	t.tool_calls[1] = blob_id("call 2");
	t.tool_results[0] = blob_id("result");
	aptix_buf_clear(&out);
	ck_assert_int_eq(aptix_turn_serialize(&out, &t), 0);
	assert_scan_same(APTIX_OBJ_TURN, out.ptr, out.len, 0);
	memset(&log, 0, sizeof(log));
	ck_assert_int_eq(aptix_object_scan_refs(APTIX_OBJ_TURN, out.ptr,
						out.len, log_ref, &log, NULL),
			 0);
	ck_assert_int_eq(log.n, 9);
	assert_ref(&log, 8, &t.tool_results[0], APTIX_OBJ_TOOL_RESULT,
		   "tool result");
	/* a non-zero return stops the walk and is passed back */
	memset(&log, 0, sizeof(log));
	log.stop_after = 2;
	log.stop_code = 42;
	ck_assert_int_eq(aptix_object_scan_refs(APTIX_OBJ_TURN, out.ptr,
						out.len, log_ref, &log, NULL),
			 42);
	ck_assert_int_eq(log.n, 2);
	aptix_turn_release(&t);
	assert_scan_same(APTIX_OBJ_TURN, MIN_TURN, strlen(MIN_TURN), 0);

	aptix_buf_clear(&out);
	full_session(&s);
	ck_assert_int_eq(aptix_session_serialize(&out, &s), 0);
	assert_scan_same(APTIX_OBJ_SESSION, out.ptr, out.len, 0);
	s.status = APTIX_SESSION_FAILED;
	aptix_buf_clear(&out);
	ck_assert_int_eq(aptix_session_serialize(&out, &s), 0);
	assert_scan_same(APTIX_OBJ_SESSION, out.ptr, out.len, 1);
	aptix_session_release(&s);
	assert_scan_same(APTIX_OBJ_SESSION, MIN_SESSION, strlen(MIN_SESSION),
			 0);
	/* blobs: nothing */
	assert_scan_same(APTIX_OBJ_BLOB, MIN_TURN, strlen(MIN_TURN), 0);

	/* not JSON, or an id that is not one: damaged */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&log, 0, sizeof(log));
		ck_assert_msg(aptix_object_scan_refs(APTIX_OBJ_TURN, bad[i],
						     strlen(bad[i]), log_ref,
						     &log, NULL) ==
			      APTIX_ECORRUPT, "%s", bad[i]);
		ck_assert_int_eq(log.n, 0);
	}
	aptix_buf_release(&out);
}
END_TEST

START_TEST(test_validate)
{
	ck_assert_int_eq(aptix_object_validate(APTIX_OBJ_BLOB, "\0\xff", 2), 0);
	ck_assert_int_eq(aptix_object_validate(APTIX_OBJ_BLOB, "", 0), 0);
	ck_assert_int_eq(aptix_object_validate(APTIX_OBJ_TURN, MIN_TURN,
					       strlen(MIN_TURN)), 0);
	ck_assert_int_eq(aptix_object_validate(APTIX_OBJ_SESSION, MIN_SESSION,
					       strlen(MIN_SESSION)), 0);
	ck_assert_int_eq(aptix_object_validate(APTIX_OBJ_SESSION, MIN_TURN,
					       strlen(MIN_TURN)),
			 APTIX_ECORRUPT);
	ck_assert_int_eq(aptix_object_validate(APTIX_OBJ_TURN, MIN_SESSION,
					       strlen(MIN_SESSION)),
			 APTIX_ECORRUPT);
	ck_assert_int_eq(aptix_object_validate(APTIX_OBJ_BAD, "", 0),
			 APTIX_EINVALID);
}
END_TEST

START_TEST(test_time_fmt)
{
	char buf[32];

	ck_assert_str_eq(aptix_time_fmt(buf, 0), "1970-01-01T00:00:00.000Z");
	ck_assert_str_eq(aptix_time_fmt(buf, 1700000000123LL),
			 "2023-11-14T22:13:20.123Z");
	ck_assert_str_eq(aptix_time_fmt(buf, -1), "invalid-time");
}
END_TEST

Suite *object_suite(void)
{
	Suite *s = suite_create("object");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_turn_minimal_canonical);
	tcase_add_test(tc, test_turn_round_trip_full);
	tcase_add_test(tc, test_turn_serialize_errors);
	tcase_add_test(tc, test_escaping);
	tcase_add_test(tc, test_parse_rejects_noncanonical);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_unknown_keys);
	tcase_add_test(tc, test_turn_from_json);
	tcase_add_test(tc, test_turn_from_json_errors);
	tcase_add_test(tc, test_turn_worktree);
	tcase_add_test(tc, test_session_round_trip);
	tcase_add_test(tc, test_session_statuses);
	tcase_add_test(tc, test_session_errors);
	tcase_add_test(tc, test_foreach_ref);
	tcase_add_test(tc, test_scan_refs);
	tcase_add_test(tc, test_validate);
	tcase_add_test(tc, test_time_fmt);
	suite_add_tcase(s, tc);
	return s;
}
