/*
 * src/rag/rag-qdrant.c - the Qdrant retrieval backend: chunks embedded with
 * an OpenAI-compatible embeddings endpoint and stored as points of a
 * collection over Qdrant's REST API.
 *
 * The server's URL and key come in the options (the CLI takes them from
 * QDRANT_URL and QDRANT_API_KEY); the key goes in the api-key header
 * and nowhere else (never stored, never in a message). The backend
 * reaches the server only when it must (begin, query): counting and
 * resetting need neither.
 * The store remembers what was uploaded (manifests "q" collection NUL
 * path, see rag-int.h), so that deciding what to upload needs no
 * network; the manifests are dropped when the collection turns out to
 * be missing or the URL names another server. No write transaction
 * is held across a call: a batch is embedded, upserted and deleted,
 * then its manifests are written.
 *
 * Point payload: repo, path, start_line, end_line, language,
 * content_hash, text, and path_prefixes (every directory prefix of the
 * path and the path itself), because Qdrant has no prefix match: a path
 * filter matches any of them.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "rag/rag-int.h"
#include "store/odb-store.h"
#include "http/http.h"
#include "secret/secrets.h"
#include "aptix/oid.h"
#include <jansson.h>

#define QD_CONNECT_MS 5000L
#define QD_IDLE_MS 60000L
#define QD_REQUEST_MS 120000L
#define QD_MAX_BODY ((size_t)64 << 20)
#define QD_DELETE_BATCH 1000
#define EMBED_MAX_BYTES 12000	/* of a chunk's text, for the embedding */
#define COLL_VERSION 1

struct rag_qdrant {
	struct aptix_rag_backend parent;
	aptix_openai_options http;	/* for embeddings */
	const char *url;		/* as given (borrowed) */
	char *base;			/* the URL, no trailing '/' */
	char *auth;			/* "api-key: ..." or NULL */
	const char *key;		/* the key, for redaction */
	const char *headers[4];
	const char *collection;
	char *coll_path;		/* "/collections/<escaped>" */
	int64_t deadline;		/* 0: QD_REQUEST_MS per request */
	int attempts;
	int exists;			/* the collection exists */
	long size;			/* ... with vectors of this size */
};

static int qd_fail(int code, const char *fmt, ...) APTIX_FORMAT(2, 3);

static int qd_fail(int code, const char *fmt, ...)
{
	aptix_buf b = APTIX_BUF_INIT;
	va_list ap;

	aptix_buf_puts(&b, "qdrant: ");
	va_start(ap, fmt);
	aptix_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	aptix_error_set(APTIX_ERROR_QDRANT, "%s", b.ptr);
	aptix_buf_release(&b);
	return code;
}

static void url_escape(aptix_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-._~", c)) {
			aptix_buf_putc(b, (char)c);
		} else {
			aptix_buf_putc(b, '%');
			aptix_buf_putc(b, hex[c >> 4]);
			aptix_buf_putc(b, hex[c & 15]);
		}
	}
}

static int qd_ns(aptix_buf *ns, const char *collection)
{
	aptix_buf_set(ns, "q", 1);
	aptix_buf_puts(ns, collection);
	aptix_buf_putc(ns, '\0');
	return aptix_buf_oom(ns) ? aptix_error_oom() : 0;
}

/* Check the URL and the key, and make the headers (once). */
static int qd_connect(struct rag_qdrant *q)
{
	const char *url = q->url, *key = q->key;
	char *base;
	size_t n, h = 0;

	if (q->base)
		return 0;
	if (!url || !*url) {
		aptix_error_set(APTIX_ERROR_QDRANT, "qdrant: QDRANT_URL is not "
				"set (rag.backend is qdrant): set it to the "
				"server's URL, e.g. http://localhost:6333");
		return APTIX_EINVALID;
	}
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
		aptix_error_set(APTIX_ERROR_QDRANT, "qdrant: QDRANT_URL must "
				"start with http:// or https://");
		return APTIX_EINVALID;
	}
	if (aptix__url_has_userinfo(url)) {
		aptix_error_set(APTIX_ERROR_QDRANT, "qdrant: QDRANT_URL holds "
				"user information (user:password@): refusing "
				"it; give the key in QDRANT_API_KEY");
		return APTIX_EINVALID;
	}
	if (key && *key && strpbrk(key, "\r\n")) {
		aptix_error_set(APTIX_ERROR_QDRANT, "qdrant: QDRANT_API_KEY "
				"holds a line break");
		return APTIX_EINVALID;
	}
	n = strlen(url);
	while (n && url[n - 1] == '/')
		n--;
	if (!(base = aptix__strndup(url, n)))
		return APTIX_ERROR;
	if (key && *key) {
		static const char pre[] = "api-key: ";

		if (!(q->auth = aptix__malloc(sizeof(pre) + strlen(key)))) {
			free(base);
			return APTIX_ERROR;
		}
		memcpy(q->auth, pre, sizeof(pre) - 1);
		memcpy(q->auth + sizeof(pre) - 1, key, strlen(key) + 1);
		q->headers[h++] = q->auth;
	} else {
		q->key = NULL;
	}
	q->headers[h++] = "Content-Type: application/json";
	q->headers[h++] = "Accept: application/json";
	q->headers[h] = NULL;
	q->base = base;
	return 0;
}

