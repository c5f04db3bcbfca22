/*
 * src/maintenance/salvage.c - copy what is readable of a damaged store into a new
 * one (`aptix salvage`), as sqlite3's .recover does.
 *
 * The damaged store is never opened through LMDB: its data.mdb is read
 * with pread by lmdb-file.c, which walks the tables' trees from each
 * valid meta page (newest first) and then scans every leaf page no tree
 * reached. What it finds goes in as follows:
 *
 *	objects	every value that decodes and hashes to its key, wherever
 *		it was found (an object's id proves its bytes, so a copy
 *		on an old page is as good as any);
 *	values	the pieces of the larger objects' values (store format 4:
 *		see store-lmdb.c, "Values in append order"). An objects
 *		record of 64 bytes or more is a pointer: 0x00, the varint
 *		number of the value's first piece, the varint length, and
 *		(format 5) the varint offset of the value in that piece;
 *		the pieces, of 2,000 bytes (format 5: 1,002, shared by the
 *		values written one after the other), the last one holding
 *		at least the rest, are under consecutive be64 numbers. The
 *		pieces are the records of that table's trees, then those
 *		with an 8-byte key and a piece's size on orphan pages; of
 *		the copies of one number a tree's wins, then the longest
 *		(format 5 fills the table's last piece up over several
 *		writes: a shorter copy is an older one), then the first
 *		found; only where each lies in the file is kept. Once
 *		the scan is over each pointer, from a tree or an orphan
 *		page, is resolved and its value taken as one found in
 *		place; a value whose pieces are not
 *		all there at their sizes is damaged. Pieces no pointer
 *		names are not read: an object whose record was lost is
 *		lost, as in older formats;
 *	refs	from the refs tree, the newest meta first; a ref name met
 *		only on an orphan page is taken only when no tree gave it
 *		(it may be stale); a ref whose target object was not
 *		recovered is dropped (symbolic refs are kept);
 *	reflog	entries likewise, first found first kept;
 *	config	the file is copied as it is.
 *
 * The index (sessions, children, conversations, timeline) is rebuilt
 * from the recovered objects and refs (the pieces of session records
 * are not read); turns in flight are not copied. The new store is
 * written through the store API, in the current format.
 */
#include "util/common.h"
#include "aptix/repo.h"
#include "aptix/refs.h"
#include "aptix/index.h"
#include "aptix/oid.h"
#include "store/lmdb-file.h"
#include "store/odb-store.h"
#include "repo/repo.h"
#include "object/zstream.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define BATCH 512
/* The values table, as store-lmdb.c writes it. */
#define VALUES_TABLE "values"
#define PIECE_MAX APTIX_LMDB_PIECE_MAX

struct rec {
	aptix_table table;
	aptix_buf key, val;
	int from_tree;
};

/* A record of the values table: where it lies in the file. */
struct piece {
	uint64_t num;		/* its key */
	uint64_t off;		/* its bytes in the file */
	size_t len;
	size_t seq;		/* the order found */
	int tree;		/* found in a tree, not on an orphan page */
};

/* An objects record that points into the values table. */
struct pointer {
	unsigned char key[APTIX_OID_RAWSZ];
	struct aptix_lmdb_ptr at;	/* its pieces */
	int from_tree;
};

struct salvage {
	aptix_repo *repo;
	aptix_salvage_stats *stats;
	struct rec *pending;		/* objects, written in batches */
	size_t npending, alloc;
	struct rec *spliced;		/* blobs whose check needs a base */
	size_t nspliced, spliced_alloc;
	struct rec *refs;		/* refs and reflog, written last */
	size_t nrefs, refs_alloc;
	struct piece *pieces;		/* the values table's records */
	size_t npieces, pieces_alloc;
	struct pointer *ptrs;		/* resolved once the scan is over */
	size_t nptrs, ptrs_alloc;
	int error;
};

static int push(struct rec **v, size_t *n, size_t *alloc, aptix_table t,
		const void *key, size_t klen, const void *val, size_t vlen,
		int from_tree)
{
	struct rec *r;

	if (aptix__grow(v, alloc, *n, sizeof(**v), 64) < 0)
		return APTIX_ERROR;
	r = &(*v)[(*n)++];
	r->table = t;
	r->from_tree = from_tree;
	aptix_buf_init(&r->key, 0);
	aptix_buf_init(&r->val, 0);
	if (aptix_buf_set(&r->key, key, klen) < 0 ||
	    aptix_buf_set(&r->val, val, vlen) < 0)
		return APTIX_ERROR;
	return 0;
}

