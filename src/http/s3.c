/*
 * src/http/s3.c - create-only PUT and GET of whole objects on S3 (see
 * s3.h), signed by libcurl (CURLOPT_AWS_SIGV4), which adds x-amz-date
 * and Authorization; the payload's SHA-256 is the caller's, sent as
 * x-amz-content-sha256 (which S3 requires and signs).
 */
#include "util/common.h"
#include <ctype.h>
#include <strings.h>
#include "http/http.h"
#include "http/s3.h"
#include "util/env.h"

/* The SHA-256 of no bytes: the x-amz-content-sha256 of a GET. */
#define EMPTY_SHA256 \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* The credentials, and the names the environment and the file give them. */
enum { KEY_ID, SECRET, TOKEN, NCREDS };
static const struct {
	enum aptix_env_var env;
	const char *ini;
} creds[NCREDS] = {
	[KEY_ID] = { APTIX_ENV_AWS_ACCESS_KEY_ID, "aws_access_key_id" },
	[SECRET] = { APTIX_ENV_AWS_SECRET_ACCESS_KEY,
		     "aws_secret_access_key" },
	[TOKEN] = { APTIX_ENV_AWS_SESSION_TOKEN, "aws_session_token" },
};

struct aptix_s3 {
	char *base;		/* <url>/<bucket>/ */
	char *sigv4;		/* aws:amz:<region>:s3 */
	char *cred[NCREDS];	/* wiped when freed; TOKEN NULL: none */
};

static void wipe_free(char *s)
{
	if (s) {
		volatile char *p = s;

		while (*p)
			*p++ = 0;
	}
	free(s);
}

void aptix__s3_free(aptix_s3 *s)
{
	size_t i;

	if (!s)
		return;
	free(s->base);
	free(s->sigv4);
	for (i = 0; i < NCREDS; i++)
		wipe_free(s->cred[i]);
	free(s);
}

/* "name = value" of a line of an INI file, value into out. */
static int ini_value(aptix_buf *out, const char *line, size_t len,
		     const char *name)
{
	size_t n = strlen(name);

	while (len && isspace((unsigned char)*line))
		line++, len--;
	if (len <= n || strncasecmp(line, name, n))
		return 0;
	line += n, len -= n;
	while (len && (*line == ' ' || *line == '\t'))
		line++, len--;
	if (!len || *line != '=')
		return 0;
	line++, len--;
	while (len && isspace((unsigned char)*line))
		line++, len--;
	while (len && isspace((unsigned char)line[len - 1]))
		len--;
	return aptix_buf_set(out, line, len) < 0 ? APTIX_ERROR : 1;
}

/* The keys of profile in the shared credentials file, when it has them. */
static int read_credentials_file(aptix_s3 *s)
{
	const char *file = aptix_env__get(APTIX_ENV_AWS_CREDENTIALS_FILE);
	const char *profile = aptix_env__get(APTIX_ENV_AWS_PROFILE);
	const char *home = aptix_env__get(APTIX_ENV_HOME);
	aptix_buf path = APTIX_BUF_INIT, text = APTIX_BUF_INIT;
	aptix_buf v = APTIX_BUF_INIT, head = APTIX_BUF_INIT;
	char **slot;
	const char *p, *nl;
	size_t i;
	int in = 0, r = 0;

	if (!profile)
		profile = "default";
	if (file)
		aptix_buf_puts(&path, file);
	else if (home)
		aptix_buf_printf(&path, "%s/.aws/credentials", home);
	if (!path.len || aptix_buf_read_file(&text, path.ptr) < 0) {
		aptix_error_clear();
		goto done;
	}
	aptix_buf_printf(&head, "[%s]", profile);
	for (p = text.ptr; *p && r >= 0; p = *nl ? nl + 1 : nl) {
		size_t len;

		nl = p + strcspn(p, "\n");
		len = (size_t)(nl - p);
		while (len && isspace((unsigned char)p[len - 1]))
			len--;
		if (len && *p == '[') {
			in = len == head.len && !memcmp(p, head.ptr, len);
			continue;
		}
		if (!in)
			continue;
		for (i = 0; i < NCREDS; i++)
			if ((r = ini_value(&v, p, len, creds[i].ini)) != 0)
				break;
		slot = r == 1 ? &s->cred[i] : NULL;
		if (slot && v.len && !*slot && !(*slot = aptix__strdup(v.ptr)))
			r = APTIX_ERROR;
	}
done:
	/* the file's text held the secret too */
	if (text.len)
		memset(text.ptr, 0, text.len);
	if (v.len)
		memset(v.ptr, 0, v.len);
	aptix_buf_release(&text);
	aptix_buf_release(&v);
	aptix_buf_release(&path);
	aptix_buf_release(&head);
	return r < 0 ? r : 0;
}

