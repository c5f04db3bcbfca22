/*
 * porcelain/purge.c - remove what should never have been stored.
 *
 * Takes blobs by name, and/or a secret read from a file: every blob
 * holding the secret is purged, every turn, session, reflog entry and
 * index record holding it redacted (aptix/purge.h). What goes is listed
 * on stdout first; without --force nothing changes (as git clean), with
 * --dry-run the list is all. The store is compacted afterwards, so no
 * other aptix command may run meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const purge_usage[] = {
	"aptix purge (--dry-run | --force) [--reason <text>] "
	"[--secret-from-file <file>] [<object>...]",
	"aptix purge --compact",
	NULL
};

struct listing {
	int dry_run;
	size_t n;
};

static void on_item(const aptix_purge_item *it, void *payload)
{
	struct listing *l = payload;

	l->n++;
	switch (it->kind) {
	case APTIX_PURGE_BLOB:
		printf("purge blob %s\n", aptix_oid_hex(&it->id));
		break;
	case APTIX_PURGE_REDACT:
		printf("redact %s %s\n", it->type, aptix_oid_hex(&it->id));
		break;
	case APTIX_PURGE_RECORD:
		printf("redact %s record%s%s\n", it->table,
		       it->what ? " of " : "", it->what ? it->what : "");
		break;
	case APTIX_PURGE_RAG_PATH:
		printf("unindex ");
		cli_print_path(stdout, it->what);
		putchar('\n');
		break;
	case APTIX_PURGE_FILE:
		printf("drop %s\n", it->what);
		break;
	case APTIX_PURGE_FILE_LINES:
		printf("clean %s\n", it->what);
		break;
	}
}

/* The secret: the file's first line, without its line end. */
static void read_secret(aptix_buf *out, const char *path)
{
	char *nl;

	if (aptix_buf_read_file(out, path) < 0)
		die("cannot read '%s': %s", path, aptix_error_last()->message);
	if ((nl = memchr(out->ptr, '\n', out->len)))
		aptix_buf_truncate(out, (size_t)(nl - out->ptr));
	if (out->len && out->ptr[out->len - 1] == '\r')
		aptix_buf_truncate(out, out->len - 1);
	if (out->len < 8)
		die("the secret in '%s' is shorter than 8 bytes: it would "
		    "match too much", path);
}

int cmd_purge(int argc, const char **argv, struct aptix_repo *repo)
{
	aptix_purge_options o = APTIX_PURGE_OPTIONS_INIT;
	aptix_purge_stats st;
	aptix_config *cfg = NULL;
	aptix_buf secret = APTIX_BUF_INIT;
	aptix_oid *ids = NULL;
	struct listing l;
	const char *secret_file = NULL, *reason = NULL;
	int dry_run = 0, force = 0, compact = 0, i, r;
	struct option options[] = {
		OPT_BOOL('n', "dry-run", &dry_run, "list what would go, "
			 "change nothing"),
		OPT_BOOL('f', "force", &force, "purge for good"),
		OPT_STRING(0, "reason", &reason, "text", "why, recorded "
			   "with each purged object"),
		OPT_STRING(0, "secret-from-file", &secret_file, "file",
			   "purge every blob and redact every record holding "
			   "the first line of this file"),
		OPT_BOOL(0, "compact", &compact, "only compact the store"),
		OPT_END()
	};

	memset(&l, 0, sizeof(l));
	argc = parse_options(argc, argv, options, purge_usage, 0);
	if (compact) {
		if (argc || secret_file || dry_run)
			usage_with_options(purge_usage, options);
		if (aptix_purge_compact(repo) < 0)
			die_aptix();
		return 0;
	}
	if (dry_run && force)
		usage_msg_opt("--dry-run and --force exclude each other",
			      purge_usage, options);
	if (!argc && !secret_file)
		usage_with_options(purge_usage, options);
	if (argc && !(ids = calloc((size_t)argc, sizeof(*ids))))
		die("out of memory");
	for (i = 0; i < argc; i++)
		if (aptix_revparse(&ids[i], repo, argv[i]) < 0)
			die_aptix();
	if (secret_file) {
		read_secret(&secret, secret_file);
		o.secret = secret.ptr;
		o.secret_len = secret.len;
	}
	if (aptix_config_open(&cfg, repo) < 0)
		die_aptix();
	o.ids = ids;
	o.nids = (size_t)argc;
	o.reason = reason;
	o.dry_run = !force;
	o.http.base_url = aptix_config_get(cfg, "openai.base-url");
	o.http.api_key = getenv("OPENAI_API_KEY");
	o.qdrant_url = getenv("QDRANT_URL");
	o.qdrant_api_key = getenv("QDRANT_API_KEY");
	o.on_item = on_item;
	o.payload = &l;
	r = aptix_purge(&st, repo, cfg, &o);
	fflush(stdout);
	if (r < 0)
		die_aptix();
	if (!l.n)
		fprintf(stderr, "nothing to purge\n");
	else if (!force && !dry_run)
		die("nothing changed: purging cannot be undone; run again "
		    "with --force (--dry-run lists without this error)");
	else if (force)
		fprintf(stderr, "purged %zu blobs, redacted %zu objects and "
			"%zu records, dropped %zu paths from the index and "
			"%zu lines from chat_history; data.mdb: %llu -> %llu "
			"bytes\n", st.blobs, st.redacted, st.records,
			st.rag_paths, st.history_lines,
			(unsigned long long)st.disk_before,
			(unsigned long long)st.disk_after);
	aptix_config_free(cfg);
	aptix_buf_release(&secret);
	free(ids);
	return 0;
}
