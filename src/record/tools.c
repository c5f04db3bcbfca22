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

	if (!r)
		r = aptix_txn_write_object(id, tx, APTIX_OBJ_TOOL_CALL, b.ptr,
					   b.len);
	aptix_buf_release(&b);
	return r;
}

static const aptix_oid *find_call(const aptix_tool_call *calls,
				  const aptix_oid *ids, size_t n,
				  const char *call_id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(calls[i].call_id, call_id))
			return &ids[i];
	return NULL;
}

/* The call object of call_id among the parent turn's calls, or none. */
static int parent_call(aptix_oid *out, aptix_txn *tx,
		       const aptix_turn *parent, const char *call_id)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_tool_call c;
	aptix_otype type;
	size_t i;
	int r = 0, found = 0;

	for (i = 0; parent && !found && i < parent->ntool_calls; i++) {
		aptix_buf_clear(&b);
		if ((r = aptix_txn_read_object(&b, &type, tx,
					       &parent->tool_calls[i])) < 0)
			break;
		if (type != APTIX_OBJ_TOOL_CALL ||
		    aptix_tool_call_parse(&c, b.ptr, b.len) < 0) {
			aptix_error_clear();
			continue;
		}
		found = !strcmp(c.call_id, call_id);
		if (found)
			*out = parent->tool_calls[i];
		aptix_tool_call_release(&c);
	}
	aptix_buf_release(&b);
	return r;
}

static int write_result_blobs(aptix_tool_result *res, aptix_txn *tx,
			      const aptix_record_tool_result *g)
{
	int r;

	if (given(&g->out)) {
		if ((r = aptix_txn_write_object(&res->out, tx, APTIX_OBJ_BLOB,
						g->out.ptr, g->out.len)) < 0)
			return r;
		if (!res->out_bytes)
			res->out_bytes = (int64_t)g->out.len;
	}
	if (given(&g->err)) {
		if ((r = aptix_txn_write_object(&res->err, tx, APTIX_OBJ_BLOB,
						g->err.ptr, g->err.len)) < 0)
			return r;
		if (!res->err_bytes)
			res->err_bytes = (int64_t)g->err.len;
	}
	if (given(&g->output)) {
		if ((r = aptix_txn_write_object_like(&res->output, tx,
				APTIX_OBJ_BLOB, g->output.ptr, g->output.len,
				given(&g->out) ? &res->out : NULL)) < 0)
			return r;
		if (!res->output_bytes)
			res->output_bytes = (int64_t)g->output.len;
	}
	return 0;
}

/* One result: its blobs, its call, the object (a shallow copy). */
static int write_result(aptix_oid *id, aptix_txn *tx,
			const aptix_record_tool_result *g,
			const aptix_oid *call)
{
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
	if ((r = write_result_blobs(&res, tx, g)) < 0 ||
	    (r = aptix_tool_result_serialize(&b, &res)) < 0)
		goto done;
	r = aptix_txn_write_object(id, tx, APTIX_OBJ_TOOL_RESULT, b.ptr,
				   b.len);
done:
	aptix_buf_release(&b);
	return r;
}

int aptix__record_tools(aptix_turn *t, aptix_txn *tx,
			const aptix_record_options *o,
			const aptix_turn *parent)
{
	size_t i, nc, nr;
	aptix_oid found;
	int r;

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
	for (i = 0; i < nr; i++, t->ntool_results++) {
		const aptix_record_tool_result *g = &o->tool_results[i];
		const aptix_oid *call = NULL;

		if (!g->result) {
			aptix_error_set(APTIX_ERROR_INVALID, "tool result %zu "
					"is not given", i + 1);
			return APTIX_EINVALID;
		}
		if (g->result->call_id &&
		    !(call = find_call(o->tool_calls, t->tool_calls, nc,
				       g->result->call_id))) {
			memset(&found, 0, sizeof(found));
			if ((r = parent_call(&found, tx, parent,
					     g->result->call_id)) < 0)
				return r;
			call = aptix_oid_is_zero(&found) ? NULL : &found;
		}
		if ((r = write_result(&t->tool_results[i], tx, g, call)) < 0)
			return r;
	}
	return 0;
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
