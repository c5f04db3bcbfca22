/*
 * src/rag/rag.c - retrieval (see aptix/rag.h): the settings, and the driver
 * of incremental indexing and of retrieval, which picks the backend
 * rag.backend names once and then calls it through its vtable
 * (struct aptix_rag_backend, rag-int.h): rag-local.c, BM25 in the store;
 * rag-qdrant.c, Qdrant. Also the string map and chunk UUIDs the others
 * share; tokens and chunks are in rag-chunk.c, records in
 * rag-manifest.c.
 */
#include "util/common.h"
#include "secret/secrets.h"
#include "workspace/ignore.h"
#include "aptix/credscan.h"
#include "repo/repo.h"
#include "rag/rag-int.h"
#include "store/odb-store.h"
#include "aptix/oid.h"
#include "http/http.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>


/* ------------------------------------------------------------------ */
/* Settings                                                             */
/* ------------------------------------------------------------------ */

static int split_prefixes(struct rag_settings *s, const char *v)
{
	while (v && *v) {
		const char *e = strchr(v, ',');
		size_t n = e ? (size_t)(e - v) : strlen(v);
		char *one, *norm, **nv;

		while (n && (*v == ' ' || *v == '\t')) {
			v++;
			n--;
		}
		while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
		if (n) {
			if (!(one = aptix__strndup(v, n)))
				return APTIX_ERROR;
			norm = aptix_rag__norm_prefix(one);
			free(one);
			if (!norm)
				return APTIX_ERROR;
			nv = aptix__realloc(s->prefixes, (s->nprefixes + 1) *
					    sizeof(*nv));
			if (!nv) {
				free(norm);
				return APTIX_ERROR;
			}
			s->prefixes = nv;
			s->prefixes[s->nprefixes++] = norm;
		}
		v = e ? e + 1 : NULL;
	}
	return 0;
}

/* repo_name becomes "<name>@<first 12 hex digits of the store id>". */
static int qualify_repo(struct rag_settings *s, aptix_repo *repo)
{
	aptix_buf id = APTIX_BUF_INIT, name = APTIX_BUF_INIT;
	size_t i, n = 0;
	int r;

	if ((r = aptix__repo_store_id(&id, repo)) < 0)
		return r;
	aptix_buf_printf(&name, "%s@", s->repo_name);
	for (i = 0; i < id.len && n < 12; i++)
		if (id.ptr[i] != '-') {
			aptix_buf_putc(&name, id.ptr[i]);
			n++;
		}
	aptix_buf_release(&id);
	if (aptix_buf_oom(&name)) {
		aptix_buf_release(&name);
		return aptix_error_oom();
	}
	free(s->repo_name);
	s->repo_name = aptix_buf_detach(&name);
	return 0;
}

int aptix_rag__settings(struct rag_settings *s, aptix_repo *repo,
			const aptix_config *cfg, const char *backend)
{
	const char *v;
	int r;

	memset(s, 0, sizeof(*s));
	/* defaults and bounds come from the key table (config-keys.c) */
	if ((!backend || !*backend) &&
	    (r = aptix_config_string(&backend, cfg, "rag.backend")) < 0)
		return r;
	if (!strcmp(backend, "local")) {
		s->backend = RAG_LOCAL;
	} else if (!strcmp(backend, "qdrant")) {
		s->backend = RAG_QDRANT;
	} else {
		aptix_error_set(APTIX_ERROR_CONFIG, "bad value '%s' for "
				"'rag.backend': must be 'local' or 'qdrant'",
				backend);
		return APTIX_EINVALID;
	}
	if ((r = aptix_config_long(&s->chunk_lines, cfg,
				   "rag.chunk-lines")) < 0 ||
	    (r = aptix_config_long(&s->chunk_overlap, cfg,
				   "rag.chunk-overlap")) < 0 ||
	    (r = aptix_config_long(&s->embed_batch, cfg,
				   "rag.embed-batch")) < 0 ||
	    (r = aptix_config_long(&s->max_file_size, cfg,
				   "rag.max-file-size")) < 0 ||
	    (r = aptix_config_long(&s->top_k, cfg, "rag.top-k")) < 0 ||
	    (r = aptix_config_double(&s->threshold, cfg,
				     "rag.score-threshold")) < 0 ||
	    (r = aptix_config_bool(&s->required, cfg, "rag.required")) < 0 ||
	    (r = aptix_config_duration_ms(&s->timeout_ms, cfg,
					  "rag.timeout")) < 0)
		goto fail;
	/* the one rule between two keys */
	if (s->chunk_overlap >= s->chunk_lines) {
		aptix_error_set(APTIX_ERROR_CONFIG, "bad value '%ld' for "
				"'rag.chunk-overlap': must be between 0 and "
				"%ld (below rag.chunk-lines)", s->chunk_overlap,
				s->chunk_lines - 1);
		r = APTIX_EINVALID;
		goto fail;
	}
	if (s->timeout_ms <= 0)
		s->timeout_ms = 10000;
	v = aptix_config_get(cfg, "rag.repo");
	if (v && *v) {
		s->repo_name = aptix__strdup(v);
		s->repo_explicit = 1;
	} else {
		const char *wd = repo ? aptix_repo_workdir(repo) : NULL;
		const char *base = wd ? strrchr(wd, '/') : NULL;

		base = base ? base + 1 : wd;
		s->repo_name = aptix__strdup(base && *base ? base :
					     "workspace");
		/*
		 * A Qdrant collection is shared by every store on the
		 * machine: the default repo key carries this store's id,
		 * so that two clones named alike neither read nor delete
		 * each other's points (their ids, made from the key,
		 * differ too). The local index is the store's own.
		 */
		if (s->repo_name && repo && s->backend == RAG_QDRANT &&
		    (r = qualify_repo(s, repo)) < 0)
			goto fail;
	}
	if (!s->repo_name) {
		r = APTIX_ERROR;
		goto fail;
	}
	if ((r = aptix_config_string(&s->collection, cfg,
				     "rag.collection")) < 0 ||
	    (r = aptix_config_string(&s->model, cfg,
				     "rag.embedding-model")) < 0)
		goto fail;
	v = aptix_config_get(cfg, "rag.language");
	s->language = v && *v ? v : NULL;
	if ((r = split_prefixes(s, aptix_config_get(cfg, "rag.path-prefix")))
	    < 0)
		goto fail;
	return 0;
fail:
	aptix_rag__settings_release(s);
	return r;
}

