/*
 * src/rag/rag-local.c - the local retrieval backend: an inverted index in the
 * store's rag table, scored with BM25 (k1 = 1.2, b = 0.75). No network.
 *
 * Keys (see rag-int.h for the others):
 *   "d" be32 docnum   a chunk: u8 version, varint start line, varint end
 *                     line, varint length in tokens, 16-byte chunk id,
 *                     32-byte SHA-256 of the text, varint + repo,
 *                     varint + path, varint + language, then the text
 *                     in the stored form of objects (zstream.h: zlib
 *                     unless that saves nothing)
 *   "t" term          its postings: varint count, then per chunk in
 *                     ascending docnum order varint docnum delta, varint
 *                     term frequency, varint chunk length (so that
 *                     scoring reads no document)
 *   "s"               stats: u8 version, be64 chunks, be64 tokens,
 *                     be32 next docnum, be64 files
 *
 * Documents are numbered (never reused) rather than keyed by their
 * UUID, which keeps postings small; the file manifests map chunk ids
 * to numbers. A batch of files is applied in one write transaction: the
 * manifests are read again inside it, so a concurrent indexer cannot
 * make it drop or duplicate chunks.
 *
 * The backend (struct aptix_rag_backend, see rag-int.h) keeps nothing
 * of its own: every slot works on the store.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "rag/rag-int.h"
#include "object/zstream.h"

#define DOC_VERSION 1
#define STATS_VERSION 1

struct stats {
	uint64_t chunks, tokens, files;
	uint32_t next;
};

static void stats_decode(struct stats *st, const void *val, size_t len)
{
	const unsigned char *p = val;

	memset(st, 0, sizeof(*st));
	st->next = 1;
	if (len < 29 || p[0] != STATS_VERSION)
		return;
	st->chunks = aptix__get_be64(p + 1);
	st->tokens = aptix__get_be64(p + 9);
	st->next = aptix_rag__get_be32(p + 17);
	st->files = aptix__get_be64(p + 21);
	if (!st->next)
		st->next = 1;
}

static void stats_encode(unsigned char out[29], const struct stats *st)
{
	out[0] = STATS_VERSION;
	aptix__put_be64(out + 1, st->chunks);
	aptix__put_be64(out + 9, st->tokens);
	aptix_rag__put_be32(out + 17, st->next);
	aptix__put_be64(out + 21, st->files);
}

struct doc {
	long start, end;
	uint32_t len;
	unsigned char uuid[16];
	unsigned char hash[32];
	const char *repo, *path, *language;
	size_t repo_len, path_len, language_len;
	const void *ztext;		/* the text, stored form */
	size_t ztext_len;
};

static int get_ref(const char **s, size_t *n, const unsigned char **p,
		   const unsigned char *end)
{
	uint64_t v;

	if (aptix_rag__get_varint(&v, p, end) < 0 ||
	    v > (uint64_t)(end - *p))
		return -1;
	*s = (const char *)*p;
	*n = (size_t)v;
	*p += v;
	return 0;
}

/* Decode a document in place (the strings point into val). */
static int doc_decode(struct doc *d, const void *val, size_t len)
{
	const unsigned char *p = val, *end = p + len;
	uint64_t a, b, c;

	if (!len || p[0] != DOC_VERSION)
		goto bad;
	p++;
	if (aptix_rag__get_varint(&a, &p, end) < 0 ||
	    aptix_rag__get_varint(&b, &p, end) < 0 ||
	    aptix_rag__get_varint(&c, &p, end) < 0 || end - p < 48)
		goto bad;
	d->start = (long)a;
	d->end = (long)b;
	d->len = (uint32_t)c;
	memcpy(d->uuid, p, 16);
	memcpy(d->hash, p + 16, 32);
	p += 48;
	if (get_ref(&d->repo, &d->repo_len, &p, end) ||
	    get_ref(&d->path, &d->path_len, &p, end) ||
	    get_ref(&d->language, &d->language_len, &p, end))
		goto bad;
	d->ztext = p;
	d->ztext_len = (size_t)(end - p);
	return 0;
bad:
	aptix_error_set(APTIX_ERROR_REPOSITORY, "the retrieval index is "
			"corrupt (a chunk record): remove it with 'aptix "
			"index --reset'");
	return APTIX_ECORRUPT;
}

