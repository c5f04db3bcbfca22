/*
 * src/object/pack.c - the packed stored form of turns and sessions, and the
 * JSON string escapings that spliced blobs name (objects-format.md,
 * "Storage", format 2).
 *
 * A packed value is the canonical JSON text re-written as tagged
 * binary: keys of a fixed dictionary are one byte, 64-digit hex ids
 * are their 32 bytes, UUIDs their 16, integers varints. Strings keep
 * their escaped bytes, so unpacking writes them back as they were: the
 * canonical text is the one and only output. The writer unpacks what it
 * packed and keeps the packed form only when the bytes are identical.
 */
#include "util/common.h"
#include "object/zstream.h"

enum {
	PK_END = 0x00,		/* end of an object's keys or an array */
	PK_FALSE = 0x01, PK_TRUE, PK_NULL, PK_UINT, PK_NINT, PK_STR,
	PK_HEX32, PK_UUID, PK_OBJECT, PK_ARRAY
};

#define PK_MAX_DEPTH 32

/*
 * The key dictionary: key k is written as the byte k + 2 (0 ends an
 * object, 1 starts a literal key). Append only: the index is the format.
 */
static const char *const dict[] = {
	"answer", "binary", "cached_tokens", "chain_expires_at",
	"chain_restarted", "chunk_id", "chunks", "completion_tokens",
	"content", "content_hash", "conversation", "created_at",
	"duration_ms", "end_line", "errors", "files", "forked_from",
	"input_tokens", "instruction", "metadata", "mode", "model",
	"model_requests", "output_tokens", "parent", "path",
	"previous_response_id", "prompt_tokens", "reasoning_tokens", "repo",
	"request", "response", "response_at", "response_id", "run_summary",
	"score_micro", "sent", "seq", "session_type", "sha256", "size",
	"snippet", "start_line", "status", "status_at", "title",
	"too_large", "total_tokens", "touched", "transport", "turn",
	"usage", "v", "warnings", "workspace", "worktree", "commit",
	"branch", "dirty"
};
#define NDICT (sizeof(dict) / sizeof(dict[0]))

static const char hexdig[] = "0123456789abcdef";

/* v in decimal, after a '-' when neg (num: 24 bytes of room). */
static int put_int(aptix_buf *out, char *num, uint64_t v, int neg)
{
	char *p = num + 23;

	*p = '\0';
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (neg)
		*--p = '-';
	return aptix_buf_put(out, p, (size_t)(num + 23 - p));
}

void aptix__put_varint(aptix_buf *out, uint64_t v)
{
	unsigned char b[10];

	aptix_buf_put(out, b, aptix__varint_encode(b, v));
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The len bytes at s are lowercase hex digits, with dashes where given. */
static int is_hex(const char *s, size_t len, const char *dashes)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (dashes && dashes[i] == '-') {
			if (s[i] != '-')
				return 0;
		} else if (hexval((unsigned char)s[i]) < 0) {
			return 0;
		}
	}
	return 1;
}

static const char uuid_form[] = "........-....-....-....-............";

static void put_hex_bytes(aptix_buf *out, const char *s, size_t len)
{
	unsigned char b[32];
	size_t i, n = 0;

	for (i = 0; i + 1 < len; ) {
		if (s[i] == '-') {
			i++;
			continue;
		}
		b[n++] = (unsigned char)(hexval((unsigned char)s[i]) << 4 |
					 hexval((unsigned char)s[i + 1]));
		i += 2;
	}
	aptix_buf_put(out, b, n);
}

struct pk {
	const char *p, *end;
	aptix_buf *out;
};

/* A string at pk->p (its opening quote): the escaped bytes, and length. */
static int scan_string(struct pk *k, const char **s, size_t *len)
{
	const char *q = k->p + 1;

	while (q < k->end && *q != '"') {
		if ((unsigned char)*q < 0x20)
			return -1;
		q += *q == '\\' ? 2 : 1;
	}
	if (q >= k->end)
		return -1;
	*s = k->p + 1;
	*len = (size_t)(q - *s);
	k->p = q + 1;
	return 0;
}

static int pack_value(struct pk *k, int depth);

static int pack_key(struct pk *k)
{
	const char *s;
	size_t len, i;

	if (k->p >= k->end || *k->p != '"' || scan_string(k, &s, &len) < 0)
		return -1;
	for (i = 0; i < NDICT; i++)
		if (strlen(dict[i]) == len && !memcmp(dict[i], s, len)) {
			aptix__put_varint(k->out, i + 2);
			return 0;
		}
	aptix__put_varint(k->out, 1);
	aptix__put_varint(k->out, len);
	aptix_buf_put(k->out, s, len);
	return 0;
}

