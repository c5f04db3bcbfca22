/*
 * src/odb/odb.c - the object database front end: ids, verification and the
 * list of backends tried in priority order.
 */
#include "util/common.h"
#include "aptix/sys/odb_backend.h"

typedef struct {
	aptix_odb_backend *b;
	int priority;
	int read_only;
} backend_slot;

struct aptix_odb {
	backend_slot *slots;
	size_t n;
};

int aptix_odb_new(aptix_odb **out)
{
	*out = aptix__calloc(1, sizeof(aptix_odb));
	return *out ? 0 : APTIX_ERROR;
}

void aptix_odb_free(aptix_odb *odb)
{
	size_t i;

	if (!odb)
		return;
	for (i = 0; i < odb->n; i++)
		if (odb->slots[i].b->free)
			odb->slots[i].b->free(odb->slots[i].b);
	free(odb->slots);
	free(odb);
}

int aptix_odb_add_backend(aptix_odb *odb, aptix_odb_backend *b, int priority,
			  int read_only)
{
	backend_slot *s;
	size_t i;

	APTIX_ASSERT_ARG(odb && b);
	if (b->version != APTIX_ODB_BACKEND_VERSION) {
		aptix_error_set(APTIX_ERROR_ODB,
				"odb backend version %u is not supported",
				b->version);
		return APTIX_EINVALID;
	}
	s = aptix__realloc(odb->slots, (odb->n + 1) * sizeof(*s));
	if (!s)
		return APTIX_ERROR;
	odb->slots = s;
	for (i = odb->n; i > 0 && s[i - 1].priority < priority; i--)
		s[i] = s[i - 1];
	s[i].b = b;
	s[i].priority = priority;
	s[i].read_only = read_only;
	odb->n++;
	b->odb = odb;
	return 0;
}

static int not_found(const aptix_oid *id)
{
	const char *msg = aptix_error_last()->message;
	const char *hex = aptix_oid_hex(id);

	/* a backend said it was purged (odb-store.c): keep that */
	if (strstr(msg, "' was purged on ") && strstr(msg, hex))
		return APTIX_ENOTFOUND;
	aptix_error_set(APTIX_ERROR_ODB, "object '%s' not found", hex);
	return APTIX_ENOTFOUND;
}

int aptix_odb_read(aptix_buf *out, aptix_otype *type_out, aptix_odb *odb,
		   const aptix_oid *id, unsigned flags)
{
	size_t i;
	int r = APTIX_ENOTFOUND;

	for (i = 0; i < odb->n; i++) {
		aptix_odb_backend *b = odb->slots[i].b;

		if (!b->read)
			continue;
		r = b->read(out, type_out, b, id);
		if (r != APTIX_ENOTFOUND && r != APTIX_PASSTHROUGH)
			break;
	}
	if (r == APTIX_ENOTFOUND || r == APTIX_PASSTHROUGH)
		return not_found(id);
	if (r < 0)
		return r;
	if (flags & APTIX_ODB_READ_VERIFY) {
		aptix_oid actual;

		if ((r = aptix_object_hash(&actual, *type_out, out->ptr,
					   out->len)) < 0)
			return r;
		if (aptix_oid_cmp(&actual, id)) {
			aptix_error_set(APTIX_ERROR_ODB,
					"hash mismatch for object '%s' "
					"(content hashes to '%s')",
					aptix_oid_hex(id),
					aptix_oid_hex(&actual));
			return APTIX_EMISMATCH;
		}
	}
	return 0;
}

int aptix_odb_read_header(size_t *size_out, aptix_otype *type_out,
			  aptix_odb *odb, const aptix_oid *id)
{
	aptix_buf tmp = APTIX_BUF_INIT;
	size_t i;
	int r = APTIX_ENOTFOUND;

	for (i = 0; i < odb->n; i++) {
		aptix_odb_backend *b = odb->slots[i].b;

		if (b->read_header)
			r = b->read_header(size_out, type_out, b, id);
		else if (b->read) {
			r = b->read(&tmp, type_out, b, id);
			*size_out = tmp.len;
		} else
			continue;
		if (r != APTIX_ENOTFOUND && r != APTIX_PASSTHROUGH)
			break;
	}
	aptix_buf_release(&tmp);
	if (r == APTIX_ENOTFOUND || r == APTIX_PASSTHROUGH)
		return not_found(id);
	return r;
}

int aptix_odb_exists(aptix_odb *odb, const aptix_oid *id)
{
	size_t i;

	for (i = 0; i < odb->n; i++) {
		aptix_odb_backend *b = odb->slots[i].b;

		if (b->exists && b->exists(b, id) == 1)
			return 1;
	}
	return 0;
}

int aptix_odb_write(aptix_oid *out, aptix_odb *odb, aptix_otype type,
		    const void *data, size_t len)
{
	aptix_oid id;
	size_t i;
	int r;

	if ((r = aptix_object_validate(type, data, len)) < 0)
		return r;
	if ((r = aptix_object_hash(&id, type, data, len)) < 0)
		return r;
	if (out)
		*out = id;
	for (i = 0; i < odb->n; i++) {
		aptix_odb_backend *b = odb->slots[i].b;

		if (odb->slots[i].read_only || !b->write)
			continue;
		r = b->write(b, &id, data, len, type);
		if (r != APTIX_PASSTHROUGH)
			return r;
	}
	aptix_error_set(APTIX_ERROR_ODB, "no writable object backend");
	return APTIX_ERROR;
}

