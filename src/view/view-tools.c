/*
 * src/view/view-tools.c - the tool calls a turn asked for and the tool
 * results it sent, in the JSON views of a turn (aptix/view.h;
 * Documentation/json.md, "tool_calls" and "tool_results"). A call or
 * result that cannot be read shows its id and an "error".
 */
#include "util/common.h"
#include "aptix/view.h"
#include "aptix/toolcall.h"
#include "view/view-tools.h"

static int set(json_t *o, const char *key, json_t *v)
{
	return aptix_view_set(o, key, v) < 0;
}

static json_t *call_json(aptix_repo *repo, const aptix_oid *id)
{
	json_t *o = json_object();
	aptix_tool_call c;
	int bad = !o;

	if (bad)
		return NULL;
	bad |= set(o, "id", aptix_view_id(id));
	if (aptix_tool_call_lookup(&c, repo, id) < 0) {
		bad |= set(o, "error", aptix_view_str(
				   aptix_error_last()->message));
		aptix_error_clear();
	} else {
		bad |= set(o, "call_id", aptix_view_str(c.call_id));
		bad |= set(o, "name", aptix_view_str(c.name));
		bad |= set(o, "arguments", aptix_view_str(c.arguments));
		bad |= set(o, "namespace", aptix_view_str(c.ns));
		bad |= set(o, "item_id", aptix_view_str(c.item_id));
	}
	aptix_tool_call_release(&c);
	if (!bad)
		return o;
	json_decref(o);
	return NULL;
}

json_t *aptix__view_tool_calls(aptix_repo *repo, const aptix_turn *t)
{
	json_t *a = json_array(), *x;
	size_t i;

	for (i = 0; a && i < t->ntool_calls; i++)
		if (!(x = call_json(repo, &t->tool_calls[i])) ||
		    json_array_append_new(a, x) < 0) {
			json_decref(a);
			a = NULL;
		}
	return a;
}

/* The name of the call a result answers, from its call object. */
static json_t *call_name(aptix_repo *repo, const aptix_tool_result *r)
{
	aptix_tool_call c;
	json_t *v = json_null();

	if (!aptix_oid_is_zero(&r->call) &&
	    aptix_tool_call_lookup(&c, repo, &r->call) == 0)
		v = aptix_view_str(c.name);
	aptix_error_clear();
	aptix_tool_call_release(&c);
	return v;
}

static int result_fields(json_t *o, aptix_repo *repo,
			 const aptix_tool_result *r, int full)
{
	aptix_buf out = APTIX_BUF_INIT;
	json_t *argv = json_array();
	size_t i;
	int bad = !argv;

	for (i = 0; !bad && i < r->argc; i++)
		bad = json_array_append_new(argv, aptix_view_str(r->argv[i]));
	bad |= set(o, "call_id", aptix_view_str(r->call_id));
	bad |= set(o, "call", aptix_view_id(&r->call));
	bad |= set(o, "name", call_name(repo, r));
	bad |= set(o, "status", json_string(aptix_tool_status_name(r->status)));
	bad |= set(o, "exit_code", r->has_exit_code ?
		   json_integer(r->exit_code) : json_null());
	bad |= set(o, "started_at", aptix_view_time(r->started_at));
	bad |= set(o, "duration_ms", json_integer(r->duration_ms));
	bad |= set(o, "cwd", aptix_view_str(r->cwd));
	bad |= set(o, "argv", argv);
	bad |= set(o, "stdout_bytes", json_integer(r->out_bytes));
	bad |= set(o, "stderr_bytes", json_integer(r->err_bytes));
	bad |= set(o, "output_bytes", json_integer(r->output_bytes));
	bad |= set(o, "truncated", json_boolean(r->truncated));
	bad |= set(o, "stdout_id", aptix_view_id(&r->out));
	bad |= set(o, "stderr_id", aptix_view_id(&r->err));
	bad |= set(o, "output_id", aptix_view_id(&r->output));
	bad |= set(o, "source", aptix_view_str(r->source));
	if (full && !aptix_oid_is_zero(&r->output) &&
	    aptix_view_blob_text(&out, repo, &r->output) == 0)
		bad |= set(o, "output", aptix_view_text(out.ptr, out.len));
	else if (full)
		bad |= set(o, "output", json_null());
	aptix_error_clear();
	aptix_buf_release(&out);
	return bad;
}

json_t *aptix__view_tool_results(aptix_repo *repo, const aptix_turn *t,
				 int full)
{
	json_t *a = json_array(), *o;
	aptix_tool_result r;
	size_t i;
	int bad = !a;

	for (i = 0; !bad && i < t->ntool_results; i++) {
		bad = !(o = json_object()) || json_array_append_new(a, o) < 0 ||
			set(o, "id", aptix_view_id(&t->tool_results[i]));
		if (bad)
			break;
		if (aptix_tool_result_lookup(&r, repo, &t->tool_results[i]) < 0) {
			bad = set(o, "error", aptix_view_str(
					  aptix_error_last()->message));
			aptix_error_clear();
		} else {
			bad = result_fields(o, repo, &r, full);
		}
		aptix_tool_result_release(&r);
	}
	if (!bad)
		return a;
	json_decref(a);
	return NULL;
}
