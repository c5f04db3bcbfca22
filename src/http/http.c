/*
 * src/http/http.c - a small HTTP client over libcurl, loaded at first use
 * (see http.h).
 *
 * <curl/curl.h> is included for its types and constants only: every
 * function is called through the table below, filled by dlsym(), so the
 * library does not link against libcurl.
 */
#include "util/dl.h"
#include "util/common.h"
#include <ctype.h>
#include <pthread.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>
#include "http/http.h"
#include "util/env.h"

_Static_assert(APTIX_HTTP_ERROR_SIZE >= CURL_ERROR_SIZE,
	       "the error buffer must hold CURL_ERROR_SIZE bytes");

#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define POLL_SLICE_MS 50

static struct {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *h);
	CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
	CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *l,
					   const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_cleanup)(CURLM *m);
	CURLMcode (*multi_add_handle)(CURLM *m, CURL *h);
	CURLMcode (*multi_remove_handle)(CURLM *m, CURL *h);
	CURLMcode (*multi_perform)(CURLM *m, int *running);
	CURLMcode (*multi_wait)(CURLM *m, struct curl_waitfd *fds,
				unsigned nfds, int timeout_ms, int *numfds);
	CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd *fds,
				unsigned nfds, int timeout_ms, int *numfds);
	CURLMsg *(*multi_info_read)(CURLM *m, int *left);
	const char *(*multi_strerror)(CURLMcode code);
} C;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded;

/*
 * Each thread keeps one multi handle, and with it libcurl's cache of
 * open connections, so that the calls of a process reuse them. A child
 * after fork() leaves its parent's alone (it must not touch the shared
 * sockets) and makes its own.
 */
struct multi_cache {
	CURLM *m;
	pid_t pid;
};
static pthread_key_t multi_key;
static int multi_key_ok;
static _Thread_local int multi_busy;	/* a callback calling us again */

static void drop_multi(void *p)
{
	struct multi_cache *mc = p;

	if (mc->pid == getpid())
		C.multi_cleanup(mc->m);
	free(mc);
}

static int resolve(void *lib, const char *name, void *slot, size_t size,
		   int optional)
{
	void *sym;

	dlerror();
	sym = dlsym(lib, name);
	if (!sym) {
		const char *why = dlerror();

		if (optional)
			return 0;
		aptix_error_set(APTIX_ERROR_HTTP, "cannot load libcurl: %s",
				why ? why : name);
		return APTIX_ERROR;
	}
	/* POSIX guarantees a function pointer fits in a void *. */
	memcpy(slot, &sym, size);
	return 0;
}

#define RESOLVE(field, name, optional) \
	resolve(lib, name, &C.field, sizeof(C.field), optional)

static int load_locked(void)
{
	const char *path = aptix_env__get(APTIX_ENV_LIBCURL);
	void *lib;
	CURLcode rc;

	if (!path)
		path = "libcurl.so.4";
	lib = dlopen(path, APTIX_DL_FLAGS);
	if (!lib) {
		const char *why = dlerror();

		aptix_error_set(APTIX_ERROR_HTTP, "cannot load libcurl: %s",
				why ? why : path);
		return APTIX_ERROR;
	}
	if (RESOLVE(global_init, "curl_global_init", 0) ||
	    RESOLVE(easy_init, "curl_easy_init", 0) ||
	    RESOLVE(easy_cleanup, "curl_easy_cleanup", 0) ||
	    RESOLVE(easy_setopt, "curl_easy_setopt", 0) ||
	    RESOLVE(easy_getinfo, "curl_easy_getinfo", 0) ||
	    RESOLVE(easy_strerror, "curl_easy_strerror", 0) ||
	    RESOLVE(slist_append, "curl_slist_append", 0) ||
	    RESOLVE(slist_free_all, "curl_slist_free_all", 0) ||
	    RESOLVE(multi_init, "curl_multi_init", 0) ||
	    RESOLVE(multi_cleanup, "curl_multi_cleanup", 0) ||
	    RESOLVE(multi_add_handle, "curl_multi_add_handle", 0) ||
	    RESOLVE(multi_remove_handle, "curl_multi_remove_handle", 0) ||
	    RESOLVE(multi_perform, "curl_multi_perform", 0) ||
	    RESOLVE(multi_wait, "curl_multi_wait", 0) ||
	    RESOLVE(multi_poll, "curl_multi_poll", 1) ||
	    RESOLVE(multi_info_read, "curl_multi_info_read", 0) ||
	    RESOLVE(multi_strerror, "curl_multi_strerror", 0)) {
		dlclose(lib);
		memset(&C, 0, sizeof(C));
		return APTIX_ERROR;
	}
	rc = C.global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK) {
		aptix_error_set(APTIX_ERROR_HTTP,
				"cannot load libcurl: curl_global_init: %s",
				C.easy_strerror(rc));
		dlclose(lib);
		memset(&C, 0, sizeof(C));
		return APTIX_ERROR;
	}
	multi_key_ok = pthread_key_create(&multi_key, drop_multi) == 0;
	/* The library stays loaded for the life of the process. */
	loaded = 1;
	return 0;
}

