/*
 * src/index/search.c - the search index of sessions (aptix/search.h).
 *
 * The words of a session (its title, instruction, answer, tool-call
 * names and arguments, tool outputs: what `log -S` reads) are counted
 * whole, and the parts of a camelCase or snake_case word too
 * (util/tokens.h, APTIX_TOK_SEARCH), when the session's object is
 * written, and kept in the index's search table in the same write
 * (txn.c calls aptix_index__search_apply after the session records).
 * Keys (objects-format.md, "The search index"):
 *
 *   "s"                 state: u8 version 1, be32 next ordinal, be64
 *                       sessions, be64 words (for BM25's mean length)
 *   "i" id(32)          be32 the session's ordinal
 *   "o" be32 ordinal    the session's id (32 bytes), varint words
 *   "t" term            the term's open postings: varint sessions
 *                       holding it (df), varint last ordinal, varint
 *                       count, then count pairs varint ordinal delta
 *                       (the first from 0), varint occurrences (tf)
 *   "c" term NUL be32   a sealed run of SEAL postings (pairs as above),
 *                       keyed by its first ordinal
 *
 *   "k" id(32)          "": a session created before its parent (clocks
 *                       skewed), or whose parent is not indexed
 *   "K"                 be64: the sessions the index held when the "k"
 *                       keys were last known complete (a search index
 *                       written by an aptix that kept none has no "K",
 *                       or one short of the state's count)
 *
 * The empty term ("t" alone) lists the sessions with a word longer than
 * APTIX_TERM_MAX bytes: they may hold any text. Ordinals are given in
 * the order sessions are indexed and never reused; a posting list only
 * grows at its end, so a turn rewrites one short value per word (the
 * open run) and a full run is sealed under a key of its own.
 *
 * The state exists once the index covers every session: a new store
 * makes it with its first session, `aptix reindex` with the rest; a
 * store indexed before it existed has none, and readers then scan.
 * A session an older aptix wrote has no "i" key: a filter lets it
 * through (log -S reads it), so the filter is exact without a global
 * staleness mark.
 */
#include "util/common.h"
#include "util/env.h"
#include "util/tokens.h"
#include "index/index.h"
#include "object/zstream.h"
#include "aptix/search.h"
#include "aptix/toolcall.h"
#include "aptix/odb.h"

#define STATE_VERSION 2		/* 1: no blocks (read the same) */
#define STATE_LEN 21
#define SEAL 128			/* postings in a sealed run */

struct state {
	uint32_t next;
	uint64_t docs, words;
};

static int state_decode(struct state *st, const aptix_buf *v)
{
	const unsigned char *p = (const unsigned char *)v->ptr;

	if (v->len < STATE_LEN || !p[0] || p[0] > STATE_VERSION) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the search index's "
				"state is corrupt: run 'aptix reindex'");
		return APTIX_ECORRUPT;
	}
	st->next = aptix__get_be32(p + 1);
	st->docs = aptix__get_be64(p + 5);
	st->words = aptix__get_be64(p + 13);
	return 0;
}

static int state_put(aptix_index_backend *ix, aptix_backend_txn *tx,
		     const struct state *st)
{
	unsigned char v[STATE_LEN];

	v[0] = STATE_VERSION;
	aptix__put_be32(v + 1, st->next);
	aptix__put_be64(v + 5, st->docs);
	aptix__put_be64(v + 13, st->words);
	return ix->put(ix, tx, APTIX_INDEX_SEARCH, "s", 1, v, sizeof(v));
}

/* --- the words of a session ----------------------------------------------- */

static void read_text(aptix_buf *out, const struct aptix_index_reader *rd,
		      const aptix_oid *id)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_otype type;

	if (aptix_oid_is_zero(id))
		return;
	if (rd->read(&b, &type, rd->ctx, id) == 0 && type == APTIX_OBJ_BLOB) {
		aptix_buf_put(out, b.ptr, b.len);
		aptix_buf_putc(out, '\n');
	}
	aptix_error_clear();	/* purged since: not searched */
	aptix_buf_release(&b);
}

static void tool_texts(aptix_buf *out, const struct aptix_index_reader *rd,
		       const aptix_turn *t)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_otype type;
	size_t i;

	for (i = 0; i < t->ntool_calls; i++) {
		aptix_tool_call c;

		aptix_tool_call_init(&c);
		if (rd->read(&b, &type, rd->ctx, &t->tool_calls[i]) == 0 &&
		    aptix_tool_call_parse(&c, b.ptr, b.len) == 0)
			aptix_buf_printf(out, "%s\n%s\n", c.name ? c.name : "",
					 c.arguments ? c.arguments : "");
		aptix_tool_call_release(&c);
	}
	for (i = 0; i < t->ntool_results; i++) {
		aptix_tool_result res;

		aptix_tool_result_init(&res);
		if (rd->read(&b, &type, rd->ctx, &t->tool_results[i]) == 0 &&
		    aptix_tool_result_parse(&res, b.ptr, b.len) == 0)
			read_text(out, rd, &res.output);
		aptix_tool_result_release(&res);
	}
	aptix_error_clear();
	aptix_buf_release(&b);
}

int aptix_index__search_prepare(aptix__terms *out,
				const struct aptix_index_reader *rd,
				const aptix_session *s, const aptix_turn *t)
{
	aptix_buf text = APTIX_BUF_INIT;
	int r;

	if (s->title)
		aptix_buf_printf(&text, "%s\n", s->title);
	if (t) {
		read_text(&text, rd, &t->instruction);
		read_text(&text, rd, &t->answer);
		tool_texts(&text, rd, t);
	}
	r = aptix_buf_oom(&text) ? APTIX_ERROR :
		aptix__count_terms(out, text.ptr, text.len, APTIX_TOK_SEARCH);
	aptix_buf_release(&text);
	return r;
}

/* --- writing postings ----------------------------------------------------- */

struct post {
	uint32_t ord, tf;
};

/* What a write adds, term by term, before it is merged into the table. */
struct pending {
	struct aptix__smap terms;	/* term -> index in v, plus 1 */
	struct plist {
		char *term;
		struct post *p;
		size_t n, alloc;
	} *v;
	size_t n, alloc, bytes;
};

static int pend_add(struct pending *pd, const char *term, size_t len,
		    uint32_t ord, uint32_t tf)
{
	struct aptix__smap_ent *e = aptix__smap_get(&pd->terms, term, len);
	struct plist *l;

	if (!e)
		return APTIX_ERROR;
	if (!e->val) {
		if (aptix__grow(&pd->v, &pd->alloc, pd->n, sizeof(*pd->v),
				64) < 0)
			return APTIX_ERROR;
		memset(&pd->v[pd->n], 0, sizeof(pd->v[0]));
		pd->v[pd->n].term = e->key;	/* owned by the map */
		e->val = (uint32_t)++pd->n;
	}
	l = &pd->v[e->val - 1];
	if (aptix__grow(&l->p, &l->alloc, l->n, sizeof(*l->p), 4) < 0)
		return APTIX_ERROR;
	l->p[l->n].ord = ord;
	l->p[l->n++].tf = tf;
	pd->bytes += sizeof(*l->p);
	return 0;
}

static void pend_release(struct pending *pd)
{
	size_t i;

	for (i = 0; i < pd->n; i++)
		free(pd->v[i].p);
	free(pd->v);
	aptix__smap_release(&pd->terms);
	memset(pd, 0, sizeof(*pd));
}

/* The pairs of a run (first delta from 0) onto v. */
static int decode_run(struct post **v, size_t *n, size_t *alloc,
		      const unsigned char *p, const unsigned char *end,
		      uint64_t count)
{
	uint64_t d, tf, ord = 0, i;

	/* count UINT64_MAX: as many as there are (a sealed run) */
	for (i = 0; count == UINT64_MAX ? p < end : i < count; i++) {
		if (aptix__get_varint(&d, &p, end) < 0 ||
		    aptix__get_varint(&tf, &p, end) < 0 ||
		    ord + d > UINT32_MAX || tf > UINT32_MAX) {
			aptix_error_set(APTIX_ERROR_REPOSITORY, "a posting "
					"list of the search index is corrupt: "
					"run 'aptix reindex'");
			return APTIX_ECORRUPT;
		}
		ord += d;
		if (aptix__grow(v, alloc, *n, sizeof(**v), 16) < 0)
			return APTIX_ERROR;
		(*v)[*n].ord = (uint32_t)ord;
		(*v)[(*n)++].tf = (uint32_t)tf;
	}
	return 0;
}

static void encode_run(aptix_buf *b, const struct post *v, size_t n)
{
	uint32_t prev = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		aptix__put_varint(b, v[i].ord - prev);
		aptix__put_varint(b, v[i].tf);
		prev = v[i].ord;
	}
}

/* An open run: df, last, count, pairs. */
struct open_run {
	uint64_t df, last;
	struct post *v;
	size_t n, alloc;
};

static int open_decode(struct open_run *o, const void *val, size_t len)
{
	const unsigned char *p = val, *end = p + len;
	uint64_t count;

	if (aptix__get_varint(&o->df, &p, end) < 0 ||
	    aptix__get_varint(&o->last, &p, end) < 0 ||
	    aptix__get_varint(&count, &p, end) < 0 || count > len) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "a posting list of "
				"the search index is corrupt: run 'aptix "
				"reindex'");
		return APTIX_ECORRUPT;
	}
	return decode_run(&o->v, &o->n, &o->alloc, p, end, count);
}

static int term_key(aptix_buf *k, char kind, const char *term, size_t len)
{
	aptix_buf_clear(k);
	aptix_buf_putc(k, kind);
	aptix_buf_put(k, term, len);
	return aptix_buf_oom(k) ? APTIX_ERROR : 0;
}

/* Merge l into the table: its open run grows, full runs are sealed. */
static int merge_term(aptix_index_backend *ix, aptix_backend_txn *tx,
		      const struct plist *l, aptix_buf *k, aptix_buf *v)
{
	struct open_run o;
	size_t tlen = strlen(l->term), i, pos = 0;
	unsigned char be[4];
	int r;

	memset(&o, 0, sizeof(o));
	if ((r = term_key(k, 't', l->term, tlen)) < 0)
		return r;
	r = ix->get(v, ix, tx, APTIX_INDEX_SEARCH, k->ptr, k->len);
	if (r == 0)
		r = open_decode(&o, v->ptr, v->len);
	else if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		r = 0;
	}
	for (i = 0; r == 0 && i < l->n; i++) {
		if (o.df && l->p[i].ord <= o.last)
			continue;	/* cannot happen: ordinals grow */
		if (aptix__grow(&o.v, &o.alloc, o.n, sizeof(*o.v), 16) < 0)
			r = APTIX_ERROR;
		else {
			o.v[o.n++] = l->p[i];
			o.df++;
			o.last = l->p[i].ord;
		}
	}
	while (r == 0 && o.n - pos >= SEAL) {
		term_key(k, 'c', l->term, tlen);
		aptix_buf_putc(k, '\0');
		aptix__put_be32(be, o.v[pos].ord);
		aptix_buf_put(k, be, 4);
		aptix_buf_clear(v);
		encode_run(v, o.v + pos, SEAL);
		r = aptix_buf_oom(k) || aptix_buf_oom(v) ? APTIX_ERROR :
			ix->put(ix, tx, APTIX_INDEX_SEARCH, k->ptr, k->len,
				v->ptr, v->len);
		pos += SEAL;
	}
	if (r == 0) {
		term_key(k, 't', l->term, tlen);
		aptix_buf_clear(v);
		aptix__put_varint(v, o.df);
		aptix__put_varint(v, o.last);
		aptix__put_varint(v, o.n - pos);
		encode_run(v, o.v + pos, o.n - pos);
		r = aptix_buf_oom(k) || aptix_buf_oom(v) ? APTIX_ERROR :
			ix->put(ix, tx, APTIX_INDEX_SEARCH, k->ptr, k->len,
				v->ptr, v->len);
	}
	free(o.v);
	return r;
}

