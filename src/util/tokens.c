/*
 * src/util/tokens.c - see tokens.h. (Moved from the retrieval index,
 * rag/, so that the search index of sessions, a lower layer, counts
 * words the same way.)
 */
#include "util/common.h"
#include "util/tokens.h"

/* --- A string-keyed hash map -------------------------------------------- */

static uint32_t fnv1a(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

static uint32_t smap_hash(const void *e)
{
	return ((const struct aptix__smap_ent *)e)->h;
}

static int smap_used(const void *e)
{
	return ((const struct aptix__smap_ent *)e)->key != NULL;
}

struct aptix__smap_ent *aptix__smap_get(struct aptix__smap *m, const char *key,
					 size_t n)
{
	uint32_t h = fnv1a(key, n);
	size_t k;

	if (aptix__hash_reserve(&m->v, &m->cap, m->n, sizeof(*m->v), 64,
				smap_hash, smap_used) < 0)
		return NULL;
	for (k = h & (m->cap - 1); m->v[k].key; k = (k + 1) & (m->cap - 1))
		if (m->v[k].h == h && !strncmp(m->v[k].key, key, n) &&
		    !m->v[k].key[n])
			return &m->v[k];
	if (!(m->v[k].key = aptix__strndup(key, n)))
		return NULL;
	m->v[k].h = h;
	m->v[k].val = 0;
	m->n++;
	return &m->v[k];
}

struct aptix__smap_ent *aptix__smap_find(const struct aptix__smap *m,
					  const char *key, size_t n)
{
	uint32_t h;
	size_t k;

	if (!m->cap)
		return NULL;
	h = fnv1a(key, n);
	for (k = h & (m->cap - 1); m->v[k].key; k = (k + 1) & (m->cap - 1))
		if (m->v[k].h == h && !strncmp(m->v[k].key, key, n) &&
		    !m->v[k].key[n])
			return &m->v[k];
	return NULL;
}

void aptix__smap_release(struct aptix__smap *m)
{
	size_t i;

	for (i = 0; i < m->cap; i++)
		free(m->v[i].key);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

/* --- Tokens ------------------------------------------------------------ */

enum ckind { K_NONE, K_LOWER, K_UPPER, K_DIGIT, K_UNDER };

static enum ckind ckind(unsigned char c)
{
	if (c >= 'a' && c <= 'z')
		return K_LOWER;
	if (c >= 'A' && c <= 'Z')
		return K_UPPER;
	if (c >= '0' && c <= '9')
		return K_DIGIT;
	if (c == '_')
		return K_UNDER;
	if (c >= 0x80)
		return K_LOWER;	/* non-ASCII letters: no case to split at */
	return K_NONE;
}

/* Is there a part boundary between s[q - 1] and s[q] (q < end)? */
static int boundary(const unsigned char *s, size_t q, size_t end)
{
	enum ckind a = ckind(s[q - 1]), b = ckind(s[q]);

	if ((a == K_DIGIT) != (b == K_DIGIT))
		return 1;
	if (a == K_LOWER && b == K_UPPER)
		return 1;
	/* HTTPServer: the last capital of a run starts the next part */
	if (a == K_UPPER && b == K_UPPER && q + 1 < end &&
	    ckind(s[q + 1]) == K_LOWER)
		return 1;
	return 0;
}

/* s[0..n) (n <= APTIX_TERM_MAX) lowercased (ASCII) to cb. */
static int emit_lower(const unsigned char *s, size_t n, aptix__term_cb cb,
		      void *payload)
{
	char t[APTIX_TERM_MAX + 1];
	size_t i;

	for (i = 0; i < n; i++)
		t[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
	t[n] = '\0';
	return cb(t, n, payload);
}

static int emit_term(const unsigned char *s, size_t n,
		     aptix__term_cb cb, void *payload)
{
	n = aptix_utf8_cut((const char *)s, n, APTIX_TERM_MAX);
	return n < 2 ? 0 : emit_lower(s, n, cb, payload);
}

int aptix__tok_byte(unsigned char c)
{
	return ckind(c) != K_NONE;
}

/* WHOLE: the identifier s[0..n) lowercased, or NULL when too long. */
static int emit_whole(const unsigned char *s, size_t n, aptix__term_cb cb,
		      void *payload)
{
	if (n > APTIX_TERM_MAX)
		return cb(NULL, n, payload);
	return n < 2 ? 0 : emit_lower(s, n, cb, payload);
}

/* Does the identifier s[0..n) split into several parts? */
static int several_parts(const unsigned char *s, size_t n)
{
	size_t q;

	for (q = 1; q < n; q++)
		if (s[q] == '_' || s[q - 1] == '_' || boundary(s, q, n))
			return 1;
	return 0;
}

int aptix__tokenize(const char *text, size_t len, enum aptix_tok_mode mode,
		    aptix__term_cb cb, void *payload)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0, j, p, q, nparts;
	int r;

	while (i < len) {
		if (ckind(s[i]) == K_NONE) {
			i++;
			continue;
		}
		for (j = i; j < len && ckind(s[j]) != K_NONE; j++)
			;
		if (mode != APTIX_TOK_PARTS &&
		    (r = emit_whole(s + i, j - i, cb, payload)))
			return r;
		if (mode == APTIX_TOK_WHOLE || (mode == APTIX_TOK_SEARCH &&
						!several_parts(s + i, j - i))) {
			i = j;
			continue;
		}
		nparts = 0;
		for (p = i; p < j;) {
			if (s[p] == '_') {
				p++;
				continue;
			}
			for (q = p + 1; q < j && s[q] != '_' &&
			     !boundary(s, q, j); q++)
				;
			nparts++;
			if ((r = emit_term(s + p, q - p, cb, payload)))
				return r;
			p = q;
		}
		if (mode == APTIX_TOK_PARTS && nparts > 1 &&
		    (r = emit_term(s + i, j - i, cb, payload)))
			return r;
		i = j;
	}
	return 0;
}

struct count_ctx {
	struct aptix__smap map;
	uint32_t len;
	int long_words;
};

static int count_cb(const char *term, size_t len, void *payload)
{
	struct count_ctx *c = payload;
	struct aptix__smap_ent *e;

	if (!term) {
		c->long_words = 1;
		return 0;
	}
	if (!(e = aptix__smap_get(&c->map, term, len)))
		return APTIX_ERROR;
	e->val++;
	c->len++;
	return 0;
}

static int tf_cmp(const void *a, const void *b)
{
	return strcmp(((const struct aptix__tf *)a)->term,
		      ((const struct aptix__tf *)b)->term);
}

int aptix__count_terms(aptix__terms *out, const char *text, size_t len,
		       enum aptix_tok_mode mode)
{
	struct count_ctx c;
	size_t i, n = 0;
	int r;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	if ((r = aptix__tokenize(text, len, mode, count_cb, &c)) < 0)
		goto done;
	if (c.map.n && !(out->v = aptix__calloc(c.map.n, sizeof(*out->v)))) {
		r = APTIX_ERROR;
		goto done;
	}
	for (i = 0; i < c.map.cap; i++) {
		if (!c.map.v[i].key)
			continue;
		out->v[n].term = c.map.v[i].key;
		out->v[n].tf = c.map.v[i].val;
		c.map.v[i].key = NULL;
		n++;
	}
	out->n = n;
	out->len = c.len;
	out->long_words = c.long_words;
	if (n > 1)
		qsort(out->v, n, sizeof(*out->v), tf_cmp);
done:
	aptix__smap_release(&c.map);
	if (r < 0)
		aptix__terms_release(out);
	return r;
}

void aptix__terms_release(aptix__terms *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n; i++)
		free(t->v[i].term);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* --- BM25 ---------------------------------------------------------------- */

double aptix__bm25_idf(double n, double df)
{
	return aptix__ln(1 + (n - df + 0.5) / (df + 0.5));
}

double aptix__bm25(double idf, double tf, double len, double avgdl)
{
	double norm = 1 - APTIX_BM25_B + APTIX_BM25_B * len /
		(avgdl > 0 ? avgdl : 1);

	return idf * tf * (APTIX_BM25_K1 + 1) / (tf + APTIX_BM25_K1 * norm);
}
