/*
 * plumbing/rag-query.c - aptix rag-query: the chunks retrieval would
 * give a turn for a text, with the configured backend and filters.
 *
 * Output, one line per chunk, best first:
 *	<score> <path>:<start>-<end> <chunk-id> <sha256-short>
 * (score with 4 decimals, the first 12 hex digits of the SHA-256 of the
 * chunk text), or with --json one object:
 *	{"backend", "query", "chunks": [{"chunk_id", "repo", "path",
 *	 "start_line", "end_line", "language", "content_hash", "score",
 *	 "text"}], "warnings": [...]}
 * Warnings (a backend down, no index) also go to stderr. The exit code
 * is 0 even when nothing is found; 128 when rag.required is set and the
 * backend fails.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <aptix.h>
#include <aptix/config.h>
#include <aptix/rag.h>

#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const rag_query_usage[] = {
	"aptix rag-query [--json] [-k <n>] [--path <prefix>] "
	"[--language <language>] <text>...",
	"",
	"Prints the chunks retrieval finds for the text: score, path and",
	"lines, chunk id and short SHA-256. Paths are relative to the",
	"workspace root; --path may be repeated.",
	NULL
};

static void print_json(const aptix_chunk_set *set, const char *backend,
		       const char *query)
{
	json_t *o = json_object(), *chunks = json_array(), *w = json_array();
	char *s;
	size_t i;

	if (!o || !chunks || !w)
		die("out of memory");
	json_object_set_new(o, "backend", json_string(backend));
	json_object_set_new(o, "query", json_string(query));
	for (i = 0; i < set->n; i++) {
		const aptix_rag_chunk *c = &set->v[i];
		json_t *j = json_pack("{s:s,s:s,s:s,s:I,s:I,s:s,s:s,s:f,s:s%}",
				      "chunk_id", c->chunk_id,
				      "repo", c->repo, "path", c->path,
				      "start_line", (json_int_t)c->start_line,
				      "end_line", (json_int_t)c->end_line,
				      "language", c->language,
				      "content_hash", c->content_hash,
				      "score", c->score,
				      "text", c->text.ptr, c->text.len);

		if (!j || json_array_append_new(chunks, j))
			die("out of memory");
	}
	for (i = 0; i < set->nwarnings; i++)
		json_array_append_new(w, json_string(set->warnings[i]));
	json_object_set_new(o, "chunks", chunks);
	json_object_set_new(o, "warnings", w);
	if (!(s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER)))
		die("out of memory");
	printf("%s\n", s);
	free(s);
	json_decref(o);
}

int cmd_rag_query(int argc, const char **argv, struct aptix_repo *repo)
{
	aptix_rag_query q = APTIX_RAG_QUERY_INIT;
	aptix_chunk_set set;
	aptix_config *cfg = NULL;
	aptix_strlist paths = APTIX_STRLIST_INIT;
	aptix_buf text = APTIX_BUF_INIT;
	const char *language = NULL, *backend;
	int json = 0, k = 0, i;
	size_t j;
	struct option options[] = {
		OPT_BOOL(0, "json", &json, "print JSON"),
		OPT_INTEGER('k', "top-k", &k,
			    "how many chunks at most (default: rag.top-k)"),
		OPT_STRING_LIST(0, "path", &paths, "prefix",
				"only chunks of files under this path"),
		OPT_STRING(0, "language", &language, "language",
			   "only chunks of this language (c, python...)"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, rag_query_usage, 0);
	if (argc < 1)
		usage_with_options(rag_query_usage, options);
	if (k < 0)
		usage_msg_opt("-k must be positive", rag_query_usage,
			      options);
	for (i = 0; i < argc; i++) {
		if (i)
			aptix_buf_putc(&text, ' ');
		aptix_buf_puts(&text, argv[i]);
	}
	if (aptix_buf_oom(&text))
		die("out of memory");
	if (aptix_config_open(&cfg, repo) < 0)
		die_aptix();
	if (aptix_config_string(&backend, cfg, "rag.backend") < 0)
		die_aptix();

	q.query = text.ptr;
	q.top_k = k;
	q.language = language;
	if (paths.nr) {
		q.path_prefixes = (const char *const *)paths.items;
		q.nprefixes = paths.nr;
	}
	q.http.base_url = aptix_config_get(cfg, "openai.base-url");
	q.http.api_key = getenv("OPENAI_API_KEY");
	q.qdrant_url = getenv("QDRANT_URL");
	q.qdrant_api_key = getenv("QDRANT_API_KEY");

	aptix_chunk_set_init(&set);
	if (aptix_rag_retrieve(&set, repo, cfg, &q) < 0)
		die_aptix();
	if (!set.n && !set.nwarnings && !strcmp(backend, "local")) {
		size_t files = 0, chunks = 0;

		if (aptix_rag_index_count(&files, &chunks, repo, cfg,
					  NULL) == 0 && !chunks)
			aptix_chunk_set_warn(&set, "the retrieval index is "
					     "empty: run 'aptix index'");
	}
	for (j = 0; j < set.nwarnings; j++)
		warning("%s", set.warnings[j]);
	if (json) {
		print_json(&set, backend, text.ptr);
	} else {
		for (j = 0; j < set.n; j++) {
			const aptix_rag_chunk *c = &set.v[j];

			printf("%.4f ", c->score);
			cli_print_path(stdout, c->path);
			printf(":%ld-%ld %s %.12s\n", c->start_line,
			       c->end_line, c->chunk_id, c->content_hash);
		}
	}
	aptix_chunk_set_release(&set);
	aptix_strlist_release(&paths);
	aptix_buf_release(&text);
	aptix_config_free(cfg);
	return 0;
}
