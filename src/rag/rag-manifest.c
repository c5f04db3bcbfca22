/*
 * src/rag/rag-manifest.c - the records of the rag table shared by the
 * backends (see rag-int.h for the layout): varints, big-endian numbers,
 * file manifests, counting them, and deleting keys in short writes.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "rag/rag-int.h"
#include "store/odb-store.h"
#include "object/zstream.h"
#include "aptix/oid.h"

void aptix_rag__put_varint(aptix_buf *b, uint64_t v)
{
	aptix__put_varint(b, v);
}

int aptix_rag__get_varint(uint64_t *v, const unsigned char **p,
			  const unsigned char *end)
{
	uint64_t x = 0;
	unsigned shift = 0;

	while (*p < end) {
		unsigned char c = *(*p)++;

		if (shift > 63)
			return -1;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
		shift += 7;
	}
	return -1;
}

void aptix_rag__put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

uint32_t aptix_rag__get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		(uint32_t)p[2] << 8 | p[3];
}

int aptix_rag__manifest_key(aptix_buf *key, const aptix_buf *ns,
			    const char *path)
{
	size_t n = strlen(path);

	aptix_buf_set(key, ns->ptr, ns->len);
	if (ns->len + n <= RAG_KEY_PATH_MAX) {
		aptix_buf_put(key, path, n);
	} else {
		aptix_oid h;
		int r;

		if ((r = aptix_sha256(&h, path, n)) < 0)
			return r;
		aptix_buf_put(key, path, RAG_KEY_PATH_CUT);
		aptix_buf_putc(key, '\0');
		aptix_buf_put(key, h.id, sizeof(h.id));
	}
	return aptix_buf_oom(key) ? aptix_error_oom() : 0;
}

static void put_str(aptix_buf *b, const char *s)
{
	size_t n = strlen(s);

	aptix_rag__put_varint(b, n);
	aptix_buf_put(b, s, n);
}

int aptix_rag__manifest_encode(aptix_buf *out, const struct rag_manifest *m)
{
	unsigned char h[5];
	size_t i;

	aptix_buf_clear(out);
	h[0] = RAG_MANIFEST_VERSION;
	h[1] = (unsigned char)(m->lines >> 8);
	h[2] = (unsigned char)m->lines;
	h[3] = (unsigned char)(m->overlap >> 8);
	h[4] = (unsigned char)m->overlap;
	aptix_buf_put(out, h, 5);
	aptix_buf_put(out, m->hash, 32);
	put_str(out, m->repo);
	put_str(out, m->path);
	aptix_rag__put_varint(out, m->n);
	for (i = 0; i < m->n; i++) {
		aptix_buf_put(out, m->c[i].uuid, 16);
		aptix_rag__put_varint(out, m->c[i].docnum);
	}
	return aptix_buf_oom(out) ? aptix_error_oom() : 0;
}

static int get_str(char **out, const unsigned char **p,
		   const unsigned char *end)
{
	uint64_t n;

	if (aptix_rag__get_varint(&n, p, end) < 0 ||
	    n > (uint64_t)(end - *p))
		return -1;
	if (!(*out = aptix__strndup((const char *)*p, (size_t)n)))
		return APTIX_ERROR;
	*p += n;
	return 0;
}

static int corrupt(const char *what)
{
	aptix_error_set(APTIX_ERROR_REPOSITORY, "the retrieval index is "
			"corrupt (%s): remove it with 'aptix index --reset'",
			what);
	return APTIX_ECORRUPT;
}

int aptix_rag__manifest_decode(struct rag_manifest *m, const void *val,
			       size_t len)
{
	const unsigned char *p = val, *end = p + len;
	uint64_t n, d;
	size_t i;
	int r;

	memset(m, 0, sizeof(*m));
	if (len < 37 || p[0] != RAG_MANIFEST_VERSION)
		return corrupt("a file record");
	m->lines = (unsigned)p[1] << 8 | p[2];
	m->overlap = (unsigned)p[3] << 8 | p[4];
	memcpy(m->hash, p + 5, 32);
	p += 37;
	if ((r = get_str(&m->repo, &p, end)) ||
	    (r = get_str(&m->path, &p, end)))
		goto bad;
	if (aptix_rag__get_varint(&n, &p, end) < 0 ||
	    n > (uint64_t)(end - p) / 17) {
		r = -1;
		goto bad;
	}
	if (n && !(m->c = aptix__calloc((size_t)n, sizeof(*m->c)))) {
		r = APTIX_ERROR;
		goto bad;
	}
	m->n = (size_t)n;
	for (i = 0; i < m->n; i++) {
		if (end - p < 16) {
			r = -1;
			goto bad;
		}
		memcpy(m->c[i].uuid, p, 16);
		p += 16;
		if (aptix_rag__get_varint(&d, &p, end) < 0 ||
		    d > UINT32_MAX) {
			r = -1;
			goto bad;
		}
		m->c[i].docnum = (uint32_t)d;
	}
	return 0;
bad:
	aptix_rag__manifest_release(m);
	return r == -1 ? corrupt("a file record") : r;
}

int aptix_rag__manifest_of(struct rag_manifest *m,
			   const struct rag_settings *s,
			   const struct rag_file_op *op)
{
	size_t i;

	memset(m, 0, sizeof(*m));
	m->lines = (unsigned)s->chunk_lines;
	m->overlap = (unsigned)s->chunk_overlap;
	memcpy(m->hash, op->hash, 32);
	m->repo = s->repo_name;
	m->path = op->path;
	m->n = op->nchunks;
	if (m->n && !(m->c = aptix__calloc(m->n, sizeof(*m->c))))
		return APTIX_ERROR;
	for (i = 0; i < m->n; i++)
		memcpy(m->c[i].uuid, op->chunks[i].uuid, 16);
	return 0;
}

void aptix_rag__manifest_release(struct rag_manifest *m)
{
	free(m->repo);
	free(m->path);
	free(m->c);
	memset(m, 0, sizeof(*m));
}

struct delete_prefix_ctx {
	const unsigned char *prefix;
	size_t len;
	aptix_buf keys;		/* varint length + key, many */
	size_t nkeys;
};

