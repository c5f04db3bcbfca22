/*
 * src/store/odb-store.c - the object backend over a store's objects table.
 */
#include "util/common.h"
#include "store/odb-store.h"
#include "store/backend-kv.h"
#include "object/zstream.h"

typedef struct {
	aptix_odb_backend parent;
	aptix_store *store;
} store_backend;

struct sb_view {
	aptix_buf *out;
	aptix_otype *type;
	size_t *size;
	aptix_buf *deferred;	/* a value that needs bases, decoded later */
	int as_base;		/* read as a base: 1 of a splice, 2 of a
				   based value */
	size_t stored;		/* the stored value's bytes */
};

/*
 * A value shorter than this may be kept where its record is, without
 * the checksum that a value of its own carries (objects-format.md,
 * "Checksummed values of their own"): a read hashes its content again,
 * so that a damaged one is an error, never another object.
 */
#define CHECKED_BY_HASH 64

static int read_cb(const void *val, size_t vlen, void *payload)
{
	struct sb_view *v = payload;
	const unsigned char *p = val;

	v->stored = vlen;
	/* a splice's base is never spliced, a based value's never based */
	if (vlen && ((v->as_base == 1 && aptix_stored_is_spliced(val, vlen)) ||
		     (v->as_base == 2 && (p[0] & APTIX_STORED_BASED)))) {
		aptix_error_set(APTIX_ERROR_ODB, "a base of a stored object "
				"has bases of its own");
		return APTIX_ECORRUPT;
	}
	/* its bases are read once this view's transaction is over */
	if (aptix_stored_needs_bases(val, vlen))
		return aptix_buf_set(v->deferred, val, vlen);
	return aptix_stored_decode(v->out, v->type, val, vlen);
}

static int header_cb(const void *val, size_t vlen, void *payload)
{
	struct sb_view *v = payload;
	size_t hlen;

	return aptix_stored_header(v->type, v->size, &hlen, val, vlen);
}

static int exists_cb(const void *val, size_t vlen, void *payload)
{
	(void)val;
	(void)vlen;
	(void)payload;
	return 0;
}

/* A read of a purged object says so (the error, not a crash or "corrupt"). */
static void purged_note(aptix_store *s, const aptix_oid *id)
{
	aptix_buf val = APTIX_BUF_INIT;
	aptix_purge_info info;
	char when[32];

	if (s->get(&val, s, APTIX_TABLE_PURGED, id->id, APTIX_OID_RAWSZ) == 0 &&
	    aptix__purge_decode(&info, val.ptr, val.len) == 0)
		aptix_error_set(APTIX_ERROR_ODB, "object '%s' was purged on "
				"%s: %s", aptix_oid_hex(id),
				aptix_time_fmt(when, info.time), info.reason);
	aptix_buf_release(&val);
}

static int sb_view(aptix_odb_backend *b, const aptix_oid *id,
		   aptix_store_view_cb cb, struct sb_view *v)
{
	aptix_store *s = ((store_backend *)b)->store;
	int r = s->view(s, APTIX_TABLE_OBJECTS, id->id, APTIX_OID_RAWSZ, cb,
			v);

	if (r == APTIX_ECORRUPT) {
		/* the reason stays: a damaged header, a piece missing... */
		char why[240];

		snprintf(why, sizeof(why), "%s", aptix_error_last()->message);
		aptix_error_set(APTIX_ERROR_ODB, "object '%s' is corrupt%s%s",
				aptix_oid_hex(id), why[0] ? ": " : "", why);
	}
	if (r == APTIX_ENOTFOUND && cb != exists_cb)
		purged_note(s, id);
	return r;
}

static int read_base(aptix_buf *out, const aptix_oid *id, aptix_otype type,
		     int splice, void *payload);

/*
 * The content of an in-place value hashes to its id, or the object was
 * redacted by purge (which keeps the id, and records it).
 */
