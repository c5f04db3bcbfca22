/*
 * src/turn/run-tools.c - the tools of a turn (issue 24): the function
 * tools it sends (given, or those its newest committed ancestor sent: the
 * API does not carry them over), the calls the conversation's head asked
 * for, and the outputs that answer them: checked before anything is
 * stored (each pending call answered once, no unknown or already
 * answered call, within the API's size limit, UTF-8), credentials
 * redacted, sent as function_call_output items (with the calls again
 * when the chain is restarted), and handed to the recorder as results.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "object/object.h"
#include "turn/run-int.h"
#include "util/cjson.h"
#include <jansson.h>

/* How far back a call id is looked for to say it was answered already. */
#define ANSWERED_WALK 64

void aptix_run__tools_release(aptix_run *run)
{
	size_t i;

	free(run->tools_json);
	aptix_tool_calls_free(run->pending_calls, run->npending);
	for (i = 0; i < run->ntool; i++) {
		aptix_buf_release(&run->tbufs[3 * i]);
		aptix_buf_release(&run->tbufs[3 * i + 1]);
		aptix_buf_release(&run->tbufs[3 * i + 2]);
	}
	free(run->tbufs);
	free(run->tresults);
	free(run->trecs);
	run->tools_json = NULL;
	run->pending_calls = NULL;
	run->tbufs = NULL;
	run->tresults = NULL;
	run->trecs = NULL;
	run->npending = run->ntool = 0;
}

/* The tools given: a JSON array of function tool definitions. */
static int given_tools(aptix_run *run)
{
	json_t *a = aptix_json_parse(run->o.tools, strlen(run->o.tools),
				     "--tools");
	size_t i;
	int r = 0;

	if (!a)
		return APTIX_EINVALID;
	if (!json_is_array(a))
		r = -1;
	for (i = 0; !r && i < json_array_size(a); i++) {
		json_t *t = json_array_get(a, i);
		const char *type = json_string_value(json_object_get(t,
								      "type"));

		if (!json_is_object(t) || !type || strcmp(type, "function") ||
		    !json_is_string(json_object_get(t, "name")))
			r = -1;
	}
	if (!r && !(run->tools_json = json_dumps(a, JSON_COMPACT |
						   JSON_PRESERVE_ORDER)))
		r = aptix_error_oom();
	json_decref(a);
	if (r == -1) {
		aptix_error_set(APTIX_ERROR_INVALID, "--tools: expected a JSON "
				"array of function tools ({\"type\":\"function\", "
				"\"name\":..., \"parameters\":...})");
		return APTIX_EINVALID;
	}
	return r;
}

/* The tools the newest committed ancestor's request sent, if any. */
static int remembered_tools(aptix_run *run)
{
	const struct aptix__past *p;
	aptix_buf req = APTIX_BUF_INIT;
	json_t *doc, *tools;
	int r;

	if (!run->has_parent ||
	    aptix__chain_get(&p, &run->chain, 0) < 0 ||
	    aptix_oid_is_zero(&p->turn.request)) {
		aptix_error_clear();
		return 0;
	}
	if ((r = aptix_blob_lookup(&req, run->repo, &p->turn.request)) < 0) {
		/* purged or missing: the tools are forgotten, not fatal */
		aptix_buf_release(&req);
		aptix_error_clear();
		return 0;
	}
	doc = json_loadb(req.ptr, req.len, 0, NULL);
	tools = json_object_get(doc, "tools");
	if (json_is_array(tools) && json_array_size(tools) &&
	    !(run->tools_json = json_dumps(tools, JSON_COMPACT |
					   JSON_PRESERVE_ORDER)))
		r = aptix_error_oom();
	json_decref(doc);
	aptix_buf_release(&req);
	return r;
}

/* Read the tool-call objects ids name into *out (n of them). */
static int read_calls(aptix_tool_call **out, aptix_repo *repo,
		      const aptix_oid *ids, size_t n)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_otype type;
	size_t i;
	int r = 0;

	if (!(*out = aptix__calloc(n ? n : 1, sizeof(**out))))
		return APTIX_ERROR;
	for (i = 0; i < n; i++)
		aptix_tool_call_init(&(*out)[i]);
	for (i = 0; !r && i < n; i++) {
		aptix_buf_clear(&b);
		if ((r = aptix_odb_read(&b, &type, repo->odb, &ids[i],
					0)) == 0 && type != APTIX_OBJ_TOOL_CALL) {
			aptix_error_set(APTIX_ERROR_OBJECT, "object '%s' is "
					"not a tool call", aptix_oid_hex(&ids[i]));
			r = APTIX_ECORRUPT;
		}
		if (!r)
			r = aptix_tool_call_parse(&(*out)[i], b.ptr, b.len);
	}
	aptix_buf_release(&b);
	return r;
}

