/*
 * check_rag.c - unit tests for retrieval (src/rag/rag.c, src/rag/rag-local.c):
 * code-aware tokens, chunk boundaries, stable chunk ids, BM25 ranking on
 * a toy corpus, filters, incremental updates of the local index, the
 * fallbacks of a Qdrant backend that cannot be reached, the choice of
 * the backend through its vtable, and keys taken from the options only
 * (never from the environment), checked against the stand-in.
 *
 * Stores are opened inside the test functions (see unit.h).
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aptix.h"
#include "aptix/config.h"
#include "aptix/rag.h"
#include "util/env.h"
#include "repo/repo.h"
#include "rag/rag-int.h"
#include "unit.h"

static char *tmpdir;
static aptix_repo *repo;
static aptix_config *cfg;

static void setup(void)
{
	aptix_error_clear();
	unsetenv("APTIX_DIR");
	unsetenv("QDRANT_URL");
	unsetenv("QDRANT_API_KEY");
	tmpdir = unit_mkdtemp();
	/* no user configuration */
	setenv("XDG_CONFIG_HOME", tmpdir, 1);
	aptix_env__reload();
	repo = NULL;
	cfg = NULL;
}

static void teardown(void)
{
	aptix_config_free(cfg);
	cfg = NULL;
	aptix_repo_free(repo);
	repo = NULL;
	unit_rmtree(tmpdir);
	free(tmpdir);
	tmpdir = NULL;
	unsetenv("XDG_CONFIG_HOME");
	unsetenv("QDRANT_URL");
	unsetenv("QDRANT_API_KEY");
	unsetenv("OPENAI_API_KEY");
	aptix_error_clear();
}

static const char *errmsg(void)
{
	return aptix_error_last()->message;
}

/* --- Tokens --------------------------------------------------------------- */

static int collect_cb(const char *t, size_t n, void *payload)
{
	aptix_buf *b = payload;

	ck_assert_uint_eq(strlen(t), n);
	if (b->len)
		aptix_buf_putc(b, ' ');
	aptix_buf_puts(b, t);
	return 0;
}

static void check_tokens(const char *text, const char *want)
{
	aptix_buf b = APTIX_BUF_INIT;

	ck_assert_int_eq(aptix__tokenize(text, strlen(text), APTIX_TOK_PARTS,
					 collect_cb, &b), 0);
	ck_assert_msg(!strcmp(b.ptr, want), "tokens of '%s': got '%s', want "
		      "'%s'", text, b.ptr, want);
	aptix_buf_release(&b);
}

START_TEST(test_tokenize)
{
	check_tokens("parseConfigFile", "parse config file parseconfigfile");
	check_tokens("HTTPServer", "http server httpserver");
	check_tokens("getHTTPResponseCode",
		     "get http response code gethttpresponsecode");
	check_tokens("snake_case_name", "snake case name snake_case_name");
	check_tokens("MAX_PATH_LEN", "max path len max_path_len");
	check_tokens("utf8Decode", "utf decode utf8decode");
	check_tokens("sha256sum", "sha 256 sum sha256sum");
	check_tokens("x1 a b_c", "x1 b_c");
	check_tokens("__init__ self.x = 42", "init self 42");
	check_tokens("if (a->b == c) return -1;", "if return");
	check_tokens("caf\xc3\xa9 na\xc3\xafve", "caf\xc3\xa9 na\xc3\xafve");
	check_tokens("", "");
	/* long tokens are cut at APTIX_TERM_MAX bytes */
	{
		char in[200], want[APTIX_TERM_MAX + 1];

		memset(in, 'a', sizeof(in) - 1);
		in[sizeof(in) - 1] = '\0';
		memset(want, 'a', APTIX_TERM_MAX);
		want[APTIX_TERM_MAX] = '\0';
		check_tokens(in, want);
	}
}
END_TEST

START_TEST(test_count_terms)
{
	aptix__terms t;
	const char *text = "readFile(readBuffer); read_file();";

	ck_assert_int_eq(aptix__count_terms(&t, text, strlen(text), APTIX_TOK_PARTS), 0);
	/* read file readfile read buffer readbuffer read file read_file */
	ck_assert_uint_eq(t.len, 9);
	ck_assert_uint_eq(t.n, 6);
	ck_assert_str_eq(t.v[0].term, "buffer");
	ck_assert_str_eq(t.v[1].term, "file");
	ck_assert_uint_eq(t.v[1].tf, 2);
	ck_assert_str_eq(t.v[2].term, "read");
	ck_assert_uint_eq(t.v[2].tf, 3);
	ck_assert_str_eq(t.v[3].term, "read_file");
	ck_assert_str_eq(t.v[4].term, "readbuffer");
	ck_assert_str_eq(t.v[5].term, "readfile");
	aptix__terms_release(&t);
}
END_TEST

/* --- Chunks --------------------------------------------------------------- */

/* n lines "line <i>", blank where blanks[i - 1] is set */
static char *make_lines(int n, const int *blank_at, int nblank)
{
	aptix_buf b = APTIX_BUF_INIT;
	int i, k;

	for (i = 1; i <= n; i++) {
		int blank = 0;

		for (k = 0; k < nblank; k++)
			if (blank_at[k] == i)
				blank = 1;
		if (blank)
			aptix_buf_puts(&b, "\n");
		else
			aptix_buf_printf(&b, "line %d\n", i);
	}
	return aptix_buf_detach(&b);
}