static int check_hash(aptix_odb_backend *b, const aptix_oid *id,
		      aptix_otype type, const aptix_buf *content)
{
	aptix_store *s = ((store_backend *)b)->store;
	aptix_buf rec = APTIX_BUF_INIT;
	aptix_purge_info info;
	aptix_oid actual;
	int r = aptix_object_hash(&actual, type, content->ptr, content->len);

	if (r < 0 || !aptix_oid_cmp(&actual, id))
		return r;
	if (s->get(&rec, s, APTIX_TABLE_PURGED, id->id, APTIX_OID_RAWSZ) == 0 &&
	    aptix__purge_decode(&info, rec.ptr, rec.len) == 0 &&
	    info.redacted)
		r = 1;
	aptix_buf_release(&rec);
	if (r == 1) {
		aptix_error_clear();
		return 0;
	}
	aptix_error_set(APTIX_ERROR_ODB, "hash mismatch for object '%s' "
			"(content hashes to '%s')", aptix_oid_hex(id),
			aptix_oid_hex(&actual));
	return APTIX_EMISMATCH;
}

/* Read id (as_base: see struct sb_view), its bases after the view. */
static int read_as(aptix_buf *out, aptix_otype *type, aptix_odb_backend *b,
		   const aptix_oid *id, int as_base)
{
	aptix_buf deferred = APTIX_BUF_INIT;
	struct sb_view v = { out, type, NULL, &deferred, as_base, 0 };
	int r = sb_view(b, id, read_cb, &v);

	if (!r && deferred.len)
		r = aptix_stored_decode_with(out, type, deferred.ptr,
					     deferred.len, read_base, b);
	aptix_buf_release(&deferred);
	if (!r && v.stored < CHECKED_BY_HASH)
		r = check_hash(b, id, *type, out);
	return r;
}

static int read_base(aptix_buf *out, const aptix_oid *id, aptix_otype type,
		     int splice, void *payload)
{
	aptix_otype t = APTIX_OBJ_BLOB;
	int r = read_as(out, &t, payload, id, splice ? 1 : 2);

	return !r && t != type ? APTIX_ECORRUPT : r;
}

static int sb_read(aptix_buf *out, aptix_otype *type, aptix_odb_backend *b,
		   const aptix_oid *id)
{
	int r = read_as(out, type, b, id, 0);

	if (r == APTIX_ECORRUPT) {
		char why[256];

		snprintf(why, sizeof(why), "%s", aptix_error_last() ?
			 aptix_error_last()->message : "");
		if (!strstr(why, aptix_oid_hex(id)))
			aptix_error_set(APTIX_ERROR_ODB, "object '%s' is "
					"corrupt: %s", aptix_oid_hex(id), why);
	}
	return r;
}

static int sb_read_header(size_t *size, aptix_otype *type,
			  aptix_odb_backend *b, const aptix_oid *id)
{
	struct sb_view v = { NULL, type, size, NULL, 0, 0 };

	return sb_view(b, id, header_cb, &v);
}

static int sb_exists(aptix_odb_backend *b, const aptix_oid *id)
{
	struct sb_view v = { NULL, NULL, NULL, NULL, 0, 0 };

	return sb_view(b, id, exists_cb, &v) == 0;
}

struct write_one {
	const aptix_oid *id;
	aptix_buf *val;
};

static int write_one_fn(aptix_store_wtxn *w, void *payload)
{
	return aptix_odb_store_put(w, ((struct write_one *)payload)->id,
				   ((struct write_one *)payload)->val);
}

/*
 * A store of an older format that gets its first value of a newer one
 * (packed or spliced: 2; based: 3) says so, in the same write: an older
 * aptix then refuses it ("upgrade aptix") instead of calling the new
 * values corrupt.
 */
