/*
 * check_openai.c - unit tests for src/net/openai.c and src/http/http.c, against
 * the local stand-in server t/standin/openai_standin.py.
 *
 * Each test starts its own stand-in (a checked fixture, so it runs in
 * the test's own process) and stops it afterwards. The stand-in is
 * found under $APTIX_SOURCE_DIR, else above the current directory, else
 * above the test binary. Without python3 or the stand-in the network
 * tests pass without checking anything (a note goes to stderr).
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#ifndef _DEFAULT_SOURCE
# define _DEFAULT_SOURCE 1
#endif

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
# include <sys/prctl.h>
#endif
#include <jansson.h>

#include "aptix/openai.h"
#include "util/env.h"
#include "http/http.h"
#include "unit.h"

Suite *openai_suite(void);

#define API_KEY UNIT_API_KEY
#define MODEL "gpt-4.1-mini"

static struct unit_standin srv;
static char srv_url[128];	/* http://127.0.0.1:PORT */
static char base_url[160];	/* .../v1 */
static int have_server;

/* --- Running the stand-in ---------------------------------------------- */

static void srv_start(void)
{
	have_server = unit_standin_start_openai(&srv, "check_openai");
	if (!have_server)
		return;
	snprintf(srv_url, sizeof(srv_url), "%s", srv.url);
	snprintf(base_url, sizeof(base_url), "%s", srv.base);
}

static void srv_stop(void)
{
	unit_standin_stop(&srv);
	have_server = 0;
}

#define NEED_SERVER() do { if (!have_server) return; } while (0)

/* --- Talking to the stand-in's control endpoint ------------------------- */

#define http_json(m, p, b) unit_standin_json(&srv, m, p, b)
#define faults(json) unit_standin_faults(&srv, json)
#define count_requests(e) unit_standin_requests(&srv, e)

/* The stand-in's log of request number seq. */
static json_t *request_log(int seq)
{
	char dir[PATH_MAX + 8], prefix[16], path[PATH_MAX * 2];
	DIR *d;
	struct dirent *e;
	json_t *doc = NULL;

	snprintf(dir, sizeof(dir), "%s/logs", srv.dir);
	snprintf(prefix, sizeof(prefix), "%04d-", seq);
	d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL && !doc) {
		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		doc = json_load_file(path, 0, NULL);
	}
	closedir(d);
	ck_assert_msg(doc != NULL, "no log of request %d", seq);
	return doc;
}

/* --- Calling -------------------------------------------------------------- */

struct rec {
	aptix_buf deltas;
	int ndeltas;
	int nretries;
	int last_attempt;
	long last_wait;
	char why[512];
	int cancel_after;		/* set *flag after this many deltas */
	int stop_after;			/* on_delta returns 1 after these */
	int cancel_on_retry;
	volatile sig_atomic_t flag;
};

static int rec_delta(const char *text, size_t len, void *payload)
{
	struct rec *r = payload;

	ck_assert_uint_gt(len, 0);
	aptix_buf_put(&r->deltas, text, len);
	r->ndeltas++;
	if (r->cancel_after && r->ndeltas >= r->cancel_after)
		r->flag = 1;
	if (r->stop_after && r->ndeltas >= r->stop_after)
		return 1;
	return 0;
}

static void rec_retry(int attempt, long wait_ms, const char *why,
		      void *payload)
{
	struct rec *r = payload;

	r->nretries++;
	r->last_attempt = attempt;
	r->last_wait = wait_ms;
	snprintf(r->why, sizeof(r->why), "%s", why);
	if (r->cancel_on_retry)
		r->flag = 1;
}

static struct rec rec;

static aptix_openai_options options(void)
{
	aptix_openai_options o = APTIX_OPENAI_OPTIONS_INIT;

	memset(&rec, 0, sizeof(rec));
	aptix_buf_init(&rec.deltas, 0);
	o.base_url = base_url;
	o.api_key = API_KEY;
	o.retry_base_ms = 10;
	o.retry_max_ms = 50;
	o.total_timeout_ms = 30000;
	o.on_delta = rec_delta;
	o.on_retry = rec_retry;
	o.payload = &rec;
	o.cancel = &rec.flag;
	return o;
}

static void release_all(aptix_openai_result *r)
{
	aptix_openai_result_release(r);
	aptix_buf_release(&rec.deltas);
}

static char *request_body(const char *input, int stream, const char *prev)
{
	json_t *b = json_pack("{s:s, s:s, s:b}", "model", MODEL, "input",
			      input, "stream", stream);
	char *s;

	ck_assert_ptr_nonnull(b);
	if (prev)
		json_object_set_new(b, "previous_response_id",
				    json_string(prev));
	s = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	ck_assert_ptr_nonnull(s);
	return s;
}

static int respond(aptix_openai_result *out, const aptix_openai_options *o,
		   const char *input, int stream, const char *prev)
{
	char *body = request_body(input, stream, prev);
	int rc = aptix_openai_respond(out, o, body, strlen(body));

	free(body);
	return rc;
}

static const char *msg(void)
{
	return aptix_error_last()->message;
}

