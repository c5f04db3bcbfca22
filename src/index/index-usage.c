/*
 * src/index/index-usage.c - what a turn spent, in its session's index
 * record (version 5), so that `aptix usage` reads records, not turns.
 *
 * The section follows the summary:
 *   u8 flags: 1 known (the turn was read and its counts fit), 2 its
 *      request sent tool results, 4 the session repeats its parent's
 *      turn (which is counted there)
 *   str8 model (at most APTIX_MODEL_MAX bytes; a longer name is not
 *      known)
 *   varint input, cached, output, reasoning, total, model requests and
 *      the tool calls the answer asked for (LEB128)
 * A session that is not known has flags without 1, an empty model and
 * seven zeros: its reader reads the turn. objects-format.md ("The
 * session record") is the reference, with a vector t1000 checks.
 */
#include <limits.h>

#include "util/common.h"
#include "index/index.h"
#include "object/zstream.h"

#define USAGE_KNOWN 1
#define USAGE_SENDS_RESULTS 2
#define USAGE_REPEATS 4

void aptix_index__usage_from_turn(struct aptix_index_usage *out,
				  const aptix_turn *t)
{
	const aptix_usage *u = &t->usage;
	size_t mlen = t->model ? strlen(t->model) : 0;

	memset(out, 0, sizeof(*out));
	if (mlen > APTIX_MODEL_MAX || u->input_tokens < 0 ||
	    u->cached_tokens < 0 || u->output_tokens < 0 ||
	    u->reasoning_tokens < 0 || u->total_tokens < 0 ||
	    u->model_requests < 0)
		return;		/* the reader reads the turn */
	out->known = 1;
	out->u = *u;
	out->tool_calls = (uint32_t)t->ntool_calls;
	out->sends_results = t->ntool_results > 0;
	if (mlen)
		memcpy(out->model, t->model, mlen + 1);
}

/* The six counts of u, in the order both sections keep them. */
static void put_usage(aptix_buf *b, const aptix_usage *u)
{
	aptix__put_varint(b, (uint64_t)u->input_tokens);
	aptix__put_varint(b, (uint64_t)u->cached_tokens);
	aptix__put_varint(b, (uint64_t)u->output_tokens);
	aptix__put_varint(b, (uint64_t)u->reasoning_tokens);
	aptix__put_varint(b, (uint64_t)u->total_tokens);
	aptix__put_varint(b, (uint64_t)u->model_requests);
}

void aptix_index__usage_encode(aptix_buf *b, const aptix_session_info *si)
{
	static const aptix_usage none;
	unsigned char h[2];
	size_t mlen = si->has_usage ? strlen(si->model) : 0;

	h[0] = (si->has_usage ? USAGE_KNOWN : 0) |
		(si->has_usage && si->sends_results ? USAGE_SENDS_RESULTS : 0) |
		(si->repeats ? USAGE_REPEATS : 0);
	h[1] = (unsigned char)mlen;
	aptix_buf_put(b, h, 2);
	aptix_buf_put(b, si->model, mlen);
	put_usage(b, si->has_usage ? &si->usage : &none);
	aptix__put_varint(b, si->has_usage ? si->tool_calls : 0);
}

/* A varint read back, at most max: 0, or -1. */
static int get_upto(uint64_t *v, uint64_t max, const unsigned char **p,
		    const unsigned char *end)
{
	return aptix__get_varint(v, p, end) < 0 || *v > max ? -1 : 0;
}

/* A count read back: what fits a long. */
static int get_count(long *out, const unsigned char **p,
		     const unsigned char *end)
{
	uint64_t v = 0;
	int r = get_upto(&v, LONG_MAX, p, end);

	*out = (long)v;
	return r;
}

static int get_u32(uint32_t *out, const unsigned char **p,
		   const unsigned char *end)
{
	uint64_t v = 0;
	int r = get_upto(&v, UINT32_MAX, p, end);

	*out = (uint32_t)v;
	return r;
}

static int get_usage(aptix_usage *u, const unsigned char **p,
		     const unsigned char *end)
{
	return get_count(&u->input_tokens, p, end) ||
		get_count(&u->cached_tokens, p, end) ||
		get_count(&u->output_tokens, p, end) ||
		get_count(&u->reasoning_tokens, p, end) ||
		get_count(&u->total_tokens, p, end) ||
		get_count(&u->model_requests, p, end) ? -1 : 0;
}

int aptix_index__usage_decode(aptix_session_info *si,
			      const unsigned char **p,
			      const unsigned char *end)
{
	unsigned flags;
	size_t mlen;

	if (end - *p < 2)
		return -1;
	flags = (*p)[0];
	mlen = (*p)[1];
	*p += 2;
	if (mlen > APTIX_MODEL_MAX || (size_t)(end - *p) < mlen ||
	    (flags & ~(unsigned)(USAGE_KNOWN | USAGE_SENDS_RESULTS |
				 USAGE_REPEATS)))
		return -1;
	memcpy(si->model, *p, mlen);
	si->model[mlen] = '\0';
	*p += mlen;
	if (get_usage(&si->usage, p, end) || get_u32(&si->tool_calls, p, end))
		return -1;
	si->has_usage = (flags & USAGE_KNOWN) != 0;
	si->sends_results = (flags & USAGE_SENDS_RESULTS) != 0;
	si->repeats = (flags & USAGE_REPEATS) != 0;
	return 0;
}

