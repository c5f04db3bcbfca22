/*
 * src/http/http.h - a small HTTP client, internal to the library.
 *
 * libcurl is not linked: it is loaded with dlopen("libcurl.so.4") on the
 * first request (or aptix_http_load()), so that local commands never pay
 * for loading it and its TLS stack. The environment variable
 * APTIX_LIBCURL, when set, names another file to load instead.
 *
 * Calls from several threads are fine: each thread keeps its own multi
 * handle, whose connection cache lets later calls reuse connections
 * (libcurl then resends a request once by itself when a reused
 * keep-alive connection turns out closed before any answer).
 */
#ifndef APTIX_HTTP_H
#define APTIX_HTTP_H

#include <signal.h>
#include <time.h>
#include "util/common.h"

/** Consumes body bytes of a 2xx response; non-zero aborts the transfer. */
typedef int (*aptix_http_data_cb)(const char *data, size_t len,
				  void *payload);

typedef struct {
	/** "GET", "POST", "HEAD" or another; NULL: POST with a body, else GET */
	const char *method;
	const char *url;
	const char *const *headers;	/**< "Name: value", NULL-terminated */
	const char *body;		/**< request body (not copied) */
	size_t body_len;
	long connect_timeout_ms;	/**< 0: 10 s */
	long idle_timeout_ms;		/**< no byte for this long; 0: none */
	int64_t deadline;		/**< aptix_http_now_ms() clock; 0: none */
	size_t max_body;		/**< cap of resp->body; 0: none */
	/**
	 * When set, the body of a 2xx response goes here as it arrives
	 * instead of into resp->body (the body of any other status is
	 * still collected in resp->body). Its non-zero return aborts the
	 * transfer and aptix_http_perform() returns it.
	 */
	aptix_http_data_cb on_data;
	void *payload;
	volatile sig_atomic_t *cancel;	/**< non-zero: abort at once */
	/**
	 * AWS Signature Version 4 (libcurl's CURLOPT_AWS_SIGV4), e.g.
	 * "aws:amz:us-east-1:s3", signed with username (the access key id)
	 * and password (the secret key); NULL: not signed. The caller sets
	 * x-amz-content-sha256 itself. Neither key reaches a message.
	 */
	const char *aws_sigv4;
	const char *username;
	const char *password;
} aptix_http_request;

#define APTIX_HTTP_ERROR_SIZE 256	/**< CURL_ERROR_SIZE */

typedef struct {
	long status;			/**< HTTP status; 0: none received */
	aptix_buf body;
	char *content_type;		/**< NULL: none given */
	long retry_after;		/**< Retry-After in seconds; -1: none */
	/**
	 * The wait asked for in milliseconds: retry-after-ms (as OpenAI
	 * sends) if given, else Retry-After; -1: none.
	 */
	long retry_after_ms;
	size_t received;		/**< body bytes received */
	int curl_code;			/**< CURLcode of the transfer */
	int timed_out;			/**< a timeout (connect, idle, deadline) */
	/**
	 * For APTIX_ENET: the failure may pass (refused, reset, timeout,
	 * DNS); 0 when a retry cannot help (bad URL, TLS verification...).
	 */
	int transient;
	char error[APTIX_HTTP_ERROR_SIZE];	/**< libcurl's error text */
} aptix_http_response;

void aptix_http_response_init(aptix_http_response *resp);
void aptix_http_response_release(aptix_http_response *resp);

/**
 * @brief Load libcurl and initialise it (once per process).
 * @return 0, or APTIX_ERROR with "cannot load libcurl: ..." recorded.
 */
int aptix_http_load(void);

/**
 * @brief Perform one request. resp must have been initialised; it is
 *        reset first.
 * @return 0 when a complete response arrived, whatever its status;
 *         APTIX_ENET for a transport failure or a timeout (resp->status
 *         says whether the headers had come); APTIX_ECANCELLED when
 *         *cancel was set; APTIX_EFULL when the body passed max_body;
 *         the non-zero return of on_data; APTIX_ERROR when libcurl
 *         cannot be loaded or memory ran out. Each failure records a
 *         one-line message (class APTIX_ERROR_HTTP) naming the method
 *         and the URL, never a header value.
 */
int aptix_http_perform(aptix_http_response *resp,
		       const aptix_http_request *req);

/** Milliseconds of a monotonic clock (for deadlines). */
int64_t aptix_http_now_ms(void);

/**
 * @brief Parse a Retry-After value: delta-seconds (a fraction such as
 *        "1.5" is accepted) or an HTTP-date (IMF-fixdate, RFC 850 or
 *        asctime form), relative to now.
 * @return the wait in milliseconds (0 for a date in the past), or -1
 *         when the value is not understood.
 */
long aptix_http_parse_retry_after(const char *value, time_t now);

#endif