int aptix_odb_resolve_prefix(aptix_oid *out, aptix_odb *odb, const char *hex,
			     size_t hexlen)
{
	aptix_oid prefix, found;
	size_t i;
	int total = 0, r;

	if (hexlen < APTIX_OID_MINPREFIX || hexlen > APTIX_OID_HEXSZ) {
		aptix_error_set(APTIX_ERROR_INVALID,
				"object name '%.*s' is too short", (int)hexlen,
				hex);
		return APTIX_EINVALID;
	}
	if ((r = aptix_oid_fromstrn(&prefix, hex, hexlen)) < 0)
		return r;
	for (i = 0; i < odb->n; i++) {
		aptix_odb_backend *b = odb->slots[i].b;
		aptix_oid one;
		int count = 0;

		if (!b->exists_prefix)
			continue;
		r = b->exists_prefix(&one, &count, b, &prefix, hexlen);
		if (r < 0)
			return r;
		if (count && total && !aptix_oid_cmp(&one, &found) &&
		    count == 1)
			continue;	/* same object in two backends */
		if (count && !total)
			found = one;
		total += count;
	}
	if (!total) {
		aptix_error_set(APTIX_ERROR_ODB, "no object matches '%.*s'",
				(int)hexlen, hex);
		return APTIX_ENOTFOUND;
	}
	if (total > 1) {
		aptix_error_set(APTIX_ERROR_ODB, "short object id '%.*s' is "
				"ambiguous", (int)hexlen, hex);
		return APTIX_EAMBIGUOUS;
	}
	*out = found;
	return 0;
}

int aptix_odb_abbrev(char out[APTIX_OID_HEXSZ + 1], aptix_odb *odb,
		     const aptix_oid *id, size_t min)
{
	aptix_oid found;
	size_t len = min < APTIX_OID_MINPREFIX ? APTIX_OID_MINPREFIX : min;
	int r;

	aptix_oid_tostr(out, id);
	if (len > APTIX_OID_HEXSZ)
		len = APTIX_OID_HEXSZ;
	for (; len < APTIX_OID_HEXSZ && !aptix_oid_is_zero(id); len++) {
		r = aptix_odb_resolve_prefix(&found, odb, out, len);
		if (r == APTIX_ENOTFOUND ||
		    (r == 0 && !aptix_oid_cmp(&found, id)))
			break;
		if (r < 0 && r != APTIX_EAMBIGUOUS)
			return r;
	}
	out[len] = '\0';
	aptix_error_clear();
	return 0;
}

int aptix_odb_foreach(aptix_odb *odb, aptix_odb_foreach_cb cb, void *payload)
{
	size_t i;
	int r;

	for (i = 0; i < odb->n; i++) {
		aptix_odb_backend *b = odb->slots[i].b;

		if (!b->foreach)
			continue;
		if ((r = b->foreach(b, cb, payload)) != 0)
			return r;
	}
	return 0;
}

struct header_unknown {
	aptix_odb_foreach_header_cb cb;
	void *payload;
};

static int header_unknown_cb(const aptix_oid *id, void *payload)
{
	struct header_unknown *hu = payload;

	return hu->cb(id, APTIX_OBJ_BAD, 0, hu->payload);
}

int aptix_odb_foreach_header(aptix_odb *odb, aptix_odb_foreach_header_cb cb,
			     void *payload)
{
	struct header_unknown hu = { cb, payload };
	size_t i;
	int r;

	for (i = 0; i < odb->n; i++) {
		aptix_odb_backend *b = odb->slots[i].b;

		if (b->foreach_header)
			r = b->foreach_header(b, cb, payload);
		else if (b->foreach)
			r = b->foreach(b, header_unknown_cb, &hu);
		else
			continue;
		if (r != 0)
			return r;
	}
	return 0;
}

int aptix_odb_foreach_object(aptix_odb *odb, const aptix_oid *start,
			     unsigned types, unsigned flags,
			     aptix_odb_foreach_object_cb cb, void *payload)
{
	size_t i;
	int r;

	APTIX_ASSERT_ARG(odb && cb);
	for (i = 0; i < odb->n; i++)
		if (!odb->slots[i].b->foreach_object)
			return APTIX_PASSTHROUGH;
	for (i = 0; i < odb->n; i++) {
		aptix_odb_backend *b = odb->slots[i].b;

		if ((r = b->foreach_object(b, start, types, flags, cb,
					   payload)) != 0)
			return r;
	}
	return 0;
}

int aptix_odb_foreach_all(aptix_odb *odb, unsigned types, unsigned flags,
			  aptix_odb_foreach_numbered_cb id_cb,
			  aptix_odb_foreach_numbered_cb object_cb,
			  void *payload)
{
	aptix_odb_backend *b;

	APTIX_ASSERT_ARG(odb && id_cb);
	if (odb->n != 1 || !(b = odb->slots[0].b)->foreach_all)
		return APTIX_PASSTHROUGH;
	return b->foreach_all(b, types, flags, id_cb, object_cb, payload);
}
