/*
 * src/record/tools.c - the tool calls and tool results of a turn, made
 * into objects by the recorder (aptix/record.h): each call, each
 * result's stdout, stderr and output blobs (the output stored against
 * the stdout, which it usually copies or cuts), each result linked to its
 * call's object, and the turn's tool_calls and tool_results lists.
 */
#include "util/common.h"
#include "object/object.h"
#include "txn/txn.h"
#include "record/record.h"

static int given(const aptix_record_data *d)
{
	return d && d->ptr;
}

/* A tool object written from its struct through its serializer. */
static int write_call(aptix_oid *id, aptix_txn *tx, const aptix_tool_call *c)
{
	aptix_buf b = APTIX_BUF_INIT;
	int r = aptix_tool_call_serialize(&b, c);

	/* built by the serializer: not parsed again to be validated */
	if (!r)
		r = aptix_txn__write_built(id, tx, APTIX_OBJ_TOOL_CALL, b.ptr,
					   b.len, NULL, NULL);
	aptix_buf_release(&b);
	return r;
}

static const aptix_oid *find_call(const aptix_tool_call *calls,
				  const aptix_oid *ids, size_t n,
				  const char *call_id)
{
	size_t i = aptix__tool_call_index(calls, n, call_id);

	return i < n ? &ids[i] : NULL;
}

/*
 * The calls of the parent's turn, read once (entries a damaged or
 * missing object left NULL); *out has parent->ntool_calls entries.
 */
static int parent_calls(aptix_tool_call **out, aptix_txn *tx,
			const aptix_turn *parent)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_otype type;
	size_t i, n = parent ? parent->ntool_calls : 0;
	int r = 0;

	*out = NULL;
	if (!n)
		return 0;
	if (!(*out = aptix__calloc(n, sizeof(**out))))
		return APTIX_ERROR;
	for (i = 0; i < n; i++) {
		aptix_buf_clear(&b);
		aptix_tool_call_init(&(*out)[i]);
		if ((r = aptix_txn_read_object(&b, &type, tx,
					       &parent->tool_calls[i])) < 0)
			break;
		if (type != APTIX_OBJ_TOOL_CALL ||
		    aptix_tool_call_parse(&(*out)[i], b.ptr, b.len) < 0)
			aptix_error_clear();
	}
	aptix_buf_release(&b);
	return r;
}

/*
 * An object of a result: written, or (stored: the claim of the same turn
 * wrote it already) only named.
 */
static int put(aptix_oid *id, aptix_txn *tx, int stored, aptix_otype type,
	       const aptix_record_data *d, const aptix_oid *like)
{
	if (stored)
		return aptix_object_hash(id, type, d->ptr, d->len);
	if (like)
		return aptix_txn_write_object_like(id, tx, type, d->ptr,
						   d->len, like);
	return aptix_txn_write_object(id, tx, type, d->ptr, d->len);
}

/* One stream of a result, when given: its blob and (unless set) its size. */
static int put_blob(aptix_oid *id, int64_t *bytes, aptix_txn *tx, int stored,
		    const aptix_record_data *d, const aptix_oid *like)
{
	int r;

	if (!given(d))
		return 0;
	if ((r = put(id, tx, stored, APTIX_OBJ_BLOB, d, like)) < 0)
		return r;
	if (!*bytes)
		*bytes = (int64_t)d->len;
	return 0;
}

static int write_result_blobs(aptix_tool_result *res, aptix_txn *tx,
			      const aptix_record_tool_result *g, int stored)
{
	int same = given(&g->out) && given(&g->output) &&
		g->out.len == g->output.len &&
		!memcmp(g->out.ptr, g->output.ptr, g->out.len);
	int r;

	if ((r = put_blob(&res->out, &res->out_bytes, tx, stored, &g->out,
			  NULL)) < 0 ||
	    (r = put_blob(&res->err, &res->err_bytes, tx, stored, &g->err,
			  NULL)) < 0)
		return r;
	if (!same)
		return put_blob(&res->output, &res->output_bytes, tx, stored,
				&g->output, given(&g->out) ? &res->out : NULL);
	/* sent as it ran: one blob, stored once */
	res->output = res->out;
	if (!res->output_bytes)
		res->output_bytes = (int64_t)g->output.len;
	return 0;
}