/* --- blocks of rare terms ------------------------------------------------- */

/*
 * A term of at most BLOCK_DF postings is kept with its neighbours in a
 * block, "b" and the block's first term: entries in ascending order of
 * term, each <shared: varint> <suffix length: varint> <suffix>
 * <df: varint> <df postings>, the term being the first shared bytes of
 * the entry before (of the key's term for the first, which is that
 * term: shared its length, no suffix) and the suffix. One record per
 * term cost more than the term's postings; most terms of a session
 * (identifiers, numbers) are in no other. A block longer than BLOCK_MAX
 * bytes is cut in pieces; a term past BLOCK_DF postings moves to a "t"
 * key of its own.
 */
#define BLOCK_DF 16
#define BLOCK_MAX 1024

struct bentry {
	char *term;
	size_t tlen;
	struct post *v;
	size_t n, alloc;
};

/* One entry of a block: its term, its df and the bytes of its postings. */
typedef int (*entry_fn)(const char *term, size_t tlen, uint64_t df,
			const unsigned char *p, const unsigned char *end,
			void *payload);

static int block_corrupt(void)
{
	aptix_error_set(APTIX_ERROR_REPOSITORY, "a block of the search index "
			"is corrupt: run 'aptix reindex'");
	return APTIX_ECORRUPT;
}

static int term_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

/*
 * The entries of block (key "b" term, value val) to fn, checked: terms
 * strictly ascending, the first the key's, each df 1 to BLOCK_DF.
 */
static int block_walk(const void *key, size_t klen, const void *val,
		      size_t vlen, entry_fn fn, void *payload)
{
	const unsigned char *p = val, *end = p + vlen, *q;
	unsigned char term[APTIX_TERM_MAX + 1];
	uint64_t shared, slen, df, x, i;
	size_t tlen;
	int r = 0, first = 1;

	if (!klen || klen - 1 > APTIX_TERM_MAX || !vlen)
		return block_corrupt();
	tlen = klen - 1;
	memcpy(term, (const unsigned char *)key + 1, tlen);
	while (r == 0 && p < end) {
		if (aptix__get_varint(&shared, &p, end) < 0 ||
		    aptix__get_varint(&slen, &p, end) < 0 || shared > tlen ||
		    slen > (uint64_t)(end - p) ||
		    shared + slen > APTIX_TERM_MAX)
			return block_corrupt();
		/* the first: the key's term; the others: past the one before */
		if (first ? shared != tlen || slen : !slen ||
		    (shared < tlen && p[0] <= term[shared]))
			return block_corrupt();
		memcpy(term + shared, p, slen);
		p += slen;
		tlen = (size_t)(shared + slen);
		if (aptix__get_varint(&df, &p, end) < 0 || !df ||
		    df > BLOCK_DF)
			return block_corrupt();
		for (q = p, i = 0; i < 2 * df; i++)
			if (aptix__get_varint(&x, &p, end) < 0)
				return block_corrupt();
		r = fn((const char *)term, tlen, df, q, p, payload);
		first = 0;
	}
	return r;
}

/* A block being changed: its entries and its key. */
struct block {
	aptix_buf key;		/* "b" and its first term; empty: a new one */
	int loaded, dirty;
	struct bentry *e;
	size_t n, alloc;
};

static void block_clear(struct block *b)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		free(b->e[i].term);
		free(b->e[i].v);
	}
	b->n = 0;
	b->loaded = b->dirty = 0;
	aptix_buf_clear(&b->key);
}

static void block_release(struct block *b)
{
	block_clear(b);
	free(b->e);
	aptix_buf_release(&b->key);
}

static int load_entry(const char *term, size_t tlen, uint64_t df,
		      const unsigned char *p, const unsigned char *end,
		      void *payload)
{
	struct block *b = payload;
	struct bentry *e;

	if (aptix__grow(&b->e, &b->alloc, b->n, sizeof(*b->e), 16) < 0)
		return APTIX_ERROR;
	e = &b->e[b->n];
	memset(e, 0, sizeof(*e));
	if (!(e->term = aptix__malloc(tlen + 1)))
		return APTIX_ERROR;
	memcpy(e->term, term, tlen);
	e->term[tlen] = '\0';
	e->tlen = tlen;
	b->n++;
	return decode_run(&e->v, &e->n, &e->alloc, p, end, df);
}

static int block_store(struct block *b, aptix_index_backend *ix,
		       aptix_backend_txn *tx, aptix_buf *k, aptix_buf *v);

/* A seek for a block: the first "b" key met, and its value (want_val). */
struct seek {
	aptix_buf key, val;
	int found, want_val;
};

static int seek_cb(const void *key, size_t klen, const void *val,
		   size_t vlen, void *payload)
{
	struct seek *s = payload;

	if (!klen || ((const char *)key)[0] != 'b')
		return APTIX_ITEROVER;
	aptix_buf_set(&s->key, key, klen);
	if (s->want_val)
		aptix_buf_set(&s->val, val, vlen);
	s->found = 1;
	return aptix_buf_oom(&s->key) || aptix_buf_oom(&s->val) ?
		APTIX_ERROR : APTIX_ITEROVER;
}

/*
 * Find the block that a term of key "b" term belongs in (the last at or
 * before k: a write walks its records only backwards) into s. 0, found
 * or not (the term comes before every block).
 */
static int seek_block(struct seek *s, aptix_index_backend *ix,
		      aptix_backend_txn *tx, const aptix_buf *k)
{
	int r;

	s->found = 0;
	aptix_buf_clear(&s->key);
	r = ix->iterate(ix, tx, APTIX_INDEX_SEARCH, k->ptr, k->len,
			APTIX_INDEX_ITER_REVERSE | APTIX_INDEX_ITER_ONE,
			seek_cb, s);
	return r == APTIX_ITEROVER ? 0 : r;
}

/*
 * Make b the block term belongs in (s: its seek): kept when it is that
 * one already (its key in the table unchanged until it is stored),
 * else b is stored and that one loaded.
 */
static int block_switch(struct block *b, struct seek *s,
			aptix_index_backend *ix, aptix_backend_txn *tx,
			const char *term, size_t tlen, aptix_buf *k,
			aptix_buf *v)
{
	int r;

	s->want_val = 0;
	if ((r = term_key(k, 'b', term, tlen)) < 0 ||
	    (r = seek_block(s, ix, tx, k)) < 0)
		return r;
	if (b->loaded && s->key.len == b->key.len &&
	    !memcmp(s->key.ptr, b->key.ptr, s->key.len))
		return 0;
	if ((r = block_store(b, ix, tx, k, v)) < 0 ||
	    (r = term_key(k, 'b', term, tlen)) < 0)
		return r;
	s->want_val = 1;
	if ((r = seek_block(s, ix, tx, k)) < 0)
		return r;
	if (s->found) {
		aptix_buf_set(&b->key, s->key.ptr, s->key.len);
		r = aptix_buf_oom(&b->key) ? APTIX_ERROR :
			block_walk(s->key.ptr, s->key.len, s->val.ptr,
				   s->val.len, load_entry, b);
	}
	b->loaded = r == 0;
	return r;
}

static void put_entry(aptix_buf *v, const struct bentry *e,
		      const struct bentry *prev)
{
	size_t s = 0;

	if (!prev)
		s = e->tlen;	/* the key's term */
	else
		while (s < prev->tlen && s < e->tlen &&
		       prev->term[s] == e->term[s])
			s++;
	aptix__put_varint(v, s);
	aptix__put_varint(v, e->tlen - s);
	aptix_buf_put(v, e->term + s, e->tlen - s);
	aptix__put_varint(v, e->n);
	encode_run(v, e->v, e->n);
}

/*
 * Write b back: cut in pieces of about the same size, each about
 * BLOCK_MAX bytes at most, under its first term; its old key goes when
 * no piece has it.
 */
static int block_store(struct block *b, aptix_index_backend *ix,
		       aptix_backend_txn *tx, aptix_buf *k, aptix_buf *v)
{
	size_t i = 0, start, pieces, target, done = 0;
	int r = 0, kept = 0;

	if (!b->dirty)
		goto done;
	aptix_buf_clear(v);
	for (i = 0; i < b->n; i++)
		put_entry(v, &b->e[i], i ? &b->e[i - 1] : NULL);
	pieces = (v->len + BLOCK_MAX - 1) / BLOCK_MAX;
	target = pieces ? v->len / pieces : 0;
	for (i = 0; r == 0 && i < b->n; done++) {
		aptix_buf_clear(v);
		start = i;
		do
			put_entry(v, &b->e[i], i == start ? NULL :
				  &b->e[i - 1]);
		while (++i < b->n && (v->len < target || done + 1 >= pieces));
		if ((r = term_key(k, 'b', b->e[start].term,
				  b->e[start].tlen)) < 0 ||
		    (r = aptix_buf_oom(v) ? APTIX_ERROR : 0) < 0)
			break;
		kept |= k->len == b->key.len && !memcmp(k->ptr, b->key.ptr,
							k->len);
		r = ix->put(ix, tx, APTIX_INDEX_SEARCH, k->ptr, k->len, v->ptr,
			    v->len);
	}
	if (r == 0 && b->key.len && !kept)
		r = ix->del(ix, tx, APTIX_INDEX_SEARCH, b->key.ptr, b->key.len);
done:
	block_clear(b);
	return r;
}

