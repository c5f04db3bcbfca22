/*
 * src/index/index-summary.c - the rolling summary, kept in the session index.
 *
 * When a response chain is gone (expired, or restarted because it has
 * carried too much), the next turn sends the conversation again: the
 * most recent turns verbatim and every older one in a summary (seed
 * 003's rolling summary). Building that summary from every earlier turn
 * made a restart cost grow with the conversation. Instead each session's
 * index record carries its own turn's summary line, and every few turns
 * (PENDING_TURNS, or PENDING_BYTES of lines) the lines are folded into a
 * base: a summary of turns 1..b compacted to BASE_CAP bytes, kept
 * deflated in the record of the session that folded it, in the same
 * write transaction as the turn. A restart reads one base and at most
 * PENDING_TURNS lines. A line costs its record little: the instruction's
 * start is the record's summary field already (flag 8 says it was cut),
 * and the answer's start is at most APTIX_INDEX_LINE_ANSWER bytes.
 *
 * Compaction is deterministic, so reindex and fsck --full recompute the
 * same bytes: while lines are too many for the cap, the two adjacent
 * lines covering the fewest turns (the oldest on a tie) share one line;
 * then each line gets a share of the cap in proportion to its turns,
 * every turn's text cut at a word boundary. No turn is ever left out: a
 * turn is named by its own line or by a range.
 *
 * Rolling section of a session record (version 3; see index.c):
 *   be32 length     of what follows
 *   u8 flags        1: the turn is committed (the record has its line),
 *                   2: the record holds a base, 4: unknown (an ancestor
 *                   was indexed by an older version, or a turn is not
 *                   numbered above its parent's: walk the history),
 *                   8: the instruction's first line goes on past the
 *                   record's summary field (its line ends "...")
 *   be32 seq        the turn's number (the parent's when not committed)
 *   be32 base_hi    the base covers turns up to base_hi (0: no base)
 *   32 bytes        the session whose record holds the base (zero when
 *                   this record holds it, or there is none)
 *   be32 npending   committed turns after base_hi, this one included
 *   be32 pbytes     the rendered size of their lines
 *   be16 + bytes    the start of its answer
 *   when flags & 2: be32 length, then a zlib stream (RFC 1950) of that
 *                   many bytes: be32 ngroups, then per line of the base
 *                   be32 lo, be32 hi, be16 + text, be16 + answer (one
 *                   turn only)
 *
 * With flag 16 (session records of version 6, store format 8) the head
 * is compact: seq, base_hi, npending and pbytes are varints (LEB128),
 * the holder is left out and the answer's length is a varint. The
 * holder is derived: it is the nearest ancestor whose record holds a
 * base (flag 2) with seq base_hi, which the walk of the pending lines
 * reaches anyway (each record's holder is its parent when the parent
 * holds a base, else the parent's holder).
 */
#include "util/common.h"
#include "repo/repo.h"
#include "index/index.h"
#include "object/zstream.h"
#include "aptix/index.h"
#include <zlib.h>

#define RS_COMMITTED 1
#define RS_BASE 2
#define RS_UNKNOWN 4
#define RS_CUT 8
#define RS_COMPACT APTIX_INDEX_ROLLING_COMPACT	/* record version 6 */
#define RS_HEAD (1 + 4 + 4 + 32 + 4 + 4)

#define PENDING_TURNS 32
#define PENDING_BYTES 6000
#define BASE_CAP 4000
#define BASE_RAW_MAX (1 << 20)
#define LINE_MIN 72		/* a line's share below which lines merge */
#define PART_MIN 6		/* a turn's text within a shared line */
#define WALK_MAX (4 * PENDING_TURNS + 64)

struct rsec {
	int flags;
	uint32_t seq, base_hi, npending, pbytes;
	const unsigned char *holder;
	const char *ans;
	size_t alen;
	const unsigned char *base;	/* the groups, when flags & RS_BASE */
	size_t base_len;
};

struct rgroup {
	uint32_t lo, hi;
	uint32_t llo, lhi;	/* the numbers shown: lo, hi but for lines of
				   a walked history (positions in lo, hi) */
	char *text, *ans;	/* NUL-terminated; ans NULL on a range */
};