/*
 * The text of a decoded document into out, checked against the SHA-256
 * the record keeps of it: a damaged text is an error, never a different
 * chunk handed to the model or shown by rag-query.
 */
static int doc_text(aptix_buf *out, const struct doc *d)
{
	aptix_otype type;
	aptix_oid h;
	int r = aptix_stored_decode(out, &type, d->ztext, d->ztext_len);

	if (r == 0 && type != APTIX_OBJ_BLOB)
		r = APTIX_ECORRUPT;
	if (r == 0 && (r = aptix_sha256(&h, out->ptr, out->len)) == 0 &&
	    memcmp(h.id, d->hash, 32))
		r = APTIX_ECORRUPT;
	if (r == APTIX_ECORRUPT)
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the retrieval index "
				"is corrupt (the text of a chunk): remove it "
				"with 'aptix index --reset'");
	return r;
}

int aptix_rag__local_doc(aptix_buf *path, aptix_buf *text, const void *val,
			 size_t len)
{
	struct doc d;
	int r;

	if ((r = doc_decode(&d, val, len)) < 0 ||
	    (r = doc_text(text, &d)) < 0)
		return r;
	return aptix_buf_set(path, d.path, d.path_len) < 0 ?
		aptix_error_oom() : 0;
}

static void put_strn(aptix_buf *b, const char *s, size_t n)
{
	aptix_rag__put_varint(b, n);
	aptix_buf_put(b, s, n);
}

static void doc_key(unsigned char key[5], uint32_t docnum)
{
	key[0] = 'd';
	aptix_rag__put_be32(key + 1, docnum);
}

/* --- Applying a batch ----------------------------------------------------- */

struct padd {
	uint32_t doc, tf, len;
};

struct pend {
	const char *term;		/* the map's key */
	struct padd *adds;
	size_t nadds, aadds;
	uint32_t *rems;
	size_t nrems, arems;
};

struct apply {
	aptix_repo *repo;
	const struct rag_settings *s;
	const aptix_buf *ns;		/* of the manifests */
	struct rag_batch *b;
	/* the state of one attempt (the store may replay the write) */
	struct aptix__smap map;		/* term -> index + 1 into pend */
	struct pend *pend;
	size_t npend, apend;
	struct stats st;
	struct rag_counts c;
	aptix_buf key, val, tmp;
};

static void apply_reset(struct apply *a)
{
	size_t i;

	for (i = 0; i < a->npend; i++) {
		free(a->pend[i].adds);
		free(a->pend[i].rems);
	}
	free(a->pend);
	a->pend = NULL;
	a->npend = a->apend = 0;
	aptix__smap_release(&a->map);
	memset(&a->c, 0, sizeof(a->c));
}

static struct pend *pend_get(struct apply *a, const char *term)
{
	struct aptix__smap_ent *e = aptix__smap_get(&a->map, term,
						     strlen(term));
	struct pend *p;

	if (!e)
		return NULL;
	if (e->val)
		return &a->pend[e->val - 1];
	if (aptix__grow(&a->pend, &a->apend, a->npend, sizeof(*a->pend),
			256) < 0)
		return NULL;
	p = &a->pend[a->npend++];
	memset(p, 0, sizeof(*p));
	p->term = e->key;
	e->val = (uint32_t)a->npend;
	return p;
}

static int pend_add(struct apply *a, const char *term, uint32_t doc,
		    uint32_t tf, uint32_t len)
{
	struct pend *p = pend_get(a, term);

	if (!p || aptix__grow(&p->adds, &p->aadds, p->nadds,
			      sizeof(*p->adds), 4) < 0)
		return APTIX_ERROR;
	p->adds[p->nadds].doc = doc;
	p->adds[p->nadds].tf = tf;
	p->adds[p->nadds].len = len;
	p->nadds++;
	return 0;
}

static int pend_rem(struct apply *a, const char *term, uint32_t doc)
{
	struct pend *p = pend_get(a, term);

	if (!p || aptix__grow(&p->rems, &p->arems, p->nrems,
			      sizeof(*p->rems), 4) < 0)
		return APTIX_ERROR;
	p->rems[p->nrems++] = doc;
	return 0;
}