int aptix_odb_store_raise_format(aptix_store_wtxn *w, int need)
{
	static const char key[] = "format";
	aptix_store *s = aptix_store_of_wtxn(w);
	aptix_buf cur = APTIX_BUF_INIT;
	char fmt[16];
	int r = s->wget(&cur, w, APTIX_TABLE_META, key, strlen(key));

	if (r == 0 && strtol(cur.ptr, NULL, 10) < need) {
		snprintf(fmt, sizeof(fmt), "%d", need);
		r = s->wput(w, APTIX_TABLE_META, key, strlen(key), fmt,
			    strlen(fmt));
	} else if (r == APTIX_ENOTFOUND) {
		r = 0;
	}
	aptix_buf_release(&cur);
	return r;
}

int aptix_odb_store_note_format(aptix_store_wtxn *w, const aptix_buf *val)
{
	int need;

	if (!val->len)
		return 0;
	need = val->ptr[0] & APTIX_STORED_BASED ? 3 :
		val->ptr[0] & APTIX_STORED_PACKED ? 2 : 1;
	return need == 1 ? 0 : aptix_odb_store_raise_format(w, need);
}

/*
 * The bases a value names are in the store, in this write: it was
 * encoded before the write began, and a purge may have removed one
 * since. Stored anyway, the value could never be read.
 */
static int bases_present(aptix_store_wtxn *w, aptix_store *s,
			 const aptix_oid *id, const aptix_buf *val)
{
	aptix_oid bases[APTIX_STORED_MAX_SPLICES + 1];
	aptix_buf tmp = APTIX_BUF_INIT;
	int i, n, r = 0;

	n = aptix_stored_bases(bases, val->ptr, val->len);
	for (i = 0; i < n && r == 0; i++)
		r = s->wget(&tmp, w, APTIX_TABLE_OBJECTS, bases[i].id,
			    APTIX_OID_RAWSZ);
	aptix_buf_release(&tmp);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_set(APTIX_ERROR_ODB, "object '%s' was not stored: "
				"its base '%s' was purged meanwhile",
				aptix_oid_hex(id), aptix_oid_hex(&bases[i - 1]));
		return APTIX_ERROR;
	}
	return n < 0 ? APTIX_ECORRUPT : r;
}

int aptix_odb_store_put(aptix_store_wtxn *w, const aptix_oid *id,
			const aptix_buf *val)
{
	aptix_store *s = aptix_store_of_wtxn(w);
	aptix_buf tmp = APTIX_BUF_INIT;
	int r = s->wget(&tmp, w, APTIX_TABLE_OBJECTS, id->id, APTIX_OID_RAWSZ);

	aptix_buf_release(&tmp);
	if (r == 0)
		return 0;	/* already there: a no-op */
	if (r != APTIX_ENOTFOUND)
		return r;
	if ((r = bases_present(w, s, id, val)) < 0)
		return r;
	if ((r = aptix_odb_store_note_format(w, val)) < 0)
		return r;
	return s->wput(w, APTIX_TABLE_OBJECTS, id->id, APTIX_OID_RAWSZ,
		       val->ptr, val->len);
}

static int sb_write(aptix_odb_backend *b, const aptix_oid *id,
		    const void *data, size_t len, aptix_otype type)
{
	aptix_store *s = ((store_backend *)b)->store;
	aptix_buf val = APTIX_BUF_INIT;
	struct write_one wo;
	int r;

	if (sb_exists(b, id))
		return 0;
	if ((r = aptix_stored_encode(&val, type, data, len)) < 0)
		goto done;
	wo.id = id;
	wo.val = &val;
	r = s->write(s, write_one_fn, &wo);
done:
	aptix_buf_release(&val);
	return r;
}

struct prefix_walk {
	const aptix_oid *prefix;
	size_t hexlen;
	aptix_oid *first;
	int count;
};

static int prefix_matches(const unsigned char *key,
			  const struct prefix_walk *pw)
{
	size_t full = pw->hexlen / 2;

	if (memcmp(key, pw->prefix->id, full))
		return 0;
	if (pw->hexlen % 2 &&
	    (key[full] & 0xf0) != (pw->prefix->id[full] & 0xf0))
		return 0;
	return 1;
}

