/*
 * src/maintenance/purge.c - aptix_purge() (aptix/purge.h).
 *
 * Three steps, each safe to run again: a plan made from reads only (what
 * goes: blobs, redactions, records, indexed paths; told to the caller,
 * and all a dry run does), the retrieval index (the paths whose chunks
 * held what goes are dropped from the local index and from Qdrant), one
 * write transaction for the store (objects deleted or rewritten, purge
 * records, reflog entries and index records redacted), and compaction,
 * which rewrites the store's files without their free pages.
 *
 * A purge record (table "purged", key the 32 raw bytes of the id): u8
 * version (1), u8 kind (1 removed, 2 redacted), be64 time in ms, then
 * the reason in UTF-8.
 */
#define _GNU_SOURCE 1	/* memmem */
#include "util/common.h"
#include "repo/repo.h"
#include "index/index.h"
#include "store/odb-store.h"
#include "rag/rag-int.h"
#include "object/zstream.h"
#include "aptix/object.h"
#include "aptix/index.h"
#include "aptix/purge.h"
#include "aptix/rag.h"
#include "aptix/workspace.h"
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define REASON_MAX 240
#define CHECK_BLOCK (1 << 20)	/* check_gone() reads files by blocks */

/* --- The plan ------------------------------------------------------------- */

struct redaction {
	aptix_oid id;
	aptix_otype type;
	aptix_buf content;		/* redacted */
};

struct record {
	aptix_table table;
	aptix_buf key, val;		/* val redacted */
};

struct plan {
	aptix_repo *repo;
	const aptix_purge_options *o;
	aptix_oid *all;			/* every object id, sorted */
	size_t nall, aall;
	aptix_oid *blobs;		/* to remove, sorted */
	size_t nblobs, ablobs;
	struct redaction *red;
	size_t nred, ared;
	struct redaction *reb;		/* rewritten without their base */
	size_t nreb, areb;
	struct record *recs;
	size_t nrecs, arecs;
	char **paths;			/* indexed paths to drop */
	size_t npaths;
	aptix_buf newest;		/* the timeline's last key at planning */
	aptix_buf statcache;		/* its path; dropped when it has it */
	int drop_statcache;
	aptix_buf hist_path, hist_kept;	/* chat_history, without the secret */
	size_t hist_lines;		/* lines of it holding the secret */
	unsigned char record_val[10 + REASON_MAX];
	size_t record_len;
	aptix_buf tmp;
};

static int oid_cmp_v(const void *a, const void *b)
{
	return aptix_oid_cmp(a, b);
}

static int has_blob(const struct plan *p, const aptix_oid *id)
{
	return p->nblobs && bsearch(id, p->blobs, p->nblobs,
				    sizeof(*p->blobs), oid_cmp_v) != NULL;
}

static int add_blob(struct plan *p, const aptix_oid *id)
{
	if (has_blob(p, id))
		return 0;
	if (aptix__grow(&p->blobs, &p->ablobs, p->nblobs,
			sizeof(*p->blobs), 16) < 0)
		return APTIX_ERROR;
	p->blobs[p->nblobs++] = *id;
	qsort(p->blobs, p->nblobs, sizeof(*p->blobs), oid_cmp_v);
	return 0;
}

static int add_path(struct plan *p, const char *path)
{
	size_t i;

	for (i = 0; i < p->npaths; i++)
		if (!strcmp(p->paths[i], path))
			return 0;
	return aptix__strv_push(&p->paths, &p->npaths, path);
}

/* Every occurrence of the secret in b becomes as many '*'. */
static size_t mask(char *b, size_t len, const struct plan *p)
{
	const aptix_purge_options *o = p->o;
	size_t n = 0, start = 0;
	char *hit;

	if (!o->secret)
		return 0;
	while (start < len &&
	       (hit = memmem(b + start, len - start, o->secret,
			     o->secret_len))) {
		memset(hit, '*', o->secret_len);
		start = (size_t)(hit - b) + o->secret_len;
		n++;
	}
	return n;
}

static int collect_cb(const aptix_oid *id, void *payload)
{
	struct plan *p = payload;

	if (aptix__grow(&p->all, &p->aall, p->nall, sizeof(*p->all),
			16) < 0)
		return APTIX_ERROR;
	p->all[p->nall++] = *id;
	return 0;
}