int aptix_http_load(void)
{
	int rc = 0;

	pthread_mutex_lock(&load_lock);
	if (!loaded)
		rc = load_locked();
	pthread_mutex_unlock(&load_lock);
	return rc;
}

int64_t aptix_http_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void aptix_http_response_init(aptix_http_response *resp)
{
	memset(resp, 0, sizeof(*resp));
	aptix_buf_init(&resp->body, 0);
	resp->retry_after = -1;
	resp->retry_after_ms = -1;
}

void aptix_http_response_release(aptix_http_response *resp)
{
	aptix_buf_release(&resp->body);
	free(resp->content_type);
	aptix_http_response_init(resp);
}

/* --- Retry-After -------------------------------------------------------- */

static int month_of(const char *s, size_t n)
{
	static const char months[] = "janfebmaraprmayjunjulaugsepoctnovdec";
	int i;

	if (n < 3)
		return -1;
	for (i = 0; i < 12; i++)
		if (!strncasecmp(s, months + 3 * i, 3))
			return i;
	return -1;
}

/*
 * The three forms of HTTP-date (RFC 9110, 5.6.7):
 *   Sun, 06 Nov 1994 08:49:37 GMT	IMF-fixdate
 *   Sunday, 06-Nov-94 08:49:37 GMT	RFC 850
 *   Sun Nov  6 08:49:37 1994		asctime
 * are told apart by their tokens: a month name, a time with colons, and
 * two numbers of which the first is the day.
 */
static int parse_http_date(const char *s, time_t *out)
{
	struct tm tm;
	int day = -1, year = -1, mon = -1, hh = -1, mm = -1, ss = -1;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	while (*s) {
		const char *tok;
		size_t n;

		while (*s == ' ' || *s == ',' || *s == '-' || *s == '\t')
			s++;
		if (!*s)
			break;
		tok = s;
		while (*s && *s != ' ' && *s != ',' && *s != '-' && *s != '\t')
			s++;
		n = (size_t)(s - tok);
		if (isdigit((unsigned char)tok[0]) && memchr(tok, ':', n)) {
			if (sscanf(tok, "%2d:%2d:%2d", &hh, &mm, &ss) != 3)
				return -1;
		} else if (isdigit((unsigned char)tok[0])) {
			long v = 0;
			size_t i;

			for (i = 0; i < n; i++) {
				if (!isdigit((unsigned char)tok[i]) || i > 4)
					return -1;
				v = v * 10 + (tok[i] - '0');
			}
			if (day < 0 && n <= 2)
				day = (int)v;
			else if (year < 0)
				year = (int)v + (n <= 2 ? (v < 70 ? 2000 : 1900) : 0);
			else
				return -1;
		} else if (mon < 0 && n == 3 && month_of(tok, n) >= 0) {
			mon = month_of(tok, n);
		} else if (n == 3 && !strncasecmp(tok, "GMT", 3)) {
			continue;
		} else if (mon >= 0 || day >= 0) {
			return -1;	/* only the weekday may lead */
		}
	}
	if (day < 1 || day > 31 || mon < 0 || year < 1970 || hh < 0 ||
	    hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60)
		return -1;
	tm.tm_year = year - 1900;
	tm.tm_mon = mon;
	tm.tm_mday = day;
	tm.tm_hour = hh;
	tm.tm_min = mm;
	tm.tm_sec = ss;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	*out = t;
	return 0;
}