static void release(struct rec *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		aptix_buf_release(&v[i].key);
		aptix_buf_release(&v[i].val);
	}
}

static int write_objects(aptix_store_wtxn *w, void *payload)
{
	struct salvage *s = payload;
	size_t i;
	int r;

	for (i = 0; i < s->npending; i++) {
		aptix_oid id;

		memcpy(id.id, s->pending[i].key.ptr, APTIX_OID_RAWSZ);
		if ((r = aptix_odb_store_put(w, &id, &s->pending[i].val)) < 0)
			return r;
	}
	return 0;
}

static int flush_objects(struct salvage *s)
{
	aptix_store *st = s->repo->store;
	int r = 0;

	if (s->npending)
		r = st->write(st, write_objects, s);
	release(s->pending, s->npending);
	s->npending = 0;
	return r;
}

static int read_base(aptix_buf *out, const aptix_oid *id, aptix_otype type,
		     int splice, void *payload)
{
	aptix_otype t;
	int r = aptix_odb_read(out, &t, payload, id, 0);

	(void)splice;
	return !r && t != type ? APTIX_ECORRUPT : r;
}

/*
 * A value that decodes and hashes to its key (a spliced blob's bases
 * are read from odb, the objects recovered so far).
 */
static int is_object(const void *key, size_t klen, const void *val,
		     size_t vlen, aptix_odb *odb)
{
	aptix_buf content = APTIX_BUF_INIT;
	aptix_otype type;
	aptix_oid actual;
	int ok;

	if (klen != APTIX_OID_RAWSZ)
		return 0;
	ok = aptix_stored_decode_with(&content, &type, val, vlen,
				      odb ? read_base : NULL, odb) == 0 &&
		aptix_object_hash(&actual, type, content.ptr,
				  content.len) == 0 &&
		!memcmp(actual.id, key, APTIX_OID_RAWSZ);
	aptix_buf_release(&content);
	aptix_error_clear();
	return ok;
}

/* A ref name as a C string (klen bytes, no NUL), else 0. */
static int ref_name(char *out, size_t size, const void *key, size_t klen)
{
	if (!klen || klen >= size || memchr(key, '\0', klen))
		return 0;
	memcpy(out, key, klen);
	out[klen] = '\0';
	if (strcmp(out, "HEAD") && aptix_ref_check_name(out) < 0) {
		aptix_error_clear();
		return 0;
	}
	return 1;
}

static int ref_value_ok(const char *v, size_t len)
{
	size_t i;

	if (len >= 5 && !memcmp(v, "ref: ", 5))
		return len < 1024 && !memchr(v, '\0', len);
	if (len != APTIX_OID_HEXSZ)
		return 0;
	for (i = 0; i < len; i++)
		if (!strchr("0123456789abcdef", v[i]))
			return 0;
	return 1;
}

/*
 * An objects value (in place, or put together from its pieces): 1 when
 * it is taken (an object, or one to check once its bases are in), 0
 * when it is no object, < 0 on error.
 */
static int take_object(struct salvage *s, const void *key, size_t klen,
		       const void *val, size_t vlen)
{
	int r = 0;

	if (klen != APTIX_OID_RAWSZ)
		return 0;
	if (aptix_stored_needs_bases(val, vlen)) {
		/* checked once every other object is in */
		if (push(&s->spliced, &s->nspliced, &s->spliced_alloc,
			 APTIX_TABLE_OBJECTS, key, klen, val, vlen, 1) < 0)
			return APTIX_ERROR;
		return 1;
	}
	if (!is_object(key, klen, val, vlen, NULL))
		return 0;
	s->stats->objects_seen++;
	if (push(&s->pending, &s->npending, &s->alloc, APTIX_TABLE_OBJECTS,
		 key, klen, val, vlen, 1) < 0)
		return APTIX_ERROR;
	if (s->npending >= BATCH)
		r = flush_objects(s);
	return r < 0 ? r : 1;
}

/* A record that points into the values table: 1 with its fields, or 0. */
static int read_pointer(struct aptix_lmdb_ptr *at, const void *val,
			size_t vlen)
{
	return aptix_lmdb__read_pointer(at, val, vlen) == 1;
}

static int add_piece(struct salvage *s, const void *key, uint64_t off,
		     size_t len, int tree)
{
	struct piece *p;

	if (aptix__grow(&s->pieces, &s->pieces_alloc, s->npieces,
			sizeof(*s->pieces), 256) < 0)
		return APTIX_ERROR;
	p = &s->pieces[s->npieces];
	p->num = aptix__get_be64(key);
	p->off = off;
	p->len = len;
	p->seq = s->npieces++;
	p->tree = tree;
	return 0;
}

