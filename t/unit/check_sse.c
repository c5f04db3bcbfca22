/*
 * check_sse.c - unit tests for src/net/sse.c, the Server-Sent Events parser.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/common.h"
#include "net/sse.h"

Suite *sse_suite(void);

/*
 * The events are logged as "<type>=<len>:<data>;" so that a whole run
 * compares as one string (data may hold LFs and NULs).
 */
struct log {
	aptix_buf b;
	int stop_at;		/* return 99 from this event on (1-based) */
	int n;
};

static int log_event(const char *type, const char *data, size_t len,
		     void *payload)
{
	struct log *l = payload;

	ck_assert_ptr_nonnull(type);
	ck_assert_ptr_nonnull(data);
	ck_assert_int_eq(data[len], '\0');
	l->n++;
	aptix_buf_printf(&l->b, "%s=%zu:", type, len);
	aptix_buf_put(&l->b, data, len);
	aptix_buf_putc(&l->b, ';');
	if (l->stop_at && l->n >= l->stop_at)
		return 99;
	return 0;
}

/* Parse in chunks split at the given offsets; returns the log. */
static char *parse_split(const char *s, size_t len, const size_t *cuts,
			 size_t ncuts, int *incomplete)
{
	aptix_sse_parser p;
	struct log l;
	size_t i, at = 0;

	memset(&l, 0, sizeof(l));
	aptix_buf_init(&l.b, 0);
	aptix_sse_init(&p, log_event, &l);
	for (i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;

		ck_assert_int_eq(aptix_sse_feed(&p, s + at, end - at), 0);
		at = end;
	}
	ck_assert_int_eq(aptix_sse_finish(&p, incomplete), 0);
	aptix_sse_release(&p);
	return aptix_buf_detach(&l.b);
}

static char *parse_all(const char *s, size_t len, int *incomplete)
{
	return parse_split(s, len, NULL, 0, incomplete);
}

static void expect(const char *stream, const char *want, int want_incomplete)
{
	int inc = -1;
	char *got = parse_all(stream, strlen(stream), &inc);

	ck_assert_str_eq(got, want);
	ck_assert_int_eq(inc, want_incomplete);
	free(got);
}

START_TEST(test_basic)
{
	expect("event: a\ndata: hello\n\n", "a=5:hello;", 0);
	expect("data: x\n\n", "message=1:x;", 0);
	expect("data: one\n\ndata: two\n\n", "message=3:one;message=3:two;",
	       0);
	expect("", "", 0);
	/* several blank lines between events change nothing */
	expect("\n\n\ndata: x\n\n\n\n", "message=1:x;", 0);
}
END_TEST

START_TEST(test_multiline_data)
{
	expect("data: a\ndata: b\n\n", "message=3:a\nb;", 0);
	expect("data: a\ndata:\ndata: b\n\n", "message=4:a\n\nb;", 0);
	/* "data" without a colon is a data line with an empty value */
	expect("data\n\n", "message=0:;", 0);
	expect("data\ndata\n\n", "message=1:\n;", 0);
	/* JSON split on several lines */
	expect("event: e\ndata: {\"a\":\ndata: 1}\n\n", "e=8:{\"a\":\n1};", 0);
}
END_TEST

START_TEST(test_line_endings)
{
	expect("data: a\r\n\r\n", "message=1:a;", 0);
	expect("data: a\r\r", "message=1:a;", 0);
	expect("data: a\rdata: b\r\ndata: c\n\r\n", "message=5:a\nb\nc;", 0);
	expect("event: x\r\ndata: 1\r\n\r\nevent: y\rdata: 2\r\r",
	       "x=1:1;y=1:2;", 0);
	/* a CR LF pair is one line end, never a blank line */
	expect("data: a\r\ndata: b\r\n\r\n", "message=3:a\nb;", 0);
	/* but LF CR is two */
	expect("data: a\n\rdata: b\n\n", "message=1:a;message=1:b;", 0);
}
END_TEST