static void tell(const struct plan *p, aptix_purge_kind kind,
		 const aptix_oid *id, const char *type, const char *table,
		 const char *what)
{
	aptix_purge_item it;

	if (!p->o->on_item)
		return;
	memset(&it, 0, sizeof(it));
	it.kind = kind;
	if (id)
		it.id = *id;
	it.type = type;
	it.table = table;
	it.what = what;
	p->o->on_item(&it, p->o->payload);
}

/* The ids given: each a stored blob (one purged already is skipped). */
static int plan_ids(struct plan *p)
{
	const aptix_purge_options *o = p->o;
	aptix_purge_info info;
	aptix_otype type;
	size_t i, size;
	int r;

	for (i = 0; i < o->nids; i++) {
		r = aptix_odb_read_header(&size, &type, p->repo->odb,
					  &o->ids[i]);
		if (r == APTIX_ENOTFOUND &&
		    aptix_purge_lookup(&info, p->repo, &o->ids[i]) == 0) {
			aptix_error_clear();
			continue;
		}
		if (r == APTIX_ENOTFOUND) {
			aptix_error_set(APTIX_ERROR_ODB, "object '%s' is not "
					"stored", aptix_oid_hex(&o->ids[i]));
			return r;
		}
		if (r < 0)
			return r;
		if (type != APTIX_OBJ_BLOB) {
			aptix_error_set(APTIX_ERROR_INVALID, "'%s' is a %s: "
					"only blobs are purged by id (a turn "
					"or session holding a secret is "
					"redacted with a secret to find)",
					aptix_oid_hex(&o->ids[i]),
					aptix_otype_name(type));
			return APTIX_EINVALID;
		}
		if ((r = add_blob(p, &o->ids[i])) < 0)
			return r;
	}
	return 0;
}

/* Objects holding the secret: blobs go, turns and sessions are redacted. */
static int plan_objects(struct plan *p)
{
	aptix_otype type;
	size_t i;
	int r;

	for (i = 0; i < p->nall && p->o->secret; i++) {
		const aptix_oid *id = &p->all[i];
		struct redaction *rd;

		if ((r = aptix_odb_read(&p->tmp, &type, p->repo->odb, id,
					0)) < 0)
			return r;
		if (!memmem(p->tmp.ptr, p->tmp.len, p->o->secret,
			    p->o->secret_len))
			continue;
		if (type == APTIX_OBJ_BLOB) {
			if ((r = add_blob(p, id)) < 0)
				return r;
			continue;
		}
		mask(p->tmp.ptr, p->tmp.len, p);
		if (aptix_object_validate(type, p->tmp.ptr, p->tmp.len) < 0) {
			aptix_error_set(APTIX_ERROR_INVALID, "cannot redact "
					"%s '%s': the secret is not inside one "
					"of its strings",
					aptix_otype_name(type),
					aptix_oid_hex(id));
			return APTIX_EINVALID;
		}
		if (aptix__grow(&p->red, &p->ared, p->nred,
				sizeof(*p->red), 16) < 0)
			return APTIX_ERROR;
		rd = &p->red[p->nred++];
		rd->id = *id;
		rd->type = type;
		aptix_buf_init(&rd->content, 0);
		if (aptix_buf_set(&rd->content, p->tmp.ptr, p->tmp.len) < 0)
			return aptix_error_oom();
	}
	return 0;
}

/*
 * A spliced blob (objects-format.md, "Storage") whose base goes, goes:
 * it could not be read without it. (One that holds the secret was found
 * by plan_objects already; this is for blobs purged by id.)
 */
static int plan_spliced(struct plan *p)
{
	aptix_store *s = p->repo->store;
	aptix_oid bases[APTIX_STORED_MAX_SPLICES];
	size_t i;
	int n, k, r;

	for (i = 0; i < p->nall && p->nblobs; i++) {
		if (has_blob(p, &p->all[i]))
			continue;
		r = s->get(&p->tmp, s, APTIX_TABLE_OBJECTS, p->all[i].id,
			   APTIX_OID_RAWSZ);
		if (r < 0)
			return r;
		n = aptix_stored_splice_bases(bases, APTIX_STORED_MAX_SPLICES,
					      p->tmp.ptr, p->tmp.len);
		for (k = 0; k < n; k++)
			if (has_blob(p, &bases[k])) {
				if ((r = add_blob(p, &p->all[i])) < 0)
					return r;
				break;
			}
	}
	return 0;
}