static void assert_one_line(const char *m)
{
	ck_assert_msg(!strchr(m, '\n') && !strchr(m, '\r'), "'%s'", m);
	ck_assert_msg(!strstr(m, API_KEY), "the key is in '%s'", m);
	ck_assert_msg(!strncmp(m, "openai: ", 8), "'%s'", m);
}

static void assert_completed(const aptix_openai_result *r)
{
	ck_assert_ptr_nonnull(r->response_id);
	ck_assert_msg(!strncmp(r->response_id, "resp_", 5), "%s",
		      r->response_id);
	ck_assert_str_eq(r->status, "completed");
	ck_assert_int_eq(r->http_status, 200);
	ck_assert_msg(!strncmp(r->text.ptr, "Answer #", 8), "%s", r->text.ptr);
	ck_assert_int_gt(r->usage.input_tokens, 0);
	ck_assert_int_gt(r->usage.output_tokens, 0);
	ck_assert_int_eq(r->usage.total_tokens,
			 r->usage.input_tokens + r->usage.output_tokens);
	ck_assert_int_eq(r->usage.cached_tokens, 0);
	ck_assert_int_eq(r->usage.reasoning_tokens, 0);
	ck_assert_ptr_null(r->error_code);
	ck_assert_ptr_null(r->error_message);
	ck_assert_int_eq(r->previous_not_found, 0);
}

/* raw must be the Response object with the result's id */
static void assert_raw_response(const aptix_openai_result *r)
{
	json_t *doc = json_loadb(r->raw.ptr, r->raw.len, 0, NULL);

	ck_assert_msg(doc != NULL, "raw is not JSON: %s", r->raw.ptr);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "object")),
			 "response");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "id")),
			 r->response_id);
	json_decref(doc);
}

static int64_t now_ms(void)
{
	return aptix_http_now_ms();
}

/* --- Tests ------------------------------------------------------------------ */

START_TEST(test_nonstream)
{
	aptix_openai_options o = options();
	aptix_openai_result r;
	json_t *log, *hdrs;

	NEED_SERVER();
	ck_assert_msg(respond(&r, &o, "hello there", 0, NULL) == 0, "%s",
		      msg());
	assert_completed(&r);
	ck_assert_ptr_nonnull(strstr(r.text.ptr, "hello there"));
	ck_assert_int_eq(r.attempts, 1);
	ck_assert_int_eq(rec.ndeltas, 0);
	ck_assert_int_eq(rec.nretries, 0);
	assert_raw_response(&r);

	/* what went over the wire */
	log = request_log(1);
	ck_assert_str_eq(json_string_value(json_object_get(log, "method")),
			 "POST");
	ck_assert_str_eq(json_string_value(json_object_get(log, "path")),
			 "/v1/responses");
	ck_assert(json_is_true(json_object_get(json_object_get(log, "auth"),
				"authorization_present")));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(
		log, "auth"), "authorization_scheme")), "Bearer");
	hdrs = json_object_get(log, "headers");
	ck_assert_str_eq(json_string_value(json_object_get(hdrs,
				"content-type")), "application/json");
	ck_assert_str_eq(json_string_value(json_object_get(hdrs, "accept")),
			 "application/json");
	ck_assert_ptr_null(json_object_get(hdrs, "expect"));
	json_decref(log);
	release_all(&r);
}
END_TEST

START_TEST(test_stream)
{
	aptix_openai_options o = options();
	aptix_openai_result r;
	json_t *log;

	NEED_SERVER();
	ck_assert_msg(respond(&r, &o, "stream me a long answer please", 1,
			      NULL) == 0, "%s", msg());
	assert_completed(&r);
	ck_assert_int_gt(rec.ndeltas, 1);
	ck_assert_str_eq(rec.deltas.ptr, r.text.ptr);
	ck_assert_int_eq(r.attempts, 1);
	assert_raw_response(&r);
	log = request_log(1);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(
		log, "headers"), "accept")), "text/event-stream");
	json_decref(log);
	release_all(&r);

	/* without on_delta the text is there all the same */
	o = options();
	o.on_delta = NULL;
	ck_assert_int_eq(respond(&r, &o, "again", 1, NULL), 0);
	assert_completed(&r);
	ck_assert_ptr_nonnull(strstr(r.text.ptr, "again"));
	release_all(&r);
}
END_TEST

START_TEST(test_incomplete)
{
	aptix_openai_options o = options();
	aptix_openai_result r;
	static const char body[] = "{\"model\":\"" MODEL "\",\"input\":"
		"\"a question long enough for an answer over sixteen tokens\","
		"\"max_output_tokens\":16,\"stream\":%s}";
	char buf[512];
	int stream;

	NEED_SERVER();
	for (stream = 0; stream < 2; stream++) {
		snprintf(buf, sizeof(buf), body, stream ? "true" : "false");
		ck_assert_msg(aptix_openai_respond(&r, &o, buf, strlen(buf)) ==
			      0, "%s", aptix_error_last()->message);
		ck_assert_str_eq(r.status, "incomplete");
		ck_assert_uint_eq(r.text.len, 64);	/* 16 tokens */
		ck_assert_int_eq(r.usage.output_tokens, 16);
		ck_assert_ptr_nonnull(strstr(r.raw.ptr, "max_output_tokens"));
		if (stream)
			ck_assert_str_eq(rec.deltas.ptr, r.text.ptr);
		aptix_openai_result_release(&r);
	}
	aptix_buf_release(&rec.deltas);
}
END_TEST

