/*
 * src/rag/rag-chunk.c - the text side of retrieval (see rag-int.h):
 * code-aware tokens and their counts, chunks of lines with stable ids,
 * the language of a path, path prefixes, and adding a chunk to a set.
 */
#include "util/common.h"
#include "rag/rag-int.h"
#include "aptix/oid.h"

/* ------------------------------------------------------------------ */
/* Chunks                                                               */
/* ------------------------------------------------------------------ */

static int line_blank(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strchr(" \t\r\n\f\v", s[i]) || !s[i])
			return 0;
	return 1;
}

int aptix_rag__chunk_text(aptix_rag__chunk **out, size_t *n,
			  const char *text, size_t len, long lines,
			  long overlap)
{
	size_t *ls = NULL, nl = 0, i, k, start, end, alloc = 0;
	aptix_rag__chunk *v = NULL;
	size_t L, O;

	*out = NULL;
	*n = 0;
	if (lines < 1)
		lines = 1;
	if (overlap < 0)
		overlap = 0;
	if (overlap >= lines)
		overlap = lines - 1;
	L = (size_t)lines;
	O = (size_t)overlap;
	if (!len)
		return 0;
	/* line starts, and the end of the text as a last sentinel */
	for (i = 0; i < len; i++)
		if (text[i] == '\n')
			nl++;
	if (text[len - 1] != '\n')
		nl++;
	if (!(ls = aptix__malloc((nl + 1) * sizeof(*ls))))
		return APTIX_ERROR;
	ls[0] = 0;
	for (i = 0, k = 1; i < len; i++)
		if (text[i] == '\n' && i + 1 < len)
			ls[k++] = i + 1;
	ls[nl] = len;

	for (start = 0; start < nl;) {
		end = start + L;
		if (nl - start <= L + L / 4) {
			end = nl;
		} else {
			size_t min_end = start + L - L / 4, j;

			if (min_end <= start + O)
				min_end = start + O + 1;
			for (j = end; j > min_end; j--)
				if (line_blank(text + ls[j - 1],
					       ls[j] - ls[j - 1])) {
					end = j;
					break;
				}
		}
		/* not too many bytes, but at least one line */
		while (end > start + 1 &&
		       ls[end] - ls[start] > RAG_CHUNK_MAX_BYTES)
			end--;
		if (!line_blank(text + ls[start], ls[end] - ls[start])) {
			if (*n == alloc) {
				size_t na = alloc ? alloc * 2 : 16;
				aptix_rag__chunk *nv = aptix__realloc(v,
							na * sizeof(*v));

				if (!nv) {
					free(v);
					free(ls);
					return APTIX_ERROR;
				}
				v = nv;
				alloc = na;
			}
			memset(&v[*n], 0, sizeof(v[*n]));
			v[*n].start_line = (long)start + 1;
			v[*n].end_line = (long)end;
			v[*n].off = ls[start];
			v[*n].len = ls[end] - ls[start];
			(*n)++;
		}
		if (end >= nl)
			break;
		start = end > start + O ? end - O : end;
	}
	free(ls);
	*out = v;
	return 0;
}

int aptix_rag__chunk_ident(aptix_rag__chunk *c, const char *repo,
			   const char *path, const char *text)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_oid h;
	int r;

	if ((r = aptix_sha256(&h, text + c->off, c->len)) < 0)
		return r;
	aptix_oid_tostr(c->hash, &h);
	aptix_buf_puts(&b, repo);
	aptix_buf_putc(&b, '\0');
	aptix_buf_puts(&b, path);
	aptix_buf_putc(&b, '\0');
	aptix_buf_printf(&b, "%ld", c->start_line);
	aptix_buf_putc(&b, '\0');
	aptix_buf_printf(&b, "%ld", c->end_line);
	aptix_buf_putc(&b, '\0');
	aptix_buf_puts(&b, c->hash);
	if (aptix_buf_oom(&b)) {
		aptix_buf_release(&b);
		return aptix_error_oom();
	}
	r = aptix_sha256(&h, b.ptr, b.len);
	aptix_buf_release(&b);
	if (r < 0)
		return r;
	memcpy(c->uuid, h.id, 16);
	c->uuid[6] = (unsigned char)((c->uuid[6] & 0x0f) | 0x80);
	c->uuid[8] = (unsigned char)((c->uuid[8] & 0x3f) | 0x80);
	aptix_uuid_format(c->id, c->uuid);
	return 0;
}

