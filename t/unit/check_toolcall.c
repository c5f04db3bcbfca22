/*
 * t/unit/check_toolcall.c - tool calls and tool results (aptix/toolcall.h):
 * their canonical bytes, what the parser refuses, the turn that links
 * them (version 2, while a turn without stays version 1 and keeps its
 * id), and the recorder: a turn whose response asks for calls is an
 * awaiting_tool_results snapshot that moves the ref; the next turn's
 * results are linked to the parent's call objects, their stdout, stderr
 * and output stored as blobs with their byte counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aptix.h"
#include "aptix/view.h"
#include "unit.h"

static const char call_bytes[] =
	"{\"arguments\":\"{\\\"cmd\\\":[\\\"ls\\\",\\\"-l\\\"]}\","
	"\"call_id\":\"call_1\",\"item_id\":\"fc_1\",\"name\":\"shell\","
	"\"v\":1}\n";

static void make_call(aptix_tool_call *c, const char *id, const char *args)
{
	aptix_tool_call_init(c);
	c->call_id = (char *)id;
	c->name = (char *)"shell";
	c->arguments = (char *)args;
}

START_TEST(test_call_bytes)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_tool_call c, back;

	make_call(&c, "call_1", "{\"cmd\":[\"ls\",\"-l\"]}");
	c.item_id = (char *)"fc_1";
	ck_assert_int_eq(aptix_tool_call_serialize(&b, &c), 0);
	ck_assert_str_eq(b.ptr, call_bytes);
	ck_assert_int_eq(aptix_tool_call_parse(&back, b.ptr, b.len), 0);
	ck_assert_str_eq(back.arguments, "{\"cmd\":[\"ls\",\"-l\"]}");
	ck_assert_str_eq(back.item_id, "fc_1");
	ck_assert_ptr_null(back.ns);
	aptix_tool_call_release(&back);
	/* the arguments are kept byte for byte, white space included */
	aptix_buf_clear(&b);
	make_call(&c, "call_2", "{ \"b\": 1,\n  \"a\": 2 }");
	ck_assert_int_eq(aptix_tool_call_serialize(&b, &c), 0);
	ck_assert_int_eq(aptix_tool_call_parse(&back, b.ptr, b.len), 0);
	ck_assert_str_eq(back.arguments, "{ \"b\": 1,\n  \"a\": 2 }");
	aptix_tool_call_release(&back);
	/* a call needs its id and name */
	aptix_buf_clear(&b);
	make_call(&c, NULL, "{}");
	ck_assert_int_eq(aptix_tool_call_serialize(&b, &c), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message, "call_id"));
	make_call(&c, "", "{}");
	ck_assert_int_eq(aptix_tool_call_serialize(&b, &c), APTIX_EINVALID);
	ck_assert_uint_eq(b.len, 0);
	aptix_buf_release(&b);
}
END_TEST

START_TEST(test_result_bytes)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_tool_result r, back;
	char *argv[] = { (char *)"ls", (char *)"-l" };

	aptix_tool_result_init(&r);
	r.call_id = (char *)"call_1";
	r.status = APTIX_TOOL_OK;
	r.has_exit_code = 1;	/* 0 is a value: written */
	r.cwd = (char *)"/src";
	r.argv = argv;
	r.argc = 2;
	r.duration_ms = 12;
	r.source = (char *)"aptix";
	ck_assert_int_eq(aptix_tool_result_serialize(&b, &r), 0);
	ck_assert_str_eq(b.ptr, "{\"argv\":[\"ls\",\"-l\"],\"call_id\":"
			 "\"call_1\",\"cwd\":\"/src\",\"duration_ms\":12,"
			 "\"exit_code\":0,\"source\":\"aptix\",\"status\":"
			 "\"ok\",\"v\":1}\n");
	ck_assert_int_eq(aptix_tool_result_parse(&back, b.ptr, b.len), 0);
	ck_assert_int_eq(back.has_exit_code, 1);
	ck_assert_int_eq(back.exit_code, 0);
	ck_assert_uint_eq(back.argc, 2);
	ck_assert_str_eq(back.argv[1], "-l");
	aptix_tool_result_release(&back);
	/* no exit code: none written, none read */
	aptix_buf_clear(&b);
	r.has_exit_code = 0;
	r.status = APTIX_TOOL_DENIED;
	r.argc = 0;
	ck_assert_int_eq(aptix_tool_result_serialize(&b, &r), 0);
	ck_assert_ptr_null(strstr(b.ptr, "exit_code"));
	ck_assert_ptr_nonnull(strstr(b.ptr, "\"status\":\"denied\""));
	ck_assert_int_eq(aptix_tool_result_parse(&back, b.ptr, b.len), 0);
	ck_assert_int_eq(back.has_exit_code, 0);
	ck_assert_int_eq(back.status, APTIX_TOOL_DENIED);
	aptix_tool_result_release(&back);
	aptix_buf_release(&b);
}
END_TEST

