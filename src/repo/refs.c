/*
 * src/repo/refs.c - refs and the reflog, kept by the backend's ref
 * domain (aptix/sys/refdb_backend.h). A value is 64 hex digits, or
 * "ref: <name>" for a symbolic ref. What an update means (the checks of
 * names and values, the reflog entries it makes, HEAD's among them) is
 * decided here; the backend does the compare-and-swap.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "aptix/refs.h"
#include "aptix/sys/refdb_backend.h"

#define MAX_SYMREF_DEPTH 5

static int bad_name(const char *name, const char *why)
{
	aptix_error_set(APTIX_ERROR_REFERENCE, "invalid ref name '%.*s': %s",
			(int)strnlen(name, 80), name, why);
	return APTIX_EINVALID;
}

/*
 * Length of the valid UTF-8 sequence at s that is not a C1 control
 * (U+0080..U+009F, which terminals take as controls); 0 when invalid.
 */
static size_t utf8_ok(const unsigned char *s, size_t avail)
{
	if (s[0] == 0xc2 && avail > 1 && s[1] <= 0x9f)
		return 0;
	return aptix_utf8_seqlen(s, avail);
}

int aptix_ref_check_name(const char *name)
{
	const char *p, *comp;
	size_t len = strnlen(name, APTIX_REF_MAXLEN + 1);

	if (!len)
		return bad_name(name, "it is empty");
	if (len > APTIX_REF_MAXLEN)
		return bad_name(name, "it is too long");
	if (!strcmp(name, "HEAD"))
		return 0;
	if (strncmp(name, "refs/", 5))
		return bad_name(name, "it must be HEAD or start with 'refs/'");
	for (p = name; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c < 0x20 || c == 0x7f)
			return bad_name(name, "it has a control character");
		if (c >= 0x80) {
			size_t n = utf8_ok((const unsigned char *)p,
					   len - (size_t)(p - name));

			if (!n)
				return bad_name(name, "it is not valid UTF-8 "
						"or has a control character");
			p += n - 1;
			continue;
		}
		if (strchr(" ~^:?*[\\", c))
			return bad_name(name, "it has a forbidden character");
		if (c == '.' && p[1] == '.')
			return bad_name(name, "it has '..'");
		if (c == '@' && p[1] == '{')
			return bad_name(name, "it has '@{'");
	}
	if (name[len - 1] == '/' || name[len - 1] == '.')
		return bad_name(name, "it ends with '/' or '.'");
	for (comp = name; comp;) {
		const char *end = strchr(comp, '/');
		size_t clen = end ? (size_t)(end - comp) : strlen(comp);

		if (!clen)
			return bad_name(name, "it has an empty component");
		if (*comp == '.' || *comp == '-')
			return bad_name(name, "a component starts with '.' or "
					"'-'");
		if (clen >= 5 && !strncmp(comp + clen - 5, ".lock", 5))
			return bad_name(name, "a component ends with '.lock'");
		comp = end ? end + 1 : NULL;
	}
	return 0;
}

/* aptix_conv_check_id() without the error message */
static int conv_id_ok(const char *id)
{
	size_t i, n = strnlen(id, APTIX_CONV_MAXLEN + 1);

	if (!n || n > APTIX_CONV_MAXLEN || id[0] == '.' || id[0] == '-')
		return 0;
	for (i = 0; i < n; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return 0;
	}
	/* refs/conversations/<id> must be a valid ref name */
	if (strstr(id, "..") || id[n - 1] == '.' ||
	    (n >= 5 && !strcmp(id + n - 5, ".lock")))
		return 0;
	return 1;
}

const char *aptix_refs__conversation(const char *name)
{
	size_t n = strlen(APTIX_CONV_PREFIX);

	/*
	 * Only refs/conversations/<id> heads a conversation: another name
	 * there (refs/conversations/a/b, or one longer than an id, which
	 * the index would truncate onto another conversation) is a plain
	 * ref.
	 */
	if (strncmp(name, APTIX_CONV_PREFIX, n) || !conv_id_ok(name + n))
		return NULL;
	return name + n;
}

