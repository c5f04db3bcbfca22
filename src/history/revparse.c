/*
 * src/history/revparse.c - names to ids (see aptix/revparse.h).
 */
#include "util/common.h"
#include "repo/repo.h"
#include "aptix/revparse.h"
#include "aptix/refs.h"
#include "aptix/index.h"
#include "aptix/sys/index_backend.h"

static int not_found(const char *name)
{
	aptix_error_set(APTIX_ERROR_REFERENCE, "unknown name '%s': not an "
			"object, ref or conversation", name);
	return APTIX_ENOTFOUND;
}

struct conv_prefix {
	const char *prefix;
	size_t plen;
	char found[APTIX_CONV_MAXLEN + 1];
	int count;
};

static int conv_prefix_cb(const void *key, size_t klen, const void *v UNUSED,
			  size_t vl UNUSED, void *payload)
{
	struct conv_prefix *cp = payload;

	if (klen < cp->plen || memcmp(key, cp->prefix, cp->plen))
		return APTIX_ITEROVER;
	if (klen > APTIX_CONV_MAXLEN)
		return 0;
	if (!cp->count) {
		memcpy(cp->found, key, klen);
		cp->found[klen] = '\0';
	}
	return ++cp->count >= 2 ? APTIX_ITEROVER : 0;
}

int aptix_conv_resolve(char *out, aptix_repo *repo, const char *name)
{
	struct conv_prefix cp;
	aptix_conv_info ci;
	aptix_ref ref;
	size_t plen = strlen(APTIX_CONV_PREFIX);
	int r;

	if (!strcmp(name, "HEAD")) {
		if ((r = aptix_ref_read(&ref, repo, "HEAD")) < 0)
			return r;
		if (!ref.target || strncmp(ref.target, APTIX_CONV_PREFIX,
					   plen)) {
			aptix_error_set(APTIX_ERROR_REFERENCE, "HEAD does not "
					"name a conversation");
			aptix_ref_release(&ref);
			return APTIX_EINVALID;
		}
		snprintf(out, APTIX_CONV_MAXLEN + 1, "%s", ref.target + plen);
		aptix_ref_release(&ref);
		return 0;
	}
	if (!strncmp(name, APTIX_CONV_PREFIX, plen))
		name += plen;
	if (aptix_conv_check_id(name) < 0)
		return APTIX_EINVALID;
	if (aptix_index_conversation(&ci, repo, name) == 0) {
		snprintf(out, APTIX_CONV_MAXLEN + 1, "%s", name);
		return 0;
	}
	memset(&cp, 0, sizeof(cp));
	cp.prefix = name;
	cp.plen = strlen(name);
	if (cp.plen >= 4 &&
	    (r = repo->backend->index->iterate(repo->backend->index, NULL,
					       APTIX_INDEX_CONVS, name,
					       cp.plen, 0, conv_prefix_cb,
					       &cp)) < 0)
		return r;
	if (cp.count == 1) {
		snprintf(out, APTIX_CONV_MAXLEN + 1, "%s", cp.found);
		return 0;
	}
	if (cp.count > 1) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "conversation prefix "
				"'%s' is ambiguous", name);
		return APTIX_EAMBIGUOUS;
	}
	aptix_error_set(APTIX_ERROR_REFERENCE, "conversation '%s' not found",
			name);
	return APTIX_ENOTFOUND;
}

struct nth_entry {
	long n;
	aptix_oid id;
	int found;
	char conv[APTIX_CONV_MAXLEN + 1];
};

static int nth_cb(const aptix_reflog_entry *e, void *payload)
{
	struct nth_entry *ne = payload;

	if (ne->n-- > 0)
		return 0;
	ne->id = e->new_id;
	ne->found = 1;
	return APTIX_ITEROVER;
}

static int moved_cb(const aptix_reflog_entry *e, void *payload)
{
	struct nth_entry *ne = payload;
	const char *p = strstr(e->message, ": moving from "), *q;
	size_t len;

	if (!p)
		return 0;
	/* the last one: a turn's title in the reason may hold the words */
	while ((q = strstr(p + 1, ": moving from ")))
		p = q;
	p += strlen(": moving from ");
	len = strcspn(p, " ");
	if (!len || len > APTIX_CONV_MAXLEN || --ne->n > 0)
		return 0;
	memcpy(ne->conv, p, len);
	ne->conv[len] = '\0';
	ne->found = 1;
	return APTIX_ITEROVER;
}

int aptix_conv_previous(char *out, aptix_repo *repo, int n)
{
	struct nth_entry ne;
	int r;

	memset(&ne, 0, sizeof(ne));
	ne.n = n;
	if (n < 1 || (r = aptix_reflog_foreach(repo, "HEAD", moved_cb,
					       &ne)) < 0 || !ne.found) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "HEAD has not switched "
				"conversations %d time%s yet", n,
				n == 1 ? "" : "s");
		return APTIX_ENOTFOUND;
	}
	snprintf(out, APTIX_CONV_MAXLEN + 1, "%s", ne.conv);
	return 0;
}