static int add_pointer(struct salvage *s, const void *key,
		       const struct aptix_lmdb_ptr *at, int from_tree)
{
	struct pointer *p;

	if (aptix__grow(&s->ptrs, &s->ptrs_alloc, s->nptrs,
			sizeof(*s->ptrs), 64) < 0)
		return APTIX_ERROR;
	p = &s->ptrs[s->nptrs++];
	memcpy(p->key, key, APTIX_OID_RAWSZ);
	p->at = *at;
	p->from_tree = from_tree;
	return 0;
}

static int on_record(const char *table, const void *key, size_t klen,
		     const void *val, size_t vlen, uint64_t off,
		     void *payload)
{
	struct salvage *s = payload;
	aptix_purge_info purged;
	struct aptix_lmdb_ptr at;
	char name[1024];
	int r = 0;

	if (table && !strcmp(table, VALUES_TABLE)) {
		if (klen == 8 && vlen && vlen <= PIECE_MAX)
			return add_piece(s, key, off, vlen, 1);
		s->stats->damaged_records++;
		return 0;
	}
	/* on an orphan page: perhaps a piece (a pointer will tell) */
	if (!table && klen == 8 && vlen && vlen <= PIECE_MAX &&
	    (r = add_piece(s, key, off, vlen, 0)) < 0)
		return r;
	if ((!table || !strcmp(table, "objects")) &&
	    klen == APTIX_OID_RAWSZ && read_pointer(&at, val, vlen))
		return add_pointer(s, key, &at, !!table);
	if ((!table || !strcmp(table, "objects")) &&
	    (r = take_object(s, key, klen, val, vlen)) != 0) {
		return r < 0 ? r : 0;
	} else if ((!table || !strcmp(table, "refs")) &&
		   ref_name(name, sizeof(name), key, klen) &&
		   ref_value_ok(val, vlen)) {
		r = push(&s->refs, &s->nrefs, &s->refs_alloc,
			 APTIX_TABLE_REFS, key, klen, val, vlen, !!table);
	} else if ((!table || !strcmp(table, "reflog")) && klen > 9 &&
		   ((const char *)key)[klen - 9] == '\0' &&
		   ref_name(name, sizeof(name), key, klen - 9)) {
		r = push(&s->refs, &s->nrefs, &s->refs_alloc,
			 APTIX_TABLE_REFLOG, key, klen, val, vlen, !!table);
	} else if ((!table || !strcmp(table, "purged")) &&
		   klen == APTIX_OID_RAWSZ &&
		   aptix__purge_decode(&purged, val, vlen) == 0) {
		/* what was purged stays known as purged, not missing */
		r = push(&s->refs, &s->nrefs, &s->refs_alloc,
			 APTIX_TABLE_PURGED, key, klen, val, vlen, !!table);
	} else if (table && (!strcmp(table, "objects") ||
			     !strcmp(table, "refs") ||
			     !strcmp(table, "reflog"))) {
		s->stats->damaged_records++;
	}
	return r;
}

/*
 * By number; of the copies of one number, the one to keep first: a
 * tree's (the newest tree is walked first), else the longest (format 5
 * fills the last piece up over several writes), else the first found.
 */
