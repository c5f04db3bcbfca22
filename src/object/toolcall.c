/*
 * src/object/toolcall.c - the canonical encoding of tool calls and tool
 * results (aptix/toolcall.h; objects-format.md, "Tool calls"), driven by
 * field tables like turns and sessions (object.c, fields.h).
 */
#include "util/common.h"
#include "aptix/toolcall.h"
#include "object/object.h"
#include "object/fields.h"
#include "util/cjson.h"

static const char *const tool_status_names[] = {
	"ok", "error", "denied", "cancelled"
};

const char *aptix_tool_status_name(aptix_tool_status s)
{
	return (unsigned)s < ARRAY_SIZE(tool_status_names) ?
		tool_status_names[s] : "unknown";
}

int aptix_tool_status_from_name(const char *s)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(tool_status_names); i++)
		if (!strcmp(tool_status_names[i], s))
			return (int)i;
	return -1;
}

static const struct field call_fields[] = {
	FLD(aptix_tool_call, "arguments", F_STR, arguments, 1),
	FLD(aptix_tool_call, "call_id", F_STR, call_id, 1),
	FLD(aptix_tool_call, "item_id", F_STR, item_id, 0),
	FLD(aptix_tool_call, "kind", F_STR, kind, 0),
	FLD(aptix_tool_call, "name", F_STR, name, 1),
	FLD(aptix_tool_call, "namespace", F_STR, ns, 0),
	{ NULL, 0, 0, 0 }
};

/* exit_code and status are written by hand: 0 is a value for them */
static const struct field result_fields[] = {
	FLD(aptix_tool_result, "argv", F_STRLIST, argv, 0),
	FLD(aptix_tool_result, "call", F_OID, call, 0),
	FLD(aptix_tool_result, "call_id", F_STR, call_id, 1),
	FLD(aptix_tool_result, "cwd", F_STR, cwd, 0),
	FLD(aptix_tool_result, "duration_ms", F_I64, duration_ms, 0),
	FLD(aptix_tool_result, "output", F_OID, output, 0),
	FLD(aptix_tool_result, "output_bytes", F_I64, output_bytes, 0),
	FLD(aptix_tool_result, "source", F_STR, source, 1),
	FLD(aptix_tool_result, "started_at", F_I64, started_at, 0),
	FLD(aptix_tool_result, "stderr", F_OID, err, 0),
	FLD(aptix_tool_result, "stderr_bytes", F_I64, err_bytes, 0),
	FLD(aptix_tool_result, "stdout", F_OID, out, 0),
	FLD(aptix_tool_result, "stdout_bytes", F_I64, out_bytes, 0),
	FLD(aptix_tool_result, "truncated", F_BOOL, truncated, 0),
	{ NULL, 0, 0, 0 }
};

static const char *const call_extra[] = { "v", NULL };
static const char *const result_extra[] = { "v", "status", "exit_code",
					    NULL };

void aptix_tool_call_init(aptix_tool_call *c)
{
	memset(c, 0, sizeof(*c));
	c->version = APTIX_TOOL_VERSION;
}

void aptix_tool_call_release(aptix_tool_call *c)
{
	if (!c)
		return;
	aptix__fields_release(c, call_fields);
	aptix_tool_call_init(c);
}

void aptix_tool_calls_free(aptix_tool_call *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		aptix_tool_call_release(&v[i]);
	free(v);
}

void aptix_tool_result_init(aptix_tool_result *r)
{
	memset(r, 0, sizeof(*r));
	r->version = APTIX_TOOL_VERSION;
}

void aptix_tool_result_release(aptix_tool_result *r)
{
	if (!r)
		return;
	aptix__fields_release(r, result_fields);
	aptix_tool_result_init(r);
}

static int nonempty(const char *what, const char *key, const char *s)
{
	return s && !*s ? aptix__bad_field(what, key, "is empty") : 0;
}

static int validate_call(const aptix_tool_call *c)
{
	int r;

	if ((r = nonempty("tool call", "call_id", c->call_id)) < 0 ||
	    (r = nonempty("tool call", "name", c->name)) < 0 ||
	    (r = nonempty("tool call", "kind", c->kind)) < 0)
		return r;
	return 0;
}

static int validate_result(const aptix_tool_result *t)
{
	int r;

	if ((r = nonempty("tool result", "call_id", t->call_id)) < 0 ||
	    (r = nonempty("tool result", "source", t->source)) < 0)
		return r;
	if ((unsigned)t->status >= ARRAY_SIZE(tool_status_names))
		return aptix__bad_field("tool result", "status",
					"is not a known status");
	if (t->duration_ms < 0 || t->out_bytes < 0 || t->err_bytes < 0 ||
	    t->output_bytes < 0 || t->started_at < 0)
		return aptix__bad_field("tool result", t->duration_ms < 0 ?
					"duration_ms" : "a byte count",
					"is negative");
	return 0;
}

static int put_version(json_t *o, int version)
{
	return json_object_set_new(o, "v", json_integer(version ? version :
				   APTIX_TOOL_VERSION)) < 0 ?
		aptix_error_oom() : 0;
}

