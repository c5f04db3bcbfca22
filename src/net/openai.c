/*
 * src/net/openai.c - the OpenAI Responses API and embeddings client (see
 * aptix/openai.h), over src/http/http.c and src/net/sse.c.
 */
#include "util/common.h"
#include <ctype.h>
#include <limits.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include "aptix/config.h"
#include "aptix/openai.h"
#include "http/http.h"
#include "secret/secrets.h"
#include "net/sse.h"
#include "config/test-hooks.h"

/*
 * The defaults of the timeouts, the attempts and the base URL are the
 * key table's (openai.* keys, src/config/config-keys.c); the connect timeout's
 * is src/http/http.c's. The backoff is not a setting.
 */
#define DEFAULT_RETRY_BASE_MS 500L
#define DEFAULT_RETRY_MAX_MS 30000L
/* An error body; a response's cap is openai.max-response. */
#define MAX_BODY ((size_t)64 << 20)
#define MAX_MESSAGE 1000		/* chars of a server message kept */
#define SLEEP_SLICE_MS 50

/* --- Results ------------------------------------------------------------ */

void aptix_openai_result_init(aptix_openai_result *r)
{
	memset(r, 0, sizeof(*r));
	aptix_buf_init(&r->text, 0);
	aptix_buf_init(&r->raw, 0);
}

void aptix_openai_result_release(aptix_openai_result *r)
{
	free(r->response_id);
	free(r->status);
	aptix_buf_release(&r->text);
	aptix_buf_release(&r->raw);
	free(r->error_code);
	free(r->error_message);
	aptix_tool_calls_free(r->calls, r->ncalls);
	aptix_openai_result_init(r);
}

int aptix_http_status_is_retryable(long status)
{
	return status == 429 || status == 500 || status == 502 ||
		status == 503 || status == 504;
}

/* --- One call, with its settings --------------------------------------- */

struct call {
	const aptix_openai_options *opts;
	long connect_ms, idle_ms, total_ms, base_ms, max_ms;
	size_t max_response;	/* bytes of a body or a stream */
	int max_attempts;
	int64_t deadline;
	uint64_t rng;
	char *url;
	char *auth;		/* "Authorization: Bearer ..." */
	const char *headers[5];
};

