/*
 * plumbing/loose-json.c - see loose-json.h.
 */
#include <stdlib.h>
#include <string.h>
#include "loose-json.h"
#include "cli.h"

void loose_set(json_t *o, const char *key, json_t *v, const char *opt)
{
	if (!v)
		die("the value of --%s is not valid UTF-8", opt);
	if (json_object_set_new(o, key, v) < 0)
		die("out of memory");
}

void loose_str(json_t *o, const char *key, const char *s, const char *opt)
{
	if (s)
		loose_set(o, key, json_string(s), opt);
}

void loose_oid(json_t *o, const char *key, const aptix_oid *id)
{
	char hex[APTIX_OID_HEXSZ + 1];

	loose_set(o, key, json_string(aptix_oid_tostr(hex, id)), key);
}

json_t *loose_load(const aptix_buf *in, aptix_otype type)
{
	json_error_t err;
	json_t *o;
	aptix_session s;
	aptix_turn t;

	if (!memchr(in->ptr, '\0', in->len)) {
		o = json_loadb(in->ptr, in->len, JSON_REJECT_DUPLICATES, &err);
		if (o && json_is_object(o))
			return o;
		json_decref(o);
	}
	if (type == APTIX_OBJ_SESSION) {
		if (aptix_session_from_json(&s, in->ptr, in->len) < 0)
			die_aptix();
		aptix_session_release(&s);
	} else {
		if (aptix_turn_from_json(&t, in->ptr, in->len) < 0)
			die_aptix();
		aptix_turn_release(&t);
	}
	die("%s: input is not a JSON object", aptix_otype_name(type));
}

void loose_canon(aptix_buf *canon, json_t *o, aptix_otype type)
{
	char *json = json_dumps(o, JSON_COMPACT);
	aptix_session s;
	aptix_turn t;
	int r;

	if (!json)
		die("cannot encode the %s", aptix_otype_name(type));
	json_decref(o);
	if (type == APTIX_OBJ_SESSION) {
		if (aptix_session_from_json(&s, json, strlen(json)) < 0)
			die_aptix();
		r = aptix_session_serialize(canon, &s);
		aptix_session_release(&s);
	} else {
		if (aptix_turn_from_json(&t, json, strlen(json)) < 0)
			die_aptix();
		r = aptix_turn_serialize(canon, &t);
		aptix_turn_release(&t);
	}
	free(json);
	if (r < 0)
		die_aptix();
}
