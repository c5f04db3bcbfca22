/*
 * plumbing/reflog.c - show the reflog of a ref, or test that it has one
 * (git reflog show / git reflog exists).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "pager.h"
#include "parse-options.h"

static const char *const reflog_usage[] = {
	"aptix reflog [show] [-n <n>] [--no-pager] [<ref>]",
	"aptix reflog exists <ref>",
	NULL
};

static const char *const reflog_show_usage[] = {
	"aptix reflog [show] [-n <n>] [--no-pager] [<ref>]",
	NULL
};

static const char *const reflog_exists_usage[] = {
	"aptix reflog exists <ref>",
	NULL
};

#define DEFAULT_ABBREV 7

struct entry {
	aptix_oid new_id;
	char *message;
};

struct entries {
	struct entry *e;
	size_t nr, alloc, max;	/* max: 0 for all */
};

/*
 * Entries are copied out and printed after the walk: the walk holds the
 * store's read transaction, so the callback must not read the store.
 */
static int collect_cb(const aptix_reflog_entry *e, void *payload)
{
	struct entries *l = payload;
	struct entry *n;

	if (l->max && l->nr >= l->max)
		return APTIX_ITEROVER;
	l->e = cli_grow(l->e, &l->alloc, l->nr, sizeof(*l->e));
	n = &l->e[l->nr++];
	n->new_id = e->new_id;
	if (!(n->message = strdup(e->message)))
		die("out of memory");
	return 0;
}

static void release_entries(struct entries *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		free(l->e[i].message);
	free(l->e);
	memset(l, 0, sizeof(*l));
}

static void read_reflog(struct entries *l, aptix_repo *repo, const char *name,
			size_t max)
{
	memset(l, 0, sizeof(*l));
	l->max = max;
	if (aptix_reflog_foreach(repo, name, collect_cb, l) < 0)
		die_aptix();
}

static int has_reflog(aptix_repo *repo, const char *name)
{
	struct entries l;
	int n;

	read_reflog(&l, repo, name, 1);
	n = l.nr > 0;
	release_entries(&l);
	return n;
}

static int ref_exists(aptix_repo *repo, const char *name)
{
	aptix_ref ref;
	int r = aptix_ref_read(&ref, repo, name);

	aptix_ref_release(&ref);
	if (r < 0 && r != APTIX_ENOTFOUND)
		die_aptix();
	return r == 0;
}

/*
 * The ref whose reflog name means: HEAD or refs/... as they are; a
 * conversation id, or with lookup a unique prefix of one, under
 * refs/conversations/.
 */
static char *reflog_ref(aptix_repo *repo, const char *name, int lookup)
{
	char conv[APTIX_CONV_MAXLEN + 1];
	aptix_buf ref = APTIX_BUF_INIT;

	if (!strcmp(name, "HEAD") || !strncmp(name, "refs/", 5)) {
		if (aptix_ref_check_name(name) < 0)
			die_aptix();
		aptix_buf_puts(&ref, name);
	} else if (aptix_conv_check_id(name) < 0) {
		die("invalid ref name '%s': it must be HEAD, a conversation "
		    "or start with 'refs/'", name);
	} else {
		aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, name);
		if (lookup && !ref_exists(repo, ref.ptr) &&
		    !has_reflog(repo, ref.ptr) && strlen(name) >= 4 &&
		    aptix_conv_resolve(conv, repo, name) == 0) {
			aptix_buf_clear(&ref);
			aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX,
					 conv);
		}
	}
	if (aptix_buf_oom(&ref))
		die("out of memory");
	return aptix_buf_detach(&ref);
}

static const char *abbrev(char out[APTIX_OID_HEXSZ + 1], aptix_odb *odb,
			  const aptix_oid *id)
{
	if (aptix_odb_abbrev(out, odb, id, DEFAULT_ABBREV) < 0)
		die_aptix();
	return out;
}

static int reflog_show(int argc, const char **argv, aptix_repo *repo,
		       const char *const *usage)
{
	int max = -1, no_pager = 0;
	const char *label;
	char *name, hex[APTIX_OID_HEXSZ + 1];
	struct entries l;
	aptix_ref head;
	size_t i;
	struct option options[] = {
		OPT_INTEGER('n', "max-count", &max, "show at most <n> "
			    "entries"),
		OPT_NO_PAGER(&no_pager),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, usage, 0);
	if (argc > 1)
		usage_with_options(usage, options);
	label = argc ? argv[0] : "HEAD";
	name = reflog_ref(repo, label, 1);
	read_reflog(&l, repo, name, max < 0 ? 0 : (size_t)max);
	if (!l.nr && !strcmp(name, "HEAD") &&
	    aptix_ref_read(&head, repo, "HEAD") == 0) {
		/* a symbolic HEAD with no history of its own: its target's */
		if (head.target) {
			aptix_oid id;
			char *target = NULL;

			aptix_ref_resolve(&id, &target, repo, "HEAD");
			if (target) {
				release_entries(&l);
				read_reflog(&l, repo, target, max < 0 ? 0 :
					    (size_t)max);
			}
			free(target);
		}
		aptix_ref_release(&head);
	}
	if (!l.nr && !ref_exists(repo, name))
		die("ref '%s' not found", name);
	if (!no_pager)
		setup_pager();
	for (i = 0; i < l.nr && max != 0; i++)
		printf("%s %s@{%zu}: %s\n",
		       abbrev(hex, aptix_repo_odb(repo), &l.e[i].new_id),
		       label, i, l.e[i].message);
	release_entries(&l);
	free(name);
	return 0;
}

static int reflog_exists(int argc, const char **argv, aptix_repo *repo)
{
	struct option options[] = {
		OPT_END()
	};
	char *name;
	int r;

	argc = parse_options(argc, argv, options, reflog_exists_usage, 0);
	if (argc != 1)
		usage_with_options(reflog_exists_usage, options);
	name = reflog_ref(repo, argv[0], 0);
	r = has_reflog(repo, name);
	free(name);
	return r ? 0 : 1;
}

int cmd_reflog(int argc, const char **argv, struct aptix_repo *repo)
{
	if (argc > 1 && !strcmp(argv[1], "show"))
		return reflog_show(argc - 1, argv + 1, repo,
				   reflog_show_usage);
	if (argc > 1 && !strcmp(argv[1], "exists"))
		return reflog_exists(argc - 1, argv + 1, repo);
	/* plain reflog is show: -h describes show's options too */
	return reflog_show(argc, argv, repo, reflog_usage);
}
