/*
 * plumbing/fsck.c - verify the store, like git fsck.
 *
 * Every object is read (its header, then its content), optionally
 * re-hashed (--full), turns and sessions are parsed, and every id an
 * object references must exist with the right type. Refs must point at
 * sessions. Sessions reachable from the refs (through their parents)
 * and what they reference are reachable; the other objects that no
 * object references are reported as dangling, which is not an error.
 * The session index must agree with the session objects.
 *
 * First the store's pages are checked without trusting them (LMDB
 * trusts its file; see src/store/lmdb-file.c), so that damage below the
 * objects is reported even where no read would meet it.
 *
 * Reports go to stdout, one per line:
 *	corrupt store: <why>		(a page of data.mdb)
 *	corrupt <type> <id>: <why>	(type "object": the header is bad)
 *	hash mismatch <id>
 *	broken link from    <type> <id>
 *	              to    <type> <id>
 *	missing <type> <id>
 *	wrong type <type> <id>: expected <type>
 *	index mismatch <id>: <why>
 *	index mismatch conversation <id>: <why>
 *	lost session <id>: its <what> <id> cannot be read
 *					(show can no longer give it: its
 *					 session, turn, instruction or
 *					 answer is damaged or missing)
 *	dangling <type> <id>		(unreachable <type> <id> with
 *					 --unreachable)
 *	failed session <id>		(--failed: kept, not an error)
 *	dead turn <id> in <conversation>: pid <pid> on <host> died;
 *	    the next command that writes to the store (or aptix status)
 *	    records it as failed
 *					(a claim whose process is gone)
 *	purged <type> <id> on <date>: <reason>
 *	redacted <type> <id> on <date>: <reason>
 *					(aptix purge removed the object, or
 *					 redacted it in place: its links
 *					 and its hash no longer check out,
 *					 which is not an error)
 * Problems with refs are errors on stderr, and --verbose says there what
 * is being checked. The exit code is 1 when anything but dangling
 * objects and dead turns was found, else 0. fsck itself never writes.
 *
 * On a store of several users (PostgreSQL), the objects are the org's
 * but the refs and index records of another user's private conversation
 * are not shown: its sessions (named in the session objects) are taken
 * as reachable, and their index records are not checked here.
 *
 * As in git, "dangling" objects are the unreachable ones that no other
 * object references (the tips of what is unreachable); --unreachable
 * lists them all. What is reachable is the library's reachability
 * (aptix/reach.h), the set a gc keeps: what refs, reflogs and running
 * turns' claims reach, and the failed sessions (a failed turn hangs off
 * its parent by design and no ref reaches it; --failed lists those
 * that nothing else reaches). --connectivity-only reads only the
 * headers of blobs, does not re-hash, skips the index, and takes the
 * links of turns and sessions from their text without parsing the rest
 * (aptix_object_scan_refs(): a field the full parse would reject goes
 * unnoticed there, as git's --connectivity-only skips fsck_object()).
 *
 * Types come from one walk of the objects (aptix_odb_foreach_header())
 * into a table of a few bytes per object, numbered by rank
 * (fsck-table.c: not their 32-byte ids, which a million sessions made
 * 96 MB). The objects are then checked in order from a second walk
 * that gives their content (aptix_odb_foreach_object(): no lookup per
 * object); one that needs a report or a read of the store stops that
 * walk and is read and checked alone (check_each()). Links are kept as
 * object numbers, and the library's reachability marks a byte per
 * object by number. The ids of dangling objects are found again by a
 * walk of the ids (of the headers where the store has no walk of its
 * ids alone) when there are any.
 *
 * --connectivity-only, on a store that has it (LMDB), walks everything
 * in the store's own order instead (check_all(): aptix_odb_foreach_all()
 * reads each page once, the values in the order they were written, and
 * lets go of the pages as it goes, so that fsck holds neither a lookup
 * per object nor the file: a million sessions took 17 s of CPU and
 * 1.3 GB of max RSS, 10.5 s and 140 MB that way). The ids come first,
 * numbered; the objects then in any order, their links kept with the
 * type they want and checked once every type is known; what needs a
 * report or a read is checked alone afterwards, in id order, by the
 * same check_object(), so the reports are the same
 * (APTIX_TEST_FSCK_ID_ORDER makes it walk in id order, for the tests).
 *
 * Ids, refs and index records are collected before they are checked:
 * nothing is read from the store while one of its tables is iterated.
 */
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "fsck-table.h"

static const char *const fsck_usage[] = {
	"aptix fsck [--full] [--no-dangling] [--unreachable] [--failed] "
	"[--connectivity-only] [--verbose]",
	NULL
};

struct missing {
	aptix_oid id;
	aptix_otype type;
};

struct fsck {
	aptix_repo *repo;
	aptix_odb *odb;
	int full, connectivity_only, verbose;
	int errors;
	int mismatched;		/* an object's content is not its id's */
	struct fsck_table t;	/* the objects, by rank (fsck-table.c) */
	struct missing *missing;
	size_t nmissing, amissing;
	aptix_oid *purged;		/* reported already */
	size_t npurged, apurged;
	size_t cur;		/* object being checked */
	const aptix_oid *cur_id;	/* its id */
	size_t next;		/* the walk's next object (walk_cb) */
	int walking;		/* checking what the walk gave */
	int stopped;		/* the walk stopped (WALK_STOP) */
	int stop_is_next;	/* at f->next (else past it): stop_id */
	aptix_oid stop_id;	/* where the walk stopped */
	int refs_incomplete;	/* a ref could not be listed */
	/*
	 * A store of several users (aptix/share.h): the conversations
	 * this user sees, sorted. Sessions of others (private ones: their
	 * index records and refs are not shown here) are roots, unchecked.
	 */
	int users;
	char **seen;
	size_t nseen, aseen;
	aptix_buf data;
};

/* Index of id in f->t, or -1. */
static long find_obj(const struct fsck *f, const aptix_oid *id)
{
	return fsck_find(&f->t, id);
}

static const char *type_name(int type)
{
	const char *n = aptix_otype_name((aptix_otype)type);

	return n ? n : "object";
}