const char *aptix_ref_shorten(const char *name)
{
	const char *conv = aptix_refs__conversation(name);

	return conv ? conv : name;
}

int aptix_conv_check_new_id(const char *id)
{
	size_t len = strlen(id);
	int r;

	if ((r = aptix_conv_check_id(id)) < 0)
		return r;
	if (!strcmp(id, "HEAD") || (len >= APTIX_OID_MINPREFIX &&
				    aptix_is_hex(id, len))) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "'%s' cannot name a new "
				"conversation: it reads as %s", id,
				strcmp(id, "HEAD") ? "a session id" : "HEAD");
		return APTIX_EINVALID;
	}
	return 0;
}

int aptix_conv_check_id(const char *id)
{
	if (conv_id_ok(id))
		return 0;
	aptix_error_set(APTIX_ERROR_REFERENCE, "invalid conversation id "
			"'%.*s': use 1 to %d letters, digits, '.', '_' or '-'",
			(int)strnlen(id, 80), id, APTIX_CONV_MAXLEN);
	return APTIX_EINVALID;
}

void aptix_ref_release(aptix_ref *ref)
{
	if (!ref)
		return;
	free(ref->name);
	free(ref->target);
	memset(ref, 0, sizeof(*ref));
}

static int parse_value(aptix_ref *out, const char *name, const char *val,
		       size_t vlen)
{
	memset(out, 0, sizeof(*out));
	if (!(out->name = aptix__strdup(name)))
		return APTIX_ERROR;
	if (vlen > 5 && !memcmp(val, "ref: ", 5)) {
		out->target = aptix__strndup(val + 5, vlen - 5);
		return out->target ? 0 : APTIX_ERROR;
	}
	if (vlen != APTIX_OID_HEXSZ ||
	    aptix_oid_fromstrn(&out->oid, val, vlen) < 0) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "ref '%s' is corrupt",
				name);
		aptix_ref_release(out);
		return APTIX_ECORRUPT;
	}
	return 0;
}

int aptix_ref_read(aptix_ref *out, aptix_repo *repo, const char *name)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = aptix_ref_check_name(name)) < 0)
		return r;
	r = repo->backend->refdb->lookup(&v, repo->backend->refdb, NULL,
					 name);
	if (r == APTIX_ENOTFOUND)
		aptix_error_set(APTIX_ERROR_REFERENCE, "ref '%s' not found",
				name);
	else if (r == 0)
		r = parse_value(out, name, v.ptr, v.len);
	aptix_buf_release(&v);
	return r;
}

int aptix_ref_resolve(aptix_oid *out, char **resolved, aptix_repo *repo,
		      const char *name)
{
	aptix_ref ref;
	char *cur = aptix__strdup(name);
	int depth, r = 0;

	if (resolved)
		*resolved = NULL;
	if (!cur)
		return APTIX_ERROR;
	for (depth = 0;; depth++) {
		if (depth > MAX_SYMREF_DEPTH) {
			aptix_error_set(APTIX_ERROR_REFERENCE, "symbolic ref "
					"'%s' nests too deeply", name);
			r = APTIX_ECORRUPT;
			break;
		}
		r = aptix_ref_read(&ref, repo, cur);
		if (r < 0)
			break;
		if (!ref.target) {
			*out = ref.oid;
			aptix_ref_release(&ref);
			break;
		}
		free(cur);
		cur = ref.target;
		ref.target = NULL;
		aptix_ref_release(&ref);
	}
	if (r == APTIX_ENOTFOUND && strcmp(cur, name))
		aptix_error_set(APTIX_ERROR_REFERENCE, "'%s' points to '%s', "
				"which has no snapshot yet", name, cur);
	if (resolved)
		*resolved = cur;
	else
		free(cur);
	return r;
}