static int parse_call(const char *s)
{
	aptix_tool_call c;
	int r = aptix_tool_call_parse(&c, s, strlen(s));

	aptix_tool_call_release(&c);
	return r;
}

static int parse_result(const char *s)
{
	aptix_tool_result t;
	int r = aptix_tool_result_parse(&t, s, strlen(s));

	aptix_tool_result_release(&t);
	return r;
}

START_TEST(test_refused)
{
	ck_assert_int_eq(parse_call(call_bytes), 0);
	/* not canonical: key order, white space, no line feed */
	ck_assert_int_eq(parse_call("{\"call_id\":\"c\",\"arguments\":\"\","
				    "\"name\":\"n\",\"v\":1}\n"),
			 APTIX_ECORRUPT);
	ck_assert_int_eq(parse_call("{\"arguments\":\"\",\"call_id\":\"c\","
				    "\"name\":\"n\",\"v\":1}"),
			 APTIX_ECORRUPT);
	/* newer, or missing what is required */
	ck_assert_int_eq(parse_call("{\"arguments\":\"\",\"call_id\":\"c\","
				    "\"name\":\"n\",\"v\":2}\n"),
			 APTIX_EVERSION);
	ck_assert_int_eq(parse_call("{\"arguments\":\"\",\"call_id\":\"c\","
				    "\"v\":1}\n"), APTIX_ECORRUPT);
	ck_assert_int_eq(parse_result("{\"call_id\":\"c\",\"source\":\"a\","
				      "\"status\":\"maybe\",\"v\":1}\n"),
			 APTIX_ECORRUPT);
	ck_assert_int_eq(parse_result("{\"call_id\":\"c\",\"source\":\"a\","
				      "\"status\":\"ok\",\"v\":1}\n"), 0);
	ck_assert_int_eq(parse_result("{\"call_id\":\"c\",\"exit_code\":"
				      "\"1\",\"source\":\"a\",\"status\":"
				      "\"error\",\"v\":1}\n"),
			 APTIX_ECORRUPT);
	ck_assert_int_eq(parse_result("{\"call_id\":\"c\",\"status\":\"ok\","
				      "\"v\":1}\n"), APTIX_ECORRUPT);
}

START_TEST(test_loose_input)
{
	static const char ok[] = "{ \"name\": \"shell\", \"call_id\": \"c\", "
		"\"arguments\": \"{}\" }";
	static const char typo[] = "{\"name\":\"shell\",\"call_id\":\"c\","
		"\"arguments\":\"{}\",\"nmae\":1}";
	aptix_tool_call c;
	aptix_tool_result t;

	ck_assert_int_eq(aptix_tool_call_from_json(&c, ok, strlen(ok)), 0);
	ck_assert_str_eq(c.name, "shell");
	aptix_tool_call_release(&c);
	ck_assert_int_eq(aptix_tool_call_from_json(&c, typo, strlen(typo)),
			 APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message, "nmae"));
	ck_assert_int_eq(aptix_tool_call_from_json(&c, "[]", 2),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_tool_result_from_json(&t, "{\"call_id\":\"c\","
			 "\"source\":\"x\",\"status\":\"ok\",\"exit_code\":2}",
			 56), 0);
	ck_assert_int_eq(t.exit_code, 2);
	aptix_tool_result_release(&t);
}
END_TEST
END_TEST