static void report(struct fsck *f, const char *fmt, ...) CLI_PRINTF(2, 3);
static void report(struct fsck *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	f->errors++;
}

/* --- Objects ----------------------------------------------------------- */

/* A missing object that aptix purge removed: reported once, no error. */
static int is_purged(struct fsck *f, const aptix_oid *id, aptix_otype want)
{
	aptix_purge_info info;
	char when[32];
	size_t i;

	if (aptix_purge_lookup(&info, f->repo, id) < 0) {
		aptix_error_clear();
		return 0;
	}
	for (i = 0; i < f->npurged; i++)
		if (!aptix_oid_cmp(&f->purged[i], id))
			return 1;
	f->purged = cli_grow(f->purged, &f->apurged, f->npurged,
			     sizeof(*f->purged));
	f->purged[f->npurged++] = *id;
	printf("purged %s %s on %s: %s\n", type_name(want), aptix_oid_hex(id),
	       aptix_time_fmt(when, info.time), info.reason);
	return 1;
}

static int check_link(const aptix_oid *id, aptix_otype want,
		      const char *field, void *payload)
{
	struct fsck *f = payload;
	struct fsck_table *t = &f->t;
	long j = find_obj(f, id);
	char a[APTIX_OID_HEXSZ + 1], b[APTIX_OID_HEXSZ + 1];

	(void)field;
	if (f->walking && (j < 0 || (t->types[j] != APTIX_OBJ_BAD &&
				     t->types[j] != want)))
		return APTIX_ERROR;	/* check_object() says what */
	if (j < 0 && is_purged(f, id, want))
		return 0;
	if (j < 0 || (t->types[j] != APTIX_OBJ_BAD && t->types[j] != want)) {
		aptix_oid_tostr(a, f->cur_id);
		aptix_oid_tostr(b, id);
		printf("broken link from %7s %s\n",
		       type_name(t->types[f->cur]), a);
		printf("              to %7s %s\n", type_name(want), b);
		f->errors++;
		if (j < 0) {
			f->missing = cli_grow(f->missing, &f->amissing,
					      f->nmissing, sizeof(*f->missing));
			f->missing[f->nmissing].id = *id;
			f->missing[f->nmissing].type = want;
			f->nmissing++;
		} else {
			report(f, "wrong type %s %s: expected %s",
			       type_name(t->types[j]), b, type_name(want));
		}
		return 0;
	}
	t->flags[j] |= F_USED;
	fsck_links_add(t, (uint32_t)j);
	return 0;
}

static void index_field(struct fsck *f, const char *hex, const char *field,
			const char *in_index, const char *in_object)
{
	report(f, "index mismatch %s: %s is %s in the index, %s in the object",
	       hex, field, in_index, in_object);
}

/* The index record of a session must say what the object says. */
static void check_session_index(struct fsck *f, const aptix_oid *id,
				const aptix_session *s)
{
	aptix_session_info si;
	char hex[APTIX_OID_HEXSZ + 1];
	char x[APTIX_OID_HEXSZ + 1], y[APTIX_OID_HEXSZ + 1];
	int r = aptix_index_session(&si, f->repo, id);

	aptix_oid_tostr(hex, id);
	if (r == APTIX_ENOTFOUND) {
		report(f, "index mismatch %s: not in the index", hex);
		return;
	}
	if (r < 0) {
		report(f, "index mismatch %s: %s", hex,
		       aptix_error_last()->message);
		return;
	}
	if (si.has_parent != s->has_parent ||
	    (s->has_parent && aptix_oid_cmp(&si.parent, &s->parent)))
		index_field(f, hex, "parent",
			    si.has_parent ? aptix_oid_tostr(x, &si.parent) :
			    "none",
			    s->has_parent ? aptix_oid_tostr(y, &s->parent) :
			    "none");
	if (aptix_oid_cmp(&si.turn, &s->turn))
		index_field(f, hex, "turn", aptix_oid_tostr(x, &si.turn),
			    aptix_oid_tostr(y, &s->turn));
	if (strcmp(si.conversation, s->conversation))
		index_field(f, hex, "conversation", si.conversation,
			    s->conversation);
	if (si.status != s->status)
		index_field(f, hex, "status",
			    aptix_session_status_name(si.status),
			    aptix_session_status_name(s->status));
	if (si.created_at != s->created_at) {
		snprintf(x, sizeof(x), "%lld", (long long)si.created_at);
		snprintf(y, sizeof(y), "%lld", (long long)s->created_at);
		index_field(f, hex, "created_at", x, y);
	}
}

/*
 * --connectivity-only: the links of the object in f->data, read
 * without parsing the whole object (the fields are not checked), and
 * whether it is a failed session.
 */
static void links_only(struct fsck *f, size_t i, const aptix_oid *id,
		       aptix_otype type, const char *hex)
{
	int failed;

	f->cur = i;
	f->cur_id = id;
	if (aptix_object_scan_refs(type, f->data.ptr, f->data.len,
				   check_link, f, &failed) < 0) {
		report(f, "corrupt %s %s: %s", type_name(type), hex,
		       aptix_error_last()->message);
		fsck_flag(&f->t, i, id, F_CORRUPT);
	} else if (failed) {
		fsck_flag(&f->t, i, id, F_FAILED);
	}
}

