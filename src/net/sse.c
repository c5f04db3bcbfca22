/*
 * src/net/sse.c - incremental Server-Sent Events parser (see sse.h).
 */
#include "util/common.h"
#include <limits.h>
#include "net/sse.h"

static const unsigned char utf8_bom[3] = { 0xEF, 0xBB, 0xBF };

void aptix_sse_init(aptix_sse_parser *p, aptix_sse_event_cb cb,
		    void *payload)
{
	memset(p, 0, sizeof(*p));
	p->cb = cb;
	p->payload = payload;
	p->max_event = APTIX_SSE_MAX_EVENT;
	aptix_buf_init(&p->line, 0);
	aptix_buf_init(&p->data, 0);
	aptix_buf_init(&p->event, 0);
	aptix_buf_init(&p->last_id, 0);
	p->retry_ms = -1;
}

void aptix_sse_release(aptix_sse_parser *p)
{
	aptix_buf_release(&p->line);
	aptix_buf_release(&p->data);
	aptix_buf_release(&p->event);
	aptix_buf_release(&p->last_id);
}

static int fail(aptix_sse_parser *p, int code)
{
	p->error = code;
	return code;
}

static int too_big(aptix_sse_parser *p)
{
	aptix_error_set(APTIX_ERROR_HTTP,
			"event stream: event larger than %zu bytes",
			p->max_event);
	return fail(p, APTIX_EFULL);
}

static int put(aptix_sse_parser *p, aptix_buf *b, const void *d, size_t n)
{
	int rc = aptix_buf_put(b, d, n);	/* records the error */

	return rc < 0 ? fail(p, rc) : 0;
}

static int dispatch(aptix_sse_parser *p)
{
	const char *type;
	int rc;

	p->pending = 0;
	if (!p->data.len) {
		aptix_buf_clear(&p->event);
		return 0;
	}
	/* The data buffer always ends in the LF of its last data line. */
	aptix_buf_truncate(&p->data, p->data.len - 1);
	type = p->event.len ? p->event.ptr : "message";
	p->events++;
	rc = p->cb ? p->cb(type, p->data.ptr, p->data.len, p->payload) : 0;
	aptix_buf_clear(&p->data);
	aptix_buf_clear(&p->event);
	return rc ? fail(p, rc) : 0;
}

static int field_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && !memcmp(name, want, len);
}

static int process_line(aptix_sse_parser *p)
{
	const char *line = p->line.ptr, *colon, *value;
	size_t len = p->line.len, nlen, vlen;
	int rc = 0;

	if (!len)
		return dispatch(p);
	if (line[0] == ':')
		goto done;	/* a comment */
	colon = memchr(line, ':', len);
	if (colon) {
		nlen = (size_t)(colon - line);
		value = colon + 1;
		vlen = len - nlen - 1;
		if (vlen && *value == ' ') {
			value++;
			vlen--;
		}
	} else {
		nlen = len;
		value = line + len;
		vlen = 0;
	}
	p->pending = 1;
	if (field_is(line, nlen, "data")) {
		if (p->max_event && p->data.len + vlen + 1 > p->max_event)
			return too_big(p);
		if ((rc = put(p, &p->data, value, vlen)) < 0 ||
		    (rc = put(p, &p->data, "\n", 1)) < 0)
			return rc;
	} else if (field_is(line, nlen, "event")) {
		if (aptix_buf_set(&p->event, value, vlen) < 0)
			return fail(p, APTIX_ERROR);
	} else if (field_is(line, nlen, "id")) {
		if (!memchr(value, '\0', vlen) &&
		    aptix_buf_set(&p->last_id, value, vlen) < 0)
			return fail(p, APTIX_ERROR);
	} else if (field_is(line, nlen, "retry")) {
		size_t i;
		long v = 0;

		for (i = 0; i < vlen; i++) {
			if (value[i] < '0' || value[i] > '9')
				break;
			if (v <= (LONG_MAX - 9) / 10)
				v = v * 10 + (value[i] - '0');
		}
		if (vlen && i == vlen)
			p->retry_ms = v;
	}
	/* Other fields are ignored. */
done:
	aptix_buf_clear(&p->line);
	return 0;
}

static int process_bytes(aptix_sse_parser *p, const unsigned char *s,
			 size_t len)
{
	const unsigned char *end = s + len;
	int rc;

	while (s < end) {
		const unsigned char *q = s;

		if (p->after_cr) {
			p->after_cr = 0;
			if (*s == '\n') {
				s++;
				continue;
			}
		}
		while (q < end && *q != '\n' && *q != '\r')
			q++;
		if (q > s) {
			size_t n = (size_t)(q - s);

			if (p->max_event &&
			    p->line.len + p->data.len + n > p->max_event)
				return too_big(p);
			if ((rc = put(p, &p->line, s, n)) < 0)
				return rc;
		}
		if (q == end)
			break;
		p->after_cr = *q == '\r';
		s = q + 1;
		if ((rc = process_line(p)) != 0)
			return rc;
	}
	return 0;
}

int aptix_sse_feed(aptix_sse_parser *p, const void *data, size_t len)
{
	const unsigned char *s = data, *end = s + len;

	if (p->error)
		return p->error;
	while (!p->started && s < end) {
		if (*s == utf8_bom[p->bom]) {
			s++;
			if (++p->bom == sizeof(utf8_bom))
				p->started = 1;
			continue;
		}
		/* Not a BOM after all: the bytes matched so far are data. */
		p->started = 1;
		if (p->bom) {
			int rc = process_bytes(p, utf8_bom, p->bom);

			if (rc)
				return rc;
		}
	}
	if (s == end)
		return 0;
	return process_bytes(p, s, (size_t)(end - s));
}

int aptix_sse_finish(aptix_sse_parser *p, int *incomplete)
{
	int rc;

	if (incomplete)
		*incomplete = 0;
	if (p->error)
		return p->error;
	if (!p->started) {
		p->started = 1;
		if (p->bom && (rc = process_bytes(p, utf8_bom, p->bom)) != 0)
			return rc;
	}
	if (incomplete)
		*incomplete = p->line.len > 0 || p->pending;
	/* At the end of the stream pending data is discarded. */
	aptix_buf_clear(&p->line);
	aptix_buf_clear(&p->data);
	aptix_buf_clear(&p->event);
	p->pending = 0;
	p->after_cr = 0;
	return 0;
}
