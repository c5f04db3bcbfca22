/*
 * plumbing/update-ref.c - update refs safely, as compare-and-swap, one
 * at a time or as one atomic batch read from stdin (git update-ref).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const update_ref_usage[] = {
	"aptix update-ref [<options>] <ref> <new> [<old>]",
	"aptix update-ref [<options>] -d <ref> [<old>]",
	"aptix update-ref [<options>] --stdin [-z]",
	NULL
};

enum op_kind { OP_UPDATE, OP_DELETE, OP_VERIFY };

struct update {
	enum op_kind kind;
	char *given;		/* the name as given */
	char *ref;		/* after following symbolic refs */
	aptix_oid new_id;	/* OP_UPDATE */
	int have_old;
	aptix_oid old_id;	/* zero: must not exist */
};

struct batch {
	aptix_repo *repo;
	struct update *u;
	size_t nr, alloc;
};

static void release_batch(struct batch *b)
{
	size_t i;

	for (i = 0; i < b->nr; i++) {
		free(b->u[i].given);
		free(b->u[i].ref);
	}
	free(b->u);
}

/*
 * The ref an update of name acts on: name itself with no_deref, else the
 * end of its chain of symbolic refs (which need not exist yet).
 */
static char *deref(aptix_repo *repo, const char *name, int no_deref)
{
	char *resolved = NULL;
	aptix_oid id;
	int r;

	if (aptix_ref_check_name(name) < 0)
		die_aptix();
	if (no_deref) {
		if (!(resolved = strdup(name)))
			die("out of memory");
		return resolved;
	}
	r = aptix_ref_resolve(&id, &resolved, repo, name);
	if (r < 0 && r != APTIX_ENOTFOUND)
		die_aptix();
	if (!resolved)
		die("out of memory");
	return resolved;
}

static struct update *add_update(struct batch *b, enum op_kind kind,
				 const char *name, int no_deref)
{
	struct update *u;
	char *ref = deref(b->repo, name, no_deref);
	size_t i;

	for (i = 0; i < b->nr; i++) {
		const char *via = strcmp(name, ref) ? name :
			strcmp(b->u[i].given, ref) ? b->u[i].given : NULL;

		if (strcmp(b->u[i].ref, ref))
			continue;
		if (via)
			die("multiple updates for '%s' (including one via its "
			    "referent '%s') are not allowed", via, ref);
		die("multiple updates for ref '%s' not allowed", ref);
	}
	b->u = cli_grow(b->u, &b->alloc, b->nr, sizeof(*b->u));
	u = &b->u[b->nr++];
	memset(u, 0, sizeof(*u));
	u->kind = kind;
	u->ref = ref;
	if (!(u->given = strdup(name)))
		die("out of memory");
	return u;
}

/* Resolve a new or old value; 0 on success. */
static int get_oid(aptix_oid *out, aptix_repo *repo, const char *name)
{
	if (!*name) {
		memset(out, 0, sizeof(*out));
		return 0;
	}
	return aptix_revparse(out, repo, name);
}

/* A new value must be a session that exists. */
static void check_new(aptix_repo *repo, const aptix_oid *id, const char *name)
{
	aptix_otype type;
	size_t size;

	if (aptix_oid_is_zero(id))
		return;		/* a deletion */
	if (aptix_odb_read_header(&size, &type, aptix_repo_odb(repo), id) < 0)
		die("update_ref: %s", aptix_error_last()->message);
	if (type != APTIX_OBJ_SESSION)
		die("update_ref: '%s' is a %s, not a session", name,
		    aptix_otype_name(type));
}

/* --- applying a batch ------------------------------------------------- */

struct ref_state {
	int exists;
	aptix_oid id;
	char *target;		/* a symbolic ref */
};

static void read_state(struct ref_state *st, aptix_repo *repo,
		       const char *name)
{
	aptix_ref ref;
	int r = aptix_ref_read(&ref, repo, name);

	memset(st, 0, sizeof(*st));
	if (r == APTIX_ENOTFOUND)
		return;
	if (r < 0)
		die_aptix();
	st->exists = 1;
	st->id = ref.oid;
	st->target = ref.target;
	ref.target = NULL;
	aptix_ref_release(&ref);
}