START_TEST(test_fields)
{
	/* only one leading space is removed */
	expect("data:x\n\n", "message=1:x;", 0);
	expect("data:  x\n\n", "message=2: x;", 0);
	expect("data: x \n\n", "message=2:x ;", 0);
	/* colons in the value are kept */
	expect("data: a:b: c\n\n", "message=6:a:b: c;", 0);
	/* unknown fields and wrong case are ignored */
	expect("foo: bar\nDATA: no\nData: no\ndata: yes\n\n",
	       "message=3:yes;", 0);
	/* an event with no data is not dispatched, and its type is reset */
	expect("event: lonely\n\ndata: x\n\n", "message=1:x;", 0);
	/* the last event field wins */
	expect("event: a\nevent: b\ndata: x\n\n", "b=1:x;", 0);
	/* an empty event field means "message" */
	expect("event:\ndata: x\n\n", "message=1:x;", 0);
}
END_TEST

START_TEST(test_id_retry)
{
	aptix_sse_parser p;
	struct log l;
	static const char s1[] = "id: 42\nretry: 1500\ndata: x\n\n";
	static const char s2[] = "retry: 15x\nretry:\nid\ndata: y\n\n";
	static const char s3[] = "id: a\0b\ndata: z\n\n";

	memset(&l, 0, sizeof(l));
	aptix_buf_init(&l.b, 0);
	aptix_sse_init(&p, log_event, &l);
	ck_assert_int_eq(p.retry_ms, -1);
	ck_assert_int_eq(aptix_sse_feed(&p, s1, sizeof(s1) - 1), 0);
	ck_assert_str_eq(p.last_id.ptr, "42");
	ck_assert_int_eq(p.retry_ms, 1500);
	/* bad retry values are ignored; an empty id resets it */
	ck_assert_int_eq(aptix_sse_feed(&p, s2, sizeof(s2) - 1), 0);
	ck_assert_int_eq(p.retry_ms, 1500);
	ck_assert_str_eq(p.last_id.ptr, "");
	/* an id holding a NUL is ignored */
	ck_assert_int_eq(aptix_sse_feed(&p, "id: 7\n", 6), 0);
	ck_assert_int_eq(aptix_sse_feed(&p, s3, sizeof(s3) - 1), 0);
	ck_assert_str_eq(p.last_id.ptr, "7");
	ck_assert_int_eq(aptix_sse_finish(&p, NULL), 0);
	ck_assert_str_eq(l.b.ptr, "message=1:x;message=1:y;message=1:z;");
	ck_assert_int_eq((int)p.events, 3);
	aptix_sse_release(&p);
	aptix_buf_release(&l.b);
}
END_TEST

START_TEST(test_comments)
{
	expect(": ping\n\n", "", 0);
	expect(":\n:another\ndata: x\n: in the middle\ndata: y\n\n",
	       "message=3:x\ny;", 0);
	/* keep-alive comments between events */
	expect("data: a\n\n: keep-alive\n\ndata: b\n\n",
	       "message=1:a;message=1:b;", 0);
	/* a comment alone leaves nothing pending */
	expect(": only a comment\n", "", 0);
}
END_TEST

START_TEST(test_bom)
{
	int inc;
	char *got;
	static const char bom2[] = "\xEF\xBB\xBF\xEF\xBB\xBF" "data: x\n\n";
	static const char part[] = "\xEF\xBB" "data: x\n\n";
	static const size_t cuts[] = { 1, 2 };

	expect("\xEF\xBB\xBF" "data: x\n\n", "message=1:x;", 0);
	/* the BOM split in pieces */
	got = parse_split("\xEF\xBB\xBF" "data: x\n\n", 12, cuts, 2, &inc);
	ck_assert_str_eq(got, "message=1:x;");
	free(got);
	/* only one BOM is stripped: the second starts an unknown field */
	expect(bom2, "", 0);
	/* a broken BOM is data (here an unknown field name) */
	expect(part, "", 0);
	/* a BOM later in the stream is not stripped */
	expect("data: a\n\n\xEF\xBB\xBF" "data: b\n\n", "message=1:a;", 0);
	/* a stream holding only part of a BOM */
	got = parse_all("\xEF\xBB", 2, &inc);
	ck_assert_str_eq(got, "");
	ck_assert_int_eq(inc, 1);
	free(got);
	got = parse_all("\xEF\xBB\xBF", 3, &inc);
	ck_assert_str_eq(got, "");
	ck_assert_int_eq(inc, 0);
	free(got);
}
END_TEST

