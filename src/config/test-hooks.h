/*
 * src/config/test-hooks.h - entry points for the fuzzers and their replay
 * runners (t/fuzz/), internal to the library: parsers that otherwise
 * only read files or the network, fed from memory. They run the same
 * code as the real paths; nothing else calls them.
 */
#ifndef APTIX_TEST_HOOKS_H
#define APTIX_TEST_HOOKS_H

#include "util/common.h"
#include "aptix/config.h"
#include "aptix/openai.h"

/**
 * Parse config text as aptix_config_open() parses a file (named
 * "<memory>" in messages) into a new config; *out is NULL on error.
 */
int aptix_config__parse_buffer(aptix_config **out, const char *data,
			       size_t len);

/**
 * The text aptix_config_set() would write over a file holding data:
 * key set to value (NULL: removed), with the same checks.
 */
int aptix_config__edit_buffer(aptix_buf *out, const char *data, size_t len,
			      const char *key, const char *value);

/**
 * What aptix_openai_respond() makes of one HTTP answer to a Responses
 * request, without the network: the status, Content-Type (may be NULL)
 * and body as received, the body handed over in pieces of chunk bytes
 * (0: at once) as libcurl would. api_key is the key the request used
 * (for redaction). Returns what aptix_openai_respond() would return for
 * a last attempt; out is initialised here and released by the caller.
 */
int aptix_openai__parse_answer(aptix_openai_result *out, long status,
			       const char *content_type, const void *body,
			       size_t len, size_t chunk, const char *api_key);

#endif