struct rgroups {
	struct rgroup *v;
	size_t n, alloc;
};

static const unsigned char zero_id[32];

static int corrupt(void)
{
	aptix_error_set(APTIX_ERROR_REPOSITORY, "index record of a rolling "
			"summary is corrupt: run 'aptix reindex'");
	return APTIX_ECORRUPT;
}

void aptix__head_words(aptix_buf *out, const char *text, size_t len,
		       size_t max)
{
	char *line;
	size_t n, first;

	if (!max || !(line = aptix__malloc(max + 1)))
		return;
	for (first = 0; first < len && text[first] != '\n'; first++)
		;
	aptix_summary_line(line, max, text, len);
	n = strlen(line);
	if (n < first && max >= 8) {
		aptix_summary_line(line, max - 3, text, len);
		n = strlen(line);
		while (n > max / 2 && line[n - 1] != ' ')
			n--;
		while (n > 0 && line[n - 1] == ' ')
			n--;
		if (n <= max / 2)	/* one long word: cut it */
			n = strlen(line);
		aptix_buf_put(out, line, n);
		aptix_buf_puts(out, "...");
	} else {
		aptix_buf_put(out, line, n);
	}
	free(line);
}

/* Does the first line of text go on past its summary field? */
static int line_cut(const char *summary, const char *text, size_t len)
{
	size_t i;

	while (len && (*text == '\n' || *text == ' ' || *text == '\t' ||
		       *text == '\r')) {
		text++;
		len--;
	}
	for (i = 0; i < len && text[i] != '\n' && text[i] != '\r'; i++)
		;
	return i > strlen(summary);
}

/* A line's instruction text: the summary field, cut at a word if cut. */
static void render_instr(char out[APTIX_INDEX_LINE_INSTR + 1],
			 const char *summary, int cut)
{
	aptix_buf b = APTIX_BUF_INIT, h = APTIX_BUF_INIT;

	if (!cut) {
		snprintf(out, APTIX_INDEX_LINE_INSTR + 1, "%s", summary);
		return;
	}
	/* what follows the field only tells head_words the line goes on */
	aptix_buf_printf(&b, "%s  x", summary);
	if (!aptix_buf_oom(&b))
		aptix__head_words(&h, b.ptr, b.len, APTIX_INDEX_LINE_INSTR);
	snprintf(out, APTIX_INDEX_LINE_INSTR + 1, "%.*s", (int)h.len,
		 h.ptr ? h.ptr : "");
	aptix_buf_release(&h);
	aptix_buf_release(&b);
}

void aptix_index__line_set(struct aptix_index_line *l, long seq,
			   const char *summary, const char *instr,
			   size_t ilen, const char *ans, size_t alen)
{
	aptix_buf b = APTIX_BUF_INIT;

	memset(l, 0, sizeof(*l));
	l->has = 1;
	l->seq = seq > 0 && seq <= INT32_MAX ? (uint32_t)seq : 0;
	l->cut = line_cut(summary, instr, ilen);
	render_instr(l->instr, summary, l->cut);
	if (ans)
		aptix__head_words(&b, ans, alen, APTIX_INDEX_LINE_ANSWER);
	snprintf(l->answer, sizeof(l->answer), "%.*s", (int)b.len,
		 b.ptr ? b.ptr : "");
	aptix_buf_release(&b);
}

/* --- Parsing --------------------------------------------------------- */

static int get16(size_t *n, const unsigned char **p, const unsigned char *end)
{
	if (end - *p < 2)
		return -1;
	*n = (size_t)(*p)[0] << 8 | (*p)[1];
	*p += 2;
	return (size_t)(end - *p) < *n ? -1 : 0;
}

static int get_v32(uint32_t *v, const unsigned char **p,
		   const unsigned char *end)
{
	uint64_t n;

	if (aptix__get_varint(&n, p, end) < 0 || n > UINT32_MAX)
		return -1;
	*v = (uint32_t)n;
	return 0;
}