static int nested_delta(const char *text, size_t len, void *payload)
{
	(void)payload;
	aptix_buf_put(&rec.deltas, text, len);
	if (rec.ndeltas++ == 0) {
		/* an HTTP call from inside a callback of another */
		json_t *st = http_json("GET", "/__control", NULL);

		ck_assert_ptr_nonnull(json_object_get(st, "counts"));
		json_decref(st);
	}
	return 0;
}

START_TEST(test_nested_call)
{
	aptix_openai_options o = options();
	aptix_openai_result r;

	NEED_SERVER();
	o.on_delta = nested_delta;
	ck_assert_msg(respond(&r, &o, "one two three four five six", 1,
			      NULL) == 0, "%s", msg());
	assert_completed(&r);
	ck_assert_int_gt(rec.ndeltas, 1);
	ck_assert_str_eq(rec.deltas.ptr, r.text.ptr);
	release_all(&r);
}
END_TEST

START_TEST(test_chain)
{
	aptix_openai_options o = options();
	aptix_openai_result r1, r2, r3;

	NEED_SERVER();
	ck_assert_int_eq(respond(&r1, &o, "first", 1, NULL), 0);
	ck_assert_ptr_nonnull(strstr(r1.text.ptr, "chain depth 1"));
	ck_assert_int_eq(respond(&r2, &o, "second", 0, r1.response_id), 0);
	assert_completed(&r2);
	ck_assert_ptr_nonnull(strstr(r2.text.ptr, "chain depth 2"));
	ck_assert_str_ne(r1.response_id, r2.response_id);
	ck_assert_int_eq(respond(&r3, &o, "third", 1, r2.response_id), 0);
	ck_assert_ptr_nonnull(strstr(r3.text.ptr, "chain depth 3"));
	/* more context, more input tokens */
	ck_assert_int_gt(r3.usage.input_tokens, r1.usage.input_tokens);
	aptix_openai_result_release(&r1);
	aptix_openai_result_release(&r2);
	release_all(&r3);
}
END_TEST

START_TEST(test_previous_not_found)
{
	aptix_openai_options o = options();
	aptix_openai_result r1, r2;

	NEED_SERVER();
	ck_assert_int_eq(respond(&r1, &o, "first", 0, NULL), 0);
	faults("[{\"kind\":\"expire_previous\"}]");
	ck_assert_int_eq(respond(&r2, &o, "second", 1, r1.response_id),
			 APTIX_EHTTP);
	ck_assert_int_eq(r2.previous_not_found, 1);
	ck_assert_int_eq(r2.http_status, 400);
	ck_assert_str_eq(r2.error_code, "previous_response_not_found");
	ck_assert_ptr_nonnull(strstr(r2.error_message, r1.response_id));
	ck_assert_int_eq(r2.attempts, 1);
	ck_assert_int_eq(rec.nretries, 0);
	ck_assert_ptr_nonnull(strstr(r2.raw.ptr, "previous_response_not_found"));
	assert_one_line(msg());
	ck_assert_ptr_nonnull(strstr(msg(), "openai: HTTP 400: Previous "
				     "response with id"));
	ck_assert_ptr_null(strstr(msg(), "attempts"));
	aptix_openai_result_release(&r2);

	/* an id the server never knew */
	ck_assert_int_eq(respond(&r2, &o, "x", 0, "resp_unknown"),
			 APTIX_EHTTP);
	ck_assert_int_eq(r2.previous_not_found, 1);
	aptix_openai_result_release(&r1);
	release_all(&r2);
}
END_TEST

START_TEST(test_retry_429)
{
	aptix_openai_options o = options();
	aptix_openai_result r;
	int64_t t0;

	NEED_SERVER();
	faults("[{\"kind\":\"status\",\"status\":429,\"retry_after\":0.3}]");
	t0 = now_ms();
	ck_assert_msg(respond(&r, &o, "hi", 1, NULL) == 0, "%s", msg());
	assert_completed(&r);
	ck_assert_int_eq(r.attempts, 2);
	ck_assert_int_eq(rec.nretries, 1);
	ck_assert_int_eq(rec.last_attempt, 2);
	/* Retry-After wins over the 10 ms backoff */
	ck_assert_int_eq(rec.last_wait, 300);
	ck_assert_int_ge(now_ms() - t0, 290);
	ck_assert_ptr_nonnull(strstr(rec.why, "HTTP 429: Rate limit reached"));
	ck_assert_str_eq(rec.deltas.ptr, r.text.ptr);
	ck_assert_int_eq(count_requests("responses"), 2);
	release_all(&r);
}
END_TEST