static int prefix_cb(const void *key, size_t klen, const void *val UNUSED,
		     size_t vlen UNUSED, void *payload)
{
	struct prefix_walk *pw = payload;

	if (klen != APTIX_OID_RAWSZ || !prefix_matches(key, pw))
		return APTIX_ITEROVER;
	if (!pw->count)
		memcpy(pw->first->id, key, APTIX_OID_RAWSZ);
	if (++pw->count >= 2)
		return APTIX_ITEROVER;
	return 0;
}

static int sb_exists_prefix(aptix_oid *out, int *count, aptix_odb_backend *b,
			    const aptix_oid *prefix, size_t hexlen)
{
	aptix_store *s = ((store_backend *)b)->store;
	struct prefix_walk pw = { prefix, hexlen, out, 0 };
	int r;

	r = s->iter(s, APTIX_TABLE_OBJECTS, prefix->id, APTIX_OID_RAWSZ, 0,
		    prefix_cb, &pw);
	*count = pw.count;
	return r;
}

/* The id a key of the objects table names. */
static int key_id(aptix_oid *id, const void *key, size_t klen)
{
	if (klen != APTIX_OID_RAWSZ) {
		aptix_error_set(APTIX_ERROR_ODB, "object key of %zu bytes in "
				"the objects table", klen);
		return APTIX_ECORRUPT;
	}
	memcpy(id->id, key, APTIX_OID_RAWSZ);
	return 0;
}

/*
 * The id and header of a record met on a walk of the objects: 0, 1 for
 * a value the walk could not put together (a damaged header: type
 * APTIX_OBJ_BAD, size 0), < 0 for a bad key.
 */
static int walk_header(aptix_oid *id, aptix_otype *type, size_t *size,
		       const void *key, size_t klen, const void *val,
		       size_t vlen)
{
	size_t hlen;
	int r = key_id(id, key, klen);

	if (r < 0)
		return r;
	if (aptix_stored_header(type, size, &hlen, val, vlen) < 0) {
		aptix_error_clear();
		*type = APTIX_OBJ_BAD;
		*size = 0;
		return 1;
	}
	return 0;
}

/*
 * A walk of the objects table, for the three foreach slots: the one
 * callback set says what the caller gets of each record (its id; its
 * id and header; or its id, type and, when asked for, its content).
 */
struct objects_walk {
	aptix_odb_foreach_cb id_cb;
	aptix_odb_foreach_header_cb header_cb;
	aptix_odb_foreach_object_cb object_cb;
	void *payload;
	unsigned types, flags;	/* of object_cb */
	aptix_buf content;
	aptix_odb_foreach_numbered_cb numbered_id_cb, numbered_cb;
};

/*
 * The content of a value met on the walk, as sb_read() would give it,
 * or 0 when the walk cannot say (the caller reads it, and learns why):
 * a value made of other objects, a damaged one, or one whose content
 * does not hash to its id where a read would check (a small value, or
 * the caller's APTIX_ODB_READ_VERIFY; id NULL: it cannot be checked).
 */
static int walk_content(struct objects_walk *ow, const aptix_oid *id,
			aptix_otype type, const void *val, size_t vlen)
{
	aptix_otype t;
	aptix_oid actual;

	if (aptix_stored_needs_bases(val, vlen) ||
	    aptix_stored_decode(&ow->content, &t, val, vlen) < 0 ||
	    t != type) {
		aptix_error_clear();
		return 0;
	}
	if (vlen >= CHECKED_BY_HASH && !(ow->flags & APTIX_ODB_READ_VERIFY))
		return 1;
	if (!id)
		return 0;
	if (aptix_object_hash(&actual, type, ow->content.ptr,
			      ow->content.len) < 0) {
		aptix_error_clear();
		return 0;
	}
	return !aptix_oid_cmp(&actual, id);
}