static int collect_seen(const aptix_share_info *info, void *payload)
{
	struct fsck *f = payload;

	f->seen = cli_grow(f->seen, &f->aseen, f->nseen, sizeof(*f->seen));
	if (!(f->seen[f->nseen++] = strdup(info->conversation)))
		die("out of memory");
	return 0;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The conversations this user sees, on a store of several users. */
static void load_seen(struct fsck *f)
{
	if (!aptix_share_user(f->repo))
		return;
	f->users = 1;
	if (aptix_share_foreach(f->repo, collect_seen, f) < 0)
		die_aptix();
	if (f->nseen)
		qsort(f->seen, f->nseen, sizeof(*f->seen), str_cmp);
}

static int sees(const struct fsck *f, const char *conv)
{
	return !f->users || (f->nseen && bsearch(&conv, f->seen, f->nseen,
						  sizeof(*f->seen), str_cmp));
}

static void check_object(struct fsck *f, size_t i, const aptix_oid *id)
{
	struct fsck_table *ft = &f->t;
	int otype = ft->types[i];
	char hex[APTIX_OID_HEXSZ + 1], when[32];
	aptix_purge_info info;
	aptix_session s;
	aptix_otype type;
	int r;

	aptix_session_init(&s);
	aptix_oid_tostr(hex, id);
	if (ft->flags[i] & F_CORRUPT)
		return;
	if (f->verbose)
		fprintf(stderr, "Checking %s %s\n", type_name(otype), hex);
	if (f->connectivity_only && otype == APTIX_OBJ_BLOB)
		return;
	r = aptix_odb_read(&f->data, &type, f->odb, id,
			   f->full ? APTIX_ODB_READ_VERIFY : 0);
	if (r == APTIX_EMISMATCH &&
	    aptix_purge_lookup(&info, f->repo, id) == 0 &&
	    info.redacted) {
		printf("redacted %s %s on %s: %s\n", type_name(otype), hex,
		       aptix_time_fmt(when, info.time), info.reason);
	} else if (r == APTIX_EMISMATCH) {
		aptix_error_clear();
		report(f, "hash mismatch %s", hex);
		f->mismatched = 1;
	} else if (r == APTIX_ECORRUPT) {
		report(f, "corrupt %s %s: stored data is damaged or "
		       "truncated", type_name(otype), hex);
		fsck_flag(ft, i, id, F_CORRUPT);
		return;
	} else if (r < 0) {
		report(f, "corrupt %s %s: %s", type_name(otype), hex,
		       aptix_error_last()->message);
		fsck_flag(ft, i, id, F_CORRUPT);
		return;
	}
	if (f->connectivity_only) {
		links_only(f, i, id, type, hex);
		return;
	}
	if (type == APTIX_OBJ_TURN) {
		aptix_turn t;

		if (aptix_turn_parse(&t, f->data.ptr, f->data.len) < 0) {
			report(f, "corrupt turn %s: %s", hex,
			       aptix_error_last()->message);
			fsck_flag(ft, i, id, F_CORRUPT);
			return;
		}
		aptix_turn_release(&t);
	} else if (type == APTIX_OBJ_SESSION) {
		if (aptix_session_parse(&s, f->data.ptr, f->data.len) < 0) {
			report(f, "corrupt session %s: %s", hex,
			       aptix_error_last()->message);
			fsck_flag(ft, i, id, F_CORRUPT);
			return;
		}
		if (s.status == APTIX_SESSION_FAILED)
			fsck_flag(ft, i, id, F_FAILED);
		if (!sees(f, s.conversation))
			fsck_flag(ft, i, id, F_OTHERS);
	}
	f->cur = i;
	f->cur_id = id;
	if (aptix_object_foreach_ref(type, f->data.ptr, f->data.len,
				     check_link, f) < 0) {
		report(f, "corrupt %s %s: %s", type_name(type), hex,
		       aptix_error_last()->message);
		fsck_flag(ft, i, id, F_CORRUPT);
	}
	if (type == APTIX_OBJ_SESSION) {
		if (!f->connectivity_only && !(ft->flags[i] & F_OTHERS))
			check_session_index(f, id, &s);
		aptix_session_release(&s);
	}
}

/*
 * check_object() on the content the walk gave, as long as it finds
 * nothing to report: 0, or -1 (the object's links undone) when the
 * object needs a report or a read of the store (a session's index
 * record), which check_object() then makes.
 */
static int walk_content(struct fsck *f, size_t i, const aptix_oid *id,
			aptix_otype type, const char *data, size_t len)
{
	aptix_turn t;
	int failed = 0, r = 0;

	if (!f->connectivity_only && type == APTIX_OBJ_SESSION)
		return -1;
	f->cur = i;
	f->cur_id = id;
	f->walking = 1;
	if (f->connectivity_only) {
		r = aptix_object_scan_refs(type, data, len, check_link, f,
					   &failed);
	} else if (type == APTIX_OBJ_TURN &&
		   (r = aptix_turn_parse(&t, data, len)) == 0) {
		aptix_turn_release(&t);
	}
	if (!r && !f->connectivity_only)
		r = aptix_object_foreach_ref(type, data, len, check_link, f);
	f->walking = 0;
	if (r) {
		aptix_error_clear();
		fsck_links_undo(&f->t);
		return -1;
	}
	if (failed)
		fsck_flag(&f->t, i, id, F_FAILED);
	return 0;
}

#define WALK_STOP 1

/*
 * The objects in order, as the store's walk gives them with their
 * content: each is checked from that content (no lookup, no read of
 * its own). At one the walk cannot check alone (content not given,
 * something to report, a read needed), the walk stops, that object is
 * checked by check_object(), and a new walk starts past it.
 */
/* Stop the walk at id: f->next's (at), or past it. */
static int walk_stop(struct fsck *f, const aptix_oid *id, int at)
{
	f->stopped = 1;
	f->stop_is_next = at;
	f->stop_id = *id;
	return WALK_STOP;
}

static int walk_cb(const aptix_oid *id, aptix_otype type, const void *data,
		   size_t len, void *payload)
{
	struct fsck *f = payload;
	struct fsck_table *t = &f->t;
	size_t i = f->next;
	long j;

	if (i >= t->nobjs || !fsck_is(t, i, id)) {
		/* new since, or checked already (in two backends) */
		j = find_obj(f, id);
		return j < 0 || (size_t)j < i ? 0 : walk_stop(f, id, 0);
	}
	fsck_links_begin(t, i);
	if (!(t->flags[i] & F_CORRUPT) &&
	    !(f->connectivity_only && t->types[i] == APTIX_OBJ_BLOB) &&
	    (!data || type != t->types[i] ||
	     walk_content(f, i, id, type, data, len) < 0))
		return walk_stop(f, id, 1);
	fsck_links_end(t, i);
	if (f->verbose && !(t->flags[i] & F_CORRUPT))
		fprintf(stderr, "Checking %s %s\n", type_name(t->types[i]),
			aptix_oid_hex(id));
	f->next++;
	return 0;
}

/* Object f->next, alone. */
static void check_next(struct fsck *f, const aptix_oid *id)
{
	fsck_links_begin(&f->t, f->next);
	check_object(f, f->next, id);
	fsck_links_end(&f->t, f->next);
	f->next++;
}

/*
 * Every object, in order: by the walk, else read one by one. A walk
 * starts again where the last one stopped (that object, checked, is
 * then passed over). Objects the walk did not give (a damaged store)
 * are read by their ids, which fsck_id_at() then has to find again.
 */
static void check_each(struct fsck *f)
{
	unsigned types = APTIX_ODB_TYPE(APTIX_OBJ_TURN) |
		(f->connectivity_only ? APTIX_ODB_TYPE(APTIX_OBJ_SESSION) :
		 APTIX_ODB_TYPE(APTIX_OBJ_BLOB));
	int r, started = 0;

	f->next = 0;
	while (f->next < f->t.nobjs) {
		f->stopped = 0;
		r = aptix_odb_foreach_object(f->odb, started ? &f->stop_id :
					     NULL, types, f->full ?
					     APTIX_ODB_READ_VERIFY : 0,
					     walk_cb, f);
		started = 1;
		if (r < 0)
			aptix_error_clear();	/* each is read: it says */
		if (r < 0 || !f->stopped)
			break;
		check_next(f, f->stop_is_next ? &f->stop_id :
			   fsck_id_at(&f->t, f->next));
	}
	while (f->next < f->t.nobjs)
		check_next(f, fsck_id_at(&f->t, f->next));
}

/*
 * Why a stored object is corrupt, from the library's "object '<id>' is
 * corrupt: <why>": a damaged header, or the store's own reason (a piece
 * of the value missing from the values table, a value outside the file).
 */
static const char *corrupt_why(const char *msg)
{
	const char *why = strstr(msg, " is corrupt: ");

	if (!why || strstr(why, "stored object header"))
		return "stored header is damaged";
	why += strlen(" is corrupt: ");
	if (!strncmp(why, "store is corrupt: ", 18))
		why += 18;
	return why;
}

/* The type of object n, which the walk could not give: 0, or -1 (said). */
static int read_type(struct fsck *f, size_t n, const aptix_oid *id)
{
	aptix_otype type;
	size_t size;
	int r = aptix_odb_read_header(&size, &type, f->odb, id);

	if (r < 0) {
		report(f, "corrupt object %s: %s", aptix_oid_hex(id),
		       r == APTIX_ECORRUPT ?
		       corrupt_why(aptix_error_last()->message) :
		       aptix_error_last()->message);
		f->t.flags[n] |= F_CORRUPT;
		return -1;
	}
	f->t.types[n] = (unsigned char)type;
	return 0;
}

static void check_objects(struct fsck *f)
{
	struct fsck_table *t = &f->t;
	size_t k;

	if (fsck_table_load(t, f->odb) < 0) {
		error_aptix();
		f->errors++;
	}
	/*
	 * types first, so that links can be checked in one pass: those the
	 * walk could not give are read, and the reason reported (their ids
	 * are kept: fsck-table.c)
	 */
	for (k = 0; k < t->shared.n; k++)
		if (t->types[t->shared.v[k].n] == APTIX_OBJ_BAD)
			read_type(f, t->shared.v[k].n, &t->shared.v[k].id);
	/* objects are checked in order: their links come sorted */
	check_each(f);
}

/* --- --connectivity-only in the store's order ----------------------------- */

/* a link kept with the type it wants, in its top bits */
#define WANT_SHIFT 30
#define WALK_UNSORTED 2

static int all_id_cb(size_t n, const aptix_oid *id, aptix_otype type,
		     const void *data, size_t len, void *payload)
{
	struct fsck *f = payload;

	(void)type;
	(void)data;
	(void)len;
	return fsck_table_add(&f->t, n, id) < 0 ? WALK_UNSORTED : 0;
}

/* A link met on the walk: kept with the type it wants, or (missing) 1 */
static int all_link(const aptix_oid *id, aptix_otype want, const char *field,
		    void *payload)
{
	struct fsck *f = payload;
	long j = find_obj(f, id);

	(void)field;
	if (j < 0)
		return 1;
	fsck_links_add(&f->t, (uint32_t)j | (uint32_t)want << WANT_SHIFT);
	return 0;
}

static int all_object_cb(size_t n, const aptix_oid *id, aptix_otype type,
			 const void *data, size_t len, void *payload)
{
	struct fsck *f = payload;
	struct fsck_table *t = &f->t;
	int failed = 0;

	if (n >= t->nobjs)
		return WALK_UNSORTED;
	t->types[n] = (unsigned char)type;
	if (type != APTIX_OBJ_TURN && type != APTIX_OBJ_SESSION)
		return 0;
	/* one met with its id may come before every id is numbered */
	if (!data || id) {
		t->flags[n] |= F_RECHECK;
		return 0;
	}
	fsck_table_done(t);
	fsck_links_begin(t, n);
	if (aptix_object_scan_refs(type, data, len, all_link, f,
				   &failed) != 0) {
		aptix_error_clear();
		fsck_links_undo(t);
		t->flags[n] |= F_RECHECK;
	} else if (failed) {
		t->flags[n] |= F_FAILED;	/* its id kept after the walk */
	}
	fsck_links_end(t, n);
	return 0;
}

/* The ids check_all() needs: to read, to check, to name as roots. */
static int want_kept(const struct fsck_table *t, size_t n, void *payload)
{
	(void)payload;
	return t->types[n] == APTIX_OBJ_BAD ||
		(t->flags[n] & (F_FAILED | F_RECHECK));
}

/*
 * The links the walk kept, now that every type is known: an object
 * with a link to one of the wrong type is checked alone (it reports).
 */
static void check_all_links(struct fsck *f)
{
	struct fsck_table *t = &f->t;
	uint32_t mask = (1u << WANT_SHIFT) - 1, j;
	size_t n, k, lo, hi;

	for (n = 0; n < t->nobjs; n++) {
		fsck_links_range(t, n, &lo, &hi);
		for (k = lo; k < hi; k++) {
			j = t->links[k] & mask;
			if (t->types[j] != APTIX_OBJ_BAD &&
			    t->types[j] != t->links[k] >> WANT_SHIFT)
				break;
		}
		if (k < hi) {
			fsck_links_drop(t, n);
			t->flags[n] |= F_RECHECK;
			continue;
		}
		for (k = lo; k < hi; k++) {
			t->links[k] &= mask;
			t->flags[t->links[k]] |= F_USED;
		}
	}
}

static void table_reset(struct fsck_table *t)
{
	unsigned key_bytes = t->key_bytes;

	fsck_table_release(t);
	memset(t, 0, sizeof(*t));
	t->key_bytes = key_bytes;
}

/*
 * --connectivity-only where the store has a walk of everything in its
 * own order (aptix_odb_foreach_all(): LMDB reads each page once, the
 * values in the order they were written, and lets go of the pages as
 * it goes, so that fsck holds neither a lookup per object nor the
 * file). That walk numbers the ids and gives each object's type and
 * links, out of order; the links are checked once every type is known.
 * What needs a report or a read (a type the walk could not give, a
 * link missing or of the wrong type, content made of other objects)
 * is then read and checked alone, in id order, as check_objects()
 * does, which reports the same. 0; -1 when there is no such walk
 * (nothing was reported: check_objects() does it all).
 */
static int check_all(struct fsck *f)
{
	struct fsck_table *t = &f->t;
	size_t n;
	int r;

	if (!f->connectivity_only || f->verbose || f->errors ||
	    t->force_unsorted || getenv("APTIX_TEST_FSCK_ID_ORDER"))
		return -1;
	fsck_table_begin(t, f->odb);
	r = aptix_odb_foreach_all(f->odb, APTIX_ODB_TYPE(APTIX_OBJ_TURN) |
				  APTIX_ODB_TYPE(APTIX_OBJ_SESSION), 0,
				  all_id_cb, all_object_cb, f);
	if (r || t->nobjs >= (1u << WANT_SHIFT)) {
		aptix_error_clear();
		table_reset(t);
		return -1;
	}
	fsck_table_done(t);
	if (fsck_table_keep(t, want_kept, NULL) < 0) {
		/* failed sessions' ids are read kept: the walk in id order */
		aptix_error_clear();
		table_reset(t);
		return -1;
	}
	for (n = 0; n < t->nobjs; n++)
		if (t->types[n] == APTIX_OBJ_BAD &&
		    read_type(f, n, fsck_id_at(t, n)) == 0)
			t->flags[n] |= F_RECHECK;
	check_all_links(f);
	for (n = 0; n < t->nobjs; n++) {
		if ((t->flags[n] & (F_RECHECK | F_CORRUPT)) != F_RECHECK)
			continue;
		fsck_links_begin(t, n);
		check_object(f, n, fsck_id_at(t, n));
		fsck_links_end(t, n);
	}
	return 0;
}

static int missing_cmp(const void *a, const void *b)
{
	return aptix_oid_cmp(&((const struct missing *)a)->id,
			     &((const struct missing *)b)->id);
}

static void print_missing(struct fsck *f)
{
	size_t i;

	if (f->nmissing)
		qsort(f->missing, f->nmissing, sizeof(*f->missing),
		      missing_cmp);
	for (i = 0; i < f->nmissing; i++) {
		if (i && !aptix_oid_cmp(&f->missing[i].id,
					&f->missing[i - 1].id))
			continue;
		printf("missing %s %s\n", type_name(f->missing[i].type),
		       aptix_oid_hex(&f->missing[i].id));
	}
}

/* --- Refs -------------------------------------------------------------- */

struct ref_list {
	aptix_ref *refs;
	size_t n, alloc;
};

static int collect_ref(const aptix_ref *ref, void *payload)
{
	struct ref_list *l = payload;
	aptix_ref *r;

	l->refs = cli_grow(l->refs, &l->alloc, l->n, sizeof(*l->refs));
	r = &l->refs[l->n++];
	r->name = strdup(ref->name);
	r->target = ref->target ? strdup(ref->target) : NULL;
	r->oid = ref->oid;
	if (!r->name || (ref->target && !r->target))
		die("out of memory");
	return 0;
}

static void check_refs(struct fsck *f, struct ref_list *refs)
{
	size_t i;

	if (f->verbose)
		fprintf(stderr, "Checking refs\n");
	if (aptix_ref_foreach(f->repo, NULL, collect_ref, refs) < 0) {
		error_aptix();
		f->errors++;
		f->refs_incomplete = 1;
	}
	for (i = 0; i < refs->n; i++) {
		const aptix_ref *ref = &refs->refs[i];
		char *resolved = NULL;
		aptix_oid id;
		long j;
		int r;

		if (ref->target) {
			r = aptix_ref_resolve(&id, &resolved, f->repo,
					      ref->name);
			if (r == APTIX_ENOTFOUND)
				fprintf(stderr, "notice: %s points to an "
					"unborn conversation (%s)\n",
					ref->name, resolved ? resolved : "?");
			else if (r < 0) {
				error("%s: %s", ref->name,
				      aptix_error_last()->message);
				f->errors++;
			}
			free(resolved);
			continue;	/* the target ref is checked itself */
		}
		j = find_obj(f, &ref->oid);
		if (j < 0) {
			error("%s: invalid target %s", ref->name,
			      aptix_oid_hex(&ref->oid));
			f->errors++;
		} else if (f->t.types[j] != APTIX_OBJ_BAD &&
			   f->t.types[j] != APTIX_OBJ_SESSION) {
			error("%s: %s is a %s, not a session", ref->name,
			      aptix_oid_hex(&ref->oid),
			      type_name(f->t.types[j]));
			f->errors++;
		}
	}
}

/* --- Reachability ------------------------------------------------------ */

/* The number of an object, for the library's walk: its rank. */
static long fsck_number(const aptix_oid *id, void *payload)
{
	return find_obj(payload, id);
}

/*
 * The links of object n, for the library's walk. The ids given with
 * the numbers stand for the objects (fsck_id_for()): the walk reads
 * one by its id only when this says ENOTFOUND for it, and the ids of
 * those (damaged ones) are kept.
 */
static int fsck_links_at(size_t n, aptix_reach_mark_fn cb, void *cb_payload,
			 void *payload)
{
	struct fsck *f = payload;
	const struct fsck_table *t = &f->t;
	size_t k, lo, hi;
	aptix_oid id;
	int r;

	/* damaged: the walk reads it and counts it broken */
	if (t->flags[n] & F_CORRUPT)
		return APTIX_ENOTFOUND;
	fsck_links_range(t, n, &lo, &hi);
	for (k = lo; k < hi; k++) {
		uint32_t to = t->links[k];

		fsck_id_for(&id, t, to);
		if ((r = cb(&id, (aptix_otype)t->types[to], (long)to,
			    cb_payload)) < 0)
			return r;
	}
	return 0;
}

/* Roots of fsck's own, by flag: their ids are kept (fsck_flag()). */
static void add_roots(struct fsck *f, aptix_reach *r, unsigned flag,
		      aptix_reach_why why)
{
	size_t i;

	for (i = 0; i < f->t.nobjs; i++)
		if ((f->t.flags[i] & flag) &&
		    aptix_reach_add(r, fsck_id_kept(&f->t, i), why) < 0)
			die_aptix();
}

/*
 * What is reachable is the library's to say (aptix/reach.h: refs,
 * reflogs, running claims, failed sessions; the same set a gc keeps),
 * walked here over the links read already. The failed sessions found
 * in the objects are added, in case the index lacks some. With
 * report_failed, those that only their being failed keeps (no ref or
 * reflog reaches them) are listed as "failed session <id>".
 */
static void mark_reachable(struct fsck *f, int report_failed)
{
	aptix_reach_options o = APTIX_REACH_OPTIONS_INIT;
	struct fsck_table *t = &f->t;
	aptix_reach_why why;
	aptix_reach *r;
	size_t i;

	if (f->verbose)
		fprintf(stderr, "Checking connectivity (%zu objects)\n",
			t->nobjs);
	o.count = t->nobjs;
	o.number = fsck_number;
	o.links_at = fsck_links_at;
	o.links_payload = f;
	if (aptix_reach_new(&r, f->repo, &o) < 0)
		die_aptix();
	add_roots(f, r, F_FAILED, APTIX_REACH_FAILED);
	add_roots(f, r, F_OTHERS, APTIX_REACH_ADDED);
	/* a ref that cannot be read was reported by check_refs() */
	if (aptix_reach_compute(r) < 0 && !f->refs_incomplete) {
		error("reachability: %s", aptix_error_last()->message);
		f->errors++;
	}
	for (i = 0; i < t->nobjs; i++) {
		if (!aptix_reach_contains_at(r, i, &why))
			continue;
		t->flags[i] |= F_REACHABLE;
		if (report_failed && why == APTIX_REACH_FAILED &&
		    (t->flags[i] & F_FAILED))
			printf("failed session %s\n",
			       aptix_oid_hex(fsck_id_kept(t, i)));
	}
	aptix_reach_free(r);
}

static int want_unreachable(const struct fsck_table *t, size_t n,
			    void *payload)
{
	int all = *(const int *)payload;

	return !(t->flags[n] & (F_REACHABLE | F_CORRUPT)) &&
		(all || !(t->flags[n] & F_USED));
}

static void print_one(const struct fsck_table *t, size_t n,
		      const aptix_oid *id, void *payload)
{
	printf("%s %s %s\n", *(const int *)payload ? "unreachable" :
	       "dangling", type_name(t->types[n]), aptix_oid_hex(id));
}

/* Their ids found again by a walk of the ids (fsck-table.c). */
static void print_unreachable(struct fsck *f, int all)
{
	if (fsck_foreach_selected(&f->t, want_unreachable, print_one,
				  &all) < 0) {
		error_aptix();
		f->errors++;
	}
}

/* --- Index ------------------------------------------------------------- */

struct id_list {
	aptix_oid *ids;
	size_t n, alloc;
};

static int collect_indexed(const aptix_session_info *si, void *payload)
{
	struct id_list *l = payload;

	l->ids = cli_grow(l->ids, &l->alloc, l->n, sizeof(*l->ids));
	l->ids[l->n++] = si->id;
	return 0;
}

struct conv_list {
	aptix_conv_info *convs;
	size_t n, alloc;
};

static int collect_conv(const aptix_conv_info *ci, void *payload)
{
	struct conv_list *l = payload;

	l->convs = cli_grow(l->convs, &l->alloc, l->n, sizeof(*l->convs));
	l->convs[l->n++] = *ci;
	return 0;
}

/* What a conversation's summary record should say, from its sessions. */
struct conv_count {
	struct conv_list *convs;	/* sorted by id */
	aptix_conv_info *want;		/* parallel to convs */
};

static int conv_by_key(const void *key, const void *elt)
{
	return strcmp(key, ((const aptix_conv_info *)elt)->id);
}

static int count_session(const aptix_session_info *si, void *payload)
{
	struct conv_count *cc = payload;
	const aptix_conv_info *ci = bsearch(si->conversation, cc->convs->convs,
					    cc->convs->n,
					    sizeof(*cc->convs->convs),
					    conv_by_key);
	aptix_conv_info *w;

	if (!ci)
		return 0;
	w = &cc->want[ci - cc->convs->convs];
	if (!w->turns)
		w->has_usage = 1;	/* as the index starts its sums */
	aptix_conv_usage_add(w, si);
	w->turns++;
	if (!aptix_session_info_failed(si)) {
		w->committed++;
		return 0;
	}
	w->failed++;
	if (!w->has_failed || si->created_at >= w->failed_at) {
		w->has_failed = 1;
		w->failed_at = si->created_at;
		w->last_failed = si->id;
	}
	return 0;
}

/* The counts and last failure of each summary record agree with the index. */
static void check_conv_counts(struct fsck *f, struct conv_list *convs)
{
	struct conv_count cc = { convs, NULL };
	size_t i;

	if (!convs->n)
		return;
	if (!(cc.want = calloc(convs->n, sizeof(*cc.want))))
		die("out of memory");
	if (aptix_index_foreach_session(f->repo, count_session, &cc) < 0) {
		free(cc.want);
		return;		/* reported by check_index already */
	}
	for (i = 0; i < convs->n; i++) {
		const aptix_conv_info *ci = &convs->convs[i], *w = &cc.want[i];

		if (ci->turns != w->turns || ci->committed != w->committed ||
		    ci->failed != w->failed)
			report(f, "index mismatch conversation %s: record "
			       "says %u turns (%u failed), the sessions %u "
			       "(%u failed)", ci->id, ci->turns, ci->failed,
			       w->turns, w->failed);
		else if (ci->has_failed != w->has_failed ||
			 (w->has_failed && aptix_oid_cmp(&ci->last_failed,
							 &w->last_failed)))
			report(f, "index mismatch conversation %s: last "
			       "failure is %s, the sessions say %s", ci->id,
			       ci->has_failed ?
			       aptix_oid_hex(&ci->last_failed) : "none",
			       w->has_failed ?
			       aptix_oid_hex(&w->last_failed) : "none");
		else if (ci->has_usage && !aptix_conv_usage_same(ci, w))
			report(f, "index mismatch conversation %s: its "
			       "usage sums are not what its sessions spent",
			       ci->id);
	}
	free(cc.want);
}

static const aptix_ref *find_ref(const struct ref_list *refs,
				 const char *name)
{
	size_t i;

	for (i = 0; i < refs->n; i++)
		if (!strcmp(refs->refs[i].name, name))
			return &refs->refs[i];
	return NULL;
}

static void layout_problem(const aptix_oid *id, const char *what,
			   void *payload)
{
	report(payload, "index mismatch %s: %s", aptix_oid_hex(id), what);
}

static void recency_problem(const char *what, void *payload)
{
	report(payload, "index mismatch: %s", what);
}

/* An object of a session cannot be read (what purge removed can). */
static int unreadable(struct fsck *f, int r, const aptix_oid *id)
{
	aptix_purge_info info;

	if (r == APTIX_ENOTFOUND &&
	    aptix_purge_lookup(&info, f->repo, id) == 0)
		r = 0;
	aptix_error_clear();
	return r < 0;
}

/*
 * The sessions a damaged store lost: those that show can no longer
 * give, because their session, their turn, or its instruction or answer
 * cannot be read (a lost page loses the objects stored in it and those
 * based on them; this names the sessions it took with them).
 */
static void check_lost(struct fsck *f, const aptix_oid *sid)
{
	char a[APTIX_OID_HEXSZ + 1], b[APTIX_OID_HEXSZ + 1];
	const char *what = NULL;
	const aptix_oid *bad = sid;
	aptix_session s;
	aptix_turn t;
	aptix_buf blob = APTIX_BUF_INIT;

	aptix_session_init(&s);
	aptix_turn_init(&t);
	if (unreadable(f, aptix_session_lookup(&s, f->repo, sid), sid))
		what = "session";
	else if (bad = &s.turn,
		 unreadable(f, aptix_turn_lookup(&t, f->repo, bad), bad))
		what = "turn";
	else if (bad = &t.instruction,
		 unreadable(f, aptix_blob_lookup(&blob, f->repo, bad), bad))
		what = "instruction";
	else if (bad = &t.answer, !aptix_oid_is_zero(bad) &&
		 unreadable(f, aptix_blob_lookup(&blob, f->repo, bad), bad))
		what = "answer";
	if (what)
		report(f, "lost session %s: its %s %s cannot be read",
		       aptix_oid_tostr(a, sid), what, aptix_oid_tostr(b, bad));
	aptix_buf_release(&blob);
	aptix_turn_release(&t);
	aptix_session_release(&s);
}

static void check_index(struct fsck *f, const struct ref_list *refs)
{
	struct id_list ids = { NULL, 0, 0 };
	struct conv_list convs = { NULL, 0, 0 };
	size_t plen = strlen(APTIX_CONV_PREFIX), i;

	if (f->verbose)
		fprintf(stderr, "Checking index\n");
	if (aptix_index_foreach_session(f->repo, collect_indexed, &ids) < 0)
		report(f, "index mismatch: %s", aptix_error_last()->message);
	if (aptix_index_check_layout(f->repo, layout_problem, f) < 0)
		report(f, "index mismatch: %s", aptix_error_last()->message);
	if (f->full && aptix_search_check(f->repo, recency_problem, f) < 0)
		report(f, "index mismatch: %s", aptix_error_last()->message);
	for (i = 0; i < ids.n; i++) {
		long j = find_obj(f, &ids.ids[i]);
		int r;

		if (j >= 0)
			check_lost(f, &ids.ids[i]);
		if (j < 0)
			report(f, "index mismatch %s: indexed session does "
			       "not exist", aptix_oid_hex(&ids.ids[i]));
		else if (f->t.types[j] != APTIX_OBJ_BAD &&
			 f->t.types[j] != APTIX_OBJ_SESSION)
			report(f, "index mismatch %s: indexed session is a %s",
			       aptix_oid_hex(&ids.ids[i]),
			       type_name(f->t.types[j]));
		/* records made from the wrong content would only echo it */
		else if (f->full && !f->mismatched &&
			 f->t.types[j] == APTIX_OBJ_SESSION &&
			 (r = aptix_index_verify_chain(f->repo,
						       &ids.ids[i])) != 0) {
			if (r == 1 || r == 2)
				report(f, "index mismatch %s: its %s record "
				       "disagrees with its turn and parent",
				       aptix_oid_hex(&ids.ids[i]),
				       r == 1 ? "chain" : "summary");
			else if (r == 3)
				report(f, "index mismatch %s: %s",
				       aptix_oid_hex(&ids.ids[i]),
				       aptix_error_last()->message);
			aptix_error_clear();	/* else: reported above */
		}
	}
	/* conversation heads follow the conversation refs */
	if (f->refs_incomplete)
		goto done;
	if (aptix_index_foreach_conversation(f->repo, collect_conv,
					     &convs) < 0)
		report(f, "index mismatch: %s", aptix_error_last()->message);
	check_conv_counts(f, &convs);
	if (aptix_index_check_recency(f->repo, recency_problem, f) < 0)
		report(f, "index mismatch: %s", aptix_error_last()->message);
	if (aptix_index_check_imports(f->repo, recency_problem, f) < 0)
		report(f, "index mismatch: %s", aptix_error_last()->message);
	for (i = 0; i < convs.n; i++) {
		const aptix_conv_info *ci = &convs.convs[i];
		aptix_buf name = APTIX_BUF_INIT;
		const aptix_ref *ref;

		aptix_buf_printf(&name, "%s%s", APTIX_CONV_PREFIX, ci->id);
		ref = find_ref(refs, name.ptr);
		if (ci->has_head && (!ref || ref->target))
			report(f, "index mismatch conversation %s: head is "
			       "%s, but %s does not exist", ci->id,
			       aptix_oid_hex(&ci->head), name.ptr);
		else if (ci->has_head && aptix_oid_cmp(&ci->head, &ref->oid))
			report(f, "index mismatch conversation %s: head is "
			       "%s, %s is %s", ci->id,
			       aptix_oid_hex(&ci->head), name.ptr,
			       aptix_oid_hex(&ref->oid));
		else if (!ci->has_head && ref && !ref->target)
			report(f, "index mismatch conversation %s: no head, "
			       "%s is %s", ci->id, name.ptr,
			       aptix_oid_hex(&ref->oid));
		aptix_buf_release(&name);
	}
	for (i = 0; i < refs->n; i++) {
		const aptix_ref *ref = &refs->refs[i];
		size_t k;

		if (ref->target || strncmp(ref->name, APTIX_CONV_PREFIX, plen))
			continue;
		for (k = 0; k < convs.n; k++)
			if (!strcmp(convs.convs[k].id, ref->name + plen))
				break;
		if (k == convs.n)
			report(f, "index mismatch conversation %s: not in "
			       "the index, %s is %s", ref->name + plen,
			       ref->name, aptix_oid_hex(&ref->oid));
	}
done:
	free(ids.ids);
	free(convs.convs);
}

/*
 * Every claim, with its holder and its lease: a dead one is recorded as
 * failed by the next writer; a live one is said so that a claim that
 * will not go away is seen.
 */
static int dead_cb(const aptix_running_info *r, void *payload)
{
	struct timespec ts;
	long long ago;

	(void)payload;
	clock_gettime(CLOCK_REALTIME, &ts);
	ago = ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 -
	       r->renewed_ms) / 1000;
	if (!r->alive)
		printf("dead turn %s in %s: pid %ld on %s %s; the next "
		       "command that writes to the store (or aptix status) "
		       "records it as failed\n",
		       aptix_oid_hex(&r->turn), r->conversation, r->pid,
		       r->host, r->why);
	else if (r->renewed_ms)
		printf("running turn %s in %s: pid %ld on %s, lease renewed "
		       "%lld s ago (lapses after %lld s)\n",
		       aptix_oid_hex(&r->turn), r->conversation, r->pid,
		       r->host, ago > 0 ? ago : 0,
		       (long long)(r->lease_ms / 1000));
	else
		printf("running turn %s in %s: pid %ld on %s\n",
		       aptix_oid_hex(&r->turn), r->conversation, r->pid,
		       r->host);
	return 0;
}

