/*
 * plumbing/hash-object.c - compute object ids, optionally store objects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const hash_object_usage[] = {
	"aptix hash-object [-t <type>] [-w] [--literally] [--stdin] "
	"[--] <file>...",
	"aptix hash-object [-t <type>] [-w] [--literally] --stdin-paths",
	NULL
};

/* Objects per write transaction in --stdin-paths mode. */
#define BATCH_OBJECTS 4096
#define BATCH_BYTES ((size_t)64 << 20)

struct hasher {
	aptix_otype type;
	int write, literally;
	struct aptix_repo *repo;
	aptix_txn *tx;
	size_t batch_bytes;
	aptix_buf pending;	/* ids to print once committed */
};

static int flush_batch(struct hasher *h)
{
	if (h->tx && aptix_txn_commit(h->tx) < 0)
		return error_aptix();
	h->batch_bytes = 0;
	fwrite(h->pending.ptr, 1, h->pending.len, stdout);
	aptix_buf_clear(&h->pending);
	return 0;
}

static int hash_one(struct hasher *h, const aptix_buf *data,
		    const char *what)
{
	char hex[APTIX_OID_HEXSZ + 1];
	aptix_oid id;
	int r;

	if (!h->literally &&
	    aptix_object_validate(h->type, data->ptr, data->len) < 0)
		return error("%s: %s", what, aptix_error_last()->message);
	if (h->write)
		r = aptix_txn_write_object(&id, h->tx, h->type, data->ptr,
					   data->len);
	else
		r = aptix_object_hash(&id, h->type, data->ptr, data->len);
	if (r < 0)
		return error("%s: %s", what, aptix_error_last()->message);
	aptix_oid_tostr(hex, &id);
	aptix_buf_puts(&h->pending, hex);
	aptix_buf_putc(&h->pending, '\n');
	h->batch_bytes += data->len;
	if (!h->write || aptix_txn_size(h->tx) >= BATCH_OBJECTS ||
	    h->batch_bytes >= BATCH_BYTES)
		return flush_batch(h);
	return 0;
}

static int hash_path(struct hasher *h, const char *path, aptix_buf *data)
{
	aptix_buf_clear(data);
	if (aptix_buf_read_file(data, path) < 0)
		return error("%s", aptix_error_last()->message);
	return hash_one(h, data, path);
}

int cmd_hash_object(int argc, const char **argv, struct aptix_repo *unused)
{
	struct hasher h;
	const char *type = "blob";
	aptix_buf data = APTIX_BUF_INIT;
	int use_stdin = 0, stdin_paths = 0, i, status = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	struct option options[] = {
		OPT_STRING('t', NULL, &type, "type", "object type: blob, "
			   "turn, session, tool-call or tool-result"),
		OPT_BOOL('w', NULL, &h.write, "write the object into the "
			 "store"),
		OPT_BOOL(0, "stdin", &use_stdin, "read the object from "
			 "stdin"),
		OPT_BOOL(0, "stdin-paths", &stdin_paths, "read file names "
			 "from stdin"),
		OPT_BOOL(0, "literally", &h.literally, "store turns and "
			 "sessions without checking them"),
		OPT_END()
	};

	(void)unused;
	memset(&h, 0, sizeof(h));
	aptix_buf_init(&h.pending, 0);
	argc = parse_options(argc, argv, options, hash_object_usage, 0);
	h.type = aptix_otype_from_name(type);
	if (h.type == APTIX_OBJ_BAD)
		die("invalid object type '%s'", type);
	if (stdin_paths && (use_stdin || argc))
		usage_msg_opt("--stdin-paths takes no file arguments",
			      hash_object_usage, options);
	if (!stdin_paths && !use_stdin && !argc)
		usage_with_options(hash_object_usage, options);
	if (h.write) {
		if (aptix_repo_find(&h.repo, ".") < 0 ||
		    aptix_txn_new(&h.tx, h.repo) < 0)
			die_aptix();
	}
	if (use_stdin) {
		if (aptix_buf_read_fd(&data, 0) < 0)
			die_aptix();
		if (hash_one(&h, &data, "<stdin>") < 0)
			status = 128;
	}
	for (i = 0; i < argc && !status; i++)
		if (hash_path(&h, argv[i], &data) < 0)
			status = 128;
	if (stdin_paths) {
		while (!status && (n = getline(&line, &cap, stdin)) > 0) {
			if (line[n - 1] == '\n')
				line[--n] = '\0';
			if (hash_path(&h, line, &data) < 0)
				status = 128;
		}
	}
	if (flush_batch(&h) < 0)
		status = 128;
	free(line);
	aptix_buf_release(&data);
	aptix_buf_release(&h.pending);
	aptix_txn_free(h.tx);
	aptix_repo_free(h.repo);
	return status;
}