static const char turn_v1[] =
	"{\"conversation\":\"c1\",\"created_at\":1700000000000,\"instruction"
	"\":\"c7ec1ac1b0a8a4c6ad3445e65debde822c218717414567b205ba78919252"
	"ec8c\",\"seq\":1,\"status\":\"pending\",\"status_at\":1700000000000"
	",\"usage\":{\"cached_tokens\":0,\"input_tokens\":0,\"model_requests"
	"\":0,\"output_tokens\":0,\"reasoning_tokens\":0,\"total_tokens\":0"
	"},\"v\":1}\n";

START_TEST(test_turn_version)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_turn t, back;
	aptix_oid calls[1];
	const char *p;
	char bad[1024];

	/* a turn without tool calls: version 1, its bytes as before */
	ck_assert_int_eq(aptix_turn_parse(&t, turn_v1, strlen(turn_v1)), 0);
	ck_assert_int_eq(aptix_turn_serialize(&b, &t), 0);
	ck_assert_str_eq(b.ptr, turn_v1);
	/* with one: version 2, the list after status_at */
	aptix_oid_fromstr(&calls[0], "8d784239d04dd2bb70ada71840d0788970820a"
			  "ad3aec0bb2c3e00a373cdfb629");
	t.tool_calls = calls;
	t.ntool_calls = 1;
	aptix_buf_clear(&b);
	ck_assert_int_eq(aptix_turn_serialize(&b, &t), 0);
	t.tool_calls = NULL;
	t.ntool_calls = 0;
	aptix_turn_release(&t);
	ck_assert_ptr_nonnull(strstr(b.ptr, "\"tool_calls\":[\"8d784239"));
	ck_assert_ptr_nonnull(strstr(b.ptr, "\"v\":2}\n"));
	ck_assert_int_eq(aptix_turn_parse(&back, b.ptr, b.len), 0);
	ck_assert_uint_eq(back.ntool_calls, 1);
	ck_assert_int_eq(back.version, 2);
	aptix_turn_release(&back);
	/* the same list in a version 1 turn: refused */
	p = strstr(b.ptr, "\"v\":2");
	ck_assert_ptr_nonnull(p);
	snprintf(bad, sizeof(bad), "%.*s\"v\":1}\n", (int)(p - b.ptr), b.ptr);
	ck_assert_int_eq(aptix_turn_parse(&back, bad, strlen(bad)),
			 APTIX_ECORRUPT);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "needs version 2"));
	aptix_turn_release(&back);
	aptix_buf_release(&b);
}
END_TEST

static char *tmpdir;
static aptix_repo *repo;

static void setup(void)
{
	char *path;
	int existed;

	tmpdir = unit_mkdtemp();
	ck_assert_msg(aptix_repo_init(&repo, tmpdir, &existed) == 0, "%s",
		      aptix_error_last()->message);
	aptix_repo_free(repo);
	path = unit_path(tmpdir, ".aptix");
	ck_assert_msg(aptix_repo_open(&repo, path) == 0, "%s",
		      aptix_error_last()->message);
	free(path);
}

static void teardown(void)
{
	aptix_repo_free(repo);
	repo = NULL;
	unit_rmtree(tmpdir);
	free(tmpdir);
	tmpdir = NULL;
}

static void turn_of(aptix_turn *t, long seq)
{
	aptix_turn_init(t);
	t->conversation = (char *)"c1";
	t->seq = seq;
	t->status = APTIX_TURN_COMPLETED;
	t->created_at = 1700000000000 + seq * 1000;
	t->status_at = t->created_at;
}

static void read_result(aptix_tool_result *out, const aptix_oid *id)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_otype type;

	ck_assert_int_eq(aptix_odb_read(&b, &type, aptix_repo_odb(repo), id,
					0), 0);
	ck_assert_int_eq(type, APTIX_OBJ_TOOL_RESULT);
	ck_assert_int_eq(aptix_tool_result_parse(out, b.ptr, b.len), 0);
	aptix_buf_release(&b);
}