void aptix_rag__settings_release(struct rag_settings *s)
{
	size_t i;

	free(s->repo_name);
	for (i = 0; i < s->nprefixes; i++)
		free(s->prefixes[i]);
	free(s->prefixes);
	memset(s, 0, sizeof(*s));
}

/* ------------------------------------------------------------------ */
/* Indexing                                                             */
/* ------------------------------------------------------------------ */

struct old_file {
	char *path;
	unsigned char hash[32];
	int fresh;		/* same chunking and repo name */
	int seen;
};

struct scan_ctx {
	const struct rag_settings *s;
	aptix_buf start;	/* ns + scope */
	const char *scope;
	struct old_file *v;
	size_t n, alloc;
};

static int scan_one(struct rag_manifest *m, void *payload)
{
	struct scan_ctx *c = payload;
	struct old_file *o;

	if (!aptix_rag__path_in(m->path, c->scope))
		return 0;
	if (aptix__grow(&c->v, &c->alloc, c->n, sizeof(*c->v), 64) < 0)
		return APTIX_ERROR;
	o = &c->v[c->n++];
	memset(o, 0, sizeof(*o));
	o->path = m->path;	/* taken */
	m->path = NULL;
	memcpy(o->hash, m->hash, 32);
	o->fresh = m->lines == (unsigned)c->s->chunk_lines &&
		m->overlap == (unsigned)c->s->chunk_overlap &&
		!strcmp(m->repo, c->s->repo_name);
	return 0;
}

static int old_cmp(const void *a, const void *b)
{
	return strcmp(((const struct old_file *)a)->path,
		      ((const struct old_file *)b)->path);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Is path acceptable: relative, no "." / ".." / empty component, no .aptix? */
static int path_ok(const char *p)
{
	const char *c = p;

	if (!*p || *p == '/')
		return 0;
	while (c) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);

		if (!n || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.') ||
		    (n == 6 && !memcmp(c, ".aptix", 6)) ||
		    (n == 4 && !memcmp(c, ".git", 4)))
			return 0;
		c = e ? e + 1 : NULL;
	}
	return 1;
}

/*
 * 1: read; 0: not indexable (missing, special, binary, too large, or
 * holding a credential: then *cred is set, and cred->rule not NULL).
 */
static int read_source(aptix_buf *out, const char *workdir, const char *path,
		       long max, const char *const *keys, size_t nkeys,
		       aptix_credential *cred)
{
	aptix_buf full = APTIX_BUF_INIT;
	struct stat st;
	int fd, ok = 0;

	aptix_buf_printf(&full, "%s/%s", workdir, path);
	if (aptix_buf_oom(&full))
		return aptix_error_oom();
	fd = open(full.ptr, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	aptix_buf_release(&full);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size <= (off_t)max) {
		aptix_buf_clear(out);
		out->max = (size_t)max + 1;
		/* a file holding a credential is never indexed */
		if (aptix_buf_read_fd(out, fd) == 0 && out->len <= (size_t)max &&
		    aptix_utf8_valid(out->ptr, out->len) &&
		    !aptix_credscan_find(cred, out->ptr, out->len, keys,
					 nkeys))
			ok = 1;
		out->max = 0;
		aptix_error_clear();
	}
	close(fd);
	if (!ok)
		aptix_buf_release(out);
	return ok;
}

