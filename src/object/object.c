/*
 * src/object/object.c - object types, and the canonical encoding of turns and
 * sessions (objects-format.md). Fields are described by tables, so the
 * encoder, the decoder and the loose-JSON reader of write-turn and
 * commit-session agree by construction.
 */
#include "util/common.h"
#include "aptix/object.h"
#include "object/object.h"
#include "object/fields.h"
#include "aptix/toolcall.h"

/* The field codec is shared with toolcall.c (fields.h): short names here */
#define bad_field aptix__bad_field
#define put_fields aptix__fields_put
#define get_fields aptix__fields_get
#define check_unknown aptix__fields_check_unknown
#define parse_stored aptix__object_parse_stored
#define dump_object aptix__object_dump
#include "util/cjson.h"
#include "util/env.h"
#include <time.h>

static const char *const type_names[] = {
	NULL, "blob", "turn", "session", "tool-call", "tool-result"
};

const char *aptix_otype_name(aptix_otype t)
{
	if ((unsigned)t >= ARRAY_SIZE(type_names))
		return NULL;
	return type_names[t];
}

aptix_otype aptix_otype_from_name(const char *name)
{
	size_t i;

	for (i = 1; i < ARRAY_SIZE(type_names); i++)
		if (!strcmp(name, type_names[i]))
			return (aptix_otype)i;
	return APTIX_OBJ_BAD;
}

static const char *const turn_status_names[] = {
	"pending", "completed", "failed"
};
static const char *const session_status_names[] = {
	"created", "committed", "awaiting_tool_results", "failed", "archived"
};

const char *aptix_turn_status_name(aptix_turn_status s)
{
	return (unsigned)s < ARRAY_SIZE(turn_status_names) ?
		turn_status_names[s] : "unknown";
}

const char *aptix_session_status_name(aptix_session_status s)
{
	return (unsigned)s < ARRAY_SIZE(session_status_names) ?
		session_status_names[s] : "unknown";
}

static int name_index(const char *const *names, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], s))
			return (int)i;
	return -1;
}

int aptix_session_status_from_name(const char *s)
{
	return name_index(session_status_names,
			  ARRAY_SIZE(session_status_names), s);
}

int aptix_session_status_ok(aptix_session_status s)
{
	return s == APTIX_SESSION_COMMITTED ||
		s == APTIX_SESSION_AWAITING_TOOL_RESULTS;
}

char *aptix_time_fmt(char out[32], int64_t ms)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	if (ms < 0 || !gmtime_r(&secs, &tm)) {
		snprintf(out, 32, "invalid-time");
		return out;
	}
	if (!strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm))
		out[0] = '\0';
	snprintf(out + strlen(out), 32 - strlen(out), ".%03uZ",
		 (unsigned)(ms % 1000));
	return out;
}

