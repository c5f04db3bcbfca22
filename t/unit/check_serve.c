/*
 * check_serve.c - unit tests for the request handlers shared by `aptix
 * serve` and `aptix app-server` (serve/serve.c, serve/turn.c) and for
 * the JSON-RPC transport's handling of what a client sends
 * (serve/jsonrpc.c), against the local stand-in.
 *
 * Each handler is called with good parameters (the shape of its result)
 * and bad ones (the status of its error: 400, 404, 409). The HTTP
 * transport itself (routes, Host, Origin, caps) is t8102's.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aptix.h"
#include "unit.h"
#include "../../serve/serve.h"
#include "../../serve/jsonrpc.h"

Suite *serve_suite(void);

#define NEED_SERVER() do { if (!have_server) return; } while (0)

static struct unit_standin srv;
static int have_server;
static char *tmpdir;
static aptix_repo *repo;
static struct serve *sv;

/*
 * The stand-in is a process of its own, started once for the suite
 * (before Check forks: no store is open then); each test gets a new
 * store.
 */
static void standin_up(void)
{
	have_server = unit_standin_start_openai(&srv, "check_serve");
}

static void standin_down(void)
{
	unit_standin_stop(&srv);
	have_server = 0;
}

static void setup(void)
{
	struct serve_err e = { 0, "", "" };

	aptix_error_clear();
	unsetenv("APTIX_DIR");
	unsetenv("APTIX_TEST_DATE");
	unsetenv("QDRANT_URL");
	tmpdir = unit_mkdtemp();
	ck_assert_msg(aptix_repo_init(&repo, tmpdir, NULL) == 0, "%s",
		      aptix_error_last()->message);
	/* the settings, not the environment: it is read once a process */
	if (have_server)
		ck_assert_int_eq(aptix_config_set(repo, "openai.base-url",
						  srv.base), 0);
	ck_assert_int_eq(aptix_config_set(repo, "openai.max-attempts", "1"),
			 0);
	setenv("OPENAI_API_KEY", UNIT_API_KEY, 1);
	ck_assert_int_eq(serve_new(&sv, repo, "ws-unit", &e), 0);
}

static void teardown(void)
{
	serve_free(sv);
	sv = NULL;
	aptix_repo_free(repo);
	repo = NULL;
	unit_rmtree(tmpdir);
	free(tmpdir);
}

/* Parameters from a JSON text (asserted to parse). */
static json_t *P(const char *text)
{
	json_error_t err;
	json_t *p = json_loads(text, 0, &err);

	ck_assert_msg(p != NULL, "bad test JSON %s: %s", text, err.text);
	return p;
}

typedef json_t *(*handler_fn)(struct serve *, json_t *, struct serve_err *);

/* Call fn with params text; expect success; the result. */
static json_t *ok(handler_fn fn, const char *params)
{
	struct serve_err e = { 0, "", "" };
	json_t *p = params ? P(params) : NULL, *v;

	v = fn(sv, p, &e);
	json_decref(p);
	ck_assert_msg(v != NULL, "%s: %d %s", params ? params : "(none)",
		      e.status, e.message);
	return v;
}

/* Call fn with params text; expect the error status; its message. */
static void fails(handler_fn fn, const char *params, int status)
{
	struct serve_err e = { 0, "", "" };
	json_t *p = params ? P(params) : NULL, *v;

	v = fn(sv, p, &e);
	json_decref(p);
	ck_assert_msg(v == NULL, "%s succeeded", params ? params : "(none)");
	ck_assert_msg(e.status == status, "%s: %d (%s), wanted %d",
		      params ? params : "(none)", e.status, e.message,
		      status);
	ck_assert_msg(*e.message, "%s: no message", params);
	json_decref(v);
}

/* A whole turn; its final object (the execute contract). */
static json_t *turn(const char *params)
{
	struct serve_err e = { 0, "", "" };
	struct serve_turn *t = NULL;
	json_t *p = P(params), *started, *final;

	started = serve_turn_begin(&t, sv, p, NULL, NULL, &e);
	json_decref(p);
	ck_assert_msg(started != NULL, "%s: %d %s", params, e.status,
		      e.message);
	ck_assert(json_is_string(json_object_get(started, "conversation")));
	json_decref(started);
	final = serve_turn_run(t);
	serve_turn_free(t);
	ck_assert_ptr_nonnull(final);
	return final;
}