START_TEST(test_retry_500)
{
	aptix_openai_options o = options();
	aptix_openai_result r;

	NEED_SERVER();
	faults("[{\"kind\":\"status\",\"status\":500},"
	       "{\"kind\":\"status\",\"status\":503,\"html\":true}]");
	ck_assert_msg(respond(&r, &o, "hi", 0, NULL) == 0, "%s", msg());
	assert_completed(&r);
	ck_assert_int_eq(r.attempts, 3);
	ck_assert_int_eq(rec.nretries, 2);
	ck_assert_int_le(rec.last_wait, 20);	/* base 10 ms, doubled */
	ck_assert_ptr_nonnull(strstr(rec.why, "HTTP 503"));
	release_all(&r);
}
END_TEST

START_TEST(test_retry_exhausted)
{
	aptix_openai_options o = options();
	aptix_openai_result r;

	NEED_SERVER();
	o.max_attempts = 3;
	faults("[{\"kind\":\"status\",\"status\":429,\"repeat\":3}]");
	ck_assert_int_eq(respond(&r, &o, "hi", 1, NULL), APTIX_EHTTP);
	ck_assert_int_eq(r.attempts, 3);
	ck_assert_int_eq(rec.nretries, 2);
	ck_assert_int_eq(r.http_status, 429);
	ck_assert_str_eq(r.error_code, "rate_limit_exceeded");
	ck_assert_int_eq(r.previous_not_found, 0);
	assert_one_line(msg());
	ck_assert_msg(!strncmp(msg(), "openai: HTTP 429: Rate limit reached",
			       36), "%s", msg());
	ck_assert_msg(strstr(msg(), "(after 3 attempts)") != NULL, "%s", msg());
	ck_assert_int_eq(count_requests("responses"), 3);
	aptix_openai_result_release(&r);

	/* a quota error is not worth retrying */
	o = options();
	faults("[{\"kind\":\"status\",\"status\":429,"
	       "\"code\":\"insufficient_quota\"}]");
	ck_assert_int_eq(respond(&r, &o, "hi", 1, NULL), APTIX_EHTTP);
	ck_assert_int_eq(r.attempts, 1);
	ck_assert_str_eq(r.error_code, "insufficient_quota");
	aptix_openai_result_release(&r);

	/* nor is a Retry-After beyond the total timeout */
	o = options();
	o.total_timeout_ms = 2000;
	faults("[{\"kind\":\"status\",\"status\":503,\"retry_after\":30}]");
	ck_assert_int_eq(respond(&r, &o, "hi", 0, NULL), APTIX_EHTTP);
	ck_assert_int_eq(r.attempts, 1);
	ck_assert_int_eq(rec.nretries, 0);
	release_all(&r);
}
END_TEST

START_TEST(test_client_error)
{
	aptix_openai_options o = options();
	aptix_openai_result r;
	static const char bad[] = "{\"model\":\"" MODEL "\"}";

	NEED_SERVER();
	ck_assert_int_eq(aptix_openai_respond(&r, &o, bad, strlen(bad)),
			 APTIX_EHTTP);
	ck_assert_int_eq(r.http_status, 400);
	ck_assert_int_eq(r.attempts, 1);
	ck_assert_str_eq(r.error_code, "missing_required_parameter");
	ck_assert_str_eq(r.error_message,
			 "Missing required parameter: 'input'.");
	ck_assert_str_eq(msg(), "openai: HTTP 400: Missing required "
			 "parameter: 'input'.");
	ck_assert_int_eq(r.previous_not_found, 0);
	release_all(&r);

	/* a wrong key: 401, and the key stays out of the message */
	o = options();
	o.api_key = "sk-wrong-key-9876543210-secret";
	ck_assert_int_eq(respond(&r, &o, "hi", 1, NULL), APTIX_EHTTP);
	ck_assert_int_eq(r.http_status, 401);
	ck_assert_str_eq(r.error_code, "invalid_api_key");
	ck_assert_ptr_null(strstr(msg(), o.api_key));
	ck_assert_ptr_null(strstr(r.error_message, o.api_key));
	ck_assert_ptr_nonnull(strstr(msg(), "Incorrect API key"));
	release_all(&r);
}
END_TEST

START_TEST(test_drop_midstream)
{
	aptix_openai_options o = options();
	aptix_openai_result r;
	int rc;

	NEED_SERVER();
	faults("[{\"kind\":\"drop\"}]");
	rc = respond(&r, &o, "one two three four five six seven", 1, NULL);
	ck_assert_msg(rc == APTIX_ENET || rc == APTIX_EINVALID, "%d: %s", rc,
		      msg());
	assert_one_line(msg());
	/* text had been delivered: no retry */
	ck_assert_int_gt(rec.ndeltas, 0);
	ck_assert_int_eq(r.attempts, 1);
	ck_assert_int_eq(rec.nretries, 0);
	ck_assert_int_eq(count_requests("responses"), 1);
	/* what arrived is kept: the id, the text so far, the raw stream */
	ck_assert_ptr_nonnull(r.response_id);
	ck_assert_str_eq(r.text.ptr, rec.deltas.ptr);
	ck_assert_ptr_nonnull(strstr(r.raw.ptr, "response.created"));
	release_all(&r);

	/*
	 * The same break with the connection reset. The reset may reach
	 * the client before the deltas sent ahead of it (the kernel then
	 * drops them): with nothing delivered, a retry is right.
	 */
	o = options();
	faults("[{\"kind\":\"drop\",\"reset\":true}]");
	rc = respond(&r, &o, "one two three four five six seven", 1, NULL);
	if (rc == 0) {
		ck_assert_int_eq(r.attempts, 2);
		ck_assert_str_eq(rec.deltas.ptr, r.text.ptr);
	} else {
		ck_assert_msg(rc == APTIX_ENET || rc == APTIX_EINVALID,
			      "%d: %s", rc, msg());
		ck_assert_int_eq(r.attempts, 1);
		ck_assert_int_gt(rec.ndeltas, 0);
	}
	release_all(&r);
}
END_TEST