long aptix_http_parse_retry_after(const char *value, time_t now)
{
	const char *s = value;
	double secs = 0, frac = 0.1;
	int digits = 0;
	time_t when;

	if (!s)
		return -1;
	while (*s == ' ' || *s == '\t')
		s++;
	if (isdigit((unsigned char)*s)) {
		const char *p = s;

		for (; isdigit((unsigned char)*p); p++, digits++)
			if (secs < 1e9)
				secs = secs * 10 + (*p - '0');
		if (*p == '.')
			for (p++; isdigit((unsigned char)*p); p++, frac /= 10)
				secs += frac * (*p - '0');
		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		if (!*p)
			return secs > 1e6 ? 1000000000L :
				(long)(secs * 1000 + 0.5);
	}
	if (parse_http_date(s, &when) < 0)
		return -1;
	if (when <= now)
		return 0;
	if (when - now > 1000000)
		return 1000000000L;
	return (long)(when - now) * 1000;
}

/* --- The transfer -------------------------------------------------------- */

/* This thread's multi handle; *cached says whether to keep it. */
static CURLM *get_multi(int *cached)
{
	struct multi_cache *mc = multi_key_ok ?
		pthread_getspecific(multi_key) : NULL;
	CURLM *m;

	*cached = 0;
	if (multi_busy)
		return C.multi_init();
	if (mc && mc->pid == getpid()) {
		*cached = 1;
		return mc->m;
	}
	if (mc) {
		/* forked: the parent's handle is abandoned, not closed */
		free(mc);
		pthread_setspecific(multi_key, NULL);
	}
	m = C.multi_init();
	if (!m || !multi_key_ok)
		return m;
	mc = malloc(sizeof(*mc));
	if (mc) {
		mc->m = m;
		mc->pid = getpid();
		if (pthread_setspecific(multi_key, mc) == 0)
			*cached = 1;
		else
			free(mc);
	}
	return m;
}

/* Transport failures that a retry cannot cure. */
static int permanent_failure(CURLcode code)
{
	switch (code) {
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_NOT_BUILT_IN:
	case CURLE_FUNCTION_NOT_FOUND:
	case CURLE_BAD_FUNCTION_ARGUMENT:
	case CURLE_UNKNOWN_OPTION:
	case CURLE_TOO_MANY_REDIRECTS:
	case CURLE_LOGIN_DENIED:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
		return 1;
	default:
		return 0;
	}
}

struct xfer {
	const aptix_http_request *req;
	aptix_http_response *resp;
	CURL *h;
	int64_t last_activity;
	curl_off_t last_dl, last_ul;
	int abort_code;		/* why we stopped it: 0 or an APTIX_E* */
	int data_rc;		/* on_data's non-zero return */
	int idle, deadline;	/* which of our timers fired */
	int full, oom;		/* max_body passed; out of memory */
	int have_status;
	long retry_after_ms_hdr;	/* from retry-after-ms */
};

/* Non-zero when the transfer must stop now. */
static int must_stop(struct xfer *x)
{
	const aptix_http_request *req = x->req;
	int64_t now;

	if (x->abort_code || x->data_rc)
		return 1;
	if (aptix__cancelled(req->cancel)) {
		x->abort_code = APTIX_ECANCELLED;
		return 1;
	}
	now = aptix_http_now_ms();
	if (req->deadline && now >= req->deadline) {
		x->deadline = 1;
		x->abort_code = APTIX_ENET;
		return 1;
	}
	if (req->idle_timeout_ms > 0 &&
	    now - x->last_activity >= req->idle_timeout_ms) {
		x->idle = 1;
		x->abort_code = APTIX_ENET;
		return 1;
	}
	return 0;
}