/* Add l's postings to its entry in b; past BLOCK_DF, to a "t" key. */
static int block_add(struct block *b, aptix_index_backend *ix,
		     aptix_backend_txn *tx, const struct plist *l,
		     aptix_buf *k, aptix_buf *v)
{
	size_t tlen = strlen(l->term), lo = 0, hi = b->n, mid, i;
	struct bentry *e;
	int c = 1, r = 0;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = term_cmp(b->e[mid].term, b->e[mid].tlen, l->term, tlen);
		if (!c) {
			lo = mid;
			break;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (c) {	/* a new entry at lo */
		if (aptix__grow(&b->e, &b->alloc, b->n, sizeof(*b->e), 16) < 0)
			return APTIX_ERROR;
		memmove(b->e + lo + 1, b->e + lo, (b->n - lo) * sizeof(*b->e));
		b->n++;
		e = &b->e[lo];
		memset(e, 0, sizeof(*e));
		if (!(e->term = aptix__strdup(l->term)))
			return APTIX_ERROR;
		e->tlen = tlen;
	}
	e = &b->e[lo];
	b->dirty = 1;
	for (i = 0; i < l->n; i++) {
		if (e->n && l->p[i].ord <= e->v[e->n - 1].ord)
			continue;	/* cannot happen: ordinals grow */
		if (aptix__grow(&e->v, &e->alloc, e->n, sizeof(*e->v), 4) < 0)
			return APTIX_ERROR;
		e->v[e->n++] = l->p[i];
	}
	if (e->n > BLOCK_DF) {	/* a term of its own */
		struct plist own;

		memset(&own, 0, sizeof(own));
		own.term = e->term;
		own.p = e->v;
		own.n = e->n;
		r = merge_term(ix, tx, &own, k, v);
		free(e->term);
		free(e->v);
		memmove(b->e + lo, b->e + lo + 1,
			(b->n - lo - 1) * sizeof(*b->e));
		b->n--;
	}
	return r;
}

static int by_term(const void *a, const void *b)
{
	return strcmp((*(const struct plist *const *)a)->term,
		      (*(const struct plist *const *)b)->term);
}

/* Terms whose records are asked of the backend ahead at once. */
#define PREFETCH 128

/*
 * Tell a backend whose every read is a round trip (PostgreSQL) what the
 * n terms of o will ask: each one's "t" key, and the seek for its block
 * (aptix/sys/index_backend.h, prefetch). n 0: forget it.
 */
static int prefetch_terms(aptix_index_backend *ix, aptix_backend_txn *tx,
			  const struct plist *const *o, size_t n)
{
	aptix_buf keys[2][PREFETCH];
	size_t i, j;
	int r = 0;

	/* APTIX_TEST_NO_PREFETCH: t0212 compares the index made without */
	if (ix->version < 2 || !ix->prefetch ||
	    aptix_env__get(APTIX_ENV_TEST_NO_PREFETCH))
		return 0;
	if (!n)
		return ix->prefetch(ix, tx, APTIX_INDEX_SEARCH,
				    APTIX_INDEX_PREFETCH_GET, NULL, 0) < 0 ||
			ix->prefetch(ix, tx, APTIX_INDEX_SEARCH,
				     APTIX_INDEX_PREFETCH_SEEK, NULL, 0) < 0 ?
			APTIX_ERROR : 0;
	memset(keys, 0, sizeof(keys));
	for (i = 0; i < n; i++) {
		size_t tlen = strlen(o[i]->term);

		for (j = 0; j < 2; j++) {
			aptix_buf_init(&keys[j][i], 0);
			if (r == 0)
				r = term_key(&keys[j][i], j ? 'b' : 't',
					     o[i]->term, tlen);
		}
	}
	for (j = 0; j < 2; j++)
		if (r == 0)
			r = ix->prefetch(ix, tx, APTIX_INDEX_SEARCH, j ?
					 APTIX_INDEX_PREFETCH_SEEK :
					 APTIX_INDEX_PREFETCH_GET, keys[j], n);
	for (i = 0; i < n; i++)
		for (j = 0; j < 2; j++)
			aptix_buf_release(&keys[j][i]);
	return r;
}

/* pd's terms in byte order, into *out (free it). */
static int pend_sorted(const struct plist ***out, const struct pending *pd)
{
	const struct plist **o;
	size_t i;

	*out = NULL;
	if (!pd->n)
		return 0;
	if (!(o = aptix__malloc(pd->n * sizeof(*o))))
		return APTIX_ERROR;
	for (i = 0; i < pd->n; i++)
		o[i] = &pd->v[i];
	qsort(o, pd->n, sizeof(*o), by_term);
	*out = o;
	return 0;
}

/*
 * Merge the terms o[*at] to o[n - 1] into the table, max of them at
 * most (*at moves past them): a term with a "t" key grows it, another
 * goes into its block (one block is decoded and written once for all
 * the terms it holds).
 */
static int flush_terms(aptix_index_backend *ix, aptix_backend_txn *tx,
		       const struct plist *const *o, size_t n, size_t *at,
		       size_t max)
{
	aptix_buf k = APTIX_BUF_INIT, v = APTIX_BUF_INIT;
	struct block b;
	struct seek s;
	size_t i, tlen, end = n - *at > max ? *at + max : n;
	int r = 0;

	memset(&b, 0, sizeof(b));
	aptix_buf_init(&b.key, 0);
	memset(&s, 0, sizeof(s));
	aptix_buf_init(&s.key, 0);
	aptix_buf_init(&s.val, 0);
	for (i = *at; i < end && r == 0; i++) {
		if ((i - *at) % PREFETCH == 0 &&
		    (r = prefetch_terms(ix, tx, o + i, end - i < PREFETCH ?
					end - i : PREFETCH)) < 0)
			break;
		tlen = strlen(o[i]->term);
		if ((r = term_key(&k, 't', o[i]->term, tlen)) < 0)
			break;
		r = ix->get(&v, ix, tx, APTIX_INDEX_SEARCH, k.ptr, k.len);
		if (r == 0) {
			r = merge_term(ix, tx, o[i], &k, &v);
			continue;
		}
		if (r != APTIX_ENOTFOUND)
			break;
		aptix_error_clear();
		r = 0;
		if ((r = block_switch(&b, &s, ix, tx, o[i]->term, tlen, &k,
				      &v)) == 0)
			r = block_add(&b, ix, tx, o[i], &k, &v);
	}
	if (r == 0)
		r = block_store(&b, ix, tx, &k, &v);
	if (r == 0)
		r = prefetch_terms(ix, tx, o, 0);
	*at = end;
	block_release(&b);
	aptix_buf_release(&s.key);
	aptix_buf_release(&s.val);
	aptix_buf_release(&k);
	aptix_buf_release(&v);
	return r;
}

/* Merge pd into the table, term by term in byte order. */
static int pend_flush(aptix_index_backend *ix, aptix_backend_txn *tx,
		      const struct pending *pd)
{
	const struct plist **o;
	size_t at = 0;
	int r = pend_sorted(&o, pd);

	if (r == 0 && o)
		r = flush_terms(ix, tx, o, pd->n, &at, pd->n);
	free(o);
	return r;
}

/* The keys of a session: its ordinal, and what the ordinal names. */
static int doc_keys(aptix_index_backend *ix, aptix_backend_txn *tx,
		    const aptix_oid *id, uint32_t ord, uint32_t words)
{
	unsigned char key[33], be[4];
	aptix_buf v = APTIX_BUF_INIT;
	int r;

	key[0] = 'i';
	memcpy(key + 1, id->id, 32);
	aptix__put_be32(be, ord);
	if ((r = ix->put(ix, tx, APTIX_INDEX_SEARCH, key, 33, be, 4)) < 0)
		return r;
	key[0] = 'o';
	memcpy(key + 1, be, 4);
	aptix_buf_put(&v, id->id, 32);
	aptix__put_varint(&v, words);
	r = aptix_buf_oom(&v) ? APTIX_ERROR :
		ix->put(ix, tx, APTIX_INDEX_SEARCH, key, 5, v.ptr, v.len);
	aptix_buf_release(&v);
	return r;
}

/* The words of the session of ordinal ord to pd. */
static int pend_terms(struct pending *pd, uint32_t ord,
		      const aptix__terms *terms)
{
	size_t i;
	int r = 0;

	for (i = 0; r == 0 && i < terms->n; i++)
		r = pend_add(pd, terms->v[i].term, strlen(terms->v[i].term),
			     ord, terms->v[i].tf);
	if (r == 0 && terms->long_words)
		r = pend_add(pd, "", 0, ord, 1);
	return r;
}

/* Give session id the next ordinal, its words to pd. */
static int add_doc(aptix_index_backend *ix, aptix_backend_txn *tx,
		   struct state *st, struct pending *pd, const aptix_oid *id,
		   const aptix__terms *terms)
{
	int r;

	if (st->next == UINT32_MAX) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the search index "
				"is full: run 'aptix reindex'");
		return APTIX_EFULL;
	}
	if ((r = doc_keys(ix, tx, id, st->next, terms->len)) < 0 ||
	    (r = pend_terms(pd, st->next, terms)) < 0)
		return r;
	st->next++;
	st->docs++;
	st->words += terms->len;
	return 0;
}

static int is_indexed(aptix_index_backend *ix, aptix_backend_txn *tx,
		      const aptix_oid *id, uint32_t *ord)
{
	unsigned char key[33];
	aptix_buf v = APTIX_BUF_INIT;
	int r;

	key[0] = 'i';
	memcpy(key + 1, id->id, 32);
	r = ix->get(&v, ix, tx, APTIX_INDEX_SEARCH, key, 33);
	if (r == 0 && ord)
		*ord = v.len == 4 ? aptix__get_be32(
			(const unsigned char *)v.ptr) : UINT32_MAX;
	aptix_buf_release(&v);
	return aptix__found(r);
}

static int skew_done(aptix_index_backend *ix, aptix_backend_txn *tx,
		     uint64_t docs);

/*
 * Inside a write: session id goes (gc). Its ordinal's keys go and the
 * state stops counting it; its ordinal to *ord (UINT32_MAX: it had
 * none), whose postings aptix_index__search_drop takes out.
 */
int aptix_index__search_forget(aptix_backend_txn *tx, const aptix_oid *id,
			       uint32_t *ord_out)
{
	aptix_index_backend *ix = tx->backend->index;
	unsigned char key[33];
	aptix_buf v = APTIX_BUF_INIT;
	const unsigned char *p;
	uint64_t words = 0;
	struct state st;
	uint32_t ord;
	int r = is_indexed(ix, tx, id, &ord), had;

	*ord_out = r > 0 ? ord : UINT32_MAX;
	key[0] = 'i';
	memcpy(key + 1, id->id, 32);
	if (r <= 0 || (r = ix->del(ix, tx, APTIX_INDEX_SEARCH, key, 33)) < 0)
		goto skew;
	key[0] = 'o';
	aptix__put_be32(key + 1, ord);
	r = ix->get(&v, ix, tx, APTIX_INDEX_SEARCH, key, 5);
	p = (const unsigned char *)v.ptr;
	if (r == 0 && v.len > 32)
		(void)aptix__get_varint(&words, (p += 32, &p),
					(const unsigned char *)v.ptr + v.len);
	if (r == 0)
		r = ix->del(ix, tx, APTIX_INDEX_SEARCH, key, 5);
	if (r < 0 && r != APTIX_ENOTFOUND)
		goto done;
	if ((r = ix->get(&v, ix, tx, APTIX_INDEX_SEARCH, "s", 1)) < 0 ||
	    (r = state_decode(&st, &v)) < 0)
		goto skew;
	/* "K" counts the sessions the "k" keys cover: one fewer too */
	r = ix->get(&v, ix, tx, APTIX_INDEX_SEARCH, "K", 1);
	had = r == 0 && v.len == 8 &&
		aptix__get_be64((const unsigned char *)v.ptr) == st.docs;
	st.docs -= st.docs > 0;
	st.words -= words < st.words ? words : st.words;
	if ((r = state_put(ix, tx, &st)) < 0 ||
	    (had && (r = skew_done(ix, tx, st.docs)) < 0))
		goto done;
skew:
	if (r < 0 && r != APTIX_ENOTFOUND)
		goto done;
	key[0] = 'k';
	memcpy(key + 1, id->id, 32);
	r = ix->del(ix, tx, APTIX_INDEX_SEARCH, key, 33);
done:
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		r = 0;
	}
	aptix_buf_release(&v);
	return r;
}

/* --- the postings of sessions gone (gc) ---------------------------------- */

/*
 * What a drop changes, as it walks the table backwards: the changes are
 * applied when DROP_CHUNK bytes of them are pending (the walk stops and
 * resumes at the first record it has not looked at: a record changed
 * only ever moves to a greater key), and where sealed runs lost
 * postings, by term (in the walk's order, descending), so that the
 * term's "t" record, walked after them, counts them off its df.
 */
#define DROP_CHUNK (8u << 20)

struct drop {
	aptix_index_backend *ix;
	aptix_backend_txn *tx;
	unsigned char *bits;		/* the ordinals gone */
	uint32_t nbits;
	aptix_buf ops;			/* 'd'|'p', be32 klen, key[, be32, val] */
	aptix_buf sealed;		/* be32 tlen, term, be64 dropped */
	size_t sealed_last;		/* its last term's (SIZE_MAX: none) */
	size_t sealed_pos;		/* the next term the "t" walk meets */
	int opens;			/* the "t" walk (else the runs') */
	aptix_buf resume;		/* the first record not looked at */
	int more;
	struct block b;			/* a block being filtered */
	aptix_buf k, v;
};

static int gone(const struct drop *d, uint32_t ord)
{
	return ord < d->nbits && (d->bits[ord >> 3] & (1u << (ord & 7)));
}

/* Take the postings of the sessions gone out of v; how many went. */
static size_t drop_posts(const struct drop *d, struct post *v, size_t *n)
{
	size_t i, j = 0, n0 = *n;

	for (i = 0; i < n0; i++)
		if (!gone(d, v[i].ord))
			v[j++] = v[i];
	*n = j;
	return n0 - j;
}

static void drop_op(struct drop *d, const void *key, size_t klen,
		    const aptix_buf *val)
{
	unsigned char be[4];

	aptix_buf_putc(&d->ops, val ? 'p' : 'd');
	aptix__put_be32(be, (uint32_t)klen);
	aptix_buf_put(&d->ops, be, 4);
	aptix_buf_put(&d->ops, key, klen);
	if (val) {
		aptix__put_be32(be, (uint32_t)val->len);
		aptix_buf_put(&d->ops, be, 4);
		aptix_buf_put(&d->ops, val->ptr, val->len);
	}
}