static void check_chunks(const char *text, long lines, long overlap,
			 const long *want, size_t nwant)
{
	aptix_rag__chunk *c;
	size_t n, i;

	ck_assert_int_eq(aptix_rag__chunk_text(&c, &n, text, strlen(text),
					       lines, overlap), 0);
	ck_assert_msg(n == nwant / 2, "%zu chunks, want %zu", n, nwant / 2);
	for (i = 0; i < n; i++) {
		ck_assert_msg(c[i].start_line == want[2 * i] &&
			      c[i].end_line == want[2 * i + 1],
			      "chunk %zu: %ld-%ld, want %ld-%ld", i,
			      c[i].start_line, c[i].end_line, want[2 * i],
			      want[2 * i + 1]);
		/* the text is exactly those lines */
		ck_assert(c[i].off == 0 || text[c[i].off - 1] == '\n');
		ck_assert(text[c[i].off + c[i].len - 1] == '\n' ||
			  c[i].off + c[i].len == strlen(text));
	}
	free(c);
}

START_TEST(test_chunk_boundaries)
{
	static const long plain[] = { 1, 40, 36, 75, 71, 100 };
	static const long blank[] = { 1, 33, 29, 68, 64, 100 };
	static const long early_blank[] = { 1, 40, 36, 75, 71, 100 };
	static const long short_file[] = { 1, 50 };
	static const long tail[] = { 1, 40, 36, 51 };
	static const long small[] = { 1, 4, 4, 7, 7, 10 };
	int b33[] = { 33 }, b10[] = { 10 };
	char *t;

	t = make_lines(100, NULL, 0);
	check_chunks(t, 40, 5, plain, ARRAY_SIZE(plain));
	free(t);
	/* a blank line in the last quarter ends the chunk */
	t = make_lines(100, b33, 1);
	check_chunks(t, 40, 5, blank, ARRAY_SIZE(blank));
	free(t);
	/* ... but not one too early */
	t = make_lines(100, b10, 1);
	check_chunks(t, 40, 5, early_blank, ARRAY_SIZE(early_blank));
	free(t);
	/* up to a quarter more: one chunk rather than a small tail */
	t = make_lines(50, NULL, 0);
	check_chunks(t, 40, 5, short_file, ARRAY_SIZE(short_file));
	free(t);
	t = make_lines(51, NULL, 0);
	check_chunks(t, 40, 5, tail, ARRAY_SIZE(tail));
	free(t);
	t = make_lines(10, NULL, 0);
	check_chunks(t, 4, 1, small, ARRAY_SIZE(small));
	free(t);
}
END_TEST

START_TEST(test_chunk_edges)
{
	static const long one[] = { 1, 2 };
	static const long none[] = { 0, 0 };
	aptix_rag__chunk *c;
	aptix_buf big = APTIX_BUF_INIT;
	size_t n, i;

	/* no trailing newline */
	check_chunks("a\nb", 40, 5, one, 2);
	/* empty and blank-only texts have no chunk */
	check_chunks("", 40, 5, none, 0);
	check_chunks("\n \n\t\n", 40, 5, none, 0);
	/* blank-only chunks are left out */
	{
		static const long want[] = { 1, 3, 10, 12 };

		check_chunks("a\nb\nc\n\n\n\n\n\n\ng\nh\ni\n", 3, 0, want,
			     ARRAY_SIZE(want));
	}
	/* overlap >= lines is clamped, lines < 1 too */
	ck_assert_int_eq(aptix_rag__chunk_text(&c, &n, "a\nb\nc\n", 6, 0, 9),
			 0);
	ck_assert_uint_eq(n, 3);
	free(c);
	/* long lines: a chunk stays under RAG_CHUNK_MAX_BYTES */
	for (i = 0; i < 40; i++) {
		char line[1001];

		memset(line, 'x', 999);
		line[999] = '\n';
		line[1000] = '\0';
		aptix_buf_puts(&big, line);
	}
	ck_assert_int_eq(aptix_rag__chunk_text(&c, &n, big.ptr, big.len, 40,
					       5), 0);
	ck_assert_uint_gt(n, 1);
	for (i = 0; i < n; i++)
		ck_assert_uint_le(c[i].len, RAG_CHUNK_MAX_BYTES);
	ck_assert_int_eq(c[n - 1].end_line, 40);
	free(c);
	aptix_buf_release(&big);
}
END_TEST

START_TEST(test_chunk_ids)
{
	const char *text = "int main(void)\n{\n\treturn 0;\n}\n";
	aptix_rag__chunk a, b;
	unsigned char u[16];

	memset(&a, 0, sizeof(a));
	a.start_line = 1;
	a.end_line = 4;
	a.len = strlen(text);
	b = a;
	ck_assert_int_eq(aptix_rag__chunk_ident(&a, "repo", "main.c", text),
			 0);
	ck_assert_int_eq(aptix_rag__chunk_ident(&b, "repo", "main.c", text),
			 0);
	/* stable, UUID form: version 8, variant 10 */
	ck_assert_str_eq(a.id, b.id);
	ck_assert_uint_eq(strlen(a.id), 36);
	ck_assert(a.id[8] == '-' && a.id[13] == '-' && a.id[18] == '-' &&
		  a.id[23] == '-');
	ck_assert(a.id[14] == '8');
	ck_assert(strchr("89ab", a.id[19]));
	{
		aptix_oid h;

		ck_assert_int_eq(aptix_sha256(&h, text, strlen(text)), 0);
		ck_assert_str_eq(a.hash, aptix_oid_hex(&h));
	}
	ck_assert_int_eq(aptix_uuid_parse(u, a.id), 0);
	ck_assert_int_eq(memcmp(u, a.uuid, 16), 0);
	ck_assert_int_eq(aptix_uuid_parse(u, "not-a-uuid"),
			 APTIX_EINVALID);
	/* each input counts */
	ck_assert_int_eq(aptix_rag__chunk_ident(&b, "other", "main.c", text),
			 0);
	ck_assert_str_ne(a.id, b.id);
	ck_assert_int_eq(aptix_rag__chunk_ident(&b, "repo", "main2.c", text),
			 0);
	ck_assert_str_ne(a.id, b.id);
	b.end_line = 3;
	ck_assert_int_eq(aptix_rag__chunk_ident(&b, "repo", "main.c", text),
			 0);
	ck_assert_str_ne(a.id, b.id);
	b = a;
	b.len--;
	ck_assert_int_eq(aptix_rag__chunk_ident(&b, "repo", "main.c", text),
			 0);
	ck_assert_str_ne(a.id, b.id);
	ck_assert_str_ne(a.hash, b.hash);
}
END_TEST