static int remove_doc(struct apply *a, aptix_store_wtxn *w, uint32_t docnum)
{
	aptix_store *s = a->repo->store;
	unsigned char key[5];
	aptix__terms terms;
	struct doc d;
	size_t i;
	int r;

	doc_key(key, docnum);
	r = s->wget(&a->val, w, APTIX_TABLE_RAG, key, sizeof(key));
	if (r == APTIX_ENOTFOUND)
		return 0;
	if (r < 0 || (r = doc_decode(&d, a->val.ptr, a->val.len)) < 0 ||
	    (r = doc_text(&a->tmp, &d)) < 0)
		return r;
	if ((r = aptix__count_terms(&terms, a->tmp.ptr, a->tmp.len,
				      APTIX_TOK_PARTS)) < 0)
		return r;
	for (i = 0; i < terms.n && r == 0; i++)
		r = pend_rem(a, terms.v[i].term, docnum);
	aptix__terms_release(&terms);
	if (r < 0)
		return r;
	if (a->st.chunks)
		a->st.chunks--;
	a->st.tokens = a->st.tokens >= d.len ? a->st.tokens - d.len : 0;
	a->c.chunks_removed++;
	r = s->wdel(w, APTIX_TABLE_RAG, key, sizeof(key));
	return r == APTIX_ENOTFOUND ? 0 : r;
}

static int add_doc(struct apply *a, aptix_store_wtxn *w,
		   const struct rag_file_op *op, size_t i, uint32_t docnum)
{
	aptix_store *s = a->repo->store;
	const aptix_rag__chunk *c = &op->chunks[i];
	const aptix__terms *t = &op->terms[i];
	const char *lang = aptix_rag__language(op->path);
	unsigned char key[5], h[32];
	aptix_oid hash;
	size_t k;
	int r;

	aptix_buf_clear(&a->val);
	aptix_buf_putc(&a->val, DOC_VERSION);
	aptix_rag__put_varint(&a->val, (uint64_t)c->start_line);
	aptix_rag__put_varint(&a->val, (uint64_t)c->end_line);
	aptix_rag__put_varint(&a->val, t->len);
	aptix_buf_put(&a->val, c->uuid, 16);
	if (aptix_oid_fromstr(&hash, c->hash) < 0)
		return APTIX_ERROR;
	memcpy(h, hash.id, 32);
	aptix_buf_put(&a->val, h, 32);
	put_strn(&a->val, a->s->repo_name, strlen(a->s->repo_name));
	put_strn(&a->val, op->path, strlen(op->path));
	put_strn(&a->val, lang, strlen(lang));
	if ((r = aptix_stored_encode(&a->tmp, APTIX_OBJ_BLOB,
				     op->content.ptr + c->off, c->len)) < 0)
		return r;
	aptix_buf_put(&a->val, a->tmp.ptr, a->tmp.len);
	if (aptix_buf_oom(&a->val))
		return aptix_error_oom();
	doc_key(key, docnum);
	if ((r = s->wput(w, APTIX_TABLE_RAG, key, sizeof(key), a->val.ptr,
			 a->val.len)) < 0)
		return r;
	for (k = 0; k < t->n; k++)
		if ((r = pend_add(a, t->v[k].term, docnum, t->v[k].tf,
				  t->len)) < 0)
			return r;
	a->st.chunks++;
	a->st.tokens += t->len;
	a->c.chunks_added++;
	return 0;
}

static int u32_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

static int pend_term_cmp(const void *x, const void *y)
{
	return strcmp(((const struct pend *)x)->term,
		      ((const struct pend *)y)->term);
}