/* One result: its blobs, its call, the object (a shallow copy). */
static int write_result(aptix_oid *id, aptix_txn *tx,
			const aptix_record_tool_result *g,
			const aptix_oid *call, int stored)
{
	aptix_record_data d;
	aptix_tool_result res = *g->result;
	aptix_buf b = APTIX_BUF_INIT;
	int r;

	if (!res.call_id) {
		aptix_error_set(APTIX_ERROR_INVALID, "a tool result without "
				"its call id");
		return APTIX_EINVALID;
	}
	if (call && aptix_oid_is_zero(&res.call))
		res.call = *call;
	if ((r = write_result_blobs(&res, tx, g, stored)) < 0 ||
	    (r = aptix_tool_result_serialize(&b, &res)) < 0)
		goto done;
	d.ptr = b.ptr;
	d.len = b.len;
	r = stored ? put(id, tx, 1, APTIX_OBJ_TOOL_RESULT, &d, NULL) :
		aptix_txn__write_built(id, tx, APTIX_OBJ_TOOL_RESULT, b.ptr,
				       b.len, NULL, NULL);
done:
	aptix_buf_release(&b);
	return r;
}

/* The results, each linked to its call: this turn's, else the parent's. */
static int write_results(aptix_turn *t, aptix_txn *tx,
			 const aptix_record_options *o,
			 const aptix_tool_call *pcalls, const aptix_turn *parent,
			 int stored)
{
	size_t i, nc = o->tool_calls ? o->ntool_calls : 0;
	size_t np = parent ? parent->ntool_calls : 0;
	int r;

	for (i = 0; i < o->ntool_results; i++, t->ntool_results++) {
		const aptix_record_tool_result *g = &o->tool_results[i];
		const aptix_oid *call = NULL;
		const char *id;

		if (!g->result) {
			aptix_error_set(APTIX_ERROR_INVALID, "tool result %zu "
					"is not given", i + 1);
			return APTIX_EINVALID;
		}
		if ((id = g->result->call_id) &&
		    !(call = find_call(o->tool_calls, t->tool_calls, nc, id)) &&
		    pcalls) {
			size_t j;

			for (j = 0; !call && j < np; j++)
				if (pcalls[j].call_id &&
				    !strcmp(pcalls[j].call_id, id))
					call = &parent->tool_calls[j];
		}
		if ((r = write_result(&t->tool_results[i], tx, g, call,
				      stored)) < 0)
			return r;
	}
	return 0;
}

int aptix__record_tools(aptix_turn *t, aptix_txn *tx,
			const aptix_record_options *o,
			const aptix_turn *parent, int results_stored)
{
	aptix_tool_call *pcalls = NULL;
	size_t i, nc, nr;
	int r = 0;

	if (o->version < 2 || (!o->ntool_calls && !o->ntool_results))
		return 0;
	nc = o->tool_calls ? o->ntool_calls : 0;
	nr = o->tool_results ? o->ntool_results : 0;
	free(t->tool_calls);
	free(t->tool_results);
	t->tool_calls = nc ? aptix__calloc(nc, sizeof(aptix_oid)) : NULL;
	t->tool_results = nr ? aptix__calloc(nr, sizeof(aptix_oid)) : NULL;
	t->ntool_calls = t->ntool_results = 0;
	if ((nc && !t->tool_calls) || (nr && !t->tool_results))
		return APTIX_ERROR;
	for (i = 0; i < nc; i++, t->ntool_calls++)
		if ((r = write_call(&t->tool_calls[i], tx,
				    &o->tool_calls[i])) < 0)
			return r;
	if (!nr)
		return 0;
	if ((r = parent_calls(&pcalls, tx, parent)) == 0)
		r = write_results(t, tx, o, pcalls, parent, results_stored);
	aptix_tool_calls_free(pcalls, parent && pcalls ?
			      parent->ntool_calls : 0);
	return r;
}

int aptix__record_awaits(const aptix_record_options *o)
{
	size_t i, j;

	if (o->version < 2 || !o->tool_calls)
		return 0;
	for (i = 0; i < o->ntool_calls; i++) {
		int answered = 0;

		for (j = 0; o->tool_results && j < o->ntool_results; j++)
			answered |= o->tool_results[j].result &&
				o->tool_results[j].result->call_id &&
				!strcmp(o->tool_results[j].result->call_id,
					o->tool_calls[i].call_id);
		if (!answered)
			return 1;
	}
	return 0;
}