static int by_number(const void *a, const void *b)
{
	const struct piece *x = a, *y = b;

	if (x->num != y->num)
		return x->num < y->num ? -1 : 1;
	if (x->tree != y->tree)
		return x->tree ? -1 : 1;
	if (!x->tree && x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The piece numbered num (pieces sorted, one per number), or NULL. */
static const struct piece *find_piece(const struct salvage *s, uint64_t num)
{
	size_t lo = 0, hi = s->npieces;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->pieces[mid].num < num)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->npieces && s->pieces[lo].num == num ?
		&s->pieces[lo] : NULL;
}

/*
 * The value p points to, into out: 0, or 1 when a piece is missing,
 * of the wrong size or unreadable, or the value fails its checksum
 * (the value is damaged).
 */
static int put_together(aptix_buf *out, const struct salvage *s, int fd,
			const struct pointer *p)
{
	const struct piece *pc = find_piece(s, p->at.first);
	const struct piece *end = s->pieces + s->npieces;
	size_t i, n = aptix_lmdb__ptr_pieces(&p->at), start, len;

	aptix_buf_clear(out);
	if (!pc || (size_t)(end - pc) < n)
		return 1;
	for (i = 0; i < n; i++)
		if (pc[i].num != p->at.first + i ||
		    aptix_lmdb__ptr_piece(&p->at, i, pc[i].len, &start,
					  &len) < 0)
			return 1;
	if (aptix_buf_grow(out, p->at.len) < 0)
		return APTIX_ERROR;
	for (i = 0; i < n; i++) {
		aptix_lmdb__ptr_piece(&p->at, i, pc[i].len, &start, &len);
		if (aptix_lmdb__pread(fd, out->ptr + out->len, len,
				      pc[i].off + start) < 0)
			return 1;
		out->len += len;
	}
	out->ptr[out->len] = '\0';
	/* format 6: a value that fails its checksum is damaged */
	if (p->at.has_crc && (uint32_t)crc32(0L, (const Bytef *)out->ptr,
					     (uInt)out->len) != p->at.crc)
		return 1;
	return 0;
}

/*
 * Once the scan is over: each pointer found in the objects table, its
 * value put together from the pieces and taken as a value in place.
 */
static int resolve_pointers(struct salvage *s, const char *path)
{
	aptix_buf val = APTIX_BUF_INIT;
	size_t i, k;
	int fd, r = 0;

	if (!s->nptrs)
		return 0;
	/* one piece per number: the first in by_number's order */
	if (s->npieces > 1)
		qsort(s->pieces, s->npieces, sizeof(*s->pieces), by_number);
	for (i = k = 0; i < s->npieces; i++)
		if (!k || s->pieces[i].num != s->pieces[k - 1].num)
			s->pieces[k++] = s->pieces[i];
	s->npieces = k;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		aptix_error_set_os("cannot read '%s'", path);
		return APTIX_ERROR;
	}
	for (i = 0; i < s->nptrs && !r; i++) {
		const struct pointer *p = &s->ptrs[i];
		int taken;

		if ((r = put_together(&val, s, fd, p)) < 0)
			break;
		/* pieces missing (r = 1), or no object: damaged */
		taken = r ? 0 : take_object(s, p->key, sizeof(p->key),
					    val.ptr, val.len);
		r = taken < 0 ? taken : 0;
		if (!taken && p->from_tree)
			s->stats->damaged_records++;
	}
	close(fd);
	aptix_buf_release(&val);
	return r;
}

/* A ref's target was recovered (a symbolic ref always counts). */
static int target_ok(aptix_repo *repo, const aptix_buf *val)
{
	aptix_oid id;

	if (val->len >= 5 && !memcmp(val->ptr, "ref: ", 5))
		return 1;
	if (aptix_oid_fromstrn(&id, val->ptr, val->len) < 0) {
		aptix_error_clear();
		return 0;
	}
	return aptix_odb_exists(repo->odb, &id);
}

struct keys {
	struct rec *v;
	size_t n, alloc;
};

static int collect_key(const void *key, size_t klen, const void *val,
		       size_t vlen, void *payload)
{
	struct keys *k = payload;

	(void)val;
	(void)vlen;
	return push(&k->v, &k->n, &k->alloc, 0, key, klen, "", 0, 0);
}

/* What init wrote (HEAD, its reflog entry) gives way to what is found. */
static int clear_table(aptix_store_wtxn *w, aptix_store *st, aptix_table t)
{
	struct keys k = { NULL, 0, 0 };
	size_t i;
	int r = st->witer_rev(w, t, NULL, 0, collect_key, &k);

	for (i = 0; !r && i < k.n; i++)
		r = st->wdel(w, t, k.v[i].key.ptr, k.v[i].key.len);
	release(k.v, k.n);
	free(k.v);
	return r;
}

/* The refs found on the trees first, then those of orphan pages. */
static int write_refs(aptix_store_wtxn *w, void *payload)
{
	struct salvage *s = payload;
	aptix_store *st = s->repo->store;
	aptix_buf old = APTIX_BUF_INIT;
	size_t k;
	int r = 0;

	s->stats->refs = s->stats->reflog = s->stats->refs_dropped = 0;
	if ((r = clear_table(w, st, APTIX_TABLE_REFS)) < 0 ||
	    (r = clear_table(w, st, APTIX_TABLE_REFLOG)) < 0)
		return r;
	for (k = 0; k < 2 * s->nrefs && !r; k++) {
		struct rec *e = &s->refs[k % s->nrefs];

		if (e->from_tree != (k < s->nrefs))
			continue;
		r = st->wget(&old, w, e->table, e->key.ptr, e->key.len);
		if (r == 0)
			continue;	/* first found, first kept */
		if (r != APTIX_ENOTFOUND)
			break;
		r = 0;
		if (e->table == APTIX_TABLE_REFS &&
		    !target_ok(s->repo, &e->val)) {
			s->stats->refs_dropped++;
			continue;
		}
		r = st->wput(w, e->table, e->key.ptr, e->key.len,
			     e->val.ptr, e->val.len);
		if (e->table == APTIX_TABLE_REFS)
			s->stats->refs++;
		else if (e->table == APTIX_TABLE_REFLOG)
			s->stats->reflog++;
	}
	aptix_buf_release(&old);
	return r;
}