/* Rewrite one term's postings: old minus removals, plus additions. */
static int flush_term(struct apply *a, aptix_store_wtxn *w, struct pend *p)
{
	aptix_store *s = a->repo->store;
	aptix_buf out = APTIX_BUF_INIT, body = APTIX_BUF_INIT;
	const unsigned char *q, *end;
	uint64_t count = 0, n, dd, tf, len;
	uint32_t doc = 0, prev = 0;
	size_t i, kept = 0, ri = 0;
	int r;

	aptix_buf_set(&a->key, "t", 1);
	aptix_buf_puts(&a->key, p->term);
	if (aptix_buf_oom(&a->key))
		return aptix_error_oom();
	r = s->wget(&a->val, w, APTIX_TABLE_RAG, a->key.ptr, a->key.len);
	if (r == APTIX_ENOTFOUND) {
		aptix_buf_clear(&a->val);
		r = 0;
	}
	if (r < 0)
		return r;
	if (p->nrems > 1)
		qsort(p->rems, p->nrems, sizeof(*p->rems), u32_cmp);
	q = (const unsigned char *)a->val.ptr;
	end = q + a->val.len;
	if (a->val.len && aptix_rag__get_varint(&count, &q, end) < 0)
		goto bad;
	for (n = 0; n < count; n++) {
		if (aptix_rag__get_varint(&dd, &q, end) < 0 ||
		    aptix_rag__get_varint(&tf, &q, end) < 0 ||
		    aptix_rag__get_varint(&len, &q, end) < 0 ||
		    dd > UINT32_MAX - doc)
			goto bad;
		doc += (uint32_t)dd;
		while (ri < p->nrems && p->rems[ri] < doc)
			ri++;
		if (ri < p->nrems && p->rems[ri] == doc)
			continue;
		aptix_rag__put_varint(&body, doc - prev);
		aptix_rag__put_varint(&body, tf);
		aptix_rag__put_varint(&body, len);
		prev = doc;
		kept++;
	}
	for (i = 0; i < p->nadds; i++) {
		if (p->adds[i].doc <= prev && kept) {
			/* numbers only grow: cannot happen */
			goto bad;
		}
		aptix_rag__put_varint(&body, p->adds[i].doc - prev);
		aptix_rag__put_varint(&body, p->adds[i].tf);
		aptix_rag__put_varint(&body, p->adds[i].len);
		prev = p->adds[i].doc;
		kept++;
	}
	if (!kept) {
		r = s->wdel(w, APTIX_TABLE_RAG, a->key.ptr, a->key.len);
		r = r == APTIX_ENOTFOUND ? 0 : r;
		goto done;
	}
	aptix_rag__put_varint(&out, kept);
	aptix_buf_put(&out, body.ptr, body.len);
	if (aptix_buf_oom(&out) || aptix_buf_oom(&body)) {
		r = aptix_error_oom();
		goto done;
	}
	r = s->wput(w, APTIX_TABLE_RAG, a->key.ptr, a->key.len, out.ptr,
		    out.len);
done:
	aptix_buf_release(&out);
	aptix_buf_release(&body);
	return r;
bad:
	aptix_buf_release(&out);
	aptix_buf_release(&body);
	aptix_error_set(APTIX_ERROR_REPOSITORY, "the retrieval index is "
			"corrupt (the postings of '%s'): remove it with "
			"'aptix index --reset'", p->term);
	return APTIX_ECORRUPT;
}

static int find_old(const struct rag_manifest *m, const unsigned char *uuid,
		    unsigned char *used)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!used[i] && !memcmp(m->c[i].uuid, uuid, 16)) {
			used[i] = 1;
			return (int)i;
		}
	return -1;
}

static int apply_op(struct apply *a, aptix_store_wtxn *w,
		    struct rag_file_op *op, const aptix_buf *ns)
{
	aptix_store *s = a->repo->store;
	struct rag_manifest old, m;
	unsigned char *used = NULL;
	int r, has_old = 0;
	size_t i;