static int pack_int(struct pk *k)
{
	int neg = *k->p == '-';
	const char *q = k->p + neg;
	uint64_t v = 0;

	if (q >= k->end || *q < '0' || *q > '9')
		return -1;
	if (*q == '0' && (neg || (q + 1 < k->end && q[1] >= '0' &&
				  q[1] <= '9')))
		return -1;	/* -0 and leading zeros are not canonical */
	for (; q < k->end && *q >= '0' && *q <= '9'; q++) {
		if (v > ((uint64_t)1 << 53))
			return -1;
		v = v * 10 + (uint64_t)(*q - '0');
	}
	aptix_buf_putc(k->out, (char)(neg ? PK_NINT : PK_UINT));
	aptix__put_varint(k->out, v);
	k->p = q;
	return 0;
}

static int word(struct pk *k, const char *w, int tag)
{
	size_t n = strlen(w);

	if ((size_t)(k->end - k->p) < n || memcmp(k->p, w, n))
		return -1;
	k->p += n;
	aptix_buf_putc(k->out, (char)tag);
	return 0;
}

static int pack_value(struct pk *k, int depth);

/*
 * The object (close '}': members of key, ':', value) or the array
 * (close ']': elements) whose opening bracket is at k->p.
 */
static int pack_members(struct pk *k, int depth, char close)
{
	k->p++;
	if (k->p < k->end && *k->p == close) {
		k->p++;
		aptix_buf_putc(k->out, PK_END);
		return 0;
	}
	for (;;) {
		if (close == '}' && (pack_key(k) < 0 || k->p >= k->end ||
				     *k->p++ != ':'))
			return -1;
		if (pack_value(k, depth + 1) < 0 || k->p >= k->end)
			return -1;
		if (*k->p == close) {
			k->p++;
			break;
		}
		if (*k->p++ != ',')
			return -1;
	}
	aptix_buf_putc(k->out, PK_END);
	return 0;
}

static int pack_value(struct pk *k, int depth)
{
	const char *s;
	size_t len;

	if (k->p >= k->end || depth > PK_MAX_DEPTH)
		return -1;
	switch (*k->p) {
	case '{':
		aptix_buf_putc(k->out, PK_OBJECT);
		return pack_members(k, depth, '}');
	case '[':
		aptix_buf_putc(k->out, PK_ARRAY);
		return pack_members(k, depth, ']');
	case '"':
		if (scan_string(k, &s, &len) < 0)
			return -1;
		if (len == 64 && is_hex(s, len, NULL)) {
			aptix_buf_putc(k->out, PK_HEX32);
			put_hex_bytes(k->out, s, len);
		} else if (len == 36 && is_hex(s, len, uuid_form)) {
			aptix_buf_putc(k->out, PK_UUID);
			put_hex_bytes(k->out, s, len);
		} else {
			aptix_buf_putc(k->out, PK_STR);
			aptix__put_varint(k->out, len);
			aptix_buf_put(k->out, s, len);
		}
		return 0;
	case 't':
		return word(k, "true", PK_TRUE);
	case 'f':
		return word(k, "false", PK_FALSE);
	case 'n':
		return word(k, "null", PK_NULL);
	default:
		return pack_int(k);
	}
}

int aptix__pack_json(aptix_buf *out, const void *json, size_t len)
{
	struct pk k;

	aptix_buf_clear(out);
	k.p = json;
	k.end = k.p + len;
	k.out = out;
	if (!len || k.end[-1] != '\n')
		return -1;
	k.end--;
	if (pack_value(&k, 0) < 0 || k.p != k.end || aptix_buf_oom(out))
		return -1;
	return 0;
}

struct upk {
	const unsigned char *p, *end;
	aptix_buf *out;
};

/* n bytes as hex, with dashes where given: one append (ids are most of it). */
static void put_hex(aptix_buf *out, const unsigned char *b, size_t n,
		    const char *dashes)
{
	char s[2 * 32 + 8];
	size_t i, j = 0, k = 0;

	for (i = 0; i < n && i < 32; i++) {
		if (dashes)
			while (dashes[j] == '-') {
				s[k++] = '-';
				j++;
			}
		s[k++] = hexdig[b[i] >> 4];
		s[k++] = hexdig[b[i] & 15];
		j += 2;
	}
	aptix_buf_put(out, s, k);
}

static int unpack_value(struct upk *u, int tag, int depth);

static int unpack_next(struct upk *u, int depth)
{
	if (u->p >= u->end)
		return -1;
	return unpack_value(u, *u->p++, depth);
}

static int unpack_bytes(struct upk *u, const unsigned char **s,
			uint64_t *len)
{
	if (aptix__get_varint(len, &u->p, u->end) < 0 ||
	    *len > (uint64_t)(u->end - u->p))
		return -1;
	*s = u->p;
	u->p += *len;
	return 0;
}