static int is_redacted(const struct plan *p, const aptix_oid *id)
{
	size_t i;

	for (i = 0; i < p->nred; i++)
		if (!aptix_oid_cmp(&p->red[i].id, id))
			return 1;
	return 0;
}

/*
 * A value deflated against a base (objects-format.md, "Based values")
 * whose base goes or is redacted is rewritten without it, its content
 * unchanged: read now, while the base is still there.
 */
static int plan_based(struct plan *p)
{
	aptix_store *s = p->repo->store;
	struct redaction *rd;
	aptix_oid base;
	aptix_otype type;
	size_t i;
	int r;

	for (i = 0; i < p->nall && (p->nblobs || p->nred); i++) {
		if (has_blob(p, &p->all[i]) || is_redacted(p, &p->all[i]))
			continue;
		if ((r = s->get(&p->tmp, s, APTIX_TABLE_OBJECTS,
				p->all[i].id, APTIX_OID_RAWSZ)) < 0)
			return r;
		r = aptix_stored_based_on(&base, p->tmp.ptr, p->tmp.len);
		if (r <= 0 || (!has_blob(p, &base) && !is_redacted(p, &base)))
			continue;	/* a corrupt one is fsck's business */
		if (aptix__grow(&p->reb, &p->areb, p->nreb,
				sizeof(*p->reb), 16) < 0)
			return APTIX_ERROR;
		rd = &p->reb[p->nreb];
		rd->id = p->all[i];
		aptix_buf_init(&rd->content, 0);
		if ((r = aptix_odb_read(&rd->content, &type, p->repo->odb,
					&rd->id, 0)) < 0) {
			aptix_buf_release(&rd->content);
			return r;
		}
		rd->type = type;
		p->nreb++;
	}
	return 0;
}

/* The paths of file and chunk refs whose blob goes: their chunks go. */
static int plan_ref_paths(struct plan *p)
{
	aptix_otype type;
	aptix_turn t;
	size_t i, k;
	int r = 0;

	for (i = 0; i < p->nall && p->nblobs && r == 0; i++) {
		if ((r = aptix_odb_read(&p->tmp, &type, p->repo->odb,
					&p->all[i], 0)) < 0)
			return r;
		if (type != APTIX_OBJ_TURN)
			continue;
		if (aptix_turn_parse(&t, p->tmp.ptr, p->tmp.len) < 0) {
			aptix_error_clear();
			continue;	/* fsck's business */
		}
		for (k = 0; k < t.nfiles && r == 0; k++)
			if (t.files[k].has_content &&
			    has_blob(p, &t.files[k].content))
				r = add_path(p, t.files[k].path);
		for (k = 0; k < t.nchunks && r == 0; k++)
			if (!aptix_oid_is_zero(&t.chunks[k].snippet) &&
			    has_blob(p, &t.chunks[k].snippet))
				r = add_path(p, t.chunks[k].path);
		aptix_turn_release(&t);
	}
	return r;
}

struct table_walk {
	struct plan *p;
	aptix_table table;
	aptix_buf path, text;
	int r;
};

static const char *table_name(aptix_table t)
{
	switch (t) {
	case APTIX_TABLE_REFLOG: return "reflog";
	case APTIX_TABLE_SESSIONS: return "sessions";
	case APTIX_TABLE_CONVS: return "conversations";
	case APTIX_TABLE_RUNNING: return "running";
	case APTIX_TABLE_REFS: return "refs";
	case APTIX_TABLE_META: return "meta";
	case APTIX_TABLE_CHILDREN: return "children";
	case APTIX_TABLE_TIMELINE: return "timeline";
	default: return "rag";
	}
}

static int record_cb(const void *key, size_t klen, const void *val,
		     size_t vlen, void *payload)
{
	struct table_walk *tw = payload;
	struct plan *p = tw->p;
	struct record *rc;

	if (!memmem(val, vlen, p->o->secret, p->o->secret_len))
		return 0;
	if (aptix__grow(&p->recs, &p->arecs, p->nrecs, sizeof(*p->recs),
			16) < 0)
		return APTIX_ERROR;
	rc = &p->recs[p->nrecs++];
	rc->table = tw->table;
	aptix_buf_init(&rc->key, 0);
	aptix_buf_init(&rc->val, 0);
	if (aptix_buf_set(&rc->key, key, klen) < 0 ||
	    aptix_buf_set(&rc->val, val, vlen) < 0)
		return aptix_error_oom();
	mask(rc->val.ptr, rc->val.len, p);
	/* a session record stays one that reads (its checksum) */
	if (tw->table == APTIX_TABLE_SESSIONS ||
	    tw->table == APTIX_TABLE_TIMELINE)
		aptix_index__reseal(rc->val.ptr, rc->val.len);
	return 0;
}