	memset(&m, 0, sizeof(m));
	if ((r = aptix_rag__manifest_key(&a->key, ns, op->path)) < 0)
		return r;
	r = s->wget(&a->val, w, APTIX_TABLE_RAG, a->key.ptr, a->key.len);
	if (r == 0) {
		if ((r = aptix_rag__manifest_decode(&old, a->val.ptr,
						     a->val.len)) < 0)
			return r;
		has_old = 1;
	} else if (r != APTIX_ENOTFOUND) {
		return r;
	}
	memset(&m, 0, sizeof(m));
	if (op->remove) {
		r = 0;
		if (!has_old)
			return 0;
		for (i = 0; i < old.n && r == 0; i++)
			r = remove_doc(a, w, old.c[i].docnum);
		if (r == 0)
			r = s->wdel(w, APTIX_TABLE_RAG, a->key.ptr,
				    a->key.len);
		if (r == 0) {
			a->c.files_removed++;
			if (a->st.files)
				a->st.files--;
		}
		goto done;
	}
	if (has_old && old.lines == (unsigned)a->s->chunk_lines &&
	    old.overlap == (unsigned)a->s->chunk_overlap &&
	    !strcmp(old.repo, a->s->repo_name) &&
	    !memcmp(old.hash, op->hash, 32)) {
		r = 0;		/* indexed meanwhile by someone else */
		goto done;
	}
	if ((r = aptix_rag__manifest_of(&m, a->s, op)) < 0)
		goto done;
	if (has_old && old.n && !(used = aptix__calloc(old.n, 1))) {
		r = APTIX_ERROR;
		goto done;
	}
	for (i = 0; i < op->nchunks && r == 0; i++) {
		int k = has_old ? find_old(&old, op->chunks[i].uuid, used) : -1;

		if (k >= 0) {
			m.c[i].docnum = old.c[k].docnum;
			continue;
		}
		if (a->st.next == UINT32_MAX) {
			aptix_error_set(APTIX_ERROR_REPOSITORY, "the retrieval "
					"index ran out of chunk numbers: "
					"rebuild it with 'aptix index "
					"--reset'");
			r = APTIX_EFULL;
			break;
		}
		m.c[i].docnum = a->st.next++;
		r = add_doc(a, w, op, i, m.c[i].docnum);
	}
	for (i = 0; has_old && i < old.n && r == 0; i++)
		if (!used[i])
			r = remove_doc(a, w, old.c[i].docnum);
	if (r == 0)
		r = aptix_rag__manifest_encode(&a->val, &m);
	if (r == 0)
		r = s->wput(w, APTIX_TABLE_RAG, a->key.ptr, a->key.len,
			    a->val.ptr, a->val.len);
	if (r == 0) {
		a->c.files_changed++;
		if (!has_old)
			a->st.files++;
	}
done:
	free(used);
	free(m.c);
	if (has_old)
		aptix_rag__manifest_release(&old);
	return r;
}

static int apply_fn(aptix_store_wtxn *w, void *payload)
{
	struct apply *a = payload;
	aptix_store *s = a->repo->store;
	unsigned char st[29];
	size_t i;
	int r;

	apply_reset(a);
	r = s->wget(&a->val, w, APTIX_TABLE_RAG, "s", 1);
	if (r == APTIX_ENOTFOUND) {
		aptix_buf_clear(&a->val);
		r = 0;
	}
	if (r < 0)
		return r;
	stats_decode(&a->st, a->val.ptr, a->val.len);
	for (i = 0; i < a->b->n && r == 0; i++)
		r = apply_op(a, w, &a->b->ops[i], a->ns);
	if (r < 0)
		return r;
	if (a->npend > 1)
		qsort(a->pend, a->npend, sizeof(*a->pend), pend_term_cmp);
	for (i = 0; i < a->npend; i++)
		if ((r = flush_term(a, w, &a->pend[i])) < 0)
			return r;
	stats_encode(st, &a->st);
	return s->wput(w, APTIX_TABLE_RAG, "s", 1, st, sizeof(st));
}

static int local_apply(struct aptix_rag_backend *be, struct rag_batch *b,
		       struct rag_counts *counts)
{
	aptix_repo *repo = be->repo;
	struct apply a;
	int r;

	memset(&a, 0, sizeof(a));
	a.repo = repo;
	a.s = be->s;
	a.ns = &be->ns;
	a.b = b;
	r = repo->store->write(repo->store, apply_fn, &a);
	if (r == 0) {
		counts->chunks_added += a.c.chunks_added;
		counts->chunks_removed += a.c.chunks_removed;
		counts->files_changed += a.c.files_changed;
		counts->files_removed += a.c.files_removed;
	}
	apply_reset(&a);
	aptix_buf_release(&a.key);
	aptix_buf_release(&a.val);
	aptix_buf_release(&a.tmp);
	return r;
}

static int local_count(size_t *files, size_t *chunks,
		       struct aptix_rag_backend *b)
{
	aptix_repo *repo = b->repo;
	aptix_buf v = APTIX_BUF_INIT;
	struct stats st;
	int r;

	*files = *chunks = 0;
	r = repo->store->get(&v, repo->store, APTIX_TABLE_RAG, "s", 1);
	if (r == APTIX_ENOTFOUND) {
		aptix_buf_release(&v);
		return 0;
	}
	if (r == 0) {
		stats_decode(&st, v.ptr, v.len);
		*files = (size_t)st.files;
		*chunks = (size_t)st.chunks;
	}
	aptix_buf_release(&v);
	return r;
}