/* The calls of the head, when it awaits their results. */
static int pending_calls(aptix_run *run)
{
	aptix_session s;
	aptix_turn t;
	int r;

	if (!run->has_parent || run->o.kind != APTIX_RUN_CONTINUE)
		return 0;
	aptix_turn_init(&t);
	if ((r = aptix_session_lookup(&s, run->repo, &run->parent)) == 0 &&
	    s.status == APTIX_SESSION_AWAITING_TOOL_RESULTS &&
	    (r = aptix_turn_lookup(&t, run->repo, &s.turn)) == 0 &&
	    t.ntool_calls) {
		r = read_calls(&run->pending_calls, run->repo, t.tool_calls,
			       t.ntool_calls);
		run->npending = t.ntool_calls;
	}
	aptix_turn_release(&t);
	aptix_session_release(&s);
	return r;
}

static const aptix_tool_call *find_pending(const aptix_run *run,
					   const char *call_id)
{
	size_t i = aptix__tool_call_index(run->pending_calls, run->npending,
					  call_id);

	return i < run->npending ? &run->pending_calls[i] : NULL;
}

/*
 * Whether call_id is a call of an older turn of the history: 1 with
 * *seq its turn's seq (it was answered by a later turn).
 */
static int answered_before(long *seq, aptix_run *run, const char *call_id)
{
	const struct aptix__past *p;
	aptix_tool_call *calls = NULL;
	size_t i;
	int found = 0;

	for (i = 0; !found && i < ANSWERED_WALK &&
	     aptix__chain_get(&p, &run->chain, i) == 0; i++) {
		size_t n = p->turn.ntool_calls;

		if (!n || read_calls(&calls, run->repo, p->turn.tool_calls,
				     n) < 0) {
			aptix_tool_calls_free(calls, n);
			calls = NULL;
			continue;
		}
		found = aptix__tool_call_index(calls, n, call_id) < n;
		*seq = p->turn.seq;
		aptix_tool_calls_free(calls, n);
		calls = NULL;
	}
	aptix_error_clear();
	return found;
}

static int refuse_unknown(aptix_run *run, const char *call_id)
{
	aptix_buf names = APTIX_BUF_INIT;
	long seq = 0;
	size_t i;

	if (answered_before(&seq, run, call_id)) {
		aptix_error_set(APTIX_ERROR_INVALID, "tool call '%s' was "
				"answered already (it was asked in turn %ld of "
				"conversation '%s'); nothing sent", call_id, seq,
				run->conv);
		return APTIX_EINVALID;
	}
	for (i = 0; i < run->npending; i++)
		aptix_buf_printf(&names, "%s%s", i ? ", " : "",
				 run->pending_calls[i].call_id);
	if (run->npending)
		aptix_error_set(APTIX_ERROR_INVALID, "unknown tool call id "
				"'%s': the head of '%s' asks for %s; nothing "
				"sent", call_id, run->conv, names.ptr);
	else
		aptix_error_set(APTIX_ERROR_INVALID, "unknown tool call id "
				"'%s': the head of conversation '%s' awaits no "
				"tool results; nothing sent", call_id,
				run->conv);
	aptix_buf_release(&names);
	return APTIX_EINVALID;
}