/* The compact head (flag 16): four varints, the answer's varint length. */
static int parse_compact(struct rsec *rs, const unsigned char **p,
			 const unsigned char *end)
{
	uint32_t alen;

	++*p;
	if (get_v32(&rs->seq, p, end) < 0 ||
	    get_v32(&rs->base_hi, p, end) < 0 ||
	    get_v32(&rs->npending, p, end) < 0 ||
	    get_v32(&rs->pbytes, p, end) < 0 || get_v32(&alen, p, end) < 0 ||
	    (size_t)(end - *p) < alen)
		return corrupt();
	rs->alen = alen;
	return 0;
}

static int parse(struct rsec *rs, const unsigned char *p, size_t len)
{
	const unsigned char *end = p + len;

	memset(rs, 0, sizeof(*rs));
	if (len && (p[0] & RS_COMPACT)) {
		rs->flags = p[0];
		if (parse_compact(rs, &p, end) < 0)
			return APTIX_ECORRUPT;
	} else {
		if (len < RS_HEAD + 2)
			return corrupt();
		rs->flags = p[0];
		rs->seq = aptix__get_be32(p + 1);
		rs->base_hi = aptix__get_be32(p + 5);
		rs->holder = p + 9;
		rs->npending = aptix__get_be32(p + 41);
		rs->pbytes = aptix__get_be32(p + 45);
		p += RS_HEAD;
		if (get16(&rs->alen, &p, end) < 0)
			return corrupt();
	}
	rs->ans = (const char *)p;
	p += rs->alen;
	if (rs->flags & RS_BASE) {
		rs->base = p;
		rs->base_len = (size_t)(end - p);
	} else if (p != end) {
		return corrupt();
	}
	return 0;
}

/* The rolling section of a record: 0; 1 when it has none (older). */
static int record_section(struct rsec *rs, const void *rec, size_t len)
{
	const unsigned char *sec;
	size_t slen;
	int r = aptix_index__rolling_section(&sec, &slen, rec, len);

	return r ? r : parse(rs, sec, slen);
}

/* --- Lines in memory ------------------------------------------------- */

static void group_release(struct rgroup *e)
{
	free(e->text);
	free(e->ans);
}

static void groups_release(struct rgroups *g)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		group_release(&g->v[i]);
	free(g->v);
	memset(g, 0, sizeof(*g));
}