static int has_secret(const struct plan *p, const void *b, size_t len)
{
	return len && memmem(b, len, p->o->secret, p->o->secret_len) != NULL;
}

/*
 * A record of the retrieval index holding the secret, in a chunk's text,
 * in its path (a file name) or in a file's manifest (its key, its value,
 * the path it names): that file leaves the index.
 */
static int rag_cb(const void *key, size_t klen, const void *val, size_t vlen,
		  void *payload)
{
	struct table_walk *tw = payload;
	const struct plan *p = tw->p;
	struct rag_manifest m;
	char kind = klen ? *(const char *)key : 0;
	int hit = 0;

	if (kind == 'd') {
		if (aptix_rag__local_doc(&tw->path, &tw->text, val, vlen) < 0) {
			aptix_error_clear();
			return 0;	/* a damaged record: not ours to judge */
		}
		hit = has_secret(p, tw->text.ptr, tw->text.len) ||
		      has_secret(p, tw->path.ptr, tw->path.len);
	} else if (kind == 'f' || kind == 'q') {
		if (!has_secret(p, key, klen) && !has_secret(p, val, vlen))
			return 0;
		if (aptix_rag__manifest_decode(&m, val, vlen) < 0) {
			aptix_error_clear();
			return 0;	/* left to the check after compaction */
		}
		hit = aptix_buf_set(&tw->path, m.path ? m.path : "",
				    m.path ? strlen(m.path) : 0) == 0;
		aptix_rag__manifest_release(&m);
		if (!hit)
			return aptix_error_oom();
	}
	if (hit)
		tw->r = add_path(tw->p, tw->path.ptr);
	return tw->r;
}

static int plan_tables(struct plan *p)
{
	static const aptix_table tables[] = {
		APTIX_TABLE_REFLOG, APTIX_TABLE_SESSIONS, APTIX_TABLE_CONVS,
		APTIX_TABLE_RUNNING, APTIX_TABLE_REFS, APTIX_TABLE_META,
		APTIX_TABLE_CHILDREN, APTIX_TABLE_TIMELINE
	};
	aptix_store *s = p->repo->store;
	struct table_walk tw;
	size_t i;
	int r = 0;

	if (!p->o->secret)
		return 0;
	memset(&tw, 0, sizeof(tw));
	tw.p = p;
	aptix_buf_init(&tw.path, 0);
	aptix_buf_init(&tw.text, 0);
	for (i = 0; i < ARRAY_SIZE(tables) && r == 0; i++) {
		tw.table = tables[i];
		r = s->iter(s, tables[i], NULL, 0, 0, record_cb, &tw);
	}
	if (r == 0)
		r = s->iter(s, APTIX_TABLE_RAG, NULL, 0, 0, rag_cb, &tw);
	aptix_buf_release(&tw.path);
	aptix_buf_release(&tw.text);
	return r;
}

/*
 * The stat cache beside the store names work-tree files: one named with
 * the secret puts it there. It is derived data (the next scan hashes the
 * files again), so it goes whole.
 */
static int plan_statcache(struct plan *p)
{
	aptix_buf data = APTIX_BUF_INIT;
	int r;

	if (!p->o->secret)
		return 0;
	if ((r = aptix_workspace_stat_cache(&p->statcache, p->repo)) < 0)
		return r;
	if (aptix_buf_read_file(&data, p->statcache.ptr) < 0)
		aptix_error_clear();	/* none, or unreadable: derived */
	else
		p->drop_statcache = has_secret(p, data.ptr, data.len);
	aptix_buf_release(&data);
	return 0;
}

static int running_cb(const void *key, size_t klen, const void *val,
		      size_t vlen, void *payload)
{
	(void)val;
	(void)vlen;
	aptix_error_set(APTIX_ERROR_REPOSITORY, "a turn is in flight in "
			"conversation '%.*s': purge when it is done",
			(int)(klen > 64 ? 64 : klen), (const char *)key);
	*(int *)payload = 1;
	return APTIX_ELOCKED;
}