/* --- Querying ------------------------------------------------------------- */

struct acc_ent {
	uint32_t doc;		/* 0: empty */
	double score;
};

struct acc {
	struct acc_ent *v;
	size_t n, cap;
};

static uint32_t acc_hash(const void *e)
{
	return ((const struct acc_ent *)e)->doc * 2654435761u;
}

static int acc_used(const void *e)
{
	return ((const struct acc_ent *)e)->doc != 0;
}

static int acc_add(struct acc *m, uint32_t doc, double score)
{
	size_t k;

	if (aptix__hash_reserve(&m->v, &m->cap, m->n, sizeof(*m->v), 1024,
				acc_hash, acc_used) < 0)
		return APTIX_ERROR;
	for (k = (doc * 2654435761u) & (m->cap - 1); m->v[k].doc;
	     k = (k + 1) & (m->cap - 1))
		if (m->v[k].doc == doc) {
			m->v[k].score += score;
			return 0;
		}
	m->v[k].doc = doc;
	m->v[k].score = score;
	m->n++;
	return 0;
}

static int acc_cmp(const void *x, const void *y)
{
	const struct acc_ent *a = x, *b = y;

	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return a->doc < b->doc ? -1 : a->doc > b->doc;
}

static int score_term(struct acc *acc, const aptix_buf *post, double N,
		      double avgdl)
{
	const unsigned char *p = (const unsigned char *)post->ptr;
	const unsigned char *end = p + post->len;
	uint64_t count, dd, tf, len, i;
	uint32_t doc = 0;
	double idf;

	if (aptix_rag__get_varint(&count, &p, end) < 0)
		return -1;
	idf = aptix__bm25_idf(N, (double)count);
	for (i = 0; i < count; i++) {
		if (aptix_rag__get_varint(&dd, &p, end) < 0 ||
		    aptix_rag__get_varint(&tf, &p, end) < 0 ||
		    aptix_rag__get_varint(&len, &p, end) < 0 ||
		    dd > UINT32_MAX - doc)
			return -1;
		doc += (uint32_t)dd;
		if (acc_add(acc, doc, aptix__bm25(idf, (double)tf,
						  (double)len, avgdl)) < 0)
			return APTIX_ERROR;
	}
	return 0;
}

static int doc_matches(const struct doc *d, const char *repo_name,
		       char *const *prefixes, size_t nprefixes,
		       const char *language)
{
	char path[4096];
	size_t i;

	if (repo_name && (d->repo_len != strlen(repo_name) ||
			  memcmp(d->repo, repo_name, d->repo_len)))
		return 0;
	if (language && (d->language_len != strlen(language) ||
			 memcmp(d->language, language, d->language_len)))
		return 0;
	if (!nprefixes)
		return 1;
	if (d->path_len >= sizeof(path))
		return 0;
	memcpy(path, d->path, d->path_len);
	path[d->path_len] = '\0';
	for (i = 0; i < nprefixes; i++)
		if (aptix_rag__path_in(path, prefixes[i]))
			return 1;
	return 0;
}