/* "<ref>@{<n>}": the n-th newest entry of the ref's reflog. */
static int resolve_reflog(aptix_oid *out, aptix_repo *repo, const char *ref,
			  long n, const char *name)
{
	struct nth_entry ne;
	char *target = NULL;
	aptix_oid id;
	int r;

	memset(&ne, 0, sizeof(ne));
	ne.n = n;
	if ((r = aptix_reflog_foreach(repo, ref, nth_cb, &ne)) < 0)
		return r;
	if (!ne.found && !strcmp(ref, "HEAD") && n == ne.n &&
	    aptix_ref_resolve(&id, &target, repo, "HEAD") >= 0 && target) {
		/* HEAD without a reflog of its own: its target's */
		r = aptix_reflog_foreach(repo, target, nth_cb, &ne);
		free(target);
		if (r < 0)
			return r;
	} else {
		free(target);
	}
	aptix_error_clear();
	if (!ne.found) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "'%s': the reflog of "
				"'%s' has no entry %ld", name, ref, n);
		return APTIX_ENOTFOUND;
	}
	if (aptix_oid_is_zero(&ne.id)) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "'%s': the reflog of "
				"'%s' recorded no session there", name, ref);
		return APTIX_ENOTFOUND;
	}
	*out = ne.id;
	return 0;
}

/* "@{-<n>}": the tip of the conversation HEAD left n switches ago. */
static int resolve_previous(aptix_oid *out, aptix_repo *repo, long n)
{
	char conv[APTIX_CONV_MAXLEN + 1];
	aptix_buf ref = APTIX_BUF_INIT;
	int r;

	if ((r = aptix_conv_previous(conv, repo, (int)n)) < 0)
		return r;
	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, conv);
	r = aptix_ref_resolve(out, NULL, repo, ref.ptr);
	aptix_buf_release(&ref);
	return r;
}

/* "<base>@{<n>}" or "@{-<n>}"; 1 when name is not of that form. */
static int resolve_at(aptix_oid *out, aptix_repo *repo, const char *name)
{
	const char *at = strstr(name, "@{");
	char conv[APTIX_CONV_MAXLEN + 1], *end, *base;
	aptix_buf ref = APTIX_BUF_INIT;
	long n;
	int r;

	if (!at || name[strlen(name) - 1] != '}')
		return 1;
	errno = 0;
	n = strtol(at + 2, &end, 10);
	if (errno || end == at + 2 || *end != '}' || end[1] ||
	    n > 1000000 || n < -1000000) {
		aptix_error_set(APTIX_ERROR_INVALID, "malformed name '%s'",
				name);
		return APTIX_EINVALID;
	}
	if (n < 0) {
		if (at != name) {
			aptix_error_set(APTIX_ERROR_INVALID, "'%s': @{-<n>} "
					"takes no ref before it", name);
			return APTIX_EINVALID;
		}
		return resolve_previous(out, repo, -n);
	}
	if (!(base = aptix__strndup(name, (size_t)(at - name))))
		return APTIX_ERROR;
	if (!*base || !strcmp(base, "@") || !strcmp(base, "HEAD") ||
	    !strncmp(base, "refs/", 5)) {
		aptix_buf_puts(&ref, *base && *base != '@' ? base : "HEAD");
	} else if ((r = aptix_conv_resolve(conv, repo, base)) == 0) {
		aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, conv);
	} else {
		free(base);
		return r == APTIX_EAMBIGUOUS ? r : not_found(name);
	}
	free(base);
	if (aptix_buf_oom(&ref))
		return APTIX_ERROR;
	r = resolve_reflog(out, repo, ref.ptr, n, name);
	aptix_buf_release(&ref);
	return r;
}

static int resolve_base(aptix_oid *out, aptix_repo *repo, const char *name)
{
	aptix_buf ref = APTIX_BUF_INIT;
	char conv[APTIX_CONV_MAXLEN + 1];
	size_t len = strlen(name);
	int r;

	if (!len)
		return not_found(name);
	if ((r = resolve_at(out, repo, name)) <= 0)
		return r;
	if (!strcmp(name, "@"))
		name = "HEAD";
	if (!strcmp(name, "HEAD") || !strncmp(name, "refs/", 5))
		return aptix_ref_resolve(out, NULL, repo, name);
	if (len == APTIX_OID_HEXSZ && aptix_is_hex(name, len))
		return aptix_oid_fromstr(out, name);
	if (aptix_conv_check_id(name) == 0) {
		aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, name);
		r = aptix_ref_resolve(out, NULL, repo, ref.ptr);
		aptix_buf_release(&ref);
		if (r != APTIX_ENOTFOUND)
			return r;
	}
	if (len >= APTIX_OID_MINPREFIX && aptix_is_hex(name, len)) {
		r = aptix_odb_resolve_prefix(out, repo->odb, name, len);
		if (r != APTIX_ENOTFOUND)
			return r;
	}
	if (len >= 4 && aptix_conv_check_id(name) == 0) {
		r = aptix_conv_resolve(conv, repo, name);
		if (r == APTIX_EAMBIGUOUS)
			return r;
		if (r == 0) {
			aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, conv);
			r = aptix_ref_resolve(out, NULL, repo, ref.ptr);
			aptix_buf_release(&ref);
			return r;
		}
	}
	return not_found(name);
}