START_TEST(test_drop_before_text)
{
	aptix_openai_options o = options();
	aptix_openai_result r;

	NEED_SERVER();
	/*
	 * A non-streaming request whose connection breaks is retried.
	 * (libcurl itself resends a request once when a reused keep-alive
	 * connection closes with no answer, so the stand-in may see more
	 * requests than attempts.)
	 */
	faults("[{\"kind\":\"drop\"},{\"kind\":\"drop\",\"reset\":true}]");
	ck_assert_msg(respond(&r, &o, "hi", 0, NULL) == 0, "%s", msg());
	assert_completed(&r);
	ck_assert_int_ge(r.attempts, 2);
	ck_assert_int_le(r.attempts, 3);
	ck_assert_int_eq(rec.nretries, r.attempts - 1);
	ck_assert_int_eq(count_requests("responses"), 3);
	release_all(&r);

	/* a stream that broke before any delta went out, too */
	o = options();
	o.on_delta = NULL;
	faults("[{\"kind\":\"drop\"}]");
	ck_assert_msg(respond(&r, &o, "one two three four five six", 1,
			      NULL) == 0, "%s", msg());
	assert_completed(&r);
	ck_assert_int_eq(r.attempts, 2);
	release_all(&r);
}
END_TEST

START_TEST(test_failed)
{
	aptix_openai_options o = options();
	aptix_openai_result r;

	NEED_SERVER();
	faults("[{\"kind\":\"failed\"}]");
	ck_assert_int_eq(respond(&r, &o, "hi", 1, NULL), APTIX_EHTTP);
	ck_assert_str_eq(r.status, "failed");
	ck_assert_str_eq(r.error_code, "server_error");
	ck_assert_str_eq(r.error_message,
			 "The model failed to generate a response.");
	ck_assert_ptr_nonnull(r.response_id);
	ck_assert_int_eq(r.attempts, 1);
	ck_assert_int_eq(r.http_status, 200);
	assert_raw_response(&r);
	assert_one_line(msg());
	ck_assert_str_eq(msg(), "openai: response failed: server_error: "
			 "The model failed to generate a response.");
	aptix_openai_result_release(&r);

	/* the same, not streamed */
	faults("[{\"kind\":\"failed\",\"code\":\"rate_limit_exceeded\","
	       "\"message\":\"Too busy.\"}]");
	ck_assert_int_eq(respond(&r, &o, "hi", 0, NULL), APTIX_EHTTP);
	ck_assert_str_eq(r.status, "failed");
	ck_assert_str_eq(r.error_code, "rate_limit_exceeded");
	ck_assert_str_eq(r.error_message, "Too busy.");
	ck_assert_int_eq(r.attempts, 1);
	assert_raw_response(&r);
	release_all(&r);
}
END_TEST

START_TEST(test_error_event)
{
	aptix_openai_options o = options();
	aptix_openai_result r;

	NEED_SERVER();
	faults("[{\"kind\":\"error_event\",\"code\":\"overloaded\","
	       "\"message\":\"Try\\nlater.\"}]");
	ck_assert_int_eq(respond(&r, &o, "hi", 1, NULL), APTIX_EHTTP);
	ck_assert_str_eq(r.error_code, "overloaded");
	ck_assert_str_eq(r.error_message, "Try later.");
	ck_assert_int_eq(r.attempts, 1);
	ck_assert_int_eq(rec.ndeltas, 0);
	ck_assert_ptr_nonnull(strstr(r.raw.ptr, "\"type\":\"error\""));
	assert_one_line(msg());
	ck_assert_str_eq(msg(), "openai: error event: overloaded: Try later.");
	release_all(&r);
}
END_TEST

START_TEST(test_bad_json)
{
	aptix_openai_options o = options();
	aptix_openai_result r;

	NEED_SERVER();
	faults("[{\"kind\":\"bad_json\"}]");
	ck_assert_int_eq(respond(&r, &o, "one two three four five six", 1,
				 NULL), APTIX_EINVALID);
	ck_assert_msg(strstr(msg(), "malformed event from server") != NULL,
		      "%s", msg());
	assert_one_line(msg());
	ck_assert_int_eq(r.attempts, 1);
	/* raw keeps the stream as it came */
	ck_assert_ptr_nonnull(strstr(r.raw.ptr, "\"delta\":\"trunc"));
	aptix_openai_result_release(&r);

	faults("[{\"kind\":\"bad_json\"}]");
	ck_assert_int_eq(respond(&r, &o, "hi", 0, NULL), APTIX_EINVALID);
	ck_assert_str_eq(msg(), "openai: malformed response from server");
	ck_assert_int_eq(r.attempts, 1);
	ck_assert_uint_gt(r.raw.len, 0);
	aptix_openai_result_release(&r);

	/* a stream that just stops: no terminal event */
	faults("[{\"kind\":\"bad_json\",\"then\":\"continue\"}]");
	ck_assert_int_eq(respond(&r, &o, "one two three four five six", 1,
				 NULL), APTIX_EINVALID);
	release_all(&r);
}
END_TEST

