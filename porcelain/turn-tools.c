/*
 * porcelain/turn-tools.c - see turn-tools.h. What the options say is
 * read here; whether it answers the calls the conversation awaits is the
 * library's to decide (aptix_run_begin), before anything is sent.
 */
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include <aptix/view.h>
#include "turn-tools.h"

/* "<id>=<rest>": the id (a copy) and rest; dies on a malformed one. */
static char *split_id(const char **rest, const char *arg, const char *opt)
{
	const char *eq = strchr(arg, '=');
	char *id;

	if (!eq || eq == arg || !eq[1])
		die("--%s '%s': expected <call_id>=<%s>", opt, arg,
		    strcmp(opt, "tool-exit") ? "file" : "code");
	if (!(id = malloc((size_t)(eq - arg) + 1)))
		die("out of memory");
	memcpy(id, arg, (size_t)(eq - arg));
	id[eq - arg] = '\0';
	*rest = eq + 1;
	return id;
}

static aptix_run_tool_output *new_output(struct turn_tools *t)
{
	aptix_run_tool_output *v = realloc(t->v, (t->n + 1) * sizeof(*v));
	aptix_buf *d = realloc(t->data, (t->n + 1) * sizeof(*d));

	if (!v || !d)
		die("out of memory");
	t->v = v;
	t->data = d;
	memset(&v[t->n], 0, sizeof(v[t->n]));
	aptix_buf_init(&d[t->n], 0);
	return &v[t->n++];
}

static void read_outputs(struct turn_tools *t)
{
	int stdin_used = 0;
	size_t i;

	for (i = 0; i < t->outputs.nr; i++) {
		const char *file;
		aptix_run_tool_output *o;
		aptix_buf *d;

		o = new_output(t);
		d = &t->data[t->n - 1];
		o->call_id = split_id(&file, t->outputs.items[i],
				      "tool-output");
		if (!strcmp(file, "-")) {
			if (stdin_used++)
				die("--tool-output: only one output can be "
				    "read from stdin");
			if (aptix_buf_read_fd(d, 0) < 0)
				die_aptix();
		} else if (aptix_buf_read_file(d, file) < 0) {
			die("--tool-output %s: %s", o->call_id,
			    aptix_error_last()->message);
		}
		o->output = d->ptr;
		o->output_len = d->len;
	}
}

/*
 * --tool-results: {"<id>": {...} | "<output>"} or [{"call_id": ...}],
 * read by the library (the servers take the same JSON).
 */
static void read_results(struct turn_tools *t)
{
	json_error_t err;
	json_t *j = json_load_file(t->results_file, JSON_REJECT_DUPLICATES,
				   &err);

	if (!j)
		die("--tool-results %s: %s (line %d)", t->results_file,
		    err.text, err.line);
	if (aptix_run_tool_outputs_from_json(&t->results, j) < 0) {
		json_decref(j);
		die("--tool-results %s: %s", t->results_file,
		    aptix_error_last()->message);
	}
	json_decref(j);
	t->v = t->results.v;
	t->n = t->results.n;
}

static void apply_exits(struct turn_tools *t)
{
	size_t i, j;

	for (i = 0; i < t->exits.nr; i++) {
		const char *code;
		char *end, *id = split_id(&code, t->exits.items[i],
					  "tool-exit");
		long n = strtol(code, &end, 10);

		if (*end || end == code)
			die("--tool-exit %s: '%s' is not an integer", id, code);
		for (j = 0; j < t->n && strcmp(t->v[j].call_id, id); j++)
			;
		if (j == t->n)
			die("--tool-exit names tool call '%s', which has no "
			    "--tool-output", id);
		t->v[j].has_exit_code = 1;
		t->v[j].exit_code = n;
		t->v[j].status = n ? APTIX_TOOL_ERROR : APTIX_TOOL_OK;
		free(id);
	}
}

void turn_tools_load(struct turn_tools *t)
{
	aptix_buf_init(&t->tools, 0);
	if (t->tools_file && t->no_tools)
		die("--tools and --no-tools cannot be used together");
	if (t->tools_file && aptix_buf_read_file(&t->tools,
						 t->tools_file) < 0)
		die("--tools %s: %s", t->tools_file,
		    aptix_error_last()->message);
	if (t->results_file && t->outputs.nr)
		die("--tool-results and --tool-output cannot be used together");
	read_outputs(t);
	if (t->results_file)
		read_results(t);
	apply_exits(t);
}

int turn_tools_answering(const struct turn_tools *t)
{
	return t && t->n;
}

void turn_tools_apply(aptix_run_options *o, const struct turn_tools *t)
{
	if (!t)
		return;
	o->tools = t->tools_file ? t->tools.ptr : NULL;
	o->no_tools = t->no_tools;
	o->tool_outputs = t->v;
	o->ntool_outputs = t->n;
}

void turn_tools_release(struct turn_tools *t)
{
	size_t i;

	if (t->results.v) {
		aptix_run_tool_outputs_release(&t->results);
	} else {
		for (i = 0; i < t->n; i++) {
			free((char *)t->v[i].call_id);
			aptix_buf_release(&t->data[i]);
		}
		free(t->v);
	}
	free(t->data);
	aptix_buf_release(&t->tools);
	aptix_strlist_release(&t->outputs);
	aptix_strlist_release(&t->exits);
}

void turn_tools_print_calls(const aptix_run_result *res, int quiet)
{
	size_t i;

	for (i = 0; i < res->api.ncalls; i++) {
		const aptix_tool_call *c = &res->api.calls[i];

		printf("%s\t%s\t", c->call_id, c->name);
		cli_print_oneline(stdout, c->arguments, strlen(c->arguments));
		putchar('\n');
	}
	if (quiet)
		return;
	fprintf(stderr, "hint: the model asks for %zu tool call%s (call id, "
		"name, arguments above); run %s, then answer with\n"
		"hint:   aptix continue --conversation %s --tool-output "
		"<call_id>=<file> [--tool-exit <call_id>=<code>]...\n",
		res->api.ncalls, res->api.ncalls == 1 ? "" : "s",
		res->api.ncalls == 1 ? "it" : "them", res->conversation);
}
