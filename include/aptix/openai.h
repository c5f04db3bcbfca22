/*
 * aptix/openai.h - a client of the OpenAI Responses API (and of the
 * embeddings endpoint), over HTTP with libcurl loaded only when a
 * network call is made, so that local commands never pay for it.
 *
 * libcurl is dlopen()ed as "libcurl.so.4" (the environment variable
 * APTIX_LIBCURL may name another file); when it cannot be loaded the
 * calls fail with APTIX_ERROR and "cannot load libcurl: ...".
 */
#ifndef APTIX_OPENAI_H
#define APTIX_OPENAI_H

#include <signal.h>
#include "common.h"
#include "buf.h"
#include "object.h"
#include "toolcall.h"

typedef struct {
	unsigned version;
	const char *base_url;		/**< ".../v1", no trailing slash */
	const char *api_key;		/**< sent as a bearer token only */
	long connect_timeout_ms;	/**< 0: src/http/http.c's, 10 s */
	long idle_timeout_ms;		/**< 0: openai.idle-timeout's default */
	long total_timeout_ms;		/**< incl. retries; 0: openai.timeout's */
	int max_attempts;		/**< 0: openai.max-attempts' */
	long retry_base_ms;		/**< first backoff; 0: 500 ms */
	long retry_max_ms;		/**< longest single wait; 0: 30 s */
	volatile sig_atomic_t *cancel;	/**< non-zero: stop at once (aptix_cancel) */
	/** Each streamed text delta as it arrives; non-zero cancels. */
	int (*on_delta)(const char *text, size_t len, void *payload);
	/**
	 * Told before each retry: the number of the attempt about to be
	 * made (2 for the first retry), the wait in milliseconds before
	 * it, and why (a one-line text such as "HTTP 429: Rate limit...").
	 */
	void (*on_retry)(int attempt, long wait_ms, const char *why,
			 void *payload);
	void *payload;
	/** bytes of a response body or stream; 0: openai.max-response's */
	size_t max_response;
} aptix_openai_options;

#define APTIX_OPENAI_OPTIONS_VERSION 1
#define APTIX_OPENAI_OPTIONS_INIT { APTIX_OPENAI_OPTIONS_VERSION, NULL, \
	NULL, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, 0 }

typedef struct {
	long http_status;		/**< last HTTP status (0: none) */
	char *response_id;		/**< "resp_..." */
	char *status;			/**< response status: completed... */
	/**
	 * The answer: all output_text parts of the output messages (a
	 * refusal when there is nothing else); for a stream that broke,
	 * the deltas received.
	 */
	aptix_buf text;
	aptix_usage usage;
	/**
	 * The raw payload: the response body (non-streaming), or the
	 * response object of the final stream event (response.completed,
	 * response.incomplete or response.failed; the event itself for an
	 * error event); for an HTTP error, the error body; for a stream
	 * that broke or ended early, the stream bytes that arrived.
	 */
	aptix_buf raw;
	/** e.g. "rate_limit_exceeded"; the error type when code is null */
	char *error_code;
	/** the server's message, on one line, the key redacted */
	char *error_message;
	int previous_not_found;		/**< previous_response_id unknown */
	int attempts;			/**< HTTP requests made */
	/**
	 * The function calls the response asked for (its function_call
	 * output items, in order): name, call_id, arguments exactly as
	 * sent, item id. The answer text is then usually empty.
	 */
	aptix_tool_call *calls;
	size_t ncalls;
} aptix_openai_result;

APTIX_EXTERN(void) aptix_openai_result_init(aptix_openai_result *r);
APTIX_EXTERN(void) aptix_openai_result_release(aptix_openai_result *r);

/**
 * @brief POST {base}/responses with the given request body (JSON). When
 *        the server answers with an event stream (the body asked for
 *        "stream": true), the SSE events are parsed as they arrive and
 *        each response.output_text.delta goes to on_delta.
 *        Retries 429, 5xx and connection failures with exponential
 *        backoff and jitter, honouring Retry-After, bounded by
 *        max_attempts and total_timeout_ms. A stream that broke after
 *        text was delivered is not retried.
 *        out is initialised by the call (any previous content is not
 *        freed) and must be released afterwards, even on failure.
 *        Usage is copied from the response; usage.model_requests is left
 *        at 0 for the caller to count.
 * @return 0 when the response completed, or ended "incomplete" (status
 *         says which: e.g. max_output_tokens); APTIX_EHTTP for an HTTP error
 *         or a failed response (error_code/error_message say which;
 *         previous_not_found is set for an unknown or expired
 *         previous_response_id); APTIX_ENET for connection failures and
 *         timeouts; APTIX_ECANCELLED when cancelled; APTIX_EINVALID for
 *         a malformed response (bad JSON, broken SSE, a stream that ended
 *         without response.completed); APTIX_EFULL for a response body
 *         or stream over max_response bytes (openai.max-response,
 *         64 MiB by default), an error body over 64 MiB or an event
 *         over 16 MiB. The message (one line,
 *         "openai: ...", with "(after N attempts)" when retried) never
 *         holds the key. 429 insufficient_quota is not retried.
 */
APTIX_EXTERN(int) aptix_openai_respond(aptix_openai_result *out,
				       const aptix_openai_options *opts,
				       const char *body, size_t len);

/**
 * @brief POST {base}/embeddings for n texts with the given model
 *        ({"model","input":[...],"encoding_format":"float"}), with the
 *        retries of aptix_openai_respond() (on_delta is not used).
 * @param[out] vectors n * (*dim) floats in the order of texts (by the
 *        index of each embedding), malloc'd; the caller frees. NULL
 *        and 0 on failure.
 * @return 0; APTIX_EINVALID for n == 0, a NULL text or a malformed
 *         answer (wrong count, repeated index, dimensions that differ);
 *         else as aptix_openai_respond().
 */
APTIX_EXTERN(int) aptix_openai_embed(float **vectors, size_t *dim,
				     const aptix_openai_options *opts,
				     const char *model,
				     const char *const *texts, size_t n);

/** The HTTP error classes that are worth retrying (429, 5xx). */
APTIX_EXTERN(int) aptix_http_status_is_retryable(long status);

#endif
