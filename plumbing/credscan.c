/*
 * plumbing/credscan.c - run the credential detector on files, as aptix
 * runs it on what it would send, store or index (aptix/credscan.h).
 *
 * One line per credential found: "<file>:<line>: <rule>: <description>";
 * the credential itself is never printed. Exit 1 when one was found (as
 * gitleaks does), 0 when none, 128 when a file cannot be read. With
 * --count, one line of totals instead: files scanned, files holding a
 * credential, credentials found. The values of OPENAI_API_KEY and
 * QDRANT_API_KEY are looked for too, as aptix's commands do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const credscan_usage[] = {
	"aptix credscan [--count] [--stdin-paths] [--] <file>...",
	"aptix credscan --rules",
	NULL
};

struct totals {
	unsigned long files, dirty, found;
	int quiet;
	const char *path;
};

static int print_cb(const aptix_credential *c, void *payload)
{
	struct totals *t = payload;

	t->found++;
	if (!t->quiet)
		printf("%s:%zu: %s: %s\n", t->path, c->line, c->rule,
		       c->description);
	return 0;
}

static int scan_path(struct totals *t, const char *path, aptix_buf *data,
		     const char *const *keys)
{
	unsigned long before = t->found;
	struct stat st;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return 0;	/* directories, devices: nothing to scan */
	aptix_buf_clear(data);
	if (aptix_buf_read_file(data, path) < 0)
		return error("%s", aptix_error_last()->message);
	t->files++;
	t->path = path;
	aptix_credscan_foreach(data->ptr, data->len, keys, 2, print_cb, t);
	if (t->found > before)
		t->dirty++;
	return 0;
}

int cmd_credscan(int argc, const char **argv, struct aptix_repo *unused)
{
	struct totals t;
	aptix_buf data = APTIX_BUF_INIT;
	const char *keys[2];
	int rules = 0, count = 0, stdin_paths = 0, i, status = 0;
	char *line = NULL;
	size_t cap = 0, k;
	ssize_t n;
	struct option options[] = {
		OPT_BOOL(0, "rules", &rules, "list the rules"),
		OPT_BOOL(0, "count", &count, "print totals, not findings"),
		OPT_BOOL(0, "stdin-paths", &stdin_paths, "read file names "
			 "from stdin"),
		OPT_END()
	};

	(void)unused;
	memset(&t, 0, sizeof(t));
	argc = parse_options(argc, argv, options, credscan_usage, 0);
	if (rules) {
		if (argc || count || stdin_paths)
			usage_with_options(credscan_usage, options);
		for (k = 0; k < aptix_credscan_rule_count(); k++) {
			const char *id, *desc;

			aptix_credscan_rule(&id, &desc, k);
			printf("%s\t%s\n", id, desc);
		}
		return 0;
	}
	if (!argc && !stdin_paths)
		usage_with_options(credscan_usage, options);
	keys[0] = getenv("OPENAI_API_KEY");
	keys[1] = getenv("QDRANT_API_KEY");
	t.quiet = count;
	for (i = 0; i < argc; i++)
		if (scan_path(&t, argv[i], &data, keys) < 0)
			status = 128;
	while (stdin_paths && (n = getline(&line, &cap, stdin)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (n && scan_path(&t, line, &data, keys) < 0)
			status = 128;
	}
	if (count)
		printf("%lu files, %lu holding a credential, %lu "
		       "credentials\n", t.files, t.dirty, t.found);
	free(line);
	aptix_buf_release(&data);
	if (status)
		return status;
	return t.found ? 1 : 0;
}