static int objects_walk_cb(const void *key, size_t klen, const void *val,
			   size_t vlen, void *payload)
{
	struct objects_walk *ow = payload;
	aptix_otype type;
	size_t size;
	aptix_oid id;
	int r;

	if (ow->id_cb) {
		r = key_id(&id, key, klen);
		return r < 0 ? r : ow->id_cb(&id, ow->payload);
	}
	r = walk_header(&id, &type, &size, key, klen, val, vlen);
	if (r < 0)
		return r;
	if (ow->header_cb)
		return ow->header_cb(&id, type, size, ow->payload);
	if (r)
		return ow->object_cb(&id, APTIX_OBJ_BAD, NULL, 0, ow->payload);
	if (!(ow->types & APTIX_ODB_TYPE(type)) ||
	    !walk_content(ow, &id, type, val, vlen))
		return ow->object_cb(&id, type, NULL, 0, ow->payload);
	return ow->object_cb(&id, type, ow->content.ptr, ow->content.len,
			     ow->payload);
}

/* The records from start's on (NULL: all), each to ow's callback. */
static int walk_objects(aptix_odb_backend *b, const aptix_oid *start,
			struct objects_walk *ow)
{
	aptix_store *s = ((store_backend *)b)->store;
	int r = s->iter(s, APTIX_TABLE_OBJECTS, start ? start->id : NULL,
			start ? APTIX_OID_RAWSZ : 0, 0, objects_walk_cb, ow);

	aptix_buf_release(&ow->content);
	return r;
}

static int sb_foreach(aptix_odb_backend *b, aptix_odb_foreach_cb cb,
		      void *payload)
{
	struct objects_walk ow = { .id_cb = cb, .payload = payload,
				   .content = APTIX_BUF_INIT };

	return walk_objects(b, NULL, &ow);
}

static int sb_foreach_header(aptix_odb_backend *b,
			     aptix_odb_foreach_header_cb cb, void *payload)
{
	struct objects_walk ow = { .header_cb = cb, .payload = payload,
				   .content = APTIX_BUF_INIT };

	return walk_objects(b, NULL, &ow);
}

static int sb_foreach_object(aptix_odb_backend *b, const aptix_oid *start,
			     unsigned types, unsigned flags,
			     aptix_odb_foreach_object_cb cb, void *payload)
{
	struct objects_walk ow = { .object_cb = cb, .payload = payload,
				   .types = types, .flags = flags,
				   .content = APTIX_BUF_INIT };

	return walk_objects(b, start, &ow);
}

/* foreach_all: the ids, numbered (aptix_store_numbered_cb) */
static int numbered_id_cb(uint64_t n, const void *key, size_t klen,
			  const void *val, size_t vlen, void *payload)
{
	struct objects_walk *ow = payload;
	aptix_oid id;
	int r = key_id(&id, key, klen);

	(void)val;
	(void)vlen;
	return r < 0 ? r : ow->numbered_id_cb((size_t)n, &id, APTIX_OBJ_BAD,
					       NULL, 0, ow->payload);
}

/* foreach_all: the objects, numbered, as objects_walk_cb gives them */
static int numbered_object_cb(uint64_t n, const void *key, size_t klen,
			      const void *val, size_t vlen, void *payload)
{
	struct objects_walk *ow = payload;
	aptix_oid id, *idp = NULL;
	aptix_otype type;
	size_t size, hlen;
	int r;

	if (key) {
		if ((r = key_id(&id, key, klen)) < 0)
			return r;
		idp = &id;
	}
	if (aptix_stored_header(&type, &size, &hlen, val, vlen) < 0) {
		aptix_error_clear();
		return ow->numbered_cb((size_t)n, idp, APTIX_OBJ_BAD, NULL, 0,
				       ow->payload);
	}
	if (!(ow->types & APTIX_ODB_TYPE(type)) ||
	    !walk_content(ow, idp, type, val, vlen))
		return ow->numbered_cb((size_t)n, idp, type, NULL, 0,
				       ow->payload);
	return ow->numbered_cb((size_t)n, idp, type, ow->content.ptr,
			       ow->content.len, ow->payload);
}