/* A server text fit for a one-line message, the key redacted. */
static void one_line(aptix_buf *out, const char *s, size_t len,
		     const char *key)
{
	size_t klen = key ? strlen(key) : 0, i;

	for (i = 0; i < len && out->len < 300; i++) {
		unsigned char c = (unsigned char)s[i];

		if (klen && len - i >= klen && !memcmp(s + i, key, klen)) {
			aptix_buf_puts(out, "<redacted>");
			i += klen - 1;
			continue;
		}
		aptix_buf_putc(out, c < 0x20 || c == 0x7f ? ' ' : (char)c);
	}
	while (out->len && out->ptr[out->len - 1] == ' ')
		aptix_buf_truncate(out, out->len - 1);
}

static const char *reason(long status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 409: return "Conflict";
	case 422: return "Unprocessable Entity";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "error";
	}
}

struct qd_answer {
	long status;
	int envelope;			/* the error had Qdrant's envelope */
	json_t *result;			/* on success */
	char *error;			/* the server's message */
};

static void answer_release(struct qd_answer *a)
{
	json_decref(a->result);
	free(a->error);
	memset(a, 0, sizeof(*a));
}

/*
 * One call: 0 with a->result on a 2xx answer; APTIX_EHTTP with a->status
 * and a->error for an error status; APTIX_ENET; APTIX_EINVALID for a
 * malformed answer. Retries 429, 5xx and transient network failures up
 * to q->attempts times.
 */
static int qd_call(struct qd_answer *a, struct rag_qdrant *q,
		   const char *method, const char *path, const json_t *body)
{
	aptix_http_response resp;
	aptix_http_request req;
	aptix_buf url = APTIX_BUF_INIT, msg = APTIX_BUF_INIT;
	char *text = NULL;
	int attempt, rc = 0;

	memset(a, 0, sizeof(a[0]));
	aptix_buf_printf(&url, "%s%s", q->base, path);
	if (body && !(text = json_dumps(body, JSON_COMPACT))) {
		aptix_buf_release(&url);
		return aptix_error_oom();
	}
	if (aptix_buf_oom(&url)) {
		free(text);
		return aptix_error_oom();
	}
	aptix_http_response_init(&resp);
	for (attempt = 1;; attempt++) {
		int retry = 0;

		answer_release(a);
		memset(&req, 0, sizeof(req));
		req.method = method;
		req.url = url.ptr;
		req.headers = q->headers;
		req.body = text;
		req.body_len = text ? strlen(text) : 0;
		req.connect_timeout_ms = QD_CONNECT_MS;
		req.idle_timeout_ms = QD_IDLE_MS;
		req.deadline = q->deadline ? q->deadline :
			aptix_http_now_ms() + QD_REQUEST_MS;
		req.max_body = QD_MAX_BODY;
		rc = aptix_http_perform(&resp, &req);
		a->status = resp.status;
		if (rc == 0 && resp.status >= 200 && resp.status < 300) {
			json_t *v = json_loadb(resp.body.ptr, resp.body.len, 0,
					       NULL);
			json_t *res = v ? json_object_get(v, "result") : NULL;

			if (!res) {
				json_decref(v);
				rc = qd_fail(APTIX_EINVALID, "malformed answer "
					     "to %s %s", method, path);
			} else {
				a->result = json_incref(res);
				json_decref(v);
			}
			break;
		}
		if (rc == 0) {
			json_t *v = json_loadb(resp.body.ptr, resp.body.len, 0,
					       NULL);
			json_t *st = v ? json_object_get(v, "status") : NULL;
			json_t *err = st ? json_object_get(st, "error") : NULL;

			aptix_buf_clear(&msg);
			if (json_is_string(err)) {
				a->envelope = 1;
				one_line(&msg, json_string_value(err),
					 strlen(json_string_value(err)),
					 q->key);
			} else if (resp.body.len && !v) {
				one_line(&msg, resp.body.ptr, resp.body.len,
					 q->key);
			}
			json_decref(v);
			if (!msg.len)
				aptix_buf_printf(&msg, "%s %s: HTTP %ld %s",
						 method, path, resp.status,
						 reason(resp.status));
			else
				aptix_buf_printf(&msg, " (HTTP %ld)",
						 resp.status);
			a->error = aptix__strdup(msg.ptr);
			rc = qd_fail(APTIX_EHTTP, "%s", msg.ptr);
			retry = aptix_http_status_is_retryable(resp.status);
		} else if (rc == APTIX_ENET) {
			aptix_buf_clear(&msg);
			one_line(&msg, aptix_error_last()->message,
				 strlen(aptix_error_last()->message), q->key);
			rc = qd_fail(APTIX_ENET, "%s", msg.ptr);
			retry = resp.transient;
		}
		if (!retry || attempt >= q->attempts ||
		    (q->deadline && aptix_http_now_ms() + 500 * attempt >=
		     q->deadline))
			break;
		{
			struct timespec ts;
			long ms = 250L << (attempt - 1);

			ts.tv_sec = ms / 1000;
			ts.tv_nsec = (ms % 1000) * 1000000L;
			nanosleep(&ts, NULL);
		}
	}
	if (rc < 0 && attempt > 1) {
		aptix_buf_set(&msg, aptix_error_last()->message,
			      strlen(aptix_error_last()->message));
		aptix_buf_printf(&msg, " (after %d attempts)", attempt);
		aptix_error_set(APTIX_ERROR_QDRANT, "%s", msg.ptr);
	}
	aptix_http_response_release(&resp);
	aptix_buf_release(&url);
	aptix_buf_release(&msg);
	free(text);
	return rc;
}