START_TEST(test_idle_timeout)
{
	aptix_openai_options o = options();
	aptix_openai_result r;
	int64_t t0;

	NEED_SERVER();
	o.idle_timeout_ms = 300;
	faults("[{\"kind\":\"slow\",\"delay\":3}]");
	t0 = now_ms();
	ck_assert_int_eq(respond(&r, &o, "one two three four five six", 1,
				 NULL), APTIX_ENET);
	ck_assert_int_lt(now_ms() - t0, 2500);
	ck_assert_msg(strstr(msg(), "timeout") != NULL, "%s", msg());
	assert_one_line(msg());
	ck_assert_int_eq(r.attempts, 1);	/* deltas had gone out */
	ck_assert_int_gt(rec.ndeltas, 0);
	release_all(&r);

	/* a server that never answers: retried, then given up */
	o = options();
	o.idle_timeout_ms = 200;
	o.max_attempts = 2;
	faults("[{\"kind\":\"hang\",\"max\":5,\"repeat\":2}]");
	t0 = now_ms();
	ck_assert_int_eq(respond(&r, &o, "hi", 0, NULL), APTIX_ENET);
	ck_assert_int_eq(r.attempts, 2);
	ck_assert_int_lt(now_ms() - t0, 3000);
	ck_assert_msg(strstr(msg(), "idle timeout") != NULL, "%s", msg());
	ck_assert_msg(strstr(msg(), "(after 2 attempts)") != NULL, "%s", msg());
	release_all(&r);

	/* the total timeout bounds everything */
	o = options();
	o.total_timeout_ms = 400;
	faults("[{\"kind\":\"hang\",\"max\":5}]");
	t0 = now_ms();
	ck_assert_int_eq(respond(&r, &o, "hi", 0, NULL), APTIX_ENET);
	ck_assert_int_lt(now_ms() - t0, 2000);
	ck_assert_msg(strstr(msg(), "timeout") != NULL, "%s", msg());
	release_all(&r);
}
END_TEST

START_TEST(test_cancel)
{
	aptix_openai_options o = options();
	aptix_openai_result r;
	int64_t t0;

	NEED_SERVER();
	/* the flag, set while a slow stream runs */
	rec.cancel_after = 1;
	faults("[{\"kind\":\"slow\",\"delay\":3}]");
	t0 = now_ms();
	ck_assert_int_eq(respond(&r, &o, "one two three four five six", 1,
				 NULL), APTIX_ECANCELLED);
	ck_assert_int_lt(now_ms() - t0, 1500);
	ck_assert_int_eq(rec.ndeltas, 1);
	ck_assert_int_eq(r.attempts, 1);
	ck_assert_msg(strstr(msg(), "cancelled") != NULL, "%s", msg());
	release_all(&r);

	/* on_delta's non-zero return */
	o = options();
	rec.stop_after = 2;
	ck_assert_int_eq(respond(&r, &o, "one two three four five six seven "
				 "eight nine ten", 1, NULL),
			 APTIX_ECANCELLED);
	ck_assert_int_eq(rec.ndeltas, 2);
	release_all(&r);

	/* during the wait before a retry */
	o = options();
	rec.cancel_on_retry = 1;
	faults("[{\"kind\":\"status\",\"status\":429,\"retry_after\":20}]");
	t0 = now_ms();
	ck_assert_int_eq(respond(&r, &o, "hi", 1, NULL), APTIX_ECANCELLED);
	ck_assert_int_lt(now_ms() - t0, 1500);
	ck_assert_int_eq(rec.nretries, 1);
	ck_assert_int_eq(rec.last_wait, 20000);
	ck_assert_int_eq(r.attempts, 1);
	release_all(&r);

	/* set before the call: nothing is sent */
	o = options();
	rec.flag = 1;
	ck_assert_int_eq(respond(&r, &o, "hi", 1, NULL), APTIX_ECANCELLED);
	ck_assert_int_eq(count_requests("responses"), 3);
	release_all(&r);
}
END_TEST

static int closed_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);	/* nobody listens there now */
	return ntohs(a.sin_port);
}