START_TEST(test_language_and_prefixes)
{
	char *p;

	ck_assert_str_eq(aptix_rag__language("src/rag/rag.c"), "c");
	ck_assert_str_eq(aptix_rag__language("include/x.h"), "c");
	ck_assert_str_eq(aptix_rag__language("a/b.py"), "python");
	ck_assert_str_eq(aptix_rag__language("B.PY"), "python");
	ck_assert_str_eq(aptix_rag__language("web/app.tsx"), "typescript");
	ck_assert_str_eq(aptix_rag__language("Makefile"), "makefile");
	ck_assert_str_eq(aptix_rag__language("x/Dockerfile"), "dockerfile");
	ck_assert_str_eq(aptix_rag__language("README"), "text");
	ck_assert_str_eq(aptix_rag__language(".bashrc"), "text");
	ck_assert_str_eq(aptix_rag__language("x.unknownext"), "text");

	ck_assert(aptix_rag__path_in("src/a.c", ""));
	ck_assert(aptix_rag__path_in("src/a.c", "src"));
	ck_assert(aptix_rag__path_in("src/a.c", "src/a.c"));
	ck_assert(!aptix_rag__path_in("srcx/a.c", "src"));
	ck_assert(!aptix_rag__path_in("src/a.cc", "src/a.c"));
	ck_assert(!aptix_rag__path_in("sr", "src"));

	p = aptix_rag__norm_prefix("./src//lib/");
	ck_assert_str_eq(p, "src/lib");
	free(p);
	p = aptix_rag__norm_prefix(".");
	ck_assert_str_eq(p, "");
	free(p);
}
END_TEST