/* --- The collection ------------------------------------------------------- */

/* GET the collection: exists and size. */
static int qd_describe(struct rag_qdrant *q)
{
	struct qd_answer a;
	json_t *vec;
	int r;

	r = qd_call(&a, q, "GET", q->coll_path, NULL);
	if (r == APTIX_EHTTP && a.status == 404 && a.envelope) {
		q->exists = 0;
		answer_release(&a);
		aptix_error_clear();
		return 0;
	}
	if (r < 0) {
		answer_release(&a);
		return r;
	}
	vec = json_object_get(json_object_get(json_object_get(
		json_object_get(a.result, "config"), "params"), "vectors"),
		"size");
	if (!json_is_integer(vec)) {
		answer_release(&a);
		return qd_fail(APTIX_EINVALID, "collection '%s' has no "
			       "single unnamed vector (named vectors are not "
			       "supported)", q->collection);
	}
	q->exists = 1;
	q->size = (long)json_integer_value(vec);
	answer_release(&a);
	return 0;
}

static int size_mismatch(int code, const struct rag_qdrant *q, long have,
			 long want)
{
	aptix_error_set(APTIX_ERROR_QDRANT, "qdrant: collection '%s' has "
			"vectors of size %ld but the embedding model gives %ld",
			q->collection, have, want);
	return code;
}

static int qd_create(struct rag_qdrant *q, size_t dim)
{
	static const char *const fields[] = { "repo", "path_prefixes",
					      "language" };
	struct qd_answer a;
	json_t *body;
	aptix_buf path = APTIX_BUF_INIT;
	size_t i;
	int r;

	body = json_pack("{s:{s:I,s:s}}", "vectors", "size", (json_int_t)dim,
			 "distance", "Cosine");
	if (!body)
		return aptix_error_oom();
	r = qd_call(&a, q, "PUT", q->coll_path, body);
	json_decref(body);
	if (r == APTIX_EHTTP && a.status == 409) {
		/* created meanwhile by someone else */
		answer_release(&a);
		aptix_error_clear();
		if ((r = qd_describe(q)) < 0)
			return r;
		if (q->exists && q->size != (long)dim)
			return size_mismatch(APTIX_EINVALID, q, q->size,
					     (long)dim);
		return 0;
	}
	answer_release(&a);
	if (r < 0)
		return r;
	q->exists = 1;
	q->size = (long)dim;
	/* keyword indexes for the filters (best effort) */
	aptix_buf_printf(&path, "%s/index?wait=true", q->coll_path);
	for (i = 0; i < ARRAY_SIZE(fields) && !aptix_buf_oom(&path); i++) {
		body = json_pack("{s:s,s:s}", "field_name", fields[i],
				 "field_schema", "keyword");
		if (!body)
			break;
		if (qd_call(&a, q, "PUT", path.ptr, body) < 0)
			aptix_error_clear();
		answer_release(&a);
		json_decref(body);
	}
	aptix_buf_release(&path);
	return 0;
}