static void blob_is(const aptix_oid *id, const char *want)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_otype type;

	ck_assert_int_eq(aptix_odb_read(&b, &type, aptix_repo_odb(repo), id,
					0), 0);
	ck_assert_int_eq(type, APTIX_OBJ_BLOB);
	ck_assert_uint_eq(b.len, strlen(want));
	ck_assert(!memcmp(b.ptr, want, b.len));
	aptix_buf_release(&b);
}

/*
 * aptix_turn_lookup_texts() reads what the parse does of a turn's
 * instruction, answer, tool calls and tool results, in their order.
 */
static void texts_agree(const aptix_oid *turn)
{
	aptix_turn t, x;
	size_t i;

	ck_assert_int_eq(aptix_turn_lookup(&t, repo, turn), 0);
	ck_assert_int_eq(aptix_turn_lookup_texts(&x, repo, turn), 0);
	ck_assert_str_eq(aptix_oid_hex(&x.instruction),
			 aptix_oid_hex(&t.instruction));
	ck_assert_str_eq(aptix_oid_hex(&x.answer), aptix_oid_hex(&t.answer));
	ck_assert_uint_eq(x.ntool_calls, t.ntool_calls);
	ck_assert_uint_eq(x.ntool_results, t.ntool_results);
	for (i = 0; i < t.ntool_calls; i++)
		ck_assert_str_eq(aptix_oid_hex(&x.tool_calls[i]),
				 aptix_oid_hex(&t.tool_calls[i]));
	for (i = 0; i < t.ntool_results; i++)
		ck_assert_str_eq(aptix_oid_hex(&x.tool_results[i]),
				 aptix_oid_hex(&t.tool_results[i]));
	aptix_turn_release(&x);
	aptix_turn_release(&t);
}

/* Record the root asking for two calls; return its snapshot. */
static void record_calls(aptix_record_result *a)
{
	aptix_record_options o = APTIX_RECORD_OPTIONS_INIT;
	aptix_tool_call calls[2];
	aptix_session s;
	aptix_turn t;

	turn_of(&t, 1);
	make_call(&calls[0], "call_a", "{\"cmd\":\"ls\"}");
	make_call(&calls[1], "call_b", "{\"cmd\":\"false\"}");
	o.turn = &t;
	o.instruction.ptr = "List the files\n";
	o.instruction.len = 15;
	o.answer.ptr = "";
	o.tool_calls = calls;
	o.ntool_calls = 2;
	o.created_at = t.created_at + 10;
	ck_assert_msg(aptix_record_commit(a, repo, &o) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_int_eq(a->moved, 1);
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &a->session), 0);
	ck_assert_int_eq(s.status, APTIX_SESSION_AWAITING_TOOL_RESULTS);
	aptix_session_release(&s);
	ck_assert_int_eq(aptix_turn_lookup(&t, repo, &a->turn), 0);
	ck_assert_int_eq(t.version, 2);
	ck_assert_uint_eq(t.ntool_calls, 2);
	aptix_turn_release(&t);
}