START_TEST(test_records)
{
	struct rag_manifest m, d;
	struct rag_mchunk c[2];
	aptix_buf b = APTIX_BUF_INIT, ns = APTIX_BUF_INIT, key = APTIX_BUF_INIT;
	const unsigned char *p;
	uint64_t v;
	char longpath[600];

	aptix_rag__put_varint(&b, 0);
	aptix_rag__put_varint(&b, 127);
	aptix_rag__put_varint(&b, 128);
	aptix_rag__put_varint(&b, UINT64_MAX);
	p = (const unsigned char *)b.ptr;
	ck_assert_int_eq(aptix_rag__get_varint(&v, &p, p + b.len), 0);
	ck_assert(v == 0);
	ck_assert_int_eq(aptix_rag__get_varint(&v, &p, p + 20), 0);
	ck_assert(v == 127);
	ck_assert_int_eq(aptix_rag__get_varint(&v, &p, p + 20), 0);
	ck_assert(v == 128);
	ck_assert_int_eq(aptix_rag__get_varint(&v, &p, p + 20), 0);
	ck_assert(v == UINT64_MAX);
	ck_assert_int_eq(aptix_rag__get_varint(&v, &p, p), -1);

	memset(&m, 0, sizeof(m));
	memset(c, 0, sizeof(c));
	m.lines = 40;
	m.overlap = 5;
	memset(m.hash, 0xab, 32);
	m.repo = (char *)"r";
	m.path = (char *)"dir/file.c";
	c[0].uuid[0] = 1;
	c[0].docnum = 7;
	c[1].uuid[15] = 2;
	c[1].docnum = 300000;
	m.c = c;
	m.n = 2;
	ck_assert_int_eq(aptix_rag__manifest_encode(&b, &m), 0);
	ck_assert_int_eq(aptix_rag__manifest_decode(&d, b.ptr, b.len), 0);
	ck_assert_uint_eq(d.lines, 40);
	ck_assert_uint_eq(d.overlap, 5);
	ck_assert_str_eq(d.repo, "r");
	ck_assert_str_eq(d.path, "dir/file.c");
	ck_assert_uint_eq(d.n, 2);
	ck_assert_uint_eq(d.c[1].docnum, 300000);
	ck_assert_int_eq(memcmp(d.c[1].uuid, c[1].uuid, 16), 0);
	aptix_rag__manifest_release(&d);
	ck_assert_int_eq(aptix_rag__manifest_decode(&d, b.ptr, b.len - 1),
			 APTIX_ECORRUPT);

	/* long paths make keys under LMDB's limit */
	memset(longpath, 'p', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	aptix_buf_set(&ns, "f", 1);
	ck_assert_int_eq(aptix_rag__manifest_key(&key, &ns, "a/b"), 0);
	ck_assert_uint_eq(key.len, 4);
	ck_assert_int_eq(aptix_rag__manifest_key(&key, &ns, longpath), 0);
	ck_assert_uint_le(key.len, 511);
	aptix_buf_release(&b);
	aptix_buf_release(&ns);
	aptix_buf_release(&key);
}
END_TEST

/* --- The local index ------------------------------------------------------ */

static void write_file(const char *rel, const char *text)
{
	char *path = unit_path(tmpdir, rel), *slash;

	slash = strrchr(path, '/');
	if (slash && slash > path + strlen(tmpdir)) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	unit_write_file(path, text, strlen(text));
	free(path);
}

static void remove_file(const char *rel)
{
	char *path = unit_path(tmpdir, rel);

	ck_assert_int_eq(unlink(path), 0);
	free(path);
}

static void open_repo(void)
{
	int existed;

	ck_assert_msg(aptix_repo_init(&repo, tmpdir, &existed) == 0, "%s",
		      errmsg());
	ck_assert_int_eq(aptix_config_open(&cfg, repo), 0);
}

static void reload_config(void)
{
	aptix_config_free(cfg);
	cfg = NULL;
	ck_assert_int_eq(aptix_config_open(&cfg, repo), 0);
}

static void index_files(aptix_rag_index_stats *st, const char *const *files,
			size_t n)
{
	aptix_rag_index_options o = APTIX_RAG_INDEX_OPTIONS_INIT;

	o.files = files;
	o.nfiles = n;
	ck_assert_msg(aptix_rag_index(st, repo, cfg, &o) == 0, "%s",
		      errmsg());
}

/* The paths retrieved for a query, space-separated, best first. */
static void query(aptix_buf *out, const char *text, const char *language,
		  const char *prefix)
{
	aptix_rag_query q = APTIX_RAG_QUERY_INIT;
	aptix_chunk_set set;
	const char *prefixes[1];
	size_t i;

	q.query = text;
	q.language = language;
	if (prefix) {
		prefixes[0] = prefix;
		q.path_prefixes = prefixes;
		q.nprefixes = 1;
	}
	aptix_chunk_set_init(&set);
	ck_assert_msg(aptix_rag_retrieve(&set, repo, cfg, &q) == 0, "%s",
		      errmsg());
	aptix_buf_clear(out);
	for (i = 0; i < set.n; i++) {
		if (i)
			aptix_buf_putc(out, ' ');
		aptix_buf_puts(out, set.v[i].path);
		ck_assert(set.v[i].score > 0);
		if (i)
			ck_assert(set.v[i].score <= set.v[i - 1].score);
		ck_assert_uint_eq(strlen(set.v[i].chunk_id), 36);
		ck_assert_uint_eq(strlen(set.v[i].content_hash), 64);
		ck_assert_uint_gt(set.v[i].text.len, 0);
	}
	ck_assert_uint_eq(set.nwarnings, 0);
	aptix_chunk_set_release(&set);
}

static const char *const corpus[] = {
	"net/http.c", "lib/parse.c", "lib/util.c", "docs/guide.md",
	"scripts/tool.py"
};

static void write_corpus(void)
{
	write_file("net/http.c", "/* the http server */\n"
		   "int http_serve(struct server *srv)\n{\n"
		   "\treturn accept_connection(srv);\n}\n");
	write_file("lib/parse.c", "/* parseConfigFile: parse the config "
		   "file */\nint parseConfigFile(const char *path)\n{\n"
		   "\treturn parse(path, config);\n}\n");
	write_file("lib/util.c", "/* the util helpers */\n"
		   "int util_max(int a, int b)\n{\n"
		   "\treturn a > b ? a : b;\n}\n");
	write_file("docs/guide.md", "# Guide\n\nThe config file is read "
		   "once. The server answers.\n");
	write_file("scripts/tool.py", "def main():\n    print('the tool')\n");
}

START_TEST(test_bm25_ranking)
{
	aptix_rag_index_stats st;
	aptix_buf got = APTIX_BUF_INIT;

	open_repo();
	write_corpus();
	/* nothing indexed yet: nothing found, no warning */
	query(&got, "config", NULL, NULL);
	ck_assert_str_eq(got.ptr, "");
	index_files(&st, corpus, ARRAY_SIZE(corpus));
	ck_assert_str_eq(st.backend, "local");
	ck_assert_uint_eq(st.files_scanned, 5);
	ck_assert_uint_eq(st.files_changed, 5);
	ck_assert_uint_eq(st.chunks_added, 5);
	ck_assert_uint_eq(st.chunks_total, 5);
	ck_assert_uint_eq(st.files_total, 5);

	/* term frequency: parse.c says config three times */
	query(&got, "config", NULL, NULL);
	ck_assert_str_eq(got.ptr, "lib/parse.c docs/guide.md");
	/* identifiers split: parseConfigFile matches "config file" */
	query(&got, "parse config file", NULL, NULL);
	ck_assert_str_eq(got.ptr, "lib/parse.c docs/guide.md");
	/* rarer terms weigh more: "util" (1 doc) beats "the" (4 docs) */
	query(&got, "the util", NULL, NULL);
	ck_assert(!strncmp(got.ptr, "lib/util.c ", 11));
	/* camelCase in the query, snake_case in the text */
	query(&got, "httpServe", NULL, NULL);
	ck_assert_str_eq(got.ptr, "net/http.c");
	query(&got, "nothing-matches-zzz", NULL, NULL);
	ck_assert_str_eq(got.ptr, "");
	/* filters */
	query(&got, "config server", "c", NULL);
	ck_assert_str_eq(got.ptr, "lib/parse.c net/http.c");
	query(&got, "config server", NULL, "docs");
	ck_assert_str_eq(got.ptr, "docs/guide.md");
	query(&got, "config server", NULL, "doc");
	ck_assert_str_eq(got.ptr, "");
	query(&got, "config server", "markdown", "lib");
	ck_assert_str_eq(got.ptr, "");
	/* top-k, and a threshold from the config */
	ck_assert_int_eq(aptix_config_set(repo, "rag.top-k", "1"), 0);
	reload_config();
	query(&got, "config server", NULL, NULL);
	ck_assert_str_eq(got.ptr, "docs/guide.md");
	ck_assert_int_eq(aptix_config_set(repo, "rag.top-k", "8"), 0);
	ck_assert_int_eq(aptix_config_set(repo, "rag.score-threshold", "50"),
			 0);
	reload_config();
	query(&got, "config server", NULL, NULL);
	ck_assert_str_eq(got.ptr, "");
	/* the repo filter: chunks carry the workspace's name */
	ck_assert_int_eq(aptix_config_set(repo, "rag.score-threshold", NULL),
			 0);
	ck_assert_int_eq(aptix_config_set(repo, "rag.repo", "elsewhere"), 0);
	reload_config();
	query(&got, "config", NULL, NULL);
	ck_assert_str_eq(got.ptr, "");
	aptix_buf_release(&got);
}
END_TEST

static int has_term(const char *term)
{
	aptix_buf key = APTIX_BUF_INIT, v = APTIX_BUF_INIT;
	int r;

	aptix_buf_printf(&key, "t%s", term);
	r = repo->store->get(&v, repo->store, APTIX_TABLE_RAG, key.ptr,
			     key.len);
	aptix_buf_release(&key);
	aptix_buf_release(&v);
	ck_assert(r == 0 || r == APTIX_ENOTFOUND);
	return r == 0;
}

START_TEST(test_incremental)
{
	aptix_rag_index_stats st;
	aptix_buf got = APTIX_BUF_INIT, big = APTIX_BUF_INIT;
	const char *files[ARRAY_SIZE(corpus) + 1];
	int i;

	open_repo();
	write_corpus();
	/* a file of 4 chunks: 1-40, 36-75, 71-110, 106-130 */
	for (i = 1; i <= 130; i++)
		aptix_buf_printf(&big, "int big_function_%d(void);\n", i);
	write_file("lib/big.c", big.ptr);
	memcpy(files, corpus, sizeof(corpus));
	files[ARRAY_SIZE(corpus)] = "lib/big.c";
	index_files(&st, files, ARRAY_SIZE(files));
	ck_assert_uint_eq(st.chunks_added, 5 + 4);

	/* unchanged: nothing is done */
	index_files(&st, files, ARRAY_SIZE(files));
	ck_assert_uint_eq(st.files_scanned, 6);
	ck_assert_uint_eq(st.files_unchanged, 6);
	ck_assert_uint_eq(st.files_changed, 0);
	ck_assert_uint_eq(st.chunks_added, 0);
	ck_assert_uint_eq(st.chunks_removed, 0);
	ck_assert_uint_eq(st.chunks_total, 9);

	/* a line added at the end of big.c: only its last chunk changes */
	aptix_buf_puts(&big, "int appended_symbol(void);\n");
	write_file("lib/big.c", big.ptr);
	index_files(&st, files, ARRAY_SIZE(files));
	ck_assert_uint_eq(st.files_changed, 1);
	ck_assert_uint_eq(st.files_unchanged, 5);
	ck_assert_uint_eq(st.chunks_added, 1);
	ck_assert_uint_eq(st.chunks_removed, 1);
	ck_assert_uint_eq(st.chunks_total, 9);
	query(&got, "appended_symbol", NULL, NULL);
	ck_assert_str_eq(got.ptr, "lib/big.c");
	query(&got, "big_function_3", NULL, NULL);
	ck_assert(!strncmp(got.ptr, "lib/big.c", 9));

	/* a changed file: its old terms are gone */
	ck_assert(has_term("util_max"));
	write_file("lib/util.c", "int util_min(int a, int b);\n");
	index_files(&st, files, ARRAY_SIZE(files));
	ck_assert_uint_eq(st.chunks_added, 1);
	ck_assert_uint_eq(st.chunks_removed, 1);
	ck_assert(!has_term("util_max"));
	ck_assert(has_term("util_min"));
	query(&got, "helpers", NULL, NULL);
	ck_assert_str_eq(got.ptr, "");

	/* a deleted file still listed (git ls-files -c): its chunks go */
	remove_file("scripts/tool.py");
	ck_assert(has_term("tool"));
	index_files(&st, files, ARRAY_SIZE(files));
	ck_assert_uint_eq(st.files_skipped, 1);
	ck_assert_uint_eq(st.files_removed, 1);
	ck_assert_uint_eq(st.chunks_removed, 1);
	ck_assert_uint_eq(st.chunks_total, 8);
	ck_assert_uint_eq(st.files_total, 5);
	ck_assert(!has_term("tool"));

	/* a file no longer listed: its chunks go */
	files[2] = "lib/big.c";		/* lib/util.c */
	index_files(&st, files, ARRAY_SIZE(files) - 1);
	ck_assert_uint_eq(st.files_removed, 1);
	ck_assert_uint_eq(st.chunks_total, 7);
	ck_assert(!has_term("util_min"));

	/* scopes: indexed files outside them are kept */
	{
		aptix_rag_index_options o = APTIX_RAG_INDEX_OPTIONS_INIT;
		const char *scope[] = { "net" };

		o.scopes = scope;
		o.nscopes = 1;
		ck_assert_int_eq(aptix_rag_index(&st, repo, cfg, &o), 0);
		ck_assert_uint_eq(st.files_removed, 1);
		ck_assert_uint_eq(st.files_total, 3);
		query(&got, "config", NULL, NULL);
		ck_assert_str_eq(got.ptr, "lib/parse.c docs/guide.md");
	}

	/* binary files and bad paths are skipped */
	{
		char *bin = unit_path(tmpdir, "bin.dat");

		unit_write_file(bin, "ab\001\000cd", 6);
		free(bin);
	}
	{
		const char *more[] = { "bin.dat", "../escape", ".aptix/data.mdb",
				       "lib/parse.c" };
		aptix_rag_index_options o = APTIX_RAG_INDEX_OPTIONS_INIT;
		const char *scope[] = { "bin.dat", "lib/parse.c" };

		o.files = more;
		o.nfiles = ARRAY_SIZE(more);
		o.scopes = scope;
		o.nscopes = 2;
		ck_assert_int_eq(aptix_rag_index(&st, repo, cfg, &o), 0);
		ck_assert_uint_eq(st.files_scanned, 4);
		ck_assert_uint_eq(st.files_skipped, 3);
		ck_assert_uint_eq(st.files_unchanged, 1);
		ck_assert_uint_eq(st.files_total, 3);
	}

	/* new chunking settings re-chunk everything */
	ck_assert_int_eq(aptix_config_set(repo, "rag.chunk-lines", "20"), 0);
	reload_config();
	{
		const char *three[] = { "lib/parse.c", "docs/guide.md",
					"lib/big.c" };

		index_files(&st, three, 3);
		ck_assert_uint_eq(st.files_changed, 3);
		ck_assert_uint_eq(st.chunks_total, 2 + 9);
	}

	/* reset */
	ck_assert(has_term("config"));
	ck_assert_int_eq(aptix_rag_index_reset(repo, cfg, NULL), 0);
	{
		size_t nf = 1, nc = 1;

		ck_assert_int_eq(aptix_rag_index_count(&nf, &nc, repo, cfg,
						       NULL), 0);
		ck_assert_uint_eq(nf, 0);
		ck_assert_uint_eq(nc, 0);
	}
	ck_assert(!has_term("config"));
	aptix_buf_release(&got);
	aptix_buf_release(&big);
}
END_TEST

START_TEST(test_bad_settings)
{
	aptix_rag_index_stats st;
	aptix_rag_index_options o = APTIX_RAG_INDEX_OPTIONS_INIT;

	open_repo();
	ck_assert_int_eq(aptix_config_set(repo, "rag.chunk-lines", "5"), 0);
	ck_assert_int_eq(aptix_config_set(repo, "rag.chunk-overlap", "5"), 0);
	reload_config();
	ck_assert_int_eq(aptix_rag_index(&st, repo, cfg, &o), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(errmsg(), "rag.chunk-overlap"));
	o.backend = "elastic";
	ck_assert_int_eq(aptix_rag_index(&st, repo, cfg, &o), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(errmsg(), "rag.backend"));
}
END_TEST

/* --- Qdrant unreachable --------------------------------------------------- */

START_TEST(test_qdrant_failures)
{
	aptix_rag_query q = APTIX_RAG_QUERY_INIT;
	aptix_chunk_set set;
	aptix_rag_index_stats st;
	aptix_rag_index_options o = APTIX_RAG_INDEX_OPTIONS_INIT;

	open_repo();
	ck_assert_int_eq(aptix_config_set(repo, "rag.backend", "qdrant"), 0);
	reload_config();
	q.query = "parse the config";
	q.http.base_url = "http://127.0.0.1:1/v1";
	q.http.api_key = "sk-test";
	q.http.max_attempts = 1;

	/* no QDRANT_URL: a warning, no chunk */
	aptix_chunk_set_init(&set);
	ck_assert_int_eq(aptix_rag_retrieve(&set, repo, cfg, &q), 0);
	ck_assert_uint_eq(set.n, 0);
	ck_assert_uint_eq(set.nwarnings, 1);
	ck_assert_ptr_nonnull(strstr(set.warnings[0], "QDRANT_URL"));
	aptix_chunk_set_release(&set);
	ck_assert_int_eq(aptix_rag_index(&st, repo, cfg, &o), APTIX_EINVALID);

	/* nothing listens: a warning naming the failure */
	q.qdrant_url = "http://127.0.0.1:1";
	aptix_chunk_set_init(&set);
	ck_assert_int_eq(aptix_rag_retrieve(&set, repo, cfg, &q), 0);
	ck_assert_uint_eq(set.n, 0);
	ck_assert_uint_eq(set.nwarnings, 1);
	ck_assert_ptr_nonnull(strstr(set.warnings[0], "retrieval skipped"));
	aptix_chunk_set_release(&set);

	/* required: an error instead */
	ck_assert_int_eq(aptix_config_set(repo, "rag.required", "true"), 0);
	reload_config();
	aptix_chunk_set_init(&set);
	ck_assert_int_eq(aptix_rag_retrieve(&set, repo, cfg, &q), APTIX_ENET);
	ck_assert_uint_eq(set.n, 0);
	aptix_chunk_set_release(&set);

	/* an empty query retrieves nothing and calls nobody */
	q.query = " ;; ";
	aptix_chunk_set_init(&set);
	ck_assert_int_eq(aptix_rag_retrieve(&set, repo, cfg, &q), 0);
	ck_assert_uint_eq(set.n + set.nwarnings, 0);
	aptix_chunk_set_release(&set);
}
END_TEST

/* --- Backends: chosen once, called through the vtable --------------------- */

START_TEST(test_backend_dispatch)
{
	static const char *const kinds[] = { "local", "qdrant" };
	struct rag_backend_options bo;
	struct rag_settings s;
	struct aptix_rag_backend *b;
	aptix_rag_index_stats st;
	aptix_rag_index_options o = APTIX_RAG_INDEX_OPTIONS_INIT;
	size_t i, nf = 1, nc = 1;

	open_repo();
	memset(&bo, 0, sizeof(bo));
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(aptix_config_set(repo, "rag.backend",
						  kinds[i]), 0);
		reload_config();
		ck_assert_int_eq(aptix_rag__settings(&s, repo, cfg, NULL), 0);
		ck_assert_msg(aptix_rag__backend_open(&b, repo, &s, &bo) == 0,
			      "%s", errmsg());
		ck_assert_uint_eq(b->version, APTIX_RAG_BACKEND_VERSION);
		ck_assert_str_eq(b->name, kinds[i]);
		ck_assert_ptr_eq(b->repo, repo);
		ck_assert_ptr_eq(b->s, &s);
		ck_assert_uint_gt(b->ns.len, 0);
		ck_assert_uint_gt(b->batch_files, 0);
		ck_assert_uint_gt(b->batch_bytes, 0);
		ck_assert_ptr_nonnull(b->apply);
		ck_assert_ptr_nonnull(b->query);
		ck_assert_ptr_nonnull(b->count);
		ck_assert_ptr_nonnull(b->reset);
		ck_assert_ptr_nonnull(b->free);
		/* local needs the terms of chunks; qdrant is shared */
		ck_assert_int_eq(b->needs_terms, i == 0);
		ck_assert_int_eq(b->shared, i == 1);
		/* opening does no I/O: no server is needed to count */
		ck_assert_int_eq(b->count(&nf, &nc, b), 0);
		ck_assert_uint_eq(nf + nc, 0);
		aptix_rag__backend_free(b);
		aptix_rag__settings_release(&s);
		/* the public entry points name the backend they used */
		ck_assert_int_eq(aptix_rag_index_count(&nf, &nc, repo, cfg,
						       NULL), 0);
		ck_assert_int_eq(aptix_rag_index_reset(repo, cfg, NULL), 0);
		o.backend = NULL;
		ck_assert_int_eq(aptix_rag_index(&st, repo, cfg, &o),
				 i == 0 ? 0 : APTIX_EINVALID);
		ck_assert_str_eq(st.backend, kinds[i]);
	}
	/* an argument overrides rag.backend */
	o.backend = "local";
	ck_assert_int_eq(aptix_rag_index(&st, repo, cfg, &o), 0);
	ck_assert_str_eq(st.backend, "local");

	/* a backend the driver has no constructor for */
	ck_assert_int_eq(aptix_rag__settings(&s, repo, cfg, NULL), 0);
	s.backend = (enum rag_backend)42;
	b = (struct aptix_rag_backend *)&s;
	ck_assert_int_eq(aptix_rag__backend_open(&b, repo, &s, &bo),
			 APTIX_EINVALID);
	ck_assert_ptr_null(b);
	ck_assert_ptr_nonnull(strstr(errmsg(), "unknown retrieval backend"));
	aptix_rag__settings_release(&s);
	aptix_rag__backend_free(NULL);

	/* a name rag.backend does not know: refused, naming the key */
	ck_assert_int_eq(aptix_config_set(repo, "rag.backend", "local"), 0);
	reload_config();
	o.backend = "elastic";
	ck_assert_int_eq(aptix_rag_index(&st, repo, cfg, &o), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(errmsg(), "'rag.backend'"));
	ck_assert_ptr_nonnull(strstr(errmsg(), "elastic"));
	ck_assert_int_eq(aptix_rag_index_count(&nf, &nc, repo, cfg,
					       "elastic"), APTIX_EINVALID);
	ck_assert_int_eq(aptix_rag_index_reset(repo, cfg, "elastic"),
			 APTIX_EINVALID);
}
END_TEST