/* A sealed run: what is left of it, under its first ordinal. */
static int drop_sealed(struct drop *d, const unsigned char *key, size_t klen,
		       const void *val, size_t vlen)
{
	const unsigned char *last;
	unsigned char be[8];
	struct post *v = NULL;
	size_t n = 0, alloc = 0, dropped, tlen = klen - 6, at;
	int r;

	if (klen < 6 || key[klen - 5])
		return 0;	/* not a run's key: fsck's business */
	r = decode_run(&v, &n, &alloc, val, (const unsigned char *)val + vlen,
		       UINT64_MAX);
	if (r < 0 || !(dropped = drop_posts(d, v, &n)))
		goto done;
	drop_op(d, key, klen, NULL);
	if (n) {
		aptix_buf_set(&d->k, key, klen - 4);
		aptix__put_be32(be, v[0].ord);
		aptix_buf_put(&d->k, be, 4);
		aptix_buf_clear(&d->v);
		encode_run(&d->v, v, n);
		drop_op(d, d->k.ptr, d->k.len, &d->v);
	}
	/* one count per term: its runs are walked one after the other */
	at = d->sealed.len;
	if (d->sealed_last < at) {
		last = (const unsigned char *)d->sealed.ptr + d->sealed_last;
		if (aptix__get_be32(last) == tlen &&
		    !memcmp(last + 4, key + 1, tlen)) {
			aptix__put_be64(be, aptix__get_be64(last + 4 + tlen) +
					dropped);
			memcpy((unsigned char *)d->sealed.ptr + d->sealed_last +
			       4 + tlen, be, 8);
			goto done;
		}
	}
	d->sealed_last = at;
	aptix__put_be32(be, (uint32_t)tlen);
	aptix_buf_put(&d->sealed, be, 4);
	aptix_buf_put(&d->sealed, key + 1, tlen);
	aptix__put_be64(be, dropped);
	aptix_buf_put(&d->sealed, be, 8);
done:
	free(v);
	return r < 0 ? r : aptix_buf_oom(&d->sealed) ? APTIX_ERROR : 0;
}

/* A block: its entries without the postings gone, under its first term. */
static int drop_block(struct drop *d, const void *key, size_t klen,
		      const void *val, size_t vlen)
{
	struct block *b = &d->b;
	size_t i, j = 0, dropped = 0;
	int r;

	block_clear(b);
	if ((r = block_walk(key, klen, val, vlen, load_entry, b)) < 0)
		return r;
	for (i = 0; i < b->n; i++) {
		dropped += drop_posts(d, b->e[i].v, &b->e[i].n);
		if (b->e[i].n)
			b->e[j++] = b->e[i];
		else {
			free(b->e[i].term);
			free(b->e[i].v);
		}
	}
	b->n = j;
	if (!dropped)
		return 0;
	aptix_buf_clear(&d->v);
	for (i = 0; i < b->n; i++)
		put_entry(&d->v, &b->e[i], i ? &b->e[i - 1] : NULL);
	if (b->n && (r = term_key(&d->k, 'b', b->e[0].term,
				   b->e[0].tlen)) < 0)
		return r;
	if (!b->n || d->k.len != klen || memcmp(d->k.ptr, key, klen))
		drop_op(d, key, klen, NULL);
	if (b->n)
		drop_op(d, d->k.ptr, d->k.len, &d->v);
	return 0;
}

/* A term's open run: its pairs gone, its df less those of its runs. */
static int drop_open(struct drop *d, const unsigned char *key, size_t klen,
		     const void *val, size_t vlen)
{
	const unsigned char *q = NULL;
	struct open_run o;
	uint64_t dropped;
	size_t tlen = klen - 1;
	int r, c = 1;

	memset(&o, 0, sizeof(o));
	if ((r = open_decode(&o, val, vlen)) < 0)
		goto done;
	dropped = drop_posts(d, o.v, &o.n);
	/* the counts of the sealed runs, greater terms first */
	for (; d->sealed_pos < d->sealed.len; d->sealed_pos += 12 +
	     aptix__get_be32(q)) {
		q = (const unsigned char *)d->sealed.ptr + d->sealed_pos;
		c = term_cmp((const char *)q + 4, aptix__get_be32(q),
			     (const char *)key + 1, tlen);
		if (c <= 0)
			break;
	}
	if (c == 0)
		dropped += aptix__get_be64(q + 4 + tlen);
	if (!dropped)
		goto done;
	o.df = o.df > dropped + o.n ? o.df - dropped : o.n;
	if (!o.df) {
		drop_op(d, key, klen, NULL);
		goto done;
	}
	aptix_buf_clear(&d->v);
	aptix__put_varint(&d->v, o.df);
	aptix__put_varint(&d->v, o.last);
	aptix__put_varint(&d->v, o.n);
	encode_run(&d->v, o.v, o.n);
	drop_op(d, key, klen, &d->v);
done:
	free(o.v);
	return r;
}

static int drop_cb(const void *key, size_t klen, const void *val,
		   size_t vlen, void *payload)
{
	struct drop *d = payload;
	const unsigned char *k = key;
	int r;

	/* the first walk: the runs and the blocks; the second: "t" */
	if (!klen || (d->opens ? k[0] != 't' : k[0] != 'c' && k[0] != 'b'))
		return APTIX_ITEROVER;
	if (d->ops.len >= DROP_CHUNK) {
		d->more = 1;
		aptix_buf_set(&d->resume, key, klen);
		return APTIX_ITEROVER;
	}
	if (k[0] == 'c')
		r = drop_sealed(d, k, klen, val, vlen);
	else if (k[0] == 'b')
		r = drop_block(d, key, klen, val, vlen);
	else
		r = drop_open(d, k, klen, val, vlen);
	if (r == APTIX_ECORRUPT) {
		aptix_error_clear();	/* fsck's business */
		r = 0;
	}
	return r < 0 ? r : aptix_buf_oom(&d->ops) ? APTIX_ERROR : 0;
}

static int drop_apply(struct drop *d)
{
	const unsigned char *p = (const unsigned char *)d->ops.ptr;
	const unsigned char *end = p + d->ops.len;
	size_t klen, vlen;
	int r = 0;

	while (r == 0 && p < end) {
		klen = aptix__get_be32(p + 1);
		if (p[0] == 'd') {
			r = aptix__absent_ok(d->ix->del(d->ix, d->tx,
							APTIX_INDEX_SEARCH,
							p + 5, klen));
			p += 5 + klen;
			continue;
		}
		vlen = aptix__get_be32(p + 5 + klen);
		r = d->ix->put(d->ix, d->tx, APTIX_INDEX_SEARCH, p + 5, klen,
			       p + 9 + klen, vlen);
		p += 9 + klen + vlen;
	}
	aptix_buf_clear(&d->ops);
	return r;
}

/* One walk backwards from start (NULL: the last key), in chunks. */
static int drop_walk(struct drop *d, const char *start, size_t slen)
{
	int r;

	aptix_buf_clear(&d->resume);
	if (start)
		aptix_buf_set(&d->resume, start, slen);
	do {
		d->more = 0;
		r = d->ix->iterate(d->ix, d->tx, APTIX_INDEX_SEARCH,
				   d->resume.len ? d->resume.ptr : NULL,
				   d->resume.len, APTIX_INDEX_ITER_REVERSE,
				   drop_cb, d);
		if (r == APTIX_ITEROVER)
			r = 0;
		if (r == 0)
			r = aptix_buf_oom(&d->resume) ? APTIX_ERROR :
				drop_apply(d);
	} while (r == 0 && d->more);
	return r;
}

int aptix_index__search_drop(aptix_backend_txn *tx, const uint32_t *ords,
			     size_t n)
{
	struct drop d;
	uint32_t max = 0;
	size_t i;
	int r;

	if (!n)
		return 0;
	memset(&d, 0, sizeof(d));
	d.ix = tx->backend->index;
	d.tx = tx;
	for (i = 0; i < n; i++)
		max = ords[i] > max ? ords[i] : max;
	d.nbits = max + 1;
	if (!(d.bits = aptix__calloc((size_t)max / 8 + 1, 1)))
		return APTIX_ERROR;
	for (i = 0; i < n; i++)
		d.bits[ords[i] >> 3] |= (unsigned char)(1u << (ords[i] & 7));
	aptix_buf_init(&d.ops, 0);
	aptix_buf_init(&d.sealed, 0);
	aptix_buf_init(&d.resume, 0);
	aptix_buf_init(&d.b.key, 0);
	aptix_buf_init(&d.k, 0);
	aptix_buf_init(&d.v, 0);
	/* "d": just past the sealed runs, which come after the blocks */
	d.sealed_last = SIZE_MAX;
	r = drop_walk(&d, "d", 1);
	d.opens = 1;
	if (r == 0)
		r = drop_walk(&d, NULL, 0);
	free(d.bits);
	aptix_buf_release(&d.ops);
	aptix_buf_release(&d.sealed);
	aptix_buf_release(&d.resume);
	block_release(&d.b);
	aptix_buf_release(&d.k);
	aptix_buf_release(&d.v);
	return r;
}

/* --- skewed clocks ---------------------------------------------------------- */

static int skew_put(aptix_index_backend *ix, aptix_backend_txn *tx,
		    const aptix_oid *id)
{
	unsigned char key[33];

	key[0] = 'k';
	memcpy(key + 1, id->id, 32);
	return ix->put(ix, tx, APTIX_INDEX_SEARCH, key, 33, "", 0);
}

static int skew_done(aptix_index_backend *ix, aptix_backend_txn *tx,
		     uint64_t docs)
{
	unsigned char v[8];

	aptix__put_be64(v, docs);
	return ix->put(ix, tx, APTIX_INDEX_SEARCH, "K", 1, v, 8);
}

/*
 * Inside a write: mark session s when it is older than its parent (or
 * its parent has no record), as a walk in date order must know.
 */
static int skew_mark(aptix_backend_txn *tx, const aptix_oid *id,
		     const aptix_session *s)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r, skewed;

	if (!s->has_parent)
		return 0;
	r = aptix_index__wget_record(&v, tx, s->parent.id);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		skewed = 1;
	} else {
		skewed = r == 0 && (v.len < 80 || (int64_t)aptix__get_be64(
			(const unsigned char *)v.ptr + 68) > s->created_at);
	}
	aptix_buf_release(&v);
	if (r < 0 && r != APTIX_ENOTFOUND)
		return r;
	return skewed ? skew_put(tx->backend->index, tx, id) : 0;
}

/* --- in a turn's write ---------------------------------------------------- */

struct fresh {
	struct aptix_index_session_op *const *ops;
	size_t n;
	int other;
};

static int fresh_cb(const void *key, size_t klen, const void *val UNUSED,
		    size_t vlen UNUSED, void *payload)
{
	struct fresh *f = payload;
	size_t i;

	if (klen != 40)
		return 0;
	for (i = 0; i < f->n; i++)
		if (!memcmp((const char *)key + 8, f->ops[i]->id.id, 32))
			return 0;
	f->other = 1;
	return APTIX_ITEROVER;
}

/*
 * No state: a store whose only sessions are those of this write (a new
 * one) starts its search index now; any other waits for reindex.
 */
static int starts_fresh(aptix_index_backend *ix, aptix_backend_txn *tx,
			struct aptix_index_session_op *const *ops, size_t n)
{
	struct fresh f;
	int r;

	f.ops = ops;
	f.n = n;
	f.other = 0;
	/* backwards: a key-value store walks a write only that way */
	r = ix->iterate(ix, tx, APTIX_INDEX_TIMELINE, NULL, 0,
			APTIX_INDEX_ITER_REVERSE, fresh_cb, &f);
	if (r < 0 && r != APTIX_ITEROVER)
		return r;
	return !f.other;
}