/* Every pending call answered, once, and nothing else. */
static int check_outputs(aptix_run *run)
{
	const aptix_run_options *o = &run->o;
	aptix_buf missing = APTIX_BUF_INIT;
	size_t i, j, nmissing = 0;
	int r = 0;

	for (i = 0; i < o->ntool_outputs; i++) {
		const char *id = o->tool_outputs[i].call_id;

		if (!id || !*id) {
			aptix_error_set(APTIX_ERROR_INVALID, "a tool output "
					"without its call id");
			return APTIX_EINVALID;
		}
		for (j = 0; j < i; j++)
			if (!strcmp(o->tool_outputs[j].call_id, id)) {
				aptix_error_set(APTIX_ERROR_INVALID, "tool call "
						"'%s' is answered twice", id);
				return APTIX_EINVALID;
			}
		if (!find_pending(run, id))
			return refuse_unknown(run, id);
	}
	for (i = 0; i < run->npending; i++) {
		const aptix_tool_call *c = &run->pending_calls[i];

		for (j = 0; j < o->ntool_outputs; j++)
			if (!strcmp(o->tool_outputs[j].call_id, c->call_id))
				break;
		if (j == o->ntool_outputs) {
			aptix_buf_printf(&missing, "%s'%s' (%s)", nmissing ?
					 ", " : "", c->call_id, c->name);
			nmissing++;
		}
	}
	if (nmissing) {
		aptix_error_set(APTIX_ERROR_INVALID, "conversation '%s' awaits "
				"the output of %s %s: give %s with --tool-output "
				"<call_id>=<file> (or --tool-results); nothing "
				"sent", run->conv, nmissing == 1 ? "tool call" :
				"tool calls", missing.ptr, nmissing == 1 ? "it" :
				"each");
		r = APTIX_EINVALID;
	}
	aptix_buf_release(&missing);
	return r;
}