/* The messages are the library's, for the same compare-and-swap. */
static void check_old(const struct update *u, const struct ref_state *st)
{
	char want[APTIX_OID_HEXSZ + 1], cur[APTIX_OID_HEXSZ + 1];

	if (!u->have_old)
		return;
	aptix_oid_tostr(cur, &st->id);
	if (aptix_oid_is_zero(&u->old_id)) {
		if (st->exists)
			die("ref '%s' already exists (at %s)", u->ref,
			    st->target ? st->target : cur);
		return;
	}
	if (!st->exists || st->target || aptix_oid_cmp(&st->id, &u->old_id))
		die("ref '%s' is at %s but expected %s", u->ref,
		    !st->exists ? "nothing" : st->target ? st->target : cur,
		    aptix_oid_tostr(want, &u->old_id));
}

/*
 * Verifications are checked by reading the refs first; everything else
 * goes into one transaction, so that either all of it lands or nothing.
 * Deleting a ref that does not exist is a no-op, as in git.
 */
static void apply_batch(struct batch *b, const char *reason)
{
	aptix_txn *tx = NULL;
	struct ref_state st;
	size_t i;
	int r;

	if (aptix_txn_new(&tx, b->repo) < 0)
		die_aptix();
	for (i = 0; i < b->nr; i++) {
		struct update *u = &b->u[i];
		int skip = 0;

		if (u->kind != OP_UPDATE) {
			read_state(&st, b->repo, u->ref);
			if (u->kind == OP_VERIFY || !st.exists) {
				check_old(u, &st);
				skip = 1;
			}
			free(st.target);
		}
		if (skip)
			continue;
		r = aptix_txn_ref_update(tx, u->ref, u->kind == OP_UPDATE ?
					 &u->new_id : NULL, u->have_old ?
					 &u->old_id : NULL, reason);
		if (r < 0)
			die_aptix();
	}
	if (aptix_txn_commit(tx) < 0)
		die_aptix();
	aptix_txn_free(tx);
}

/* --- the --stdin protocol --------------------------------------------- */

struct parser {
	struct batch *b;
	int z;			/* -z: NUL-terminated fields */
	const char *p, *end;	/* unread input */
	char *line;		/* LF mode: the current line */
	const char *next;	/* the unparsed rest of the command */
	const char *cmd;	/* for messages */
	char *ref;		/* as given */
	aptix_buf arg;
	int no_deref;		/* "option no-deref" before this command */
};

/* The next NUL-terminated field of -z input; NULL at the end. */
static const char *next_token(struct parser *ps)
{
	const char *tok = ps->p, *nul;

	if (ps->p >= ps->end)
		return NULL;
	nul = memchr(ps->p, '\0', (size_t)(ps->end - ps->p));
	ps->p = nul ? nul + 1 : ps->end;
	return tok;
}

/* Unquote a C-style string at s (on its '"'); NULL when malformed. */
static const char *unquote_c(aptix_buf *out, const char *s)
{
	static const char from[] = "abfnrtv\\\"", to[] = "\a\b\f\n\r\t\v\\\"";
	const char *p;
	char c;

	for (s++;;) {
		c = *s++;
		if (!c)
			return NULL;
		if (c == '"')
			return s;
		if (c == '\\') {
			c = *s++;
			if (c >= '0' && c <= '3') {
				if (s[0] < '0' || s[0] > '7' ||
				    s[1] < '0' || s[1] > '7')
					return NULL;
				c = (char)(((c - '0') << 6) |
					   ((s[0] - '0') << 3) | (s[1] - '0'));
				s += 2;
			} else if (c && (p = strchr(from, c))) {
				c = to[p - from];
			} else {
				return NULL;
			}
		}
		aptix_buf_putc(out, c);
	}
}

/* LF mode: one argument, C-quoted or up to whitespace. */
static void parse_arg(struct parser *ps)
{
	const char *orig = ps->next;

	aptix_buf_clear(&ps->arg);
	if (*ps->next == '"') {
		if (!(ps->next = unquote_c(&ps->arg, ps->next)))
			die("badly quoted argument: %s", orig);
		if (*ps->next && !isspace((unsigned char)*ps->next))
			die("unexpected character after quoted argument: %s",
			    orig);
	} else {
		while (*ps->next && !isspace((unsigned char)*ps->next))
			aptix_buf_putc(&ps->arg, *ps->next++);
	}
	if (aptix_buf_oom(&ps->arg))
		die("out of memory");
}

static void parse_refname(struct parser *ps)
{
	const char *name;

	if (ps->z) {
		name = ps->next;
		ps->next += strlen(ps->next);
	} else {
		parse_arg(ps);
		name = ps->arg.ptr;
	}
	if (!*name)
		die("%s: missing <ref>", ps->cmd);
	if (aptix_ref_check_name(name) < 0)
		die_aptix();
	if (!(ps->ref = strdup(name)))
		die("out of memory");
}

