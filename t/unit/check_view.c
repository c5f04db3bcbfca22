/*
 * check_view.c - unit tests for src/view/view.c (aptix/view.h): the JSON
 * views of a turn, a session in a list, a conversation summary and a
 * page, over turns made with the recorder in a fresh store.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <stdlib.h>
#include <string.h>

#include "aptix.h"
#include "aptix/index.h"
#include "aptix/record.h"
#include "aptix/view.h"
#include "unit.h"

static char *tmpdir;
static aptix_repo *repo;
/* a root that completed, and a failed attempt after it */
static aptix_record_result root, child;
static char long_instr[3001];

static void record(aptix_record_result *res, const char *instr,
		   const char *answer, aptix_turn_status status,
		   const aptix_oid *parent, int64_t at)
{
	aptix_record_options o = APTIX_RECORD_OPTIONS_INIT;
	static char path[] = "src/main.c", sha[65], model[] = "gpt-5";
	static char cid[] = "c-1", chash[65], cpath[] = "src/lex.c";
	static char err[] = "HTTP 500: boom", conv[] = "conv-1";
	static char *errors[] = { err };
	aptix_file_ref f;
	aptix_chunk_ref c;
	aptix_record_data fd = { "int main;\n", 10 }, cd = { "lex", 3 };
	aptix_turn t;

	memset(sha, 'a', 64);
	memset(chash, 'b', 64);
	memset(&f, 0, sizeof(f));
	memset(&c, 0, sizeof(c));
	aptix_turn_init(&t);
	t.conversation = conv;
	t.status = status;
	t.model = model;
	t.created_at = at;
	t.status_at = at + 500;
	t.usage.input_tokens = 10;
	t.usage.cached_tokens = 4;
	t.usage.output_tokens = 5;
	t.usage.total_tokens = 15;
	t.usage.model_requests = 1;
	f.path = path;
	f.sha256 = sha;
	f.size = 10;
	f.sent = 1;
	t.files = &f;
	t.nfiles = 1;
	c.chunk_id = cid;
	c.path = cpath;
	c.start_line = 3;
	c.end_line = 9;
	c.content_hash = chash;
	c.score = 873000;
	c.sent = 1;
	t.chunks = &c;
	t.nchunks = 1;
	if (status == APTIX_TURN_FAILED) {
		t.errors = errors;
		t.nerrors = 1;
	}
	o.turn = &t;
	o.instruction.ptr = instr;
	o.instruction.len = strlen(instr);
	if (answer) {
		o.answer.ptr = answer;
		o.answer.len = strlen(answer);
	}
	o.request.ptr = "{\"model\":\"gpt-5\"}";
	o.request.len = strlen(o.request.ptr);
	o.file_contents = &fd;
	o.chunk_texts = &cd;
	o.parent = parent;
	o.created_at = at + 600;
	o.transport = "sse";
	ck_assert_msg(aptix_record_commit(res, repo, &o) == 0, "%s",
		      aptix_error_last()->message);
}

static void setup(void)
{
	char *path;
	int existed;

	tmpdir = unit_mkdtemp();
	path = unit_path(tmpdir, ".aptix");
	ck_assert_msg(aptix_repo_init(&repo, tmpdir, &existed) == 0, "%s",
		      aptix_error_last()->message);
	aptix_repo_free(repo);
	ck_assert_int_eq(aptix_repo_open(&repo, path), 0);
	free(path);
	memset(long_instr, 'x', sizeof(long_instr) - 1);
	long_instr[sizeof(long_instr) - 1] = '\0';
	record(&root, long_instr, "the answer", APTIX_TURN_COMPLETED, NULL,
	       1700000000000LL);
	record(&child, "again", NULL, APTIX_TURN_FAILED, &root.session,
	       1700000060000LL);
}

static void teardown(void)
{
	unit_repo_teardown(&repo, &tmpdir);
}

static const char *str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	ck_assert_msg(v != NULL, "no member '%s'", key);
	return json_is_null(v) ? "(null)" : json_string_value(v);
}

static json_int_t num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	ck_assert_msg(json_is_integer(v), "'%s' is no integer", key);
	return json_integer_value(v);
}