static void op_release(struct rag_file_op *op)
{
	size_t i;

	free(op->path);
	aptix_buf_release(&op->content);
	if (op->terms)
		for (i = 0; i < op->nchunks; i++)
			aptix__terms_release(&op->terms[i]);
	free(op->terms);
	free(op->chunks);
	memset(op, 0, sizeof(*op));
}

static void batch_clear(struct rag_batch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		op_release(&b->ops[i]);
	b->n = 0;
	b->bytes = 0;
}

static struct rag_file_op *batch_add(struct rag_batch *b, const char *path)
{
	struct rag_file_op *op;

	if (b->n == b->alloc) {
		size_t na = b->alloc ? b->alloc * 2 : RAG_BATCH_FILES;
		struct rag_file_op *nv = aptix__realloc(b->ops,
							na * sizeof(*nv));

		if (!nv)
			return NULL;
		b->ops = nv;
		b->alloc = na;
	}
	op = &b->ops[b->n];
	memset(op, 0, sizeof(*op));
	aptix_buf_init(&op->content, 0);
	if (!(op->path = aptix__strdup(path)))
		return NULL;
	b->n++;
	return op;
}

struct indexer {
	aptix_repo *repo;
	const struct rag_settings *s;
	const aptix_rag_index_options *opts;
	aptix_rag_index_stats *st;
	struct aptix_rag_backend *b;
	const char *keys[2];		/* the secrets never indexed */
	struct aptix__ignore *ignore;	/* .aptixignore */
	struct rag_batch batch;
	struct rag_counts counts;
	int64_t t0;			/* monotonic ms: for the duration */
	int64_t began;			/* wall-clock ms: for the "i" record */
	size_t done, total, chunks;
};

/* --- The backends --------------------------------------------------------- */

static const struct {
	enum rag_backend kind;
	aptix_rag__backend_new_fn open;
} backends[] = {
	{ RAG_LOCAL, aptix_rag__local_new },
	{ RAG_QDRANT, aptix_rag__qdrant_new },
};

int aptix_rag__backend_open(struct aptix_rag_backend **out, aptix_repo *repo,
			    const struct rag_settings *s,
			    const struct rag_backend_options *o)
{
	aptix_store *kv;
	size_t i;

	*out = NULL;
	/* its manifests live in the store's own table */
	if (aptix__repo_kv(&kv, repo, "retrieval") < 0)
		return APTIX_EINVALID;
	for (i = 0; i < ARRAY_SIZE(backends); i++)
		if (backends[i].kind == s->backend)
			return backends[i].open(out, repo, s, o);
	aptix_error_set(APTIX_ERROR_CONFIG, "unknown retrieval backend "
			"(kind %d)", (int)s->backend);
	return APTIX_EINVALID;
}

void aptix_rag__backend_init(struct aptix_rag_backend *b, const char *name,
			     aptix_repo *repo, const struct rag_settings *s)
{
	memset(b, 0, sizeof(*b));
	b->version = APTIX_RAG_BACKEND_VERSION;
	b->name = name;
	b->repo = repo;
	b->s = s;
	aptix_buf_init(&b->ns, 0);
}

void aptix_rag__backend_free(struct aptix_rag_backend *b)
{
	if (b && b->free)
		b->free(b);
}

static int unsupported(const struct aptix_rag_backend *b, const char *what)
{
	aptix_error_set(APTIX_ERROR_INVALID, "the '%s' retrieval backend "
			"cannot %s", b->name, what);
	return APTIX_EINVALID;
}

/* Settings, then the backend they name (opened for o). */
static int open_backend(struct aptix_rag_backend **out,
			struct rag_settings *s, aptix_repo *repo,
			const aptix_config *cfg, const char *backend,
			const struct rag_backend_options *o)
{
	int r;

	*out = NULL;
	if ((r = aptix_rag__settings(s, repo, cfg, backend)) < 0)
		return r;
	if ((r = aptix_rag__backend_open(out, repo, s, o)) < 0)
		aptix_rag__settings_release(s);
	return r;
}

static void close_backend(struct aptix_rag_backend *b,
			  struct rag_settings *s)
{
	aptix_rag__backend_free(b);
	aptix_rag__settings_release(s);
}

/* --- Indexing ------------------------------------------------------------ */

static int flush(struct indexer *ix)
{
	int r;

	if (!ix->batch.n)
		return 0;
	r = ix->b->apply ? ix->b->apply(ix->b, &ix->batch, &ix->counts) :
		unsupported(ix->b, "index");
	batch_clear(&ix->batch);
	return r;
}

static void progress(struct indexer *ix, int finished)
{
	aptix_rag_progress p;

	if (!ix->opts->progress)
		return;
	p.files_done = ix->done;
	p.files_total = ix->total;
	p.chunks_done = ix->chunks;
	p.elapsed_ms = aptix_http_now_ms() - ix->t0;
	p.finished = finished;
	ix->opts->progress(&p, ix->opts->payload);
}