static const char *str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	ck_assert_msg(json_is_string(v), "'%s' is not a string", key);
	return json_string_value(v);
}

/* A turn in conversation conv (created when new): its session id. */
static void turn_in(char *sid, const char *conv, const char *text)
{
	char params[512];
	json_t *f;

	snprintf(params, sizeof(params), "{\"conversation\":\"%s\","
		 "\"create\":true,\"instruction\":\"%s\",\"files\":false,"
		 "\"rag\":false,\"no_stream\":true}", conv, text);
	f = turn(params);
	ck_assert_msg(!strcmp(str(f, "status"), "completed"), "%s: %s",
		      text, json_dumps(f, 0));
	ck_assert_str_eq(str(f, "conversation"), conv);
	if (sid)
		snprintf(sid, APTIX_OID_HEXSZ + 1, "%s", str(f, "session"));
	json_decref(f);
}

static size_t count(json_t *a)
{
	ck_assert(json_is_array(a));
	return json_array_size(a);
}

/* ---- conversations: list, paging, filter ---- */

START_TEST(test_list_paging_and_filter)
{
	static const char *const names[] = { "alpha-1", "beta-1", "alpha-2",
		"beta-2", "alpha-3" };
	char params[256], cursor[256] = "";
	json_t *v, *items, *it, *nc;
	size_t i, k, seen = 0, pages = 0;
	const char *ids[8];

	NEED_SERVER();
	v = ok(serve_list_conversations, NULL);
	ck_assert_uint_eq(count(json_object_get(v, "items")), 0);
	ck_assert(json_is_null(json_object_get(v, "next_cursor")));
	json_decref(v);
	for (i = 0; i < 5; i++)
		turn_in(NULL, names[i], names[i]);

	/* a summary's fields */
	v = ok(serve_list_conversations, "{\"limit\":1000}");
	items = json_object_get(v, "items");
	ck_assert_uint_eq(count(items), 5);
	it = json_array_get(items, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(it,
		"turn_count")), 1);
	ck_assert_str_eq(str(it, "last_turn_status"), "completed");
	ck_assert_str_eq(str(it, "workspace"), "ws-unit");
	str(it, "title");
	str(it, "last_turn_at");
	ck_assert(json_is_false(json_object_get(it, "running")));
	json_decref(v);

	/* pages of two: each conversation once, then no cursor */
	do {
		snprintf(params, sizeof(params), *cursor ?
			 "{\"limit\":2,\"cursor\":\"%s\"}" : "{\"limit\":2}",
			 cursor);
		v = ok(serve_list_conversations, params);
		items = json_object_get(v, "items");
		ck_assert_uint_le(count(items), 2);
		json_array_foreach(items, i, it) {
			ck_assert_uint_lt(seen, 5);
			ids[seen] = strdup(str(it, "id"));
			for (k = 0; k < seen; k++)
				ck_assert_str_ne(ids[k], ids[seen]);
			seen++;
		}
		nc = json_object_get(v, "next_cursor");
		*cursor = '\0';
		if (json_is_string(nc))
			snprintf(cursor, sizeof(cursor), "%s",
				 json_string_value(nc));
		json_decref(v);
		ck_assert_uint_lt(++pages, 10);
	} while (*cursor);
	ck_assert_uint_eq(seen, 5);
	ck_assert_uint_eq(pages, 3);
	for (k = 0; k < seen; k++)
		free((void *)ids[k]);

	/* the text filter: case-insensitive, on title and id */
	v = ok(serve_list_conversations, "{\"q\":\"BETA\"}");
	items = json_object_get(v, "items");
	ck_assert_uint_eq(count(items), 2);
	json_array_foreach(items, i, it)
		ck_assert_ptr_nonnull(strstr(str(it, "id"), "beta"));
	json_decref(v);
	v = ok(serve_list_conversations, "{\"q\":\"gamma\"}");
	ck_assert_uint_eq(count(json_object_get(v, "items")), 0);
	json_decref(v);

	/* archived ones are hidden unless asked for */
	json_decref(ok(serve_archive, "{\"conversation\":\"beta-1\"}"));
	v = ok(serve_list_conversations, "{\"q\":\"beta\"}");
	ck_assert_uint_eq(count(json_object_get(v, "items")), 1);
	json_decref(v);
	v = ok(serve_list_conversations, "{\"q\":\"beta\",\"archived\":true}");
	ck_assert_uint_eq(count(json_object_get(v, "items")), 2);
	json_decref(v);

	/* another workspace's, unless all */
	v = ok(serve_list_conversations, "{\"workspace\":\"elsewhere\"}");
	ck_assert_uint_eq(count(json_object_get(v, "items")), 0);
	json_decref(v);
	v = ok(serve_list_conversations,
	       "{\"workspace\":\"elsewhere\",\"all\":true}");
	ck_assert_uint_eq(count(json_object_get(v, "items")), 4);
	json_decref(v);
}
END_TEST