static int collect_keys_cb(const void *key, size_t klen, const void *val,
			   size_t vlen, void *payload)
{
	struct delete_prefix_ctx *c = payload;

	(void)val;
	(void)vlen;
	if (klen < c->len || memcmp(key, c->prefix, c->len))
		return APTIX_ITEROVER;
	aptix_rag__put_varint(&c->keys, klen);
	aptix_buf_put(&c->keys, key, klen);
	c->nkeys++;
	if (c->nkeys >= 4096)
		return APTIX_ITEROVER;
	return aptix_buf_oom(&c->keys) ? aptix_error_oom() : 0;
}

static int delete_keys_fn(aptix_store_wtxn *w, void *payload)
{
	struct delete_prefix_ctx *c = payload;
	const unsigned char *p = (const unsigned char *)c->keys.ptr;
	const unsigned char *end = p + c->keys.len;
	aptix_store *s = aptix_store_of_wtxn(w);
	uint64_t n;
	int r;

	while (p < end) {
		if (aptix_rag__get_varint(&n, &p, end) < 0)
			return APTIX_ERROR;
		r = s->wdel(w, APTIX_TABLE_RAG, p, (size_t)n);
		if (r < 0 && r != APTIX_ENOTFOUND)
			return r;
		p += n;
	}
	return 0;
}

/* One key of the table written (val) or deleted (val NULL), alone. */
struct key_write {
	const void *key, *val;
	size_t klen, vlen;
};

static int key_write_fn(aptix_store_wtxn *w, void *payload)
{
	struct key_write *c = payload;
	aptix_store *s = aptix_store_of_wtxn(w);
	int r;

	if (c->val)
		return s->wput(w, APTIX_TABLE_RAG, c->key, c->klen, c->val,
			       c->vlen);
	r = s->wdel(w, APTIX_TABLE_RAG, c->key, c->klen);
	return r == APTIX_ENOTFOUND ? 0 : r;
}

int aptix_rag__delete_key(aptix_repo *repo, const void *key, size_t len)
{
	struct key_write c = { key, NULL, len, 0 };

	return repo->store->write(repo->store, key_write_fn, &c);
}

int aptix_rag__put_key(aptix_repo *repo, const void *key, size_t klen,
		       const void *val, size_t vlen)
{
	struct key_write c = { key, val, klen, vlen };

	return repo->store->write(repo->store, key_write_fn, &c);
}

int aptix_rag__delete_prefix(aptix_repo *repo, const void *prefix,
			     size_t len)
{
	struct delete_prefix_ctx c;
	aptix_store *s = repo->store;
	int r;

	memset(&c, 0, sizeof(c));
	c.prefix = prefix;
	c.len = len;
	for (;;) {
		aptix_buf_clear(&c.keys);
		c.nkeys = 0;
		r = s->iter(s, APTIX_TABLE_RAG, prefix, len, 0, collect_keys_cb,
			    &c);
		if (r < 0 || !c.nkeys)
			break;
		if ((r = s->write(s, delete_keys_fn, &c)) < 0)
			break;
	}
	aptix_buf_release(&c.keys);
	return r;
}

struct manifest_walk {
	const void *prefix;
	size_t plen;
	aptix_rag__manifest_fn fn;
	void *payload;
};

static int manifest_walk_cb(const void *key, size_t klen, const void *val,
			    size_t vlen, void *payload)
{
	struct manifest_walk *w = payload;
	struct rag_manifest m;
	int r;

	if (klen < w->plen || memcmp(key, w->prefix, w->plen))
		return APTIX_ITEROVER;
	if ((r = aptix_rag__manifest_decode(&m, val, vlen)) < 0)
		return r;
	r = w->fn(&m, w->payload);
	aptix_rag__manifest_release(&m);
	return r;
}

int aptix_rag__manifest_each(aptix_repo *repo, const void *prefix,
			     size_t plen, aptix_rag__manifest_fn fn,
			     void *payload)
{
	struct manifest_walk w = { prefix, plen, fn, payload };

	return repo->store->iter(repo->store, APTIX_TABLE_RAG, prefix, plen, 0,
				 manifest_walk_cb, &w);
}

struct manifest_count {
	size_t files, chunks;
};

static int count_manifest(struct rag_manifest *m, void *payload)
{
	struct manifest_count *c = payload;

	c->files++;
	c->chunks += m->n;
	return 0;
}

int aptix_rag__count_manifests(size_t *files, size_t *chunks,
			       aptix_repo *repo, const aptix_buf *ns)
{
	struct manifest_count c = { 0, 0 };
	int r = aptix_rag__manifest_each(repo, ns->ptr, ns->len,
					 count_manifest, &c);

	*files = c.files;
	*chunks = c.chunks;
	return r;
}
