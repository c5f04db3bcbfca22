/*
 * porcelain/init.c - aptix init: create an empty store, or move a .aptix
 * store out of a git work tree into its git directory (--migrate).
 *
 * In a git work tree the store lives in the common git directory, where
 * `git clean -fdx` never deletes it and `git add -A` never stages it,
 * and which every `git worktree` of the repository shares; elsewhere it
 * is <directory>/.aptix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const init_usage[] = {
	"aptix init [-q | --quiet] [<directory>]",
	"aptix init --backend <url> [--org <org>] [--user <user>] [<directory>]",
	"aptix init --migrate [<directory>]",
	"",
	"Without <directory>, APTIX_DIR names the store to create, as",
	"GIT_DIR does for git init; else ./.aptix.",
	"With --backend postgresql://..., the store keeps its data in that",
	"database (its schema made by an administrator: contrib/postgresql/",
	"schema.sql); the store's directory holds only its config. The URL",
	"is stored and must not hold a password (use ~/.pgpass, PGSERVICE).",
	"With s3.url and s3.bucket set (aptix -c s3.url=... init ...), its",
	"objects of s3.threshold bytes or more go to that S3 bucket.",
	NULL
};

static int migrate(const char *dir, int quiet)
{
	aptix_buf to = APTIX_BUF_INIT;

	if (aptix_repo_migrate(&to, dir) < 0)
		die_aptix();
	if (!quiet)
		printf("Moved the aptix store to %s/\n", to.ptr);
	aptix_buf_release(&to);
	return 0;
}

/* --backend: a URL (postgresql://, postgres://) or a backend's name. */
static void parse_backend(aptix_repo_init_options *o, const char *backend)
{
	if (!backend)
		return;
	if (!strncmp(backend, "postgresql://", 13) ||
	    !strncmp(backend, "postgres://", 11)) {
		o->storage = "postgresql";
		o->url = backend;
	} else if (strstr(backend, "://")) {
		die("unknown kind of URL for --backend (postgresql://...)");
	} else {
		o->storage = backend;
	}
}

/*
 * A store on PostgreSQL keeps its large objects on S3 when the config
 * (the user's file, -c) says where: s3.url, s3.bucket, s3.region,
 * s3.threshold. init writes them into the shared store.
 */
static void read_s3(aptix_config **cfg, aptix_repo_init_options *o)
{
	long thr = 0;

	if (aptix_config_open_dir(cfg, NULL) < 0)
		die_aptix();
	if (!(o->s3_url = aptix_config_get(*cfg, "s3.url")))
		return;
	if (!o->storage || strcmp(o->storage, "postgresql")) {
		o->s3_url = NULL;	/* a local store keeps its objects */
		return;
	}
	o->s3_bucket = aptix_config_get(*cfg, "s3.bucket");
	o->s3_region = aptix_config_get(*cfg, "s3.region");
	if (!o->s3_bucket)
		die("s3.url needs s3.bucket");
	if (aptix_config_long(&thr, *cfg, "s3.threshold") < 0)
		die_aptix();
	o->s3_threshold = (size_t)thr;
}

int cmd_init(int argc, const char **argv, struct aptix_repo *unused)
{
	struct aptix_repo *repo = NULL;
	aptix_repo_init_options o = APTIX_REPO_INIT_OPTIONS_INIT;
	int quiet = 0, existed = 0, move = 0;
	const char *dir = ".", *to, *env, *backend = NULL;
	aptix_config *cfg = NULL;
	struct option options[] = {
		OPT__QUIET(&quiet, "report only errors"),
		OPT_BOOL(0, "migrate", &move, "move the .aptix store of a "
			 "git work tree into its git directory"),
		OPT_STRING(0, "backend", &backend, "url",
			   "keep the data there: postgresql://... (or lmdb)"),
		OPT_STRING(0, "org", &o.org, "org",
			   "the org whose rows a shared store sees "
			   "(default: default)"),
		OPT_STRING(0, "user", &o.user, "user",
			   "whose private conversations a shared store "
			   "shows (default: the role it logs in as)"),
		OPT_END()
	};

	(void)unused;
	argc = parse_options(argc, argv, options, init_usage, 0);
	if (argc > 1)
		usage_with_options(init_usage, options);
	if (argc == 1)
		dir = argv[0];
	if (move)
		return migrate(dir, quiet);
	parse_backend(&o, backend);
	read_s3(&cfg, &o);
	env = getenv("APTIX_DIR");
	if (aptix_repo_init_ext(&repo, dir, !argc && env && *env ? env : NULL,
				&o, &existed) < 0)
		die_aptix();
	if (!quiet)
		printf("%s aptix store in %s/\n",
		       existed ? "Reinitialized existing" :
		       "Initialized empty", aptix_repo_path(repo));
	if ((to = aptix_repo_misplaced(repo))) {
		warning("the store is inside the git work tree, where 'git "
			"clean -fdx' deletes it and 'git add -A' stages it");
		fprintf(stderr, "hint: move it to '%s' with 'aptix init "
			"--migrate'\n", to);
	}
	aptix_repo_free(repo);
	aptix_config_free(cfg);
	return 0;
}