/* --- Keys: from the options only ------------------------------------------ */

#define OKEY "sk-test-rag-unit-openai-0123456789"
#define QKEY "qdrant-test-rag-unit-0123456789"

/* A file holding a key named in the options is not indexed; a key only
 * in the environment is nothing to the library. */
START_TEST(test_secret_files_from_options)
{
	static const char *const files[] = { "a.c", "b.c", "c.c" };
	aptix_rag_index_stats st;
	aptix_rag_index_options o = APTIX_RAG_INDEX_OPTIONS_INIT;
	aptix_buf got = APTIX_BUF_INIT;

	open_repo();
	write_file("a.c", "int parse_alpha(void) { return 0; }\n");
	write_file("b.c", "/* parse_beta */ const char *k = \"" OKEY "\";\n");
	write_file("c.c", "/* parse_gamma */ const char *q = \"" QKEY "\";\n");
	setenv("OPENAI_API_KEY", OKEY, 1);
	setenv("QDRANT_API_KEY", QKEY, 1);
	o.files = files;
	o.nfiles = 3;
	ck_assert_msg(aptix_rag_index(&st, repo, cfg, &o) == 0, "%s", errmsg());
	ck_assert_uint_eq(st.files_changed, 3);
	ck_assert_uint_eq(st.files_skipped, 0);

	o.http.api_key = OKEY;
	o.qdrant_api_key = QKEY;
	unsetenv("OPENAI_API_KEY");
	unsetenv("QDRANT_API_KEY");
	ck_assert_msg(aptix_rag_index(&st, repo, cfg, &o) == 0, "%s", errmsg());
	ck_assert_uint_eq(st.files_skipped, 2);
	ck_assert_uint_eq(st.files_removed, 2);
	ck_assert_uint_eq(st.files_total, 1);
	query(&got, "parse alpha beta gamma", NULL, NULL);
	ck_assert_str_eq(got.ptr, "a.c");
	aptix_buf_release(&got);
}
END_TEST