int64_t aptix_now_ms(void)
{
	const char *fake = aptix_env__get(APTIX_ENV_TEST_DATE);
	struct timespec ts;

	if (fake)
		return (int64_t)strtoll(fake, NULL, 10) * 1000;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- Field tables ----------------------------------------------------- */

static const struct field usage_fields[] = {
	FLD(aptix_usage, "cached_tokens", F_LONG, cached_tokens, 1),
	FLD(aptix_usage, "input_tokens", F_LONG, input_tokens, 1),
	FLD(aptix_usage, "model_requests", F_LONG, model_requests, 1),
	FLD(aptix_usage, "output_tokens", F_LONG, output_tokens, 1),
	FLD(aptix_usage, "reasoning_tokens", F_LONG, reasoning_tokens, 1),
	FLD(aptix_usage, "total_tokens", F_LONG, total_tokens, 1),
	{ NULL, 0, 0, 0 }
};

static const struct field chunk_fields[] = {
	FLD(aptix_chunk_ref, "chunk_id", F_STR, chunk_id, 1),
	FLD(aptix_chunk_ref, "content_hash", F_STR, content_hash, 1),
	FLD(aptix_chunk_ref, "end_line", F_LONG, end_line, 1),
	FLD(aptix_chunk_ref, "path", F_STR, path, 1),
	FLD(aptix_chunk_ref, "score_micro", F_LONG, score, 1),
	FLD(aptix_chunk_ref, "sent", F_BOOL, sent, 1),
	FLD(aptix_chunk_ref, "snippet", F_OID, snippet, 0),
	FLD(aptix_chunk_ref, "start_line", F_LONG, start_line, 1),
	{ NULL, 0, 0, 0 }
};

static const struct field file_fields[] = {
	FLD(aptix_file_ref, "binary", F_BOOL, binary, 1),
	FLD(aptix_file_ref, "content", F_OID, content, 0),
	FLD(aptix_file_ref, "path", F_STR, path, 1),
	FLD(aptix_file_ref, "sent", F_BOOL, sent, 1),
	FLD(aptix_file_ref, "sha256", F_STR, sha256, 1),
	FLD(aptix_file_ref, "size", F_LONG, size, 1),
	FLD(aptix_file_ref, "too_large", F_BOOL, too_large, 1),
	FLD(aptix_file_ref, "touched", F_BOOL, touched, 1),
	{ NULL, 0, 0, 0 }
};

static const struct field worktree_fields[] = {
	FLD(aptix_worktree, "branch", F_STR, branch, 0),
	FLD(aptix_worktree, "commit", F_STR, commit, 0),
	FLD(aptix_worktree, "dirty", F_BOOL, dirty, 1),
	FLD(aptix_worktree, "remote", F_STR, remote, 0),
	{ NULL, 0, 0, 0 }
};

static const struct field turn_fields[] = {
	FLD(aptix_turn, "answer", F_OID, answer, 0),
	FLD(aptix_turn, "chain_expires_at", F_I64, chain_expires_at, 0),
	FLD(aptix_turn, "chain_restarted", F_BOOL, chain_restarted, 0),
	FLD(aptix_turn, "conversation", F_STR, conversation, 1),
	FLD(aptix_turn, "created_at", F_I64, created_at, 1),
	FLD(aptix_turn, "errors", F_STRLIST, errors, 0),
	FLD(aptix_turn, "instruction", F_OID, instruction, 1),
	FLD(aptix_turn, "mode", F_STR, mode, 0),
	FLD(aptix_turn, "model", F_STR, model, 0),
	FLD(aptix_turn, "previous_response_id", F_STR,
	    previous_response_id, 0),
	FLD(aptix_turn, "repo", F_STR, repo, 0),
	FLD(aptix_turn, "request", F_OID, request, 0),
	FLD(aptix_turn, "response", F_OID, response, 0),
	FLD(aptix_turn, "response_at", F_I64, response_at, 0),
	FLD(aptix_turn, "response_id", F_STR, response_id, 0),
	FLD(aptix_turn, "seq", F_LONG, seq, 1),
	FLD(aptix_turn, "status_at", F_I64, status_at, 1),
	FLD(aptix_turn, "tool_calls", F_OIDLIST, tool_calls, 0),
	FLD(aptix_turn, "tool_results", F_OIDLIST, tool_results, 0),
	FLD(aptix_turn, "warnings", F_STRLIST, warnings, 0),
	FLD(aptix_turn, "workspace", F_STR, workspace, 0),
	{ NULL, 0, 0, 0 }
};

static const struct field session_fields[] = {
	FLD(aptix_session, "conversation", F_STR, conversation, 1),
	FLD(aptix_session, "created_at", F_I64, created_at, 1),
	FLD(aptix_session, "parent", F_OID, parent, 0),
	FLD(aptix_session, "turn", F_OID, turn, 1),
	{ NULL, 0, 0, 0 }
};

static const struct field meta_fields[] = {
	FLD(aptix_session, "forked_from", F_STR, forked_from, 0),
	FLD(aptix_session, "session_type", F_STR, session_type, 1),
	FLD(aptix_session, "title", F_STR, title, 0),
	FLD(aptix_session, "transport", F_STR, transport, 0),
	FLD(aptix_session, "workspace", F_STR, workspace, 0),
	{ NULL, 0, 0, 0 }
};

/* Strings lists are stored as (char **items, size_t n) pairs. */
#define LIST_ITEMS(base, f) (*(char ***)((char *)(base) + (f)->off))
#define LIST_COUNT(base, f) \
	(*(size_t *)((char *)(base) + (f)->off + sizeof(char **)))
/* Id lists are (aptix_oid *items, size_t n) pairs. */
#define OIDS_ITEMS(base, f) (*(aptix_oid **)((char *)(base) + (f)->off))
#define OIDS_COUNT(base, f) \
	(*(size_t *)((char *)(base) + (f)->off + sizeof(aptix_oid *)))

/* An array of the ids' hex; NULL when the list is empty. */
static json_t *put_oidlist(const void *base, const struct field *f)
{
	const aptix_oid *items = OIDS_ITEMS(base, f);
	size_t i, n = OIDS_COUNT(base, f);
	char hex[APTIX_OID_HEXSZ + 1];
	json_t *v;

	if (!n || !(v = json_array()))
		return NULL;
	for (i = 0; i < n; i++)
		json_array_append_new(v, json_string(aptix_oid_tostr(hex,
						     &items[i])));
	return v;
}

int bad_field(const char *what, const char *key, const char *why)
{
	aptix_error_set(APTIX_ERROR_OBJECT, "%s: field '%s' %s", what, key,
			why);
	return APTIX_EINVALID;
}

int put_fields(json_t *obj, const struct field *f, const void *base,
		      const char *what)
{
	for (; f->key; f++) {
		const char *p = (const char *)base + f->off;
		json_t *v = NULL;

		switch (f->kind) {
		case F_STR: {
			const char *s = *(char *const *)p;

			if (s)
				v = json_string(s);
			else if (f->required)
				return bad_field(what, f->key, "is missing");
			if (s && !v)
				return bad_field(what, f->key,
						 "is not valid UTF-8");
			break;
		}
		case F_I64: {
			int64_t x = *(const int64_t *)p;

			if (x || f->required)
				v = json_integer((json_int_t)x);
			break;
		}
		case F_LONG:
			v = json_integer((json_int_t)*(const long *)p);
			break;
		case F_BOOL:
			if (*(const int *)p || f->required)
				v = json_boolean(*(const int *)p);
			break;
		case F_OID: {
			const aptix_oid *id = (const aptix_oid *)p;
			char hex[APTIX_OID_HEXSZ + 1];

			if (!aptix_oid_is_zero(id))
				v = json_string(aptix_oid_tostr(hex, id));
			else if (f->required)
				return bad_field(what, f->key, "is missing");
			break;
		}
		case F_STRLIST: {
			char **items = LIST_ITEMS(base, f);
			size_t i, n = LIST_COUNT(base, f);

			if (!n)
				break;
			v = json_array();
			for (i = 0; v && i < n; i++) {
				json_t *s = json_string(items[i]);

				if (!s) {
					json_decref(v);
					return bad_field(what, f->key,
						"is not valid UTF-8");
				}
				json_array_append_new(v, s);
			}
			break;
		}
		case F_OIDLIST:
			v = put_oidlist(base, f);
			break;
		}
		if (v && json_object_set_new(obj, f->key, v) < 0)
			return aptix_error_oom();
	}
	return 0;
}

static int is_lower_hex_id(const char *s)
{
	size_t i;

	if (strlen(s) != APTIX_OID_HEXSZ)
		return 0;
	for (i = 0; i < APTIX_OID_HEXSZ; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int get_oid(aptix_oid *out, json_t *v, const char *what,
		   const char *key)
{
	if (!json_is_string(v) || !is_lower_hex_id(json_string_value(v)))
		return bad_field(what, key, "must be a 64-digit "
					"lowercase hex object id");
	aptix_oid_fromstr(out, json_string_value(v));
	if (aptix_oid_is_zero(out))
		return bad_field(what, key, "must not be all zeros");
	return 0;
}

static int get_oidlist(void *base, const struct field *f, json_t *v,
		       const char *what)
{
	size_t i, n;
	aptix_oid *items;
	int r;

	if (!json_is_array(v) || !(n = json_array_size(v)))
		return bad_field(what, f->key, "must be a non-empty "
					"array of object ids");
	if (!(items = aptix__calloc(n, sizeof(*items))))
		return APTIX_ERROR;
	OIDS_ITEMS(base, f) = items;
	for (i = 0; i < n; i++) {
		if ((r = get_oid(&items[i], json_array_get(v, i), what,
				 f->key)) < 0)
			return r;
		OIDS_COUNT(base, f) = i + 1;
	}
	return 0;
}

static int known_key(const struct field *f, const char *key)
{
	for (; f->key; f++)
		if (!strcmp(f->key, key))
			return 1;
	return 0;
}

void aptix__fields_release(void *base, const struct field *f)
{
	for (; f->key; f++) {
		char **p = (char **)((char *)base + f->off);

		if (f->kind == F_STR) {
			free(*p);
			*p = NULL;
		} else if (f->kind == F_STRLIST) {
			aptix__strv_clear(&LIST_ITEMS(base, f),
					  &LIST_COUNT(base, f));
		} else if (f->kind == F_OIDLIST) {
			free(OIDS_ITEMS(base, f));
			OIDS_ITEMS(base, f) = NULL;
			OIDS_COUNT(base, f) = 0;
		}
	}
}

/*
 * Fill base from obj. strict: reject unknown keys (input from users);
 * otherwise unknown keys are ignored (objects from newer writers).
 */
int get_fields(void *base, const struct field *f, json_t *obj,
		      const char *what)
{
	int r;

	for (; f->key; f++) {
		char *p = (char *)base + f->off;
		json_t *v = json_object_get(obj, f->key);

		if (!v) {
			if (f->required)
				return bad_field(what, f->key, "is missing");
			continue;
		}
		switch (f->kind) {
		case F_STR:
			if (!json_is_string(v))
				return bad_field(what, f->key,
						 "must be a string");
			if (!(*(char **)p = aptix__strdup(json_string_value(v))))
				return APTIX_ERROR;
			break;
		case F_I64:
		case F_LONG:
			if (!json_is_integer(v))
				return bad_field(what, f->key,
						 "must be an integer");
			/* what canonical JSON can hold (cjson.c) */
			if (json_integer_value(v) > 9007199254740991LL ||
			    json_integer_value(v) < -9007199254740991LL)
				return bad_field(what, f->key,
						 "is out of range");
			if (f->kind == F_I64)
				*(int64_t *)p = json_integer_value(v);
			else
				*(long *)p = (long)json_integer_value(v);
			break;
		case F_BOOL:
			if (!json_is_boolean(v))
				return bad_field(what, f->key,
						 "must be true or false");
			*(int *)p = json_is_true(v);
			break;
		case F_OID:
			if ((r = get_oid((aptix_oid *)p, v, what, f->key)) < 0)
				return r;
			break;
		case F_OIDLIST:
			if ((r = get_oidlist(base, f, v, what)) < 0)
				return r;
			break;
		case F_STRLIST: {
			size_t i, n;
			char **items;

			if (!json_is_array(v))
				return bad_field(what, f->key,
						 "must be an array of strings");
			n = json_array_size(v);
			items = aptix__calloc(n ? n : 1, sizeof(char *));
			if (!items)
				return APTIX_ERROR;
			LIST_ITEMS(base, f) = items;
			for (i = 0; i < n; i++) {
				json_t *s = json_array_get(v, i);

				if (!json_is_string(s))
					return bad_field(what, f->key, "must "
						"be an array of strings");
				items[i] = aptix__strdup(json_string_value(s));
				if (!items[i])
					return APTIX_ERROR;
				LIST_COUNT(base, f) = i + 1;
			}
			break;
		}
		}
	}
	return 0;
}

int check_unknown(json_t *obj, const struct field *f,
			 const char *const *extra, const char *what)
{
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach(obj, key, v) {
		int ok = known_key(f, key);

		for (i = 0; !ok && extra[i]; i++)
			ok = !strcmp(extra[i], key);
		if (!ok)
			return bad_field(what, key, "is unknown");
	}
	return 0;
}

/*
 * The "v" field: missing only in user input (strict); a version above
 * ours is a newer writer's: refused, never guessed at.
 */
int aptix__object_check_version(json_t *o, const char *what, int strict,
				int max)
{
	json_t *v = json_object_get(o, "v");

	if (!v)
		return strict ? 0 : bad_field(what, "v", "is missing");
	if (!json_is_integer(v) || json_integer_value(v) < 1)
		return bad_field(what, "v", "must be 1 or more");
	if (json_integer_value(v) > max) {
		aptix_error_set(APTIX_ERROR_OBJECT, "%s has format version "
				"%lld; this aptix reads up to %d: upgrade "
				"aptix", what,
				(long long)json_integer_value(v), max);
		return APTIX_EVERSION;
	}
	return 0;
}

/* --- Turns ------------------------------------------------------------ */

void aptix_turn_init(aptix_turn *t)
{
	memset(t, 0, sizeof(*t));
	t->version = APTIX_OBJECT_VERSION_1;
}

/* The version a turn is written with: 2 when it links tool objects. */
static int turn_version(const aptix_turn *t)
{
	int v = t->version ? t->version : APTIX_OBJECT_VERSION_1;

	return (t->ntool_calls || t->ntool_results) && v < 2 ? 2 : v;
}

void aptix_turn_release(aptix_turn *t)
{
	size_t i;

	if (!t)
		return;
	aptix__fields_release(t, turn_fields);
	for (i = 0; i < t->nchunks; i++)
		aptix__fields_release(&t->chunks[i], chunk_fields);
	free(t->chunks);
	for (i = 0; i < t->nfiles; i++)
		aptix__fields_release(&t->files[i], file_fields);
	free(t->files);
	aptix__fields_release(&t->worktree, worktree_fields);
	aptix_turn_init(t);
}

/* A copy of s, or NULL when s is NULL; *bad set when out of memory. */
static char *dup_opt(const char *s, int *bad)
{
	char *d;

	if (!s)
		return NULL;
	if (!(d = aptix__strdup(s)))
		*bad = 1;
	return d;
}

aptix_oid *aptix__oids_dup(const aptix_oid *v, size_t n, int *bad)
{
	aptix_oid *d;

	if (!n)
		return NULL;
	if (!(d = aptix__calloc(n, sizeof(*d)))) {
		*bad = 1;
		return NULL;
	}
	memcpy(d, v, n * sizeof(*d));
	return d;
}

int aptix__turn_copy(aptix_turn *dst, const aptix_turn *src)
{
	size_t i;
	int bad = 0;

	*dst = *src;
	dst->conversation = dup_opt(src->conversation, &bad);
	dst->mode = dup_opt(src->mode, &bad);
	dst->model = dup_opt(src->model, &bad);
	dst->workspace = dup_opt(src->workspace, &bad);
	dst->repo = dup_opt(src->repo, &bad);
	dst->response_id = dup_opt(src->response_id, &bad);
	dst->previous_response_id = dup_opt(src->previous_response_id, &bad);
	dst->worktree.commit = dup_opt(src->worktree.commit, &bad);
	dst->worktree.branch = dup_opt(src->worktree.branch, &bad);
	dst->worktree.remote = dup_opt(src->worktree.remote, &bad);
	dst->warnings = dst->errors = NULL;
	dst->nwarnings = dst->nerrors = 0;
	dst->files = NULL;
	dst->chunks = NULL;
	dst->nfiles = dst->nchunks = 0;
	dst->tool_calls = aptix__oids_dup(src->tool_calls, src->ntool_calls,
					  &bad);
	dst->tool_results = aptix__oids_dup(src->tool_results,
					    src->ntool_results, &bad);
	if (aptix__strv_copy(&dst->warnings, &dst->nwarnings, src->warnings,
			     src->nwarnings) < 0 ||
	    aptix__strv_copy(&dst->errors, &dst->nerrors, src->errors,
			     src->nerrors) < 0 ||
	    (src->nfiles && !(dst->files = aptix__calloc(src->nfiles,
							 sizeof(*dst->files)))) ||
	    (src->nchunks && !(dst->chunks = aptix__calloc(src->nchunks,
							   sizeof(*dst->chunks)))))
		bad = 1;
	for (i = 0; !bad && i < src->nfiles; i++, dst->nfiles++) {
		dst->files[i] = src->files[i];
		dst->files[i].path = dup_opt(src->files[i].path, &bad);
		dst->files[i].sha256 = dup_opt(src->files[i].sha256, &bad);
	}
	for (i = 0; !bad && i < src->nchunks; i++, dst->nchunks++) {
		const aptix_chunk_ref *c = &src->chunks[i];

		dst->chunks[i] = *c;
		dst->chunks[i].chunk_id = dup_opt(c->chunk_id, &bad);
		dst->chunks[i].path = dup_opt(c->path, &bad);
		dst->chunks[i].content_hash = dup_opt(c->content_hash, &bad);
	}
	if (!bad)
		return 0;
	aptix_turn_release(dst);
	return aptix_error_oom();
}

static json_t *turn_to_json(const aptix_turn *t)
{
	json_t *o = json_object(), *a, *e;
	size_t i;
	const char *what = "turn";

	if (!o)
		return NULL;
	if (put_fields(o, turn_fields, t, what) < 0)
		goto fail;
	json_object_set_new(o, "v", json_integer(turn_version(t)));
	json_object_set_new(o, "status", json_string(
			    aptix_turn_status_name(t->status)));
	e = json_object();
	if (!e || json_object_set_new(o, "usage", e) < 0 ||
	    put_fields(e, usage_fields, &t->usage, what) < 0)
		goto fail;
	if (t->nchunks) {
		a = json_array();
		json_object_set_new(o, "chunks", a);
		for (i = 0; i < t->nchunks; i++) {
			e = json_object();
			json_array_append_new(a, e);
			if (put_fields(e, chunk_fields, &t->chunks[i],
				       "chunk") < 0)
				goto fail;
		}
	}
	if (t->nfiles) {
		a = json_array();
		json_object_set_new(o, "files", a);
		for (i = 0; i < t->nfiles; i++) {
			e = json_object();
			json_array_append_new(a, e);
			if (put_fields(e, file_fields, &t->files[i],
				       "file") < 0)
				goto fail;
		}
	}
	if (t->has_worktree) {
		e = json_object();
		if (!e || json_object_set_new(o, "worktree", e) < 0 ||
		    put_fields(e, worktree_fields, &t->worktree,
			       "worktree") < 0)
			goto fail;
	}
	return o;
fail:
	json_decref(o);
	return NULL;
}

/* A git object id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits. */
static int is_git_commit(const char *s)
{
	size_t i, n = strlen(s);

	if (n != 40 && n != 64)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int validate_worktree(const aptix_worktree *w)
{
	if (w->commit && !is_git_commit(w->commit))
		return bad_field("worktree", "commit", "must be 40 or 64 "
				 "lowercase hex digits");
	if (w->branch && !*w->branch)
		return bad_field("worktree", "branch", "is empty");
	if (w->remote && !*w->remote)
		return bad_field("worktree", "remote", "is empty");
	return 0;
}

static int validate_turn(const aptix_turn *t)
{
	size_t i;

	if (t->seq < 1)
		return bad_field("turn", "seq", "must be 1 or more");
	if (!*t->conversation)
		return bad_field("turn", "conversation", "is empty");
	for (i = 0; i < t->nchunks; i++)
		if (t->chunks[i].start_line < 1 ||
		    t->chunks[i].end_line < t->chunks[i].start_line)
			return bad_field("chunk", "start_line",
					 "gives an empty line range");
	for (i = 0; i < t->nfiles; i++)
		if (t->files[i].size < 0)
			return bad_field("file", "size", "is negative");
	if (t->has_worktree)
		return validate_worktree(&t->worktree);
	return 0;
}

int dump_object(aptix_buf *out, json_t *o)
{
	size_t start = out->len;
	int r;

	if (!o)
		return aptix_error_last()->klass ? APTIX_EINVALID :
			aptix_error_oom();
	r = aptix_cjson_dump(out, o);
	if (!r)
		r = aptix_buf_putc(out, '\n');
	if (r < 0)
		aptix_buf_truncate(out, start);	/* no partial object */
	json_decref(o);
	return r;
}

int aptix_turn_serialize(aptix_buf *out, const aptix_turn *t)
{
	int r;

	aptix_error_clear();
	if (!t->conversation)
		return bad_field("turn", "conversation", "is missing");
	if ((r = validate_turn(t)) < 0)
		return r;
	return dump_object(out, turn_to_json(t));
}

static int turn_from_obj(void *out, json_t *o, int strict)
{
	aptix_turn *t = out;
	static const char *const extra[] = {
		"v", "status", "usage", "chunks", "files", "worktree", NULL
	};
	json_t *v;
	size_t i;
	int r, s;

	aptix_turn_init(t);
	if ((r = aptix__object_check_version(o, "turn", strict,
					       APTIX_OBJECT_VERSION)) < 0)
		return r;
	if (strict && (r = check_unknown(o, turn_fields, extra,
							"turn")) < 0)
		return r;
	/* loose input: status_at defaults to created_at */
	if (strict && !json_object_get(o, "status_at") &&
	    (v = json_object_get(o, "created_at")) &&
	    json_object_set(o, "status_at", v) < 0)
		return aptix_error_oom();
	if ((r = get_fields(t, turn_fields, o, "turn")) < 0)
		return r;
	v = json_object_get(o, "status");
	if (!v || !json_is_string(v))
		return bad_field("turn", "status", v ? "must be a string" :
				 "is missing");
	s = name_index(turn_status_names, ARRAY_SIZE(turn_status_names),
		       json_string_value(v));
	if (s < 0)
		return bad_field("turn", "status", "must be pending, "
				 "completed or failed");
	t->status = (aptix_turn_status)s;
	v = json_object_get(o, "usage");
	if (v) {
		if (!json_is_object(v))
			return bad_field("turn", "usage", "must be an object");
		if (strict && (r = check_unknown(v, usage_fields,
			       extra + 6, "usage")) < 0)
			return r;
		if ((r = get_fields(&t->usage, usage_fields, v, "usage")) < 0)
			return r;
	} else if (!strict) {
		return bad_field("turn", "usage", "is missing");
	}
	v = json_object_get(o, "chunks");
	if (v) {
		if (!json_is_array(v))
			return bad_field("turn", "chunks", "must be an array");
		t->chunks = aptix__calloc(json_array_size(v) + 1,
					  sizeof(*t->chunks));
		if (!t->chunks)
			return APTIX_ERROR;
		for (i = 0; i < json_array_size(v); i++) {
			json_t *e = json_array_get(v, i);

			if (!json_is_object(e))
				return bad_field("turn", "chunks",
						 "must hold objects");
			t->nchunks = i + 1;
			if (strict && (r = check_unknown(e, chunk_fields,
				       extra + 6, "chunk")) < 0)
				return r;
			if ((r = get_fields(&t->chunks[i], chunk_fields, e,
					    "chunk")) < 0)
				return r;
		}
	}
	v = json_object_get(o, "files");
	if (v) {
		if (!json_is_array(v))
			return bad_field("turn", "files", "must be an array");
		t->files = aptix__calloc(json_array_size(v) + 1,
					 sizeof(*t->files));
		if (!t->files)
			return APTIX_ERROR;
		for (i = 0; i < json_array_size(v); i++) {
			json_t *e = json_array_get(v, i);

			if (!json_is_object(e))
				return bad_field("turn", "files",
						 "must hold objects");
			t->nfiles = i + 1;
			if (strict && (r = check_unknown(e, file_fields,
				       extra + 6, "file")) < 0)
				return r;
			if ((r = get_fields(&t->files[i], file_fields, e,
					    "file")) < 0)
				return r;
			t->files[i].has_content =
				!aptix_oid_is_zero(&t->files[i].content);
		}
	}
	if ((v = json_object_get(o, "worktree"))) {
		if (!json_is_object(v))
			return bad_field("turn", "worktree",
					 "must be an object");
		if (strict && (r = check_unknown(v, worktree_fields,
			       extra + 6, "worktree")) < 0)
			return r;
		if ((r = get_fields(&t->worktree, worktree_fields, v,
				    "worktree")) < 0)
			return r;
		t->has_worktree = 1;
	}
	if (strict && !t->status_at)
		t->status_at = t->created_at;
	if ((v = json_object_get(o, "v")))
		t->version = (int)json_integer_value(v);
	/* a version 1 reader would drop them: they come with version 2 */
	if ((t->ntool_calls || t->ntool_results) && t->version < 2 &&
	    json_object_get(o, "v"))
		return bad_field("turn", t->ntool_calls ? "tool_calls" :
					"tool_results", "needs version 2");
	/* one content, one id: version 2 only where version 1 cannot do */
	if (!t->ntool_calls && !t->ntool_results && t->version == 2)
		return bad_field("turn", "v", "is 2 without tool calls or "
				 "results (such a turn is version 1)");
	return validate_turn(t);
}

/*
 * Parse stored bytes: they must be exactly the canonical encoding of
 * the JSON value they hold, followed by one newline. A trusted read
 * (bytes from the store, checked when they were written: odb.c and
 * txn.c validate every object given as bytes, and the serializers below
 * refuse what this parser would: a missing required field, text that is
 * not UTF-8, an integer canonical JSON cannot hold, validate_turn() and
 * validate_session()) skips the canonical re-encoding, which costs as
 * much as the parse; fsck still checks it.
 */
json_t *parse_stored(const void *data, size_t len,
				   const char *what, int trusted)
{
	aptix_buf again = APTIX_BUF_INIT;
	json_t *o;

	if (!len || ((const char *)data)[len - 1] != '\n' ||
	    memchr(data, '\0', len)) {
		aptix_error_set(APTIX_ERROR_OBJECT, "%s is not canonical: "
				"it must be one line of JSON", what);
		return NULL;
	}
	o = aptix_json_parse(data, len - 1, what);
	if (!o)
		return NULL;
	if (!json_is_object(o)) {
		aptix_error_set(APTIX_ERROR_OBJECT, "%s is not a JSON object",
				what);
		json_decref(o);
		return NULL;
	}
	if (!trusted && (aptix_cjson_dump(&again, o) < 0 ||
			 again.len != len - 1 ||
			 memcmp(again.ptr, data, len - 1))) {
		aptix_error_set(APTIX_ERROR_OBJECT, "%s is not in canonical "
				"form", what);
		json_decref(o);
		o = NULL;
	}
	aptix_buf_release(&again);
	return o;
}

int aptix__object_decode(void *out, const struct aptix__object_kind *k,
			 const char *data, size_t len, int strict,
			 int trusted)
{
	json_t *o;
	int r;

	if (!strict) {
		o = parse_stored(data, len, k->what, trusted);
	} else if ((o = aptix_json_parse(data, len, k->what)) &&
		   !json_is_object(o)) {
		json_decref(o);
		o = NULL;
		aptix_error_set(APTIX_ERROR_OBJECT, "%s: input must be a JSON "
				"object", k->what);
	}
	if (!o)
		return strict ? APTIX_EINVALID : APTIX_ECORRUPT;
	r = k->from_obj(out, o, strict);
	json_decref(o);
	if (r < 0)
		k->release(out);
	if (r < 0 && !strict && r != APTIX_EVERSION && r != APTIX_ERROR)
		r = APTIX_ECORRUPT;
	return r;
}

static void turn_release(void *out)
{
	aptix_turn_release(out);
}

static const struct aptix__object_kind turn_kind = {
	"turn", turn_from_obj, turn_release
};

int aptix_turn_parse(aptix_turn *out, const void *data, size_t len)
{
	aptix_turn_init(out);
	return aptix__object_decode(out, &turn_kind, data, len, 0, 0);
}

int aptix__turn_parse_trusted(aptix_turn *out, const void *data, size_t len)
{
	aptix_turn_init(out);
	return aptix__object_decode(out, &turn_kind, data, len, 0, 1);
}

int aptix_turn_from_json(aptix_turn *out, const char *json, size_t len)
{
	aptix_turn_init(out);
	return aptix__object_decode(out, &turn_kind, json, len, 1, 0);
}

/* --- Sessions --------------------------------------------------------- */

void aptix_session_init(aptix_session *s)
{
	memset(s, 0, sizeof(*s));
	s->version = APTIX_OBJECT_VERSION_1;
}

void aptix_session_release(aptix_session *s)
{
	if (!s)
		return;
	aptix__fields_release(s, session_fields);
	aptix__fields_release(s, meta_fields);
	aptix_session_init(s);
}

static const struct field session_usage_fields[] = {
	FLD(aptix_usage, "completion_tokens", F_LONG, output_tokens, 1),
	FLD(aptix_usage, "model_requests", F_LONG, model_requests, 1),
	FLD(aptix_usage, "prompt_tokens", F_LONG, input_tokens, 1),
	FLD(aptix_usage, "total_tokens", F_LONG, total_tokens, 1),
	{ NULL, 0, 0, 0 }
};

static json_t *session_to_json(const aptix_session *s)
{
	json_t *o = json_object(), *rs, *u, *m;

	if (!o)
		return NULL;
	if (put_fields(o, session_fields, s, "session") < 0)
		goto fail;
	json_object_set_new(o, "v", json_integer(s->version ?
			    s->version : APTIX_OBJECT_VERSION_1));
	json_object_set_new(o, "status", json_string(
			    aptix_session_status_name(s->status)));
	rs = json_object();
	u = json_object();
	m = json_object();
	json_object_set_new(o, "run_summary", rs);
	json_object_set_new(o, "metadata", m);
	if (!rs || !u || !m)
		goto fail;
	json_object_set_new(rs, "duration_ms",
			    json_integer((json_int_t)s->duration_ms));
	json_object_set_new(rs, "usage", u);
	if (put_fields(u, session_usage_fields, &s->usage, "session") < 0 ||
	    put_fields(m, meta_fields, s, "session") < 0)
		goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}

static int validate_session(const aptix_session *s)
{
	if (!*s->conversation)
		return bad_field("session", "conversation", "is empty");
	if (s->duration_ms < 0)
		return bad_field("session", "duration_ms", "is negative");
	return 0;
}

int aptix_session_serialize(aptix_buf *out, const aptix_session *s)
{
	int r;

	aptix_error_clear();
	if (!s->conversation)
		return bad_field("session", "conversation", "is missing");
	if (!s->session_type)
		return bad_field("session", "session_type", "is missing");
	if ((r = validate_session(s)) < 0)
		return r;
	return dump_object(out, session_to_json(s));
}

static int session_from_obj(void *out, json_t *o, int strict)
{
	aptix_session *s = out;
	static const char *const extra[] = {
		"v", "status", "run_summary", "metadata", NULL
	};
	static const char *const rs_keys[] = { "duration_ms", "usage", NULL };
	static const char *const none[] = { NULL };
	json_t *v, *rs, *m;
	int r, st;

	aptix_session_init(s);
	if ((r = aptix__object_check_version(o, "session", strict,
					       APTIX_OBJECT_VERSION_1)) < 0)
		return r;
	if (strict && (r = check_unknown(o, session_fields, extra,
					 "session")) < 0)
		return r;
	if ((r = get_fields(s, session_fields, o, "session")) < 0)
		return r;
	s->has_parent = !aptix_oid_is_zero(&s->parent);
	v = json_object_get(o, "status");
	if (!v || !json_is_string(v))
		return bad_field("session", "status", v ?
				 "must be a string" : "is missing");
	st = aptix_session_status_from_name(json_string_value(v));
	if (st < 0)
		return bad_field("session", "status", "is not a known status");
	s->status = (aptix_session_status)st;
	rs = json_object_get(o, "run_summary");
	if (rs) {
		if (!json_is_object(rs))
			return bad_field("session", "run_summary",
					 "must be an object");
		if (strict && (r = check_unknown(rs, session_usage_fields + 4,
			       rs_keys, "run_summary")) < 0)
			return r;
		v = json_object_get(rs, "duration_ms");
		if (v && !json_is_integer(v))
			return bad_field("run_summary", "duration_ms",
					 "must be an integer");
		s->duration_ms = v ? json_integer_value(v) : 0;
		v = json_object_get(rs, "usage");
		if (v && !json_is_object(v))
			return bad_field("run_summary", "usage",
					 "must be an object");
		if (v && strict && (r = check_unknown(v, session_usage_fields,
				    none, "usage")) < 0)
			return r;
		if (v && (r = get_fields(&s->usage, session_usage_fields, v,
					 "usage")) < 0)
			return r;
		if (!v && !strict)
			return bad_field("run_summary", "usage", "is missing");
	} else if (!strict) {
		return bad_field("session", "run_summary", "is missing");
	}
	m = json_object_get(o, "metadata");
	if (m && !json_is_object(m))
		return bad_field("session", "metadata", "must be an object");
	if (m && strict && (r = check_unknown(m, meta_fields, none,
					      "metadata")) < 0)
		return r;
	if (m && (r = get_fields(s, meta_fields, m, "metadata")) < 0)
		return r;
	if (!m && !strict)
		return bad_field("session", "metadata", "is missing");
	if (!s->session_type && !(s->session_type = aptix__strdup("agent")))
		return APTIX_ERROR;
	return validate_session(s);
}

static void session_release(void *out)
{
	aptix_session_release(out);
}

static const struct aptix__object_kind session_kind = {
	"session", session_from_obj, session_release
};

int aptix_session_parse(aptix_session *out, const void *data, size_t len)
{
	aptix_session_init(out);
	return aptix__object_decode(out, &session_kind, data, len, 0, 0);
}

int aptix__session_parse_trusted(aptix_session *out, const void *data,
				 size_t len)
{
	aptix_session_init(out);
	return aptix__object_decode(out, &session_kind, data, len, 0, 1);
}

int aptix_session_from_json(aptix_session *out, const char *json, size_t len)
{
	aptix_session_init(out);
	return aptix__object_decode(out, &session_kind, json, len, 1, 0);
}

/* --- References between objects --------------------------------------- */

static int result_refs(const void *data, size_t len, aptix_ref_cb cb,
		       void *payload)
{
	aptix_tool_result t;
	const struct { const aptix_oid *id; const char *name;
		       aptix_otype type; } ids[] = {
		{ &t.call, "call", APTIX_OBJ_TOOL_CALL },
		{ &t.out, "stdout", APTIX_OBJ_BLOB },
		{ &t.err, "stderr", APTIX_OBJ_BLOB },
		{ &t.output, "output", APTIX_OBJ_BLOB },
	};
	size_t i;
	int r;

	if ((r = aptix_tool_result_parse(&t, data, len)) < 0)
		return r;
	for (i = 0; !r && i < ARRAY_SIZE(ids); i++)
		if (!aptix_oid_is_zero(ids[i].id))
			r = cb(ids[i].id, ids[i].type, ids[i].name, payload);
	aptix_tool_result_release(&t);
	return r;
}

int aptix_object_foreach_ref(aptix_otype type, const void *data, size_t len,
			     aptix_ref_cb cb, void *payload)
{
	int r = 0;
	size_t i;

	if (type == APTIX_OBJ_SESSION) {
		aptix_session s;

		if ((r = aptix_session_parse(&s, data, len)) < 0)
			return r;
		if (s.has_parent)
			r = cb(&s.parent, APTIX_OBJ_SESSION, "parent", payload);
		if (!r)
			r = cb(&s.turn, APTIX_OBJ_TURN, "turn", payload);
		aptix_session_release(&s);
	} else if (type == APTIX_OBJ_TURN) {
		aptix_turn t;
		const struct { const aptix_oid *id; const char *name; } ids[] = {
			{ &t.instruction, "instruction" },
			{ &t.answer, "answer" },
			{ &t.request, "request" },
			{ &t.response, "response" },
		};

		if ((r = aptix_turn_parse(&t, data, len)) < 0)
			return r;
		for (i = 0; !r && i < ARRAY_SIZE(ids); i++)
			if (!aptix_oid_is_zero(ids[i].id))
				r = cb(ids[i].id, APTIX_OBJ_BLOB, ids[i].name,
				       payload);
		for (i = 0; !r && i < t.nchunks; i++)
			if (!aptix_oid_is_zero(&t.chunks[i].snippet))
				r = cb(&t.chunks[i].snippet, APTIX_OBJ_BLOB,
				       "chunk snippet", payload);
		for (i = 0; !r && i < t.nfiles; i++)
			if (t.files[i].has_content)
				r = cb(&t.files[i].content, APTIX_OBJ_BLOB,
				       "file content", payload);
		for (i = 0; !r && i < t.ntool_calls; i++)
			r = cb(&t.tool_calls[i], APTIX_OBJ_TOOL_CALL,
			       "tool call", payload);
		for (i = 0; !r && i < t.ntool_results; i++)
			r = cb(&t.tool_results[i], APTIX_OBJ_TOOL_RESULT,
			       "tool result", payload);
		aptix_turn_release(&t);
	} else if (type == APTIX_OBJ_TOOL_RESULT) {
		r = result_refs(data, len, cb, payload);
	}
	return r;
}

int aptix_object_validate(aptix_otype type, const void *data, size_t len)
{
	aptix_turn t;
	aptix_session s;
	int r;

	switch (type) {
	case APTIX_OBJ_BLOB:
		return 0;
	case APTIX_OBJ_TURN:
		r = aptix_turn_parse(&t, data, len);
		aptix_turn_release(&t);
		return r;
	case APTIX_OBJ_SESSION:
		r = aptix_session_parse(&s, data, len);
		aptix_session_release(&s);
		return r;
	case APTIX_OBJ_TOOL_CALL: {
		aptix_tool_call c;

		r = aptix_tool_call_parse(&c, data, len);
		aptix_tool_call_release(&c);
		return r;
	}
	case APTIX_OBJ_TOOL_RESULT: {
		aptix_tool_result tr;

		r = aptix_tool_result_parse(&tr, data, len);
		aptix_tool_result_release(&tr);
		return r;
	}
	default:
		aptix_error_set(APTIX_ERROR_OBJECT, "invalid object type");
		return APTIX_EINVALID;
	}
}
