/*
 * src/util/cjson.c - canonical JSON writer and strict parsing helpers.
 */
#include "util/common.h"
#include "util/cjson.h"

#define MAX_SAFE_INT 9007199254740991LL

static int dump_string(aptix_buf *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, start = 0;

	aptix_buf_putc(out, '"');
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[7];
		size_t elen = 2;

		if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f)
			continue;
		if (c == 0) {
			aptix_error_set(APTIX_ERROR_JSON,
					"NUL byte in a string");
			return APTIX_EINVALID;
		}
		esc[0] = '\\';
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 0xf];
			elen = 6;
		}
		aptix_buf_put(out, s + start, i - start);
		aptix_buf_put(out, esc, elen);
		start = i + 1;
	}
	aptix_buf_put(out, s + start, len - start);
	aptix_buf_putc(out, '"');
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int aptix_cjson_dump(aptix_buf *out, const json_t *v)
{
	size_t i, n;
	int r = 0;

	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char **keys;
		const char *key;
		json_t *val;

		n = json_object_size(v);
		keys = aptix__calloc(n ? n : 1, sizeof(*keys));
		if (!keys)
			return APTIX_ERROR;
		i = 0;
		json_object_foreach((json_t *)v, key, val)
			keys[i++] = key;
		qsort(keys, n, sizeof(*keys), key_cmp);
		aptix_buf_putc(out, '{');
		for (i = 0; i < n && !r; i++) {
			if (i)
				aptix_buf_putc(out, ',');
			r = dump_string(out, keys[i], strlen(keys[i]));
			aptix_buf_putc(out, ':');
			if (!r)
				r = aptix_cjson_dump(out,
					json_object_get(v, keys[i]));
		}
		aptix_buf_putc(out, '}');
		free(keys);
		break;
	}
	case JSON_ARRAY:
		aptix_buf_putc(out, '[');
		n = json_array_size(v);
		for (i = 0; i < n && !r; i++) {
			if (i)
				aptix_buf_putc(out, ',');
			r = aptix_cjson_dump(out, json_array_get(v, i));
		}
		aptix_buf_putc(out, ']');
		break;
	case JSON_STRING:
		r = dump_string(out, json_string_value(v),
				json_string_length(v));
		break;
	case JSON_INTEGER: {
		json_int_t x = json_integer_value(v);

		if (x > MAX_SAFE_INT || x < -MAX_SAFE_INT) {
			aptix_error_set(APTIX_ERROR_JSON,
					"integer out of range");
			return APTIX_EINVALID;
		}
		aptix_buf_printf(out, "%lld", (long long)x);
		break;
	}
	case JSON_REAL:
		aptix_error_set(APTIX_ERROR_JSON,
				"real numbers are not allowed");
		return APTIX_EINVALID;
	case JSON_TRUE:
		aptix_buf_puts(out, "true");
		break;
	case JSON_FALSE:
		aptix_buf_puts(out, "false");
		break;
	case JSON_NULL:
		aptix_buf_puts(out, "null");
		break;
	}
	if (!r && aptix_buf_oom(out))
		return APTIX_ERROR;
	return r;
}

json_t *aptix_json_parse(const char *text, size_t len, const char *what)
{
	json_error_t err;
	const char *nul = len ? memchr(text, '\0', len) : NULL, *p;
	json_t *v;
	int line = 1, column = 1;

	/* Jansson lets a raw NUL byte through in some places */
	if (nul) {
		for (p = text; p < nul; p++, column++)
			if (*p == '\n') {
				line++;
				column = 0;
			}
		aptix_error_set(APTIX_ERROR_JSON, "%s: malformed JSON at "
				"line %d column %d: NUL byte in the input",
				what, line, column);
		return NULL;
	}
	v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (!v)
		aptix_error_set(APTIX_ERROR_JSON, "%s: malformed JSON at "
				"line %d column %d: %s", what, err.line,
				err.column, err.text);
	return v;
}

static int dump(aptix_buf *out, const json_t *v, size_t flags)
{
	char *s = json_dumps(v, flags);

	if (!s)
		return aptix_error_oom();
	aptix_buf_puts(out, s);
	free(s);
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

int aptix_json_pretty(aptix_buf *out, const json_t *v)
{
	return dump(out, v, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

int aptix_json_compact(aptix_buf *out, const json_t *v)
{
	return dump(out, v, JSON_COMPACT | JSON_SORT_KEYS);
}