static int dup_env(char **out, enum aptix_env_var var)
{
	const char *v = aptix_env__get(var);

	if (!v)
		return 0;
	return (*out = aptix__strdup(v)) ? 0 : APTIX_ERROR;
}

static int read_credentials(aptix_s3 *s)
{
	size_t i;
	int r = 0;

	if (aptix_env__get(creds[KEY_ID].env) ||
	    aptix_env__get(creds[SECRET].env)) {
		for (i = 0; i < NCREDS && r == 0; i++)
			r = dup_env(&s->cred[i], creds[i].env);
	} else {
		r = read_credentials_file(s);
	}
	if (r < 0)
		return r;
	if (s->cred[KEY_ID] && s->cred[SECRET])
		return 0;
	aptix_error_set(APTIX_ERROR_HTTP, "no S3 credentials: set "
			"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give "
			"the profile %s in ~/.aws/credentials (or "
			"AWS_SHARED_CREDENTIALS_FILE)",
			aptix_env__get(APTIX_ENV_AWS_PROFILE) ?
			aptix_env__get(APTIX_ENV_AWS_PROFILE) : "default");
	return APTIX_EINVALID;
}

/* A bucket name as S3 allows one: 3-63 of [a-z0-9.-]. */
static int bucket_ok(const char *b)
{
	size_t n = strlen(b);

	return n >= 3 && n <= 63 && strspn(b, "abcdefghijklmnopqrstuvwxyz"
					   "0123456789.-") == n;
}

int aptix__s3_check(const char *url, const char *bucket, const char *region)
{
	if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
	    || strchr(url, '@') || strchr(url, '?') || strchr(url, '#')) {
		aptix_error_set(APTIX_ERROR_HTTP, "s3.url must be an http:// "
				"or https:// URL with no user, query or "
				"fragment");
		return APTIX_EINVALID;
	}
	if (!bucket || !bucket_ok(bucket)) {
		aptix_error_set(APTIX_ERROR_HTTP, "s3.bucket must be a bucket "
				"name (3 to 63 of a-z, 0-9, '.' and '-')");
		return APTIX_EINVALID;
	}
	if (region && strspn(region, "abcdefghijklmnopqrstuvwxyz0123456789-")
	    != strlen(region)) {
		aptix_error_set(APTIX_ERROR_HTTP, "'%s' is not an S3 region",
				region);
		return APTIX_EINVALID;
	}
	return 0;
}

int aptix__s3_new(aptix_s3 **out, const char *url, const char *bucket,
		  const char *region)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_s3 *s;
	size_t n;
	int r;

	*out = NULL;
	if ((r = aptix__s3_check(url, bucket, region)) < 0)
		return r;
	if (!region || !*region)
		region = aptix_env__get(APTIX_ENV_AWS_REGION);
	if (!region)
		region = aptix_env__get(APTIX_ENV_AWS_DEFAULT_REGION);
	if (!region)
		region = "us-east-1";
	if ((r = aptix__s3_check(url, bucket, region)) < 0)
		return r;
	if (!(s = aptix__calloc(1, sizeof(*s))))
		return APTIX_ERROR;
	n = strlen(url);
	while (n && url[n - 1] == '/')
		n--;
	aptix_buf_printf(&b, "%.*s/%s/", (int)n, url, bucket);
	s->base = aptix_buf_detach(&b);
	aptix_buf_printf(&b, "aws:amz:%s:s3", region);
	s->sigv4 = aptix_buf_detach(&b);
	if (!s->base || !s->sigv4)
		r = APTIX_ERROR;
	else
		r = read_credentials(s);
	if (r < 0) {
		aptix__s3_free(s);
		return r;
	}
	*out = s;
	return 0;
}