static int session_parent(aptix_oid *out, aptix_repo *repo,
			  const aptix_oid *id, const char *name)
{
	aptix_session_info si;
	aptix_session s;
	int r;

	if (aptix_index_session(&si, repo, id) == 0) {
		if (!si.has_parent)
			goto root;
		*out = si.parent;
		return 0;
	}
	if ((r = aptix_session_lookup(&s, repo, id)) < 0) {
		aptix_session_release(&s);
		if (r == APTIX_EINVALID)	/* say which name it was */
			aptix_error_set(aptix_error_last()->klass, "'%s': %s",
					name, aptix_error_last()->message);
		return r;
	}
	if (!s.has_parent) {
		aptix_session_release(&s);
		goto root;
	}
	*out = s.parent;
	aptix_session_release(&s);
	return 0;
root:
	aptix_error_set(APTIX_ERROR_REFERENCE, "'%s': session '%s' has no "
			"parent", name, aptix_oid_hex(id));
	return APTIX_ENOTFOUND;
}

static int peel(aptix_oid *id, aptix_repo *repo, const char *what,
		size_t wlen, const char *name)
{
	aptix_buf data = APTIX_BUF_INIT;
	aptix_otype type;
	aptix_session s;
	int r;

	if ((r = aptix_odb_read(&data, &type, repo->odb, id, 0)) < 0)
		return r;
	if (wlen == 0 || (wlen == 7 && !memcmp(what, "session", 7))) {
		if (wlen && type != APTIX_OBJ_SESSION)
			goto wrong;
		r = 0;
	} else if (wlen == 4 && !memcmp(what, "turn", 4)) {
		if (type == APTIX_OBJ_TURN) {
			r = 0;
		} else if (type == APTIX_OBJ_SESSION &&
			   (r = aptix_session_parse(&s, data.ptr,
						    data.len)) == 0) {
			*id = s.turn;
			aptix_session_release(&s);
		} else if (type != APTIX_OBJ_SESSION) {
			goto wrong;
		}
	} else if (wlen == 4 && !memcmp(what, "blob", 4)) {
		if (type != APTIX_OBJ_BLOB)
			goto wrong;
		r = 0;
	} else {
		aptix_error_set(APTIX_ERROR_INVALID, "'%s': unknown peel "
				"'^{%.*s}'", name, (int)wlen, what);
		r = APTIX_EINVALID;
	}
	aptix_buf_release(&data);
	return r;
wrong:
	aptix_buf_release(&data);
	aptix_error_set(APTIX_ERROR_OBJECT, "'%s': object '%s' is a %s, not "
			"a %.*s", name, aptix_oid_hex(id),
			aptix_otype_name(type), (int)wlen, what);
	return APTIX_EINVALID;
}

int aptix_revparse(aptix_oid *out, aptix_repo *repo, const char *name)
{
	size_t blen = strcspn(name, "~^");
	char *base;
	const char *p;
	int r;

	if (!(base = aptix__strndup(name, blen)))
		return APTIX_ERROR;
	r = resolve_base(out, repo, base);
	free(base);
	for (p = name + blen; !r && *p;) {
		unsigned long n = 1;
		char *end;

		/* after ^0 or ^{...}: only another suffix may follow */
		if (*p != '~' && *p != '^')
			goto malformed;
		if (*p == '^' && p[1] == '{') {
			const char *close = strchr(p, '}');

			if (!close)
				goto malformed;
			r = peel(out, repo, p + 2, (size_t)(close - p - 2),
				 name);
			p = close + 1;
			continue;
		}
		if (p[1] >= '0' && p[1] <= '9') {
			errno = 0;
			n = strtoul(p + 1, &end, 10);
			if (errno || n > 1000000)
				goto malformed;
		} else {
			end = (char *)p + 1;
		}
		if (*p == '^' && n > 1) {
			aptix_error_set(APTIX_ERROR_REFERENCE, "'%s': a session "
					"has only one parent", name);
			return APTIX_ENOTFOUND;
		}
		if (*p == '^' && n == 0) {
			p = end;
			continue;
		}
		while (!r && n--)
			r = session_parent(out, repo, out, name);
		p = end;
		if (*p && *p != '~' && *p != '^')
			goto malformed;
	}
	return r;
malformed:
	aptix_error_set(APTIX_ERROR_INVALID, "malformed name '%s'", name);
	return APTIX_EINVALID;
}