/* Chunk a changed file into op (its content already read). */
static int prepare_op(struct indexer *ix, struct rag_file_op *op)
{
	size_t i;
	int r;

	if ((r = aptix_rag__chunk_text(&op->chunks, &op->nchunks,
				       op->content.ptr, op->content.len,
				       ix->s->chunk_lines,
				       ix->s->chunk_overlap)) < 0)
		return r;
	for (i = 0; i < op->nchunks; i++)
		if ((r = aptix_rag__chunk_ident(&op->chunks[i],
						ix->s->repo_name, op->path,
						op->content.ptr)) < 0)
			return r;
	if (!ix->b->needs_terms || !op->nchunks)
		return 0;
	if (!(op->terms = aptix__calloc(op->nchunks, sizeof(*op->terms))))
		return APTIX_ERROR;
	for (i = 0; i < op->nchunks; i++)
		if ((r = aptix__count_terms(&op->terms[i],
					       op->content.ptr +
					       op->chunks[i].off,
					       op->chunks[i].len,
					       APTIX_TOK_PARTS)) < 0)
			return r;
	return 0;
}

static int batch_full(const struct indexer *ix)
{
	const struct rag_batch *b = &ix->batch;

	return b->n >= ix->b->batch_files || b->bytes >= ix->b->batch_bytes;
}

static int index_file(struct indexer *ix, const char *path,
		      struct old_file *old)
{
	struct rag_file_op *op;
	aptix_buf content = APTIX_BUF_INIT;
	aptix_credential cred;
	char why[160];
	aptix_oid h;
	int r;

	cred.rule = NULL;
	r = aptix__ignore_match(ix->ignore, path) ? 0 :
		read_source(&content, aptix_repo_workdir(ix->repo), path,
			    ix->s->max_file_size, ix->keys,
			    ARRAY_SIZE(ix->keys), &cred);
	if (r < 0)
		return r;
	if (!r && cred.rule && ix->opts->on_withheld)
		ix->opts->on_withheld(path, aptix_credential_describe(
					      why, sizeof(why), &cred),
				      ix->opts->payload);
	if (!r) {
		ix->st->files_skipped++;
		if (!old)
			return 0;
		if (!(op = batch_add(&ix->batch, path)))
			return APTIX_ERROR;
		op->remove = 1;
		return 0;
	}
	if ((r = aptix_sha256(&h, content.ptr, content.len)) < 0)
		goto done;
	if (old && old->fresh && !memcmp(old->hash, h.id, 32)) {
		ix->st->files_unchanged++;
		goto done;
	}
	if (!(op = batch_add(&ix->batch, path))) {
		r = APTIX_ERROR;
		goto done;
	}
	memcpy(op->hash, h.id, 32);
	op->content = content;
	aptix_buf_init(&content, 0);
	ix->batch.bytes += op->content.len;
	r = prepare_op(ix, op);
	ix->chunks += op->nchunks;
done:
	aptix_buf_release(&content);
	return r;
}

static int cancelled(const struct indexer *ix)
{
	if (aptix__cancelled(ix->opts->cancel)) {
		aptix_error_set(APTIX_ERROR_INVALID, "indexing cancelled");
		return 1;
	}
	return 0;
}

static int scan_old(struct scan_ctx *sc, aptix_repo *repo,
		    const aptix_buf *ns, const char *const *scopes,
		    size_t nscopes)
{
	size_t i, k;
	int r = 0, all;

	for (i = 0; i < (nscopes ? nscopes : 1); i++) {
		char *scope = aptix_rag__norm_prefix(nscopes ? scopes[i] : "");

		if (!scope)
			return APTIX_ERROR;
		sc->scope = scope;
		aptix_buf_set(&sc->start, ns->ptr, ns->len);
		aptix_buf_puts(&sc->start, scope);
		if (aptix_buf_oom(&sc->start))
			r = aptix_error_oom();
		else if (sc->start.len > RAG_KEY_PATH_CUT)
			aptix_buf_truncate(&sc->start, RAG_KEY_PATH_CUT);
		if (!r)
			r = aptix_rag__manifest_each(repo, sc->start.ptr,
						     sc->start.len, scan_one,
						     sc);
		all = !*scope;
		free(scope);
		if (r < 0)
			return r;
		if (all)
			break;
	}
	if (sc->n > 1)
		qsort(sc->v, sc->n, sizeof(*sc->v), old_cmp);
	/* overlapping scopes list a file twice */
	for (i = k = 0; i < sc->n; i++) {
		if (k && !strcmp(sc->v[k - 1].path, sc->v[i].path)) {
			free(sc->v[i].path);
			continue;
		}
		sc->v[k++] = sc->v[i];
	}
	sc->n = k;
	return 0;
}