struct ref_walk {
	aptix_ref_foreach_cb cb;
	void *payload;
};

static int ref_walk_cb(const void *key, size_t klen, const void *val,
		       size_t vlen, void *payload)
{
	struct ref_walk *rw = payload;
	aptix_ref ref;
	char name[APTIX_REF_MAXLEN + 1];
	int r;

	if (klen > APTIX_REF_MAXLEN)
		return 0;
	memcpy(name, key, klen);
	name[klen] = '\0';
	if ((r = parse_value(&ref, name, val, vlen)) < 0)
		return r;
	r = rw->cb(&ref, rw->payload);
	aptix_ref_release(&ref);
	return r;
}

int aptix_ref_foreach(aptix_repo *repo, const char *prefix,
		      aptix_ref_foreach_cb cb, void *payload)
{
	struct ref_walk rw;

	rw.cb = cb;
	rw.payload = payload;
	return repo->backend->refdb->iterate(repo->backend->refdb,
					     prefix ? prefix : "",
					     ref_walk_cb, &rw);
}

/* --- Reflog ----------------------------------------------------------- */

/*
 * The id a symbolic ref's target names inside the write transaction
 * (a zero id when it is unborn), so that HEAD's reflog records the
 * sessions it moved between rather than zeroes.
 */
static void wresolve(aptix_oid *out, aptix_backend_txn *tx,
		     const char *target)
{
	aptix_refdb_backend *db = tx->backend->refdb;
	aptix_buf v = APTIX_BUF_INIT;
	aptix_ref ref;
	char *name = aptix__strdup(target);
	int depth;

	memset(out, 0, sizeof(*out));
	for (depth = 0; name && depth < MAX_SYMREF_DEPTH; depth++) {
		aptix_buf_clear(&v);
		memset(&ref, 0, sizeof(ref));
		if (db->lookup(&v, db, tx, name) < 0 ||
		    parse_value(&ref, name, v.ptr, v.len) < 0)
			break;
		free(name);
		name = NULL;
		if (!ref.target) {
			*out = ref.oid;
		} else {
			name = ref.target;
			ref.target = NULL;
		}
		aptix_ref_release(&ref);
	}
	free(name);
	aptix_buf_release(&v);
	aptix_error_clear();
}

/*
 * The reason logged for a symbolic ref that moves from one target to
 * another: "<reason>: moving from <old> to <new>", as git's checkout
 * says, which is what <ref>@{-<n>} and `switch -` read back.
 */
static char *symref_reason(const char *reason, const char *old_target,
			   const char *newval)
{
	aptix_buf b = APTIX_BUF_INIT;

	aptix_buf_puts(&b, reason);
	if (old_target && newval && !strncmp(newval, "ref: ", 5) &&
	    strcmp(old_target, newval + 5))
		aptix_buf_printf(&b, ": moving from %s to %s",
				 aptix_ref_shorten(old_target),
				 aptix_ref_shorten(newval + 5));
	return aptix_buf_detach(&b);
}

/*
 * Whether HEAD points at name (directly), read inside the write: an
 * update of that ref moves HEAD too and is logged in HEAD's reflog, as
 * git logs a commit on the checked-out branch in both.
 */
static int head_points_at(aptix_backend_txn *tx, const char *name)
{
	aptix_refdb_backend *db = tx->backend->refdb;
	aptix_buf v = APTIX_BUF_INIT;
	aptix_ref ref;
	int yes = 0;

	memset(&ref, 0, sizeof(ref));
	if (strcmp(name, "HEAD") &&
	    db->lookup(&v, db, tx, "HEAD") == 0 &&
	    parse_value(&ref, "HEAD", v.ptr, v.len) == 0)
		yes = ref.target && !strcmp(ref.target, name);
	aptix_ref_release(&ref);
	aptix_buf_release(&v);
	aptix_error_clear();
	return yes;
}

