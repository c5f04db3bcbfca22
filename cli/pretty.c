/*
 * cli/pretty.c - readable turns and sessions (see pretty.h).
 * Untrusted strings go through cli_print_sanitized(), or
 * cli_print_oneline() for one-line fields.
 */
#include <inttypes.h>
#include <string.h>
#include "pretty.h"
#include "cli.h"

static void field(FILE *fp, const char *key, const char *val)
{
	if (!val)
		return;
	fprintf(fp, "%-22s ", key);
	cli_print_oneline(fp, val, strlen(val));
	fputc('\n', fp);
}

static void field_id(FILE *fp, const char *key, const aptix_oid *id)
{
	if (!aptix_oid_is_zero(id))
		fprintf(fp, "%-22s %s\n", key, aptix_oid_hex(id));
}

static void field_time(FILE *fp, const char *key, int64_t ms)
{
	char buf[32];

	if (ms)
		fprintf(fp, "%-22s %s\n", key, aptix_time_fmt(buf, ms));
}

void pretty_print_turn(FILE *fp, const aptix_turn *t)
{
	size_t i;

	fprintf(fp, "%-22s %d\n", "format", t->version);
	field(fp, "status", aptix_turn_status_name(t->status));
	field(fp, "conversation", t->conversation);
	fprintf(fp, "%-22s %ld\n", "seq", t->seq);
	field(fp, "mode", t->mode);
	field(fp, "model", t->model);
	field(fp, "workspace", t->workspace);
	field(fp, "repo", t->repo);
	if (t->has_worktree) {
		fprintf(fp, "%-22s %s %s", "worktree", t->worktree.commit ?
			t->worktree.commit : "(no commit)",
			t->worktree.dirty ? "dirty" : "clean");
		if (t->worktree.branch) {
			fputs(" branch ", fp);
			cli_print_oneline(fp, t->worktree.branch,
					  strlen(t->worktree.branch));
		}
		fputc('\n', fp);
		field(fp, "remote", t->worktree.remote);
	}
	field_time(fp, "created", t->created_at);
	field_time(fp, "status changed", t->status_at);
	field_time(fp, "response received", t->response_at);
	field_time(fp, "chain expires", t->chain_expires_at);
	field(fp, "response id", t->response_id);
	field(fp, "previous response id", t->previous_response_id);
	if (t->chain_restarted)
		field(fp, "chain restarted", "yes");
	field_id(fp, "instruction", &t->instruction);
	field_id(fp, "answer", &t->answer);
	field_id(fp, "request", &t->request);
	field_id(fp, "response", &t->response);
	fprintf(fp, "%-22s input %ld (cached %ld), output %ld "
		"(reasoning %ld), total %ld, requests %ld\n", "usage",
		t->usage.input_tokens, t->usage.cached_tokens,
		t->usage.output_tokens, t->usage.reasoning_tokens,
		t->usage.total_tokens, t->usage.model_requests);
	for (i = 0; i < t->nchunks; i++) {
		const aptix_chunk_ref *c = &t->chunks[i];

		fprintf(fp, "%-22s ", "chunk");
		cli_print_path(fp, c->path);
		fprintf(fp, ":%ld-%ld score %.3f %s id %s sha256 %s\n",
			c->start_line, c->end_line, c->score / 1e6,
			c->sent ? "sent" : "already-sent", c->chunk_id,
			c->content_hash);
		if (!aptix_oid_is_zero(&c->snippet))
			fprintf(fp, "%-22s %s\n", "  snippet",
				aptix_oid_hex(&c->snippet));
	}
	for (i = 0; i < t->nfiles; i++) {
		const aptix_file_ref *f = &t->files[i];

		fprintf(fp, "%-22s ", "file");
		cli_print_path(fp, f->path);
		fprintf(fp, " %ld bytes %s%s%s%s sha256 %s\n", f->size,
			f->sent ? "sent" : "not-sent",
			f->touched ? " touched" : "",
			f->too_large ? " too-large" : "",
			f->binary ? " binary" : "", f->sha256);
		if (f->has_content)
			fprintf(fp, "%-22s %s\n", "  content",
				aptix_oid_hex(&f->content));
	}
	for (i = 0; i < t->ntool_calls; i++)
		field_id(fp, "tool call", &t->tool_calls[i]);
	for (i = 0; i < t->ntool_results; i++)
		field_id(fp, "tool result", &t->tool_results[i]);
	for (i = 0; i < t->nwarnings; i++)
		field(fp, "warning", t->warnings[i]);
	for (i = 0; i < t->nerrors; i++)
		field(fp, "error", t->errors[i]);
}