/* --- When the index was made, and what changed since --------------- */

/* A run over the whole work tree began at t0 ("i" ns). */
static int mark_indexed(aptix_repo *repo, const aptix_buf *ns, int64_t t0)
{
	aptix_buf key = APTIX_BUF_INIT;
	unsigned char t[8];
	int r;

	aptix_buf_putc(&key, 'i');
	aptix_buf_put(&key, ns->ptr, ns->len);
	aptix__put_be64(t, (uint64_t)t0);
	r = aptix_buf_oom(&key) ? aptix_error_oom() :
		aptix_rag__put_key(repo, key.ptr, key.len, t, sizeof(t));
	aptix_buf_release(&key);
	return r;
}

struct stale_file {
	char *path;
	unsigned char hash[32];
};

struct stale_scan {
	struct stale_file *v;
	size_t n, alloc;
};

static int stale_one(struct rag_manifest *m, void *payload)
{
	struct stale_scan *sc = payload;

	if (aptix__grow(&sc->v, &sc->alloc, sc->n, sizeof(*sc->v), 64) < 0)
		return APTIX_ERROR;
	sc->v[sc->n].path = m->path;	/* taken */
	m->path = NULL;
	memcpy(sc->v[sc->n].hash, m->hash, 32);
	sc->n++;
	return 0;
}

/* Did path change since it was indexed with hash? Reads it. */
static int file_changed(const char *root, const struct stale_file *f,
			off_t size, long max)
{
	aptix_buf path = APTIX_BUF_INIT, content = APTIX_BUF_INIT;
	aptix_oid h;
	int changed = 1;

	if (max > 0 && size > max)
		return 1;	/* indexing would drop it now */
	aptix_buf_printf(&path, "%s/%s", root, f->path);
	if (!aptix_buf_oom(&path) &&
	    aptix_buf_read_file(&content, path.ptr) == 0 &&
	    aptix_sha256(&h, content.ptr, content.len) == 0)
		changed = memcmp(h.id, f->hash, 32) != 0;
	aptix_error_clear();
	aptix_buf_release(&path);
	aptix_buf_release(&content);
	return changed;
}

int aptix_rag_index_staleness(aptix_rag_staleness *out, aptix_repo *repo,
			      const aptix_config *cfg)
{
	struct rag_backend_options bo;
	struct rag_settings s;
	struct aptix_rag_backend *b;
	struct stale_scan sc;
	aptix_buf key = APTIX_BUF_INIT, t = APTIX_BUF_INIT;
	const char *root = aptix_repo_workdir(repo);
	int64_t since_ns = 0;
	size_t i;
	int r;

	APTIX_ASSERT_ARG(out);
	APTIX_ASSERT_ARG(repo);
	memset(out, 0, sizeof(*out));
	memset(&sc, 0, sizeof(sc));
	memset(&bo, 0, sizeof(bo));
	if (!root || open_backend(&b, &s, repo, cfg, NULL, &bo) < 0) {
		aptix_error_clear();	/* retrieval not set up: nothing */
		return 0;
	}
	r = aptix_rag__manifest_each(repo, b->ns.ptr, b->ns.len, stale_one,
				     &sc);
	aptix_buf_putc(&key, 'i');
	aptix_buf_put(&key, b->ns.ptr, b->ns.len);
	if (r == 0 && !aptix_buf_oom(&key) &&
	    repo->store->get(&t, repo->store, APTIX_TABLE_RAG, key.ptr,
			     key.len) == 0 && t.len == 8)
		/* a second of slack for file systems with coarse clocks */
		since_ns = ((int64_t)aptix__get_be64(
				    (const unsigned char *)t.ptr) - 1000) *
			1000000;
	aptix_error_clear();
	for (i = 0; r == 0 && i < sc.n; i++) {
		struct stat st;
		aptix_buf path = APTIX_BUF_INIT;
		int gone, changed = 0;

		aptix_buf_printf(&path, "%s/%s", root, sc.v[i].path);
		gone = aptix_buf_oom(&path) || lstat(path.ptr, &st) < 0 ||
			!S_ISREG(st.st_mode);
		aptix_buf_release(&path);
		if (!gone && (int64_t)st.st_mtim.tv_sec * 1000000000 +
		    st.st_mtim.tv_nsec >= since_ns)
			changed = file_changed(root, &sc.v[i], st.st_size,
					       s.max_file_size);
		out->gone += gone;
		out->changed += changed;
		if ((gone || changed) && !*out->first)
			snprintf(out->first, sizeof(out->first), "%s",
				 sc.v[i].path);
	}
	out->files = sc.n;
	for (i = 0; i < sc.n; i++)
		free(sc.v[i].path);
	free(sc.v);
	aptix_buf_release(&key);
	aptix_buf_release(&t);
	close_backend(b, &s);
	return r;
}