/* Characters (code points) of UTF-8 text. */
static size_t utf8_chars(const char *s, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

/*
 * A copy of data with every credential replaced by "[REDACTED:<rule>]";
 * a warning names each rule (what: "output", "stdout", "stderr").
 */
static int redacted(aptix_buf *out, aptix_run *run, const char *call_id,
		    const char *what, const char *data, size_t len)
{
	aptix_credential c;
	size_t guard = 0;
	int r;

	if ((r = aptix_buf_set(out, data ? data : "", data ? len : 0)) < 0)
		return r;
	while (guard++ < 10000 && aptix_run__credential(&c, run, out->ptr,
							out->len)) {
		aptix_buf b = APTIX_BUF_INIT;

		aptix_buf_put(&b, out->ptr, c.offset);
		aptix_buf_printf(&b, "[REDACTED:%s]", c.rule);
		aptix_buf_put(&b, out->ptr + c.offset + c.length,
			      out->len - c.offset - c.length);
		aptix_run__add_warning(run, "the %s of tool call '%s' held %s "
				       "(rule %s) on line %zu: redacted before "
				       "it was sent or stored", what, call_id,
				       aptix_credential_kind(&c), c.rule,
				       c.line);
		if (aptix_buf_oom(&b)) {
			aptix_buf_release(&b);
			return aptix_error_oom();
		}
		aptix_buf_release(out);
		*out = b;
	}
	return 0;
}

/* The checks of one output, and its redacted copies in run->tbufs[3k]. */
static int take_output(aptix_run *run, size_t k,
		       const aptix_run_tool_output *to)
{
	size_t chars;
	int r;

	if (!aptix_utf8_valid(to->output ? to->output : "",
			      to->output ? to->output_len : 0)) {
		aptix_error_set(APTIX_ERROR_INVALID, "the output of tool call "
				"'%s' is not valid UTF-8 text (or holds a NUL "
				"byte); nothing sent", to->call_id);
		return APTIX_EINVALID;
	}
	chars = utf8_chars(to->output, to->output ? to->output_len : 0);
	if (chars > APTIX_TOOL_OUTPUT_MAX) {
		aptix_error_set(APTIX_ERROR_INVALID, "the output of tool call "
				"'%s' is %zu characters, over the API's limit of "
				"%d: refusing to send it (cut it, and say so "
				"with truncated)", to->call_id, chars,
				APTIX_TOOL_OUTPUT_MAX);
		return APTIX_EINVALID;
	}
	if ((r = redacted(&run->tbufs[3 * k], run, to->call_id, "output",
			  to->output, to->output_len)) < 0)
		return r;
	/* sent as it ran: scanned once */
	if (to->out && to->out_len == to->output_len &&
	    !memcmp(to->out, to->output, to->out_len))
		r = aptix_buf_set(&run->tbufs[3 * k + 1], run->tbufs[3 * k].ptr,
				  run->tbufs[3 * k].len);
	else if (to->out)
		r = redacted(&run->tbufs[3 * k + 1], run, to->call_id,
			     "stdout", to->out, to->out_len);
	if (r < 0 ||
	    (to->err && (r = redacted(&run->tbufs[3 * k + 2], run,
				      to->call_id, "stderr", to->err,
				      to->err_len)) < 0))
		return r;
	return 0;
}

static void set_data(aptix_record_data *d, const aptix_buf *b, int given)
{
	d->ptr = given ? b->ptr : NULL;
	d->len = given ? b->len : 0;
}

/* The results the recorder stores, in the order the outputs came. */
static int make_results(aptix_run *run)
{
	const aptix_run_options *o = &run->o;
	size_t k, n = o->ntool_outputs;

	run->tbufs = aptix__calloc(3 * n, sizeof(*run->tbufs));
	run->tresults = aptix__calloc(n, sizeof(*run->tresults));
	run->trecs = aptix__calloc(n, sizeof(*run->trecs));
	if (!run->tbufs || !run->tresults || !run->trecs)
		return APTIX_ERROR;
	for (k = 0; k < 3 * n; k++)
		aptix_buf_init(&run->tbufs[k], 0);
	for (k = 0; k < n; k++, run->ntool++) {
		const aptix_run_tool_output *to = &o->tool_outputs[k];
		aptix_tool_result *t = &run->tresults[k];
		int r;

		if ((r = take_output(run, k, to)) < 0)
			return r;
		aptix_tool_result_init(t);
		/* borrowed from the options, which outlive the run */
		t->call_id = (char *)to->call_id;
		t->status = to->status;
		t->has_exit_code = to->has_exit_code;
		t->exit_code = to->exit_code;
		t->started_at = 0;
		t->duration_ms = to->duration_ms;
		t->cwd = (char *)to->cwd;
		t->argv = (char **)to->argv;
		t->argc = to->argc;
		t->truncated = to->truncated;
		t->source = (char *)"aptix";
		/* the sizes as run, not as redacted */
		t->out_bytes = to->out ? (int64_t)to->out_len : 0;
		t->err_bytes = to->err ? (int64_t)to->err_len : 0;
		run->trecs[k].result = t;
		set_data(&run->trecs[k].output, &run->tbufs[3 * k], 1);
		set_data(&run->trecs[k].out, &run->tbufs[3 * k + 1],
			 to->out != NULL);
		set_data(&run->trecs[k].err, &run->tbufs[3 * k + 2],
			 to->err != NULL);
	}
	return 0;
}

int aptix_run__plan_tools(aptix_run *run)
{
	int r;

	if (run->o.tools && !run->o.no_tools)
		r = given_tools(run);
	else if (!run->o.no_tools)
		r = remembered_tools(run);
	else
		r = 0;
	if (r < 0 || (r = pending_calls(run)) < 0)
		return r;
	if (!run->npending && !run->o.ntool_outputs)
		return 0;
	if ((r = check_outputs(run)) < 0)
		return r;
	return make_results(run);
}

/* The call as a function_call input item (a stateless re-send). */
static json_t *call_item(const aptix_tool_call *c)
{
	json_t *o = json_object();

	json_object_set_new(o, "type", json_string("function_call"));
	if (c->item_id)
		json_object_set_new(o, "id", json_string(c->item_id));
	json_object_set_new(o, "call_id", json_string(c->call_id));
	json_object_set_new(o, "name", json_string(c->name));
	json_object_set_new(o, "arguments", json_string(c->arguments));
	return o;
}

int aptix_run__tool_input(aptix_run *run, json_t *req, json_t *input)
{
	json_t *tools;
	size_t i;

	if (run->tools_json) {
		tools = json_loads(run->tools_json, 0, NULL);
		if (!tools)
			return aptix_error_oom();
		json_object_set_new(req, "tools", tools);
	}
	if (!run->ntool)
		return 0;
	/* a new chain does not know the calls: they go first */
	for (i = 0; !run->previous && i < run->npending; i++)
		json_array_append_new(input, call_item(&run->pending_calls[i]));
	for (i = 0; i < run->ntool; i++) {
		json_t *o = json_object();
		const aptix_buf *out = &run->tbufs[3 * i];

		json_object_set_new(o, "type",
				    json_string("function_call_output"));
		json_object_set_new(o, "call_id",
				    json_string(run->tresults[i].call_id));
		json_object_set_new(o, "output", json_stringn(out->ptr,
							      out->len));
		json_array_append_new(input, o);
	}
	return 0;
}
