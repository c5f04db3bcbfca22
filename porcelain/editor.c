/*
 * porcelain/editor.c - an instruction typed in the user's editor (see
 * editor.h). The editor runs through sh -c, so a value such as
 * "code --wait" works, with the terminal and with SIGINT and SIGQUIT
 * left to it while aptix waits (git's launch_editor).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "editor.h"

static const char help[] =
	"\n"
	"# Write the instruction for the next turn above. Lines starting\n"
	"# with '#' are left out; an empty instruction aborts the turn.\n";

const char *editor_program(const aptix_config *cfg)
{
	const char *e;

	if ((e = getenv("APTIX_EDITOR")) && *e)
		return e;
	if (cfg && (e = aptix_config_get(cfg, "core.editor")) && *e)
		return e;
	if ((e = getenv("VISUAL")) && *e)
		return e;
	if ((e = getenv("EDITOR")) && *e)
		return e;
	return "vi";
}

/* Run "editor path" as git runs an editor; 0 when it exited 0. */
static int launch(const char *editor, const char *path)
{
	const char *argv[] = { editor, path, NULL };
	aptix_process p = APTIX_PROCESS_INIT;

	p.argv = argv;
	p.shell = 1;	/* the editor may hold arguments */
	return cli_run_foreground(&p) == 0 ? 0 : -1;
}

/* Keep what is not a '#' line; no blank lines at either end. */
static void strip(aptix_buf *out, const aptix_buf *in)
{
	size_t i = 0, eol, end;

	aptix_buf_clear(out);
	while (i < in->len) {
		eol = i;
		while (eol < in->len && in->ptr[eol] != '\n')
			eol++;
		if (in->ptr[i] != '#' && (out->len || eol > i))
			aptix_buf_put(out, in->ptr + i,
				      eol - i + (eol < in->len));
		i = eol + 1;
	}
	end = out->len;
	while (end && (out->ptr[end - 1] == '\n' ||
		       out->ptr[end - 1] == ' ' || out->ptr[end - 1] == '\t' ||
		       out->ptr[end - 1] == '\r'))
		end--;
	aptix_buf_truncate(out, end);
}

void editor_read_instruction(aptix_buf *out)
{
	const char *tmpdir = getenv("TMPDIR");
	aptix_buf path = APTIX_BUF_INIT, text = APTIX_BUF_INIT;
	aptix_repo *repo = NULL;
	aptix_config *cfg = NULL;
	char *editor;
	int fd, r;

	/* core.editor: the store's config when there is one */
	if (aptix_repo_find(&repo, ".") < 0 ||
	    aptix_config_open(&cfg, repo) < 0) {
		aptix_error_clear();
		if (aptix_config_open(&cfg, NULL) < 0)
			aptix_error_clear();
	}
	editor = strdup(editor_program(cfg));
	aptix_config_free(cfg);
	aptix_repo_free(repo);
	if (!editor)
		die("out of memory");

	aptix_buf_printf(&path, "%s/aptix-instruction-XXXXXX.md",
			 tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (aptix_buf_oom(&path))
		die("out of memory");
	fd = mkstemps(path.ptr, 3);
	if (fd < 0)
		die_errno("could not create '%s'", path.ptr);
	r = write(fd, help, sizeof(help) - 1) == (ssize_t)(sizeof(help) - 1);
	if (close(fd) || !r) {
		unlink(path.ptr);
		die_errno("could not write '%s'", path.ptr);
	}
	if (launch(editor, path.ptr) < 0) {
		unlink(path.ptr);
		die("there was a problem with the editor '%s'", editor);
	}
	r = aptix_buf_read_file(&text, path.ptr);
	unlink(path.ptr);
	if (r < 0)
		die_aptix();
	strip(out, &text);
	aptix_buf_release(&text);
	aptix_buf_release(&path);
	free(editor);
	if (aptix_buf_oom(out))
		die("out of memory");
	if (!out->len) {
		fprintf(stderr, "Aborting: the instruction is empty.\n");
		exit(1);
	}
}
