/*
 * porcelain/turn-stream.c - the answer as it streams, and the lines
 * that follow a turn (see turn-stream.h).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "turn-stream.h"
#include "cli.h"

void turn_stream_init(struct turn_stream *st, int json)
{
	memset(st, 0, sizeof(*st));
	st->tty = isatty(1);
	st->json = json;
}

volatile sig_atomic_t turn_stream_gone;

void turn_stream_write(const char *text, size_t len, int tty)
{
	if (turn_stream_gone)
		return;
	if (tty)
		cli_print_sanitized(stdout, text, len);
	else
		fwrite(text, 1, len, stdout);
	if (fflush(stdout) || ferror(stdout))
		turn_stream_gone = 1;	/* EPIPE, EIO: the reader is gone */
}

int turn_stream_delta(const char *text, size_t len, void *payload)
{
	struct turn_stream *st = payload;

	if (st->json || !len)
		return 0;
	turn_stream_write(text, len, st->tty);
	st->printed = 1;
	st->last_newline = text[len - 1] == '\n';
	return 0;
}

void turn_stream_retry(int attempt, long wait_ms, const char *why,
		       void *payload)
{
	(void)payload;
	fprintf(stderr, "aptix: %s; retrying in %.1f s (attempt %d)\n", why,
		wait_ms / 1000.0, attempt);
}

void turn_stream_end(struct turn_stream *st, const aptix_run_result *res,
		     int rc)
{
	if (st->printed && !st->last_newline)
		turn_stream_write("\n", 1, 0);
	st->last_newline = 1;
	if (!st->json && !st->printed && !rc && res->api.text.len) {
		/* not streamed (--no-stream): print it now */
		turn_stream_write(res->api.text.ptr, res->api.text.len,
				  st->tty);
		if (res->api.text.ptr[res->api.text.len - 1] != '\n')
			turn_stream_write("\n", 1, 0);
	}
}

static const char *short_id(const aptix_oid *id)
{
	static char buf[13];

	snprintf(buf, sizeof(buf), "%.12s", aptix_oid_hex(id));
	return buf;
}

void turn_stream_warnings(const aptix_run_result *res, int quiet)
{
	size_t i;

	for (i = 0; i < res->nwarnings && !quiet; i++)
		warning("%s", res->warnings[i]);
}

void turn_stream_report(const aptix_run_result *res, int rc, int quiet)
{
	turn_stream_warnings(res, quiet);
	turn_stream_result(res, rc, quiet);
}

void turn_stream_result(const aptix_run_result *res, int rc, int quiet)
{
	if (rc) {
		error("%s", res->error_message ? res->error_message :
		      aptix_error_last()->message);
		fprintf(stderr, "[%.8s %s] failed; the instruction is kept: "
			"retry with 'aptix rerun %s'\n", res->conversation,
			short_id(&res->session), short_id(&res->session));
	} else if (!quiet) {
		fprintf(stderr, "[%.8s %s] %ld tokens (%ld in, %ld out), "
			"%.1f s\n", res->conversation, short_id(&res->session),
			res->api.usage.total_tokens,
			res->api.usage.input_tokens,
			res->api.usage.output_tokens,
			res->duration_ms / 1000.0);
	}
}