START_TEST(test_list_bad_parameters)
{
	fails(serve_list_conversations, "{\"limit\":0}", 400);
	fails(serve_list_conversations, "{\"limit\":1001}", 400);
	fails(serve_list_conversations, "{\"limit\":\"2\"}", 400);
	fails(serve_list_conversations, "{\"cursor\":\"nodot\"}", 400);
	fails(serve_list_conversations, "{\"cursor\":\"x.y\"}", 400);
	fails(serve_list_conversations, "{\"cursor\":7}", 400);
	fails(serve_list_conversations, "{\"q\":1}", 400);
	fails(serve_list_conversations, "{\"all\":\"yes\"}", 400);
	fails(serve_list_conversations, "{\"archived\":1}", 400);
	fails(serve_graph, "{\"limit\":-1}", 400);
	fails(serve_graph, "{\"cursor\":\"12\"}", 400);
}
END_TEST

/* ---- a conversation, a turn, an object ---- */

START_TEST(test_read_conversation_turn_object)
{
	char sid[APTIX_OID_HEXSZ + 1], params[256];
	json_t *v, *t, *full;
	const char *ans;

	NEED_SERVER();
	turn_in(sid, "reader", "first question");
	turn_in(NULL, "reader", "second question");

	v = ok(serve_read_conversation, "{\"conversation\":\"reader\"}");
	ck_assert_str_eq(str(json_object_get(v, "conversation"), "id"),
			 "reader");
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_object_get(v, "conversation"), "turn_count")), 2);
	ck_assert_uint_eq(count(json_object_get(v, "turns")), 2);
	t = json_array_get(json_object_get(v, "turns"), 0);
	ck_assert_str_eq(str(t, "session"), sid);
	ck_assert_str_eq(str(t, "instruction_summary"), "first question");
	ck_assert(json_is_null(json_object_get(t, "parent")));
	ck_assert_ptr_null(json_object_get(t, "sources"));
	t = json_array_get(json_object_get(v, "turns"), 1);
	ck_assert_str_eq(str(t, "parent"), sid);
	json_decref(v);
	fails(serve_read_conversation, "{\"conversation\":\"nope\"}", 404);
	fails(serve_read_conversation, "{\"conversation\":\"HEAD\"}", 404);
	fails(serve_read_conversation, "{}", 400);
	fails(serve_read_conversation, "{\"conversation\":3}", 400);

	/* a turn: summary and full views */
	snprintf(params, sizeof(params), "{\"session\":\"%s\"}", sid);
	v = ok(serve_read_turn, params);
	ck_assert_str_eq(str(v, "instruction_summary"), "first question");
	ck_assert_ptr_null(json_object_get(v, "instruction"));
	ck_assert_str_eq(str(v, "status"), "committed");
	snprintf(params, sizeof(params), "{\"session\":\"%s\",\"full\":true}",
		 sid);
	full = ok(serve_read_turn, params);
	ck_assert_str_eq(str(full, "instruction"), "first question");
	ck_assert(json_is_array(json_object_get(full, "sources")));
	ck_assert(json_is_array(json_object_get(full, "files")));
	ans = str(full, "answer");
	ck_assert_str_eq(str(v, "answer_summary"), ans);

	/* the raw answer object, as text */
	snprintf(params, sizeof(params), "{\"id\":\"%s\"}",
		 str(full, "answer_id"));
	json_decref(v);
	v = ok(serve_read_object_json, params);
	ck_assert_str_eq(str(v, "type"), "blob");
	ck_assert_str_eq(str(v, "encoding"), "utf-8");
	ck_assert_str_eq(str(v, "data"), ans);
	json_decref(v);
	/* the session object is JSON */
	snprintf(params, sizeof(params), "{\"id\":\"%s\"}", sid);
	v = ok(serve_read_object_json, params);
	ck_assert_str_eq(str(v, "content_type"), "application/json");
	json_decref(v);
	json_decref(full);

	snprintf(params, sizeof(params), "{\"session\":\"%s\",\"full\":1}",
		 sid);
	fails(serve_read_turn, params, 400);
	fails(serve_read_turn, "{}", 400);
	fails(serve_read_turn, "{\"session\":\"0000000000000000000000000000"
	      "000000000000000000000000000000000000\"}", 404);
	fails(serve_read_object_json, "{\"id\":\"abc\"}", 400);
	fails(serve_read_object_json, "{}", 400);
	fails(serve_read_object_json, "{\"id\":\"00000000000000000000000000"
	      "00000000000000000000000000000000000000\"}", 404);
}
END_TEST