static int sb_foreach_all(aptix_odb_backend *b, unsigned types,
			  unsigned flags, aptix_odb_foreach_numbered_cb id_cb,
			  aptix_odb_foreach_numbered_cb object_cb,
			  void *payload)
{
	aptix_store *s = ((store_backend *)b)->store;
	struct objects_walk ow = { .numbered_id_cb = id_cb,
				   .numbered_cb = object_cb,
				   .payload = payload, .types = types,
				   .flags = flags, .content = APTIX_BUF_INIT };
	int r;

	if (!s->iter_all)
		return APTIX_PASSTHROUGH;
	r = s->iter_all(s, APTIX_TABLE_OBJECTS, numbered_id_cb,
			object_cb ? numbered_object_cb : NULL, &ow);
	aptix_buf_release(&ow.content);
	return r;
}

/* The stored form, inside a transaction of the backend over the store. */
static int sb_read_stored(aptix_buf *out, aptix_odb_backend *b,
			  aptix_backend_txn *tx, const aptix_oid *id)
{
	aptix_store *s = ((store_backend *)b)->store;
	aptix_store_wtxn *w = tx ? aptix_backend_kv_wtxn(tx) : NULL;

	if (tx && !w)
		return aptix_backend_kv_foreign(tx);
	aptix_buf_clear(out);
	if (w)
		return s->wget(out, w, APTIX_TABLE_OBJECTS, id->id,
			       APTIX_OID_RAWSZ);
	return s->get(out, s, APTIX_TABLE_OBJECTS, id->id, APTIX_OID_RAWSZ);
}

static int sb_write_stored(aptix_odb_backend *b, aptix_backend_txn *tx,
			   const aptix_oid *id, const void *val, size_t len)
{
	aptix_store_wtxn *w = aptix_backend_kv_wtxn(tx);
	/* borrowed, never grown or freed */
	aptix_buf v = { (char *)(uintptr_t)val, len, 0, 0 };

	(void)b;
	if (!w)
		return aptix_backend_kv_foreign(tx);
	return aptix_odb_store_put(w, id, &v);
}

static void sb_free(aptix_odb_backend *b)
{
	free(b);
}

int aptix_odb_backend_store(aptix_odb_backend **out, aptix_store *store)
{
	store_backend *sb = aptix__calloc(1, sizeof(*sb));

	if (!sb)
		return APTIX_ERROR;
	sb->parent.version = APTIX_ODB_BACKEND_VERSION;
	sb->parent.read = sb_read;
	sb->parent.read_header = sb_read_header;
	sb->parent.write = sb_write;
	sb->parent.exists = sb_exists;
	sb->parent.exists_prefix = sb_exists_prefix;
	sb->parent.foreach = sb_foreach;
	sb->parent.foreach_header = sb_foreach_header;
	sb->parent.foreach_object = sb_foreach_object;
	sb->parent.foreach_all = sb_foreach_all;
	sb->parent.read_stored = sb_read_stored;
	sb->parent.write_stored = sb_write_stored;
	sb->parent.free = sb_free;
	sb->store = store;
	*out = &sb->parent;
	return 0;
}

aptix_store *aptix_store_of_wtxn(aptix_store_wtxn *w)
{
	/* Every backend's write transaction starts with its store. */
	return *(aptix_store **)(void *)w;
}

/* A purge record (odb-store.h). */
int aptix__purge_decode(aptix_purge_info *out, const void *val, size_t len)
{
	const unsigned char *p = val;
	size_t n;

	if (len < 10 || p[0] != PURGE_VERSION)
		return APTIX_ECORRUPT;
	out->redacted = p[1] == PURGE_REDACTED;
	out->time = (int64_t)aptix__get_be64(p + 2);
	n = len - 10;
	if (n >= sizeof(out->reason))
		n = aptix_utf8_cut((const char *)p + 10, n,
				   sizeof(out->reason) - 1);
	memcpy(out->reason, p + 10, n);
	out->reason[n] = '\0';
	return 0;
}