static long status_of(struct xfer *x)
{
	long code = 0;

	if (!x->have_status &&
	    C.easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK &&
	    code) {
		x->resp->status = code;
		x->have_status = 1;
	}
	return x->resp->status;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	const aptix_http_request *req = x->req;
	size_t n = size * nmemb;
	long status;

	x->last_activity = aptix_http_now_ms();
	x->resp->received += n;
	if (must_stop(x))
		return 0;
	status = status_of(x);
	if (req->on_data && status >= 200 && status < 300) {
		int rc = req->on_data(ptr, n, req->payload);

		if (rc) {
			x->data_rc = rc;
			return 0;
		}
		return n;
	}
	if (req->max_body && x->resp->body.len + n > req->max_body) {
		x->full = 1;
		x->abort_code = APTIX_EFULL;
		return 0;
	}
	if (aptix_buf_put(&x->resp->body, ptr, n) < 0) {
		x->oom = 1;
		x->abort_code = APTIX_ERROR;
		return 0;
	}
	return n;
}

static int header_is(const char *line, size_t len, const char *name,
		     const char **value, size_t *vlen)
{
	size_t n = strlen(name);
	const char *v, *end = line + len;

	if (len <= n || line[n] != ':' || strncasecmp(line, name, n))
		return 0;
	v = line + n + 1;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' ||
			   end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*value = v;
	*vlen = (size_t)(end - v);
	return 1;
}

static size_t on_header(char *line, size_t size, size_t nitems, void *ud)
{
	struct xfer *x = ud;
	aptix_http_response *resp = x->resp;
	size_t len = size * nitems;
	const char *v;
	size_t vlen;
	char tmp[128];

	x->last_activity = aptix_http_now_ms();
	if (len >= 5 && !memcmp(line, "HTTP/", 5)) {
		/* A new response (after a 100 Continue, say) starts. */
		free(resp->content_type);
		resp->content_type = NULL;
		resp->retry_after = resp->retry_after_ms = -1;
		x->retry_after_ms_hdr = -1;
		x->have_status = 0;
		return len;
	}
	if (header_is(line, len, "content-type", &v, &vlen)) {
		free(resp->content_type);
		resp->content_type = aptix__strndup(v, vlen);
		if (!resp->content_type) {
			x->oom = 1;
			x->abort_code = APTIX_ERROR;
			return 0;
		}
	} else if (header_is(line, len, "retry-after", &v, &vlen) &&
		   vlen < sizeof(tmp)) {
		long ms;

		memcpy(tmp, v, vlen);
		tmp[vlen] = '\0';
		ms = aptix_http_parse_retry_after(tmp, time(NULL));
		if (ms >= 0) {
			resp->retry_after = (ms + 999) / 1000;
			if (x->retry_after_ms_hdr < 0)
				resp->retry_after_ms = ms;
		}
	} else if (header_is(line, len, "retry-after-ms", &v, &vlen) &&
		   vlen < sizeof(tmp)) {
		char *end;
		double ms;

		memcpy(tmp, v, vlen);
		tmp[vlen] = '\0';
		ms = strtod(tmp, &end);
		if (end != tmp && !*end && ms >= 0 && ms < 1e9) {
			x->retry_after_ms_hdr = (long)ms;
			resp->retry_after_ms = (long)ms;
		}
	}
	return len;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct xfer *x = ud;

	(void)dltotal;
	(void)ultotal;
	if (dlnow != x->last_dl || ulnow != x->last_ul) {
		x->last_dl = dlnow;
		x->last_ul = ulnow;
		x->last_activity = aptix_http_now_ms();
	}
	return must_stop(x);
}

/* The URL without any user:password@ part, for messages. */
static void safe_url(char *out, size_t size, const char *url)
{
	const char *scheme = strstr(url, "://");
	const char *host = scheme ? scheme + 3 : url;
	const char *at, *slash;

	slash = host + strcspn(host, "/?#");
	at = memchr(host, '@', (size_t)(slash - host));
	if (at)
		snprintf(out, size, "%.*s<redacted>@%s",
			 (int)(host - url), url, at + 1);
	else
		snprintf(out, size, "%s", url);
}