/* The config file, byte for byte (none: nothing to do). */
static int copy_file(const char *from, const char *to)
{
	char buf[8192];
	int in = open(from, O_RDONLY | O_CLOEXEC), out, r = 0;
	ssize_t n;

	if (in < 0)
		return 0;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		aptix_error_set_os("cannot write '%s'", to);
		return APTIX_ERROR;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	if (n < 0 || fsync(out) < 0) {
		aptix_error_set_os("cannot copy '%s' to '%s'", from, to);
		r = APTIX_ERROR;
	}
	close(in);
	if (close(out) < 0 && !r) {
		aptix_error_set_os("cannot write '%s'", to);
		r = APTIX_ERROR;
	}
	return r;
}

static int count_object(const aptix_oid *id, void *payload)
{
	aptix_salvage_stats *stats = payload;

	(void)id;
	stats->objects++;
	return 0;
}

int aptix_salvage(const char *from, const char *workdir,
		  aptix_salvage_stats *stats)
{
	struct salvage s;
	aptix_buf path = APTIX_BUF_INIT, to = APTIX_BUF_INIT;
	aptix_buf dest = APTIX_BUF_INIT;
	int r, progress;
	size_t i;

	memset(&s, 0, sizeof(s));
	memset(stats, 0, sizeof(*stats));
	s.stats = stats;
	/* built aside, renamed into place when complete: as init */
	if ((r = aptix__repo_init_aside(&s.repo, &dest, workdir)) < 0) {
		aptix_buf_release(&dest);
		return r;
	}
	aptix_buf_printf(&path, "%s/data.mdb", from);
	r = aptix_lmdb_file_salvage(path.ptr, on_record, &s,
				    &stats->bad_pages);
	if (!r)
		r = resolve_pointers(&s, path.ptr);
	if (!r)
		r = flush_objects(&s);
	/*
	 * Values that need bases (spliced or based), once every other
	 * object is in: a base may itself need one (a response based on
	 * the previous response, spliced against its answer), so in passes
	 * until one adds nothing.
	 */
	for (progress = 1; !r && progress;) {
		progress = 0;
		for (i = 0; !r && i < s.nspliced; i++) {
			struct rec *e = &s.spliced[i];

			if (!e->key.len || !is_object(e->key.ptr, e->key.len,
						      e->val.ptr, e->val.len,
						      s.repo->odb))
				continue;
			stats->objects_seen++;
			progress = 1;
			if (push(&s.pending, &s.npending, &s.alloc,
				 APTIX_TABLE_OBJECTS, e->key.ptr, e->key.len,
				 e->val.ptr, e->val.len, 1) < 0)
				r = APTIX_ERROR;
			aptix_buf_clear(&e->key);	/* done */
		}
		if (!r)
			r = flush_objects(&s);
	}
	for (i = 0; !r && i < s.nspliced; i++)
		if (s.spliced[i].key.len)
			stats->damaged_records++;
	if (!r && s.nrefs)
		r = s.repo->store->write(s.repo->store, write_refs, &s);
	if (!r) {
		aptix_buf_clear(&path);
		aptix_buf_printf(&path, "%s/config", from);
		aptix_buf_printf(&to, "%s/config", aptix_repo_path(s.repo));
		r = copy_file(path.ptr, to.ptr);
	}
	if (!r)
		r = aptix_index_rebuild(s.repo, &stats->sessions);
	if (!r) {
		/* objects actually stored (several copies of one: once) */
		stats->objects = 0;
		r = aptix_odb_foreach(s.repo->odb, count_object, stats);
	}
	release(s.pending, s.npending);
	release(s.refs, s.nrefs);
	release(s.spliced, s.nspliced);
	free(s.spliced);
	free(s.pieces);
	free(s.ptrs);
	free(s.pending);
	free(s.refs);
	aptix_buf_release(&path);
	aptix_buf_release(&to);
	if (r == 0)
		r = aptix__repo_publish(s.repo, dest.ptr);
	else
		aptix__repo_discard(s.repo);
	aptix_buf_release(&dest);
	return r;
}