/* Before indexing: the collection's state; drops stale manifests. */
static int qdrant_begin(struct aptix_rag_backend *b)
{
	struct rag_qdrant *q = (struct rag_qdrant *)b;
	aptix_repo *repo = b->repo;
	struct {
		aptix_buf key;
		unsigned char rec[33];
	} c;
	aptix_buf old = APTIX_BUF_INIT;
	aptix_oid h;
	int r, stale;

	if ((r = qd_connect(q)) < 0 || (r = qd_describe(q)) < 0)
		return r;
	memset(&c, 0, sizeof(c));
	c.rec[0] = COLL_VERSION;
	if ((r = aptix_sha256(&h, q->base, strlen(q->base))) < 0)
		return r;
	memcpy(c.rec + 1, h.id, 32);
	aptix_buf_set(&c.key, "c", 1);
	aptix_buf_puts(&c.key, q->collection);
	if (aptix_buf_oom(&c.key))
		return aptix_error_oom();
	r = repo->store->get(&old, repo->store, APTIX_TABLE_RAG, c.key.ptr,
			     c.key.len);
	if (r < 0 && r != APTIX_ENOTFOUND)
		goto done;
	/* what the store says was uploaded is not there */
	stale = !q->exists || r == APTIX_ENOTFOUND ||
		old.len != sizeof(c.rec) || memcmp(old.ptr, c.rec, sizeof(c.rec));
	r = 0;
	if (stale) {
		if ((r = aptix_rag__delete_prefix(repo, b->ns.ptr,
						  b->ns.len)) < 0)
			goto done;
		r = aptix_rag__put_key(repo, c.key.ptr, c.key.len, c.rec,
				       sizeof(c.rec));
	}
done:
	aptix_buf_release(&old);
	aptix_buf_release(&c.key);
	return r;
}

/* --- Upload --------------------------------------------------------------- */

struct item {
	size_t op, chunk;
};

static json_t *path_prefixes(const char *path)
{
	json_t *a = json_array();
	const char *p;

	if (!a)
		return NULL;
	for (p = strchr(path, '/'); p; p = strchr(p + 1, '/'))
		if (json_array_append_new(a, json_stringn(path,
							  (size_t)(p - path))))
			goto oom;
	if (json_array_append_new(a, json_string(path)))
		goto oom;
	return a;
oom:
	json_decref(a);
	return NULL;
}

static json_t *point(const struct rag_settings *s,
		     const struct rag_file_op *op, const aptix_rag__chunk *c,
		     const float *vec, size_t dim)
{
	json_t *p, *v, *payload;
	size_t i;

	v = json_array();
	for (i = 0; v && i < dim; i++)
		if (json_array_append_new(v, json_real(vec[i]))) {
			json_decref(v);
			v = NULL;
		}
	if (!v)
		return NULL;
	payload = json_pack("{s:s,s:s,s:I,s:I,s:s,s:s,s:s%,s:o?}",
			    "repo", s->repo_name, "path", op->path,
			    "start_line", (json_int_t)c->start_line,
			    "end_line", (json_int_t)c->end_line,
			    "language", aptix_rag__language(op->path),
			    "content_hash", c->hash,
			    "text", op->content.ptr + c->off, c->len,
			    "path_prefixes", path_prefixes(op->path));
	if (!payload) {
		json_decref(v);
		return NULL;
	}
	p = json_pack("{s:s,s:o,s:o}", "id", c->id, "vector", v, "payload",
		      payload);
	return p;
}

/* The text embedded for a chunk: its path, then its lines (cut). */
static char *embed_text(const struct rag_file_op *op,
			const aptix_rag__chunk *c)
{
	aptix_buf b = APTIX_BUF_INIT;
	const char *t = op->content.ptr + c->off;
	size_t n = aptix_utf8_cut(t, c->len, EMBED_MAX_BYTES);

	aptix_buf_printf(&b, "%s\n", op->path);
	aptix_buf_put(&b, t, n);
	if (aptix_buf_oom(&b)) {
		aptix_buf_release(&b);
		aptix_error_oom();
		return NULL;
	}
	return aptix_buf_detach(&b);
}

