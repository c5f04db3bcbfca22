/*
 * src/object/fields.h - the field tables that drive the canonical JSON
 * codec of objects (object.c for turns and sessions, toolcall.c for tool
 * calls and results): one table per object kind, so the encoder, the
 * decoder and the loose-JSON reader of the plumbing agree by
 * construction.
 */
#ifndef APTIX_SRC_OBJECT_FIELDS_H
#define APTIX_SRC_OBJECT_FIELDS_H

#include "aptix/buf.h"
#include <jansson.h>
#include <stddef.h>

/*
 * F_STRLIST is a (char **items, size_t n) pair at off; F_OIDLIST an
 * (aptix_oid *items, size_t n) pair; both left out when empty.
 */
enum fkind { F_STR, F_I64, F_LONG, F_OID, F_BOOL, F_STRLIST, F_OIDLIST };

struct field {
	const char *key;
	enum fkind kind;
	size_t off;
	int required;	/* 1: always written and must be present */
};

#define FLD(type, key, kind, member, req) \
	{ key, kind, offsetof(type, member), req }

/* "<what>: field '<key>' <why>", APTIX_EINVALID. */
int aptix__bad_field(const char *what, const char *key, const char *why);
/* Put the fields of base into obj (absent optional ones left out). */
int aptix__fields_put(json_t *obj, const struct field *f, const void *base,
		      const char *what);
/* Fill base from obj; unknown keys are not looked at. */
int aptix__fields_get(void *base, const struct field *f, json_t *obj,
		      const char *what);
/*
 * Free what the members of base described by f hold (F_STR, F_STRLIST,
 * F_OIDLIST), leaving them NULL and empty; other kinds are left.
 */
void aptix__fields_release(void *base, const struct field *f);
/* APTIX_EINVALID naming the first key of obj in neither f nor extra. */
int aptix__fields_check_unknown(json_t *obj, const struct field *f,
				const char *const *extra, const char *what);
/*
 * The "v" field: missing only in user input (strict); above max is a
 * newer writer's (APTIX_EVERSION, "upgrade aptix").
 */
int aptix__object_check_version(json_t *o, const char *what, int strict,
				int max);
/* The JSON object of stored canonical bytes (trusted: not re-encoded). */
json_t *aptix__object_parse_stored(const void *data, size_t len,
				   const char *what, int trusted);
/* Append the canonical bytes of o and a line feed; o is released. */
int aptix__object_dump(aptix_buf *out, json_t *o);

/* How to decode one kind of object into its struct. */
struct aptix__object_kind {
	const char *what;
	int (*from_obj)(void *out, json_t *o, int strict);
	void (*release)(void *out);
};

/*
 * Decode stored canonical bytes (strict 0; trusted: not re-encoded,
 * see aptix__object_parse_stored) or loose user input (strict 1) into
 * out, initialised by the caller and released on failure. A failure
 * of stored bytes is APTIX_ECORRUPT unless they are newer
 * (APTIX_EVERSION) or memory ran out (APTIX_ERROR); of user input,
 * APTIX_EINVALID or what from_obj says.
 */
int aptix__object_decode(void *out, const struct aptix__object_kind *k,
			 const char *data, size_t len, int strict,
			 int trusted);

#endif