/* A stream with every feature; its log parsed whole is the reference. */
static const char big[] =
	"\xEF\xBB\xBF: hello\r\n"
	"event: response.created\r\n"
	"data: {\"type\":\"response.created\"}\r\n"
	"\r\n"
	"id: 1\rretry: 10\r"
	"data: a\rdata: b\r\r"
	"event: x\n"
	"data:no-space\n"
	"data:  two spaces\n"
	"\n"
	": comment\r\n\r\n"
	"event: lonely\r\n\r\n"
	"data\r\n\r\n"
	"event: last\r\ndata: {\"k\":\"v\"}\r\n\r\n";

static const char big_log[] =
	"response.created=27:{\"type\":\"response.created\"};"
	"message=3:a\nb;"
	"x=20:no-space\n two spaces;"
	"message=0:;"
	"last=9:{\"k\":\"v\"};";

START_TEST(test_split_every_offset)
{
	size_t len = sizeof(big) - 1, i, j;
	int inc;
	char *got;

	got = parse_all(big, len, &inc);
	ck_assert_str_eq(got, big_log);
	ck_assert_int_eq(inc, 0);
	free(got);
	for (i = 0; i <= len; i++) {
		size_t cut[1];

		cut[0] = i;
		got = parse_split(big, len, cut, 1, &inc);
		ck_assert_msg(!strcmp(got, big_log), "split at %zu: %s", i, got);
		ck_assert_int_eq(inc, 0);
		free(got);
	}
	for (i = 0; i <= len; i++) {
		for (j = i; j <= len; j++) {
			size_t cut[2];

			cut[0] = i;
			cut[1] = j;
			got = parse_split(big, len, cut, 2, &inc);
			ck_assert_msg(!strcmp(got, big_log),
				      "split at %zu, %zu: %s", i, j, got);
			free(got);
		}
	}
}
END_TEST

START_TEST(test_byte_by_byte)
{
	size_t len = sizeof(big) - 1, i;
	size_t *cuts = malloc(len * sizeof(*cuts));
	int inc;
	char *got;

	ck_assert_ptr_nonnull(cuts);
	for (i = 0; i < len; i++)
		cuts[i] = i;
	got = parse_split(big, len, cuts, len, &inc);
	ck_assert_str_eq(got, big_log);
	ck_assert_int_eq(inc, 0);
	free(got);
	free(cuts);
}
END_TEST

START_TEST(test_incomplete)
{
	int inc;
	char *got;
	static const char *const cases[] = {
		"data: x\n",		/* no blank line */
		"data: x",		/* no line end at all */
		"data: a\n\ndata: b",
		"event: e\n",		/* a field, no data yet */
		": comment without end",
		"data: x\r",		/* the CR ends the line, not the event */
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		got = parse_all(cases[i], strlen(cases[i]), &inc);
		ck_assert_msg(inc == 1, "case %zu", i);
		ck_assert_str_eq(got, i == 2 ? "message=1:a;" : "");
		free(got);
	}
	got = parse_all("data: x\n\n: bye\n", 15, &inc);
	ck_assert_int_eq(inc, 0);
	ck_assert_str_eq(got, "message=1:x;");
	free(got);
}
END_TEST

START_TEST(test_nul_in_data)
{
	static const char s[] = "data: a\0b\n\n";
	int inc;
	char *got = parse_all(s, sizeof(s) - 1, &inc);

	ck_assert_int_eq(memcmp(got, "message=3:a\0b;", 15), 0);
	free(got);
}
END_TEST