static int upload(struct rag_qdrant *q, const struct rag_settings *s,
		  const aptix_openai_options *http, struct rag_batch *b,
		  const struct item *items, size_t n,
		  struct rag_counts *counts)
{
	char **texts = NULL;
	float *vecs = NULL;
	size_t dim = 0, i;
	json_t *body = NULL, *pts;
	struct qd_answer a;
	aptix_buf path = APTIX_BUF_INIT;
	int r = 0;

	memset(&a, 0, sizeof(a));
	if (!(texts = aptix__calloc(n, sizeof(*texts))))
		return APTIX_ERROR;
	for (i = 0; i < n; i++)
		if (!(texts[i] = embed_text(&b->ops[items[i].op],
					    &b->ops[items[i].op].chunks[
						    items[i].chunk]))) {
			r = APTIX_ERROR;
			goto done;
		}
	if ((r = aptix_openai_embed(&vecs, &dim, http, s->model,
				    (const char *const *)texts, n)) < 0)
		goto done;
	counts->chunks_embedded += n;
	if (!q->exists) {
		if ((r = qd_create(q, dim)) < 0)
			goto done;
	} else if (q->size != (long)dim) {
		r = size_mismatch(APTIX_EINVALID, q, q->size, (long)dim);
		goto done;
	}
	if (!(body = json_object()) || !(pts = json_array()) ||
	    json_object_set_new(body, "points", pts)) {
		r = aptix_error_oom();
		goto done;
	}
	for (i = 0; i < n; i++) {
		const struct rag_file_op *op = &b->ops[items[i].op];
		json_t *p = point(s, op, &op->chunks[items[i].chunk],
				  vecs + i * dim, dim);

		if (!p || json_array_append_new(pts, p)) {
			r = aptix_error_oom();
			goto done;
		}
	}
	aptix_buf_printf(&path, "%s/points?wait=true", q->coll_path);
	if (aptix_buf_oom(&path)) {
		r = aptix_error_oom();
		goto done;
	}
	r = qd_call(&a, q, "PUT", path.ptr, body);
	if (r == APTIX_EHTTP && a.error &&
	    strstr(a.error, "Vector dimension error")) {
		const char *e = strstr(a.error, "expected dim: ");

		r = size_mismatch(APTIX_EHTTP, q, e ? strtol(e + 14, NULL, 10) :
				  q->size, (long)dim);
	}
	if (r == 0)
		counts->chunks_added += n;
done:
	answer_release(&a);
	json_decref(body);
	for (i = 0; texts && i < n; i++)
		free(texts[i]);
	free(texts);
	free(vecs);
	aptix_buf_release(&path);
	return r;
}

static int delete_points(struct rag_qdrant *q, json_t *ids,
			 struct rag_counts *counts)
{
	struct qd_answer a;
	aptix_buf path = APTIX_BUF_INIT;
	json_t *body;
	size_t n = json_array_size(ids);
	int r;

	if (!n)
		return 0;
	if (!(body = json_pack("{s:O}", "points", ids)))
		return aptix_error_oom();
	aptix_buf_printf(&path, "%s/points/delete?wait=true", q->coll_path);
	r = aptix_buf_oom(&path) ? aptix_error_oom() :
		qd_call(&a, q, "POST", path.ptr, body);
	if (r == 0)
		counts->chunks_removed += n;
	answer_release(&a);
	json_decref(body);
	aptix_buf_release(&path);
	json_array_clear(ids);
	return r;
}

struct manifest_write {
	struct rag_batch *b;
	const struct rag_settings *s;
	aptix_buf ns, key, val;
	struct rag_counts c;
};

static int write_manifests(aptix_store_wtxn *w, void *payload)
{
	struct manifest_write *mw = payload;
	aptix_store *s = aptix_store_of_wtxn(w);
	size_t i;
	int r = 0;

	memset(&mw->c, 0, sizeof(mw->c));
	for (i = 0; i < mw->b->n && r == 0; i++) {
		struct rag_file_op *op = &mw->b->ops[i];
		struct rag_manifest m;

		if ((r = aptix_rag__manifest_key(&mw->key, &mw->ns,
						 op->path)) < 0)
			break;
		if (op->remove) {
			r = s->wdel(w, APTIX_TABLE_RAG, mw->key.ptr,
				    mw->key.len);
			if (r == APTIX_ENOTFOUND) {
				r = 0;
				continue;
			}
			mw->c.files_removed++;
			continue;
		}
		if (aptix_rag__manifest_of(&m, mw->s, op) < 0)
			return APTIX_ERROR;
		r = aptix_rag__manifest_encode(&mw->val, &m);
		free(m.c);
		if (r == 0)
			r = s->wput(w, APTIX_TABLE_RAG, mw->key.ptr,
				    mw->key.len, mw->val.ptr, mw->val.len);
		mw->c.files_changed++;
	}
	return r;
}