static struct unit_standin standin;

static void keys_setup(void)
{
	static const char *const args[] = {
		"--api-key", OKEY, "--qdrant-api-key", QKEY, "--seed", "unit",
		NULL
	};

	setup();
	unit_standin_start(&standin, "check_rag", args);
}

static void keys_teardown(void)
{
	unit_standin_stop(&standin);
	teardown();
}

/*
 * Against the stand-in, which wants both keys: a key only in the
 * environment is not sent (the call fails cleanly); in the options,
 * with the environment empty, it works.
 */
START_TEST(test_keys_not_from_env)
{
	static const char *const files[] = { "src/parse.c" };
	char base[160];
	aptix_rag_index_stats st;
	aptix_rag_index_options o = APTIX_RAG_INDEX_OPTIONS_INIT;
	aptix_rag_query q = APTIX_RAG_QUERY_INIT;
	aptix_chunk_set set;

	if (!standin.pid)
		return;
	snprintf(base, sizeof(base), "%s/v1", standin.url);
	open_repo();
	ck_assert_int_eq(aptix_config_set(repo, "rag.backend", "qdrant"), 0);
	ck_assert_int_eq(aptix_config_set(repo, "rag.required", "true"), 0);
	reload_config();
	write_file("src/parse.c", "int parse_config(const char *path)\n"
		   "{\n\treturn path != 0;\n}\n");
	o.files = files;
	o.nfiles = 1;
	o.http.base_url = base;
	o.http.max_attempts = 1;
	q.query = "parse the config";
	q.http.base_url = base;
	q.http.max_attempts = 1;

	/* everything in the environment, nothing in the options */
	setenv("QDRANT_URL", standin.url, 1);
	setenv("QDRANT_API_KEY", QKEY, 1);
	setenv("OPENAI_API_KEY", OKEY, 1);
	ck_assert_int_eq(aptix_rag_index(&st, repo, cfg, &o), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(errmsg(), "QDRANT_URL is not set"));
	aptix_chunk_set_init(&set);
	ck_assert_int_eq(aptix_rag_retrieve(&set, repo, cfg, &q),
			 APTIX_EINVALID);
	ck_assert_uint_eq(set.n, 0);
	aptix_chunk_set_release(&set);

	/* the URL given: Qdrant refuses a call without its key */
	o.qdrant_url = standin.url;
	ck_assert_int_eq(aptix_rag_index(&st, repo, cfg, &o), APTIX_EHTTP);
	ck_assert_ptr_nonnull(strstr(errmsg(), "401"));
	ck_assert_ptr_null(strstr(errmsg(), QKEY));

	/* Qdrant's key given: the embeddings endpoint refuses then */
	o.qdrant_api_key = QKEY;
	ck_assert_int_eq(aptix_rag_index(&st, repo, cfg, &o), APTIX_EHTTP);
	ck_assert_ptr_null(strstr(errmsg(), OKEY));
	ck_assert_uint_eq(st.chunks_added, 0);

	/* both keys given, the environment empty: it works */
	unsetenv("QDRANT_URL");
	unsetenv("QDRANT_API_KEY");
	unsetenv("OPENAI_API_KEY");
	o.http.api_key = OKEY;
	ck_assert_msg(aptix_rag_index(&st, repo, cfg, &o) == 0, "%s",
		      errmsg());
	ck_assert_str_eq(st.backend, "qdrant");
	ck_assert_uint_eq(st.files_changed, 1);
	ck_assert_uint_gt(st.chunks_added, 0);
	ck_assert_uint_eq(st.chunks_total, st.chunks_added);

	q.qdrant_url = standin.url;
	q.qdrant_api_key = QKEY;
	aptix_chunk_set_init(&set);
	ck_assert_int_eq(aptix_rag_retrieve(&set, repo, cfg, &q),
			 APTIX_EHTTP);	/* no OpenAI key for the query */
	aptix_chunk_set_release(&set);
	q.http.api_key = OKEY;
	aptix_chunk_set_init(&set);
	ck_assert_msg(aptix_rag_retrieve(&set, repo, cfg, &q) == 0, "%s",
		      errmsg());
	ck_assert_uint_ge(set.n, 1);
	ck_assert_str_eq(set.v[0].path, "src/parse.c");
	ck_assert_uint_eq(set.nwarnings, 0);
	aptix_chunk_set_release(&set);
}
END_TEST