static const struct {
	const char *ext;
	const char *lang;
} languages[] = {
	{ "c", "c" }, { "h", "c" },
	{ "cc", "cpp" }, { "cpp", "cpp" }, { "cxx", "cpp" }, { "c++", "cpp" },
	{ "hh", "cpp" }, { "hpp", "cpp" }, { "hxx", "cpp" }, { "ipp", "cpp" },
	{ "m", "objective-c" }, { "mm", "objective-cpp" },
	{ "cs", "csharp" }, { "java", "java" }, { "kt", "kotlin" },
	{ "kts", "kotlin" }, { "scala", "scala" }, { "groovy", "groovy" },
	{ "gradle", "groovy" }, { "go", "go" }, { "rs", "rust" },
	{ "zig", "zig" }, { "nim", "nim" }, { "swift", "swift" },
	{ "dart", "dart" }, { "py", "python" }, { "pyi", "python" },
	{ "rb", "ruby" }, { "php", "php" }, { "pl", "perl" }, { "pm", "perl" },
	{ "lua", "lua" }, { "r", "r" }, { "jl", "julia" },
	{ "js", "javascript" }, { "mjs", "javascript" },
	{ "cjs", "javascript" }, { "jsx", "javascript" },
	{ "ts", "typescript" }, { "tsx", "typescript" }, { "mts", "typescript" },
	{ "vue", "vue" }, { "svelte", "svelte" },
	{ "html", "html" }, { "htm", "html" }, { "css", "css" },
	{ "scss", "scss" }, { "less", "less" }, { "json", "json" },
	{ "yaml", "yaml" }, { "yml", "yaml" }, { "toml", "toml" },
	{ "xml", "xml" }, { "ini", "ini" }, { "cfg", "ini" }, { "conf", "ini" },
	{ "md", "markdown" }, { "markdown", "markdown" }, { "rst", "rst" },
	{ "adoc", "asciidoc" }, { "txt", "text" }, { "tex", "latex" },
	{ "sh", "shell" }, { "bash", "shell" }, { "zsh", "shell" },
	{ "fish", "fish" }, { "ps1", "powershell" }, { "bat", "batch" },
	{ "sql", "sql" }, { "proto", "protobuf" }, { "graphql", "graphql" },
	{ "mk", "makefile" }, { "cmake", "cmake" }, { "ex", "elixir" },
	{ "exs", "elixir" }, { "erl", "erlang" }, { "hrl", "erlang" },
	{ "hs", "haskell" }, { "ml", "ocaml" }, { "mli", "ocaml" },
	{ "fs", "fsharp" }, { "clj", "clojure" }, { "cljs", "clojure" },
	{ "el", "elisp" }, { "lisp", "lisp" }, { "scm", "scheme" },
	{ "vim", "vim" }, { "tf", "terraform" }, { "nix", "nix" },
	{ "asm", "assembly" }, { "s", "assembly" }, { "S", "assembly" },
	{ "v", "verilog" }, { "vhd", "vhdl" }, { "f90", "fortran" },
	{ "pas", "pascal" }, { "d", "d" }, { "cu", "cuda" },
};

static const struct {
	const char *name;
	const char *lang;
} language_names[] = {
	{ "Makefile", "makefile" }, { "GNUmakefile", "makefile" },
	{ "makefile", "makefile" }, { "Dockerfile", "dockerfile" },
	{ "CMakeLists.txt", "cmake" }, { "Rakefile", "ruby" },
	{ "Gemfile", "ruby" }, { "Jenkinsfile", "groovy" },
};

const char *aptix_rag__language(const char *path)
{
	const char *base = strrchr(path, '/'), *dot;
	size_t i;

	base = base ? base + 1 : path;
	for (i = 0; i < ARRAY_SIZE(language_names); i++)
		if (!strcmp(base, language_names[i].name))
			return language_names[i].lang;
	dot = strrchr(base, '.');
	if (!dot || dot == base)
		return "text";
	dot++;
	for (i = 0; i < ARRAY_SIZE(languages); i++)
		if (!strcmp(dot, languages[i].ext))
			return languages[i].lang;
	for (i = 0; i < ARRAY_SIZE(languages); i++)
		if (!strcasecmp(dot, languages[i].ext))
			return languages[i].lang;
	return "text";
}

int aptix_rag__path_in(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!n)
		return 1;
	return !strncmp(path, prefix, n) && (!path[n] || path[n] == '/');
}

char *aptix_rag__norm_prefix(const char *p)
{
	aptix_buf b = APTIX_BUF_INIT;

	while (*p) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		if (n && !(n == 1 && *p == '.')) {
			if (b.len)
				aptix_buf_putc(&b, '/');
			aptix_buf_put(&b, p, n);
		}
		p += n;
		if (*p)
			p++;
	}
	if (aptix_buf_oom(&b)) {
		aptix_buf_release(&b);
		aptix_error_oom();
		return NULL;
	}
	if (!b.len) {
		aptix_buf_release(&b);
		return aptix__strdup("");
	}
	return aptix_buf_detach(&b);
}

int aptix_rag__set_add(aptix_chunk_set *out, const char *id, const char *repo,
		       const char *path, long start, long end,
		       const char *language, const char *hash, double score,
		       const char *text, size_t text_len)
{
	aptix_rag_chunk *v, *c;

	v = aptix__realloc(out->v, (out->n + 1) * sizeof(*v));
	if (!v)
		return APTIX_ERROR;
	out->v = v;
	c = &v[out->n];
	memset(c, 0, sizeof(*c));
	aptix_buf_init(&c->text, 0);
	c->chunk_id = aptix__strdup(id);
	c->repo = aptix__strdup(repo ? repo : "");
	c->path = aptix__strdup(path ? path : "");
	c->language = aptix__strdup(language ? language : "text");
	c->start_line = start;
	c->end_line = end;
	c->score = score;
	snprintf(c->content_hash, sizeof(c->content_hash), "%s",
		 hash ? hash : "");
	aptix_buf_set(&c->text, text ? text : "", text ? text_len : 0);
	out->n++;
	if (!c->chunk_id || !c->repo || !c->path || !c->language ||
	    aptix_buf_oom(&c->text))
		return aptix_error_oom();
	return 0;
}