START_TEST(test_connection_refused)
{
	aptix_openai_options o = options();
	aptix_openai_result r;
	char url[64];
	float *v = NULL;
	size_t dim = 99;
	const char *texts[] = { "x" };

	/* no stand-in needed */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/", closed_port());
	o.base_url = url;
	o.max_attempts = 3;
	ck_assert_int_eq(respond(&r, &o, "hi", 1, NULL), APTIX_ENET);
	ck_assert_int_eq(r.attempts, 3);
	ck_assert_int_eq(r.http_status, 0);
	ck_assert_int_eq(rec.nretries, 2);
	assert_one_line(msg());
	/* the trailing slash of the base was dropped */
	ck_assert_msg(strstr(msg(), "/v1/responses: ") != NULL, "%s", msg());
	ck_assert_msg(strstr(msg(), "(after 3 attempts)") != NULL, "%s", msg());
	ck_assert_msg(strstr(msg(), "onnect") != NULL, "%s", msg());
	release_all(&r);

	o = options();
	o.base_url = url;
	o.max_attempts = 2;
	ck_assert_int_eq(aptix_openai_embed(&v, &dim, &o, "m", texts, 1),
			 APTIX_ENET);
	ck_assert_ptr_null(v);
	ck_assert_uint_eq(dim, 0);
	ck_assert_int_eq(rec.nretries, 1);
	release_all(&r);
}
END_TEST

static double norm(const float *v, size_t n)
{
	double s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += (double)v[i] * v[i];
	return sqrt(s);
}

START_TEST(test_embed)
{
	aptix_openai_options o = options();
	const char *texts[] = { "parse the config file", "snake_case_name",
				"parse the config file" };
	float *v = NULL, *w = NULL;
	size_t dim = 0, dim2 = 0, i;
	json_t *log;

	NEED_SERVER();
	ck_assert_msg(aptix_openai_embed(&v, &dim, &o,
					 "text-embedding-3-small", texts, 3)
		      == 0, "%s", msg());
	ck_assert_uint_eq(dim, 64);
	for (i = 0; i < 3; i++)
		ck_assert(fabs(norm(v + i * dim, dim) - 1.0) < 1e-4);
	ck_assert_int_eq(memcmp(v, v + 2 * dim, dim * sizeof(float)), 0);
	ck_assert_int_ne(memcmp(v, v + dim, dim * sizeof(float)), 0);
	log = request_log(1);
	ck_assert_str_eq(json_string_value(json_object_get(log, "path")),
			 "/v1/embeddings");
	ck_assert_int_eq(json_array_size(json_object_get(json_object_get(log,
				"body"), "input")), 3);
	json_decref(log);

	/* one text alone gives the same vector; retried after a 502 */
	faults("[{\"endpoint\":\"embeddings\",\"kind\":\"status\","
	       "\"status\":502}]");
	ck_assert_int_eq(aptix_openai_embed(&w, &dim2, &o,
					    "text-embedding-3-small",
					    texts + 1, 1), 0);
	ck_assert_uint_eq(dim2, 64);
	ck_assert_int_eq(memcmp(w, v + dim, dim * sizeof(float)), 0);
	ck_assert_int_eq(rec.nretries, 1);
	free(w);
	free(v);

	/* a broken body */
	faults("[{\"endpoint\":\"embeddings\",\"kind\":\"bad_json\"}]");
	ck_assert_int_eq(aptix_openai_embed(&v, &dim, &o, "m", texts, 2),
			 APTIX_EINVALID);
	ck_assert_ptr_null(v);
	ck_assert_msg(strstr(msg(), "malformed embeddings response") != NULL,
		      "%s", msg());

	/* a 400: an empty text */
	texts[0] = "";
	ck_assert_int_eq(aptix_openai_embed(&v, &dim, &o, "m", texts, 2),
			 APTIX_EHTTP);
	ck_assert_msg(!strncmp(msg(), "openai: HTTP 400: ", 18), "%s", msg());
	ck_assert_int_eq(aptix_openai_embed(&v, &dim, &o, "m", texts, 0),
			 APTIX_EINVALID);
	aptix_buf_release(&rec.deltas);
}
END_TEST

START_TEST(test_http_layer)
{
	aptix_http_request req;
	aptix_http_response resp;
	char url[256];

	NEED_SERVER();
	memset(&req, 0, sizeof(req));
	aptix_http_response_init(&resp);

	/* a 404 is a response, not a failure */
	snprintf(url, sizeof(url), "%s/nowhere", srv_url);
	req.url = url;
	ck_assert_int_eq(aptix_http_perform(&resp, &req), 0);
	ck_assert_int_eq(resp.status, 404);
	ck_assert_str_eq(resp.content_type, "application/json");
	ck_assert_ptr_nonnull(strstr(resp.body.ptr, "Invalid URL (GET"));

	/* the body cap */
	snprintf(url, sizeof(url), "%s/__control", srv_url);
	req.max_body = 10;
	ck_assert_int_eq(aptix_http_perform(&resp, &req), APTIX_EFULL);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "larger than 10 bytes"));
	req.max_body = 0;

	/* Retry-After and retry-after-ms */
	faults("[{\"kind\":\"status\",\"status\":429,\"retry_after\":7}]");
	snprintf(url, sizeof(url), "%s/v1/responses", srv_url);
	req.body = "{\"model\":\"m\",\"input\":\"x\"}";
	req.body_len = strlen(req.body);
	{
		static const char *const h[] = {
			"Authorization: Bearer " API_KEY, NULL
		};
		req.headers = h;
		ck_assert_int_eq(aptix_http_perform(&resp, &req), 0);
	}
	ck_assert_int_eq(resp.status, 429);
	ck_assert_int_eq(resp.retry_after, 7);
	ck_assert_int_eq(resp.retry_after_ms, 7000);
	aptix_http_response_release(&resp);
}
END_TEST