/* ---- the graph ---- */

static json_t *node_of(json_t *nodes, const char *sid)
{
	json_t *n;
	size_t i;

	json_array_foreach(nodes, i, n)
		if (!strcmp(str(n, "id"), sid))
			return n;
	return NULL;
}

static void failed_turn(const char *conv, const char *text)
{
	char params[256];
	json_t *f;

	unit_standin_faults(&srv, "[{\"kind\":\"status\",\"status\":429,"
			    "\"code\":\"insufficient_quota\"}]");
	snprintf(params, sizeof(params), "{\"conversation\":\"%s\","
		 "\"create\":true,\"instruction\":\"%s\",\"files\":false,"
		 "\"rag\":false,\"no_stream\":true}", conv, text);
	f = turn(params);
	ck_assert_str_eq(str(f, "status"), "failed");
	json_decref(f);
}

START_TEST(test_graph)
{
	char a1[APTIX_OID_HEXSZ + 1], a2[APTIX_OID_HEXSZ + 1], params[512];
	json_t *v, *f, *nodes, *n;
	const char *forked;
	size_t i, nfailed = 0;

	NEED_SERVER();
	turn_in(a1, "main", "one");
	turn_in(a2, "main", "two");
	failed_turn("main", "three fails");
	/* a fork from the first turn: a conversation of its own */
	snprintf(params, sizeof(params), "{\"kind\":\"fork\",\"session\":"
		 "\"%s\",\"instruction\":\"forked\",\"files\":false,"
		 "\"rag\":false,\"no_stream\":true}", a1);
	f = turn(params);
	ck_assert_str_eq(str(f, "status"), "completed");
	forked = strdup(str(f, "conversation"));
	json_decref(f);
	/*
	 * a conversation whose first attempts failed: three roots, one
	 * that no summary field points to (found by the scan)
	 */
	failed_turn("late", "first attempt fails");
	failed_turn("late", "and the second");
	turn_in(NULL, "late", "then it works");
	turn_in(NULL, "other", "unrelated");

	/* one conversation: its snapshots, the failed one too */
	v = ok(serve_graph, "{\"conversation\":\"main\"}");
	nodes = json_object_get(v, "nodes");
	ck_assert_uint_eq(count(nodes), 3);
	ck_assert_uint_eq(count(json_object_get(v, "conversations")), 1);
	json_array_foreach(nodes, i, n) {
		ck_assert_str_eq(str(n, "conversation"), "main");
		ck_assert_int_eq(json_integer_value(json_object_get(n, "row")),
				 (json_int_t)i);
		nfailed += json_is_true(json_object_get(n, "failed"));
	}
	ck_assert_uint_eq(nfailed, 1);
	n = node_of(nodes, a2);
	ck_assert_ptr_nonnull(n);
	ck_assert_str_eq(str(n, "parent"), a1);
	ck_assert_int_eq(json_integer_value(json_object_get(n,
		"parent_row")), 0);
	json_decref(v);

	/* the three roots of "late" are found */
	v = ok(serve_graph, "{\"conversation\":\"late\"}");
	ck_assert_uint_eq(count(json_object_get(v, "nodes")), 3);
	json_decref(v);

	/* every conversation: the fork gets a lane of its own */
	v = ok(serve_graph, "{\"limit\":1000}");
	nodes = json_object_get(v, "nodes");
	ck_assert_uint_eq(count(nodes), 3 + 1 + 3 + 1);
	ck_assert_uint_eq(count(json_object_get(v, "conversations")), 4);
	ck_assert_int_ge(json_integer_value(json_object_get(v, "lanes")), 2);
	json_array_foreach(nodes, i, n) {
		if (strcmp(str(n, "conversation"), forked))
			continue;
		ck_assert_str_eq(str(n, "parent"), a1);
		ck_assert_int_ne(json_integer_value(json_object_get(n,
			"lane")), json_integer_value(json_object_get(
				node_of(nodes, a1), "lane")));
	}
	json_decref(v);

	/* a page of the graph: its conversations' nodes only */
	v = ok(serve_graph, "{\"limit\":1}");
	ck_assert_uint_eq(count(json_object_get(v, "conversations")), 1);
	ck_assert_uint_eq(count(json_object_get(v, "nodes")), 1);
	ck_assert_str_eq(str(json_array_get(json_object_get(v, "nodes"), 0),
			     "conversation"), "other");
	str(v, "next_cursor");
	json_decref(v);
	fails(serve_graph, "{\"conversation\":\"nope\"}", 404);
	free((void *)forked);
}
END_TEST

