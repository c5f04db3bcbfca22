/*
 * src/store/lmdb-file.c - LMDB's data file read with pread (see lmdb-file.h).
 *
 * liblmdb trusts its file: it follows page numbers and node offsets as
 * it finds them in the map. This file reads the same format with
 * pread() into buffers and checks every number before it uses it, so a
 * damaged file gives a list of problems, never a fault. It knows
 * liblmdb 0.9's format on a 64-bit host (mdb.c, MDB_DATA_VERSION 1):
 *
 *	page	pgno u64 | pad u16 | flags u16 | lower u16 | upper u16
 *		(an overflow page has its page count u32 in lower/upper),
 *		then lower-16 bytes of node offsets (u16 each, sorted by
 *		key); nodes live between upper and the page's end
 *	node	lo u16 | hi u16 | flags u16 | ksize u16 | key | data; in
 *		a leaf lo|hi<<16 is the data size (F_BIGDATA: the data is
 *		the u64 number of its first overflow page); in a branch
 *		lo|hi<<16|flags<<32 is the child's page number (the key
 *		of the first node is empty)
 *	meta	pages 0 and 1: after the page header, magic u32
 *		0xBEEFC0DE | version u32 | address u64 | mapsize u64 |
 *		free db | main db | last page u64 | txnid u64; LMDB uses
 *		the one with the larger txnid
 *	db	pad u32 (the page size, in the free db of a meta) |
 *		flags u16 | depth u16 | branch, leaf, overflow pages u64 |
 *		entries u64 | root u64 (~0: empty)
 *
 * The main tree's leaves are the named tables (F_SUBDATA, a db record);
 * the free tree's values are lists of free pages (a count, then page
 * numbers, u64 each). Keys compare as each tree's comparator does:
 * the free tree's keys are transaction ids, native unsigned integers
 * (MDB_INTEGERKEY: 1023 sorts before 1024 though its bytes do not), and
 * so are the keys of a table whose flags say MDB_INTEGERKEY; a table
 * with MDB_REVERSEKEY compares its keys' bytes from the end; any other
 * tree uses LMDB's default, memcmp, then the shorter first. aptix opens
 * no table with MDB_DUPSORT, so a node with F_DUPDATA is damage.
 */
#include "util/common.h"
#include "store/lmdb-file.h"
#include "aptix/process.h"
#include "object/zstream.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define HDR 16			/* page header */
#define NODE 8			/* node header */
#define DB_SIZE 48
#define META_SIZE (HDR + 136)
#define MAGIC 0xBEEFC0DEu
#define MAX_DEPTH 32		/* LMDB's cursor stack */
#define P_INVALID UINT64_MAX

#define P_BRANCH 0x01
#define P_LEAF 0x02
#define P_OVERFLOW 0x04
#define P_META 0x08
#define P_IGNORED (0x10 | 0x4000 | 0x8000)	/* dirty, loose, keep */
#define F_BIGDATA 0x01
#define F_SUBDATA 0x02
#define F_DUPDATA 0x04
#define DB_REVERSEKEY 0x02	/* a db record's flags (mdb_dbi_open's) */
#define DB_INTEGERKEY 0x08

#define MAX_REPORTED 200	/* problems reported one by one */

struct db {
	uint32_t pad;
	uint16_t flags, depth;
	uint64_t branch, leaf, overflow, entries, root;
};

struct meta {
	int ok;
	uint32_t magic, version;
	struct db dbs[2];	/* free, main */
	uint64_t last_pg, txnid;
};

/* Counts of one tree as walked. */
struct count {
	uint64_t branch, leaf, overflow, entries;
	unsigned depth;
};

struct lfile {
	int fd;
	uint64_t size, npages, last_pg;
	unsigned psize;
	struct meta meta[2];
	int cur;			/* the meta LMDB uses */
	unsigned char *seen;		/* a bit per page */
	/* check */
	aptix_lmdb_problem_cb problem;
	void *payload;
	size_t problems;
	/* salvage */
	aptix_lmdb_record_cb record;
	size_t bad_pages;
	int salvage;
	int counting;			/* salvage: count bad pages */
	int stop;			/* the callback's return */
};