/* S3's <Code> of an error body, when it is one plain word. */
static void error_code(char *out, size_t size, const aptix_buf *body)
{
	const char *p = strstr(body->ptr, "<Code>"), *e;

	*out = '\0';
	if (!p)
		return;
	p += 6;
	e = strstr(p, "</Code>");
	if (!e || e == p || (size_t)(e - p) >= size ||
	    strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		   "0123456789.") != (size_t)(e - p))
		return;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
}

static int http_error(const char *method, const char *url,
		      const aptix_http_response *resp)
{
	char code[64];

	error_code(code, sizeof(code), &resp->body);
	aptix_error_set(APTIX_ERROR_HTTP, "S3 %s %s: HTTP %ld%s%s%s", method,
			url, resp->status, *code ? " (" : "", code,
			*code ? ")" : "");
	return APTIX_EHTTP;
}

/* One signed request; the response in resp. */
static int request(aptix_http_response *resp, aptix_s3 *s,
		   const char *method, const char *url, const char *sha,
		   const void *body, size_t len, int create_only, size_t max)
{
	aptix_buf hsha = APTIX_BUF_INIT, htok = APTIX_BUF_INIT;
	const char *headers[6];
	aptix_http_request req;
	size_t nh = 0;
	int r;

	memset(&req, 0, sizeof(req));
	aptix_buf_printf(&hsha, "x-amz-content-sha256: %s", sha);
	headers[nh++] = hsha.ptr;
	if (s->cred[TOKEN]) {
		aptix_buf_printf(&htok, "x-amz-security-token: %s",
				 s->cred[TOKEN]);
		headers[nh++] = htok.ptr;
	}
	if (create_only) {
		headers[nh++] = "If-None-Match: *";
		headers[nh++] = "Content-Type: application/octet-stream";
	}
	headers[nh] = NULL;
	req.method = method;
	req.url = url;
	req.headers = headers;
	req.body = body;
	req.body_len = len;
	req.max_body = max;
	req.idle_timeout_ms = 60000;
	req.aws_sigv4 = s->sigv4;
	req.username = s->cred[KEY_ID];
	req.password = s->cred[SECRET];
	if (aptix_buf_oom(&hsha) || aptix_buf_oom(&htok))
		r = APTIX_ERROR;
	else
		r = aptix_http_perform(resp, &req);
	if (htok.len)
		memset(htok.ptr, 0, htok.len);
	aptix_buf_release(&htok);
	aptix_buf_release(&hsha);
	return r;
}

/*
 * One request about key: 0 and the response in resp (its status not
 * checked), or the transport's failure; *url is the object's URL
 * (to free).
 */
static int call(aptix_http_response *resp, char **url, aptix_s3 *s,
		const char *method, const char *key, const char *sha,
		const void *body, size_t len, size_t max)
{
	aptix_buf u = APTIX_BUF_INIT;

	aptix_http_response_init(resp);
	aptix_buf_printf(&u, "%s%s", s->base, key);
	if (!(*url = aptix_buf_detach(&u)))
		return APTIX_ERROR;
	return request(resp, s, method, *url, sha, body, len, body != NULL,
		       max);
}

int aptix__s3_put(aptix_s3 *s, const char *key, const void *data,
		  size_t len, const char *sha256hex)
{
	aptix_http_response resp;
	char *url = NULL;
	int r = call(&resp, &url, s, "PUT", key, sha256hex, data, len, 65536);

	if (r == 0 && resp.status == 412)
		r = 1;
	else if (r == 0 && (resp.status < 200 || resp.status > 299))
		r = http_error("PUT", url, &resp);
	aptix_http_response_release(&resp);
	free(url);
	return r;
}

int aptix__s3_get(aptix_buf *out, aptix_s3 *s, const char *key, size_t max)
{
	aptix_http_response resp;
	char *url = NULL;
	int r = call(&resp, &url, s, "GET", key, EMPTY_SHA256, NULL, 0, max);

	if (r == 0 && resp.status == 404) {
		aptix_error_set(APTIX_ERROR_HTTP, "S3 GET %s: not found", url);
		r = APTIX_ENOTFOUND;
	} else if (r == 0 && (resp.status < 200 || resp.status > 299)) {
		r = http_error("GET", url, &resp);
	} else if (r == 0) {
		aptix_buf_release(out);
		*out = resp.body;
		aptix_buf_init(&resp.body, 0);
	}
	aptix_http_response_release(&resp);
	free(url);
	return r;
}