/*
 * Whether one of the n chunks at v (size bytes each, their 16-byte
 * uuid at offset off: a manifest's or a file's) has the uuid u.
 */
static int has_uuid(const void *v, size_t n, size_t size, size_t off,
		    const unsigned char *u)
{
	const unsigned char *p = v;
	size_t i;

	for (i = 0; i < n; i++)
		if (!memcmp(p + i * size + off, u, 16))
			return 1;
	return 0;
}

static int qdrant_apply(struct aptix_rag_backend *be, struct rag_batch *b,
			struct rag_counts *counts)
{
	struct rag_qdrant *q = (struct rag_qdrant *)be;
	aptix_repo *repo = be->repo;
	const struct rag_settings *s = be->s;
	struct manifest_write mw;
	struct item *items = NULL;
	size_t nitems = 0, aitems = 0, i, k, from;
	aptix_buf val = APTIX_BUF_INIT;
	json_t *dels = json_array();
	int r = 0;

	memset(&mw, 0, sizeof(mw));
	if (!dels)
		return aptix_error_oom();
	if ((r = qd_connect(q)) < 0 ||
	    (r = aptix_buf_set(&mw.ns, be->ns.ptr, be->ns.len)) < 0)
		goto done;
	/* what to upload and what to delete, from the manifests */
	for (i = 0; i < b->n; i++) {
		struct rag_file_op *op = &b->ops[i];
		struct rag_manifest old;
		int has_old = 0;

		if ((r = aptix_rag__manifest_key(&mw.key, &mw.ns,
						 op->path)) < 0)
			goto done;
		r = repo->store->get(&val, repo->store, APTIX_TABLE_RAG,
				     mw.key.ptr, mw.key.len);
		if (r == 0) {
			if ((r = aptix_rag__manifest_decode(&old, val.ptr,
							     val.len)) < 0)
				goto done;
			has_old = 1;
		} else if (r != APTIX_ENOTFOUND) {
			goto done;
		}
		r = 0;
		for (k = 0; has_old && k < old.n; k++) {
			char id[37];

			if (!op->remove &&
			    has_uuid(op->chunks, op->nchunks,
				     sizeof(*op->chunks),
				     offsetof(aptix_rag__chunk, uuid),
				     old.c[k].uuid))
				continue;
			aptix_uuid_format(id, old.c[k].uuid);
			if (json_array_append_new(dels, json_string(id))) {
				r = aptix_error_oom();
				break;
			}
		}
		for (k = 0; r == 0 && !op->remove && k < op->nchunks; k++) {
			if (has_old &&
			    has_uuid(old.c, old.n, sizeof(*old.c),
				     offsetof(struct rag_mchunk, uuid),
				     op->chunks[k].uuid))
				continue;
			if (nitems == aitems) {
				size_t na = aitems ? aitems * 2 : 256;
				struct item *nv = aptix__realloc(items,
							na * sizeof(*nv));

				if (!nv) {
					r = APTIX_ERROR;
					break;
				}
				items = nv;
				aitems = na;
			}
			items[nitems].op = i;
			items[nitems].chunk = k;
			nitems++;
		}
		if (has_old)
			aptix_rag__manifest_release(&old);
		if (r < 0)
			goto done;
	}
	/* new chunks first, so that a failure leaves old ones searchable */
	for (from = 0; from < nitems; from += (size_t)s->embed_batch) {
		size_t n = nitems - from;

		if (n > (size_t)s->embed_batch)
			n = (size_t)s->embed_batch;
		if ((r = upload(q, s, &q->http, b, items + from, n,
				counts)) < 0)
			goto done;
	}
	while (json_array_size(dels)) {
		json_t *part = json_array();

		if (!part) {
			r = aptix_error_oom();
			goto done;
		}
		while (json_array_size(part) < QD_DELETE_BATCH &&
		       json_array_size(dels)) {
			size_t last = json_array_size(dels) - 1;

			json_array_append(part, json_array_get(dels, last));
			json_array_remove(dels, last);
		}
		r = delete_points(q, part, counts);
		json_decref(part);
		if (r < 0)
			goto done;
	}
	mw.b = b;
	mw.s = s;
	if ((r = repo->store->write(repo->store, write_manifests, &mw)) == 0) {
		counts->files_changed += mw.c.files_changed;
		counts->files_removed += mw.c.files_removed;
	}
done:
	json_decref(dels);
	free(items);
	aptix_buf_release(&val);
	aptix_buf_release(&mw.ns);
	aptix_buf_release(&mw.key);
	aptix_buf_release(&mw.val);
	return r;
}