int aptix_rag_index(aptix_rag_index_stats *out, aptix_repo *repo,
		    const aptix_config *cfg, const aptix_rag_index_options *o)
{
	struct rag_backend_options bo;
	struct rag_settings s;
	struct indexer ix;
	struct scan_ctx sc;
	char **files = NULL;
	size_t i, nfiles = 0;
	int r;

	APTIX_ASSERT_ARG(out);
	APTIX_ASSERT_ARG(repo);
	APTIX_ASSERT_ARG(o);
	APTIX_ASSERT_ARG(o->files || !o->nfiles);
	memset(out, 0, sizeof(*out));
	memset(&ix, 0, sizeof(ix));
	memset(&sc, 0, sizeof(sc));
	memset(&bo, 0, sizeof(bo));
	bo.http = o->http;
	bo.qdrant_url = o->qdrant_url;
	bo.qdrant_api_key = o->qdrant_api_key;
	bo.attempts = 3;
	ix.t0 = aptix_http_now_ms();
	/*
	 * Compared with files' mtimes: the wall clock, to the second below
	 * (a monotonic clock counts from boot, and made every file look
	 * modified since)
	 */
	ix.began = (int64_t)time(NULL) * 1000;
	if ((r = open_backend(&ix.b, &s, repo, cfg, o->backend, &bo)) < 0)
		return r;
	out->backend = ix.b->name;
	ix.repo = repo;
	ix.s = &s;
	ix.opts = o;
	ix.st = out;
	ix.keys[0] = o->http.api_key;
	ix.keys[1] = o->qdrant_api_key;
	if ((r = aptix__ignore_load(&ix.ignore, aptix_repo_workdir(repo))) < 0)
		goto done;
	sc.s = &s;

	if ((ix.b->begin && (r = ix.b->begin(ix.b)) < 0) ||
	    (r = scan_old(&sc, repo, &ix.b->ns, o->scopes, o->nscopes)) < 0)
		goto done;

	/* the files, sorted, once each */
	if (o->nfiles && !(files = aptix__calloc(o->nfiles, sizeof(*files)))) {
		r = APTIX_ERROR;
		goto done;
	}
	for (i = 0; i < o->nfiles; i++) {
		if (!o->files[i] || !path_ok(o->files[i])) {
			out->files_scanned++;
			out->files_skipped++;
			continue;
		}
		files[nfiles++] = (char *)o->files[i];
	}
	if (nfiles > 1)
		qsort(files, nfiles, sizeof(*files), str_cmp);
	ix.total = nfiles;
	for (i = 0; i < nfiles; i++) {
		struct old_file key, *old;

		if (i && !strcmp(files[i - 1], files[i])) {
			ix.total--;
			continue;
		}
		if (cancelled(&ix)) {
			r = APTIX_ECANCELLED;
			break;
		}
		out->files_scanned++;
		key.path = files[i];
		old = sc.n ? bsearch(&key, sc.v, sc.n, sizeof(*sc.v),
				     old_cmp) : NULL;
		if (old)
			old->seen = 1;
		if ((r = index_file(&ix, files[i], old)) < 0)
			break;
		ix.done++;
		if (batch_full(&ix) && (r = flush(&ix)) < 0)
			break;
		progress(&ix, 0);
	}
	/* indexed files that are gone */
	for (i = 0; r == 0 && i < sc.n; i++) {
		if (sc.v[i].seen)
			continue;
		if (!batch_add(&ix.batch, sc.v[i].path)) {
			r = APTIX_ERROR;
			break;
		}
		ix.batch.ops[ix.batch.n - 1].remove = 1;
		if (batch_full(&ix) && (r = flush(&ix)) < 0)
			break;
	}
	if (r == 0 || r == APTIX_ECANCELLED) {
		int f = flush(&ix);

		if (r == 0)
			r = f;
	}
	if (r == 0)
		progress(&ix, 1);
	if (r == APTIX_ECANCELLED)
		aptix_error_set(APTIX_ERROR_INVALID, "indexing cancelled");
	out->files_changed = ix.counts.files_changed;
	out->files_removed = ix.counts.files_removed;
	out->chunks_added = ix.counts.chunks_added;
	out->chunks_removed = ix.counts.chunks_removed;
	out->chunks_embedded = ix.counts.chunks_embedded;
	if (r == 0)
		r = ix.b->count ? ix.b->count(&out->files_total,
					      &out->chunks_total, ix.b) :
			unsupported(ix.b, "count its index");
	if (r == 0 && !o->nscopes)
		r = mark_indexed(repo, &ix.b->ns, ix.began);
done:
	batch_clear(&ix.batch);
	free(ix.batch.ops);
	for (i = 0; i < sc.n; i++)
		free(sc.v[i].path);
	free(sc.v);
	aptix_buf_release(&sc.start);
	free(files);
	aptix__ignore_free(ix.ignore);
	close_backend(ix.b, &s);
	out->duration_ms = aptix_http_now_ms() - ix.t0;
	return r;
}