void pretty_print_tool_call(FILE *fp, const aptix_tool_call *c)
{
	fprintf(fp, "%-22s %d\n", "format", c->version);
	field(fp, "call id", c->call_id);
	field(fp, "name", c->name);
	field(fp, "namespace", c->ns);
	field(fp, "kind", c->kind ? c->kind : "function");
	field(fp, "item id", c->item_id);
	field(fp, "arguments", c->arguments);
}

static void field_bytes(FILE *fp, const char *key, const aptix_oid *id,
			int64_t bytes)
{
	if (aptix_oid_is_zero(id) && !bytes)
		return;
	fprintf(fp, "%-22s %" PRId64 " bytes", key, bytes);
	if (!aptix_oid_is_zero(id))
		fprintf(fp, " %s", aptix_oid_hex(id));
	fputc('\n', fp);
}

void pretty_print_tool_result(FILE *fp, const aptix_tool_result *r)
{
	size_t i;

	fprintf(fp, "%-22s %d\n", "format", r->version);
	field(fp, "call id", r->call_id);
	field_id(fp, "call", &r->call);
	field(fp, "status", aptix_tool_status_name(r->status));
	if (r->has_exit_code)
		fprintf(fp, "%-22s %" PRId64 "\n", "exit code", r->exit_code);
	field_time(fp, "started", r->started_at);
	if (r->duration_ms)
		fprintf(fp, "%-22s %" PRId64 " ms\n", "duration",
			r->duration_ms);
	field(fp, "cwd", r->cwd);
	for (i = 0; i < r->argc; i++)
		field(fp, "argv", r->argv[i]);
	field_bytes(fp, "stdout", &r->out, r->out_bytes);
	field_bytes(fp, "stderr", &r->err, r->err_bytes);
	field_bytes(fp, "output", &r->output, r->output_bytes);
	if (r->truncated)
		field(fp, "truncated", "yes");
	field(fp, "source", r->source);
}

void pretty_print_session(FILE *fp, const aptix_session *s)
{
	fprintf(fp, "%-22s %d\n", "format", s->version);
	field(fp, "status", aptix_session_status_name(s->status));
	field_id(fp, "parent", &s->parent);
	field(fp, "conversation", s->conversation);
	field_id(fp, "turn", &s->turn);
	field_time(fp, "created", s->created_at);
	fprintf(fp, "%-22s %" PRId64 " ms\n", "duration", s->duration_ms);
	fprintf(fp, "%-22s prompt %ld, completion %ld, total %ld, "
		"requests %ld\n", "usage", s->usage.input_tokens,
		s->usage.output_tokens, s->usage.total_tokens,
		s->usage.model_requests);
	field(fp, "session type", s->session_type);
	field(fp, "transport", s->transport);
	field(fp, "workspace", s->workspace);
	field(fp, "title", s->title);
	field(fp, "forked from", s->forked_from);
}

int pretty_print_object(FILE *fp, aptix_otype type, const aptix_buf *data)
{
	aptix_turn t;
	aptix_session s;

	switch (type) {
	case APTIX_OBJ_TURN:
		if (aptix_turn_parse(&t, data->ptr, data->len) < 0)
			return -1;
		pretty_print_turn(fp, &t);
		aptix_turn_release(&t);
		return 0;
	case APTIX_OBJ_SESSION:
		if (aptix_session_parse(&s, data->ptr, data->len) < 0)
			return -1;
		pretty_print_session(fp, &s);
		aptix_session_release(&s);
		return 0;
	case APTIX_OBJ_TOOL_CALL: {
		aptix_tool_call c;

		if (aptix_tool_call_parse(&c, data->ptr, data->len) < 0)
			return -1;
		pretty_print_tool_call(fp, &c);
		aptix_tool_call_release(&c);
		return 0;
	}
	case APTIX_OBJ_TOOL_RESULT: {
		aptix_tool_result r;

		if (aptix_tool_result_parse(&r, data->ptr, data->len) < 0)
			return -1;
		pretty_print_tool_result(fp, &r);
		aptix_tool_result_release(&r);
		return 0;
	}
	default:
		cli_print_sanitized(fp, data->ptr, data->len);
		return 0;
	}
}

const char *pretty_size(char out[32], uint64_t bytes)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB",
					     "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (!u)
		snprintf(out, 32, "%" PRIu64 " bytes", bytes);
	else
		snprintf(out, 32, "%.1f %s", v, units[u]);
	return out;
}
