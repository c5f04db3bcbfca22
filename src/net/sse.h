/*
 * src/net/sse.h - an incremental parser of Server-Sent Events (the
 * text/event-stream format of the WHATWG HTML standard, section 9.2).
 *
 * Feed the bytes as they arrive, split anywhere (even between the CR and
 * the LF of a line end); each complete event goes to the callback. Lines
 * end in LF, CR or CRLF; a leading UTF-8 BOM is stripped; comments
 * (lines starting with ':') are ignored; the fields are event, data
 * (several data lines are joined with LF), id and retry; a blank line
 * dispatches the event. An event with no data line is not dispatched,
 * as the standard says. Internal to the library.
 */
#ifndef APTIX_SSE_H
#define APTIX_SSE_H

#include "util/common.h"

/** Default cap on one event (its data plus its current line). */
#define APTIX_SSE_MAX_EVENT ((size_t)16 << 20)

/**
 * One dispatched event: its type ("message" when no event field was
 * given), and its data (NUL-terminated, len bytes, without the final
 * LF). A non-zero return stops the parser; aptix_sse_feed() returns it.
 */
typedef int (*aptix_sse_event_cb)(const char *type, const char *data,
				  size_t len, void *payload);

typedef struct {
	aptix_sse_event_cb cb;
	void *payload;
	size_t max_event;	/**< cap on line + data; 0: none */
	aptix_buf line;		/**< the line being read */
	aptix_buf data;		/**< data lines of the pending event */
	aptix_buf event;	/**< event type of the pending event */
	aptix_buf last_id;	/**< last event ID (persists, per spec) */
	long retry_ms;		/**< last valid retry field; -1: none */
	size_t events;		/**< events dispatched so far */
	unsigned bom;		/**< BOM bytes matched so far (0..3) */
	int started;		/**< past the BOM check */
	int after_cr;		/**< the last byte was a CR */
	int pending;		/**< a field was seen since the last blank line */
	int error;		/**< sticky: the code that stopped it */
} aptix_sse_parser;

/** Initialise; max_event is set to APTIX_SSE_MAX_EVENT. */
void aptix_sse_init(aptix_sse_parser *p, aptix_sse_event_cb cb,
		    void *payload);
void aptix_sse_release(aptix_sse_parser *p);

/**
 * @brief Parse len more bytes of the stream.
 * @return 0; APTIX_EFULL (with a message) when an event outgrows
 *         max_event; or the callback's non-zero return. After an error
 *         every further call returns the same code.
 */
int aptix_sse_feed(aptix_sse_parser *p, const void *data, size_t len);

/**
 * @brief The stream ended. A last line without a line end is processed
 *        as the standard says (its event is then incomplete, so it is
 *        discarded, not dispatched).
 * @param[out] incomplete (may be NULL) set to 1 when the stream ended in
 *        the middle of an event (a partial line or fields not followed
 *        by a blank line), else 0.
 * @return 0, or the sticky error.
 */
int aptix_sse_finish(aptix_sse_parser *p, int *incomplete);

#endif