/* what of the index a caller wants: its size, or it emptied */
struct index_op {
	size_t *files, *chunks;	/* NULL: reset */
};

/* Opens the named backend (NULL: the configured one) and runs op on it. */
static int index_op(aptix_repo *repo, const aptix_config *cfg,
		    const char *backend, const struct index_op *op)
{
	struct rag_backend_options bo;
	struct rag_settings s;
	struct aptix_rag_backend *b;
	int r;

	APTIX_ASSERT_ARG(repo);
	memset(&bo, 0, sizeof(bo));
	if ((r = open_backend(&b, &s, repo, cfg, backend, &bo)) < 0)
		return r;
	if (op->files)
		r = b->count ? b->count(op->files, op->chunks, b) :
			unsupported(b, "count its index");
	else
		r = b->reset ? b->reset(b) : unsupported(b, "reset its index");
	close_backend(b, &s);
	return r;
}

int aptix_rag_index_count(size_t *files, size_t *chunks, aptix_repo *repo,
			  const aptix_config *cfg, const char *backend)
{
	struct index_op op = { files, chunks };

	*files = *chunks = 0;
	return index_op(repo, cfg, backend, &op);
}

int aptix_rag_index_reset(aptix_repo *repo, const aptix_config *cfg,
			  const char *backend)
{
	struct index_op op = { NULL, NULL };

	return index_op(repo, cfg, backend, &op);
}

/* ------------------------------------------------------------------ */
/* Retrieval                                                            */
/* ------------------------------------------------------------------ */

static int has_terms_cb(const char *t, size_t n, void *payload)
{
	(void)t;
	(void)n;
	(void)payload;
	return 1;
}

/*
 * The HTTP options of a retrieval's embeddings: openai.base-url unless
 * given, the rag.timeout budget, no streaming callback.
 */
static void retrieval_http(aptix_openai_options *http,
			   const aptix_config *cfg,
			   const struct rag_settings *s)
{
	if (!http->base_url || !*http->base_url)
		http->base_url = aptix_config_get(cfg, "openai.base-url");
	if (!http->total_timeout_ms || http->total_timeout_ms > s->timeout_ms)
		http->total_timeout_ms = (long)s->timeout_ms;
	http->on_delta = NULL;
}

static void chunk_release(aptix_rag_chunk *c)
{
	free(c->chunk_id);
	free(c->repo);
	free(c->path);
	free(c->language);
	aptix_buf_release(&c->text);
}

/*
 * Is chunk c still what the work tree holds at its lines? Its text is
 * the file's lines start_line..end_line with their newlines, as
 * aptix_rag__chunk_text() cut it, and content_hash is their SHA-256.
 */
static int chunk_live(const aptix_rag_chunk *c, const char *workdir)
{
	aptix_buf file = APTIX_BUF_INIT, full = APTIX_BUF_INIT;
	const char *p, *end, *from = NULL;
	char hex[65];
	aptix_oid h;
	long line = 1;
	int ok = 0;

	aptix_buf_printf(&full, "%s/%s", workdir, c->path);
	if (aptix_buf_oom(&full) || aptix_buf_read_file(&file, full.ptr) < 0)
		goto done;
	p = file.ptr;
	end = file.ptr + file.len;
	while (p < end && line < c->start_line) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		p = nl ? nl + 1 : end;
		line++;
	}
	if (line != c->start_line || p >= end)
		goto done;
	from = p;
	while (p < end && line <= c->end_line) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		p = nl ? nl + 1 : end;
		line++;
	}
	if (line <= c->end_line)
		goto done;	/* the file is shorter now */
	if (aptix_sha256(&h, from, (size_t)(p - from)) < 0)
		goto done;
	aptix_oid_tostr(hex, &h);
	ok = !strcmp(hex, c->content_hash);
done:
	aptix_error_clear();
	aptix_buf_release(&file);
	aptix_buf_release(&full);
	return ok;
}

/*
 * Retrieved chunks from n0 on that hold a credential (indexed before
 * the detector knew it), whose path .aptixignore names, or whose lines
 * in the work tree changed since they were indexed are dropped.
 */
