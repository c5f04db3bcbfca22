/*
 * src/store/backend-registry.c - storage backends by name: what a
 * store's extensions.storage names and aptix_backend_open() opens.
 * Built in: "lmdb" (a store's directory), "memory" (no directory:
 * empty, gone when freed; for tests and embedders) and "postgresql" (a
 * store's directory whose config names the database: backend-pg.c).
 * Others register at run time.
 */
#include <pthread.h>
#include <strings.h>
#include "util/common.h"
#include "store/backend-kv.h"
#include "store/pg.h"
#include "store/backend-vtables.h"
#include "object/zstream.h"

struct entry {
	char name[32];
	aptix_backend_open_fn open;
};

static int open_lmdb(aptix_backend **out, const char *dir, unsigned flags)
{
	aptix_store *s;
	int r;

	*out = NULL;
	if ((r = aptix_store_lmdb_open(&s, dir, flags)) < 0)
		return r;
	return aptix_backend_kv_new(out, s, "lmdb", APTIX_STORE_FORMAT);
}

static int open_memory(aptix_backend **out, const char *dir, unsigned flags)
{
	aptix_store *s;
	int r;

	*out = NULL;
	if (dir) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the 'memory' backend "
				"keeps nothing on disk: the store '%s' cannot "
				"use it", dir);
		return APTIX_EINVALID;
	}
	if (flags & APTIX_STORE_RDONLY) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "a store in memory "
				"cannot be opened read-only");
		return APTIX_EINVALID;
	}
	if ((r = aptix_store_memory_new(&s)) < 0)
		return r;
	return aptix_backend_kv_new(out, s, "memory", APTIX_STORE_FORMAT);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry builtin[] = {
	{ "lmdb", open_lmdb },
	{ "memory", open_memory },
	{ "postgresql", aptix__backend_pg_open },
};
static struct entry *added;
static size_t nadded;

/* The entry named name, under the lock; NULL when none. */
static const struct entry *find(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(builtin); i++)
		if (!strcasecmp(builtin[i].name, name))
			return &builtin[i];
	for (i = 0; i < nadded; i++)
		if (!strcasecmp(added[i].name, name))
			return &added[i];
	return NULL;
}

int aptix_backend_register(const char *name, aptix_backend_open_fn open)
{
	struct entry *p;
	int r = 0;

	APTIX_ASSERT_ARG(name && open);
	if (!*name || strlen(name) >= sizeof(p->name)) {
		aptix_error_set(APTIX_ERROR_INVALID, "a backend's name has 1 "
				"to %zu bytes", sizeof(p->name) - 1);
		return APTIX_EINVALID;
	}
	pthread_mutex_lock(&lock);
	if (find(name)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "a backend named '%s' "
				"is registered already", name);
		r = APTIX_EEXISTS;
	} else if (!(p = aptix__realloc(added,
					(nadded + 1) * sizeof(*p)))) {
		r = APTIX_ERROR;
	} else {
		added = p;
		snprintf(p[nadded].name, sizeof(p->name), "%s", name);
		p[nadded++].open = open;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

int aptix_backend_names(aptix_buf *out)
{
	size_t i;

	pthread_mutex_lock(&lock);
	aptix_buf_clear(out);
	for (i = 0; i < ARRAY_SIZE(builtin); i++)
		aptix_buf_printf(out, "%s%s", i ? ", " : "", builtin[i].name);
	for (i = 0; i < nadded; i++)
		aptix_buf_printf(out, ", %s", added[i].name);
	pthread_mutex_unlock(&lock);
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

int aptix_backend_open(aptix_backend **out, const char *name,
		       const char *dir, unsigned flags)
{
	const struct entry *e;
	aptix_backend_open_fn open = NULL;
	aptix_buf names = APTIX_BUF_INIT;
	int r;

	APTIX_ASSERT_ARG(out && name);
	*out = NULL;
	pthread_mutex_lock(&lock);
	if ((e = find(name)))
		open = e->open;
	pthread_mutex_unlock(&lock);
	if (open) {
		if ((r = open(out, dir, flags)) == 0 &&
		    (*out)->version != APTIX_BACKEND_VERSION) {
			aptix_error_set(APTIX_ERROR_REPOSITORY, "backend '%s' "
					"is of version %u; this libaptix takes "
					"version %d", name, (*out)->version,
					APTIX_BACKEND_VERSION);
			(*out)->free(*out);
			*out = NULL;
			r = APTIX_EVERSION;
		}
		return r;
	}
	aptix_backend_names(&names);
	aptix_error_set(APTIX_ERROR_REPOSITORY, "no storage backend named "
			"'%s' (this build has: %s)", name, names.ptr);
	aptix_buf_release(&names);
	return APTIX_EVERSION;
}

struct write_one {
	aptix_odb_backend *odb;
	const aptix_oid *id;
	const aptix_buf *val;
};

static int write_one_fn(aptix_backend_txn *tx, void *payload)
{
	struct write_one *wo = payload;

	return wo->odb->write_stored(wo->odb, tx, wo->id, wo->val->ptr,
				     wo->val->len);
}

int aptix__claim_error(int r, const char *conv)
{
	if (r == APTIX_EEXISTS)
		aptix_error_set(APTIX_ERROR_REPOSITORY, "conversation '%s' "
				"is claimed", conv);
	else if (r == APTIX_ENOTFOUND)
		aptix_error_set(APTIX_ERROR_REPOSITORY, "conversation '%s' "
				"is not claimed", conv);
	else if (r == APTIX_EMISMATCH)
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the claim on '%s' "
				"changed hands", conv);
	return r;
}

int aptix__odb_write_encoded(aptix_backend *be, aptix_odb_backend *odb,
			     const aptix_oid *id, const void *data, size_t len,
			     aptix_otype type)
{
	aptix_buf val = APTIX_BUF_INIT;
	struct write_one wo = { odb, id, &val };
	int r = aptix_stored_encode(&val, type, data, len);

	if (r == 0)
		r = be->transaction(be, write_one_fn, &wo);
	aptix_buf_release(&val);
	return r;
}

static int read_base(aptix_buf *out, const aptix_oid *id, aptix_otype type,
		     int splice, void *payload)
{
	aptix_odb_backend *odb = payload;
	aptix_otype t = APTIX_OBJ_BLOB;
	int r;

	(void)splice;
	r = odb->read(out, &t, odb, id);
	return !r && t != type ? APTIX_ECORRUPT : r;
}

int aptix__odb_read_decoded(aptix_buf *out, aptix_otype *type,
			    aptix_odb_backend *odb, const aptix_oid *id)
{
	aptix_buf val = APTIX_BUF_INIT;
	int r = odb->read_stored(&val, odb, NULL, id);

	if (r == 0)
		r = aptix_stored_decode_with(out, type, val.ptr, val.len,
					     read_base, odb);
	if (r == APTIX_ECORRUPT)
		aptix_error_set(APTIX_ERROR_ODB, "object '%s' is corrupt",
				aptix_oid_hex(id));
	aptix_buf_release(&val);
	return r;
}