static uint64_t next_random(struct call *c)
{
	uint64_t x = c->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	c->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* The key table's default of a duration key, in ms. */
static long default_ms(const char *key)
{
	int64_t ms;

	aptix_config_duration_ms(&ms, NULL, key);
	return ms > LONG_MAX ? LONG_MAX : (long)ms;
}

static int call_init(struct call *c, const aptix_openai_options *opts,
		     const char *path, int sse)
{
	const char *base = opts->base_url;
	size_t blen, n = 0;
	struct timespec ts;
	long attempts, max_response;

	if (!base || !*base)
		aptix_config_string(&base, NULL, "openai.base-url");
	blen = strlen(base);
	memset(c, 0, sizeof(*c));
	c->opts = opts;
	if (aptix__url_has_userinfo(base)) {
		aptix_error_set(APTIX_ERROR_OPENAI, "the OpenAI base URL holds "
				"user information (user:password@): refusing "
				"it; give the key in OPENAI_API_KEY");
		return APTIX_EINVALID;
	}
	c->connect_ms = opts->connect_timeout_ms > 0 ?
		opts->connect_timeout_ms : 0;
	c->idle_ms = opts->idle_timeout_ms > 0 ? opts->idle_timeout_ms :
		default_ms("openai.idle-timeout");
	c->total_ms = opts->total_timeout_ms > 0 ? opts->total_timeout_ms :
		default_ms("openai.timeout");
	if (opts->max_attempts > 0)
		attempts = opts->max_attempts;
	else
		aptix_config_long(&attempts, NULL, "openai.max-attempts");
	c->max_attempts = (int)attempts;
	if (opts->max_response)
		c->max_response = opts->max_response;
	else if (aptix_config_long(&max_response, NULL,
				   "openai.max-response") == 0)
		c->max_response = (size_t)max_response;
	else
		c->max_response = MAX_BODY;
	c->base_ms = opts->retry_base_ms > 0 ?
		opts->retry_base_ms : DEFAULT_RETRY_BASE_MS;
	c->max_ms = opts->retry_max_ms > 0 ?
		opts->retry_max_ms : DEFAULT_RETRY_MAX_MS;
	c->deadline = aptix_http_now_ms() + c->total_ms;
	clock_gettime(CLOCK_REALTIME, &ts);
	c->rng = ((uint64_t)ts.tv_sec * 1000000007ULL) ^
		((uint64_t)ts.tv_nsec << 20) ^ ((uint64_t)getpid() << 40) ^
		(uint64_t)(uintptr_t)c;
	if (!c->rng)
		c->rng = 0x9e3779b97f4a7c15ULL;

	while (blen && base[blen - 1] == '/')
		blen--;
	c->url = aptix__malloc(blen + strlen(path) + 1);
	if (!c->url)
		return APTIX_ERROR;
	memcpy(c->url, base, blen);
	memcpy(c->url + blen, path, strlen(path) + 1);
	if (opts->api_key && *opts->api_key) {
		static const char pre[] = "Authorization: Bearer ";
		size_t klen = strlen(opts->api_key);

		if (strpbrk(opts->api_key, "\r\n")) {
			aptix_error_set(APTIX_ERROR_OPENAI, "openai: the API key "
					"holds a line break");
			return APTIX_EINVALID;
		}
		c->auth = aptix__malloc(sizeof(pre) + klen);
		if (!c->auth)
			return APTIX_ERROR;
		memcpy(c->auth, pre, sizeof(pre) - 1);
		memcpy(c->auth + sizeof(pre) - 1, opts->api_key, klen + 1);
		c->headers[n++] = c->auth;
	}
	c->headers[n++] = "Content-Type: application/json";
	c->headers[n++] = sse ? "Accept: text/event-stream" :
		"Accept: application/json";
	c->headers[n] = NULL;
	return 0;
}

static void call_release(struct call *c)
{
	if (c->auth) {
		/* Do not leave the key in freed memory. */
		volatile char *p = c->auth;

		while (*p)
			*p++ = 0;
		free(c->auth);
	}
	free(c->url);
}

/*
 * A server text made fit for a one-line message: control characters
 * become spaces, the API key (should the server echo it) is redacted,
 * and it is cut at MAX_MESSAGE bytes. malloc'd; NULL on OOM.
 */
static char *one_line(const char *s, size_t len, const char *key)
{
	aptix_buf b = APTIX_BUF_INIT;
	size_t klen = key ? strlen(key) : 0, i;

	for (i = 0; i < len && b.len < MAX_MESSAGE; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (klen >= 8 && len - i >= klen && !memcmp(s + i, key, klen)) {
			aptix_buf_puts(&b, "<redacted>");
			i += klen - 1;
			continue;
		}
		aptix_buf_putc(&b, ch < 0x20 || ch == 0x7f ? ' ' : (char)ch);
	}
	while (b.len && b.ptr[b.len - 1] == ' ')
		aptix_buf_truncate(&b, b.len - 1);
	if (i < len)
		aptix_buf_puts(&b, "...");
	return aptix_buf_detach(&b);
}

static const char *reason_phrase(long status)
{
	switch (status) {
	case 400: return "bad request";
	case 401: return "unauthorized";
	case 403: return "forbidden";
	case 404: return "not found";
	case 408: return "request timeout";
	case 409: return "conflict";
	case 413: return "payload too large";
	case 422: return "unprocessable entity";
	case 429: return "too many requests";
	case 500: return "internal server error";
	case 502: return "bad gateway";
	case 503: return "service unavailable";
	case 504: return "gateway timeout";
	default: return status >= 500 ? "server error" : "error";
	}
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? aptix__strdup(s) : NULL;
}

static const char *json_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* error_code and error_message from an OpenAI error object. */
static void take_error(aptix_openai_result *out, const json_t *err,
		       const char *key)
{
	const char *code, *msg;

	if (json_is_string(err)) {
		msg = json_string_value(err);
		code = NULL;
	} else {
		code = json_str(err, "code");
		if (!code)
			code = json_str(err, "type");
		msg = json_str(err, "message");
	}
	set_str(&out->error_code, code);
	free(out->error_message);
	out->error_message = msg ? one_line(msg, strlen(msg), key) : NULL;
}

static int contains_nocase(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; hay && *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return 1;
	return 0;
}

/* Fill out from an HTTP error response (status and body). */
static void take_http_error(aptix_openai_result *out, long status,
			    const aptix_buf *body, const char *key)
{
	json_t *doc = json_loadb(body->ptr, body->len, 0, NULL);
	const char *msg;

	out->http_status = status;
	aptix_buf_set(&out->raw, body->ptr, body->len);
	free(out->error_code);
	free(out->error_message);
	out->error_code = out->error_message = NULL;
	if (json_is_object(doc) && json_object_get(doc, "error"))
		take_error(out, json_object_get(doc, "error"), key);
	json_decref(doc);
	msg = out->error_message;
	if ((status == 400 && out->error_code &&
	     !strcmp(out->error_code, "previous_response_not_found")) ||
	    ((status == 400 || status == 404) && msg &&
	     (contains_nocase(msg, "previous_response_id") ||
	      contains_nocase(msg, "previous response")) &&
	     contains_nocase(msg, "not found")))
		out->previous_not_found = 1;
}

/* --- The Response object ------------------------------------------------ */

static long usage_num(const json_t *obj, const char *key, const char *sub)
{
	const json_t *v = json_object_get(obj, key);

	if (sub)
		v = json_object_get(v, sub);
	return json_is_integer(v) ? (long)json_integer_value(v) : 0;
}

/* The function_call items of a Response's output, replacing any. */
static int take_calls(aptix_openai_result *out, const json_t *output)
{
	size_t i, n = 0;
	int bad = 0;

	for (i = 0; i < json_array_size(output); i++) {
		const char *type = json_str(json_array_get(output, i), "type");

		n += type && !strcmp(type, "function_call");
	}
	aptix_tool_calls_free(out->calls, out->ncalls);
	out->calls = NULL;
	out->ncalls = 0;
	if (!n)
		return 0;
	if (!(out->calls = aptix__calloc(n, sizeof(*out->calls))))
		return APTIX_ERROR;
	for (i = 0; i < json_array_size(output); i++) {
		const json_t *item = json_array_get(output, i);
		const char *type = json_str(item, "type");
		aptix_tool_call *c = &out->calls[out->ncalls];

		if (!type || strcmp(type, "function_call"))
			continue;
		aptix_tool_call_init(c);
		out->ncalls++;
		set_str(&c->call_id, json_str(item, "call_id"));
		set_str(&c->name, json_str(item, "name"));
		set_str(&c->arguments, json_str(item, "arguments") ?
			json_str(item, "arguments") : "");
		set_str(&c->item_id, json_str(item, "id"));
		bad |= !c->call_id || !c->name || !c->arguments;
	}
	if (bad) {
		aptix_error_set(APTIX_ERROR_OPENAI, "openai: a function call "
				"of the response has no call_id or name");
		return APTIX_EINVALID;
	}
	return 0;
}

/*
 * id, status, usage and the text of a Response object. The text is
 * taken only when the object has output_text parts (a stream's own
 * deltas stay otherwise).
 */
static int take_response(aptix_openai_result *out, const json_t *resp,
			 const char *key)
{
	const json_t *usage = json_object_get(resp, "usage");
	const json_t *output = json_object_get(resp, "output");
	aptix_buf text = APTIX_BUF_INIT, refusal = APTIX_BUF_INIT;
	int found = 0;
	size_t i, j;

	if (json_str(resp, "id"))
		set_str(&out->response_id, json_str(resp, "id"));
	if (json_str(resp, "status"))
		set_str(&out->status, json_str(resp, "status"));
	if (json_is_object(usage)) {
		out->usage.input_tokens = usage_num(usage, "input_tokens", NULL);
		out->usage.cached_tokens = usage_num(usage,
			"input_tokens_details", "cached_tokens");
		out->usage.output_tokens = usage_num(usage, "output_tokens",
						     NULL);
		out->usage.reasoning_tokens = usage_num(usage,
			"output_tokens_details", "reasoning_tokens");
		out->usage.total_tokens = usage_num(usage, "total_tokens", NULL);
	}
	for (i = 0; i < json_array_size(output); i++) {
		const json_t *item = json_array_get(output, i);
		const json_t *content = json_object_get(item, "content");
		const char *type = json_str(item, "type");

		if (!type || strcmp(type, "message"))
			continue;
		for (j = 0; j < json_array_size(content); j++) {
			const json_t *part = json_array_get(content, j);
			const char *ptype = json_str(part, "type");
			const json_t *t = json_object_get(part, "text");
			const json_t *no = json_object_get(part, "refusal");

			if (ptype && !strcmp(ptype, "refusal") &&
			    json_is_string(no))
				aptix_buf_put(&refusal, json_string_value(no),
					      json_string_length(no));
			if (!ptype || strcmp(ptype, "output_text") ||
			    !json_is_string(t))
				continue;
			aptix_buf_put(&text, json_string_value(t),
				      json_string_length(t));
			found = 1;
		}
	}
	/* A refusal is the answer when there is no other text. */
	if (!found && refusal.len) {
		aptix_buf_release(&text);
		text = refusal;
		aptix_buf_init(&refusal, 0);
		found = 1;
	}
	aptix_buf_release(&refusal);
	if (found) {
		aptix_buf_release(&out->text);
		out->text = text;
	} else {
		aptix_buf_release(&text);
	}
	if (json_object_get(resp, "error") &&
	    !json_is_null(json_object_get(resp, "error")))
		take_error(out, json_object_get(resp, "error"), key);
	if (aptix_buf_oom(&out->text))
		return aptix_error_oom();
	return take_calls(out, output);
}

/* --- Streaming --------------------------------------------------------- */

struct stream {
	struct call *c;
	aptix_openai_result *out;
	aptix_http_response *resp;
	aptix_sse_parser sse;
	int mode;		/* 0: unknown, 1: SSE, 2: a plain body */
	int terminal;		/* response.completed/incomplete seen */
	int delivered;		/* on_delta was called */
	int keep_raw;		/* still appending the stream to raw */
	size_t received;	/* bytes of the body or stream so far */
};

static int stream_fail(int code, const char *fmt, const char *arg)
{
	aptix_error_set(APTIX_ERROR_OPENAI, fmt, arg);
	return code;
}

static int set_raw_json(aptix_openai_result *out, const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	if (!s)
		return aptix_error_oom();
	aptix_buf_set(&out->raw, s, strlen(s));
	free(s);
	return aptix_buf_oom(&out->raw) ? aptix_error_oom() : 0;
}

static int failed_message(aptix_openai_result *out, const char *what)
{
	const char *code = out->error_code, *msg = out->error_message;

	aptix_error_set(APTIX_ERROR_OPENAI, "openai: %s%s%s%s%s", what,
			code || msg ? ": " : "", code ? code : "",
			code && msg ? ": " : "", msg ? msg : "");
	return APTIX_EHTTP;
}

static int on_event(const char *sse_type, const char *data, size_t len,
		    void *payload)
{
	struct stream *st = payload;
	aptix_openai_result *out = st->out;
	const char *key = st->c->opts->api_key;
	json_t *ev, *resp;
	const char *type;
	int rc = 0;

	if (len == 6 && !memcmp(data, "[DONE]", 6))
		return 0;
	ev = json_loadb(data, len, JSON_ALLOW_NUL, NULL);
	if (!json_is_object(ev)) {
		json_decref(ev);
		return stream_fail(APTIX_EINVALID,
				   "openai: malformed event from server (%s)",
				   sse_type);
	}
	type = json_str(ev, "type");
	if (!type)
		type = sse_type;
	resp = json_object_get(ev, "response");

	if (!strcmp(type, "response.output_text.delta") ||
	    !strcmp(type, "response.refusal.delta")) {
		const json_t *d = json_object_get(ev, "delta");
		const char *text = json_string_value(d);
		size_t n = json_string_length(d);

		if (!text) {
			rc = stream_fail(APTIX_EINVALID, "openai: malformed "
					 "event from server (%s)", type);
		} else if (aptix_buf_put(&out->text, text, n) < 0) {
			rc = APTIX_ERROR;
		} else if (st->c->opts->on_delta && n) {
			st->delivered = 1;
			if (st->c->opts->on_delta(text, n,
						  st->c->opts->payload))
				rc = stream_fail(APTIX_ECANCELLED,
						 "openai: %s", "cancelled");
		}
	} else if (!strcmp(type, "response.created") ||
		   !strcmp(type, "response.in_progress") ||
		   !strcmp(type, "response.queued")) {
		if (json_is_object(resp)) {
			if (json_str(resp, "id"))
				set_str(&out->response_id, json_str(resp, "id"));
			if (json_str(resp, "status"))
				set_str(&out->status, json_str(resp, "status"));
		}
	} else if (!strcmp(type, "response.completed") ||
		   !strcmp(type, "response.incomplete")) {
		if (!json_is_object(resp)) {
			rc = stream_fail(APTIX_EINVALID, "openai: malformed "
					 "event from server (%s)", type);
		} else if ((rc = take_response(out, resp, key)) == 0 &&
			   (rc = set_raw_json(out, resp)) == 0) {
			st->terminal = 1;
			st->keep_raw = 0;
		}
	} else if (!strcmp(type, "response.failed") ||
		   !strcmp(type, "response.cancelled")) {
		if (json_is_object(resp)) {
			take_response(out, resp, key);
			set_raw_json(out, resp);
		} else {
			set_raw_json(out, ev);
		}
		st->keep_raw = 0;
		rc = failed_message(out, !strcmp(type, "response.failed") ?
				    "response failed" : "response cancelled");
	} else if (!strcmp(type, "error")) {
		const json_t *err = json_object_get(ev, "error");

		take_error(out, json_is_object(err) ? err : ev, key);
		set_raw_json(out, ev);
		st->keep_raw = 0;
		rc = failed_message(out, "error event");
	}
	/* Every other event (output_item.*, content_part.*, ...) is ignored. */
	json_decref(ev);
	return rc;
}

static int on_data(const char *data, size_t len, void *payload)
{
	struct stream *st = payload;
	aptix_openai_result *out = st->out;

	if (!st->mode) {
		const char *ct = st->resp->content_type;

		st->mode = ct && !strncasecmp(ct, "text/event-stream", 17) ?
			1 : 2;
	}
	/*
	 * A body or a stream past the cap fails the call: a server that
	 * never stops (an endless stream of deltas) must not grow the
	 * answer without bound until the timeout.
	 */
	if (len > st->c->max_response - st->received) {
		aptix_error_set(APTIX_ERROR_OPENAI, "openai: %s larger than "
				"%zu bytes (openai.max-response)",
				st->mode == 2 ? "response" : "streamed response",
				st->c->max_response);
		st->received = st->c->max_response;
		return APTIX_EFULL;
	}
	st->received += len;
	if (st->mode == 2)
		return aptix_buf_put(&out->raw, data, len) < 0 ?
			APTIX_ERROR : 0;
	if (st->keep_raw) {
		if (out->raw.len + len <= MAX_BODY)
			aptix_buf_put(&out->raw, data, len);
		else
			st->keep_raw = 0;
	}
	return aptix_sse_feed(&st->sse, data, len);
}

/* --- Retries ------------------------------------------------------------ */

/*
 * Wait before the next attempt (next: its number). 0: go on; 1: give
 * up (no time left); APTIX_ECANCELLED.
 */
static int wait_retry(struct call *c, int next, long retry_after_ms,
		      const char *why)
{
	const aptix_openai_options *o = c->opts;
	int64_t left = c->deadline - aptix_http_now_ms(), end;
	long wait;

	if (retry_after_ms >= 0) {
		wait = retry_after_ms;
	} else {
		long cap = c->base_ms;
		int i;

		for (i = 2; i < next && cap < c->max_ms; i++)
			cap = cap > LONG_MAX / 2 ? LONG_MAX : cap * 2;
		if (cap > c->max_ms)
			cap = c->max_ms;
		/* full jitter */
		wait = (long)(next_random(c) % ((uint64_t)cap + 1));
	}
	if (wait >= left)
		return 1;
	if (o->on_retry)
		o->on_retry(next, wait, why, o->payload);
	end = aptix_http_now_ms() + wait;
	for (;;) {
		int64_t now = aptix_http_now_ms();
		struct timespec ts;
		long slice;

		if (aptix__cancelled(o->cancel)) {
			aptix_error_set(APTIX_ERROR_OPENAI, "openai: cancelled");
			return APTIX_ECANCELLED;
		}
		if (now >= end)
			return 0;
		slice = end - now < SLEEP_SLICE_MS ? (long)(end - now) :
			SLEEP_SLICE_MS;
		ts.tv_sec = 0;
		ts.tv_nsec = slice * 1000000L;
		nanosleep(&ts, NULL);
	}
}

static void after_attempts(aptix_buf *msg, int attempts)
{
	if (attempts > 1)
		aptix_buf_printf(msg, " (after %d attempts)", attempts);
}

/*
 * What a request produced. HANDLED: out holds the answer and rc says
 * it; RETRY: worth another attempt, why says what went wrong.
 */
enum outcome { HANDLED, RETRY };

typedef int (*success_fn)(aptix_openai_result *out, struct stream *st,
			  void *ctx);

/*
 * POST body to c->url with retries. On a 2xx answer, success() makes
 * the result (a stream is parsed as it arrives by on_data/on_event).
 */
static int post(aptix_openai_result *out, struct call *c, const char *body,
		size_t len, success_fn success, void *ctx)
{
	const aptix_openai_options *o = c->opts;
	aptix_http_response resp;
	aptix_buf why = APTIX_BUF_INIT;
	int attempt, rc = 0;

	aptix_http_response_init(&resp);
	for (attempt = 1;; attempt++) {
		aptix_http_request req;
		struct stream st;
		enum outcome what = HANDLED;
		long retry_after = -1;
		int w;

		memset(&req, 0, sizeof(req));
		req.method = "POST";
		req.url = c->url;
		req.headers = c->headers;
		req.body = body;
		req.body_len = len;
		req.connect_timeout_ms = c->connect_ms;
		req.idle_timeout_ms = c->idle_ms;
		req.deadline = c->deadline;
		req.max_body = MAX_BODY;	/* an error body */
		req.on_data = on_data;
		req.payload = &st;
		req.cancel = o->cancel;

		memset(&st, 0, sizeof(st));
		st.c = c;
		st.out = out;
		st.resp = &resp;
		st.keep_raw = 1;
		aptix_sse_init(&st.sse, on_event, &st);

		/* a fresh result for this attempt */
		free(out->response_id);
		free(out->status);
		free(out->error_code);
		free(out->error_message);
		out->response_id = out->status = NULL;
		out->error_code = out->error_message = NULL;
		aptix_buf_clear(&out->text);
		aptix_buf_clear(&out->raw);
		memset(&out->usage, 0, sizeof(out->usage));
		out->previous_not_found = 0;
		out->http_status = 0;
		out->attempts = attempt;

		rc = aptix_http_perform(&resp, &req);
		out->http_status = resp.status;
		aptix_buf_clear(&why);
		if (!st.mode && resp.content_type)
			st.mode = !strncasecmp(resp.content_type,
					       "text/event-stream", 17) ? 1 : 2;
		if (rc == 0 && resp.status >= 200 && resp.status < 300) {
			if (st.mode == 1) {
				int incomplete;

				rc = aptix_sse_finish(&st.sse, &incomplete);
				if (!rc && !st.terminal)
					rc = stream_fail(APTIX_EINVALID,
						"openai: %s", "stream ended "
						"before response.completed");
			}
			if (!rc)
				rc = success(out, &st, ctx);
		} else if (rc == 0) {
			take_http_error(out, resp.status, &resp.body, o->api_key);
			aptix_buf_printf(&why, "HTTP %ld: %s", resp.status,
					 out->error_message ?
					 out->error_message :
					 reason_phrase(resp.status));
			/* the likely cause of a bare 404 */
			if (resp.status == 404 && !strstr(c->url, "/v1/"))
				aptix_buf_puts(&why, " (the base URL, "
					"OPENAI_BASE_URL or openai.base-url, "
					"does not end in /v1: the API is "
					"usually served there)");
			if (aptix_http_status_is_retryable(resp.status) &&
			    !(resp.status == 429 && out->error_code &&
			      !strcmp(out->error_code, "insufficient_quota"))) {
				what = RETRY;
				retry_after = resp.retry_after_ms;
			}
			rc = APTIX_EHTTP;
		} else if (st.terminal && rc == APTIX_ENET) {
			/* the answer was complete: ignore a broken ending */
			rc = success(out, &st, ctx);
		} else if (rc == APTIX_ENET) {
			aptix_buf_puts(&why, aptix_error_last()->message);
			if (!st.delivered && resp.transient)
				what = RETRY;
		}
		/* else: cancelled, too large, a malformed or failed stream */
		aptix_sse_release(&st.sse);
		if (aptix_buf_oom(&why)) {
			rc = aptix_error_oom();
			break;
		}

		if (what == RETRY && attempt < c->max_attempts) {
			w = wait_retry(c, attempt + 1, retry_after, why.ptr);
			if (w == 0)
				continue;
			if (w < 0) {
				rc = w;
				break;
			}
		}
		if (what == RETRY || rc == APTIX_EHTTP) {
			aptix_buf msg = APTIX_BUF_INIT;

			if (rc == APTIX_EHTTP && !why.len)
				break;	/* a failed response: message set */
			aptix_buf_printf(&msg, "openai: %s", why.ptr);
			after_attempts(&msg, attempt);
			aptix_error_set(APTIX_ERROR_OPENAI, "%s", msg.ptr);
			aptix_buf_release(&msg);
		} else if (rc == APTIX_ENET || rc == APTIX_ECANCELLED ||
			   rc == APTIX_EFULL) {
			const char *m = aptix_error_last()->message;
			aptix_buf msg = APTIX_BUF_INIT;

			if (strncmp(m, "openai: ", 8))
				aptix_buf_puts(&msg, "openai: ");
			aptix_buf_puts(&msg, m);
			after_attempts(&msg, attempt);
			aptix_error_set(APTIX_ERROR_OPENAI, "%s", msg.ptr);
			aptix_buf_release(&msg);
		}
		break;
	}
	aptix_buf_release(&why);
	aptix_http_response_release(&resp);
	return rc;
}

/* --- Responses ---------------------------------------------------------- */

static int respond_success(aptix_openai_result *out, struct stream *st,
			   void *ctx)
{
	const char *key = st->c->opts->api_key;
	json_t *doc;
	const char *status;
	int rc;

	(void)ctx;
	if (st->mode == 1) {
		/* the terminal event filled out, and raw */
		return 0;
	}
	doc = json_loadb(out->raw.ptr, out->raw.len, JSON_ALLOW_NUL, NULL);
	if (!json_is_object(doc)) {
		json_decref(doc);
		aptix_error_set(APTIX_ERROR_OPENAI, "openai: malformed response "
				"from server");
		return APTIX_EINVALID;
	}
	rc = take_response(out, doc, key);
	json_decref(doc);
	if (rc)
		return rc;
	status = out->status ? out->status : "";
	if (!strcmp(status, "failed") || !strcmp(status, "cancelled"))
		return failed_message(out, !strcmp(status, "failed") ?
				      "response failed" : "response cancelled");
	return 0;
}

static int body_wants_stream(const char *body, size_t len)
{
	json_t *doc = json_loadb(body, len, 0, NULL);
	int yes = json_is_true(json_object_get(doc, "stream"));

	json_decref(doc);
	return yes;
}

int aptix_openai_respond(aptix_openai_result *out,
			 const aptix_openai_options *opts,
			 const char *body, size_t len)
{
	struct call c;
	int rc;

	APTIX_ASSERT_ARG(out);
	aptix_openai_result_init(out);
	APTIX_ASSERT_ARG(opts);
	APTIX_ASSERT_ARG(body);
	if (aptix__cancelled(opts->cancel)) {
		aptix_error_set(APTIX_ERROR_OPENAI, "openai: cancelled");
		return APTIX_ECANCELLED;
	}
	if ((rc = call_init(&c, opts, "/responses",
			    body_wants_stream(body, len))) == 0)
		rc = post(out, &c, body, len, respond_success, NULL);
	call_release(&c);
	return rc;
}

/*
 * For the fuzzers (src/config/test-hooks.h): the answer handling of post() for
 * one attempt, from memory.
 */
int aptix_openai__parse_answer(aptix_openai_result *out, long status,
			       const char *content_type, const void *body,
			       size_t len, size_t chunk, const char *api_key)
{
	aptix_openai_options opts;
	aptix_http_response resp;
	struct call c;
	struct stream st;
	const char *p = body;
	size_t off, n;
	int rc = 0;

	aptix_openai_result_init(out);
	memset(&opts, 0, sizeof(opts));
	opts.api_key = api_key;
	memset(&c, 0, sizeof(c));
	c.opts = &opts;
	aptix_http_response_init(&resp);
	resp.status = status;
	if (content_type && !(resp.content_type = aptix__strdup(content_type)))
		return APTIX_ERROR;
	memset(&st, 0, sizeof(st));
	st.c = &c;
	st.out = out;
	st.resp = &resp;
	st.keep_raw = 1;
	aptix_sse_init(&st.sse, on_event, &st);
	out->http_status = status;
	out->attempts = 1;
	if (status >= 200 && status < 300) {
		for (off = 0; off < len && !rc; off += n) {
			n = chunk && chunk < len - off ? chunk : len - off;
			rc = on_data(p + off, n, &st);
		}
		if (!st.mode && resp.content_type)
			st.mode = !strncasecmp(resp.content_type,
					       "text/event-stream", 17) ? 1 : 2;
		if (!rc && st.mode == 1) {
			int incomplete;

			rc = aptix_sse_finish(&st.sse, &incomplete);
			if (!rc && !st.terminal)
				rc = stream_fail(APTIX_EINVALID, "openai: %s",
						 "stream ended before "
						 "response.completed");
		}
		if (!rc)
			rc = respond_success(out, &st, NULL);
	} else if (aptix_buf_set(&resp.body, body, len) < 0) {
		rc = APTIX_ERROR;
	} else {
		take_http_error(out, status, &resp.body, api_key);
		rc = APTIX_EHTTP;
	}
	aptix_sse_release(&st.sse);
	aptix_http_response_release(&resp);
	return rc;
}

/* --- Embeddings --------------------------------------------------------- */

struct embed_ctx {
	size_t n;
	float *vectors;
	size_t dim;
};

static int embed_bad(const char *why)
{
	aptix_error_set(APTIX_ERROR_OPENAI, "openai: malformed embeddings "
			"response from server: %s", why);
	return APTIX_EINVALID;
}

static int embed_success(aptix_openai_result *out, struct stream *st,
			 void *ctx)
{
	struct embed_ctx *e = ctx;
	json_t *doc, *data;
	unsigned char *seen = NULL;
	size_t i, j;
	int rc = 0;

	(void)st;
	doc = json_loadb(out->raw.ptr, out->raw.len, 0, NULL);
	data = json_object_get(doc, "data");
	if (!json_is_array(data)) {
		json_decref(doc);
		return embed_bad(doc ? "no data array" : "not JSON");
	}
	if (json_array_size(data) != e->n) {
		json_decref(doc);
		return embed_bad("wrong number of embeddings");
	}
	seen = aptix__calloc(e->n, 1);
	if (!seen) {
		json_decref(doc);
		return APTIX_ERROR;
	}
	for (i = 0; i < e->n && !rc; i++) {
		const json_t *item = json_array_get(data, i);
		const json_t *idx = json_object_get(item, "index");
		const json_t *vec = json_object_get(item, "embedding");
		size_t k, d = json_array_size(vec);

		if (!json_is_integer(idx)) {
			rc = embed_bad("an embedding without an index");
			break;
		}
		k = (size_t)json_integer_value(idx);
		if (json_integer_value(idx) < 0 || k >= e->n || seen[k]) {
			rc = embed_bad("bad or repeated index");
			break;
		}
		seen[k] = 1;
		if (!json_is_array(vec) || !d) {
			rc = embed_bad("an embedding is not an array of numbers");
			break;
		}
		if (!e->vectors) {
			if (d > SIZE_MAX / sizeof(float) / e->n) {
				rc = aptix_error_oom();
				break;
			}
			e->dim = d;
			e->vectors = aptix__malloc(e->n * d * sizeof(float));
			if (!e->vectors) {
				rc = APTIX_ERROR;
				break;
			}
		} else if (d != e->dim) {
			rc = embed_bad("the embeddings differ in dimension");
			break;
		}
		for (j = 0; j < d; j++) {
			const json_t *x = json_array_get(vec, j);

			if (!json_is_number(x)) {
				rc = embed_bad("an embedding is not an array "
					       "of numbers");
				break;
			}
			e->vectors[k * d + j] = (float)json_number_value(x);
		}
	}
	free(seen);
	json_decref(doc);
	if (rc) {
		free(e->vectors);
		e->vectors = NULL;
		e->dim = 0;
	}
	return rc;
}

int aptix_openai_embed(float **vectors, size_t *dim,
		       const aptix_openai_options *opts, const char *model,
		       const char *const *texts, size_t n)
{
	aptix_openai_result out;
	struct embed_ctx e;
	struct call c;
	json_t *req, *input;
	char *body = NULL;
	size_t i;
	int rc;

	APTIX_ASSERT_ARG(vectors);
	APTIX_ASSERT_ARG(dim);
	*vectors = NULL;
	*dim = 0;
	APTIX_ASSERT_ARG(opts);
	APTIX_ASSERT_ARG(model);
	APTIX_ASSERT_ARG(texts || !n);
	if (!n) {
		aptix_error_set(APTIX_ERROR_OPENAI, "openai: nothing to embed");
		return APTIX_EINVALID;
	}
	if (aptix__cancelled(opts->cancel)) {
		aptix_error_set(APTIX_ERROR_OPENAI, "openai: cancelled");
		return APTIX_ECANCELLED;
	}
	req = json_object();
	input = json_array();
	if (!req || !input ||
	    json_object_set_new(req, "model", json_string(model)) ||
	    json_object_set_new(req, "encoding_format", json_string("float")))
		goto oom;
	for (i = 0; i < n; i++)
		if (!texts[i] || json_array_append_new(input,
						       json_string(texts[i])))
			goto bad_text;
	if (json_object_set(req, "input", input) ||
	    !(body = json_dumps(req, JSON_COMPACT)))
		goto oom;
	json_decref(input);
	json_decref(req);

	memset(&e, 0, sizeof(e));
	e.n = n;
	aptix_openai_result_init(&out);
	if ((rc = call_init(&c, opts, "/embeddings", 0)) == 0)
		rc = post(&out, &c, body, strlen(body), embed_success, &e);
	call_release(&c);
	aptix_openai_result_release(&out);
	free(body);
	if (rc == 0) {
		*vectors = e.vectors;
		*dim = e.dim;
	} else {
		free(e.vectors);
	}
	return rc;

bad_text:
	json_decref(input);
	json_decref(req);
	aptix_error_set(APTIX_ERROR_OPENAI, "openai: text %zu to embed is "
			"NULL or not valid UTF-8", i);
	return APTIX_EINVALID;
oom:
	json_decref(input);
	json_decref(req);
	return aptix_error_oom();
}