static uint16_t get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

APTIX_FORMAT(2, 3)
static void problem(struct lfile *f, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	if (f->salvage) {
		/* an older meta's pages may have been reused: not damage */
		f->bad_pages += f->counting;
		return;
	}
	if (f->problems++ >= MAX_REPORTED)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (f->problem)
		f->problem(msg, f->payload);
}

int aptix_lmdb__pread(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done,
				  (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static int read_at(struct lfile *f, void *buf, size_t len, uint64_t off)
{
	return aptix_lmdb__pread(f->fd, buf, len, off);
}

int aptix_lmdb__read_pointer(struct aptix_lmdb_ptr *ptr, const void *rec,
			     size_t rlen)
{
	const unsigned char *p = rec, *end = p + rlen;
	uint64_t n, off = 0, head = 0;

	if (!rlen || p[0] != APTIX_LMDB_PTR_MARK)
		return 0;
	p++;
	memset(ptr, 0, sizeof(*ptr));
	if (aptix__get_varint(&ptr->first, &p, end) < 0 ||
	    aptix__get_varint(&n, &p, end) < 0)
		return -1;
	ptr->piece = APTIX_LMDB_PIECE_MAX;
	if (end - p > 4) {	/* format 6: the first piece, the CRC-32 */
		if (aptix__get_varint(&head, &p, end) < 0 || end - p != 4 ||
		    !head || head > n || head > APTIX_LMDB_PIECE_MAX)
			return -1;
		ptr->has_crc = 1;
		ptr->crc = aptix__get_be32(p);
		p = end;
	} else if (p != end) {	/* format 5: the offset */
		if (aptix__get_varint(&off, &p, end) < 0 ||
		    off >= APTIX_LMDB_PIECE)
			return -1;
		ptr->piece = APTIX_LMDB_PIECE;
	}
	if (p != end || n == 0 || n > (uint64_t)SIZE_MAX / 2 ||
	    ptr->first > UINT64_MAX - n)
		return -1;
	ptr->len = (size_t)n;
	ptr->off = (size_t)off;
	if (!head)
		head = ptr->piece - off < n ? ptr->piece - off : n;
	ptr->head = (size_t)head;
	return 1;
}

size_t aptix_lmdb__ptr_pieces(const struct aptix_lmdb_ptr *p)
{
	return 1 + (p->len - p->head + p->piece - 1) / p->piece;
}

int aptix_lmdb__ptr_piece(const struct aptix_lmdb_ptr *p, size_t i,
			  size_t size, size_t *start, size_t *n)
{
	size_t before = i ? p->head + p->piece * (i - 1) : 0;

	*start = i ? 0 : p->off;
	*n = i ? p->piece : p->head;
	if (p->len - before < *n)
		*n = p->len - before;
	if (i + 1 < aptix_lmdb__ptr_pieces(p) || p->has_crc)
		return size == *start + *n ? 0 : -1;
	return size >= *start + *n && size <= APTIX_LMDB_PIECE_MAX ? 0 : -1;
}

static void get_db(struct db *d, const unsigned char *p)
{
	d->pad = get32(p);
	d->flags = get16(p + 4);
	d->depth = get16(p + 6);
	d->branch = get64(p + 8);
	d->leaf = get64(p + 16);
	d->overflow = get64(p + 24);
	d->entries = get64(p + 32);
	d->root = get64(p + 40);
}

static int psize_ok(uint32_t ps)
{
	return ps >= 512 && ps <= 65536 && !(ps & (ps - 1));
}

static void read_meta(struct lfile *f, int i, uint64_t off)
{
	unsigned char b[META_SIZE];
	struct meta *m = &f->meta[i];

	memset(m, 0, sizeof(*m));
	if (read_at(f, b, sizeof(b), off) < 0) {
		problem(f, "meta page %d: cannot be read (the file has %llu "
			"bytes)", i, (unsigned long long)f->size);
		return;
	}
	m->magic = get32(b + HDR);
	m->version = get32(b + HDR + 4);
	get_db(&m->dbs[0], b + HDR + 24);
	get_db(&m->dbs[1], b + HDR + 24 + DB_SIZE);
	m->last_pg = get64(b + HDR + 24 + 2 * DB_SIZE);
	m->txnid = get64(b + HDR + 32 + 2 * DB_SIZE);
	if (!(get16(b + 10) & P_META))
		problem(f, "meta page %d: not flagged as a meta page", i);
	else if (m->magic != MAGIC)
		problem(f, "meta page %d: bad magic %08x", i, m->magic);
	else if (m->version != 1)
		problem(f, "meta page %d: unknown version %u", i, m->version);
	else if (!psize_ok(m->dbs[0].pad))
		problem(f, "meta page %d: bad page size %u", i, m->dbs[0].pad);
	else if (m->last_pg < 1)
		problem(f, "meta page %d: bad last page %llu", i,
			(unsigned long long)m->last_pg);
	else
		m->ok = 1;
}

static int open_file(struct lfile *f, const char *path)
{
	struct stat sb;
	unsigned char b[HDR + 24 + 4];

	memset(f, 0, sizeof(*f));
	f->cur = -1;
	f->fd = -1;
	if (aptix_sanitize_stdfds() < 0)
		return APTIX_ERROR;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0 || fstat(f->fd, &sb) < 0) {
		aptix_error_set_os("cannot read '%s'", path);
		if (f->fd >= 0)
			close(f->fd);
		f->fd = -1;
		return APTIX_ERROR;
	}
	f->size = (uint64_t)sb.st_size;
	/* LMDB reads meta 1 at meta 0's page size */
	f->psize = 4096;
	if (read_at(f, b, sizeof(b), 0) == 0 &&
	    psize_ok(get32(b + HDR + 24)))
		f->psize = get32(b + HDR + 24);
	return 0;
}

int aptix_lmdb_file_meta_check(const char *path)
{
	unsigned char b[2][META_SIZE];
	struct lfile f;
	uint32_t ps0, ps;
	uint64_t off = 0;
	int i, use = 0;

	if (open_file(&f, path) < 0)
		return APTIX_ERROR;
	for (i = 0; i < 2; i++) {
		if (read_at(&f, b[i], sizeof(b[i]), off) < 0 ||
		    !(get16(b[i] + 10) & P_META) ||
		    get32(b[i] + HDR) != MAGIC || get32(b[i] + HDR + 4) != 1) {
			close(f.fd);
			return 0;	/* LMDB refuses it: MDB_INVALID */
		}
		if (i && get64(b[1] + HDR + 32 + 2 * DB_SIZE) >
		    get64(b[0] + HDR + 32 + 2 * DB_SIZE))
			use = 1;
		off += get32(b[i] + HDR + 24);
	}
	close(f.fd);
	ps0 = get32(b[0] + HDR + 24);
	ps = get32(b[use] + HDR + 24);
	if (psize_ok(ps0) && ps == ps0 && f.size >= 2 * (uint64_t)ps)
		return 0;
	aptix_error_set(APTIX_ERROR_LMDB, "cannot open store: store is "
			"corrupt: meta page %d of '%s' gives a page size of %u "
			"(the file's is %u); 'aptix salvage <dir>' copies what "
			"is readable", use, path, ps, ps0);
	return APTIX_ECORRUPT;
}

static void pick_meta(struct lfile *f)
{
	struct meta *m;

	read_meta(f, 0, 0);
	read_meta(f, 1, f->psize);
	if (f->meta[0].ok && f->meta[1].ok)
		f->cur = f->meta[1].txnid > f->meta[0].txnid;
	else if (f->meta[0].ok || f->meta[1].ok)
		f->cur = f->meta[1].ok;
	if (f->cur < 0)
		return;
	m = &f->meta[f->cur];
	if (m->dbs[0].pad != f->psize) {
		f->psize = m->dbs[0].pad;
	}
	f->npages = f->size / f->psize;
	f->last_pg = m->last_pg;
	if (f->last_pg >= f->npages) {
		problem(f, "data.mdb is truncated: it has %llu pages, its "
			"meta page names page %llu", (unsigned long long)
			f->npages, (unsigned long long)f->last_pg);
		f->last_pg = f->npages ? f->npages - 1 : 0;
	}
}

static int see(struct lfile *f, uint64_t pg)
{
	unsigned char bit = (unsigned char)(1u << (pg & 7));

	if (f->seen[pg >> 3] & bit)
		return 1;
	f->seen[pg >> 3] |= bit;
	return 0;
}

/*
 * Keys a and b compared as LMDB's comparator for a tree with db flags
 * keyflags: mdb_cmp_int/mdb_cmp_long for integer keys (their size is
 * 4 or 8; LMDB requires all keys of such a tree to have one size, so a
 * key of another size sorts as damage), mdb_cmp_memnr for reversed
 * keys, else mdb_cmp_memn.
 */
static int key_cmp(unsigned keyflags, const unsigned char *a, size_t alen,
		   const unsigned char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen, i;
	int c = 0;

	if (keyflags & DB_INTEGERKEY) {
		uint64_t x, y;

		if (alen != blen || (alen != 4 && alen != 8))
			return 0;	/* never in order */
		x = alen == 8 ? get64(a) : get32(a);
		y = alen == 8 ? get64(b) : get32(b);
		return x < y ? -1 : x > y;
	}
	if (keyflags & DB_REVERSEKEY) {
		for (i = 1; i <= n && !c; i++)
			c = (int)a[alen - i] - (int)b[blen - i];
	} else {
		c = memcmp(a, b, n);
	}
	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* A page in range, read into buf, its header checked. */
static int get_page(struct lfile *f, unsigned char *buf, uint64_t pg,
		    const char *tree)
{
	if (pg < 2 || pg > f->last_pg) {
		problem(f, "%s: page number %llu out of range (2..%llu)",
			tree, (unsigned long long)pg,
			(unsigned long long)f->last_pg);
		return -1;
	}
	if (see(f, pg)) {
		/* salvage: a page both metas' trees share, walked once */
		if (!f->salvage)
			problem(f, "%s: page %llu is used twice", tree,
				(unsigned long long)pg);
		return -1;
	}
	if (read_at(f, buf, f->psize, pg * f->psize) < 0) {
		problem(f, "%s: page %llu cannot be read", tree,
			(unsigned long long)pg);
		return -1;
	}
	if (get64(buf) != pg) {
		problem(f, "%s: page %llu says it is page %llu", tree,
			(unsigned long long)pg,
			(unsigned long long)get64(buf));
		return -1;
	}
	return 0;
}

static int by_offset(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

/*
 * The nodes of a page tile [upper, page end) exactly: LMDB packs them
 * (a node takes an even number of bytes), and on a write it moves
 * nodes by the sizes they claim, so a size that overlaps its neighbour
 * would move bytes out of the page.
 */
static int nodes_packed(struct lfile *f, const unsigned char *p,
			unsigned n, unsigned upper)
{
	unsigned offs[(65536 - HDR) / 2], i, at = upper;
	int leaf = (get16(p + 10) & ~P_IGNORED) == P_LEAF;

	for (i = 0; i < n; i++)
		offs[i] = get16(p + HDR + 2 * i);
	if (n > 1)
		qsort(offs, n, sizeof(offs[0]), by_offset);
	for (i = 0; i < n; i++) {
		const unsigned char *node = p + offs[i];
		uint64_t sz = NODE + get16(node + 6);

		if (offs[i] != at)
			return -1;
		if (leaf)
			sz += get16(node + 4) & F_BIGDATA ? 8 :
				(get16(node) | (uint64_t)get16(node + 2) << 16);
		sz += sz & 1;
		if (sz > f->psize - at)
			return -1;
		at += (unsigned)sz;
	}
	return at == f->psize ? 0 : -1;
}

/*
 * A leaf or branch page's layout: node offsets sane, nodes packed. Sets
 * *n to the number of nodes.
 */
static int page_layout(struct lfile *f, const unsigned char *p,
		       uint64_t pg, const char *tree, unsigned *n)
{
	unsigned lower = get16(p + 12), upper = get16(p + 14), i;

	if (lower < HDR || lower > upper || upper > f->psize ||
	    (lower - HDR) % 2 || lower == HDR) {
		problem(f, "%s: page %llu: bad bounds (lower %u, upper %u)",
			tree, (unsigned long long)pg, lower, upper);
		return -1;
	}
	*n = (lower - HDR) / 2;
	for (i = 0; i < *n; i++) {
		unsigned off = get16(p + HDR + 2 * i);

		if (off < upper || off % 2 || off + NODE > f->psize) {
			problem(f, "%s: page %llu: node %u at a bad offset %u",
				tree, (unsigned long long)pg, i, off);
			return -1;
		}
	}
	if (nodes_packed(f, p, *n, upper) < 0) {
		problem(f, "%s: page %llu: its nodes overlap or leave gaps",
			tree, (unsigned long long)pg);
		return -1;
	}
	return 0;
}

struct bound {
	const unsigned char *key;
	size_t len;
};

struct walk {
	const char *tree;
	struct count c;
	int is_main, is_free;
	unsigned keyflags;	/* how keys compare (key_cmp) */
	/* the main tree's leaves: the tables' trees, walked after it */
	struct sub {
		char name[64];
		struct db db;
	} subs[32];
	unsigned nsubs;
};

static int leaf_node(struct lfile *f, struct walk *w, const unsigned char *p,
		     uint64_t pg, unsigned i);

/* The overflow pages of a big value; its bytes into out (may be NULL). */
static int overflow(struct lfile *f, struct walk *w, uint64_t pg,
		    uint64_t dsize, unsigned char **out)
{
	unsigned char *head = malloc(f->psize);
	uint64_t pages, k;
	int r = -1;

	*out = NULL;
	if (!head)
		return aptix_error_oom();
	if (get_page(f, head, pg, w->tree) < 0)
		goto done;
	pages = get32(head + 12);
	if ((get16(head + 10) & ~P_IGNORED) != P_OVERFLOW || !pages ||
	    pages > f->last_pg - pg + 1 ||
	    dsize > pages * f->psize - HDR) {
		problem(f, "%s: overflow page %llu: bad header", w->tree,
			(unsigned long long)pg);
		goto done;
	}
	for (k = 1; k < pages; k++)
		if (see(f, pg + k)) {
			problem(f, "%s: page %llu is used twice", w->tree,
				(unsigned long long)(pg + k));
			goto done;
		}
	w->c.overflow += pages;
	if (f->salvage || w->is_main || w->is_free) {
		if (!(*out = malloc(dsize ? dsize : 1)))
			goto done;
		if (read_at(f, *out, dsize, pg * f->psize + HDR) < 0) {
			free(*out);
			*out = NULL;
			problem(f, "%s: overflow page %llu cannot be read",
				w->tree, (unsigned long long)pg);
			goto done;
		}
	}
	r = 0;
done:
	free(head);
	return r;
}

static void free_list(struct lfile *f, struct walk *w, const unsigned char *v,
		      uint64_t len)
{
	uint64_t n, k;

	if (len < 8 || (n = get64(v)) > (len - 8) / 8) {
		problem(f, "%s: a free list of a bad size", w->tree);
		return;
	}
	for (k = 0; k < n; k++) {
		uint64_t pg = get64(v + 8 + 8 * k);

		if (pg < 2 || pg > f->last_pg)
			problem(f, "free list: page %llu out of range",
				(unsigned long long)pg);
		else if (see(f, pg))
			problem(f, "free list: page %llu is free and in use",
				(unsigned long long)pg);
	}
}

static int leaf_node(struct lfile *f, struct walk *w, const unsigned char *p,
		     uint64_t pg, unsigned i)
{
	const unsigned char *node = p + get16(p + HDR + 2 * i);
	unsigned ksize = get16(node + 6), flags = get16(node + 4);
	uint64_t dsize = get16(node) | (uint64_t)get16(node + 2) << 16;
	size_t at = (size_t)(node - p) + NODE + ksize;
	const unsigned char *key = node + NODE, *val = p + at;
	unsigned char *big = NULL;
	uint64_t off = pg * f->psize + at;	/* the value in the file */
	int r = 0;

	if (at > f->psize || (flags & ~(F_BIGDATA | F_SUBDATA)) ||
	    (flags & F_SUBDATA && !w->is_main) ||
	    (!(flags & F_BIGDATA) && dsize > f->psize - at) ||
	    (flags & F_BIGDATA && 8 > f->psize - at)) {
		problem(f, "%s: page %llu: node %u is damaged", w->tree,
			(unsigned long long)pg, i);
		return -1;
	}
	w->c.entries++;
	if (flags & F_BIGDATA) {
		off = get64(val) * f->psize + HDR;
		if (overflow(f, w, get64(val), dsize, &big) < 0)
			return -1;
		val = big;
	}
	if (w->is_main) {
		if ((flags & F_SUBDATA) && dsize == DB_SIZE && val &&
		    ksize < sizeof(w->subs[0].name) &&
		    w->nsubs < ARRAY_SIZE(w->subs)) {
			struct sub *s = &w->subs[w->nsubs++];

			memcpy(s->name, key, ksize);
			s->name[ksize] = '\0';
			get_db(&s->db, val);
		} else if (!(flags & F_SUBDATA)) {
			problem(f, "main tree: page %llu: node %u is not a "
				"table", (unsigned long long)pg, i);
		}
	} else if (w->is_free && val) {
		free_list(f, w, val, dsize);
	} else if (f->salvage && f->record && val) {
		r = f->record(w->tree, key, ksize, val, dsize, off,
			      f->payload);
		if (r)
			f->stop = r;
	}
	free(big);
	return r;
}

/* The subtree at pg, depth levels high, keys in [lo, hi). */
static void walk_page(struct lfile *f, struct walk *w, uint64_t pg,
		      unsigned depth, struct bound lo, struct bound hi)
{
	unsigned char *p;
	unsigned n, i, flags;
	const unsigned char *prev = NULL;
	size_t prevlen = 0;

	if (f->stop)
		return;
	if (!(p = malloc(f->psize))) {
		f->stop = aptix_error_oom();
		return;
	}
	if (get_page(f, p, pg, w->tree) < 0 ||
	    page_layout(f, p, pg, w->tree, &n) < 0)
		goto done;
	flags = get16(p + 10) & ~P_IGNORED;
	if (flags != (depth > 1 ? P_BRANCH : P_LEAF)) {
		problem(f, "%s: page %llu: flags %#x, expected a %s page",
			w->tree, (unsigned long long)pg, flags,
			depth > 1 ? "branch" : "leaf");
		goto done;
	}
	if (depth > 1)
		w->c.branch++;
	else
		w->c.leaf++;
	for (i = 0; i < n && !f->stop; i++) {
		const unsigned char *node = p + get16(p + HDR + 2 * i);
		unsigned ksize = get16(node + 6);
		const unsigned char *key = node + NODE;

		if ((size_t)(node - p) + NODE + ksize > f->psize) {
			problem(f, "%s: page %llu: node %u is damaged",
				w->tree, (unsigned long long)pg, i);
			continue;
		}
		if (depth > 1 && i == 0) {
			key = NULL;	/* a branch's first key is unused */
		} else if ((prev &&
			    key_cmp(w->keyflags, prev, prevlen, key,
				    ksize) >= 0) ||
			   (lo.key &&
			    key_cmp(w->keyflags, key, ksize, lo.key,
				    lo.len) < 0) ||
			   (hi.key &&
			    key_cmp(w->keyflags, key, ksize, hi.key,
				    hi.len) >= 0)) {
			problem(f, "%s: page %llu: node %u: keys out of "
				"order", w->tree, (unsigned long long)pg, i);
			continue;
		}
		if (key) {
			prev = key;
			prevlen = ksize;
		}
		if (depth > 1) {
			uint64_t child = get16(node) |
				(uint64_t)get16(node + 2) << 16 |
				(uint64_t)get16(node + 4) << 32;
			struct bound clo = lo, chi = hi;

			if (key) {
				clo.key = key;
				clo.len = ksize;
			}
			if (i + 1 < n) {
				const unsigned char *nx = p +
					get16(p + HDR + 2 * (i + 1));

				chi.key = nx + NODE;
				chi.len = get16(nx + 6);
				if ((size_t)(nx - p) + NODE + chi.len >
				    f->psize)
					chi = hi;
			}
			walk_page(f, w, child, depth - 1, clo, chi);
		} else {
			leaf_node(f, w, p, pg, i);
		}
	}
done:
	free(p);
}

static void walk_tree(struct lfile *f, struct walk *w, const struct db *d)
{
	struct bound none = { NULL, 0 };

	if (d->root == P_INVALID) {
		if (d->depth || d->entries)
			problem(f, "%s: empty, but its record says %llu "
				"entries", w->tree,
				(unsigned long long)d->entries);
		return;
	}
	if (!d->depth || d->depth > MAX_DEPTH) {
		problem(f, "%s: bad depth %u", w->tree, d->depth);
		return;
	}
	walk_page(f, w, d->root, d->depth, none, none);
	if (f->salvage || f->stop)
		return;
	if (w->c.entries != d->entries || w->c.leaf != d->leaf ||
	    w->c.branch != d->branch || w->c.overflow != d->overflow)
		problem(f, "%s: its record says %llu entries on %llu+%llu+"
			"%llu pages, the tree has %llu on %llu+%llu+%llu",
			w->tree, (unsigned long long)d->entries,
			(unsigned long long)d->branch,
			(unsigned long long)d->leaf,
			(unsigned long long)d->overflow,
			(unsigned long long)w->c.entries,
			(unsigned long long)w->c.branch,
			(unsigned long long)w->c.leaf,
			(unsigned long long)w->c.overflow);
}

/* The trees of meta m: main, then each table, then the free list. */
static void walk_meta(struct lfile *f, const struct meta *m)
{
	struct walk *mw = calloc(1, sizeof(*mw));
	unsigned i;

	if (!mw) {
		f->stop = aptix_error_oom();
		return;
	}
	mw->tree = "main tree";
	mw->is_main = 1;
	walk_tree(f, mw, &m->dbs[1]);
	for (i = 0; i < mw->nsubs && !f->stop; i++) {
		struct walk w;

		memset(&w, 0, sizeof(w));
		w.tree = mw->subs[i].name;
		w.keyflags = mw->subs[i].db.flags;
		walk_tree(f, &w, &mw->subs[i].db);
	}
	if (!f->salvage && !f->stop) {
		struct walk w;

		memset(&w, 0, sizeof(w));
		w.tree = "free list";
		w.is_free = 1;
		w.keyflags = DB_INTEGERKEY;	/* whatever its record says */
		walk_tree(f, &w, &m->dbs[0]);
	}
	free(mw);
}

static int start(struct lfile *f, const char *path)
{
	if (open_file(f, path) < 0)
		return APTIX_ERROR;
	pick_meta(f);
	if (f->cur < 0)
		return 0;
	f->seen = calloc((size_t)(f->last_pg / 8 + 1), 1);
	if (!f->seen)
		return aptix_error_oom();
	return 0;
}

static void finish(struct lfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->seen);
}

int aptix_lmdb_file_check(const char *path, aptix_lmdb_problem_cb cb,
			  void *payload)
{
	struct lfile f;
	int r;

	if ((r = start(&f, path)) < 0) {
		finish(&f);
		return r;
	}
	f.problem = cb;
	f.payload = payload;
	if (f.cur < 0) {
		if (!f.problems)
			problem(&f, "no valid meta page");
	} else {
		/* LMDB refuses the file if either meta page is bad */
		walk_meta(&f, &f.meta[f.cur]);
	}
	r = f.stop ? f.stop : (int)(f.problems > INT32_MAX ? INT32_MAX :
				    f.problems);
	if (f.problems > MAX_REPORTED && cb) {
		char msg[80];

		snprintf(msg, sizeof(msg), "(%zu more problems)",
			 f.problems - MAX_REPORTED);
		cb(msg, payload);
	}
	finish(&f);
	return r;
}

/* Every leaf page no tree reached: its valid nodes, table unknown. */
static void scan_orphans(struct lfile *f)
{
	unsigned char *p = malloc(f->psize);
	uint64_t pg;
	struct walk w;

	if (!p) {
		f->stop = aptix_error_oom();
		return;
	}
	memset(&w, 0, sizeof(w));
	w.tree = NULL;
	for (pg = 2; pg < f->npages && !f->stop; pg++) {
		unsigned n, i;

		if (pg <= f->last_pg && (f->seen[pg >> 3] & (1u << (pg & 7))))
			continue;
		if (read_at(f, p, f->psize, pg * f->psize) < 0 ||
		    get64(p) != pg ||
		    (get16(p + 10) & ~P_IGNORED) != P_LEAF)
			continue;
		if (page_layout(f, p, pg, "orphan", &n) < 0)
			continue;
		for (i = 0; i < n && !f->stop; i++)
			leaf_node(f, &w, p, pg, i);
	}
	free(p);
}

int aptix_lmdb_file_salvage(const char *path, aptix_lmdb_record_cb cb,
			    void *payload, size_t *bad_pages)
{
	struct lfile f;
	int r, k;

	if ((r = start(&f, path)) < 0) {
		finish(&f);
		return r;
	}
	f.salvage = 1;
	f.record = cb;
	f.payload = payload;
	if (f.cur >= 0) {
		/* the newest meta first, then the other */
		for (k = 0; k < 2 && !f.stop; k++) {
			const struct meta *m = &f.meta[k ? !f.cur : f.cur];

			f.counting = !k;
			if (m->ok && m->last_pg <= f.last_pg)
				walk_meta(&f, m);
		}
		f.counting = 0;
		if (!f.stop)
			scan_orphans(&f);
	}
	if (bad_pages)
		*bad_pages = f.bad_pages;
	r = f.stop;
	finish(&f);
	return r;
}

static int root_ok(uint64_t root, uint64_t last_pg)
{
	return root == P_INVALID || (root >= 2 && root <= last_pg);
}

int aptix_lmdb_map_meta_check(const unsigned char *map, uint32_t psize)
{
	const unsigned char *m[2] = { map, map + psize };
	const unsigned char *p;
	uint64_t last;
	int use = get64(m[1] + HDR + 32 + 2 * DB_SIZE) >
		get64(m[0] + HDR + 32 + 2 * DB_SIZE);

	p = m[use];
	last = get64(p + HDR + 24 + 2 * DB_SIZE);
	if ((get16(p + 10) & P_META) && get32(p + HDR) == MAGIC &&
	    get32(p + HDR + 4) == 1 && get32(p + HDR + 24) == psize &&
	    last >= 1 && root_ok(get64(p + HDR + 24 + 40), last) &&
	    root_ok(get64(p + HDR + 24 + DB_SIZE + 40), last))
		return 0;
	aptix_error_set(APTIX_ERROR_LMDB, "store is corrupt: meta page %d of "
			"data.mdb is damaged; run 'aptix fsck', and 'aptix "
			"salvage <dir>' to copy what is readable", use);
	return APTIX_ECORRUPT;
}