START_TEST(test_record_calls_then_results)
{
	aptix_record_options o = APTIX_RECORD_OPTIONS_INIT;
	aptix_record_tool_result rr[2];
	aptix_tool_result res[2], back;
	aptix_record_result a, b;
	aptix_session s;
	aptix_turn t, pt;
	aptix_oid head;

	record_calls(&a);
	ck_assert_int_eq(aptix_ref_resolve(&head, NULL, repo,
					   "refs/conversations/c1"), 0);
	ck_assert_str_eq(aptix_oid_hex(&head), aptix_oid_hex(&a.session));
	/* the outputs, in the next turn */
	memset(rr, 0, sizeof(rr));
	aptix_tool_result_init(&res[0]);
	aptix_tool_result_init(&res[1]);
	res[0].call_id = (char *)"call_a";
	res[0].has_exit_code = 1;
	res[0].source = (char *)"aptix";
	res[1].call_id = (char *)"call_b";
	res[1].status = APTIX_TOOL_ERROR;
	res[1].has_exit_code = 1;
	res[1].exit_code = 1;
	res[1].source = (char *)"aptix";
	rr[0].result = &res[0];
	rr[0].out.ptr = "a.c\nb.c\n";
	rr[0].out.len = 8;
	rr[0].output.ptr = "a.c\nb.c\n";
	rr[0].output.len = 8;
	rr[1].result = &res[1];
	rr[1].err.ptr = "false: failed\n";
	rr[1].err.len = 14;
	rr[1].output.ptr = "exit 1";
	rr[1].output.len = 6;
	turn_of(&t, 0);
	o.turn = &t;
	o.instruction.ptr = "";
	o.answer.ptr = "Two files; false failed.\n";
	o.answer.len = strlen(o.answer.ptr);
	o.parent = &a.session;
	o.tool_results = rr;
	o.ntool_results = 2;
	o.created_at = t.created_at + 10;
	ck_assert_msg(aptix_record_commit(&b, repo, &o) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_int_eq(b.moved, 1);
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &b.session), 0);
	ck_assert_int_eq(s.status, APTIX_SESSION_COMMITTED);
	aptix_session_release(&s);
	ck_assert_int_eq(aptix_turn_lookup(&t, repo, &b.turn), 0);
	ck_assert_int_eq(t.seq, 2);
	ck_assert_uint_eq(t.ntool_results, 2);
	texts_agree(&a.turn);
	texts_agree(&b.turn);
	ck_assert_int_eq(aptix_turn_lookup(&pt, repo, &a.turn), 0);
	/* each result names the parent's call object, and its blobs */
	read_result(&back, &t.tool_results[0]);
	ck_assert_str_eq(aptix_oid_hex(&back.call),
			 aptix_oid_hex(&pt.tool_calls[0]));
	ck_assert_int_eq(back.out_bytes, 8);
	ck_assert_int_eq(back.output_bytes, 8);
	blob_is(&back.out, "a.c\nb.c\n");
	ck_assert(aptix_oid_is_zero(&back.err));
	aptix_tool_result_release(&back);
	read_result(&back, &t.tool_results[1]);
	ck_assert_str_eq(aptix_oid_hex(&back.call),
			 aptix_oid_hex(&pt.tool_calls[1]));
	ck_assert_int_eq(back.exit_code, 1);
	ck_assert_int_eq(back.err_bytes, 14);
	blob_is(&back.err, "false: failed\n");
	blob_is(&back.output, "exit 1");
	aptix_tool_result_release(&back);
	aptix_turn_release(&t);
	aptix_turn_release(&pt);
}
END_TEST

START_TEST(test_record_answered_in_the_same_turn)
{
	aptix_record_options o = APTIX_RECORD_OPTIONS_INIT;
	aptix_record_tool_result rr;
	aptix_tool_result res, back;
	aptix_tool_call call;
	aptix_record_result a;
	aptix_session s;
	aptix_turn t;

	/* an importer's turn: the call and its result together */
	turn_of(&t, 1);
	make_call(&call, "call_x", "{}");
	aptix_tool_result_init(&res);
	res.call_id = (char *)"call_x";
	res.source = (char *)"codex";
	memset(&rr, 0, sizeof(rr));
	rr.result = &res;
	o.turn = &t;
	o.instruction.ptr = "Do it\n";
	o.instruction.len = 6;
	o.tool_calls = &call;
	o.ntool_calls = 1;
	o.tool_results = &rr;
	o.ntool_results = 1;
	ck_assert_msg(aptix_record_commit(&a, repo, &o) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &a.session), 0);
	ck_assert_int_eq(s.status, APTIX_SESSION_COMMITTED);
	aptix_session_release(&s);
	ck_assert_int_eq(aptix_turn_lookup(&t, repo, &a.turn), 0);
	read_result(&back, &t.tool_results[0]);
	ck_assert_str_eq(aptix_oid_hex(&back.call),
			 aptix_oid_hex(&t.tool_calls[0]));
	ck_assert_str_eq(back.source, "codex");
	texts_agree(&a.turn);
	aptix_tool_result_release(&back);
	aptix_turn_release(&t);
}
END_TEST