START_TEST(test_turn_full)
{
	json_t *v, *x;

	ck_assert_int_eq(aptix_view_turn(&v, repo, &root.session,
					 APTIX_VIEW_FULL), 0);
	ck_assert_str_eq(str(v, "session"), aptix_oid_hex(&root.session));
	ck_assert_str_eq(str(v, "turn"), aptix_oid_hex(&root.turn));
	ck_assert_str_eq(str(v, "parent"), "(null)");
	ck_assert_str_eq(str(v, "conversation"), "conv-1");
	ck_assert_int_eq(num(v, "seq"), 1);
	ck_assert_str_eq(str(v, "status"), "committed");
	ck_assert_str_eq(str(v, "turn_status"), "completed");
	ck_assert(json_is_false(json_object_get(v, "failed")));
	ck_assert_str_eq(str(v, "created_at"), "2023-11-14T22:13:20.000Z");
	ck_assert_int_eq(num(v, "created_at_ms"), 1700000000000LL);
	ck_assert_str_eq(str(v, "status_at"), "2023-11-14T22:13:20.500Z");
	ck_assert_str_eq(str(v, "response_at"), "(null)");
	ck_assert_str_eq(str(v, "instruction"), long_instr);
	ck_assert_str_eq(str(v, "answer"), "the answer");
	ck_assert_ptr_null(json_object_get(v, "instruction_summary"));
	ck_assert_str_eq(str(v, "instruction_id"),
			 aptix_oid_hex(&root.instruction));
	ck_assert_int_eq(strlen(str(v, "request_payload_id")), 64);
	ck_assert_str_eq(str(v, "response_payload_id"), "(null)");
	ck_assert_str_eq(str(v, "model"), "gpt-5");
	ck_assert_str_eq(str(v, "transport"), "sse");
	x = json_object_get(v, "usage");
	ck_assert_int_eq(num(x, "input_tokens"), 10);
	ck_assert_int_eq(num(x, "cached_tokens"), 4);
	ck_assert_int_eq(num(x, "model_requests"), 1);
	ck_assert_int_eq(num(v, "source_count"), 1);
	ck_assert_int_eq(num(v, "file_count"), 1);
	x = json_array_get(json_object_get(v, "sources"), 0);
	ck_assert_str_eq(str(x, "path"), "src/lex.c");
	ck_assert_int_eq(num(x, "score_micro"), 873000);
	ck_assert(json_real_value(json_object_get(x, "score")) == 0.873);
	x = json_array_get(json_object_get(v, "files"), 0);
	ck_assert_str_eq(str(x, "state"), "sent");
	ck_assert_int_eq(num(x, "size"), 10);
	ck_assert_ptr_null(json_object_get(v, "request_payload"));
	json_decref(v);

	ck_assert_int_eq(aptix_view_turn(&v, repo, &root.session,
					 APTIX_VIEW_FULL |
					 APTIX_VIEW_PAYLOADS), 0);
	x = json_object_get(v, "request_payload");
	ck_assert_str_eq(str(x, "model"), "gpt-5");
	ck_assert(json_is_null(json_object_get(v, "response_payload")));
	json_decref(v);
}
END_TEST

/* The summary view: texts cut, no lists, and every member the full has. */
START_TEST(test_turn_summary)
{
	json_t *s, *f, *v;
	const char *key;

	ck_assert_int_eq(aptix_view_turn(&s, repo, &root.session, 0), 0);
	ck_assert_int_eq(aptix_view_turn(&f, repo, &root.session,
					 APTIX_VIEW_FULL), 0);
	ck_assert_int_eq(strlen(str(s, "instruction_summary")),
			 APTIX_VIEW_SUMMARY_BYTES);
	ck_assert_str_eq(str(s, "answer_summary"), "the answer");
	ck_assert_ptr_null(json_object_get(s, "instruction"));
	ck_assert_ptr_null(json_object_get(s, "sources"));
	ck_assert_int_eq(num(s, "source_count"), 1);
	json_object_foreach(s, key, v) {
		if (!strcmp(key, "instruction_summary") ||
		    !strcmp(key, "answer_summary"))
			continue;
		ck_assert_msg(json_equal(v, json_object_get(f, key)),
			      "'%s' differs between the views", key);
	}
	json_decref(s);
	json_decref(f);
}
END_TEST