START_TEST(test_retry_after_parse)
{
	/* Sun, 06 Nov 1994 08:49:37 GMT */
	time_t now = 784111777;

	ck_assert_int_eq(aptix_http_parse_retry_after("120", now), 120000);
	ck_assert_int_eq(aptix_http_parse_retry_after(" 0 ", now), 0);
	ck_assert_int_eq(aptix_http_parse_retry_after("1.5", now), 1500);
	ck_assert_int_eq(aptix_http_parse_retry_after("0.25", now), 250);
	ck_assert_int_eq(aptix_http_parse_retry_after(
		"Sun, 06 Nov 1994 08:49:47 GMT", now), 10000);
	ck_assert_int_eq(aptix_http_parse_retry_after(
		"Sunday, 06-Nov-94 08:50:37 GMT", now), 60000);
	ck_assert_int_eq(aptix_http_parse_retry_after(
		"Sun Nov  6 08:49:40 1994", now), 3000);
	/* a date in the past: no wait */
	ck_assert_int_eq(aptix_http_parse_retry_after(
		"Sat, 05 Nov 1994 08:49:37 GMT", now), 0);
	ck_assert_int_eq(aptix_http_parse_retry_after("", now), -1);
	ck_assert_int_eq(aptix_http_parse_retry_after("soon", now), -1);
	ck_assert_int_eq(aptix_http_parse_retry_after("12s", now), -1);
	ck_assert_int_eq(aptix_http_parse_retry_after("-5", now), -1);
	ck_assert_int_eq(aptix_http_parse_retry_after(
		"Sun, 36 Nov 1994 08:49:47 GMT", now), -1);
	ck_assert_int_eq(aptix_http_parse_retry_after(
		"Sun, 06 Nov 1994 25:49:47 GMT", now), -1);
	ck_assert_int_eq(aptix_http_parse_retry_after(NULL, now), -1);
	ck_assert_int_eq(aptix_http_status_is_retryable(429), 1);
	ck_assert_int_eq(aptix_http_status_is_retryable(503), 1);
	ck_assert_int_eq(aptix_http_status_is_retryable(501), 0);
	ck_assert_int_eq(aptix_http_status_is_retryable(400), 0);
}
END_TEST

START_TEST(test_libcurl_missing)
{
	aptix_http_request req;
	aptix_http_response resp;
	const char *fork_mode = getenv("CK_FORK");

	/* Only in a fresh process, where libcurl is not loaded yet. */
	if (fork_mode && !strcmp(fork_mode, "no"))
		return;
	setenv("APTIX_LIBCURL", "/nonexistent/libcurl.so.4", 1);
	aptix_env__reload();
	memset(&req, 0, sizeof(req));
	req.url = "http://127.0.0.1:9/";
	aptix_http_response_init(&resp);
	ck_assert_int_eq(aptix_http_perform(&resp, &req), APTIX_ERROR);
	ck_assert_msg(!strncmp(aptix_error_last()->message,
			       "cannot load libcurl: ", 21), "%s",
		      aptix_error_last()->message);
	ck_assert_int_eq(aptix_http_load(), APTIX_ERROR);
	/* not sticky: with the real one it loads */
	unsetenv("APTIX_LIBCURL");
	aptix_env__reload();
	ck_assert_int_eq(aptix_http_load(), 0);
	aptix_http_response_release(&resp);
}
END_TEST

Suite *openai_suite(void)
{
	Suite *s = suite_create("openai");
	TCase *tc = tcase_create("standin");
	TCase *local = tcase_create("local");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, srv_start, srv_stop);
	tcase_add_test(tc, test_nonstream);
	tcase_add_test(tc, test_stream);
	tcase_add_test(tc, test_incomplete);
	tcase_add_test(tc, test_nested_call);
	tcase_add_test(tc, test_chain);
	tcase_add_test(tc, test_previous_not_found);
	tcase_add_test(tc, test_retry_429);
	tcase_add_test(tc, test_retry_500);
	tcase_add_test(tc, test_retry_exhausted);
	tcase_add_test(tc, test_client_error);
	tcase_add_test(tc, test_drop_midstream);
	tcase_add_test(tc, test_drop_before_text);
	tcase_add_test(tc, test_failed);
	tcase_add_test(tc, test_error_event);
	tcase_add_test(tc, test_bad_json);
	tcase_add_test(tc, test_idle_timeout);
	tcase_add_test(tc, test_cancel);
	tcase_add_test(tc, test_embed);
	tcase_add_test(tc, test_http_layer);
	suite_add_tcase(s, tc);

	tcase_set_timeout(local, 60);
	tcase_add_test(local, test_connection_refused);
	tcase_add_test(local, test_retry_after_parse);
	tcase_add_test(local, test_libcurl_missing);
	suite_add_tcase(s, local);
	return s;
}