/* The first key an iteration sees, in *(aptix_buf *)payload. */
static int first_key(const void *key, size_t klen, const void *val,
		     size_t vlen, void *payload)
{
	(void)val;
	(void)vlen;
	if (aptix_buf_set(payload, key, klen) < 0)
		return APTIX_ERROR;
	return APTIX_ITEROVER;
}

/*
 * The lines of chat's history (chat_history beside the store, what
 * libedit saves) that hold the secret: counted; the others are kept.
 */
static int plan_history(struct plan *p)
{
	const aptix_purge_options *o = p->o;
	aptix_buf data = APTIX_BUF_INIT;
	size_t at = 0, n;
	const char *nl;

	if (!o->secret)
		return 0;
	aptix_buf_printf(&p->hist_path, "%s/chat_history",
			 aptix_repo_path(p->repo));
	if (aptix_buf_oom(&p->hist_path))
		return aptix_error_oom();
	if (aptix_buf_read_file(&data, p->hist_path.ptr) < 0) {
		aptix_buf_release(&data);
		if (errno == ENOENT) {
			aptix_error_clear();
			return 0;
		}
		return APTIX_ERROR;
	}
	while (at < data.len) {
		nl = memchr(data.ptr + at, '\n', data.len - at);
		n = nl ? (size_t)(nl - data.ptr) + 1 - at : data.len - at;
		if (memmem(data.ptr + at, n, o->secret, o->secret_len))
			p->hist_lines++;
		else
			aptix_buf_put(&p->hist_kept, data.ptr + at, n);
		at += n;
	}
	aptix_buf_release(&data);
	return aptix_buf_oom(&p->hist_kept) ? aptix_error_oom() : 0;
}

/* chat_history without the lines holding the secret, replaced whole. */
static int write_history(struct plan *p)
{
	aptix_buf tmp = APTIX_BUF_INIT;
	int fd, r = 0;

	aptix_buf_printf(&tmp, "%s.purge-XXXXXX", p->hist_path.ptr);
	if (aptix_buf_oom(&tmp))
		return aptix_error_oom();
	if ((fd = mkstemp(tmp.ptr)) < 0) {
		aptix_error_set_os("cannot create '%s'", tmp.ptr);
		aptix_buf_release(&tmp);
		return APTIX_ERROR;
	}
	if (write(fd, p->hist_kept.ptr, p->hist_kept.len) !=
	    (ssize_t)p->hist_kept.len || fsync(fd) < 0) {
		aptix_error_set_os("cannot write '%s'", tmp.ptr);
		r = APTIX_ERROR;
	}
	close(fd);
	if (!r && rename(tmp.ptr, p->hist_path.ptr) < 0) {
		aptix_error_set_os("cannot rename '%s'", tmp.ptr);
		r = APTIX_ERROR;
	}
	if (r)
		unlink(tmp.ptr);
	aptix_buf_release(&tmp);
	return r;
}

