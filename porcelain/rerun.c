/*
 * porcelain/rerun.c - aptix rerun: the same instruction again, as a new
 * turn whose parent is the session's parent: a sibling branch; the old
 * turn stays as it was (seed 001, DD-006).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aptix.h>
#include <aptix/context.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "turn-cli.h"
#include "view.h"

static const char *const rerun_usage[] = {
	"aptix rerun [--model <model>] [--no-stream] [--dry-run] [--json] "
	"[-q] [--file <path>...] [--files-from <file>] [--workspace <id>] "
	"[--no-files] [--no-rag] [--recorded-context] <session>",
	"",
	"With --recorded-context, the context is the one the turn recorded",
	"(its files and chunks, from the store), not today's working copy.",
	NULL
};

static char *xstrdup_or_null(const char *s)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		die("out of memory");
	return d;
}

/*
 * The context the session's turn recorded, from its blobs: each file
 * with its recorded content, each chunk with its recorded snippet. The
 * request is then planned as it was: same files, same chunks, on the
 * same parent.
 */
static void recorded_context(aptix_file_set *files, aptix_chunk_set *chunks,
			     aptix_repo *repo, const aptix_oid *session)
{
	aptix_session s;
	aptix_turn t;
	size_t i;

	view_load_session(&s, repo, session);
	view_load_turn(&t, repo, &s.turn);
	files->v = calloc(t.nfiles ? t.nfiles : 1, sizeof(*files->v));
	chunks->v = calloc(t.nchunks ? t.nchunks : 1, sizeof(*chunks->v));
	if (!files->v || !chunks->v)
		die("out of memory");
	for (i = 0; i < t.nfiles; i++) {
		const aptix_file_ref *f = &t.files[i];
		aptix_active_file *a = &files->v[files->n];

		if (!f->has_content)
			continue;	/* too large, binary: nothing was sent */
		a->path = xstrdup_or_null(f->path);
		snprintf(a->sha256, sizeof(a->sha256), "%s",
			 f->sha256 ? f->sha256 : "");
		a->size = f->size;
		a->touched = f->touched;
		view_read_blob(&a->content, repo, &f->content);
		files->n++;
	}
	for (i = 0; i < t.nchunks; i++) {
		const aptix_chunk_ref *c = &t.chunks[i];
		aptix_rag_chunk *a = &chunks->v[chunks->n];

		if (!c->sent || aptix_oid_is_zero(&c->snippet))
			continue;
		a->chunk_id = xstrdup_or_null(c->chunk_id);
		a->path = xstrdup_or_null(c->path);
		a->start_line = c->start_line;
		a->end_line = c->end_line;
		snprintf(a->content_hash, sizeof(a->content_hash), "%s",
			 c->content_hash ? c->content_hash : "");
		a->score = (double)c->score / 1e6;
		view_read_blob(&a->text, repo, &c->snippet);
		chunks->n++;
	}
	aptix_turn_release(&t);
	aptix_session_release(&s);
}

int cmd_rerun(int argc, const char **argv, struct aptix_repo *repo)
{
	struct turn_cli c = { 0 };
	aptix_file_set files;
	aptix_chunk_set chunks;
	aptix_oid from;
	int rc, recorded = 0;
	struct option options[] = {
		TURN_RUN_OPTIONS(c),
		TURN_CONTEXT_OPTIONS(c),
		OPT_BOOL(0, "recorded-context", &recorded, "send the files "
			 "and chunks the turn recorded, not today's"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, rerun_usage, 0);
	if (argc != 1)
		usage_with_options(rerun_usage, options);
	view_resolve_session(&from, repo, argv[0]);
	aptix_file_set_init(&files);
	aptix_chunk_set_init(&chunks);
	if (recorded) {
		if (c.files.nr || c.files_from || c.no_files || c.no_rag)
			usage_msg_opt("--recorded-context takes no context "
				      "option", rerun_usage, options);
		recorded_context(&files, &chunks, repo, &from);
		c.given_files = &files;
		c.given_chunks = &chunks;
	}
	rc = turn_cli_run(repo, APTIX_RUN_RERUN, &from, NULL, &c);
	aptix_file_set_release(&files);
	aptix_chunk_set_release(&chunks);
	aptix_strlist_release(&c.files);
	return rc;
}
