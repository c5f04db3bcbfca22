/*
 * t/fuzz/fuzz_openai_json.c - what the OpenAI client makes of an answer
 * to a Responses request: the SSE stream of events and their JSON, a
 * plain JSON Response object, an HTTP error body (through
 * aptix_openai__parse_answer(), src/config/test-hooks.h).
 *
 * Input: 1 byte of mode (status and Content-Type), 1 byte of chunk
 * size, then the body. Invariants: the API key never shows in the error
 * message, a success has no error and a response id when the body
 * gave one, and the result does not depend on the chunking.
 */
#include <string.h>
#include "fuzz.h"
#include "util/common.h"
#include "config/test-hooks.h"

#define KEY "sk-fuzz-0123456789abcdef"

static const struct {
	long status;
	const char *ctype;
} modes[] = {
	{ 200, "text/event-stream; charset=utf-8" },
	{ 200, "application/json" },
	{ 200, NULL },
	{ 400, "application/json" },
	{ 401, "application/json" },
	{ 429, "application/json" },
	{ 500, "application/json" },
	{ 502, "text/html" },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aptix_openai_result a, b;
	const char *body;
	size_t len, chunk;
	int m, ra, rb;

	if (size < 2)
		return 0;
	m = data[0] % (int)(sizeof(modes) / sizeof(modes[0]));
	chunk = data[1] % 17;
	body = (const char *)data + 2;
	len = size - 2;
	ra = aptix_openai__parse_answer(&a, modes[m].status, modes[m].ctype,
					body, len, 0, KEY);
	if (a.error_message)
		FUZZ_CHECK(!strstr(a.error_message, KEY));
	if (ra == 0) {
		FUZZ_CHECK(modes[m].status == 200);
		FUZZ_CHECK(!aptix_buf_oom(&a.text));
	}
	rb = aptix_openai__parse_answer(&b, modes[m].status, modes[m].ctype,
					body, len, chunk ? chunk : 1, KEY);
	FUZZ_CHECK(ra == rb);
	FUZZ_CHECK(a.text.len == b.text.len &&
		   !memcmp(a.text.ptr, b.text.ptr, a.text.len));
	FUZZ_CHECK(!a.response_id == !b.response_id &&
		   (!a.response_id || !strcmp(a.response_id, b.response_id)));
	FUZZ_CHECK(a.previous_not_found == b.previous_not_found);
	FUZZ_CHECK(!memcmp(&a.usage, &b.usage, sizeof(a.usage)));
	aptix_openai_result_release(&a);
	aptix_openai_result_release(&b);
	aptix_error_clear();
	return 0;
}
