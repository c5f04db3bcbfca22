/*
 * src/secret/secrets.c - see secrets.h.
 */
#define _GNU_SOURCE 1	/* memmem */
#include "util/common.h"
#include "secret/secrets.h"

static size_t key_len(const char *key)
{
	size_t klen = key ? strlen(key) : 0;

	return klen >= 8 ? klen : 0;
}

long aptix__find_secret(size_t *off, const void *data, size_t len,
			const char *const *keys, size_t nkeys)
{
	size_t i;

	for (i = 0; i < nkeys; i++) {
		size_t klen = key_len(keys[i]);
		const char *p;

		if (!klen || klen > len ||
		    !(p = memmem(data, len, keys[i], klen)))
			continue;
		if (off)
			*off = (size_t)(p - (const char *)data);
		return (long)i;
	}
	return -1;
}

int aptix__holds_secret(const void *data, size_t len,
			const char *const *keys, size_t nkeys)
{
	return aptix__find_secret(NULL, data, len, keys, nkeys) >= 0;
}

int aptix__redact_secrets(aptix_buf *b, const char *const *keys,
			  size_t nkeys)
{
	aptix_buf out = APTIX_BUF_INIT;
	size_t off, start = 0;
	long k;
	int n = 0;

	if (!b->len)
		return 0;
	while ((k = aptix__find_secret(&off, b->ptr + start, b->len - start,
				       keys, nkeys)) >= 0) {
		aptix_buf_put(&out, b->ptr + start, off);
		aptix_buf_puts(&out, APTIX_REDACTED);
		start += off + strlen(keys[k]);
		n++;
	}
	if (!n)
		return 0;
	aptix_buf_put(&out, b->ptr + start, b->len - start);
	if (aptix_buf_oom(&out)) {
		aptix_buf_release(&out);
		aptix_buf_release(b);
		return aptix_error_oom();
	}
	aptix_buf_release(b);
	*b = out;
	return n;
}

int aptix__redact_secrets_str(char **s, const char *const *keys,
			      size_t nkeys)
{
	aptix_buf b = APTIX_BUF_INIT;
	int n;

	if (!*s || !aptix__holds_secret(*s, strlen(*s), keys, nkeys))
		return 0;
	aptix_buf_puts(&b, *s);
	n = aptix__redact_secrets(&b, keys, nkeys);
	free(*s);
	*s = n < 0 ? NULL : aptix_buf_detach(&b);
	aptix_buf_release(&b);
	return n < 0 ? n : *s ? n : APTIX_ERROR;
}

void aptix__redact_stream_init(struct aptix__redact_stream *rs,
			       const char *const *keys, size_t nkeys,
			       int (*emit)(const char *, size_t, void *),
			       void *payload)
{
	rs->keys = keys;
	rs->nkeys = nkeys;
	rs->emit = emit;
	rs->payload = payload;
	aptix_buf_init(&rs->held, 0);
}

/* The longest tail of s[0..n) that is a proper prefix of one of the keys. */
static size_t key_start_tail(const char *s, size_t n,
			     const char *const *keys, size_t nkeys)
{
	size_t best = 0, i, t;

	for (i = 0; i < nkeys; i++) {
		size_t klen = key_len(keys[i]);

		for (t = klen ? klen - 1 : 0; t > best; t--)
			if (t <= n && !memcmp(s + n - t, keys[i], t)) {
				best = t;
				break;
			}
	}
	return best;
}

int aptix__redact_stream_feed(struct aptix__redact_stream *rs,
			      const char *text, size_t len)
{
	aptix_buf *h = &rs->held;
	size_t keep, show;
	int r;

	if (aptix_buf_put(h, text, len) < 0 ||
	    aptix__redact_secrets(h, rs->keys, rs->nkeys) < 0) {
		aptix_buf_release(h);
		return APTIX_ERROR;
	}
	keep = key_start_tail(h->ptr, h->len, rs->keys, rs->nkeys);
	show = h->len - keep;
	if (!show)
		return 0;
	r = rs->emit(h->ptr, show, rs->payload);
	memmove(h->ptr, h->ptr + show, keep);
	aptix_buf_truncate(h, keep);
	return r;
}

int aptix__redact_stream_flush(struct aptix__redact_stream *rs)
{
	int r = 0;

	if (rs->held.len)
		r = rs->emit(rs->held.ptr, rs->held.len, rs->payload);
	aptix_buf_clear(&rs->held);
	return r;
}

void aptix__redact_stream_release(struct aptix__redact_stream *rs)
{
	aptix_buf_release(&rs->held);
}

/* The user information of URL s: its start and length (0: none). */
static size_t userinfo(const char **at, const char *s)
{
	const char *p = s ? strstr(s, "://") : NULL;
	size_t n, i, len = 0;

	*at = NULL;
	if (!p || p == s)
		return 0;
	p += 3;
	n = strcspn(p, "/?#");
	/* the last '@' of the authority ends it (libpq reads it so) */
	for (i = 0; i < n; i++)
		if (p[i] == '@')
			len = i + 1;
	if (!len)
		return 0;
	*at = p;
	return len - 1;
}

int aptix__url_has_password(const char *s)
{
	const char *p;
	size_t n = userinfo(&p, s);

	return n && memchr(p, ':', n) != NULL;
}

int aptix__url_is_postgresql(const char *s)
{
	return s && (!strncasecmp(s, "postgresql://", 13) ||
		     !strncasecmp(s, "postgres://", 11));
}

int aptix__url_has_userinfo(const char *s)
{
	const char *p = s ? strstr(s, "://") : NULL;
	size_t n;

	if (!p || p == s)
		return 0;
	p += 3;
	n = strcspn(p, "/?#");
	return memchr(p, '@', n) != NULL;
}
