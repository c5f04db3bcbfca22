/*
 * porcelain/tool-view.c - see tool-view.h.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "pretty.h"
#include "view.h"
#include "tool-view.h"

static void *alloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die("out of memory");
	return p;
}

/* The name of the call a result answers, from its call object. */
static char *call_name(aptix_repo *repo, const aptix_tool_result *r,
		       const struct tool_view *tv)
{
	aptix_tool_call c;
	char *name = NULL;
	size_t i;

	for (i = 0; i < tv->ncalls; i++)
		if (!strcmp(tv->calls[i].call_id, r->call_id))
			return strdup(tv->calls[i].name);
	if (aptix_oid_is_zero(&r->call))
		return NULL;
	if (aptix_tool_call_lookup(&c, repo, &r->call) == 0)
		name = strdup(c.name);
	aptix_error_clear();
	aptix_tool_call_release(&c);
	return name;
}

void tool_view_load(struct tool_view *tv, aptix_repo *repo,
		    const aptix_turn *t)
{
	size_t i;

	memset(tv, 0, sizeof(*tv));
	tv->call_ids = t->tool_calls;
	tv->result_ids = t->tool_results;
	tv->calls = alloc(t->ntool_calls, sizeof(*tv->calls));
	tv->results = alloc(t->ntool_results, sizeof(*tv->results));
	tv->outputs = alloc(t->ntool_results, sizeof(*tv->outputs));
	tv->names = alloc(t->ntool_results, sizeof(*tv->names));
	for (i = 0; i < t->ntool_calls; i++, tv->ncalls++)
		if (aptix_tool_call_lookup(&tv->calls[i], repo,
					   &t->tool_calls[i]) < 0)
			die("tool call '%s': %s", aptix_oid_hex(
			    &t->tool_calls[i]), aptix_error_last()->message);
	for (i = 0; i < t->ntool_results; i++, tv->nresults++) {
		aptix_tool_result *r = &tv->results[i];

		aptix_buf_init(&tv->outputs[i], 0);
		if (aptix_tool_result_lookup(r, repo,
					     &t->tool_results[i]) < 0)
			die("tool result '%s': %s", aptix_oid_hex(
			    &t->tool_results[i]), aptix_error_last()->message);
		if (!aptix_oid_is_zero(&r->output))
			view_read_blob(&tv->outputs[i], repo, &r->output);
		tv->names[i] = call_name(repo, r, tv);
	}
}

void tool_view_release(struct tool_view *tv)
{
	size_t i;

	for (i = 0; i < tv->nresults; i++) {
		aptix_tool_result_release(&tv->results[i]);
		aptix_buf_release(&tv->outputs[i]);
		free(tv->names[i]);
	}
	aptix_tool_calls_free(tv->calls, tv->ncalls);
	free(tv->results);
	free(tv->outputs);
	free(tv->names);
	memset(tv, 0, sizeof(*tv));
}

/* "ok, exit 0, 12 ms, output 8 bytes (truncated), stderr 13 bytes" */
static void result_line(aptix_buf *b, const aptix_tool_result *r)
{
	char dur[32];

	aptix_buf_puts(b, aptix_tool_status_name(r->status));
	if (r->has_exit_code)
		aptix_buf_printf(b, ", exit %" PRId64, r->exit_code);
	if (r->duration_ms)
		aptix_buf_printf(b, ", %s", view_duration(dur,
							  r->duration_ms));
	aptix_buf_printf(b, ", output %" PRId64 " bytes%s", r->output_bytes,
			 r->truncated ? " (truncated)" : "");
	if (!aptix_oid_is_zero(&r->out) || r->out_bytes)
		aptix_buf_printf(b, ", stdout %" PRId64 " bytes",
				 r->out_bytes);
	if (!aptix_oid_is_zero(&r->err) || r->err_bytes)
		aptix_buf_printf(b, ", stderr %" PRId64 " bytes",
				 r->err_bytes);
	if (strcmp(r->source, "aptix"))
		aptix_buf_printf(b, ", from %s", r->source);
}

void tool_view_print(FILE *fp, const struct tool_view *tv)
{
	aptix_buf b = APTIX_BUF_INIT;
	size_t i;

	if (tv->ncalls)
		fprintf(fp, "\nTool calls:\n");
	for (i = 0; i < tv->ncalls; i++) {
		const aptix_tool_call *c = &tv->calls[i];

		fprintf(fp, "    %s  ", c->call_id);
		view_puts(fp, c->name);
		fputs("  ", fp);
		cli_print_oneline(fp, c->arguments, strlen(c->arguments));
		fputc('\n', fp);
	}
	if (tv->nresults)
		fprintf(fp, "\nTool results:\n");
	for (i = 0; i < tv->nresults; i++) {
		const aptix_tool_result *r = &tv->results[i];

		aptix_buf_clear(&b);
		result_line(&b, r);
		fprintf(fp, "    %s  ", r->call_id);
		if (tv->names[i])
			view_puts(fp, tv->names[i]);
		fprintf(fp, "%s%s\n", tv->names[i] ? "  " : "", b.ptr);
		if (r->cwd) {
			fputs("        cwd ", fp);
			view_puts(fp, r->cwd);
			fputc('\n', fp);
		}
		view_put_indented(fp, "        | ", tv->outputs[i].ptr,
				  tv->outputs[i].len);
	}
	aptix_buf_release(&b);
}

void tool_view_lines(aptix_buf *out, const struct tool_view *tv)
{
	size_t i;

	for (i = 0; i < tv->ncalls; i++)
		aptix_buf_printf(out, "tool call %s %s %s\n",
				 tv->calls[i].call_id, tv->calls[i].name,
				 tv->calls[i].arguments);
	for (i = 0; i < tv->nresults; i++) {
		aptix_buf_printf(out, "tool result %s ",
				 tv->results[i].call_id);
		result_line(out, &tv->results[i]);
		aptix_buf_putc(out, '\n');
	}
}

int tool_view_foreach_text(const struct tool_view *tv,
			   int (*fn)(const char *s, size_t len, void *p),
			   void *payload)
{
	size_t i;
	int r = 0;

	for (i = 0; !r && i < tv->ncalls; i++)
		if (!(r = fn(tv->calls[i].name, strlen(tv->calls[i].name),
			     payload)))
			r = fn(tv->calls[i].arguments,
			       strlen(tv->calls[i].arguments), payload);
	for (i = 0; !r && i < tv->nresults; i++)
		r = fn(tv->outputs[i].ptr, tv->outputs[i].len, payload);
	return r;
}