START_TEST(test_callback_stops)
{
	aptix_sse_parser p;
	struct log l;
	static const char s[] = "data: 1\n\ndata: 2\n\ndata: 3\n\n";

	memset(&l, 0, sizeof(l));
	aptix_buf_init(&l.b, 0);
	l.stop_at = 2;
	aptix_sse_init(&p, log_event, &l);
	ck_assert_int_eq(aptix_sse_feed(&p, s, sizeof(s) - 1), 99);
	ck_assert_int_eq(l.n, 2);
	/* sticky */
	ck_assert_int_eq(aptix_sse_feed(&p, "data: 4\n\n", 9), 99);
	ck_assert_int_eq(aptix_sse_finish(&p, NULL), 99);
	ck_assert_int_eq(l.n, 2);
	aptix_sse_release(&p);
	aptix_buf_release(&l.b);
}
END_TEST

START_TEST(test_oversize)
{
	aptix_sse_parser p;
	struct log l;
	char line[300];
	int i;

	memset(&l, 0, sizeof(l));
	aptix_buf_init(&l.b, 0);

	/* one long line */
	aptix_sse_init(&p, log_event, &l);
	p.max_event = 100;
	memset(line, 'x', sizeof(line));
	ck_assert_int_eq(aptix_sse_feed(&p, "data: ", 6), 0);
	ck_assert_int_eq(aptix_sse_feed(&p, line, 90), 0);
	ck_assert_int_eq(aptix_sse_feed(&p, line, 90), APTIX_EFULL);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "larger than 100 bytes"));
	ck_assert_int_eq(aptix_sse_feed(&p, "\n\n", 2), APTIX_EFULL);
	ck_assert_int_eq(aptix_sse_finish(&p, NULL), APTIX_EFULL);
	aptix_sse_release(&p);

	/* many short data lines adding up */
	aptix_sse_init(&p, log_event, &l);
	p.max_event = 100;
	for (i = 0; i < 9; i++)
		ck_assert_int_eq(aptix_sse_feed(&p, "data: 123456789\n", 16), 0);
	ck_assert_int_eq(aptix_sse_feed(&p, "data: 123456789\n", 16),
			 APTIX_EFULL);
	aptix_sse_release(&p);

	/* many events each under the cap are fine */
	aptix_sse_init(&p, log_event, &l);
	p.max_event = 100;
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(aptix_sse_feed(&p, "data: 0123456789abcdef\n\n",
						 24), 0);
	ck_assert_int_eq(l.n, 100);
	aptix_sse_release(&p);
	aptix_buf_release(&l.b);
}
END_TEST

START_TEST(test_oversize_default)
{
	aptix_sse_parser p;
	size_t chunk = 1 << 20, fed = 0;
	char *buf = malloc(chunk);
	int rc = 0;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 'y', chunk);
	aptix_sse_init(&p, NULL, NULL);
	ck_assert_uint_eq(p.max_event, APTIX_SSE_MAX_EVENT);
	ck_assert_int_eq(aptix_sse_feed(&p, "data: ", 6), 0);
	while (fed < APTIX_SSE_MAX_EVENT + chunk && !rc) {
		rc = aptix_sse_feed(&p, buf, chunk);
		fed += chunk;
	}
	ck_assert_int_eq(rc, APTIX_EFULL);
	ck_assert_uint_le(fed, APTIX_SSE_MAX_EVENT + chunk);
	aptix_sse_release(&p);
	free(buf);
}
END_TEST

Suite *sse_suite(void)
{
	Suite *s = suite_create("sse");
	TCase *tc = tcase_create("sse");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_basic);
	tcase_add_test(tc, test_multiline_data);
	tcase_add_test(tc, test_line_endings);
	tcase_add_test(tc, test_fields);
	tcase_add_test(tc, test_id_retry);
	tcase_add_test(tc, test_comments);
	tcase_add_test(tc, test_bom);
	tcase_add_test(tc, test_split_every_offset);
	tcase_add_test(tc, test_byte_by_byte);
	tcase_add_test(tc, test_incomplete);
	tcase_add_test(tc, test_nul_in_data);
	tcase_add_test(tc, test_callback_stops);
	tcase_add_test(tc, test_oversize);
	tcase_add_test(tc, test_oversize_default);
	suite_add_tcase(s, tc);
	return s;
}
