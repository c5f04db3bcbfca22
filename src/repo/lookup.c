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

int aptix_session_lookup(aptix_session *out, aptix_repo *repo,
			 const aptix_oid *id)
{
	aptix_buf data = APTIX_BUF_INIT;
	int r = read_typed(&data, repo, id, APTIX_OBJ_SESSION);

	aptix_session_init(out);
	if (r == 0)
		r = aptix__session_parse_trusted(out, data.ptr, data.len);
	aptix_buf_release(&data);
	return r;
}

int aptix_turn_lookup(aptix_turn *out, aptix_repo *repo, const aptix_oid *id)
{
	aptix_buf data = APTIX_BUF_INIT;
	int r = read_typed(&data, repo, id, APTIX_OBJ_TURN);

	aptix_turn_init(out);
	if (r == 0)
		r = aptix__turn_parse_trusted(out, data.ptr, data.len);
	aptix_buf_release(&data);
	return r;
}

int aptix_blob_lookup(aptix_buf *out, aptix_repo *repo, const aptix_oid *id)
{
	return read_typed(out, repo, id, APTIX_OBJ_BLOB);
}

int aptix_tool_call_lookup(aptix_tool_call *out, aptix_repo *repo,
			   const aptix_oid *id)
{
	aptix_buf data = APTIX_BUF_INIT;
	int r = read_typed(&data, repo, id, APTIX_OBJ_TOOL_CALL);

	aptix_tool_call_init(out);
	if (r == 0)
		r = aptix_tool_call_parse(out, data.ptr, data.len);
	aptix_buf_release(&data);
	return r;
}

int aptix_tool_result_lookup(aptix_tool_result *out, aptix_repo *repo,
			     const aptix_oid *id)
{
	aptix_buf data = APTIX_BUF_INIT;
	int r = read_typed(&data, repo, id, APTIX_OBJ_TOOL_RESULT);

	aptix_tool_result_init(out);
	if (r == 0)
		r = aptix_tool_result_parse(out, data.ptr, data.len);
	aptix_buf_release(&data);
	return r;
}