int aptix_tool_call_serialize(aptix_buf *out, const aptix_tool_call *c)
{
	json_t *o;
	int r;

	aptix_error_clear();
	if ((r = validate_call(c)) < 0)
		return r;
	if (!(o = json_object()))
		return aptix_error_oom();
	if ((r = aptix__fields_put(o, call_fields, c, "tool call")) < 0 ||
	    (r = put_version(o, c->version)) < 0) {
		json_decref(o);
		return r;
	}
	return aptix__object_dump(out, o);
}

int aptix_tool_result_serialize(aptix_buf *out, const aptix_tool_result *t)
{
	json_t *o;
	int r;

	aptix_error_clear();
	if ((r = validate_result(t)) < 0)
		return r;
	if (!(o = json_object()))
		return aptix_error_oom();
	if ((r = aptix__fields_put(o, result_fields, t, "tool result")) < 0 ||
	    (r = put_version(o, t->version)) < 0 ||
	    json_object_set_new(o, "status", json_string(
				aptix_tool_status_name(t->status))) < 0 ||
	    (t->has_exit_code && json_object_set_new(o, "exit_code",
				json_integer((json_int_t)t->exit_code)) < 0)) {
		json_decref(o);
		return r < 0 ? r : aptix_error_oom();
	}
	return aptix__object_dump(out, o);
}

static int call_from_obj(void *out, json_t *o, int strict)
{
	aptix_tool_call *c = out;
	json_t *v;
	int r;

	if ((r = aptix__object_check_version(o, "tool call", strict,
					       APTIX_TOOL_VERSION)) < 0 ||
	    (strict && (r = aptix__fields_check_unknown(o, call_fields,
				call_extra, "tool call")) < 0) ||
	    (r = aptix__fields_get(c, call_fields, o, "tool call")) < 0)
		return r;
	if ((v = json_object_get(o, "v")))
		c->version = (int)json_integer_value(v);
	return validate_call(c);
}

static int result_status(aptix_tool_result *t, json_t *o)
{
	json_t *v = json_object_get(o, "status");
	int s;

	if (!v || !json_is_string(v))
		return aptix__bad_field("tool result", "status", v ?
					"must be a string" : "is missing");
	s = aptix_tool_status_from_name(json_string_value(v));
	if (s < 0)
		return aptix__bad_field("tool result", "status", "must be ok, "
					"error, denied or cancelled");
	t->status = (aptix_tool_status)s;
	if (!(v = json_object_get(o, "exit_code")))
		return 0;
	if (!json_is_integer(v))
		return aptix__bad_field("tool result", "exit_code",
					"must be an integer");
	t->has_exit_code = 1;
	t->exit_code = json_integer_value(v);
	return 0;
}

static int result_from_obj(void *out, json_t *o, int strict)
{
	aptix_tool_result *t = out;
	json_t *v;
	int r;

	if ((r = aptix__object_check_version(o, "tool result", strict,
					       APTIX_TOOL_VERSION)) < 0 ||
	    (strict && (r = aptix__fields_check_unknown(o, result_fields,
				result_extra, "tool result")) < 0) ||
	    (r = aptix__fields_get(t, result_fields, o, "tool result")) < 0 ||
	    (r = result_status(t, o)) < 0)
		return r;
	if ((v = json_object_get(o, "v")))
		t->version = (int)json_integer_value(v);
	return validate_result(t);
}

static void call_release(void *out)
{
	aptix_tool_call_release(out);
}

static void result_release(void *out)
{
	aptix_tool_result_release(out);
}

static const struct aptix__object_kind call_kind = {
	"tool call", call_from_obj, call_release
};
static const struct aptix__object_kind result_kind = {
	"tool result", result_from_obj, result_release
};

int aptix_tool_call_parse(aptix_tool_call *out, const void *data,
			  size_t len)
{
	aptix_tool_call_init(out);
	return aptix__object_decode(out, &call_kind, data, len, 0, 0);
}

int aptix_tool_result_parse(aptix_tool_result *out, const void *data,
			    size_t len)
{
	aptix_tool_result_init(out);
	return aptix__object_decode(out, &result_kind, data, len, 0, 0);
}

int aptix_tool_call_from_json(aptix_tool_call *out, const char *json,
			      size_t len)
{
	aptix_tool_call_init(out);
	return aptix__object_decode(out, &call_kind, json, len, 1, 0);
}

int aptix_tool_result_from_json(aptix_tool_result *out, const char *json,
				size_t len)
{
	aptix_tool_result_init(out);
	return aptix__object_decode(out, &result_kind, json, len, 1, 0);
}

/* The index in v (n elements of size bytes) of the one whose string at
 * offset off is call_id, or n. */
static size_t index_of_call_id(const void *v, size_t n, size_t size,
			       size_t off, const char *call_id)
{
	const char *p = v;
	size_t i;

	for (i = 0; call_id && i < n; i++, p += size)
		if (!strcmp(*(char *const *)(p + off), call_id))
			return i;
	return n;
}

size_t aptix__tool_call_index(const aptix_tool_call *v, size_t n,
			      const char *call_id)
{
	return index_of_call_id(v, n, sizeof(*v),
				offsetof(aptix_tool_call, call_id), call_id);
}

size_t aptix__tool_result_index(const aptix_tool_result *v, size_t n,
				const char *call_id)
{
	return index_of_call_id(v, n, sizeof(*v),
				offsetof(aptix_tool_result, call_id), call_id);
}