/* --- Conversations ------------------------------------------------------ */

void aptix_conv_usage_add(aptix_conv_info *ci, const aptix_session_info *s)
{
	const aptix_usage *u = &s->usage;
	aptix_conv_usage *m = NULL;
	size_t i;

	if (!ci->has_usage || s->repeats)
		return;
	if (!s->has_usage || u->cached_tokens > u->input_tokens) {
		ci->has_usage = 0;	/* its price is not a sum's */
		return;
	}
	for (i = 0; i < ci->nusage && !m; i++)
		if (!strcmp(ci->usage[i].model, s->model))
			m = &ci->usage[i];
	if (!m) {
		if (ci->nusage == APTIX_CONV_MODELS) {
			ci->has_usage = 0;
			return;
		}
		m = &ci->usage[ci->nusage++];
		memset(m, 0, sizeof(*m));
		memcpy(m->model, s->model, sizeof(m->model));
	}
	m->turns++;
	m->tool_calls += s->tool_calls;
	m->tool_requests += s->sends_results != 0;
	m->usage.input_tokens += u->input_tokens;
	m->usage.cached_tokens += u->cached_tokens;
	m->usage.output_tokens += u->output_tokens;
	m->usage.reasoning_tokens += u->reasoning_tokens;
	m->usage.total_tokens += u->total_tokens;
	m->usage.model_requests += u->model_requests;
}

static int same_model_sum(const aptix_conv_usage *x, const aptix_conv_usage *y)
{
	return !strcmp(x->model, y->model) && x->turns == y->turns &&
		x->tool_calls == y->tool_calls &&
		x->tool_requests == y->tool_requests &&
		x->usage.input_tokens == y->usage.input_tokens &&
		x->usage.cached_tokens == y->usage.cached_tokens &&
		x->usage.output_tokens == y->usage.output_tokens &&
		x->usage.reasoning_tokens == y->usage.reasoning_tokens &&
		x->usage.total_tokens == y->usage.total_tokens &&
		x->usage.model_requests == y->usage.model_requests;
}

int aptix_conv_usage_same(const aptix_conv_info *a, const aptix_conv_info *b)
{
	size_t i, j;

	if (a->has_usage != b->has_usage)
		return 0;
	if (!a->has_usage)
		return 1;
	if (a->nusage != b->nusage)
		return 0;
	/* models in the order their sessions were indexed, which a
	   reindex (time order) may change */
	for (i = 0; i < a->nusage; i++) {
		for (j = 0; j < b->nusage; j++)
			if (same_model_sum(&a->usage[i], &b->usage[j]))
				break;
		if (j == b->nusage)
			return 0;
	}
	return 1;
}

void aptix_index__conv_usage_encode(aptix_buf *b, const aptix_conv_info *ci)
{
	unsigned char h[2];
	size_t i, n = ci->has_usage ? ci->nusage : 0;

	h[0] = ci->has_usage ? USAGE_KNOWN : 0;
	h[1] = (unsigned char)n;
	aptix_buf_put(b, h, 2);
	for (i = 0; i < n; i++) {
		const aptix_conv_usage *m = &ci->usage[i];
		unsigned char len = (unsigned char)strlen(m->model);

		aptix_buf_put(b, &len, 1);
		aptix_buf_put(b, m->model, len);
		aptix__put_varint(b, m->turns);
		aptix__put_varint(b, m->tool_calls);
		aptix__put_varint(b, m->tool_requests);
		put_usage(b, &m->usage);
	}
}

int aptix_index__conv_usage_decode(aptix_conv_info *ci,
				   const unsigned char **p,
				   const unsigned char *end)
{
	size_t i, mlen;

	if (end - *p < 2 || ((*p)[0] & ~USAGE_KNOWN) ||
	    (*p)[1] > APTIX_CONV_MODELS || (!(*p)[0] && (*p)[1]))
		return -1;
	ci->has_usage = (*p)[0] & USAGE_KNOWN;
	ci->nusage = (*p)[1];
	*p += 2;
	for (i = 0; i < ci->nusage; i++) {
		aptix_conv_usage *m = &ci->usage[i];

		if (*p >= end || (mlen = **p) > APTIX_MODEL_MAX ||
		    (size_t)(end - *p) < 1 + mlen)
			return -1;
		memcpy(m->model, *p + 1, mlen);
		m->model[mlen] = '\0';
		*p += 1 + mlen;
		if (get_u32(&m->turns, p, end) ||
		    get_u32(&m->tool_calls, p, end) ||
		    get_u32(&m->tool_requests, p, end) ||
		    get_usage(&m->usage, p, end))
			return -1;
	}
	return 0;
}