static int make_plan(struct plan *p)
{
	aptix_store *s = p->repo->store;
	int busy = 0, r;
	size_t i;

	if ((r = s->iter(s, APTIX_TABLE_RUNNING, NULL, 0, 0, running_cb,
			 &busy)) < 0)
		return r;
	if ((r = s->iter(s, APTIX_TABLE_TIMELINE, NULL, 0, 1, first_key,
			 &p->newest)) < 0 && r != APTIX_ITEROVER)
		return r;
	if ((r = aptix_odb_foreach(p->repo->odb, collect_cb, p)) < 0)
		return r;
	if (p->nall)
		qsort(p->all, p->nall, sizeof(*p->all), oid_cmp_v);
	if ((r = plan_ids(p)) < 0 || (r = plan_objects(p)) < 0 ||
	    (r = plan_spliced(p)) < 0 || (r = plan_based(p)) < 0 ||
	    (r = plan_ref_paths(p)) < 0 ||
	    (r = plan_tables(p)) < 0 || (r = plan_statcache(p)) < 0 ||
	    (r = plan_history(p)) < 0)
		return r;
	for (i = 0; i < p->nblobs; i++)
		tell(p, APTIX_PURGE_BLOB, &p->blobs[i], "blob", NULL, NULL);
	for (i = 0; i < p->nred; i++)
		tell(p, APTIX_PURGE_REDACT, &p->red[i].id,
		     aptix_otype_name(p->red[i].type), NULL, NULL);
	for (i = 0; i < p->nrecs; i++) {
		const struct record *rc = &p->recs[i];

		/* a reflog key is "<ref> NUL <seq>": name the ref */
		tell(p, APTIX_PURGE_RECORD, NULL, NULL, table_name(rc->table),
		     rc->table == APTIX_TABLE_REFLOG ? rc->key.ptr : NULL);
	}
	for (i = 0; i < p->npaths; i++) {
		/* a path named with the secret is told masked */
		if (aptix_buf_set(&p->tmp, p->paths[i],
				  strlen(p->paths[i])) < 0)
			return aptix_error_oom();
		mask(p->tmp.ptr, p->tmp.len, p);
		tell(p, APTIX_PURGE_RAG_PATH, NULL, NULL, NULL, p->tmp.ptr);
		aptix_buf_clear(&p->tmp);
	}
	if (p->drop_statcache)
		tell(p, APTIX_PURGE_FILE, NULL, NULL, NULL, "stat-cache");
	if (p->hist_lines)
		tell(p, APTIX_PURGE_FILE_LINES, NULL, NULL, NULL,
		     "chat_history");
	return 0;
}

static void plan_release(struct plan *p)
{
	size_t i;

	for (i = 0; i < p->nred; i++)
		aptix_buf_release(&p->red[i].content);
	for (i = 0; i < p->nreb; i++)
		aptix_buf_release(&p->reb[i].content);
	free(p->reb);
	aptix_buf_release(&p->newest);
	aptix_buf_release(&p->statcache);
	aptix_buf_release(&p->hist_path);
	aptix_buf_release(&p->hist_kept);
	for (i = 0; i < p->nrecs; i++) {
		aptix_buf_release(&p->recs[i].key);
		aptix_buf_release(&p->recs[i].val);
	}
	free(p->all);
	free(p->blobs);
	free(p->red);
	free(p->recs);
	aptix__strv_clear(&p->paths, &p->npaths);
	aptix_buf_release(&p->tmp);
}

/* --- The changes ---------------------------------------------------------- */

/* The chunks of the paths leave every index that has some. */
static int drop_paths(struct plan *p, const aptix_config *cfg)
{
	static const char *const backends[] = { "local", "qdrant" };
	const aptix_purge_options *o = p->o;
	aptix_rag_index_options io = APTIX_RAG_INDEX_OPTIONS_INIT;
	aptix_rag_index_stats st;
	size_t i, files, chunks;
	int r;

	if (!p->npaths)
		return 0;
	io.scopes = (const char *const *)p->paths;
	io.nscopes = p->npaths;
	io.http = o->http;
	io.qdrant_url = o->qdrant_url;
	io.qdrant_api_key = o->qdrant_api_key;
	for (i = 0; i < ARRAY_SIZE(backends); i++) {
		io.backend = backends[i];
		if (aptix_rag_index_count(&files, &chunks, p->repo, cfg,
					  backends[i]) < 0) {
			aptix_error_clear();
			continue;	/* not set up: nothing indexed there */
		}
		if (!files)
			continue;
		if ((r = aptix_rag_index(&st, p->repo, cfg, &io)) < 0)
			return r;
	}
	return 0;
}

/*
 * A redacted value, or one whose base goes, written again whole (in val)
 * and in the store format its encoding needs.
 */
static int put_whole(aptix_store_wtxn *w, aptix_buf *val,
		     const struct redaction *rd)
{
	aptix_store *s = aptix_store_of_wtxn(w);
	int r;

	aptix_buf_clear(val);
	r = aptix_stored_encode(val, rd->type, rd->content.ptr,
				rd->content.len);
	if (r == 0)
		r = aptix_odb_store_note_format(w, val);
	if (r == 0)
		r = s->wput(w, APTIX_TABLE_OBJECTS, rd->id.id,
			    APTIX_OID_RAWSZ, val->ptr, val->len);
	return r;
}