Suite *rag_suite(void)
{
	Suite *s = suite_create("rag");
	TCase *pure = tcase_create("pure");
	TCase *local = tcase_create("local");
	TCase *qdrant = tcase_create("qdrant");
	TCase *keys;

	tcase_add_test(pure, test_tokenize);
	tcase_add_test(pure, test_count_terms);
	tcase_add_test(pure, test_chunk_boundaries);
	tcase_add_test(pure, test_chunk_edges);
	tcase_add_test(pure, test_chunk_ids);
	tcase_add_test(pure, test_language_and_prefixes);
	tcase_add_test(pure, test_records);
	suite_add_tcase(s, pure);

	tcase_add_checked_fixture(local, setup, teardown);
	tcase_set_timeout(local, 30);
	tcase_add_test(local, test_bm25_ranking);
	tcase_add_test(local, test_incremental);
	tcase_add_test(local, test_bad_settings);
	tcase_add_test(local, test_backend_dispatch);
	tcase_add_test(local, test_secret_files_from_options);
	suite_add_tcase(s, local);

	tcase_add_checked_fixture(qdrant, setup, teardown);
	tcase_set_timeout(qdrant, 30);
	tcase_add_test(qdrant, test_qdrant_failures);
	suite_add_tcase(s, qdrant);

	keys = tcase_create("keys");
	tcase_add_checked_fixture(keys, keys_setup, keys_teardown);
	tcase_set_timeout(keys, 60);
	tcase_add_test(keys, test_keys_not_from_env);
	suite_add_tcase(s, keys);
	return s;
}