/* ---- writes: rename, archive, seed 003's sessions ---- */

START_TEST(test_rename_archive)
{
	json_t *v;

	NEED_SERVER();
	turn_in(NULL, "named", "something");
	v = ok(serve_rename, "{\"conversation\":\"named\",\"title\":"
	       "\"A title\"}");
	ck_assert_str_eq(str(v, "title"), "A title");
	ck_assert(json_is_true(json_object_get(v, "titled")));
	json_decref(v);
	fails(serve_rename, "{\"conversation\":\"named\"}", 400);
	fails(serve_rename, "{\"conversation\":\"named\",\"title\":\"\"}",
	      400);
	fails(serve_rename, "{\"conversation\":\"named\",\"title\":"
	      "\"a\\nb\"}", 400);
	fails(serve_rename, "{\"conversation\":\"nope\",\"title\":\"x\"}",
	      404);
	v = ok(serve_archive, "{\"conversation\":\"named\"}");
	ck_assert(json_is_true(json_object_get(v, "archived")));
	json_decref(v);
	v = ok(serve_archive, "{\"conversation\":\"named\",\"archived\":"
	       "false}");
	ck_assert(json_is_false(json_object_get(v, "archived")));
	json_decref(v);
	fails(serve_archive, "{\"conversation\":\"named\",\"archived\":"
	      "\"no\"}", 400);
	fails(serve_archive, "{\"conversation\":\"nope\"}", 404);
}
END_TEST

START_TEST(test_sessions)
{
	char params[256];
	json_t *v, *a;
	const char *id;

	NEED_SERVER();
	turn_in(NULL, "existing", "hello");
	v = ok(serve_session_open, "{\"workspace\":\"ws-unit\"}");
	ck_assert(json_is_false(json_object_get(v, "resumed")));
	ck_assert_str_eq(str(v, "status"), "active");
	id = strdup(str(v, "sessionId"));
	json_decref(v);
	v = ok(serve_session_open, "{\"sessionId\":\"existing\"}");
	ck_assert(json_is_true(json_object_get(v, "resumed")));
	ck_assert_int_eq(json_integer_value(json_object_get(v,
		"turnCount")), 1);
	json_decref(v);
	fails(serve_session_open, "{\"sessionId\":\"nope\"}", 404);

	a = ok(serve_workspace_sessions, "{\"workspace\":\"ws-unit\"}");
	ck_assert_uint_eq(count(a), 1);
	ck_assert_str_eq(str(json_array_get(a, 0), "sessionId"),
			 "existing");
	ck_assert_str_eq(str(json_array_get(a, 0), "status"), "active");
	json_decref(a);
	a = ok(serve_workspace_sessions, "{\"workspace\":\"other\"}");
	ck_assert_uint_eq(count(a), 0);
	json_decref(a);
	fails(serve_workspace_sessions, "{}", 400);

	snprintf(params, sizeof(params), "{\"sessionId\":\"%s\"}", id);
	v = ok(serve_session_close, params);
	ck_assert_str_eq(str(v, "status"), "closed");
	json_decref(v);
	fails(serve_session_close, params, 404);
	fails(serve_session_close, "{}", 400);
	free((void *)id);
}
END_TEST