int aptix_index__search_apply(aptix_backend_txn *tx,
			      struct aptix_index_session_op *const *ops,
			      size_t n)
{
	aptix_index_backend *ix = tx->backend->index;
	aptix_buf v = APTIX_BUF_INIT;
	struct pending pd;
	struct state st;
	uint64_t marked = UINT64_MAX;	/* "K": none */
	uint64_t before;
	size_t i;
	int r;

	if (!n)
		return 0;
	memset(&pd, 0, sizeof(pd));
	memset(&st, 0, sizeof(st));
	r = ix->get(&v, ix, tx, APTIX_INDEX_SEARCH, "s", 1);
	if (r == 0)
		r = state_decode(&st, &v);
	else if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		r = starts_fresh(ix, tx, ops, n);
		if (r <= 0)
			goto done;	/* not indexed: readers scan */
		r = 0;
		marked = 0;	/* a new store: its marks are complete */
	}
	if (r == 0 && marked == UINT64_MAX) {
		r = ix->get(&v, ix, tx, APTIX_INDEX_SEARCH, "K", 1);
		if (r == 0 && v.len == 8)
			marked = aptix__get_be64((const unsigned char *)v.ptr);
		else if (r == APTIX_ENOTFOUND)
			aptix_error_clear();
		r = r == APTIX_ENOTFOUND ? 0 : r;
	}
	before = st.docs;
	for (i = 0; r == 0 && i < n; i++) {
		int have;

		if (!ops[i]->search_ready)
			continue;
		if ((have = is_indexed(ix, tx, &ops[i]->id, NULL)) != 0) {
			r = have < 0 ? have : 0;
			continue;
		}
		if ((r = skew_mark(tx, &ops[i]->id, &ops[i]->session)) == 0)
			r = add_doc(ix, tx, &st, &pd, &ops[i]->id,
				    &ops[i]->search);
	}
	if (r == 0)
		r = pend_flush(ix, tx, &pd);
	if (r == 0)
		r = state_put(ix, tx, &st);
	/* the marks stay complete while every writer keeps them */
	if (r == 0 && marked == before && st.docs != before)
		r = skew_done(ix, tx, st.docs);
done:
	pend_release(&pd);
	aptix_buf_release(&v);
	return r < 0 ? r : 0;
}

/* --- rebuild ---------------------------------------------------------------- */

/*
 * The rebuild (reindex, after the session records) reads the sessions
 * in the timeline's order, a batch at a time: their words gathered in
 * memory up to REBUILD_BYTES of postings, then written in writes of
 * their own (their ordinals, then their terms, REBUILD_TERMS a write),
 * so that neither its memory nor a write's dirty pages grow with the
 * store. The state goes last: until it is there readers scan (and a
 * reindex under way marks the store incomplete, index.c).
 */
#define REBUILD_BYTES (8u << 20)	/* postings a batch gathers */
#define REBUILD_SESSIONS 65536		/* sessions a batch gathers */
#define REBUILD_TERMS 4096		/* terms a write merges */

struct rebuild {
	aptix_repo *repo;
	struct aptix_index_reader rd;
	aptix_oid *ids;			/* the batch's sessions */
	uint32_t *words;
	size_t n, alloc, max;
	uint32_t next;			/* the batch's first ordinal */
	struct pending pd;
	uint64_t total;
	aptix_oid *skewed;		/* older than their parents */
	size_t nskewed, askewed;
	unsigned char from[40];		/* timeline key of the last read */
	int have_from, more;
	const struct plist **o;		/* the batch's terms, sorted */
	size_t at, terms;
};

/* Is si older than its parent (or its parent not indexed)? */
static int rebuild_skew(struct rebuild *rb, const aptix_session_info *si)
{
	aptix_session_info pi;
	int r;

	if (!si->has_parent)
		return 0;
	r = aptix_index_session(&pi, rb->repo, &si->parent);
	if (r < 0 && r != APTIX_ENOTFOUND)
		return r;
	aptix_error_clear();
	if (r == 0 && pi.created_at <= si->created_at)
		return 0;
	if (aptix__grow(&rb->skewed, &rb->askewed, rb->nskewed,
			sizeof(*rb->skewed), 16) < 0)
		return APTIX_ERROR;
	rb->skewed[rb->nskewed++] = si->id;
	return 0;
}

static int rebuild_session(const aptix_session_info *si, void *payload)
{
	struct rebuild *rb = payload;
	unsigned char key[40];
	aptix_session s;
	aptix_turn t;
	aptix__terms terms;
	int r, have_turn;

	aptix__put_be64(key, (uint64_t)si->created_at);
	memcpy(key + 8, si->id.id, 32);
	if (rb->have_from && !memcmp(key, rb->from, 40))
		return 0;	/* the last of the batch before */
	if (rb->n == rb->max || rb->pd.bytes >= REBUILD_BYTES) {
		rb->more = 1;
		return APTIX_ITEROVER;
	}
	memcpy(rb->from, key, 40);
	rb->have_from = 1;
	aptix_session_init(&s);
	aptix_turn_init(&t);
	memset(&terms, 0, sizeof(terms));
	if ((r = aptix_session_lookup(&s, rb->repo, &si->id)) < 0) {
		aptix_error_clear();	/* unreadable: fsck says so */
		r = 0;
		goto done;
	}
	/* its texts alone: the parse of the whole turn costs 4x more */
	have_turn = aptix_turn_lookup_texts(&t, rb->repo, &s.turn) == 0;
	aptix_error_clear();
	if (rb->next + rb->n >= UINT32_MAX - 1 ||
	    (r = rebuild_skew(rb, si)) < 0 ||
	    (r = aptix_index__search_prepare(&terms, &rb->rd, &s,
					     have_turn ? &t : NULL)) < 0 ||
	    (r = aptix__grow(&rb->ids, &rb->alloc, rb->n, sizeof(*rb->ids),
			     256)) < 0)
		goto done;
	if (!(rb->words = aptix__realloc(rb->words, rb->alloc *
					 sizeof(*rb->words)))) {
		r = APTIX_ERROR;
		goto done;
	}
	rb->ids[rb->n] = si->id;
	rb->words[rb->n] = terms.len;
	rb->total += terms.len;
	r = pend_terms(&rb->pd, (uint32_t)(rb->next + rb->n), &terms);
	rb->n++;
done:
	aptix__terms_release(&terms);
	aptix_session_release(&s);
	aptix_turn_release(&t);
	return r;
}

/* A write: the batch's ordinals and skewed sessions. */
static int docs_fn(aptix_backend_txn *tx, void *payload)
{
	struct rebuild *rb = payload;
	aptix_index_backend *ix = tx->backend->index;
	size_t i;
	int r = 0;

	for (i = 0; r == 0 && i < rb->n; i++)
		r = doc_keys(ix, tx, &rb->ids[i], (uint32_t)(rb->next + i),
			     rb->words[i]);
	for (i = 0; r == 0 && i < rb->nskewed; i++)
		r = skew_put(ix, tx, &rb->skewed[i]);
	return r;
}

/* A write: the next terms of the batch (tried again: the same ones). */
static int terms_fn(aptix_backend_txn *tx, void *payload)
{
	struct rebuild *rb = payload;
	size_t at = rb->at;
	int r = flush_terms(tx->backend->index, tx, rb->o, rb->pd.n, &at,
			    rb->terms);

	if (r == 0)
		rb->at = at;
	return r;
}

/* The last write: the state, the skew marks complete. */
static int state_fn(aptix_backend_txn *tx, void *payload)
{
	struct rebuild *rb = payload;
	aptix_index_backend *ix = tx->backend->index;
	struct state st;
	int r;

	st.next = rb->next;
	st.docs = rb->next;
	st.words = rb->total;
	r = skew_done(ix, tx, st.docs);
	return r ? r : state_put(ix, tx, &st);
}

/* Gather a batch of sessions, and write it. */
static int rebuild_batch(struct rebuild *rb)
{
	aptix_backend *be = rb->repo->backend;
	int r;

	rb->n = rb->nskewed = 0;
	rb->more = 0;
	pend_release(&rb->pd);
	r = aptix_index__timeline_from(rb->repo, rb->have_from ? rb->from :
				       NULL, rebuild_session, rb);
	if (r == APTIX_ITEROVER)
		r = 0;
	if (r < 0 || !rb->n)
		return r;
	if ((r = be->transaction(be, docs_fn, rb)) < 0 ||
	    (r = pend_sorted(&rb->o, &rb->pd)) < 0)
		return r;
	for (rb->at = 0; r == 0 && rb->at < rb->pd.n;)
		r = be->transaction(be, terms_fn, rb);
	free(rb->o);
	rb->o = NULL;
	rb->next += (uint32_t)rb->n;
	return r;
}

int aptix_search_rebuild(aptix_repo *repo, size_t *ndocs)
{
	struct rebuild rb;
	int r;

	memset(&rb, 0, sizeof(rb));
	rb.repo = repo;
	rb.max = aptix_index__reindex_batch(REBUILD_SESSIONS);
	rb.terms = aptix_index__reindex_batch(REBUILD_TERMS);
	aptix_index__odb_reader(&rb.rd, repo->odb);
	r = aptix_index__clear_table(repo, APTIX_INDEX_SEARCH);
	do
		r = r ? r : rebuild_batch(&rb);
	while (r == 0 && rb.more);
	if (r == 0)
		r = repo->backend->transaction(repo->backend, state_fn, &rb);
	if (r == 0 && ndocs)
		*ndocs = rb.next;
	free(rb.ids);
	free(rb.words);
	free(rb.skewed);
	pend_release(&rb.pd);
	return r;
}

/* --- reading: terms, postings --------------------------------------------- */

static int read_state(struct state *st, aptix_index_backend *ix)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r = ix->get(&v, ix, NULL, APTIX_INDEX_SEARCH, "s", 1);

	if (r == 0)
		r = state_decode(st, &v);
	aptix_buf_release(&v);
	return r;
}

/* A list of terms, NUL-separated. */
struct terms_found {
	aptix_buf list;
	size_t n;
	const char *tok;
	size_t tlen;
	int how;			/* EXACT... */
	size_t max;			/* terms at most; 0: all */
};

enum { EXACT, PREFIX, SUFFIX, INFIX };

static int holds(const char *t, size_t n, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i + len <= n; i++)
		if (t[i] == s[0] && !memcmp(t + i, s, len))
			return 1;
	return 0;
}

static int term_matches(const struct terms_found *tf, const char *t,
			size_t n)
{
	switch (tf->how) {
	case PREFIX:
		return n >= tf->tlen && !memcmp(t, tf->tok, tf->tlen);
	case SUFFIX:
		return n >= tf->tlen && !memcmp(t + n - tf->tlen, tf->tok,
						tf->tlen);
	default:
		return holds(t, n, tf->tok, tf->tlen);
	}
}

static int vocab_cb(const void *key, size_t klen, const void *val UNUSED,
		    size_t vlen UNUSED, void *payload)
{
	struct terms_found *tf = payload;
	const char *k = key;

	if (!klen || k[0] != 't')
		return APTIX_ITEROVER;
	if (tf->how == PREFIX && (klen - 1 < tf->tlen ||
				  memcmp(k + 1, tf->tok, tf->tlen)))
		return APTIX_ITEROVER;
	if (klen < 2 || !term_matches(tf, k + 1, klen - 1))
		return 0;
	aptix_buf_put(&tf->list, k + 1, klen - 1);
	aptix_buf_putc(&tf->list, '\0');
	tf->n++;
	if (aptix_buf_oom(&tf->list))
		return APTIX_ERROR;
	return tf->max && tf->n >= tf->max ? APTIX_ITEROVER : 0;
}

