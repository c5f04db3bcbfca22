/*
 * src/turn/run-view.c - the JSON of a run's result (see aptix/view.h):
 * seed 001's execute response and what aptix adds to it, as `continue
 * --json`, the HTTP API's execute and app-server's turn/completed print
 * it. Here rather than in view/ because it reads a run (a higher layer).
 */
#include "util/common.h"
#include "aptix/view.h"

static json_t *chunk_json(const aptix_rag_chunk *c)
{
	json_t *o = json_object();

	if (!o || aptix_view_set(o, "chunk_id", aptix_view_str(c->chunk_id)) ||
	    aptix_view_set(o, "path", aptix_view_str(c->path)) ||
	    aptix_view_set(o, "start_line", json_integer(c->start_line)) ||
	    aptix_view_set(o, "end_line", json_integer(c->end_line)) ||
	    aptix_view_set(o, "content_hash", json_string(c->content_hash)) ||
	    aptix_view_set(o, "score", json_real(c->score)) ||
	    aptix_view_set(o, "sent", json_boolean(c->sent))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *lists(const aptix_run_result *res,
		     const aptix_chunk_set *chunks, json_t **warnings)
{
	json_t *a = json_array(), *w = json_array(), *x;
	size_t i;
	int bad = !a || !w;

	for (i = 0; !bad && chunks && i < chunks->n; i++)
		bad = !(x = chunk_json(&chunks->v[i])) ||
			json_array_append_new(a, x) < 0;
	for (i = 0; !bad && i < res->nwarnings; i++)
		bad = !(x = aptix_view_str(res->warnings[i])) ||
			json_array_append_new(w, x) < 0;
	if (bad) {
		json_decref(a);
		json_decref(w);
		return NULL;
	}
	*warnings = w;
	return a;
}

/* The calls the answer asks for (issue 24): call id, name, arguments. */
static json_t *calls_json(const aptix_run_result *res)
{
	json_t *a = json_array(), *x;
	size_t i;
	int bad = !a;

	for (i = 0; !bad && i < res->api.ncalls; i++) {
		const aptix_tool_call *c = &res->api.calls[i];

		bad = !(x = json_object()) ||
			json_array_append_new(a, x) < 0 ||
			aptix_view_set(x, "call_id", aptix_view_str(c->call_id)) ||
			aptix_view_set(x, "name", aptix_view_str(c->name)) ||
			aptix_view_set(x, "arguments",
				       aptix_view_str(c->arguments)) ||
			aptix_view_set(x, "item_id", aptix_view_str(c->item_id));
	}
	if (bad) {
		json_decref(a);
		return NULL;
	}
	return a;
}

static json_t *error_code(const aptix_run_result *res, int rc)
{
	if (!rc)
		return json_null();
	if (res->error_code)
		return aptix_view_str(res->error_code);
	return json_string(rc == APTIX_ECANCELLED ? "cancelled" : "error");
}

json_t *aptix_view_run_result(const aptix_run_result *res,
			      const aptix_chunk_set *chunks, int rc)
{
	const char *msg = res->error_message ? res->error_message :
		aptix_error_last()->message;
	json_t *o = json_object(), *w = NULL, *s = lists(res, chunks, &w);
	int bad = !s;

	/* each set takes its value, even after a failure */
	bad |= aptix_view_set(o, "kind", json_string(rc ? "error" :
						     res->awaiting ? "tool_calls" :
						     "answer")) < 0;
	bad |= aptix_view_set(o, "text", aptix_view_text(
				      res->api.text.ptr,
				      res->api.text.len)) < 0;
	bad |= aptix_view_set(o, "sources", s) < 0;
	bad |= aptix_view_set(o, "warnings", w) < 0;
	bad |= aptix_view_set(o, "error_code", error_code(res, rc)) < 0;
	bad |= aptix_view_set(o, "error_message", rc ? aptix_view_str(msg) :
			      json_null()) < 0;
	bad |= aptix_view_set(o, "status", json_string(
				      !res->committed ? "not_committed" :
				      res->awaiting ? "awaiting_tool_results" :
				      res->completed ? "completed" :
				      "failed")) < 0;
	bad |= aptix_view_set(o, "tool_calls", calls_json(res)) < 0;
	bad |= aptix_view_set(o, "session", res->committed ?
			      aptix_view_id(&res->session) : NULL) < 0;
	bad |= aptix_view_set(o, "turn", res->committed ?
			      aptix_view_id(&res->turn) : NULL) < 0;
	bad |= aptix_view_set(o, "conversation",
			      aptix_view_str(res->conversation)) < 0;
	bad |= aptix_view_set(o, "parent", res->has_parent ?
			      aptix_view_id(&res->parent) : NULL) < 0;
	bad |= aptix_view_set(o, "response_id",
			      aptix_view_str(res->api.response_id)) < 0;
	bad |= aptix_view_set(o, "chain_restarted",
			      json_boolean(res->chain_restarted)) < 0;
	bad |= aptix_view_set(o, "usage",
			      aptix_view_usage(&res->api.usage)) < 0;
	bad |= aptix_view_set(o, "duration_ms",
			      json_integer(res->duration_ms)) < 0;
	if (!bad)
		return o;
	json_decref(o);
	aptix_error_oom();
	return NULL;
}