/* ---- turns: refusals, busy, interrupt ---- */

static void begin_fails(const char *params, int status)
{
	struct serve_err e = { 0, "", "" };
	struct serve_turn *t = NULL;
	json_t *p = P(params), *v;

	v = serve_turn_begin(&t, sv, p, NULL, NULL, &e);
	json_decref(p);
	serve_turn_free(t);
	ck_assert_msg(v == NULL, "%s began", params);
	ck_assert_msg(e.status == status, "%s: %d (%s), wanted %d", params,
		      e.status, e.message, status);
	json_decref(v);
}

START_TEST(test_turn_refusals)
{
	begin_fails("{}", 400);
	begin_fails("{\"instruction\":7}", 400);
	begin_fails("{\"instruction\":\"x\",\"kind\":\"sideways\"}", 400);
	begin_fails("{\"instruction\":\"x\",\"kind\":\"fork\"}", 400);
	begin_fails("{\"instruction\":\"x\",\"conversation\":[]}", 400);
	begin_fails("{\"instruction\":\"x\",\"files\":\"yes\"}", 400);
	begin_fails("{\"instruction\":\"x\",\"active_files\":\"a\"}", 400);
	/* an unknown conversation is a typo, not a new one */
	begin_fails("{\"instruction\":\"x\",\"conversation\":\"typo\"}", 404);
	begin_fails("{\"instruction\":\"x\",\"kind\":\"fork\",\"session\":"
		    "\"0000000000000000000000000000000000000000000000000000"
		    "000000000000\"}", 404);
	fails(serve_interrupt, "{}", 400);
	fails(serve_interrupt, "{\"conversation\":\"idle\"}", 404);
}
END_TEST

START_TEST(test_busy_and_interrupt)
{
	struct serve_err e = { 0, "", "" };
	struct serve_turn *t = NULL, *t2 = NULL;
	json_t *p, *started, *v, *final;

	NEED_SERVER();
	turn_in(NULL, "busy", "first");
	p = P("{\"conversation\":\"busy\",\"instruction\":\"long\","
	      "\"files\":false,\"rag\":false,\"no_stream\":true}");
	started = serve_turn_begin(&t, sv, p, NULL, NULL, &e);
	ck_assert_msg(started != NULL, "%s", e.message);
	json_decref(started);
	ck_assert_str_eq(serve_turn_conversation(t), "busy");

	/* a second turn on it: 409 naming the conversation */
	v = serve_turn_begin(&t2, sv, p, NULL, NULL, &e);
	serve_turn_free(t2);
	json_decref(p);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(e.status, 409);
	ck_assert_str_eq(e.busy, "busy");
	/* the list shows it running */
	v = ok(serve_list_conversations, "{\"q\":\"busy\"}");
	ck_assert(json_is_true(json_object_get(json_array_get(
		json_object_get(v, "items"), 0), "running")));
	json_decref(v);

	/* interrupted before it sends: committed as failed */
	v = ok(serve_interrupt, "{\"conversation\":\"busy\"}");
	ck_assert_int_eq(json_integer_value(json_object_get(v,
		"interrupted")), 1);
	json_decref(v);
	final = serve_turn_run(t);
	serve_turn_free(t);
	ck_assert_str_eq(str(final, "status"), "failed");
	ck_assert_str_eq(str(final, "conversation"), "busy");
	json_decref(final);
	ck_assert_uint_eq(serve_wait_idle(sv, 0), 0);
	/* and the conversation is free again */
	turn_in(NULL, "busy", "again");
	v = ok(serve_read_conversation, "{\"conversation\":\"busy\"}");
	ck_assert_uint_eq(count(json_object_get(v, "turns")), 3);
	json_decref(v);
}
END_TEST

