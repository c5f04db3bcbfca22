/*
 * src/odb-store.c - the object backend over a store's objects table.
 */
#include "common.h"
#include "odb-store.h"
#include "zstream.h"

typedef struct {
	aptix_odb_backend parent;
	aptix_store *store;
} store_backend;

struct sb_view {
	aptix_buf *out;
	aptix_otype *type;
	size_t *size;
};

static int read_cb(const void *val, size_t vlen, void *payload)
{
	struct sb_view *v = payload;

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

	if (r == APTIX_ECORRUPT)
		aptix_error_set(APTIX_ERROR_ODB, "object '%s' is corrupt",
				aptix_oid_hex(id));
	if (r == APTIX_ENOTFOUND && cb != exists_cb)
		purged_note(s, id);
	return r;
}

static int sb_read(aptix_buf *out, aptix_otype *type, aptix_odb_backend *b,
		   const aptix_oid *id)
{
	struct sb_view v = { out, type, NULL };

	return sb_view(b, id, read_cb, &v);
}

static int sb_read_header(size_t *size, aptix_otype *type,
			  aptix_odb_backend *b, const aptix_oid *id)
{
	struct sb_view v = { NULL, type, size };

	return sb_view(b, id, header_cb, &v);
}

static int sb_exists(aptix_odb_backend *b, const aptix_oid *id)
{
	struct sb_view v = { NULL, NULL, NULL };

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

	r = s->iter(s, APTIX_TABLE_OBJECTS, prefix->id, APTIX_OID_RAWSZ,
		    prefix_cb, &pw);
	*count = pw.count;
	return r;
}

struct foreach_walk {
	aptix_odb_foreach_cb cb;
	void *payload;
};

static int foreach_cb(const void *key, size_t klen, const void *val UNUSED,
		      size_t vlen UNUSED, void *payload)
{
	struct foreach_walk *fw = payload;
	aptix_oid id;

	if (klen != APTIX_OID_RAWSZ) {
		aptix_error_set(APTIX_ERROR_ODB, "object key of %zu bytes in "
				"the objects table", klen);
		return APTIX_ECORRUPT;
	}
	memcpy(id.id, key, APTIX_OID_RAWSZ);
	return fw->cb(&id, fw->payload);
}

static int sb_foreach(aptix_odb_backend *b, aptix_odb_foreach_cb cb,
		      void *payload)
{
	aptix_store *s = ((store_backend *)b)->store;
	struct foreach_walk fw = { cb, payload };

	return s->iter(s, APTIX_TABLE_OBJECTS, NULL, 0, foreach_cb, &fw);
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