static char *dupn(const char *s, size_t n)
{
	char *d = aptix__malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static int groups_add(struct rgroups *g, uint32_t lo, uint32_t hi,
		      const char *text, size_t tlen, const char *ans,
		      size_t alen)
{
	struct rgroup *e;

	if (aptix__grow(&g->v, &g->alloc, g->n, sizeof(*g->v), 16) < 0)
		return APTIX_ERROR;
	e = &g->v[g->n];
	e->lo = e->llo = lo;
	e->hi = e->lhi = hi;
	e->text = dupn(text, tlen);
	e->ans = lo == hi && alen ? dupn(ans, alen) : NULL;
	if (!e->text || (lo == hi && alen && !e->ans)) {
		group_release(e);
		return APTIX_ERROR;
	}
	g->n++;
	return 0;
}

static int groups_parse(struct rgroups *g, const unsigned char *p,
			size_t len)
{
	const unsigned char *end = p + len;
	uint32_t i, n;

	if (len < 4)
		return corrupt();
	n = aptix__get_be32(p);
	p += 4;
	if (n > len / 12)
		return corrupt();
	for (i = 0; i < n; i++) {
		const char *t, *a;
		size_t tl, al;
		uint32_t lo, hi;
		int r;

		if (end - p < 8)
			return corrupt();
		lo = aptix__get_be32(p);
		hi = aptix__get_be32(p + 4);
		p += 8;
		if (lo > hi || get16(&tl, &p, end) < 0)
			return corrupt();
		t = (const char *)p;
		p += tl;
		if (get16(&al, &p, end) < 0)
			return corrupt();
		a = (const char *)p;
		p += al;
		if ((r = groups_add(g, lo, hi, t, tl, a, al)) < 0)
			return r;
	}
	return p == end ? 0 : corrupt();
}

/* A base as stored: be32 length, then the deflated groups. */
static int groups_decode(struct rgroups *g, const unsigned char *p,
			 size_t len)
{
	unsigned char *raw;
	uLongf n;
	uint32_t want;
	int r;

	if (len < 4 || (want = aptix__get_be32(p)) > BASE_RAW_MAX)
		return corrupt();
	if (!(raw = aptix__malloc(want ? want : 1)))
		return APTIX_ERROR;
	n = want;
	if (uncompress(raw, &n, p + 4, (uLong)(len - 4)) != Z_OK ||
	    n != want) {
		free(raw);
		return corrupt();
	}
	r = groups_parse(g, raw, want);
	free(raw);
	return r;
}

static void put16(aptix_buf *b, const char *s, size_t n)
{
	unsigned char t[2];

	if (n > 0xffff)
		n = 0xffff;
	t[0] = (unsigned char)(n >> 8);
	t[1] = (unsigned char)n;
	aptix_buf_put(b, t, 2);
	aptix_buf_put(b, s, n);
}

static void put32(aptix_buf *b, uint32_t v)
{
	unsigned char t[4];

	aptix__put_be32(t, v);
	aptix_buf_put(b, t, 4);
}

static void groups_raw(aptix_buf *b, const struct rgroups *g)
{
	size_t i;

	put32(b, (uint32_t)g->n);
	for (i = 0; i < g->n; i++) {
		const struct rgroup *e = &g->v[i];

		put32(b, e->lo);
		put32(b, e->hi);
		put16(b, e->text, strlen(e->text));
		put16(b, e->ans ? e->ans : "", e->ans ? strlen(e->ans) : 0);
	}
}

static int groups_encode(aptix_buf *out, const struct rgroups *g)
{
	aptix_buf raw = APTIX_BUF_INIT;
	unsigned char *z = NULL;
	uLongf zn;
	int r = 0;

	groups_raw(&raw, g);
	if (aptix_buf_oom(&raw) || raw.len > BASE_RAW_MAX) {
		r = raw.len > BASE_RAW_MAX ? corrupt() : APTIX_ERROR;
		goto done;
	}
	zn = compressBound((uLong)raw.len);
	if (!(z = aptix__malloc(zn))) {
		r = APTIX_ERROR;
		goto done;
	}
	if (compress2(z, &zn, (const Bytef *)raw.ptr, (uLong)raw.len,
		      Z_BEST_COMPRESSION) != Z_OK) {
		r = aptix_error_oom();
		goto done;
	}
	put32(out, (uint32_t)raw.len);
	aptix_buf_put(out, z, zn);
	r = aptix_buf_oom(out) ? APTIX_ERROR : 0;
done:
	free(z);
	aptix_buf_release(&raw);
	return r;
}

/* --- Rendering and compaction ---------------------------------------- */

#define ANSWER_PREFIX "  Answer began: "

static size_t prefix_len(const struct rgroup *e)
{
	char t[64];
	int n = e->lo == e->hi ?
		snprintf(t, sizeof(t), "- Turn %lu asked: ",
			 (unsigned long)e->llo) :
		snprintf(t, sizeof(t), "- Turns %lu-%lu asked: ",
			 (unsigned long)e->llo, (unsigned long)e->lhi);

	return n > 0 ? (size_t)n : 0;
}

/* Bytes of a line without its texts. */
static size_t overhead(const struct rgroup *e)
{
	return prefix_len(e) + 1 + (e->ans ? strlen(ANSWER_PREFIX) + 1 : 0);
}

static size_t line_size(const struct rgroup *e)
{
	return overhead(e) + strlen(e->text) + (e->ans ? strlen(e->ans) : 0);
}

size_t aptix_index__line_size(const struct aptix_index_line *l)
{
	struct rgroup e;

	e.lo = e.hi = e.llo = e.lhi = l->seq;
	e.text = (char *)l->instr;
	e.ans = *l->answer ? (char *)l->answer : NULL;
	return line_size(&e);
}

static void render(aptix_buf *out, const struct rgroups *g)
{
	size_t i;

	for (i = 0; i < g->n; i++) {
		const struct rgroup *e = &g->v[i];

		if (e->lo == e->hi)
			aptix_buf_printf(out, "- Turn %lu asked: %s\n",
					 (unsigned long)e->llo, e->text);
		else
			aptix_buf_printf(out, "- Turns %lu-%lu asked: %s\n",
					 (unsigned long)e->llo,
					 (unsigned long)e->lhi, e->text);
		if (e->ans)
			aptix_buf_printf(out, ANSWER_PREFIX "%s\n", e->ans);
	}
}

/* Cut *s to at most max bytes at a word boundary. */
static int cut_to(char **s, size_t max)
{
	aptix_buf b = APTIX_BUF_INIT;
	size_t n = strlen(*s);

	if (n <= max)
		return 0;
	if (max)
		aptix__head_words(&b, *s, n, max);
	if (aptix_buf_oom(&b))
		return APTIX_ERROR;
	free(*s);
	*s = dupn(b.ptr ? b.ptr : "", b.len);
	aptix_buf_release(&b);
	return *s ? 0 : APTIX_ERROR;
}

/*
 * Cut the text of a range to max bytes: each turn's part (" / "
 * separates them) keeps an equal share while a share is worth having.
 */
static int cut_parts(char **s, size_t max)
{
	aptix_buf b = APTIX_BUF_INIT;
	const char *p = *s, *sep;
	size_t k = 1, per;

	if (strlen(*s) <= max)
		return 0;
	for (sep = p; (sep = strstr(sep, " / ")) != NULL; sep += 3)
		k++;
	if (k == 1 || max < 3 * (k - 1) + PART_MIN * k)
		return cut_to(s, max);
	per = (max - 3 * (k - 1)) / k;
	for (;;) {
		sep = strstr(p, " / ");
		aptix__head_words(&b, p, sep ? (size_t)(sep - p) : strlen(p),
				  per);
		if (!sep)
			break;
		aptix_buf_puts(&b, " / ");
		p = sep + 3;
	}
	if (aptix_buf_oom(&b))
		return APTIX_ERROR;
	free(*s);
	*s = dupn(b.ptr ? b.ptr : "", b.len);
	aptix_buf_release(&b);
	return *s ? 0 : APTIX_ERROR;
}

static int merge_at(struct rgroups *g, size_t i)
{
	struct rgroup *a = &g->v[i], *b = &g->v[i + 1];
	size_t la = strlen(a->text), lb = strlen(b->text);
	char *t = aptix__malloc(la + 3 + lb + 1);

	if (!t)
		return APTIX_ERROR;
	memcpy(t, a->text, la);
	memcpy(t + la, " / ", 3);
	memcpy(t + la + 3, b->text, lb + 1);
	group_release(a);
	group_release(b);
	a->text = t;
	a->ans = NULL;
	a->hi = b->hi;
	a->lhi = b->lhi;
	memmove(b, b + 1, (g->n - i - 2) * sizeof(*b));
	g->n--;
	return 0;
}

static uint32_t span(const struct rgroup *e)
{
	return e->hi - e->lo + 1;
}

static int compact(struct rgroups *g, size_t cap)
{
	size_t i, total = 0, fixed = 0, room;
	uint64_t turns = 0;
	int r;

	for (i = 0; i < g->n; i++)
		total += line_size(&g->v[i]);
	if (total <= cap)
		return 0;
	/* too many lines for the cap: the fewest turns share a line */
	while (g->n > 1 && cap / g->n < LINE_MIN) {
		size_t best = 0;
		uint64_t bs = UINT64_MAX;

		for (i = 0; i + 1 < g->n; i++) {
			uint64_t s = (uint64_t)span(&g->v[i]) +
				span(&g->v[i + 1]);

			if (s < bs) {
				bs = s;
				best = i;
			}
		}
		if ((r = merge_at(g, best)) < 0)
			return r;
	}
	for (i = 0; i < g->n; i++) {
		fixed += overhead(&g->v[i]);
		turns += span(&g->v[i]);
	}
	room = cap > fixed ? cap - fixed : 0;
	for (i = 0; i < g->n; i++) {
		struct rgroup *e = &g->v[i];
		size_t share = (size_t)((uint64_t)room * span(e) / turns);

		if (e->ans) {
			size_t it = share * 3 / 5;

			if (strlen(e->text) < it)	/* a short question */
				it = strlen(e->text);
			if ((r = cut_to(&e->text, it)) < 0 ||
			    (r = cut_to(&e->ans, share - it)) < 0)
				return r;
			if (!*e->ans) {
				free(e->ans);
				e->ans = NULL;
			}
		} else if ((r = cut_parts(&e->text, share)) < 0) {
			return r;
		}
	}
	return 0;
}

/* --- Reading the history from records -------------------------------- */

static int parent_of(unsigned char id[32], const aptix_buf *rec)
{
	const unsigned char *p = (const unsigned char *)rec->ptr;

	if (rec->len < 80 || !(p[3] & 1))
		return 0;
	memcpy(id, p + 4, 32);
	return 1;
}

/*
 * The record holding the base that the record start names (base_hi)
 * without naming its holder (flag 16): its nearest ancestor whose record
 * holds a base of that seq, into rec.
 */
static int find_holder(aptix_buf *rec, const aptix_buf *start,
		       uint32_t base_hi, aptix_index__rec_fn get, void *ctx)
{
	unsigned char id[32];
	struct rsec rs;
	size_t steps = 0;
	int r;

	if (!parent_of(id, start))
		return corrupt();
	for (;;) {
		if (++steps > WALK_MAX)
			return corrupt();
		if ((r = get(rec, id, ctx)) < 0)
			return r;
		if ((r = record_section(&rs, rec->ptr, rec->len)) != 0)
			return r < 0 ? r : corrupt();
		if ((rs.flags & RS_BASE) && rs.seq == base_hi)
			return 0;
		if (rs.seq < base_hi || !parent_of(id, rec))
			return corrupt();
	}
}

/*
 * The base a record points at (its own, or its holder's); start is the
 * record whose section rs is.
 */
static int load_base(struct rgroups *g, const struct rsec *rs,
		     const aptix_buf *start, aptix_index__rec_fn get,
		     void *ctx)
{
	aptix_buf rec = APTIX_BUF_INIT;
	struct rsec hs;
	int r;

	if (!rs->base_hi)
		return 0;
	if (rs->flags & RS_BASE)
		return groups_decode(g, rs->base, rs->base_len);
	r = rs->holder ? get(&rec, rs->holder, ctx) :
		find_holder(&rec, start, rs->base_hi, get, ctx);
	if (r < 0)
		goto done;
	if ((r = record_section(&hs, rec.ptr, rec.len)) != 0 ||
	    !(hs.flags & RS_BASE) || hs.base_hi != rs->base_hi) {
		r = r < 0 ? r : corrupt();
		goto done;
	}
	r = groups_decode(g, hs.base, hs.base_len);
done:
	aptix_buf_release(&rec);
	return r;
}

/*
 * The lines of the committed turns after base_hi and up to upto, from
 * the record rec (copied: it is walked) back through its ancestors,
 * appended oldest first.
 */
static int load_pending(struct rgroups *g, const aptix_buf *start,
			uint32_t base_hi, uint32_t upto,
			aptix_index__rec_fn get, void *ctx)
{
	aptix_buf rec = APTIX_BUF_INIT;
	struct rgroups mine = { NULL, 0, 0 };
	unsigned char id[32];
	struct rsec rs;
	size_t steps = 0, i;
	int r = 0;

	aptix_buf_put(&rec, start->ptr, start->len);
	if (aptix_buf_oom(&rec))
		return APTIX_ERROR;
	for (;;) {
		if ((r = record_section(&rs, rec.ptr, rec.len)) != 0) {
			r = r < 0 ? r : corrupt();
			break;
		}
		if (rs.seq <= base_hi)
			break;
		if ((rs.flags & RS_COMMITTED) && rs.seq <= upto) {
			char sum[APTIX_SUMMARY_MAX + 1];
			char instr[APTIX_INDEX_LINE_INSTR + 1];

			if ((r = aptix_index__record_summary(sum, rec.ptr,
							     rec.len)) < 0)
				break;
			render_instr(instr, sum, rs.flags & RS_CUT);
			if ((r = groups_add(&mine, rs.seq, rs.seq, instr,
					    strlen(instr), rs.ans,
					    rs.alen)) < 0)
				break;
		}
		if (!parent_of(id, &rec))
			break;
		if (++steps > WALK_MAX) {
			r = corrupt();
			break;
		}
		if ((r = get(&rec, id, ctx)) < 0)
			break;
	}
	for (i = mine.n; r == 0 && i > 0; i--) {
		const struct rgroup *e = &mine.v[i - 1];

		r = groups_add(g, e->lo, e->hi, e->text, strlen(e->text),
			       e->ans ? e->ans : "",
			       e->ans ? strlen(e->ans) : 0);
	}
	groups_release(&mine);
	aptix_buf_release(&rec);
	return r;
}

/* --- The section of a new record ------------------------------------- */

static void put_head(aptix_buf *out, int flags, uint32_t seq,
		     uint32_t base_hi, const unsigned char *holder,
		     uint32_t npending, uint32_t pbytes)
{
	unsigned char f = (unsigned char)flags;

	aptix_buf_put(out, &f, 1);
	if (flags & RS_COMPACT) {
		aptix__put_varint(out, seq);
		aptix__put_varint(out, base_hi);
		aptix__put_varint(out, npending);
		aptix__put_varint(out, pbytes);
		return;
	}
	put32(out, seq);
	put32(out, base_hi);
	aptix_buf_put(out, holder ? holder : zero_id, 32);
	put32(out, npending);
	put32(out, pbytes);
}

/* The answer's start: a varint length in the compact form, else be16. */
static void put_answer(aptix_buf *out, int flags, const char *s, size_t n)
{
	if (!(flags & RS_COMPACT)) {
		put16(out, s, n);
		return;
	}
	aptix__put_varint(out, n);
	aptix_buf_put(out, s, n);
}

int aptix_index__rolling_encode(aptix_buf *out, const aptix_oid *parent,
				const aptix_buf *prec,
				const struct aptix_index_line *line,
				aptix_index__rec_fn get, void *ctx,
				int compact_head)
{
	aptix_buf sec = APTIX_BUF_INIT;
	struct rgroups g = { NULL, 0, 0 };
	struct rsec ps;
	const unsigned char *holder = NULL;
	uint32_t seq = 0, base_hi = 0, npending = 0, pbytes = 0;
	int cf = compact_head ? RS_COMPACT : 0;
	int flags = cf, r = 0, have_parent = prec && prec->len;

	memset(&ps, 0, sizeof(ps));
	if (have_parent) {
		r = record_section(&ps, prec->ptr, prec->len);
		if (r < 0)
			goto done;
		/*
		 * Lines are in turn order along a history, so a turn
		 * numbered no higher than its parent's (plumbing writes
		 * any number: a fork that starts again at 1) makes the
		 * ranges meaningless: such a history is walked, as one
		 * indexed by an older version is.
		 */
		if (r == 1 || (ps.flags & RS_UNKNOWN) ||
		    (line && line->has && line->seq <= ps.seq)) {
			r = 0;
			put_head(&sec, RS_UNKNOWN | cf, 0, 0, NULL, 0, 0);
			put_answer(&sec, cf, "", 0);
			goto write;
		}
		seq = ps.seq;
		base_hi = ps.base_hi;
		holder = ps.flags & RS_BASE ? parent->id : ps.holder;
		npending = ps.npending;
		pbytes = ps.pbytes;
	}
	if (line && line->has) {
		flags |= RS_COMMITTED | (line->cut ? RS_CUT : 0);
		seq = line->seq;
		npending++;
		pbytes += (uint32_t)aptix_index__line_size(line);
	}
	if ((flags & RS_COMMITTED) &&
	    (npending > PENDING_TURNS || pbytes > PENDING_BYTES)) {
		/* fold the lines into a new base, kept in this record */
		if (have_parent &&
		    ((r = load_base(&g, &ps, prec, get, ctx)) < 0 ||
		     (r = load_pending(&g, prec, base_hi, UINT32_MAX, get,
				       ctx)) < 0))
			goto done;
		if ((r = groups_add(&g, line->seq, line->seq, line->instr,
				    strlen(line->instr), line->answer,
				    strlen(line->answer))) < 0 ||
		    (r = compact(&g, BASE_CAP)) < 0)
			goto done;
		flags |= RS_BASE;
		base_hi = seq;
		holder = NULL;
		npending = pbytes = 0;
	}
	if (!base_hi)
		holder = NULL;
	put_head(&sec, flags, seq, base_hi, holder, npending, pbytes);
	put_answer(&sec, flags, line && line->has ? line->answer : "",
		   line && line->has ? strlen(line->answer) : 0);
	if ((flags & RS_BASE) && (r = groups_encode(&sec, &g)) < 0)
		goto done;
write:
	if (aptix_buf_oom(&sec)) {
		r = APTIX_ERROR;
		goto done;
	}
	put32(out, (uint32_t)sec.len);
	aptix_buf_put(out, sec.ptr, sec.len);
	r = aptix_buf_oom(out) ? APTIX_ERROR : 0;
done:
	groups_release(&g);
	aptix_buf_release(&sec);
	return r;
}

/* --- A restart's summary --------------------------------------------- */

static int view_get(aptix_buf *out, const unsigned char id[32], void *ctx)
{
	aptix_repo *repo = ctx;
	int r = aptix_index__copy_record(out, repo->backend->index, id);

	if (r == APTIX_ENOTFOUND) {
		aptix_oid oid;

		memcpy(oid.id, id, 32);
		aptix_error_set(APTIX_ERROR_REPOSITORY, "session '%s' is not "
				"in the index: run 'aptix reindex'",
				aptix_oid_hex(&oid));
		r = APTIX_ECORRUPT;
	}
	return r;
}

int aptix_index__rolling_get(aptix_buf *out, const unsigned char id[32],
			     void *repo)
{
	return view_get(out, id, repo);
}

int aptix_index__rolling_summary(aptix_buf *out, uint32_t *lo,
				 uint32_t *hi, aptix_repo *repo,
				 const aptix_oid *head, uint32_t upto,
				 size_t cap)
{
	aptix_buf rec = APTIX_BUF_INIT;
	struct rgroups g = { NULL, 0, 0 };
	struct rsec rs;
	int r;

	*lo = *hi = 0;
	if ((r = view_get(&rec, head->id, repo)) < 0 ||
	    (r = record_section(&rs, rec.ptr, rec.len)) != 0)
		goto done;	/* 1: an older record */
	if (rs.flags & RS_UNKNOWN) {
		r = 1;
		goto done;
	}
	if ((r = load_base(&g, &rs, &rec, view_get, repo)) < 0 ||
	    (r = load_pending(&g, &rec, rs.base_hi, upto, view_get,
			      repo)) < 0 ||
	    (r = compact(&g, cap)) < 0)
		goto done;
	if (g.n) {
		*lo = g.v[0].lo;
		*hi = g.v[g.n - 1].hi;
		render(out, &g);
	}
	r = aptix_buf_oom(out) ? APTIX_ERROR : 0;
done:
	groups_release(&g);
	aptix_buf_release(&rec);
	return r;
}

/* --- A history walked turn by turn ----------------------------------- */

int aptix_index__summary_of_lines(aptix_buf *out,
				  const struct aptix_index_line *v, size_t n,
				  size_t cap)
{
	struct rgroups g = { NULL, 0, 0 };
	size_t i;
	int r = 0;

	/*
	 * Compacted by position (a walked history may number its turns
	 * in any order), shown by the turns' own numbers.
	 */
	for (i = 0; i < n && r == 0; i++) {
		r = groups_add(&g, (uint32_t)i + 1, (uint32_t)i + 1,
			       v[i].instr, strlen(v[i].instr), v[i].answer,
			       strlen(v[i].answer));
		if (r == 0)
			g.v[g.n - 1].llo = g.v[g.n - 1].lhi = v[i].seq;
	}
	if (r == 0 && (r = compact(&g, cap)) == 0) {
		render(out, &g);
		r = aptix_buf_oom(out) ? APTIX_ERROR : 0;
	}
	groups_release(&g);
	return r;
}

size_t aptix_index__summary_walk_max(size_t cap)
{
	size_t n = cap / LINE_MIN;

	return n < 16 ? 16 : n > 1024 ? 1024 : n;
}
