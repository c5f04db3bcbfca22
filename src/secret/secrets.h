/*
 * src/secret/secrets.h - keeping the API keys out of everything aptix stores or
 * sends: files and chunks holding the value of a key are not sent,
 * indexed nor stored, and raw payloads have them redacted before they
 * are stored. The library reads no key from the environment: the caller
 * names the keys it was given. The credential detector (credscan.c)
 * builds on these and adds the rules for credentials aptix was not told.
 */
#ifndef APTIX_SECRETS_H
#define APTIX_SECRETS_H

#include <stddef.h>
#include "aptix/buf.h"

/* What replaces a key in a redacted payload. */
#define APTIX_REDACTED "<redacted>"

/*
 * The first of the nkeys keys found in data: its index (its place in
 * data in *off when off is not NULL), or -1 when none is there. NULL
 * entries and keys of fewer than 8 characters are ignored.
 */
long aptix__find_secret(size_t *off, const void *data, size_t len,
			const char *const *keys, size_t nkeys);

/* 1 when data holds one of the nkeys keys (see aptix__find_secret). */
int aptix__holds_secret(const void *data, size_t len,
			const char *const *keys, size_t nkeys);

/*
 * Replace every occurrence of the keys in b by APTIX_REDACTED. Returns
 * the number of replacements, or APTIX_ERROR (out of memory: b is
 * released, so that no copy with a key survives).
 */
int aptix__redact_secrets(aptix_buf *b, const char *const *keys,
			  size_t nkeys);

/* The same for a malloc'd string (*s may be NULL). */
int aptix__redact_secrets_str(char **s, const char *const *keys,
			      size_t nkeys);

/*
 * Redaction of a text that arrives in pieces (the deltas of a streamed
 * answer): each piece goes on to emit with the keys redacted, except a
 * tail that could be the start of a key, which is held back until the
 * next piece shows whether it is one (a key cut across two pieces) or
 * until the end (flush). keys are borrowed for the life of the stream.
 */
struct aptix__redact_stream {
	const char *const *keys;
	size_t nkeys;
	int (*emit)(const char *text, size_t len, void *payload);
	void *payload;
	aptix_buf held;
};

void aptix__redact_stream_init(struct aptix__redact_stream *rs,
			       const char *const *keys, size_t nkeys,
			       int (*emit)(const char *, size_t, void *),
			       void *payload);

/*
 * Add a piece: emit what is safe to show. Returns emit's non-zero value,
 * or APTIX_ERROR (out of memory: what was held is dropped, never shown
 * unredacted).
 */
int aptix__redact_stream_feed(struct aptix__redact_stream *rs,
			      const char *text, size_t len);

/* The end of the text: emit what was held back (no whole key). */
int aptix__redact_stream_flush(struct aptix__redact_stream *rs);

void aptix__redact_stream_release(struct aptix__redact_stream *rs);

/*
 * 1 when s is a URL with user information ("scheme://user:pass@host"
 * or "scheme://user@host"): an '@' in the authority, before the first
 * '/', '?' or '#' after "://".
 */
int aptix__url_has_userinfo(const char *s);
/*
 * 1 when s is a URL whose user information holds a password
 * ("scheme://user:pass@host"): a ':' before the '@'.
 */
int aptix__url_has_password(const char *s);
/*
 * 1 when s is a libpq URL (postgresql:// or postgres://), whose user
 * name is no secret: only a password in it is one.
 */
int aptix__url_is_postgresql(const char *s);

#endif