/* ---- JSON-RPC: what a client sends ---- */

static int rpc_in = -1, rpc_out = -1;
static struct jsonrpc *rpc;

static void rpc_open(void)
{
	int fds[2];

	ck_assert_int_eq(pipe(fds), 0);
	rpc_in = fds[0];
	rpc_out = fds[1];
	ck_assert_int_eq(jsonrpc_new(&rpc, sv, rpc_out), 0);
}

static void rpc_close(void)
{
	jsonrpc_shutdown(rpc, 0);
	jsonrpc_free(rpc);
	close(rpc_in);
	close(rpc_out);
}

/* Send one line; the one message it answers with. */
static json_t *rpc_call(const char *line)
{
	char buf[65536];
	size_t n = 0;
	json_error_t err;
	json_t *v;

	jsonrpc_handle_line(rpc, line, strlen(line));
	while (n < sizeof(buf) - 1) {
		ck_assert_int_eq(read(rpc_in, buf + n, 1), 1);
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = '\0';
	v = json_loads(buf, 0, &err);
	ck_assert_msg(v != NULL, "not JSON: %s", buf);
	return v;
}

static void rpc_error(const char *line, int code)
{
	json_t *v = rpc_call(line);
	json_t *e = json_object_get(v, "error");

	ck_assert_msg(json_is_object(e), "%s: no error", line);
	ck_assert_msg(json_integer_value(json_object_get(e, "code")) == code,
		      "%s: code %d, wanted %d", line,
		      (int)json_integer_value(json_object_get(e, "code")),
		      code);
	ck_assert(json_is_string(json_object_get(e, "message")));
	ck_assert_ptr_nonnull(json_object_get(v, "id"));
	json_decref(v);
}

START_TEST(test_jsonrpc_malformed)
{
	json_t *v;

	rpc_open();
	rpc_error("{not json", -32700);
	rpc_error("\"a string\"", -32600);
	rpc_error("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}]", -32600);
	rpc_error("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}", -32600);
	rpc_error("{\"jsonrpc\":\"2.0\",\"id\":1}", -32600);
	rpc_error("{\"id\":{},\"method\":\"x\"}", -32600);
	rpc_error("{\"id\":1,\"id\":2,\"method\":\"x\"}", -32700);
	rpc_error("{\"id\":1,\"method\":\"no/such\"}", -32601);
	rpc_error("{\"id\":1,\"method\":\"thread/list\",\"params\":[]}",
		  -32602);
	rpc_error("{\"id\":1,\"method\":\"thread/list\",\"params\":"
		  "{\"q\":5}}", -32602);
	rpc_error("{\"id\":1,\"method\":\"thread/list\",\"params\":"
		  "{\"limit\":0}}", -32602);
	rpc_error("{\"id\":1,\"method\":\"thread/read\",\"params\":"
		  "{\"threadId\":\"nope\"}}", -32004);
	rpc_error("{\"id\":1,\"method\":\"turn/start\",\"params\":"
		  "{\"input\":3}}", -32602);
	/* and then a good request is answered */
	v = rpc_call("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":"
		     "\"initialize\"}");
	ck_assert_str_eq(json_string_value(json_object_get(v, "id")), "x");
	ck_assert(json_is_object(json_object_get(v, "result")));
	json_decref(v);
	v = rpc_call("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
		     "\"thread/list\"}");
	ck_assert(json_is_object(json_object_get(v, "result")));
	json_decref(v);
	rpc_close();
}
END_TEST

Suite *serve_suite(void)
{
	Suite *s = suite_create("serve");
	TCase *tc = tcase_create("handlers");

	tcase_add_unchecked_fixture(tc, standin_up, standin_down);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_list_paging_and_filter);
	tcase_add_test(tc, test_list_bad_parameters);
	tcase_add_test(tc, test_read_conversation_turn_object);
	tcase_add_test(tc, test_graph);
	tcase_add_test(tc, test_rename_archive);
	tcase_add_test(tc, test_sessions);
	tcase_add_test(tc, test_turn_refusals);
	tcase_add_test(tc, test_busy_and_interrupt);
	tcase_add_test(tc, test_jsonrpc_malformed);
	suite_add_tcase(s, tc);
	return s;
}