static int vocab_entry_cb(const char *term, size_t tlen,
			  uint64_t df UNUSED, const unsigned char *p UNUSED,
			  const unsigned char *end UNUSED, void *payload)
{
	struct terms_found *tf = payload;

	if (tf->how == PREFIX && term_cmp(term, tlen, tf->tok, tf->tlen) > 0 &&
	    (tlen < tf->tlen || memcmp(term, tf->tok, tf->tlen)))
		return APTIX_ITEROVER;	/* past the terms it begins */
	if (!tlen || !term_matches(tf, term, tlen))
		return 0;
	aptix_buf_put(&tf->list, term, tlen);
	aptix_buf_putc(&tf->list, '\0');
	tf->n++;
	if (aptix_buf_oom(&tf->list))
		return APTIX_ERROR;
	return tf->max && tf->n >= tf->max ? APTIX_ITEROVER : 0;
}

static int vocab_block_cb(const void *key, size_t klen, const void *val,
			  size_t vlen, void *payload)
{
	if (!klen || ((const char *)key)[0] != 'b')
		return APTIX_ITEROVER;
	return block_walk(key, klen, val, vlen, vocab_entry_cb, payload);
}

/* The terms of the blocks tf's word may be part of, in byte order. */
static int block_terms(struct terms_found *tf, aptix_index_backend *ix)
{
	struct seek s;
	aptix_buf k = APTIX_BUF_INIT;
	int r;

	memset(&s, 0, sizeof(s));
	aptix_buf_init(&s.key, 0);
	aptix_buf_init(&s.val, 0);
	aptix_buf_putc(&k, 'b');
	if (tf->how == PREFIX)	/* from the block holding the word on */
		aptix_buf_put(&k, tf->tok, tf->tlen);
	r = aptix_buf_oom(&k) ? APTIX_ERROR : tf->how != PREFIX ? 0 :
		seek_block(&s, ix, NULL, &k);
	if (r == 0 && s.found)
		aptix_buf_set(&k, s.key.ptr, s.key.len);
	if (r == 0)
		r = aptix_buf_oom(&k) ? APTIX_ERROR :
			ix->iterate(ix, NULL, APTIX_INDEX_SEARCH, k.ptr, k.len,
				    0, vocab_block_cb, tf);
	aptix_buf_release(&k);
	aptix_buf_release(&s.key);
	aptix_buf_release(&s.val);
	return r == APTIX_ITEROVER ? 0 : r;
}

/* Two lists of terms in byte order into one, max terms at most. */
static int merge_lists(struct terms_found *tf, const aptix_buf *a,
		       size_t na, const aptix_buf *b, size_t nb)
{
	const char *x = a->ptr, *y = b->ptr;
	size_t i = 0, j = 0;
	int c;

	aptix_buf_clear(&tf->list);
	tf->n = 0;
	while ((i < na || j < nb) && (!tf->max || tf->n < tf->max)) {
		c = i >= na ? 1 : j >= nb ? -1 : strcmp(x, y);
		aptix_buf_put(&tf->list, c <= 0 ? x : y,
			      strlen(c <= 0 ? x : y) + 1);
		tf->n++;
		if (c <= 0)
			x += strlen(x) + 1, i++;
		if (c >= 0)
			y += strlen(y) + 1, j++;
	}
	return aptix_buf_oom(&tf->list) ? APTIX_ERROR : 0;
}

/*
 * The terms a word of a text (tok, lowercased) may be part of: those
 * with a "t" key of their own, and those kept in blocks, merged.
 */
static int find_terms(struct terms_found *tf, aptix_index_backend *ix)
{
	aptix_buf k = APTIX_BUF_INIT, own, blk;
	size_t nown;
	int r;

	if (tf->how == EXACT) {
		aptix_buf_put(&tf->list, tf->tok, tf->tlen);
		aptix_buf_putc(&tf->list, '\0');
		tf->n = 1;
		return aptix_buf_oom(&tf->list) ? APTIX_ERROR : 0;
	}
	aptix_buf_putc(&k, 't');
	if (tf->how == PREFIX)
		aptix_buf_put(&k, tf->tok, tf->tlen);
	r = aptix_buf_oom(&k) ? APTIX_ERROR :
		ix->iterate(ix, NULL, APTIX_INDEX_SEARCH, k.ptr, k.len, 0,
			    vocab_cb, tf);
	if (r == APTIX_ITEROVER)
		r = 0;
	/* the blocks' terms into tf->list, the others set aside */
	own = tf->list;
	nown = tf->n;
	aptix_buf_init(&tf->list, 0);
	tf->n = 0;
	if (r == 0)
		r = block_terms(tf, ix);
	blk = tf->list;
	aptix_buf_init(&tf->list, 0);
	if (r == 0)
		r = merge_lists(tf, &own, nown, &blk, tf->n);
	aptix_buf_release(&k);
	aptix_buf_release(&own);
	aptix_buf_release(&blk);
	return r;
}

typedef int (*post_fn)(uint32_t ord, uint32_t tf, void *payload);

struct run_walk {
	const char *prefix;
	size_t plen;
	struct post *v;
	size_t n, alloc;
	int r;
};

static int sealed_cb(const void *key, size_t klen, const void *val,
		     size_t vlen, void *payload)
{
	struct run_walk *w = payload;

	if (klen != w->plen + 4 || memcmp(key, w->prefix, w->plen))
		return APTIX_ITEROVER;
	return decode_run(&w->v, &w->n, &w->alloc, val,
			  (const unsigned char *)val + vlen, UINT64_MAX);
}

/* Looking a term up in its block. */
struct find_entry {
	const char *term;
	size_t tlen;
	struct post *v;
	size_t n, alloc;
	uint64_t df;
};

static int find_entry_cb(const char *term, size_t tlen, uint64_t df,
			 const unsigned char *p, const unsigned char *end,
			 void *payload)
{
	struct find_entry *f = payload;
	int c = term_cmp(term, tlen, f->term, f->tlen);

	if (c < 0)
		return 0;
	if (c == 0) {
		f->df = df;
		c = decode_run(&f->v, &f->n, &f->alloc, p, end, df);
	}
	return c < 0 ? c : APTIX_ITEROVER;
}

static int find_block_cb(const void *key, size_t klen, const void *val,
			 size_t vlen, void *payload)
{
	int r;

	if (!klen || ((const char *)key)[0] != 'b')
		return APTIX_ITEROVER;
	r = block_walk(key, klen, val, vlen, find_entry_cb, payload);
	return r ? r : APTIX_ITEROVER;
}

/* The postings of a term kept in a block to fn; its df (0: none). */
static int block_postings(aptix_index_backend *ix, const char *term,
			  size_t len, uint64_t *df, post_fn fn, void *payload)
{
	aptix_buf k = APTIX_BUF_INIT;
	struct find_entry f;
	size_t i;
	int r;

	memset(&f, 0, sizeof(f));
	f.term = term;
	f.tlen = len;
	r = term_key(&k, 'b', term, len);
	if (r == 0)
		r = ix->iterate(ix, NULL, APTIX_INDEX_SEARCH, k.ptr, k.len,
				APTIX_INDEX_ITER_REVERSE |
				APTIX_INDEX_ITER_ONE, find_block_cb, &f);
	if (r == APTIX_ITEROVER)
		r = 0;
	*df = f.df;
	for (i = 0; r == 0 && i < f.n; i++)
		r = fn(f.v[i].ord, f.v[i].tf, payload);
	free(f.v);
	aptix_buf_release(&k);
	return r;
}

/* The postings of term (sealed runs, then the open one) to fn; its df. */
static int postings(aptix_index_backend *ix, const char *term, size_t len,
		    uint64_t *df, post_fn fn, void *payload)
{
	aptix_buf k = APTIX_BUF_INIT, v = APTIX_BUF_INIT;
	struct open_run o;
	struct run_walk w;
	size_t i;
	int r;

	memset(&o, 0, sizeof(o));
	memset(&w, 0, sizeof(w));
	*df = 0;
	term_key(&k, 't', term, len);
	r = ix->get(&v, ix, NULL, APTIX_INDEX_SEARCH, k.ptr, k.len);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		r = block_postings(ix, term, len, df, fn, payload);
		goto done;
	}
	if (r < 0 || (r = open_decode(&o, v.ptr, v.len)) < 0)
		goto done;
	*df = o.df;
	if (o.df > o.n) {	/* some runs are sealed */
		term_key(&k, 'c', term, len);
		aptix_buf_putc(&k, '\0');
		w.prefix = k.ptr;
		w.plen = k.len;
		r = aptix_buf_oom(&k) ? APTIX_ERROR :
			ix->iterate(ix, NULL, APTIX_INDEX_SEARCH, k.ptr, k.len,
				    0, sealed_cb, &w);
		if (r == APTIX_ITEROVER)
			r = 0;
	}
	for (i = 0; r == 0 && i < w.n; i++)
		r = fn(w.v[i].ord, w.v[i].tf, payload);
	for (i = 0; r == 0 && i < o.n; i++)
		r = fn(o.v[i].ord, o.v[i].tf, payload);
done:
	free(o.v);
	free(w.v);
	aptix_buf_release(&k);
	aptix_buf_release(&v);
	return r;
}

static int ord_doc(aptix_oid *id, uint64_t *words, aptix_index_backend *ix,
		   uint32_t ord);
static int doc_decode(aptix_oid *id, uint64_t *words, const void *val,
		      size_t vlen);

/* --- the filter (log -S, --grep) -------------------------------------------- */

struct aptix_search_filter {
	aptix_repo *repo;
	aptix_index_backend *ix;
	unsigned flags;
	struct state st;
	unsigned char *bits;		/* sessions that may match */
	int active;
};

static int set_bit(uint32_t ord, uint32_t tf UNUSED, void *payload)
{
	struct { unsigned char *bits; uint32_t n; } *b = payload;

	if (ord < b->n)
		b->bits[ord >> 3] |= (unsigned char)(1u << (ord & 7));
	return 0;
}

/* The sessions holding one of the terms in tf's list, into bits. */
static int union_terms(unsigned char *bits, const struct aptix_search_filter *f,
		       const struct terms_found *tf)
{
	struct { unsigned char *bits; uint32_t n; } b;
	const char *t = tf->list.ptr;
	uint64_t df;
	size_t i;
	int r = 0;

	b.bits = bits;
	b.n = f->st.next;
	for (i = 0; r == 0 && i < tf->n; i++) {
		r = postings(f->ix, t, strlen(t), &df, set_bit, &b);
		t += strlen(t) + 1;
	}
	return r;
}

/*
 * The sessions that may hold text, into bits (all set first): for each
 * word of 2 bytes or more, those with a term it can be part of (the
 * same term; one it starts or ends when the text goes on past it on
 * that side; any term holding it at an end of the text). 0; 1 when no
 * word of text can be used (bits then mean nothing).
 */
/*
 * Does text hold a word bounded on both sides (an EXACT term) that the
 * index can stand for? Then that word alone narrows enough: the words
 * at its ends would each need the whole vocabulary scanned (a term they
 * begin, end or are part of), and a common one all its postings.
 */
/* The next word of text at or after *i: [*i, *j); 0 at the end. */
static int next_word(const char *text, size_t len, size_t *i, size_t *j,
		     int *ascii)
{
	while (*i < len && !aptix__tok_byte((unsigned char)text[*i]))
		(*i)++;
	if (*i >= len)
		return 0;
	for (*j = *i, *ascii = 1; *j < len &&
	     aptix__tok_byte((unsigned char)text[*j]); (*j)++)
		*ascii &= (unsigned char)text[*j] < 0x80;
	return 1;
}

static int has_exact(const struct aptix_search_filter *f, const char *text)
{
	size_t len = strlen(text), i, j = 0;
	int ascii = 1;

	for (i = 0; next_word(text, len, &i, &j, &ascii); i = j)
		if (i > 0 && j < len && j - i >= 2 && j - i <= APTIX_TERM_MAX &&
		    (ascii || !(f->flags & APTIX_SEARCH_ICASE)))
			return 1;
	return 0;
}