static int write_fn(aptix_store_wtxn *w, void *payload)
{
	struct plan *p = payload;
	aptix_store *s = aptix_store_of_wtxn(w);
	aptix_buf val = APTIX_BUF_INIT;
	size_t i;
	int r;

	/*
	 * A turn committed since the plan may have stored values against
	 * what goes (spliced or based on it), which the plan did not see:
	 * plan again rather than leave them unreadable.
	 */
	r = s->witer_rev(w, APTIX_TABLE_TIMELINE, NULL, 0, first_key, &val);
	if (r == APTIX_ITEROVER)
		r = 0;
	/* (an empty timeline: both buffers empty, their pointers NULL) */
	if (r == 0 && (val.len != p->newest.len ||
		       (val.len && memcmp(val.ptr, p->newest.ptr, val.len)))) {
		aptix_buf_release(&val);
		aptix_error_set(APTIX_ERROR_REPOSITORY, "purge: a turn was "
				"stored while purge planned; nothing was "
				"purged: run it again");
		return APTIX_ELOCKED;
	}
	for (i = 0; i < p->nblobs && r == 0; i++) {
		r = s->wdel(w, APTIX_TABLE_OBJECTS, p->blobs[i].id,
			    APTIX_OID_RAWSZ);
		if (r == APTIX_ENOTFOUND)
			r = 0;
		p->record_val[1] = PURGE_REMOVED;
		if (r == 0)
			r = s->wput(w, APTIX_TABLE_PURGED, p->blobs[i].id,
				    APTIX_OID_RAWSZ, p->record_val,
				    p->record_len);
	}
	for (i = 0; i < p->nred && r == 0; i++) {
		r = put_whole(w, &val, &p->red[i]);
		p->record_val[1] = PURGE_REDACTED;
		if (r == 0)
			r = s->wput(w, APTIX_TABLE_PURGED, p->red[i].id.id,
				    APTIX_OID_RAWSZ, p->record_val,
				    p->record_len);
	}
	for (i = 0; i < p->nreb && r == 0; i++)
		r = put_whole(w, &val, &p->reb[i]);
	for (i = 0; i < p->nrecs && r == 0; i++) {
		const struct record *rc = &p->recs[i];

		r = s->wput(w, rc->table, rc->key.ptr, rc->key.len,
			    rc->val.ptr, rc->val.len);
	}
	aptix_buf_release(&val);
	return r;
}

/* Does the file at path hold the secret? (1, 0, or < 0 unreadable) */
static int file_has_secret(const struct plan *p, const char *path)
{
	size_t keep = p->o->secret_len - 1, have = 0;
	char *buf;
	ssize_t n;
	int fd, r = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (!(buf = aptix__malloc(CHECK_BLOCK + keep))) {
		close(fd);
		return APTIX_ERROR;
	}
	while (!r && (n = read(fd, buf + have, CHECK_BLOCK)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -1;
			break;
		}
		have += (size_t)n;
		r = has_secret(p, buf, have);
		if (have > keep) {
			/* an occurrence may straddle two blocks */
			memmove(buf, buf + have - keep, keep);
			have = keep;
		}
	}
	free(buf);
	close(fd);
	return r;
}

/*
 * After compaction no file of the store may hold the secret's bytes: a
 * record purge cannot rewrite (a name in a key), a file beside data.mdb,
 * a file written meanwhile. Each found is named in the error; purge is
 * then not reported done.
 */
static int check_gone(struct plan *p)
{
	const char *dir = aptix_repo_path(p->repo);
	aptix_buf path = APTIX_BUF_INIT, found = APTIX_BUF_INIT;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int r = 0;

	if (!p->o->secret)
		return 0;
	if (!(d = opendir(dir))) {
		aptix_error_set_os("purge: cannot check '%s'", dir);
		return APTIX_ERROR;
	}
	while (r >= 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		aptix_buf_clear(&path);
		aptix_buf_printf(&path, "%s/%s", dir, de->d_name);
		if (aptix_buf_oom(&path)) {
			r = aptix_error_oom();
			break;
		}
		if (stat(path.ptr, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if ((r = file_has_secret(p, path.ptr)) == 1)
			aptix_buf_printf(&found, "%s'%s'", found.len ? ", " :
					 "", path.ptr);
		if (r == -1) {
			aptix_error_set_os("purge: cannot check '%s'",
					   path.ptr);
			r = APTIX_ERROR;
		}
	}
	closedir(d);
	if (r >= 0 && found.len) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "purge: the secret is "
				"still in %s (a name purge cannot rewrite, or "
				"a file written meanwhile): it is not purged",
				found.ptr);
		r = APTIX_ERROR;
	}
	aptix_buf_release(&path);
	aptix_buf_release(&found);
	return r < 0 ? r : 0;
}