/* --- Query ---------------------------------------------------------------- */

static json_t *make_filter(const char *repo_name, char *const *prefixes,
			   size_t nprefixes, const char *language)
{
	json_t *f = json_object(), *must = json_array(), *should;
	size_t i;

	if (!f || !must || json_object_set_new(f, "must", must))
		goto oom;
	if (repo_name && json_array_append_new(must, json_pack(
		    "{s:s,s:{s:s}}", "key", "repo", "match", "value",
		    repo_name)))
		goto oom;
	if (language && json_array_append_new(must, json_pack(
		    "{s:s,s:{s:s}}", "key", "language", "match", "value",
		    language)))
		goto oom;
	if (nprefixes) {
		if (!(should = json_array()) ||
		    json_object_set_new(f, "should", should))
			goto oom;
		for (i = 0; i < nprefixes; i++)
			if (json_array_append_new(should, json_pack(
				    "{s:s,s:{s:s}}", "key", "path_prefixes",
				    "match", "value", prefixes[i])))
				goto oom;
	}
	return f;
oom:
	json_decref(f);
	return NULL;
}

static const char *pstr(const json_t *payload, const char *key)
{
	const char *s = json_string_value(json_object_get(payload, key));

	return s ? s : "";
}

static int take_points(aptix_chunk_set *out, const json_t *pts)
{
	size_t i;
	int r;

	if (!json_is_array(pts))
		return qd_fail(APTIX_EINVALID, "malformed answer to a query: "
			       "no points");
	for (i = 0; i < json_array_size(pts); i++) {
		const json_t *p = json_array_get(pts, i);
		const json_t *pl = json_object_get(p, "payload");
		const json_t *id = json_object_get(p, "id");
		const json_t *text = json_object_get(pl, "text");
		char idbuf[37];

		if (json_is_integer(id))
			snprintf(idbuf, sizeof(idbuf), "%" JSON_INTEGER_FORMAT,
				 json_integer_value(id));
		else if (json_is_string(id))
			snprintf(idbuf, sizeof(idbuf), "%s",
				 json_string_value(id));
		else
			return qd_fail(APTIX_EINVALID, "malformed answer to a "
				       "query: a point without an id");
		r = aptix_rag__set_add(out, idbuf, pstr(pl, "repo"),
				       pstr(pl, "path"),
				       (long)json_integer_value(
					       json_object_get(pl,
							       "start_line")),
				       (long)json_integer_value(
					       json_object_get(pl, "end_line")),
				       *pstr(pl, "language") ?
				       pstr(pl, "language") : "text",
				       pstr(pl, "content_hash"),
				       json_number_value(json_object_get(p,
								 "score")),
				       json_string_value(text),
				       json_string_length(text));
		if (r < 0)
			return r;
	}
	return 0;
}