static int unpack_value(struct upk *u, int tag, int depth)
{
	const unsigned char *s;
	uint64_t v;
	int first = 1;
	char num[24];

	if (depth > PK_MAX_DEPTH)
		return -1;
	switch (tag) {
	case PK_FALSE:
		return aptix_buf_puts(u->out, "false");
	case PK_TRUE:
		return aptix_buf_puts(u->out, "true");
	case PK_NULL:
		return aptix_buf_puts(u->out, "null");
	case PK_UINT:
	case PK_NINT:
		if (aptix__get_varint(&v, &u->p, u->end) < 0 ||
		    v > ((uint64_t)1 << 53))
			return -1;
		return put_int(u->out, num, v, tag == PK_NINT);
	case PK_STR:
		if (unpack_bytes(u, &s, &v) < 0)
			return -1;
		aptix_buf_putc(u->out, '"');
		aptix_buf_put(u->out, s, (size_t)v);
		return aptix_buf_putc(u->out, '"');
	case PK_HEX32:
	case PK_UUID:
		v = tag == PK_HEX32 ? 32 : 16;
		if ((uint64_t)(u->end - u->p) < v)
			return -1;
		aptix_buf_putc(u->out, '"');
		put_hex(u->out, u->p, (size_t)v, tag == PK_UUID ? uuid_form :
			NULL);
		u->p += v;
		return aptix_buf_putc(u->out, '"');
	case PK_OBJECT:
		aptix_buf_putc(u->out, '{');
		for (;;) {
			if (aptix__get_varint(&v, &u->p, u->end) < 0)
				return -1;
			if (v == PK_END)
				break;
			if (!first)
				aptix_buf_putc(u->out, ',');
			first = 0;
			aptix_buf_putc(u->out, '"');
			if (v == 1) {
				if (unpack_bytes(u, &s, &v) < 0)
					return -1;
				aptix_buf_put(u->out, s, (size_t)v);
			} else if (v - 2 < NDICT) {
				aptix_buf_puts(u->out, dict[v - 2]);
			} else {
				return -1;
			}
			aptix_buf_puts(u->out, "\":");
			if (unpack_next(u, depth + 1) < 0)
				return -1;
		}
		return aptix_buf_putc(u->out, '}');
	case PK_ARRAY:
		aptix_buf_putc(u->out, '[');
		while (u->p < u->end && *u->p != PK_END) {
			if (!first)
				aptix_buf_putc(u->out, ',');
			first = 0;
			if (unpack_next(u, depth + 1) < 0)
				return -1;
		}
		if (u->p >= u->end)
			return -1;
		u->p++;
		return aptix_buf_putc(u->out, ']');
	default:
		return -1;
	}
}

int aptix__unpack_json(aptix_buf *out, const void *packed, size_t len)
{
	struct upk u;

	aptix_buf_clear(out);
	u.p = packed;
	u.end = u.p + len;
	u.out = out;
	if (unpack_next(&u, 0) < 0 || u.p != u.end ||
	    aptix_buf_putc(out, '\n') < 0 || aptix_buf_oom(out))
		return -1;
	return 0;
}

/*
 * The escaped form of text inside a JSON string, as a writer of kind
 * `kind` writes it: 0 escapes only what JSON requires (", \, the
 * controls, with \b \f \n \r \t and lowercase \u00xx), 1 also writes
 * every non-ASCII character as \uxxxx (surrogate pairs above U+FFFF),
 * as Python's json.dumps does. -1 when kind 1 meets invalid UTF-8.
 */
int aptix__json_escape(aptix_buf *out, const void *text, size_t len,
		       int kind)
{
	const unsigned char *p = text, *end = p + len;
	char u[16];

	aptix_buf_clear(out);
	while (p < end) {
		unsigned c = *p;

		switch (c) {
		case '"': aptix_buf_puts(out, "\\\""); p++; continue;
		case '\\': aptix_buf_puts(out, "\\\\"); p++; continue;
		case '\b': aptix_buf_puts(out, "\\b"); p++; continue;
		case '\f': aptix_buf_puts(out, "\\f"); p++; continue;
		case '\n': aptix_buf_puts(out, "\\n"); p++; continue;
		case '\r': aptix_buf_puts(out, "\\r"); p++; continue;
		case '\t': aptix_buf_puts(out, "\\t"); p++; continue;
		default: break;
		}
		if (c < 0x20) {
			snprintf(u, sizeof(u), "\\u%04x", c);
			aptix_buf_puts(out, u);
			p++;
		} else if (c < 0x80 || kind == 0) {
			aptix_buf_putc(out, (char)c);
			p++;
		} else {
			unsigned cp, n, i;

			if (c >= 0xf0 && c < 0xf5)
				n = 3, cp = c & 7;
			else if (c >= 0xe0)
				n = 2, cp = c & 15;
			else if (c >= 0xc2 && c < 0xe0)
				n = 1, cp = c & 31;
			else
				return -1;
			if ((size_t)(end - p) <= n)
				return -1;
			for (i = 1; i <= n; i++) {
				if ((p[i] & 0xc0) != 0x80)
					return -1;
				cp = cp << 6 | (p[i] & 0x3f);
			}
			if (cp >= 0x10000) {
				cp -= 0x10000;
				snprintf(u, sizeof(u), "\\u%04x\\u%04x",
					 0xd800 + (cp >> 10),
					 0xdc00 + (cp & 0x3ff));
			} else {
				snprintf(u, sizeof(u), "\\u%04x", cp);
			}
			aptix_buf_puts(out, u);
			p += n + 1;
		}
	}
	return aptix_buf_oom(out) ? -1 : 0;
}
