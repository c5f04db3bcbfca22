/*
 * src/turn/run-tools-json.c - tool outputs read from JSON (issue 24):
 * `continue --tool-results <file>`, the HTTP API's and app-server's
 * tool_outputs. One reader, so that every front end takes the same
 * results and says the same thing of a wrong one. The strings stay the
 * JSON's: the outputs hold a reference to it.
 */
#include "util/common.h"
#include "aptix/view.h"
#include <jansson.h>

void aptix_run_tool_outputs_release(aptix_run_tool_outputs *outs)
{
	size_t i;

	if (!outs)
		return;
	for (i = 0; i < outs->n; i++)
		free((void *)outs->v[i].argv);
	free(outs->v);
	json_decref(outs->json);
	memset(outs, 0, sizeof(*outs));
}

static int bad(const char *id, const char *what)
{
	aptix_error_set(APTIX_ERROR_INVALID, "tool result '%.100s': %s", id,
			what);
	return APTIX_EINVALID;
}

/* json[key] when a string (or absent: NULL); -1 when another type. */
static int opt_str(const char **out, size_t *len, const json_t *o,
		   const char *key)
{
	const json_t *v = json_object_get(o, key);

	*out = NULL;
	if (len)
		*len = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -1;
	*out = json_string_value(v);
	if (len)
		*len = json_string_length(v);
	return 0;
}

static int read_argv(aptix_run_tool_output *o, const json_t *argv,
		     const char *id)
{
	const char **a;
	size_t i, n;

	if (!argv || json_is_null(argv))
		return 0;
	if (!json_is_array(argv))
		return bad(id, "'argv' must be an array of strings");
	if (!(n = json_array_size(argv)))
		return 0;
	if (!(a = calloc(n, sizeof(*a))))
		return aptix_error_oom();
	o->argv = a;
	o->argc = n;
	for (i = 0; i < n; i++)
		if (!(a[i] = json_string_value(json_array_get(argv, i))))
			return bad(id, "'argv' must be an array of strings");
	return 0;
}

static int read_status(aptix_run_tool_output *o, const json_t *r,
		       const char *id)
{
	const json_t *v = json_object_get(r, "exit_code");
	const char *status;
	int s;

	if (v && !json_is_null(v)) {
		if (!json_is_integer(v))
			return bad(id, "'exit_code' must be an integer");
		o->has_exit_code = 1;
		o->exit_code = json_integer_value(v);
		o->status = o->exit_code ? APTIX_TOOL_ERROR : APTIX_TOOL_OK;
	}
	if (opt_str(&status, NULL, r, "status") < 0)
		return bad(id, "'status' must be a string");
	if (status) {
		if ((s = aptix_tool_status_from_name(status)) < 0)
			return bad(id, "'status' is ok, error, denied or "
				   "cancelled");
		o->status = (aptix_tool_status)s;
	}
	v = json_object_get(r, "duration_ms");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return bad(id, "'duration_ms' must be an integer >= 0");
		o->duration_ms = json_integer_value(v);
	}
	v = json_object_get(r, "truncated");
	if (v && !json_is_boolean(v) && !json_is_null(v))
		return bad(id, "'truncated' must be a boolean");
	o->truncated = json_is_true(v);
	return 0;
}

static int one_result(aptix_run_tool_output *o, const char *id,
		      const json_t *r)
{
	o->call_id = id;
	if (json_is_string(r)) {
		o->output = json_string_value(r);
		o->output_len = json_string_length(r);
		return 0;
	}
	if (!json_is_object(r))
		return bad(id, "expected an object or a string");
	if (opt_str(&o->output, &o->output_len, r, "output") < 0 || !o->output)
		return bad(id, "an \"output\" string is needed");
	if (opt_str(&o->out, &o->out_len, r, "stdout") < 0 ||
	    opt_str(&o->err, &o->err_len, r, "stderr") < 0 ||
	    opt_str(&o->cwd, NULL, r, "cwd") < 0)
		return bad(id, "'stdout', 'stderr' and 'cwd' must be strings");
	if (read_status(o, r, id) < 0)
		return APTIX_EINVALID;
	return read_argv(o, json_object_get(r, "argv"), id);
}

int aptix_run_tool_outputs_from_json(aptix_run_tool_outputs *out,
				     json_t *json)
{
	const char *id;
	json_t *r;
	size_t i, n;
	int e = 0;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(json) && !json_is_array(json)) {
		aptix_error_set(APTIX_ERROR_INVALID, "tool results: expected "
				"an object of call ids or an array of results");
		return APTIX_EINVALID;
	}
	n = json_is_object(json) ? json_object_size(json) :
		json_array_size(json);
	if (!n) {
		aptix_error_set(APTIX_ERROR_INVALID, "tool results: none given");
		return APTIX_EINVALID;
	}
	if (!(out->v = calloc(n, sizeof(*out->v))))
		return aptix_error_oom();
	out->json = json_incref(json);
	if (json_is_object(json)) {
		json_object_foreach(json, id, r) {
			if (!e)
				e = one_result(&out->v[out->n++], id, r);
		}
	} else {
		json_array_foreach(json, i, r) {
			char what[48];

			if (e)
				break;
			id = json_string_value(json_object_get(r, "call_id"));
			if (!id) {
				snprintf(what, sizeof(what), "#%zu", i + 1);
				e = bad(what, "no \"call_id\" string");
				break;
			}
			e = one_result(&out->v[out->n++], id, r);
		}
	}
	if (e)
		aptix_run_tool_outputs_release(out);
	return e;
}