/*
 * Read the next <new-oid> or <old-oid> (which: "new" or "old"): 0 with
 * the id in out, 1 when it is absent. Without -z an empty value means
 * zero; with -z it means absent, except that an empty <new-oid> of
 * update is taken as zero (allow_empty).
 */
static int parse_next_oid(struct parser *ps, aptix_oid *out,
			  const char *which, int allow_empty)
{
	const char *arg;

	if (ps->z) {
		if (!(arg = next_token(ps)))
			die("%s %s: unexpected end of input when reading "
			    "<%s-oid>", ps->cmd, ps->ref, which);
		if (!*arg) {
			if (!allow_empty)
				return 1;
			warning("%s %s: missing <new-oid>, treating as zero",
				ps->cmd, ps->ref);
		}
	} else {
		if (!*ps->next)
			return 1;
		if (*ps->next != ' ')
			die("%s %s: expected SP but got: %s", ps->cmd, ps->ref,
			    ps->next);
		ps->next++;
		parse_arg(ps);
		arg = ps->arg.ptr;
	}
	if (get_oid(out, ps->b->repo, arg) < 0)
		die("%s %s: invalid <%s-oid>: %s", ps->cmd, ps->ref, which,
		    arg);
	if (!strcmp(which, "new"))
		check_new(ps->b->repo, out, arg);
	return 0;
}

static void parse_end(struct parser *ps)
{
	if (!ps->z && *ps->next)
		die("%s %s: extra input: %s", ps->cmd, ps->ref, ps->next);
}

static struct update *queue(struct parser *ps, enum op_kind kind)
{
	struct update *u = add_update(ps->b, kind, ps->ref, ps->no_deref);

	ps->no_deref = 0;
	return u;
}

static void parse_update(struct parser *ps)
{
	aptix_oid new_id, old_id;
	struct update *u;
	int have_old;

	parse_refname(ps);
	if (parse_next_oid(ps, &new_id, "new", 1))
		die("update %s: missing <new-oid>", ps->ref);
	have_old = !parse_next_oid(ps, &old_id, "old", 0);
	parse_end(ps);
	/* a zero <new-oid> makes sure the ref does not exist afterwards */
	u = queue(ps, aptix_oid_is_zero(&new_id) ? OP_DELETE : OP_UPDATE);
	u->new_id = new_id;
	u->have_old = have_old;
	u->old_id = old_id;
}

static void parse_create(struct parser *ps)
{
	aptix_oid new_id;
	struct update *u;

	parse_refname(ps);
	if (parse_next_oid(ps, &new_id, "new", 0))
		die("create %s: missing <new-oid>", ps->ref);
	if (aptix_oid_is_zero(&new_id))
		die("create %s: zero <new-oid>", ps->ref);
	parse_end(ps);
	u = queue(ps, OP_UPDATE);
	u->new_id = new_id;
	u->have_old = 1;	/* a zero old id: must not exist */
}

static void parse_delete(struct parser *ps)
{
	aptix_oid old_id;
	struct update *u;
	int have_old;

	parse_refname(ps);
	have_old = !parse_next_oid(ps, &old_id, "old", 0);
	if (have_old && aptix_oid_is_zero(&old_id))
		die("delete %s: zero <old-oid>", ps->ref);
	parse_end(ps);
	u = queue(ps, OP_DELETE);
	u->have_old = have_old;
	u->old_id = old_id;
}

static void parse_verify(struct parser *ps)
{
	aptix_oid old_id;
	struct update *u;

	parse_refname(ps);
	if (parse_next_oid(ps, &old_id, "old", 0))
		memset(&old_id, 0, sizeof(old_id));
	parse_end(ps);
	u = queue(ps, OP_VERIFY);
	u->have_old = 1;
	u->old_id = old_id;
}

static void parse_option(struct parser *ps)
{
	if (strcmp(ps->next, "no-deref"))
		die("option unknown: %s", ps->next);
	ps->no_deref = 1;
}

static const struct {
	const char *prefix;	/* with its SP */
	void (*fn)(struct parser *ps);
} stdin_cmds[] = {
	{ "update ", parse_update },
	{ "create ", parse_create },
	{ "delete ", parse_delete },
	{ "verify ", parse_verify },
	{ "option ", parse_option },
};

