/*
 * src/repo/lookup.c - typed object lookups: read, check the type, parse.
 * Objects read from the store were validated when written: they are
 * parsed without the canonical re-encoding (fsck --full checks it).
 */
#include "util/common.h"
#include "object/object.h"
#include "repo/repo.h"
#include "aptix/toolcall.h"

static int read_typed(aptix_buf *out, aptix_repo *repo, const aptix_oid *id,
		      aptix_otype want)
{
	aptix_otype type;
	int r = aptix_odb_read(out, &type, repo->odb, id, 0);

	if (r == 0 && type != want) {
		aptix_error_set(APTIX_ERROR_OBJECT, "object '%s' is a %s, not "
				"a %s", aptix_oid_hex(id),
				aptix_otype_name(type) ? aptix_otype_name(type) :
				"bad object", aptix_otype_name(want));
		r = APTIX_EINVALID;
	}
	return r;
}

/*
 * A typed lookup: out is initialized whatever happens, then filled by
 * parse from the object when it is one of the type asked for.
 */
#define TYPED_LOOKUP(name, T, otype, init, parse)			\
	int name(T *out, aptix_repo *repo, const aptix_oid *id)	\
	{								\
		aptix_buf data = APTIX_BUF_INIT;			\
		int r = read_typed(&data, repo, id, otype);		\
									\
		init(out);						\
		if (r == 0)						\
			r = parse(out, data.ptr, data.len);		\
		aptix_buf_release(&data);				\
		return r;						\
	}

TYPED_LOOKUP(aptix_session_lookup, aptix_session, APTIX_OBJ_SESSION,
	     aptix_session_init, aptix__session_parse_trusted)
TYPED_LOOKUP(aptix_turn_lookup, aptix_turn, APTIX_OBJ_TURN,
	     aptix_turn_init, aptix__turn_parse_trusted)
TYPED_LOOKUP(aptix_tool_call_lookup, aptix_tool_call, APTIX_OBJ_TOOL_CALL,
	     aptix_tool_call_init, aptix_tool_call_parse)
TYPED_LOOKUP(aptix_tool_result_lookup, aptix_tool_result,
	     APTIX_OBJ_TOOL_RESULT, aptix_tool_result_init,
	     aptix_tool_result_parse)

int aptix_blob_lookup(aptix_buf *out, aptix_repo *repo, const aptix_oid *id)
{
	return read_typed(out, repo, id, APTIX_OBJ_BLOB);
}

/* What aptix_turn_lookup_texts() keeps of a turn's links. */
struct texts {
	aptix_turn *t;
	size_t acalls, aresults;
};

static int text_link(const aptix_oid *id, aptix_otype type UNUSED,
		     const char *field, void *payload)
{
	struct texts *tx = payload;
	aptix_turn *t = tx->t;
	aptix_oid **items;
	size_t *n, *alloc;

	if (!strcmp(field, "instruction")) {
		t->instruction = *id;
		return 0;
	}
	if (!strcmp(field, "answer")) {
		t->answer = *id;
		return 0;
	}
	if (!strcmp(field, "tool call")) {
		items = &t->tool_calls;
		n = &t->ntool_calls;
		alloc = &tx->acalls;
	} else if (!strcmp(field, "tool result")) {
		items = &t->tool_results;
		n = &t->ntool_results;
		alloc = &tx->aresults;
	} else {
		return 0;
	}
	if (aptix__grow(items, alloc, *n, sizeof(**items), 4) < 0)
		return APTIX_ERROR;
	(*items)[(*n)++] = *id;
	return 0;
}

/*
 * The links scanner (object/links.c) instead of the parse: a search
 * reads the texts of thousands of turns, and Jansson's tree of a turn
 * cost four times what its blobs do. Text the scanner refuses goes to
 * the parse, whose error is the one a reader gets.
 */
int aptix_turn_lookup_texts(aptix_turn *out, aptix_repo *repo,
			    const aptix_oid *id)
{
	aptix_buf data = APTIX_BUF_INIT;
	struct texts tx;
	int r = read_typed(&data, repo, id, APTIX_OBJ_TURN);

	aptix_turn_init(out);
	memset(&tx, 0, sizeof(tx));
	tx.t = out;
	if (r == 0 && aptix_object_scan_refs(APTIX_OBJ_TURN, data.ptr,
					     data.len, text_link, &tx,
					     NULL) < 0) {
		aptix_error_clear();
		aptix_turn_release(out);
		r = aptix__turn_parse_trusted(out, data.ptr, data.len);
	}
	aptix_buf_release(&data);
	return r;
}