START_TEST(test_turn_failed_and_missing)
{
	json_t *v;
	aptix_oid none;

	ck_assert_int_eq(aptix_view_turn(&v, repo, &child.session, 0), 0);
	ck_assert(json_is_true(json_object_get(v, "failed")));
	ck_assert_str_eq(str(v, "turn_status"), "failed");
	ck_assert_str_eq(str(v, "parent"), aptix_oid_hex(&root.session));
	ck_assert_int_eq(num(v, "seq"), 2);
	ck_assert_str_eq(str(v, "answer_summary"), "(null)");
	ck_assert_str_eq(json_string_value(json_array_get(
		json_object_get(v, "errors"), 0)), "HTTP 500: boom");
	json_decref(v);

	memset(&none, 0x5a, sizeof(none));
	v = (json_t *)&none;
	ck_assert_int_eq(aptix_view_turn(&v, repo, &none, 0),
			 APTIX_ENOTFOUND);
	ck_assert_ptr_null(v);
}
END_TEST

START_TEST(test_conversation_and_session_info)
{
	aptix_conv_info ci;
	aptix_session_info si;
	json_t *v;

	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "conv-1"), 0);
	v = aptix_view_conversation(&ci);
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(str(v, "conversation"), "conv-1");
	ck_assert_str_eq(str(v, "id"), "conv-1");
	ck_assert_int_eq(num(v, "turn_count"), 1);
	ck_assert_int_eq(num(v, "failed_count"), 1);
	ck_assert_str_eq(str(v, "head"), aptix_oid_hex(&root.session));
	ck_assert_str_eq(str(v, "last_turn_status"), "failed");
	ck_assert_str_eq(str(v, "created_at"), "2023-11-14T22:13:20.600Z");
	ck_assert_str_eq(str(v, "updated_at"), "2023-11-14T22:14:20.600Z");
	ck_assert_str_eq(str(v, "last_turn_at"), str(v, "updated_at"));
	ck_assert(json_is_false(json_object_get(v, "archived")));
	ck_assert_ptr_null(json_object_get(v, "turns"));
	json_decref(v);

	ck_assert_int_eq(aptix_index_session(&si, repo, &child.session), 0);
	v = aptix_view_session_info(&si);
	ck_assert_str_eq(str(v, "session"), aptix_oid_hex(&child.session));
	ck_assert_str_eq(str(v, "parent"), aptix_oid_hex(&root.session));
	ck_assert_int_eq(num(v, "generation"), 2);
	ck_assert(json_is_true(json_object_get(v, "failed")));
	ck_assert_str_eq(str(v, "summary"), "again");
	ck_assert_str_eq(str(v, "created_at"), "2023-11-14T22:14:20.600Z");
	json_decref(v);
}
END_TEST

START_TEST(test_page_and_text)
{
	json_t *v, *a = json_array();

	json_array_append_new(a, json_integer(1));
	v = aptix_view_page(a, "17.x");
	ck_assert_int_eq(json_array_size(json_object_get(v, "items")), 1);
	ck_assert_str_eq(str(v, "next_cursor"), "17.x");
	json_decref(v);
	v = aptix_view_page(json_array(), NULL);
	ck_assert(json_is_null(json_object_get(v, "next_cursor")));
	json_decref(v);

	v = aptix_view_text("a\xff" "b", 3);
	ck_assert_str_eq(json_string_value(v), "a\xef\xbf\xbd" "b");
	json_decref(v);
	v = aptix_view_text("a\0b", 3);
	ck_assert_int_eq(json_string_length(v), 3);
	json_decref(v);
	ck_assert(json_is_null(aptix_view_str(NULL)));
	ck_assert(json_is_null(aptix_view_time(0)));
	ck_assert(json_is_null(aptix_view_id(NULL)));
}
END_TEST

Suite *view_suite(void)
{
	Suite *s = suite_create("view");
	TCase *tc = tcase_create("views");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_turn_full);
	tcase_add_test(tc, test_turn_summary);
	tcase_add_test(tc, test_turn_failed_and_missing);
	tcase_add_test(tc, test_conversation_and_session_info);
	tcase_add_test(tc, test_page_and_text);
	suite_add_tcase(s, tc);
	return s;
}