static int drop_withheld(aptix_chunk_set *out, size_t n0, aptix_repo *repo,
			 const aptix_rag_query *q)
{
	const char *keys[2];
	struct aptix__ignore *ig;
	aptix_credential cred;
	size_t i, j;
	int r = 0;

	keys[0] = q->http.api_key;
	keys[1] = q->qdrant_api_key;
	if ((r = aptix__ignore_load(&ig, aptix_repo_workdir(repo))) < 0)
		return r;
	for (i = j = n0; i < out->n; i++) {
		aptix_rag_chunk *c = &out->v[i];

		if (aptix__ignore_match(ig, c->path)) {
			chunk_release(c);
			continue;
		}
		/* stale: sending it would contradict the live file */
		if (aptix_repo_workdir(repo) &&
		    !chunk_live(c, aptix_repo_workdir(repo))) {
			if (r == 0)
				r = aptix_chunk_set_warn(out, "a chunk of '%s' "
							 "(lines %ld-%ld) "
							 "changed since it "
							 "was indexed: "
							 "dropped; run aptix "
							 "index", c->path,
							 c->start_line,
							 c->end_line);
			chunk_release(c);
			continue;
		}
		if (aptix_credscan_find(&cred, c->text.ptr, c->text.len, keys,
					ARRAY_SIZE(keys))) {
			if (r == 0)
				r = aptix_chunk_set_warn(out, "a chunk of '%s' "
							 "holds a credential "
							 "(%s): dropped; "
							 "re-index to remove "
							 "it", c->path,
							 cred.rule);
			chunk_release(c);
			continue;
		}
		out->v[j++] = *c;
	}
	out->n = j;
	aptix__ignore_free(ig);
	return r;
}

int aptix_rag_retrieve(aptix_chunk_set *out, aptix_repo *repo,
		       const aptix_config *cfg, const aptix_rag_query *q)
{
	struct rag_backend_options bo;
	struct rag_settings s;
	struct rag_query rq;
	struct aptix_rag_backend *b = NULL;
	char **qprefixes = NULL;
	size_t i, n0;
	int r, required;

	APTIX_ASSERT_ARG(out);
	APTIX_ASSERT_ARG(repo);
	APTIX_ASSERT_ARG(q);
	if ((r = aptix_rag__settings(&s, repo, cfg, NULL)) < 0) {
		int req = 0;

		aptix_config_bool(&req, cfg, "rag.required");
		if (req)
			return r;
		aptix_chunk_set_warn(out, "retrieval skipped: %s",
				     aptix_error_last()->message);
		aptix_error_clear();
		return 0;
	}
	required = s.required;
	n0 = out->n;
	memset(&rq, 0, sizeof(rq));
	if (!q->query || aptix__tokenize(q->query, strlen(q->query),
					 APTIX_TOK_PARTS, has_terms_cb, NULL) != 1) {
		r = 0;
		goto done;
	}
	memset(&bo, 0, sizeof(bo));
	bo.http = q->http;
	retrieval_http(&bo.http, cfg, &s);
	bo.qdrant_url = q->qdrant_url;
	bo.qdrant_api_key = q->qdrant_api_key;
	bo.deadline = aptix_http_now_ms() + s.timeout_ms;
	bo.attempts = 1;
	if ((r = aptix_rag__backend_open(&b, repo, &s, &bo)) < 0)
		goto fail;
	/*
	 * The local index belongs to this store: its chunks are filtered
	 * by repo only when one is named (a renamed workspace keeps its
	 * index until re-indexed); a Qdrant collection may be shared.
	 */
	rq.text = q->query;
	rq.repo_name = q->repo_name && *q->repo_name ? q->repo_name :
		s.repo_explicit || b->shared ? s.repo_name : NULL;
	rq.language = q->language && *q->language ? q->language : s.language;
	rq.top_k = q->top_k > 0 ? q->top_k : s.top_k;
	rq.threshold = q->score_threshold >= 0 ? q->score_threshold :
		s.threshold;
	rq.prefixes = s.prefixes;
	rq.nprefixes = s.nprefixes;
	if (q->path_prefixes) {
		if (q->nprefixes &&
		    !(qprefixes = aptix__calloc(q->nprefixes,
						sizeof(*qprefixes)))) {
			r = APTIX_ERROR;
			goto fail;
		}
		for (i = 0; i < q->nprefixes; i++)
			if (!(qprefixes[i] = aptix_rag__norm_prefix(
				      q->path_prefixes[i]))) {
				r = APTIX_ERROR;
				goto fail;
			}
		rq.prefixes = qprefixes;
		rq.nprefixes = q->nprefixes;
	}
	/* a prefix matching everything is no filter */
	for (i = 0; i < rq.nprefixes; i++)
		if (!*rq.prefixes[i])
			rq.nprefixes = 0;

	r = b->query ? b->query(out, b, &rq) : unsupported(b, "retrieve");
	if (r == 0)
		r = drop_withheld(out, n0, repo, q);
fail:
	if (r < 0) {
		/* no partial results */
		while (out->n > n0)
			chunk_release(&out->v[--out->n]);
		if (r == APTIX_ECANCELLED || required)
			goto done;
		r = aptix_chunk_set_warn(out, "retrieval skipped: %s",
					 aptix_error_last()->message);
		aptix_error_clear();
	}
done:
	if (qprefixes) {
		for (i = 0; i < q->nprefixes; i++)
			free(qprefixes[i]);
		free(qprefixes);
	}
	close_backend(b, &s);
	return r;
}
