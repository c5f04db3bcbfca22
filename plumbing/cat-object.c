/*
 * plumbing/cat-object.c - show objects: their content, type or size,
 * one at a time or in batches (git cat-file's stdin protocol).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "pretty.h"

static const char *const cat_object_usage[] = {
	"aptix cat-object (-t | -s | -e | -p) <object>",
	"aptix cat-object <type> <object>",
	"aptix cat-object (--batch | --batch-check) [--batch-all-objects]",
	NULL
};

struct batch {
	struct aptix_repo *repo;
	int contents;
	aptix_buf data;
};

static int batch_one(struct batch *b, const aptix_oid *id, const char *name)
{
	aptix_odb *odb = aptix_repo_odb(b->repo);
	char hex[APTIX_OID_HEXSZ + 1];
	aptix_otype type;
	size_t size;
	int r;

	if (b->contents) {
		r = aptix_odb_read(&b->data, &type, odb, id, 0);
		size = b->data.len;
	} else {
		r = aptix_odb_read_header(&size, &type, odb, id);
	}
	if (r == APTIX_ENOTFOUND) {
		printf("%s missing\n", name);
		return 0;
	}
	if (r < 0) {
		/* a damaged object is named, and the batch goes on */
		fflush(stdout);
		error("%s", aptix_error_last()->message);
		printf("%s corrupt\n", name);
		return 0;
	}
	printf("%s %s %zu\n", aptix_oid_tostr(hex, id),
	       aptix_otype_name(type), size);
	if (b->contents) {
		fwrite(b->data.ptr, 1, b->data.len, stdout);
		putchar('\n');
	}
	return 0;
}

static int batch_all_cb(const aptix_oid *id, void *payload)
{
	return batch_one(payload, id, aptix_oid_hex(id));
}

static int run_batch(struct batch *b, int all)
{
	static char obuf[1 << 16];
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	aptix_oid id;
	int r;

	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	if (all) {
		if (aptix_odb_foreach(aptix_repo_odb(b->repo), batch_all_cb,
				      b) < 0)
			return error_aptix();
		return 0;
	}
	while ((n = getline(&line, &cap, stdin)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		r = aptix_revparse(&id, b->repo, line);
		if (r == APTIX_EAMBIGUOUS)
			printf("%s ambiguous\n", line);
		else if (r < 0)
			printf("%s missing\n", line);
		else
			batch_one(b, &id, line);
	}
	free(line);
	return 0;
}

int cmd_cat_object(int argc, const char **argv, struct aptix_repo *repo)
{
	int mode = 0, batch = 0, batch_check = 0, all = 0, status = 0, r;
	aptix_buf data = APTIX_BUF_INIT;
	const char *name;
	aptix_otype type, want = APTIX_OBJ_BAD;
	aptix_oid id;
	size_t size;
	struct option options[] = {
		OPT_SET_INT('t', NULL, &mode, "show the object type", 't'),
		OPT_SET_INT('s', NULL, &mode, "show the object size", 's'),
		OPT_SET_INT('e', NULL, &mode, "exit with zero when the "
			    "object exists and is valid", 'e'),
		OPT_SET_INT('p', NULL, &mode, "pretty-print the object",
			    'p'),
		OPT_BOOL(0, "batch", &batch, "show type, size and content "
			 "of objects named on stdin"),
		OPT_BOOL(0, "batch-check", &batch_check, "show type and size "
			 "of objects named on stdin"),
		OPT_BOOL(0, "batch-all-objects", &all, "with --batch or "
			 "--batch-check: every object in the store"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, cat_object_usage, 0);
	if (batch || batch_check) {
		struct batch b;

		if (argc || mode || (batch && batch_check))
			usage_with_options(cat_object_usage, options);
		b.repo = repo;
		b.contents = batch;
		aptix_buf_init(&b.data, 0);
		status = run_batch(&b, all) < 0 ? 128 : 0;
		aptix_buf_release(&b.data);
		return status;
	}
	if (all)
		usage_msg_opt("--batch-all-objects needs --batch or "
			      "--batch-check", cat_object_usage, options);
	if (!mode && argc == 2) {
		want = aptix_otype_from_name(argv[0]);
		if (want == APTIX_OBJ_BAD)
			die("invalid object type '%s'", argv[0]);
		name = argv[1];
	} else if (mode && argc == 1) {
		name = argv[0];
	} else {
		usage_with_options(cat_object_usage, options);
	}
	r = aptix_revparse(&id, repo, name);
	if (r < 0) {
		if (mode == 'e')
			return 1;
		die_aptix();
	}
	if (mode == 't' || mode == 's') {
		if (aptix_odb_read_header(&size, &type, aptix_repo_odb(repo),
					  &id) < 0)
			die_aptix();
		if (mode == 't')
			printf("%s\n", aptix_otype_name(type));
		else
			printf("%zu\n", size);
		return 0;
	}
	r = aptix_odb_read(&data, &type, aptix_repo_odb(repo), &id,
			   mode == 'e' ? APTIX_ODB_READ_VERIFY : 0);
	if (mode == 'e') {
		if (r == 0)
			r = aptix_object_validate(type, data.ptr, data.len);
		aptix_buf_release(&data);
		if (r == APTIX_ENOTFOUND)
			return 1;
		if (r < 0) {
			error_aptix();
			return 1;
		}
		return 0;
	}
	if (r < 0)
		die_aptix();
	if (want != APTIX_OBJ_BAD && type != want)
		die("object '%s' is a %s, not a %s", aptix_oid_hex(&id),
		    aptix_otype_name(type), aptix_otype_name(want));
	if (mode == 'p') {
		if (pretty_print_object(stdout, type, &data) < 0)
			die_aptix();
	} else {
		fwrite(data.ptr, 1, data.len, stdout);
	}
	aptix_buf_release(&data);
	return status;
}
