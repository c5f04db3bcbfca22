/*
 * src/import/lines.c - the lines of a source file, plain or compressed
 * with zstd (a name ending in ".zst": Codex can write its rollouts as
 * rollout-*.jsonl.zst). A zstd file is decompressed as it is read, a
 * window at a time, so memory is bounded by the longest line, not by
 * the file, as for a plain one.
 */
#include "util/common.h"
#include "import/import.h"
#include <zstd.h>

#define ZST_SUFFIX ".zst"

int imp_lines_open(struct imp_lines *ls, const char *path)
{
	size_t n = strlen(path), k = strlen(ZST_SUFFIX);

	memset(ls, 0, sizeof(*ls));
	aptix_buf_init(&ls->out, 0);
	if (!(ls->fp = fopen(path, "rb")))
		return -1;
	if (n > k && !strcmp(path + n - k, ZST_SUFFIX)) {
		ls->in_size = ZSTD_DStreamInSize();
		if (!(ls->z = ZSTD_createDCtx()) ||
		    !(ls->in = aptix__malloc(ls->in_size))) {
			imp_lines_close(ls);
			errno = ENOMEM;
			return -1;
		}
	}
	return 0;
}

int imp_lines_open_mem(struct imp_lines *ls, const aptix_buf *b)
{
	memset(ls, 0, sizeof(*ls));
	aptix_buf_init(&ls->out, 0);
	return (ls->fp = fmemopen(b->ptr, b->len, "rb")) ? 0 : -1;
}

void imp_lines_close(struct imp_lines *ls)
{
	if (ls->fp)
		fclose(ls->fp);
	ZSTD_freeDCtx(ls->z);
	free(ls->in);
	free(ls->line);
	aptix_buf_release(&ls->out);
	memset(ls, 0, sizeof(*ls));
}

/* A plain file: getline(), and a look at what follows for "last". */
static int plain_next(struct imp_lines *ls, const char **line, size_t *len,
		      int *last)
{
	ssize_t n = getline(&ls->line, &ls->alloc, ls->fp);
	int c;

	if (n <= 0) {
		if (ferror(ls->fp))
			return -1;
		if (!feof(ls->fp)) {	/* getline() could not hold it */
			errno = ENOMEM;
			return -1;
		}
		return 0;
	}
	c = ls->line[n - 1] == '\n' ? EOF : getc(ls->fp);
	if (c != EOF)
		ungetc(c, ls->fp);
	*line = ls->line;
	*len = (size_t)n;
	*last = c == EOF;
	return 1;
}

/* Decompress another window into ls->out; 0 at the end of the input. */
static int zst_more(struct imp_lines *ls)
{
	char win[1 << 16];
	ZSTD_outBuffer o;
	ZSTD_inBuffer i;
	size_t rc;

	if (ls->in_pos == ls->in_len) {
		ls->in_len = fread(ls->in, 1, ls->in_size, ls->fp);
		ls->in_pos = 0;
		if (!ls->in_len) {
			if (ferror(ls->fp))
				return -1;
			if (ls->frame_open) {
				ls->bad = "truncated zstd stream";
				return -1;
			}
			return 0;
		}
	}
	i.src = ls->in;
	i.size = ls->in_len;
	i.pos = ls->in_pos;
	o.dst = win;
	o.size = sizeof(win);
	o.pos = 0;
	rc = ZSTD_decompressStream(ls->z, &o, &i);
	ls->in_pos = i.pos;
	if (ZSTD_isError(rc)) {
		ls->bad = ZSTD_getErrorName(rc);
		return -1;
	}
	ls->frame_open = rc != 0;
	if (aptix_buf_put(&ls->out, win, o.pos) < 0) {
		errno = ENOMEM;
		return -1;
	}
	return 1;
}

static int zst_next(struct imp_lines *ls, const char **line, size_t *len,
		    int *last)
{
	const char *nl;
	int r = 1;

	/* drop the line returned last time */
	if (ls->out_pos) {
		memmove(ls->out.ptr, ls->out.ptr + ls->out_pos,
			ls->out.len - ls->out_pos);
		aptix_buf_truncate(&ls->out, ls->out.len - ls->out_pos);
		ls->out_pos = 0;
	}
	while (!(nl = memchr(ls->out.ptr, '\n', ls->out.len)) &&
	       (r = zst_more(ls)) > 0)
		;
	if (r < 0)
		return -1;
	if (!nl && !ls->out.len)
		return 0;
	ls->out_pos = nl ? (size_t)(nl - ls->out.ptr) + 1 : ls->out.len;
	*line = ls->out.ptr;
	*len = ls->out_pos;
	*last = !nl;
	return 1;
}

int imp_lines_next(struct imp_lines *ls, const char **line, size_t *len,
		   int *last)
{
	return ls->z ? zst_next(ls, line, len, last) :
		plain_next(ls, line, len, last);
}

const char *imp_lines_error(const struct imp_lines *ls)
{
	return ls->bad ? ls->bad : strerror(errno);
}