int aptix_purge(aptix_purge_stats *out, aptix_repo *repo,
		const aptix_config *cfg, const aptix_purge_options *o)
{
	aptix_store *s;
	struct plan p;
	const char *reason;
	size_t rlen;
	int r;

	APTIX_ASSERT_ARG(out && repo && o);
	APTIX_ASSERT_ARG(o->version == 1);
	APTIX_ASSERT_ARG(o->nids == 0 || o->ids);
	memset(out, 0, sizeof(*out));
	if ((r = aptix__repo_kv(&s, repo, "purge")) < 0)
		return r;
	if (!o->nids && !o->secret) {
		aptix_error_set(APTIX_ERROR_INVALID, "purge: nothing to purge "
				"(name objects or a secret)");
		return APTIX_EINVALID;
	}
	if (o->secret && (o->secret_len < 8 ||
			  memchr(o->secret, '\n', o->secret_len))) {
		aptix_error_set(APTIX_ERROR_INVALID, "purge: the secret must "
				"be one line of 8 bytes or more");
		return APTIX_EINVALID;
	}
	if (!o->dry_run && (s->readonly(s) || !s->compact)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "purge: the store "
				"cannot be %s", s->readonly(s) ? "written" :
				"compacted");
		return APTIX_ERROR;
	}
	memset(&p, 0, sizeof(p));
	p.repo = repo;
	p.o = o;
	aptix_buf_init(&p.tmp, 0);
	reason = o->reason && *o->reason ? o->reason : "purged";
	rlen = aptix_utf8_cut(reason, strlen(reason), REASON_MAX);
	p.record_val[0] = PURGE_VERSION;
	aptix__put_be64(p.record_val + 2, (uint64_t)aptix_now_ms());
	memcpy(p.record_val + 10, reason, rlen);
	p.record_len = 10 + rlen;

	/* what would stop compaction stops purge before it changes a byte */
	if ((!o->dry_run && (r = s->compact(s, APTIX_STORE_COMPACT_CHECK)) < 0)
	    || (r = make_plan(&p)) < 0)
		goto done;
	out->blobs = p.nblobs;
	out->redacted = p.nred;
	out->records = p.nrecs;
	out->rag_paths = p.npaths;
	out->history_lines = p.hist_lines;
	s->disk_usage(&out->disk_before, s);
	if (o->dry_run)
		goto done;
	if ((r = drop_paths(&p, cfg)) < 0 ||
	    (p.hist_lines && (r = write_history(&p)) < 0) ||
	    ((p.nblobs || p.nred || p.nrecs) &&
	     (r = s->write(s, write_fn, &p)) < 0))
		goto done;
	/*
	 * The index records are remade from what is left: a masked record
	 * says nothing true, and the rolling summary's line of a purged
	 * instruction becomes "[purged]" (what fsck --full recomputes).
	 */
	if ((p.nblobs || p.nred) && (r = aptix_index_rebuild(repo, NULL)) < 0)
		goto done;
	if (p.drop_statcache && unlink(p.statcache.ptr) < 0 &&
	    errno != ENOENT) {
		aptix_error_set_os("purge: cannot remove '%s'",
				   p.statcache.ptr);
		r = APTIX_ERROR;
		goto done;
	}
	if ((r = s->compact(s, 0)) < 0) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "purged, but the "
				"store could not be compacted (%s): its free "
				"pages may still hold the bytes; run 'aptix "
				"purge --compact' when no other aptix command "
				"runs", aptix_error_last()->message);
		goto done;
	}
	s->disk_usage(&out->disk_after, s);
	r = check_gone(&p);
done:
	plan_release(&p);
	return r;
}

int aptix_purge_compact(aptix_repo *repo)
{
	aptix_store *s;

	APTIX_ASSERT_ARG(repo);
	if (aptix__repo_kv(&s, repo, "compaction") < 0)
		return APTIX_EINVALID;
	if (!s->compact || s->readonly(s)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the store cannot be "
				"compacted");
		return APTIX_ERROR;
	}
	return s->compact(s, 0);
}