static int local_query(aptix_chunk_set *out, struct aptix_rag_backend *b,
		       const struct rag_query *q)
{
	aptix_store *s = b->repo->store;
	aptix_buf v = APTIX_BUF_INIT, key = APTIX_BUF_INIT;
	aptix_buf text = APTIX_BUF_INIT;
	aptix__terms terms;
	struct stats st;
	struct acc acc;
	size_t i, k, found = 0;
	double avgdl;
	int r;

	memset(&acc, 0, sizeof(acc));
	memset(&terms, 0, sizeof(terms));
	r = s->get(&v, s, APTIX_TABLE_RAG, "s", 1);
	if (r == APTIX_ENOTFOUND) {
		r = 0;
		goto done;
	}
	if (r < 0)
		goto done;
	stats_decode(&st, v.ptr, v.len);
	if (!st.chunks)
		goto done;
	avgdl = st.tokens ? (double)st.tokens / (double)st.chunks : 1;
	if ((r = aptix__count_terms(&terms, q->text, strlen(q->text),
				      APTIX_TOK_PARTS)) < 0)
		goto done;
	for (i = 0; i < terms.n; i++) {
		aptix_buf_set(&key, "t", 1);
		aptix_buf_puts(&key, terms.v[i].term);
		if (aptix_buf_oom(&key)) {
			r = aptix_error_oom();
			goto done;
		}
		r = s->get(&v, s, APTIX_TABLE_RAG, key.ptr, key.len);
		if (r == APTIX_ENOTFOUND)
			continue;
		if (r < 0)
			goto done;
		if ((r = score_term(&acc, &v, (double)st.chunks, avgdl)) < 0) {
			if (r == -1) {
				aptix_error_set(APTIX_ERROR_REPOSITORY, "the "
						"retrieval index is corrupt "
						"(the postings of '%s'): "
						"remove it with 'aptix index "
						"--reset'", terms.v[i].term);
				r = APTIX_ECORRUPT;
			}
			goto done;
		}
	}
	r = 0;
	/* compact the table into a sorted array */
	for (i = k = 0; i < acc.cap; i++)
		if (acc.v[i].doc)
			acc.v[k++] = acc.v[i];
	if (k > 1)
		qsort(acc.v, k, sizeof(*acc.v), acc_cmp);
	for (i = 0; i < k && found < (size_t)q->top_k; i++) {
		unsigned char dk[5];
		struct doc d;
		char id[37], hash[65];
		char *repo_s = NULL, *path_s = NULL, *lang_s = NULL;
		aptix_oid h;

		if (acc.v[i].score < q->threshold || acc.v[i].score <= 0)
			break;
		doc_key(dk, acc.v[i].doc);
		r = s->get(&v, s, APTIX_TABLE_RAG, dk, sizeof(dk));
		if (r == APTIX_ENOTFOUND) {
			r = 0;	/* removed meanwhile */
			continue;
		}
		if (r < 0 || (r = doc_decode(&d, v.ptr, v.len)) < 0)
			goto done;
		if (!doc_matches(&d, q->repo_name, q->prefixes, q->nprefixes,
				 q->language))
			continue;
		aptix_uuid_format(id, d.uuid);
		memcpy(h.id, d.hash, 32);
		aptix_oid_tostr(hash, &h);
		repo_s = aptix__strndup(d.repo, d.repo_len);
		path_s = aptix__strndup(d.path, d.path_len);
		lang_s = aptix__strndup(d.language, d.language_len);
		if (!repo_s || !path_s || !lang_s)
			r = APTIX_ERROR;
		else if ((r = doc_text(&text, &d)) == 0)
			r = aptix_rag__set_add(out, id, repo_s, path_s,
					       d.start, d.end, lang_s, hash,
					       acc.v[i].score, text.ptr,
					       text.len);
		free(repo_s);
		free(path_s);
		free(lang_s);
		if (r < 0)
			goto done;
		found++;
	}
done:
	free(acc.v);
	aptix__terms_release(&terms);
	aptix_buf_release(&v);
	aptix_buf_release(&key);
	aptix_buf_release(&text);
	return r;
}

/* --- The backend ---------------------------------------------------------- */

static int local_reset(struct aptix_rag_backend *b)
{
	static const char *const prefixes[] = { "d", "t", "f", "s" };
	size_t i;
	int r = 0;

	for (i = 0; i < ARRAY_SIZE(prefixes) && r == 0; i++)
		r = aptix_rag__delete_prefix(b->repo, prefixes[i], 1);
	return r;
}

static void local_free(struct aptix_rag_backend *b)
{
	if (!b)
		return;
	aptix_buf_release(&b->ns);
	free(b);
}

int aptix_rag__local_new(struct aptix_rag_backend **out, aptix_repo *repo,
			 const struct rag_settings *s,
			 const struct rag_backend_options *o UNUSED)
{
	struct aptix_rag_backend *b;

	*out = NULL;
	if (!(b = aptix__calloc(1, sizeof(*b))))
		return APTIX_ERROR;
	aptix_rag__backend_init(b, "local", repo, s);
	if (aptix_buf_set(&b->ns, "f", 1) < 0) {
		local_free(b);
		return APTIX_ERROR;
	}
	b->batch_files = RAG_BATCH_FILES;
	b->batch_bytes = RAG_BATCH_BYTES;
	b->needs_terms = 1;
	b->apply = local_apply;
	b->query = local_query;
	b->count = local_count;
	b->reset = local_reset;
	b->free = local_free;
	*out = b;
	return 0;
}