static void update_refs_stdin(struct batch *b, int z, const char *reason)
{
	aptix_buf in = APTIX_BUF_INIT;
	struct parser ps;
	const char *cmdline;
	size_t i, n;

	if (aptix_buf_read_fd(&in, 0) < 0)
		die_aptix();
	memset(&ps, 0, sizeof(ps));
	aptix_buf_init(&ps.arg, 0);
	ps.b = b;
	ps.z = z;
	ps.p = in.ptr;
	ps.end = in.ptr + in.len;
	while (ps.p < ps.end) {
		if (z) {
			cmdline = next_token(&ps);
		} else {
			const char *lf = memchr(ps.p, '\n',
						(size_t)(ps.end - ps.p));

			n = (size_t)((lf ? lf : ps.end) - ps.p);
			free(ps.line);
			if (!(ps.line = malloc(n + 1)))
				die("out of memory");
			memcpy(ps.line, ps.p, n);
			ps.line[n] = '\0';
			ps.p += n + (lf != NULL);
			cmdline = ps.line;
		}
		if (!*cmdline)
			die("empty command in input");
		for (i = 0; i < sizeof(stdin_cmds) / sizeof(stdin_cmds[0]);
		     i++) {
			size_t plen = strlen(stdin_cmds[i].prefix);

			if (strncmp(cmdline, stdin_cmds[i].prefix, plen))
				continue;
			ps.cmd = stdin_cmds[i].prefix;
			ps.next = cmdline + plen;
			break;
		}
		if (i == sizeof(stdin_cmds) / sizeof(stdin_cmds[0]))
			die("unknown command: %s", cmdline);
		{
			/* the command word without its SP, for messages */
			char word[8];

			memcpy(word, ps.cmd, strlen(ps.cmd) - 1);
			word[strlen(ps.cmd) - 1] = '\0';
			ps.cmd = word;
			stdin_cmds[i].fn(&ps);
			ps.cmd = NULL;
		}
		free(ps.ref);
		ps.ref = NULL;
	}
	if (ps.no_deref)
		die("option no-deref: no command follows");
	free(ps.line);
	aptix_buf_release(&ps.arg);
	aptix_buf_release(&in);
	apply_batch(b, reason);
}

int cmd_update_ref(int argc, const char **argv, struct aptix_repo *repo)
{
	const char *reason = NULL;
	int delete = 0, no_deref = 0, use_stdin = 0, z = 0;
	struct batch b;
	struct update *u;
	aptix_oid new_id, old_id;
	struct option options[] = {
		OPT_STRING('m', NULL, &reason, "reason", "reflog message "
			   "(default: update-ref)"),
		OPT_BOOL('d', NULL, &delete, "delete the ref"),
		OPT_BOOL(0, "no-deref", &no_deref, "update <ref> itself, not "
			 "the ref it points to"),
		OPT_BOOL('z', NULL, &z, "stdin has NUL-terminated "
			 "arguments"),
		OPT_BOOL(0, "stdin", &use_stdin, "read updates from stdin "
			 "and apply them atomically"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, update_ref_usage, 0);
	if (reason && !*reason)
		die("refusing to perform update with empty message");
	if (!reason)
		reason = "update-ref";
	memset(&b, 0, sizeof(b));
	memset(&new_id, 0, sizeof(new_id));
	memset(&old_id, 0, sizeof(old_id));
	b.repo = repo;
	if (use_stdin) {
		if (delete || argc > 0)
			usage_with_options(update_ref_usage, options);
		update_refs_stdin(&b, z, reason);
		release_batch(&b);
		return 0;
	}
	if (z)
		usage_with_options(update_ref_usage, options);
	if (delete ? argc < 1 || argc > 2 : argc < 2 || argc > 3)
		usage_with_options(update_ref_usage, options);
	if (!delete) {
		/* here an empty <new> is no id (it is zero in --stdin) */
		if (aptix_revparse(&new_id, repo, argv[1]) < 0)
			die_aptix();
		check_new(repo, &new_id, argv[1]);
	}
	/* <old> may be empty (or zero): the ref must not exist */
	if (argc > 1 + !delete && get_oid(&old_id, repo, argv[1 + !delete]) < 0)
		die_aptix();
	u = add_update(&b, delete || aptix_oid_is_zero(&new_id) ?
		       OP_DELETE : OP_UPDATE, argv[0], no_deref);
	if (u->kind == OP_UPDATE)
		u->new_id = new_id;
	u->have_old = argc > 1 + !delete;
	if (u->have_old)
		u->old_id = old_id;
	/* git treats a zero <old> of -d as "whatever it holds" */
	if (delete && u->have_old && aptix_oid_is_zero(&old_id))
		u->have_old = 0;
	apply_batch(&b, reason);
	release_batch(&b);
	return 0;
}
