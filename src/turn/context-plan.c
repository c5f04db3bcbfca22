/*
 * src/turn/context-plan.c - what a turn sends besides the instruction, and
 * what it may leave out because the model has it already through
 * previous_response_id (see aptix/context.h): the public entry points
 * over src/index/chain.c, and the rendering of the context.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "index/chain.h"
#include "aptix/context.h"

int aptix_chain_state_of(aptix_chain_state *out, aptix_repo *repo,
			 const aptix_oid *parent, int64_t now)
{
	struct aptix__chain c;
	int r;

	memset(out, 0, sizeof(*out));
	if (!parent)
		return 0;
	aptix__chain_init(&c, repo, parent);
	r = aptix__chain_state(out, &c, now);
	aptix__chain_release(&c);
	return r;
}

int aptix_context_plan(aptix_repo *repo, const aptix_oid *parent,
		       int restart, aptix_file_set *files,
		       aptix_chunk_set *chunks)
{
	struct aptix__chain c;
	int r;

	aptix__chain_init(&c, repo, parent);
	r = aptix__chain_plan(&c, restart, files, chunks);
	aptix__chain_release(&c);
	return r;
}

/* At most this many files left out are named one by one. */
#define OVER_WARN_MAX 10

static int whole(const aptix_file_set *files, const char *path)
{
	size_t i;

	for (i = 0; files && i < files->n; i++)
		if (!strcmp(files->v[i].path, path))
			return files->v[i].action == APTIX_FILE_SEND ||
				files->v[i].action == APTIX_FILE_UNCHANGED;
	return 0;
}

int aptix_context_limit(aptix_file_set *files, aptix_chunk_set *chunks,
			long max_total)
{
	uint64_t used = 0, over = 0;
	size_t i, nover = 0;
	int r = 0;

	for (i = 0; files && max_total > 0 && i < files->n; i++) {
		aptix_active_file *f = &files->v[i];

		if (f->action != APTIX_FILE_SEND)
			continue;
		if (used + (uint64_t)f->size <= (uint64_t)max_total) {
			used += (uint64_t)f->size;
			continue;
		}
		f->action = APTIX_FILE_OVER_BUDGET;
		if (++nover > OVER_WARN_MAX)
			over += (uint64_t)f->size;	/* not named */
		else if (r == 0)
			r = aptix_file_set_warn(files, "active file '%s' (%ld "
						"bytes) left out: over the "
						"turn's %ld bytes of files "
						"(files.max-total)", f->path,
						f->size, max_total);
	}
	if (r == 0 && nover > OVER_WARN_MAX)
		r = aptix_file_set_warn(files, "%lu more active files (%llu "
					"bytes) left out (files.max-total)",
					(unsigned long)(nover - OVER_WARN_MAX),
					(unsigned long long)over);
	for (i = 0; chunks && i < chunks->n; i++)
		if (chunks->v[i].sent && whole(files, chunks->v[i].path))
			chunks->v[i].sent = 0;
	return r;
}

/* A fence longer than any run of backticks in the text. */
static void fence(char *out, size_t max, const char *text, size_t len)
{
	size_t i, run = 0, longest = 0, n;

	for (i = 0; i < len; i++) {
		run = text[i] == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	n = longest < 3 ? 3 : longest + 1;
	if (n >= max)
		n = max - 1;
	memset(out, '`', n);
	out[n] = '\0';
}

static const char *lang_of(const char *path)
{
	static const struct { const char *ext, *lang; } map[] = {
		{ ".c", "c" }, { ".h", "c" }, { ".cc", "cpp" },
		{ ".cpp", "cpp" }, { ".hpp", "cpp" }, { ".py", "python" },
		{ ".js", "javascript" }, { ".ts", "typescript" },
		{ ".go", "go" }, { ".rs", "rust" }, { ".java", "java" },
		{ ".cs", "csharp" }, { ".rb", "ruby" }, { ".sh", "sh" },
		{ ".md", "markdown" }, { ".json", "json" },
		{ ".yml", "yaml" }, { ".yaml", "yaml" },
		{ "Makefile", "make" },
	};
	size_t i, n = strlen(path);

	for (i = 0; i < ARRAY_SIZE(map); i++) {
		size_t m = strlen(map[i].ext);

		if (n >= m && !strcmp(path + n - m, map[i].ext))
			return map[i].lang;
	}
	return "";
}

static void block(aptix_buf *out, const char *lang, const char *text,
		  size_t len)
{
	char f[64];

	fence(f, sizeof(f), text, len);
	aptix_buf_printf(out, "%s%s\n", f, lang);
	aptix_buf_put(out, text, len);
	if (len && text[len - 1] != '\n')
		aptix_buf_putc(out, '\n');
	aptix_buf_printf(out, "%s\n\n", f);
}

static void list_paths(aptix_buf *out, const aptix_file_set *files,
		       aptix_file_action action, const char *head)
{
	size_t i;
	int any = 0;

	for (i = 0; i < files->n; i++) {
		if (files->v[i].action != action)
			continue;
		aptix_buf_puts(out, any ? ", " : head);
		aptix_buf_put_path(out, files->v[i].path);
		any = 1;
	}
	if (any)
		aptix_buf_puts(out, "\n");
}

int aptix_context_render(aptix_buf *out, const aptix_file_set *files,
			 const aptix_chunk_set *chunks)
{
	size_t i, start = out->len;

	for (i = 0; files && i < files->n; i++) {
		const aptix_active_file *f = &files->v[i];

		if (f->action != APTIX_FILE_SEND)
			continue;
		aptix_buf_puts(out, "Active file ");
		aptix_buf_put_path(out, f->path);
		aptix_buf_printf(out, " (%ld bytes, sha256 %.16s), as it is "
				 "now in the working copy:\n", f->size,
				 f->sha256);
		block(out, lang_of(f->path), f->content.ptr, f->content.len);
	}
	if (files) {
		list_paths(out, files, APTIX_FILE_UNCHANGED, "Active files "
			   "unchanged since you last saw them: ");
		list_paths(out, files, APTIX_FILE_TOO_LARGE, "Active files "
			   "too large to send: ");
		list_paths(out, files, APTIX_FILE_BINARY, "Active binary "
			   "files, not sent: ");
		list_paths(out, files, APTIX_FILE_OVER_BUDGET, "Active files "
			   "left out (over the context budget): ");
		list_paths(out, files, APTIX_FILE_WITHHELD, "Active files "
			   "withheld (they hold credentials): ");
	}
	for (i = 0; chunks && i < chunks->n; i++) {
		const aptix_rag_chunk *c = &chunks->v[i];

		if (!c->sent)
			continue;
		aptix_buf_puts(out, "Retrieved from ");
		aptix_buf_put_path(out, c->path);
		aptix_buf_printf(out, " lines %ld-%ld (score %.3f):\n",
				 c->start_line, c->end_line, c->score);
		block(out, lang_of(c->path), c->text.ptr, c->text.len);
	}
	if (out->len > start)
		aptix_buf_puts(out, "Instruction:\n");
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}