static int qdrant_query(aptix_chunk_set *out, struct aptix_rag_backend *b,
			const struct rag_query *rq)
{
	struct rag_qdrant *q = (struct rag_qdrant *)b;
	const char *texts[1];
	float *vec = NULL;
	size_t dim = 0, i;
	json_t *body = NULL, *v = NULL, *filter = NULL;
	struct qd_answer a;
	aptix_buf path = APTIX_BUF_INIT;
	int r, search = 0;

	memset(&a, 0, sizeof(a));
	texts[0] = rq->text;
	if ((r = qd_connect(q)) < 0 ||
	    (r = aptix_openai_embed(&vec, &dim, &q->http, b->s->model, texts,
				    1)) < 0)
		return r;
	if (!(v = json_array()) ||
	    !(filter = make_filter(rq->repo_name, rq->prefixes,
				   rq->nprefixes, rq->language))) {
		r = aptix_error_oom();
		goto done;
	}
	for (i = 0; i < dim; i++)
		if (json_array_append_new(v, json_real(vec[i]))) {
			r = aptix_error_oom();
			goto done;
		}
	for (;;) {
		body = json_pack("{s:O,s:O,s:I,s:b}", search ? "vector" :
				 "query", v, "filter", filter, "limit",
				 (json_int_t)rq->top_k, "with_payload", 1);
		if (!body || (rq->threshold > 0 && json_object_set_new(
				      body, "score_threshold",
				      json_real(rq->threshold)))) {
			r = aptix_error_oom();
			goto done;
		}
		aptix_buf_clear(&path);
		aptix_buf_printf(&path, "%s/points/%s", q->coll_path,
				 search ? "search" : "query");
		if (aptix_buf_oom(&path)) {
			r = aptix_error_oom();
			goto done;
		}
		r = qd_call(&a, q, "POST", path.ptr, body);
		json_decref(body);
		body = NULL;
		/* a Qdrant older than 1.10 has no /query route */
		if (r == APTIX_EHTTP && a.status == 404 && !a.envelope &&
		    !search) {
			answer_release(&a);
			aptix_error_clear();
			search = 1;
			continue;
		}
		break;
	}
	if (r == APTIX_EHTTP && a.error &&
	    strstr(a.error, "Vector dimension error")) {
		const char *e = strstr(a.error, "expected dim: ");

		r = size_mismatch(APTIX_EHTTP, q, e ? strtol(e + 14, NULL, 10) :
				  -1, (long)dim);
		goto done;
	}
	if (r < 0)
		goto done;
	r = take_points(out, search ? a.result :
			json_object_get(a.result, "points"));
done:
	answer_release(&a);
	json_decref(body);
	json_decref(v);
	json_decref(filter);
	aptix_buf_release(&path);
	free(vec);
	return r;
}

/* --- The backend ---------------------------------------------------------- */

static int qdrant_count(size_t *files, size_t *chunks,
			struct aptix_rag_backend *b)
{
	return aptix_rag__count_manifests(files, chunks, b->repo, &b->ns);
}

/* The store's record of what was uploaded; the points stay. */
static int qdrant_reset(struct aptix_rag_backend *b)
{
	aptix_buf key = APTIX_BUF_INIT;
	int r;

	if ((r = aptix_rag__delete_prefix(b->repo, b->ns.ptr, b->ns.len)) < 0)
		return r;
	/* the collection record: "c" collection, exactly */
	aptix_buf_set(&key, "c", 1);
	aptix_buf_puts(&key, b->s->collection);
	r = aptix_buf_oom(&key) ? aptix_error_oom() :
		aptix_rag__delete_key(b->repo, key.ptr, key.len);
	aptix_buf_release(&key);
	return r;
}

static void qdrant_free(struct aptix_rag_backend *b)
{
	struct rag_qdrant *q = (struct rag_qdrant *)b;

	if (!q)
		return;
	if (q->auth) {
		/* do not leave the key in freed memory */
		volatile char *p = q->auth;

		while (*p)
			*p++ = 0;
		free(q->auth);
	}
	free(q->base);
	free(q->coll_path);
	aptix_buf_release(&b->ns);
	free(q);
}

int aptix_rag__qdrant_new(struct aptix_rag_backend **out, aptix_repo *repo,
			  const struct rag_settings *s,
			  const struct rag_backend_options *o)
{
	struct rag_qdrant *q;
	struct aptix_rag_backend *b;
	aptix_buf path = APTIX_BUF_INIT;

	*out = NULL;
	if (!(q = aptix__calloc(1, sizeof(*q))))
		return APTIX_ERROR;
	b = &q->parent;
	aptix_rag__backend_init(b, "qdrant", repo, s);
	b->batch_files = RAG_QDRANT_BATCH_FILES;
	b->batch_bytes = RAG_QDRANT_BATCH_BYTES;
	b->shared = 1;
	b->begin = qdrant_begin;
	b->apply = qdrant_apply;
	b->query = qdrant_query;
	b->count = qdrant_count;
	b->reset = qdrant_reset;
	b->free = qdrant_free;
	q->http = o->http;
	q->url = o->qdrant_url;
	q->key = o->qdrant_api_key;
	q->collection = s->collection;
	q->deadline = o->deadline;
	q->attempts = o->attempts > 0 ? o->attempts : 1;
	aptix_buf_puts(&path, "/collections/");
	url_escape(&path, s->collection);
	q->coll_path = aptix_buf_detach(&path);
	if (!q->coll_path || qd_ns(&b->ns, s->collection) < 0) {
		qdrant_free(b);
		return aptix_error_oom();
	}
	*out = b;
	return 0;
}
