/*
 * porcelain/turn-stream.h - how a turn shows itself in a terminal or a
 * pipe, shared by continue/fork/rerun (turn-cli.c) and chat (chat.c):
 * the answer streamed to stdout as it arrives, retries told on stderr,
 * and after the turn its warnings and one summary (or failure) line.
 */
#ifndef APTIX_TURN_STREAM_H
#define APTIX_TURN_STREAM_H

#include <aptix.h>
#include <aptix/run.h>
#include <signal.h>

/* The payload of turn_stream_delta() and turn_stream_retry(). */
struct turn_stream {
	int tty;		/* stdout is a terminal: sanitize */
	int json;		/* --json: print nothing while streaming */
	int printed;		/* some text went out */
	int last_newline;	/* ... and it ended with a newline */
};

/*
 * Set when stdout has gone (SIGHUP, or a write failed: EPIPE when the
 * reader of `aptix continue | head` left): nothing more is written, and
 * the turn goes on to be committed.
 */
extern volatile sig_atomic_t turn_stream_gone;
/* Write to stdout unless it has gone; a failed write says it has. */
void turn_stream_write(const char *text, size_t len, int tty);

/* Start: tty from stdout. */
void turn_stream_init(struct turn_stream *st, int json);

/* aptix_openai_options.on_delta: the answer to stdout as it arrives. */
int turn_stream_delta(const char *text, size_t len, void *payload);

/* aptix_openai_options.on_retry: "retrying in ..." on stderr. */
void turn_stream_retry(int attempt, long wait_ms, const char *why,
		       void *payload);

/*
 * After the turn: end the streamed answer with a newline, or print the
 * whole answer when nothing was streamed (--no-stream) and the turn
 * completed (rc 0).
 */
void turn_stream_end(struct turn_stream *st, const aptix_run_result *res,
		     int rc);

/*
 * On stderr: the warnings (unless quiet), then the error and "failed;
 * the instruction is kept" for a failed turn (rc != 0), or the summary
 * line "[conv session] N tokens ..." (unless quiet).
 */
void turn_stream_report(const aptix_run_result *res, int rc, int quiet);
/* The two halves of turn_stream_report(), for a line between them. */
void turn_stream_warnings(const aptix_run_result *res, int quiet);
void turn_stream_result(const aptix_run_result *res, int rc, int quiet);

#endif