static int text_bits(unsigned char *bits, const struct aptix_search_filter *f,
		     const char *text)
{
	size_t len = strlen(text), nb = (f->st.next + 7) / 8, i = 0, j = 0, w;
	unsigned char *one = NULL;
	struct terms_found tf;
	char tok[APTIX_TERM_MAX + 1];
	int used = 0, r = 0, ascii = 1, exact_only = has_exact(f, text);

	if (!(one = aptix__malloc(nb ? nb : 1)))
		return APTIX_ERROR;
	while (r == 0 && next_word(text, len, &i, &j, &ascii)) {
		if (j - i < 2 || j - i > APTIX_TERM_MAX ||
		    (!ascii && (f->flags & APTIX_SEARCH_ICASE)) ||
		    (exact_only && !(i > 0 && j < len))) {
			i = j;	/* a word no term can stand for */
			continue;
		}
		memset(&tf, 0, sizeof(tf));
		aptix_buf_init(&tf.list, 0);
		for (w = 0; w < j - i; w++)
			tok[w] = (char)(text[i + w] >= 'A' &&
					text[i + w] <= 'Z' ?
					text[i + w] + 32 : text[i + w]);
		tf.tok = tok;
		tf.tlen = j - i;
		tf.how = i > 0 && j < len ? EXACT : i > 0 ? PREFIX :
			j < len ? SUFFIX : INFIX;
		memset(one, 0, nb);
		if ((r = find_terms(&tf, f->ix)) == 0 &&
		    (r = union_terms(one, f, &tf)) == 0) {
			if (!used)
				memcpy(bits, one, nb);
			else
				for (w = 0; w < nb; w++)
					bits[w] &= one[w];
			used = 1;
		}
		aptix_buf_release(&tf.list);
		i = j;
	}
	free(one);
	return r < 0 ? r : !used;
}

int aptix_search_filter_new(aptix_search_filter **out, aptix_repo *repo,
			    unsigned flags)
{
	aptix_search_filter *f;
	int r;

	*out = NULL;
	if (!(f = aptix__calloc(1, sizeof(*f))))
		return APTIX_ERROR;
	f->repo = repo;
	f->ix = repo->backend->index;
	f->flags = flags;
	if ((r = read_state(&f->st, f->ix)) < 0) {
		if (r == APTIX_ENOTFOUND)
			aptix_error_clear();
		free(f);
		return r;
	}
	*out = f;
	return 0;
}

int aptix_search_filter_any(aptix_search_filter *f, const char *const *texts,
			    size_t n)
{
	struct { unsigned char *bits; uint32_t n; } b;
	size_t nb = (f->st.next + 7) / 8, i, w;
	unsigned char *any, *one;
	uint64_t df;
	int r = 0, free_text = 0;

	any = aptix__calloc(nb ? nb : 1, 1);
	one = aptix__malloc(nb ? nb : 1);
	if (!any || !one) {
		free(any);
		free(one);
		return APTIX_ERROR;
	}
	for (i = 0; r == 0 && i < n && !free_text; i++) {
		r = text_bits(one, f, texts[i]);
		if (r == 1)
			free_text = 1;	/* constrains nothing */
		else if (r == 0)
			for (w = 0; w < nb; w++)
				any[w] |= one[w];
	}
	/* a session with a word too long for a term may hold anything */
	b.bits = any;
	b.n = f->st.next;
	if (r == 0 && !free_text)
		r = postings(f->ix, "", 0, &df, set_bit, &b);
	if (r == 0 && !free_text && n) {
		if (!f->active) {
			free(f->bits);
			f->bits = any;
			any = NULL;
			f->active = 1;
		} else {
			for (w = 0; w < nb; w++)
				f->bits[w] &= any[w];
		}
	}
	free(any);
	free(one);
	return r < 0 ? r : 0;
}

/* Indexed sessions the search index lacks: count - docs (0: none). */
static int missing(uint64_t *out, aptix_index_backend *ix,
		   const struct state *st)
{
	uint64_t n = 0;
	int r;

	*out = 0;
	if (!ix->count)
		return APTIX_ENOTFOUND;
	if ((r = ix->count(&n, ix, APTIX_INDEX_SESSIONS)) < 0) {
		if (r == APTIX_ENOTFOUND)
			aptix_error_clear();
		return r;
	}
	*out = n > st->docs ? n - st->docs : 0;
	/* more docs than sessions: some were removed since; not complete */
	return n < st->docs ? APTIX_ENOTFOUND : 0;
}

int aptix_search_missing(uint64_t *out, aptix_repo *repo)
{
	aptix_index_backend *ix = repo->backend->index;
	struct state st;
	int r;

	APTIX_ASSERT_ARG(out && repo);
	*out = 0;
	if ((r = read_state(&st, ix)) < 0) {
		if (r == APTIX_ENOTFOUND)
			aptix_error_clear();
		return r;
	}
	r = missing(out, ix, &st);
	return r == APTIX_ENOTFOUND ? 0 : r;
}

/*
 * The first bit set in bits at or after from, below n (n when none):
 * eight bytes at a time over the runs of zeros, so that a rare word's
 * few matches cost about n / 64 steps, not n.
 */
static uint32_t next_bit(const unsigned char *bits, uint32_t from,
			 uint32_t n)
{
	uint64_t word;

	for (; from < n && (from & 7); from++)
		if ((bits[from >> 3] >> (from & 7)) & 1)
			return from;
	while (from + 64 <= n) {
		memcpy(&word, bits + (from >> 3), sizeof(word));
		if (word)
			break;
		from += 64;
	}
	for (; from < n; from++)
		if ((bits[from >> 3] >> (from & 7)) & 1)
			return from;
	return n;
}

/*
 * The ids of the matches, a batch at a time, in one ordered pass of the
 * "o" records: the walk steps over the numbers between two matches
 * while they are few (a step costs a fraction of a lookup), and seeks
 * past longer runs. A number without its record (gone since: gc) is
 * passed over, as a lookup that finds none would be.
 */
#define DOCS_BATCH 64
#define DOCS_GAP 32

struct docs {
	const unsigned char *bits;
	uint32_t n, want;	/* the next match: n when none */
	aptix_oid ids[DOCS_BATCH];
	size_t nids;
	int ended;		/* no "o" record from want on */
	int stopped;		/* the callback stopped the walk */
	int r;
};

static int docs_step(struct docs *d, const unsigned char *k, size_t klen,
		     const void *val, size_t vlen);

/* Whether the walk stopped or ran out of records, d->ended says. */
static int docs_cb(const void *key, size_t klen, const void *val,
		   size_t vlen, void *payload)
{
	struct docs *d = payload;
	int r = docs_step(d, key, klen, val, vlen);

	d->stopped = r == APTIX_ITEROVER;
	return r;
}

static int docs_step(struct docs *d, const unsigned char *k, size_t klen,
		     const void *val, size_t vlen)
{
	uint64_t words;
	uint32_t ord;

	if (!klen || k[0] != 'o') {
		d->ended = 1;
		return APTIX_ITEROVER;
	}
	if (klen != 5)
		return 0;
	ord = aptix__get_be32(k + 1);
	if (ord > d->want)	/* want has no record: the next match */
		d->want = next_bit(d->bits, ord, d->n);
	if (d->want >= d->n) {
		d->ended = 1;
		return APTIX_ITEROVER;
	}
	if (ord < d->want)	/* a seek past a long run is cheaper */
		return d->want - ord > DOCS_GAP ? APTIX_ITEROVER : 0;
	if ((d->r = doc_decode(&d->ids[d->nids], &words, val, vlen)) < 0)
		return APTIX_ITEROVER;
	d->nids++;
	d->want = next_bit(d->bits, ord + 1, d->n);
	if (d->nids == DOCS_BATCH || d->want >= d->n ||
	    d->want - ord > DOCS_GAP)
		return APTIX_ITEROVER;
	return 0;
}

int aptix_search_filter_foreach(aptix_search_filter *f,
				aptix_odb_foreach_cb cb, void *payload)
{
	unsigned char key[5];
	uint64_t lack;
	struct docs *d;
	size_t i;
	int r;

	APTIX_ASSERT_ARG(f && cb);
	if (!f->active)
		return APTIX_ENOTFOUND;
	if ((r = missing(&lack, f->ix, &f->st)) < 0 || lack)
		return r < 0 ? r : APTIX_ENOTFOUND;
	if (!(d = aptix__calloc(1, sizeof(*d))))
		return APTIX_ERROR;
	d->bits = f->bits;
	d->n = f->st.next;
	d->want = next_bit(f->bits, 0, d->n);
	while (r == 0 && !d->ended && d->want < d->n) {
		key[0] = 'o';
		aptix__put_be32(key + 1, d->want);
		d->nids = 0;
		d->stopped = 0;
		r = f->ix->iterate(f->ix, NULL, APTIX_INDEX_SEARCH, key, 5, 0,
				   docs_cb, d);
		if ((r == 0 || r == APTIX_ITEROVER) && !d->stopped)
			d->ended = 1;	/* the table ran out */
		if (r == 0 || r == APTIX_ITEROVER)
			r = d->r;
		/* the callbacks run outside the walk: they may read */
		for (i = 0; r == 0 && i < d->nids; i++)
			r = cb(&d->ids[i], payload);
	}
	free(d);
	return r;
}

struct skews {
	aptix_odb_foreach_cb cb;
	void *payload;
};

static int skew_cb(const void *key, size_t klen, const void *val UNUSED,
		   size_t vlen UNUSED, void *payload)
{
	struct skews *sk = payload;
	aptix_oid id;

	if (!klen || ((const char *)key)[0] != 'k')
		return APTIX_ITEROVER;
	if (klen != 33)
		return 0;
	memcpy(id.id, (const char *)key + 1, 32);
	return sk->cb(&id, sk->payload);
}

int aptix_search_skewed(aptix_repo *repo, aptix_odb_foreach_cb cb,
			void *payload)
{
	aptix_index_backend *ix = repo->backend->index;
	aptix_buf v = APTIX_BUF_INIT;
	struct skews sk;
	struct state st;
	int r;

	APTIX_ASSERT_ARG(repo && cb);
	if ((r = read_state(&st, ix)) == 0)
		r = ix->get(&v, ix, NULL, APTIX_INDEX_SEARCH, "K", 1);
	if (r == 0 && (v.len != 8 || aptix__get_be64(
		(const unsigned char *)v.ptr) != st.docs))
		r = APTIX_ENOTFOUND;
	aptix_buf_release(&v);
	if (r < 0) {
		if (r == APTIX_ENOTFOUND)
			aptix_error_clear();
		return r;
	}
	sk.cb = cb;
	sk.payload = payload;
	r = ix->iterate(ix, NULL, APTIX_INDEX_SEARCH, "k", 1, 0, skew_cb,
			&sk);
	return r == APTIX_ITEROVER ? 0 : r;
}

int aptix_search_filter_active(const aptix_search_filter *f)
{
	return f && f->active;
}

int aptix_search_filter_may(aptix_search_filter *f, const aptix_oid *session)
{
	uint32_t ord = 0;
	int r;

	if (!f->active)
		return 1;
	r = is_indexed(f->ix, NULL, session, &ord);
	if (r <= 0)
		return r < 0 ? r : 1;	/* not indexed: read it */
	if (ord >= f->st.next)
		return 1;
	return (f->bits[ord >> 3] >> (ord & 7)) & 1;
}

void aptix_search_filter_free(aptix_search_filter *f)
{
	if (!f)
		return;
	free(f->bits);
	free(f);
}

/* --- checking (fsck) ------------------------------------------------------- */

struct check {
	aptix_index_backend *ix;
	struct state st;
	aptix_search_problem_fn fn;
	void *payload;
	uint64_t problems;
	char last[APTIX_TERM_MAX + 1];	/* the blocks' last term */
	size_t lastlen;
	int have_last;
	struct post *v;
	size_t n, alloc;
};

static void check_problem(struct check *c, const char *what,
			  const char *term, size_t tlen)
{
	aptix_buf msg = APTIX_BUF_INIT;

	aptix_buf_printf(&msg, "search index: %s '%.*s'", what, (int)tlen,
			 term);
	c->fn(aptix_buf_oom(&msg) ? what : msg.ptr, c->payload);
	c->problems++;
	aptix_buf_release(&msg);
}