static void store_problem(const char *msg, void *payload)
{
	report(payload, "corrupt store: %s", msg);
}

/* The store's own structure (LMDB's pages), before any object. */
static void check_store(struct fsck *f)
{
	if (f->verbose)
		fprintf(stderr, "Checking the store's pages\n");
	if (aptix_repo_check_store(f->repo, store_problem, f) < 0)
		report(f, "corrupt store: %s", aptix_error_last()->message);
}

/* Turns whose process died: reported, recorded by the next writer. */
static void check_running(struct fsck *f)
{
	if (f->verbose)
		fprintf(stderr, "Checking running turns\n");
	if (aptix_run_foreach_running(f->repo, dead_cb, NULL) < 0)
		report(f, "corrupt running table: %s",
		       aptix_error_last()->message);
}

int cmd_fsck(int argc, const char **argv, struct aptix_repo *repo)
{
	struct fsck f;
	struct ref_list refs = { NULL, 0, 0 };
	int no_dangling = 0, unreachable = 0, failed = 0;
	size_t i;
	struct option options[] = {
		OPT_BOOL(0, "full", &f.full, "also re-hash every object and "
			 "check the search index"),
		OPT_BOOL(0, "no-dangling", &no_dangling, "do not report "
			 "dangling objects"),
		OPT_BOOL(0, "unreachable", &unreachable, "report every "
			 "unreachable object, not only dangling ones"),
		OPT_BOOL(0, "failed", &failed, "list the failed sessions "
			 "no ref reaches (kept by design, not dangling)"),
		OPT_BOOL(0, "connectivity-only", &f.connectivity_only,
			 "check only that referenced objects exist (do "
			 "not read blobs, check no field but the links, "
			 "nor the index)"),
		OPT__VERBOSE(&f.verbose, "say what is being checked"),
		OPT_END()
	};

	memset(&f, 0, sizeof(f));
	argc = parse_options(argc, argv, options, fsck_usage, 0);
	if (argc)
		usage_with_options(fsck_usage, options);
	f.repo = repo;
	f.odb = aptix_repo_odb(repo);
	/* tests: keys that collide, ids out of order (fsck-table.c) */
	if (getenv("APTIX_TEST_FSCK_KEY_BYTES"))
		f.t.key_bytes = (unsigned)atoi(getenv(
			"APTIX_TEST_FSCK_KEY_BYTES"));
	f.t.force_unsorted = !!getenv("APTIX_TEST_FSCK_UNSORTED");
	aptix_buf_init(&f.data, 0);

	load_seen(&f);
	check_store(&f);
	if (check_all(&f) < 0)
		check_objects(&f);
	check_refs(&f, &refs);
	mark_reachable(&f, failed);
	if (!f.connectivity_only)
		check_index(&f, &refs);
	check_running(&f);
	print_missing(&f);
	if (unreachable || !no_dangling)
		print_unreachable(&f, unreachable);

	for (i = 0; i < refs.n; i++)
		aptix_ref_release(&refs.refs[i]);
	free(refs.refs);
	fsck_table_release(&f.t);
	free(f.missing);
	free(f.purged);
	for (i = 0; i < f.nseen; i++)
		free(f.seen[i]);
	free(f.seen);
	aptix_buf_release(&f.data);
	return f.errors ? 1 : 0;
}