static void set_error(const aptix_http_request *req, const char *method,
		      const char *what, const char *suffix)
{
	char url[512];
	char first[2] = { 0, 0 };
	size_t n = strlen(what);

	safe_url(url, sizeof(url), req->url);
	while (n && isspace((unsigned char)what[n - 1]))
		n--;
	/* libcurl's texts start with a capital; messages here do not. */
	if (n) {
		first[0] = (char)tolower((unsigned char)what[0]);
		what++;
		n--;
	}
	aptix_error_set(APTIX_ERROR_HTTP, "%s %s: %s%.*s%s", method, url,
			first, (int)n, what, suffix ? suffix : "");
}

static int setup(struct xfer *x, struct curl_slist **hdrs, char *errbuf,
		 const char *method)
{
	const aptix_http_request *req = x->req;
	CURL *h = x->h;
	long connect_ms = req->connect_timeout_ms > 0 ?
		req->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
	CURLcode rc = CURLE_OK;
	size_t i;

	*hdrs = NULL;
	for (i = 0; req->headers && req->headers[i]; i++) {
		struct curl_slist *n = C.slist_append(*hdrs, req->headers[i]);

		if (!n)
			return aptix_error_oom();
		*hdrs = n;
	}
	/*
	 * No "Expect: 100-continue" round trip for large bodies; but not
	 * for a signed request, whose signature would name the header
	 * that is never sent.
	 */
	if (!req->aws_sigv4) {
		struct curl_slist *n = C.slist_append(*hdrs, "Expect:");

		if (!n)
			return aptix_error_oom();
		*hdrs = n;
	}
#define SET(opt, val) do { \
		if (rc == CURLE_OK) \
			rc = C.easy_setopt(h, opt, val); \
	} while (0)
	SET(CURLOPT_URL, req->url);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_ERRORBUFFER, errbuf);
	SET(CURLOPT_WRITEFUNCTION, on_write);
	SET(CURLOPT_WRITEDATA, (void *)x);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, (void *)x);
	SET(CURLOPT_NOPROGRESS, 0L);
	SET(CURLOPT_XFERINFOFUNCTION, on_progress);
	SET(CURLOPT_XFERINFODATA, (void *)x);
	SET(CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	SET(CURLOPT_HTTPHEADER, *hdrs);
	SET(CURLOPT_USERAGENT, "aptix/" APTIX_VERSION);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	if (req->deadline) {
		int64_t left = req->deadline - aptix_http_now_ms();

		SET(CURLOPT_TIMEOUT_MS, (long)(left > 1 ? left : 1));
	}
	if (req->body || !strcmp(method, "POST")) {
		SET(CURLOPT_POSTFIELDS, req->body ? req->body : "");
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	}
	if (req->aws_sigv4) {
		SET(CURLOPT_AWS_SIGV4, req->aws_sigv4);
		SET(CURLOPT_USERNAME, req->username ? req->username : "");
		SET(CURLOPT_PASSWORD, req->password ? req->password : "");
	}
	if (!strcmp(method, "HEAD"))
		SET(CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") && strcmp(method, "POST"))
		SET(CURLOPT_CUSTOMREQUEST, method);
#undef SET
	if (rc != CURLE_OK) {
		set_error(req, method, C.easy_strerror(rc), NULL);
		return APTIX_ERROR;
	}
#if LIBCURL_VERSION_NUM >= 0x075500
	/* Only HTTP(S); an older libcurl at run time ignores the option. */
	C.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	return 0;
}

int aptix_http_perform(aptix_http_response *resp,
		       const aptix_http_request *req)
{
	char errbuf[CURL_ERROR_SIZE];
	struct curl_slist *hdrs = NULL;
	struct xfer x;
	const char *method;
	CURLM *m = NULL;
	CURLcode code = CURLE_OK;
	int rc, running = 0, added = 0, finished = 0, cached = 0;

	APTIX_ASSERT_ARG(resp);
	APTIX_ASSERT_ARG(req && req->url);
	aptix_http_response_release(resp);
	method = req->method ? req->method : req->body ? "POST" : "GET";
	if ((rc = aptix_http_load()) < 0)
		return rc;

	memset(&x, 0, sizeof(x));
	x.req = req;
	x.resp = resp;
	x.retry_after_ms_hdr = -1;
	x.last_activity = aptix_http_now_ms();
	errbuf[0] = '\0';

	if (aptix__cancelled(req->cancel)) {
		aptix_error_set(APTIX_ERROR_HTTP, "cancelled");
		return APTIX_ECANCELLED;
	}
	x.h = C.easy_init();
	m = get_multi(&cached);
	if (!x.h || !m) {
		rc = aptix_error_oom();
		goto out;
	}
	if ((rc = setup(&x, &hdrs, errbuf, method)) < 0)
		goto out;
	if (C.multi_add_handle(m, x.h) != CURLM_OK) {
		rc = aptix_error_oom();
		goto out;
	}
	added = 1;
	if (cached)
		multi_busy = 1;

	for (;;) {
		CURLMcode mc = C.multi_perform(m, &running);
		int wait_ms = POLL_SLICE_MS;

		if (mc != CURLM_OK) {
			set_error(req, method, C.multi_strerror(mc), NULL);
			rc = APTIX_ENET;
			goto out;
		}
		if (!running) {
			finished = 1;
			break;
		}
		if (must_stop(&x))
			break;
		if (req->deadline) {
			int64_t left = req->deadline - aptix_http_now_ms();

			if (left < wait_ms)
				wait_ms = left > 0 ? (int)left : 0;
		}
		mc = (C.multi_poll ? C.multi_poll : C.multi_wait)
			(m, NULL, 0, wait_ms, NULL);
		if (mc != CURLM_OK) {
			set_error(req, method, C.multi_strerror(mc), NULL);
			rc = APTIX_ENET;
			goto out;
		}
	}
	if (finished) {
		CURLMsg *msg;
		int left;

		code = CURLE_GOT_NOTHING;
		while ((msg = C.multi_info_read(m, &left)) != NULL)
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == x.h)
				code = msg->data.result;
	} else {
		code = CURLE_ABORTED_BY_CALLBACK;
	}
	status_of(&x);
	resp->curl_code = (int)code;
	if (code != CURLE_OK && !errbuf[0])
		snprintf(errbuf, sizeof(errbuf), "%s", C.easy_strerror(code));
	memcpy(resp->error, errbuf, sizeof(errbuf));

	if (code == CURLE_OK) {
		rc = 0;
	} else if (x.data_rc) {
		rc = x.data_rc;		/* on_data recorded its error */
	} else if (x.abort_code == APTIX_ECANCELLED) {
		set_error(req, method, "cancelled", NULL);
		rc = APTIX_ECANCELLED;
	} else if (x.idle) {
		char what[96];

		snprintf(what, sizeof(what),
			 "no data received for %ld ms (idle timeout)",
			 req->idle_timeout_ms);
		set_error(req, method, what, NULL);
		resp->timed_out = 1;
		resp->transient = 1;
		rc = APTIX_ENET;
	} else if (x.deadline) {
		set_error(req, method, "timed out (total timeout)", NULL);
		resp->timed_out = 1;
		rc = APTIX_ENET;
	} else if (x.full) {
		char what[96];

		snprintf(what, sizeof(what),
			 "response body larger than %zu bytes", req->max_body);
		set_error(req, method, what, NULL);
		rc = APTIX_EFULL;
	} else if (x.oom) {
		rc = aptix_error_oom();
	} else if (code == CURLE_OPERATION_TIMEDOUT) {
		int total = req->deadline &&
			aptix_http_now_ms() >= req->deadline - 10;

		resp->timed_out = 1;
		set_error(req, method, errbuf, total ?
			  " (total timeout)" : " (connect timeout)");
		resp->transient = !total;
		rc = APTIX_ENET;
	} else {
		set_error(req, method, errbuf, NULL);
		resp->transient = !permanent_failure(code);
		rc = APTIX_ENET;
	}
out:
	if (added)
		C.multi_remove_handle(m, x.h);
	if (cached)
		multi_busy = 0;
	if (m && !cached)
		C.multi_cleanup(m);
	if (x.h)
		C.easy_cleanup(x.h);
	if (hdrs)
		C.slist_free_all(hdrs);
	return rc;
}