/* Are the n postings of c->v ascending, each below the next ordinal? */
static int check_ords(const struct check *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->v[i].ord >= c->st.next || !c->v[i].tf ||
		    (i && c->v[i].ord <= c->v[i - 1].ord))
			return 0;
	return 1;
}

static int check_entry(const char *term, size_t tlen, uint64_t df,
		       const unsigned char *p, const unsigned char *end,
		       void *payload)
{
	struct check *c = payload;
	aptix_buf k = APTIX_BUF_INIT, v = APTIX_BUF_INIT;
	int r;

	if (c->have_last && term_cmp(term, tlen, c->last, c->lastlen) <= 0)
		check_problem(c, "a block's term is not past the block before",
			      term, tlen);
	memcpy(c->last, term, tlen);
	c->lastlen = tlen;
	c->have_last = 1;
	c->n = 0;
	if ((r = decode_run(&c->v, &c->n, &c->alloc, p, end, df)) < 0) {
		aptix_error_clear();
		check_problem(c, "corrupt postings of term", term, tlen);
	} else if (!check_ords(c))
		check_problem(c, "postings out of order or past the next "
			      "ordinal, term", term, tlen);
	r = term_key(&k, 't', term, tlen);
	if (r == 0 && (r = c->ix->get(&v, c->ix, NULL, APTIX_INDEX_SEARCH,
				      k.ptr, k.len)) == 0)
		check_problem(c, "a term both in a block and under a key of "
			      "its own", term, tlen);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		r = 0;
	}
	aptix_buf_release(&k);
	aptix_buf_release(&v);
	return r;
}

static int check_record(const void *key, size_t klen, const void *val,
			size_t vlen, void *payload)
{
	struct check *c = payload;
	const char *k = key;
	struct open_run o;
	int r = 0;

	if (klen && k[0] == 'b') {
		r = block_walk(key, klen, val, vlen, check_entry, c);
		if (r == APTIX_ECORRUPT) {
			aptix_error_clear();
			check_problem(c, "corrupt block", k + 1, klen - 1);
			r = 0;
		}
	} else if (klen && k[0] == 't') {
		memset(&o, 0, sizeof(o));
		if (open_decode(&o, val, vlen) < 0) {
			aptix_error_clear();
			check_problem(c, "corrupt postings of term", k + 1,
				      klen - 1);
		} else {
			free(c->v);
			c->v = o.v;
			c->n = o.n;
			c->alloc = o.alloc;
			o.v = NULL;
			if (!check_ords(c))
				check_problem(c, "postings out of order or "
					      "past the next ordinal, term",
					      k + 1, klen - 1);
		}
		free(o.v);
	}
	return r;
}

int aptix_search_check(aptix_repo *repo, aptix_search_problem_fn fn,
		       void *payload)
{
	struct check c;
	int r;

	APTIX_ASSERT_ARG(repo);
	APTIX_ASSERT_ARG(fn);
	memset(&c, 0, sizeof(c));
	c.ix = repo->backend->index;
	c.fn = fn;
	c.payload = payload;
	if ((r = read_state(&c.st, c.ix)) == APTIX_ENOTFOUND) {
		aptix_error_clear();
		return 0;	/* no index: readers scan */
	}
	if (r == 0)
		r = c.ix->iterate(c.ix, NULL, APTIX_INDEX_SEARCH, "b", 1, 0,
				  check_record, &c);
	free(c.v);
	if (r < 0)
		return r;
	return c.problems > INT32_MAX ? INT32_MAX : (int)c.problems;
}

/* --- ranking (aptix search) ------------------------------------------------- */

#define QUERY_TERMS 16
#define PREFIX_TERMS 256	/* terms a query word may begin, at most */
#define PREFIX_WEIGHT 0.5	/* of an occurrence of one of them */

struct cand {
	uint32_t ord;
	double tf[QUERY_TERMS];		/* the word's, plus half those begun */
	double score;
	aptix_oid id;
};

struct rank {
	struct cand *v;
	size_t n, alloc;
	uint32_t *slot;			/* ordinal -> index in v, plus 1 */
	uint32_t nslots;
	size_t term;			/* the query term being read */
	double weight;			/* of the term being read */
};

static int rank_post(uint32_t ord, uint32_t tf, void *payload)
{
	struct rank *rk = payload;
	struct cand *c;

	if (ord >= rk->nslots)
		return 0;
	if (!rk->slot[ord]) {
		if (aptix__grow(&rk->v, &rk->alloc, rk->n, sizeof(*rk->v),
				64) < 0)
			return APTIX_ERROR;
		memset(&rk->v[rk->n], 0, sizeof(rk->v[0]));
		rk->v[rk->n].ord = ord;
		rk->slot[ord] = (uint32_t)++rk->n;
	}
	c = &rk->v[rk->slot[ord] - 1];
	c->tf[rk->term] += rk->weight * tf;
	return 0;
}

static int by_score(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->ord > y->ord ? -1 : x->ord < y->ord;	/* newer first */
}

/* The session and length an ordinal names. */
/* An "o" record's value: the session's id and its words. */
static int doc_decode(aptix_oid *id, uint64_t *words, const void *val,
		      size_t vlen)
{
	const unsigned char *p = val;

	if (vlen < 33 || aptix__get_varint(words, (p += 32, &p),
					   (const unsigned char *)val +
					   vlen) < 0) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the search index is "
				"corrupt: run 'aptix reindex'");
		return APTIX_ECORRUPT;
	}
	memcpy(id->id, val, 32);
	return 0;
}

static int ord_doc(aptix_oid *id, uint64_t *words, aptix_index_backend *ix,
		   uint32_t ord)
{
	unsigned char key[5];
	aptix_buf v = APTIX_BUF_INIT;
	int r;

	key[0] = 'o';
	aptix__put_be32(key + 1, ord);
	r = ix->get(&v, ix, NULL, APTIX_INDEX_SEARCH, key, 5);
	if (r == 0)
		r = doc_decode(id, words, v.ptr, v.len);
	aptix_buf_release(&v);
	return r;
}

static int in_scope(aptix_repo *repo, const aptix_oid *id,
		    const aptix_search_options *o)
{
	aptix_session_info si;
	aptix_session s;
	aptix_turn t;
	int r, ok = 1;

	if ((r = aptix_index_session(&si, repo, id)) < 0) {
		aptix_error_clear();
		return 0;	/* gone since (gc): not a hit */
	}
	if ((o->conversation && strcmp(si.conversation, o->conversation)) ||
	    (o->since && si.created_at < o->since) ||
	    (o->until && si.created_at > o->until) ||
	    (o->status >= 0 && (int)si.status != o->status))
		return 0;
	if (!o->workspace && !o->model)
		return 1;
	aptix_session_init(&s);
	aptix_turn_init(&t);
	if (aptix_session_lookup(&s, repo, id) < 0 ||
	    (o->model && aptix_turn_lookup(&t, repo, &si.turn) < 0))
		ok = 0;
	else if (o->workspace && (!s.workspace ||
				  strcmp(s.workspace, o->workspace)))
		ok = 0;
	else if (o->model && (!t.model || strcmp(t.model, o->model)))
		ok = 0;
	aptix_error_clear();
	aptix_session_release(&s);
	aptix_turn_release(&t);
	return ok;
}

static int query_terms(aptix__terms *q, const char *query)
{
	int r = aptix__count_terms(q, query, strlen(query), APTIX_TOK_WHOLE);

	if (r < 0)
		return r;
	if (!q->n) {
		aptix_error_set(APTIX_ERROR_INVALID, "the query '%s' has no "
				"word to search for (words have 2 to %d "
				"letters, digits or '_')", query,
				APTIX_TERM_MAX);
		return APTIX_EINVALID;
	}
	return 0;
}

/*
 * The postings of a query word into rk: the word's own, and those of the
 * terms it begins (PREFIX_TERMS at most, the first in byte order), each
 * occurrence counting PREFIX_WEIGHT: "pars" finds parser and
 * parseconfig, below a session that says "pars". df: the sessions of
 * them all, summed.
 */
static int word_postings(struct rank *rk, aptix_index_backend *ix,
			 const char *word, uint64_t *df)
{
	struct terms_found tf;
	const char *t;
	uint64_t one;
	size_t i;
	int r;

	memset(&tf, 0, sizeof(tf));
	aptix_buf_init(&tf.list, 0);
	tf.tok = word;
	tf.tlen = strlen(word);
	tf.how = PREFIX;
	tf.max = PREFIX_TERMS;
	*df = 0;
	r = find_terms(&tf, ix);
	for (i = 0, t = tf.list.ptr; r == 0 && i < tf.n; i++) {
		rk->weight = strcmp(t, word) ? PREFIX_WEIGHT : 1;
		r = postings(ix, t, strlen(t), &one, rank_post, rk);
		*df += one;
		t += strlen(t) + 1;
	}
	aptix_buf_release(&tf.list);
	return r;
}

static int score_all(struct rank *rk, aptix_index_backend *ix,
		     const struct state *st, const aptix__terms *q)
{
	double idf[QUERY_TERMS], avgdl;
	uint64_t df, words;
	/* the first QUERY_TERMS, alphabetically */
	size_t nq = q->n < QUERY_TERMS ? q->n : QUERY_TERMS, i, k;
	int r = 0;

	for (i = 0; r == 0 && i < nq; i++) {
		rk->term = i;
		r = word_postings(rk, ix, q->v[i].term, &df);
		idf[i] = aptix__bm25_idf((double)st->docs, (double)(
			df < st->docs ? df : st->docs));
	}
	avgdl = st->docs ? (double)st->words / (double)st->docs : 1;
	for (k = 0; r == 0 && k < rk->n; k++) {
		struct cand *c = &rk->v[k];

		if ((r = ord_doc(&c->id, &words, ix, c->ord)) ==
		    APTIX_ENOTFOUND) {	/* gone with gc: aptix_index__search_forget */
			aptix_error_clear();
			rk->v[k--] = rk->v[--rk->n];
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		for (i = 0; i < nq; i++)
			if (c->tf[i])
				c->score += aptix__bm25(idf[i], c->tf[i],
							(double)words, avgdl);
	}
	if (r == 0 && rk->n > 1)
		qsort(rk->v, rk->n, sizeof(*rk->v), by_score);
	return r;
}

int aptix_search(aptix_search_hit **out, size_t *n, aptix_repo *repo,
		 const char *query, const aptix_search_options *o)
{
	aptix_search_options def = APTIX_SEARCH_OPTIONS_INIT;
	aptix_index_backend *ix = repo->backend->index;
	aptix__terms q;
	struct state st;
	struct rank rk;
	size_t k, limit;
	int r;

	*out = NULL;
	*n = 0;
	o = o ? o : &def;
	limit = o->limit ? o->limit : 20;
	memset(&rk, 0, sizeof(rk));
	memset(&q, 0, sizeof(q));
	if ((r = read_state(&st, ix)) == APTIX_ENOTFOUND) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the store has no "
				"search index yet: run 'aptix reindex'");
		return r;
	}
	if (r < 0 || (r = query_terms(&q, query)) < 0)
		goto done;
	rk.nslots = st.next;
	if (!(rk.slot = aptix__calloc(st.next ? st.next : 1,
				      sizeof(*rk.slot)))) {
		r = APTIX_ERROR;
		goto done;
	}
	if ((r = score_all(&rk, ix, &st, &q)) < 0)
		goto done;
	if (!(*out = aptix__calloc(limit, sizeof(**out)))) {
		r = APTIX_ERROR;
		goto done;
	}
	for (k = 0; k < rk.n && *n < limit; k++) {
		if (!in_scope(repo, &rk.v[k].id, o))
			continue;
		(*out)[*n].session = rk.v[k].id;
		(*out)[(*n)++].score = rk.v[k].score;
	}
done:
	aptix__terms_release(&q);
	free(rk.v);
	free(rk.slot);
	return r;
}