/* The reflog entry of an update, and HEAD's when it moves HEAD too. */
static int log_update(aptix_backend_txn *tx, aptix_refdb_update *u,
		      aptix_reflog_entry *e, const char *target)
{
	aptix_refdb_backend *db = tx->backend->refdb;
	const char *newval = u->new_value;
	int r;

	/* a symbolic ref set to the target it has: nothing moved */
	if (target && newval && !strncmp(newval, "ref: ", 5) &&
	    !strcmp(target, newval + 5))
		return db->update(db, tx, u);
	u->log = e;
	r = db->update(db, tx, u);
	if (!r && newval && strncmp(newval, "ref: ", 5) &&
	    head_points_at(tx, u->name))
		r = db->reflog_append(db, tx, "HEAD", e);
	return r;
}

int aptix_refs__apply(aptix_backend_txn *tx, const char *name,
		      const char *newval, int old_mode,
		      const aptix_oid *old_id, const aptix_oid *log_new,
		      const char *reason, int64_t now)
{
	aptix_refdb_backend *db = tx->backend->refdb;
	aptix_buf cur = APTIX_BUF_INIT;
	aptix_refdb_update u;
	aptix_reflog_entry e;
	aptix_ref ref;
	aptix_oid cur_id;
	char *why = NULL;
	int r, exists;

	memset(&cur_id, 0, sizeof(cur_id));
	memset(&ref, 0, sizeof(ref));
	r = db->lookup(&cur, db, tx, name);
	if (r < 0 && r != APTIX_ENOTFOUND)
		goto done;
	exists = r == 0;
	if (exists) {
		if ((r = parse_value(&ref, name, cur.ptr, cur.len)) < 0)
			goto done;
		if (!ref.target)
			cur_id = ref.oid;
		else
			wresolve(&cur_id, tx, ref.target);
	}
	if (old_mode == OLD_ABSENT && exists) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "ref '%s' already "
				"exists (at %s)", name, ref.target ?
				ref.target : aptix_oid_hex(&cur_id));
		r = APTIX_EMISMATCH;
		goto done;
	}
	if (old_mode == OLD_EXACT &&
	    (!exists || ref.target || aptix_oid_cmp(&cur_id, old_id))) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "ref '%s' is at %s but "
				"expected %s", name, !exists ? "nothing" :
				ref.target ? ref.target :
				aptix_oid_hex(&cur_id), aptix_oid_hex(old_id));
		r = APTIX_EMISMATCH;
		goto done;
	}
	if (!newval && !exists) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "ref '%s' not found",
				name);
		r = APTIX_ENOTFOUND;
		goto done;
	}
	e.old_id = cur_id;
	e.new_id = *log_new;
	e.time_ms = now;
	if (newval && !strncmp(newval, "ref: ", 5))
		wresolve(&e.new_id, tx, newval + 5);
	if (!(why = symref_reason(reason, ref.target, newval))) {
		r = APTIX_ERROR;
		goto done;
	}
	e.message = why;
	/* the swap expects exactly what was read: a racing writer loses */
	memset(&u, 0, sizeof(u));
	u.name = name;
	u.new_value = newval;
	u.old_value = exists ? cur.ptr : APTIX_REFDB_ABSENT;
	r = log_update(tx, &u, &e, ref.target);
done:
	free(why);
	aptix_ref_release(&ref);
	aptix_buf_release(&cur);
	return r;
}

int aptix_reflog_foreach_all(aptix_repo *repo, aptix_reflog_all_cb cb,
			     void *payload)
{
	aptix_refdb_backend *db = repo->backend->refdb;

	return db->reflog_iterate(db, "", cb, payload);
}

int aptix_reflog_foreach(aptix_repo *repo, const char *name,
			 aptix_reflog_cb cb, void *payload)
{
	aptix_refdb_backend *db = repo->backend->refdb;
	int r;

	if ((r = aptix_ref_check_name(name)) < 0)
		return r;
	return db->reflog_foreach(db, name, cb, payload);
}
