/*
 * t/fuzz/fuzz_sse.c - the Server-Sent Events parser (src/net/sse.h).
 *
 * Input: 1 byte of chunking seed, then the stream. The stream is fed in
 * pieces whose sizes the seed draws (split anywhere, as the network
 * does), then whole. Invariant: the events (type, data) and the ending
 * (incomplete or not) are the same whatever the chunking.
 */
#include <string.h>
#include "fuzz.h"
#include "util/common.h"
#include "net/sse.h"

struct log {
	aptix_buf b;
	size_t n;
};

static int on_event(const char *type, const char *data, size_t len,
		    void *payload)
{
	struct log *l = payload;

	FUZZ_CHECK(type && data && data[len] == '\0');
	aptix_buf_printf(&l->b, "%zu:%s:%zu:", strlen(type), type, len);
	aptix_buf_put(&l->b, data, len);
	l->n++;
	return 0;
}

static int run(struct log *l, const uint8_t *p, size_t n, unsigned seed,
	       size_t max_event, int *incomplete)
{
	aptix_sse_parser ps;
	size_t off = 0, piece;
	uint32_t x = seed * 2654435761u + 1;
	int r = 0;

	aptix_sse_init(&ps, on_event, l);
	if (max_event)
		ps.max_event = max_event;
	while (off < n && !r) {
		if (seed) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			piece = x % 8 + (x & 0x100 ? 0 : x % 200);
			if (!piece)
				piece = 1;
		} else {
			piece = n;
		}
		if (piece > n - off)
			piece = n - off;
		r = aptix_sse_feed(&ps, p + off, piece);
		off += piece;
	}
	*incomplete = -1;
	if (!r)
		r = aptix_sse_finish(&ps, incomplete);
	else
		FUZZ_CHECK(aptix_sse_feed(&ps, "x", 1) == r);
	aptix_sse_release(&ps);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct log a, b;
	int ra, rb, ia, ib;
	size_t max_event;

	if (!size)
		return 0;
	/* a small cap sometimes, to reach the "event too large" path */
	max_event = data[0] & 1 ? 0 : 64;
	aptix_buf_init(&a.b, 0);
	aptix_buf_init(&b.b, 0);
	a.n = b.n = 0;
	ra = run(&a, data + 1, size - 1, 0, max_event, &ia);
	rb = run(&b, data + 1, size - 1, data[0] | 1, max_event, &ib);
	FUZZ_CHECK(ra == rb);
	FUZZ_CHECK(ia == ib);
	FUZZ_CHECK(a.n == b.n);
	FUZZ_CHECK(a.b.len == b.b.len && !memcmp(a.b.ptr, b.b.ptr, a.b.len));
	aptix_buf_release(&a.b);
	aptix_buf_release(&b.b);
	aptix_error_clear();
	return 0;
}