/* Tool outputs from JSON: both forms, every field, and what is refused. */
START_TEST(test_outputs_from_json)
{
	static const char *const refused[][2] = {
		{ "42", "expected an object of call ids" },
		{ "[]", "none given" },
		{ "[{\"output\":\"x\"}]", "'#1': no \"call_id\"" },
		{ "{\"c\":7}", "'c': expected an object or a string" },
		{ "{\"c\":{\"stdout\":\"x\"}}", "an \"output\" string" },
		{ "{\"c\":{\"output\":\"x\",\"exit_code\":1.5}}", "'exit_code'" },
		{ "{\"c\":{\"output\":\"x\",\"status\":\"meh\"}}", "'status'" },
		{ "{\"c\":{\"output\":\"x\",\"argv\":[1]}}", "'argv'" },
		{ "{\"c\":{\"output\":\"x\",\"cwd\":false}}", "'cwd'" },
		{ "{\"c\":{\"output\":\"x\",\"duration_ms\":-1}}", "duration_ms" },
		{ "{\"c\":{\"output\":\"x\",\"truncated\":1}}", "'truncated'" },
	};
	aptix_run_tool_outputs o;
	json_t *j;
	size_t i;

	j = json_loads("[{\"call_id\":\"a\",\"output\":\"out\",\"stdout\":"
		       "\"so\",\"stderr\":\"se\",\"exit_code\":3,\"duration_ms\""
		       ":12,\"cwd\":\"/w\",\"argv\":[\"make\",\"t\"],"
		       "\"truncated\":true},{\"call_id\":\"b\",\"output\":\"no\","
		       "\"status\":\"denied\"}]", 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(aptix_run_tool_outputs_from_json(&o, j), 0);
	json_decref(j);		/* the outputs hold their own reference */
	ck_assert_uint_eq(o.n, 2);
	ck_assert_str_eq(o.v[0].call_id, "a");
	ck_assert_uint_eq(o.v[0].output_len, 3);
	ck_assert_str_eq(o.v[0].out, "so");
	ck_assert_str_eq(o.v[0].err, "se");
	ck_assert(o.v[0].has_exit_code && o.v[0].exit_code == 3);
	ck_assert_int_eq(o.v[0].status, APTIX_TOOL_ERROR);
	ck_assert_int_eq(o.v[0].duration_ms, 12);
	ck_assert_str_eq(o.v[0].cwd, "/w");
	ck_assert_uint_eq(o.v[0].argc, 2);
	ck_assert_str_eq(o.v[0].argv[1], "t");
	ck_assert_int_eq(o.v[0].truncated, 1);
	ck_assert_int_eq(o.v[1].status, APTIX_TOOL_DENIED);
	ck_assert(!o.v[1].has_exit_code);
	aptix_run_tool_outputs_release(&o);
	ck_assert_uint_eq(o.n, 0);

	j = json_loads("{\"x\":\"plain\"}", 0, NULL);
	ck_assert_int_eq(aptix_run_tool_outputs_from_json(&o, j), 0);
	json_decref(j);
	ck_assert_str_eq(o.v[0].call_id, "x");
	ck_assert_str_eq(o.v[0].output, "plain");
	ck_assert_int_eq(o.v[0].status, APTIX_TOOL_OK);
	aptix_run_tool_outputs_release(&o);

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		j = json_loads(refused[i][0], JSON_DECODE_ANY, NULL);
		ck_assert_ptr_nonnull(j);
		ck_assert_int_eq(aptix_run_tool_outputs_from_json(&o, j),
				 APTIX_EINVALID);
		ck_assert_msg(strstr(aptix_error_last()->message, refused[i][1]),
			      "%s: %s", refused[i][0],
			      aptix_error_last()->message);
		ck_assert_uint_eq(o.n, 0);
		ck_assert_ptr_null(o.v);
		aptix_error_clear();
		json_decref(j);
	}
}
END_TEST

Suite *toolcall_suite(void)
{
	Suite *s = suite_create("toolcall");
	TCase *tc = tcase_create("codec");
	TCase *tr = tcase_create("record");

	tcase_add_test(tc, test_call_bytes);
	tcase_add_test(tc, test_result_bytes);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_loose_input);
	tcase_add_test(tc, test_turn_version);
	tcase_add_test(tc, test_outputs_from_json);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(tr, setup, teardown);
	tcase_add_test(tr, test_record_calls_then_results);
	tcase_add_test(tr, test_record_answered_in_the_same_turn);
	suite_add_tcase(s, tr);
	return s;
}
