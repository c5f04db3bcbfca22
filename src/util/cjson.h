/*
 * src/util/cjson.h - canonical JSON (objects-format.md, "Canonical JSON"),
 * over Jansson's values.
 */
#ifndef APTIX_CJSON_H
#define APTIX_CJSON_H

#include <jansson.h>
#include "aptix/buf.h"

/**
 * Append the canonical encoding of v: keys sorted bytewise, no white
 * space, integers only, minimal escapes. APTIX_EINVALID for a real
 * number, a NUL in a string or an integer beyond +-(2^53-1).
 */
int aptix_cjson_dump(aptix_buf *out, const json_t *v);

/** Parse JSON text strictly (duplicate keys rejected). NULL on error,
 *  with the message recorded and prefixed by what. */
json_t *aptix_json_parse(const char *text, size_t len, const char *what);

/** Pretty, human-readable JSON (indent 2, keys sorted) appended to out. */
int aptix_json_pretty(aptix_buf *out, const json_t *v);
/** One line of JSON (no white space, keys sorted) appended to out. */
int aptix_json_compact(aptix_buf *out, const json_t *v);

#endif
