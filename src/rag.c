/*
 * src/rag.c - retrieval (see aptix/rag.h): code-aware tokens, chunks of
 * lines with stable ids, settings, file manifests, and the driver of
 * incremental indexing and of retrieval over the two backends
 * (rag-local.c: BM25 in the store; rag-qdrant.c: Qdrant).
 */
#include "common.h"
#include "secrets.h"
#include "repo.h"
#include "rag-int.h"
#include "odb-store.h"
#include "aptix/oid.h"
#include "http.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Tokens                                                               */
/* ------------------------------------------------------------------ */

enum ckind { K_NONE, K_LOWER, K_UPPER, K_DIGIT, K_UNDER };

static enum ckind ckind(unsigned char c)
{
	if (c >= 'a' && c <= 'z')
		return K_LOWER;
	if (c >= 'A' && c <= 'Z')
		return K_UPPER;
	if (c >= '0' && c <= '9')
		return K_DIGIT;
	if (c == '_')
		return K_UNDER;
	if (c >= 0x80)
		return K_LOWER;	/* non-ASCII letters: no case to split at */
	return K_NONE;
}

/* Is there a part boundary between s[q - 1] and s[q] (q < end)? */
static int boundary(const unsigned char *s, size_t q, size_t end)
{
	enum ckind a = ckind(s[q - 1]), b = ckind(s[q]);

	if ((a == K_DIGIT) != (b == K_DIGIT))
		return 1;
	if (a == K_LOWER && b == K_UPPER)
		return 1;
	/* HTTPServer: the last capital of a run starts the next part */
	if (a == K_UPPER && b == K_UPPER && q + 1 < end &&
	    ckind(s[q + 1]) == K_LOWER)
		return 1;
	return 0;
}

static int emit_term(const unsigned char *s, size_t n,
		     aptix_rag__term_cb cb, void *payload)
{
	char t[RAG_TERM_MAX + 1];
	size_t i;

	if (n > RAG_TERM_MAX) {
		n = RAG_TERM_MAX;
		while (n && (s[n] & 0xc0) == 0x80)
			n--;
	}
	if (n < 2)
		return 0;
	for (i = 0; i < n; i++)
		t[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
	t[n] = '\0';
	return cb(t, n, payload);
}

int aptix_rag__tokenize(const char *text, size_t len, aptix_rag__term_cb cb,
			void *payload)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0, j, p, q, nparts;
	int r;

	while (i < len) {
		if (ckind(s[i]) == K_NONE) {
			i++;
			continue;
		}
		for (j = i; j < len && ckind(s[j]) != K_NONE; j++)
			;
		nparts = 0;
		for (p = i; p < j;) {
			if (s[p] == '_') {
				p++;
				continue;
			}
			for (q = p + 1; q < j && s[q] != '_' &&
			     !boundary(s, q, j); q++)
				;
			nparts++;
			if ((r = emit_term(s + p, q - p, cb, payload)))
				return r;
			p = q;
		}
		if (nparts > 1 && (r = emit_term(s + i, j - i, cb, payload)))
			return r;
		i = j;
	}
	return 0;
}

/* --- A string-keyed hash map -------------------------------------------- */

static uint32_t fnv1a(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

static int smap_grow(struct rag_smap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64, i, k;
	struct rag_smap_ent *v = aptix__calloc(cap, sizeof(*v));

	if (!v)
		return APTIX_ERROR;
	for (i = 0; i < m->cap; i++) {
		if (!m->v[i].key)
			continue;
		for (k = m->v[i].h & (cap - 1); v[k].key;
		     k = (k + 1) & (cap - 1))
			;
		v[k] = m->v[i];
	}
	free(m->v);
	m->v = v;
	m->cap = cap;
	return 0;
}

struct rag_smap_ent *aptix_rag__smap_get(struct rag_smap *m, const char *key,
					 size_t n)
{
	uint32_t h = fnv1a(key, n);
	size_t k;

	if ((m->n + 1) * 2 > m->cap && smap_grow(m) < 0)
		return NULL;
	for (k = h & (m->cap - 1); m->v[k].key; k = (k + 1) & (m->cap - 1))
		if (m->v[k].h == h && !strncmp(m->v[k].key, key, n) &&
		    !m->v[k].key[n])
			return &m->v[k];
	if (!(m->v[k].key = aptix__strndup(key, n)))
		return NULL;
	m->v[k].h = h;
	m->v[k].val = 0;
	m->n++;
	return &m->v[k];
}

void aptix_rag__smap_release(struct rag_smap *m)
{
	size_t i;

	for (i = 0; i < m->cap; i++)
		free(m->v[i].key);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

struct count_ctx {
	struct rag_smap map;
	uint32_t len;
};

static int count_cb(const char *term, size_t len, void *payload)
{
	struct count_ctx *c = payload;
	struct rag_smap_ent *e = aptix_rag__smap_get(&c->map, term, len);

	if (!e)
		return APTIX_ERROR;
	e->val++;
	c->len++;
	return 0;
}

static int tf_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rag_tf *)a)->term,
		      ((const struct rag_tf *)b)->term);
}

int aptix_rag__count_terms(aptix_rag__terms *out, const char *text,
			   size_t len)
{
	struct count_ctx c;
	size_t i, n = 0;
	int r;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	if ((r = aptix_rag__tokenize(text, len, count_cb, &c)) < 0)
		goto done;
	if (c.map.n && !(out->v = aptix__calloc(c.map.n, sizeof(*out->v)))) {
		r = APTIX_ERROR;
		goto done;
	}
	for (i = 0; i < c.map.cap; i++) {
		if (!c.map.v[i].key)
			continue;
		out->v[n].term = c.map.v[i].key;
		out->v[n].tf = c.map.v[i].val;
		c.map.v[i].key = NULL;
		n++;
	}
	out->n = n;
	out->len = c.len;
	if (n > 1)
		qsort(out->v, n, sizeof(*out->v), tf_cmp);
done:
	aptix_rag__smap_release(&c.map);
	if (r < 0)
		aptix_rag__terms_release(out);
	return r;
}

void aptix_rag__terms_release(aptix_rag__terms *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n; i++)
		free(t->v[i].term);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

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

void aptix_rag__uuid_format(char out[37], const unsigned char u[16])
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[u[i] >> 4];
		out[o++] = hex[u[i] & 15];
	}
	out[o] = '\0';
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int aptix_rag__uuid_parse(unsigned char u[16], const char *s)
{
	size_t i, k = 0;

	for (i = 0; s[i] && k < 32; i++) {
		int v;

		if (s[i] == '-' && (i == 8 || i == 13 || i == 18 || i == 23))
			continue;
		if ((v = hexval((unsigned char)s[i])) < 0)
			return APTIX_EINVALID;
		if (k & 1)
			u[k / 2] = (unsigned char)(u[k / 2] | v);
		else
			u[k / 2] = (unsigned char)(v << 4);
		k++;
	}
	return k == 32 && !s[i] ? 0 : APTIX_EINVALID;
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
	aptix_rag__uuid_format(c->id, c->uuid);
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

/* ------------------------------------------------------------------ */
/* Settings                                                             */
/* ------------------------------------------------------------------ */

static int bad_setting(const char *key, long v, const char *why)
{
	aptix_error_set(APTIX_ERROR_CONFIG, "bad value '%ld' for '%s': %s", v,
			key, why);
	return APTIX_EINVALID;
}

static int get_ranged(long *out, const aptix_config *cfg, const char *key,
		      long dflt, long lo, long hi)
{
	int r = aptix_config_get_long(out, cfg, key, dflt);

	if (r < 0)
		return r;
	if (*out < lo || *out > hi) {
		char why[80];

		snprintf(why, sizeof(why), "must be between %ld and %ld", lo,
			 hi);
		return bad_setting(key, *out, why);
	}
	return 0;
}

static int split_prefixes(struct rag_settings *s, const char *v)
{
	while (v && *v) {
		const char *e = strchr(v, ',');
		size_t n = e ? (size_t)(e - v) : strlen(v);
		char *one, *norm, **nv;

		while (n && (*v == ' ' || *v == '\t')) {
			v++;
			n--;
		}
		while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
		if (n) {
			if (!(one = aptix__strndup(v, n)))
				return APTIX_ERROR;
			norm = aptix_rag__norm_prefix(one);
			free(one);
			if (!norm)
				return APTIX_ERROR;
			nv = aptix__realloc(s->prefixes, (s->nprefixes + 1) *
					    sizeof(*nv));
			if (!nv) {
				free(norm);
				return APTIX_ERROR;
			}
			s->prefixes = nv;
			s->prefixes[s->nprefixes++] = norm;
		}
		v = e ? e + 1 : NULL;
	}
	return 0;
}

int aptix_rag__settings(struct rag_settings *s, aptix_repo *repo,
			const aptix_config *cfg, const char *backend)
{
	const char *v;
	int r;

	memset(s, 0, sizeof(*s));
	if (!backend || !*backend)
		backend = aptix_config_get(cfg, "rag.backend");
	if (!backend || !*backend || !strcmp(backend, "local")) {
		s->backend = RAG_LOCAL;
	} else if (!strcmp(backend, "qdrant")) {
		s->backend = RAG_QDRANT;
	} else {
		aptix_error_set(APTIX_ERROR_CONFIG, "bad value '%s' for "
				"'rag.backend': must be 'local' or 'qdrant'",
				backend);
		return APTIX_EINVALID;
	}
	if ((r = get_ranged(&s->chunk_lines, cfg, "rag.chunk-lines", 40, 1,
			    100000)) < 0 ||
	    (r = get_ranged(&s->chunk_overlap, cfg, "rag.chunk-overlap", 5,
			    0, s->chunk_lines - 1)) < 0 ||
	    (r = get_ranged(&s->embed_batch, cfg, "rag.embed-batch", 64, 1,
			    2048)) < 0 ||
	    (r = get_ranged(&s->max_file_size, cfg, "rag.max-file-size",
			    1L << 20, 0, 1L << 30)) < 0 ||
	    (r = get_ranged(&s->top_k, cfg, "rag.top-k", 8, 1, 1000)) < 0 ||
	    (r = aptix_config_get_double(&s->threshold, cfg,
					 "rag.score-threshold", 0)) < 0 ||
	    (r = aptix_config_get_bool(&s->required, cfg, "rag.required",
				       0)) < 0 ||
	    (r = aptix_config_get_duration_ms(&s->timeout_ms, cfg,
					      "rag.timeout", 10000)) < 0)
		goto fail;
	if (s->timeout_ms <= 0)
		s->timeout_ms = 10000;
	v = aptix_config_get(cfg, "rag.repo");
	if (v && *v) {
		s->repo_name = aptix__strdup(v);
		s->repo_explicit = 1;
	} else {
		const char *wd = repo ? aptix_repo_workdir(repo) : NULL;
		const char *base = wd ? strrchr(wd, '/') : NULL;

		base = base ? base + 1 : wd;
		s->repo_name = aptix__strdup(base && *base ? base :
					     "workspace");
	}
	if (!s->repo_name) {
		r = APTIX_ERROR;
		goto fail;
	}
	v = aptix_config_get(cfg, "rag.collection");
	s->collection = v && *v ? v : "aptix";
	v = aptix_config_get(cfg, "rag.embedding-model");
	s->model = v && *v ? v : "text-embedding-3-small";
	v = aptix_config_get(cfg, "rag.language");
	s->language = v && *v ? v : NULL;
	if ((r = split_prefixes(s, aptix_config_get(cfg, "rag.path-prefix")))
	    < 0)
		goto fail;
	return 0;
fail:
	aptix_rag__settings_release(s);
	return r;
}

void aptix_rag__settings_release(struct rag_settings *s)
{
	size_t i;

	free(s->repo_name);
	for (i = 0; i < s->nprefixes; i++)
		free(s->prefixes[i]);
	free(s->prefixes);
	memset(s, 0, sizeof(*s));
}

/* ------------------------------------------------------------------ */
/* Records                                                              */
/* ------------------------------------------------------------------ */

void aptix_rag__put_varint(aptix_buf *b, uint64_t v)
{
	unsigned char t[10];
	size_t n = 0;

	do {
		t[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	aptix_buf_put(b, t, n);
}

int aptix_rag__get_varint(uint64_t *v, const unsigned char **p,
			  const unsigned char *end)
{
	uint64_t x = 0;
	unsigned shift = 0;

	while (*p < end) {
		unsigned char c = *(*p)++;

		if (shift > 63)
			return -1;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
		shift += 7;
	}
	return -1;
}

void aptix_rag__put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

uint32_t aptix_rag__get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		(uint32_t)p[2] << 8 | p[3];
}

#define KEY_PATH_MAX 480	/* keys are at most 511 bytes */
#define KEY_PATH_CUT 400

int aptix_rag__manifest_key(aptix_buf *key, const aptix_buf *ns,
			    const char *path)
{
	size_t n = strlen(path);

	aptix_buf_set(key, ns->ptr, ns->len);
	if (ns->len + n <= KEY_PATH_MAX) {
		aptix_buf_put(key, path, n);
	} else {
		aptix_oid h;
		int r;

		if ((r = aptix_sha256(&h, path, n)) < 0)
			return r;
		aptix_buf_put(key, path, KEY_PATH_CUT);
		aptix_buf_putc(key, '\0');
		aptix_buf_put(key, h.id, sizeof(h.id));
	}
	return aptix_buf_oom(key) ? aptix_error_oom() : 0;
}

static void put_str(aptix_buf *b, const char *s)
{
	size_t n = strlen(s);

	aptix_rag__put_varint(b, n);
	aptix_buf_put(b, s, n);
}

int aptix_rag__manifest_encode(aptix_buf *out, const struct rag_manifest *m)
{
	unsigned char h[5];
	size_t i;

	aptix_buf_clear(out);
	h[0] = RAG_MANIFEST_VERSION;
	h[1] = (unsigned char)(m->lines >> 8);
	h[2] = (unsigned char)m->lines;
	h[3] = (unsigned char)(m->overlap >> 8);
	h[4] = (unsigned char)m->overlap;
	aptix_buf_put(out, h, 5);
	aptix_buf_put(out, m->hash, 32);
	put_str(out, m->repo);
	put_str(out, m->path);
	aptix_rag__put_varint(out, m->n);
	for (i = 0; i < m->n; i++) {
		aptix_buf_put(out, m->c[i].uuid, 16);
		aptix_rag__put_varint(out, m->c[i].docnum);
	}
	return aptix_buf_oom(out) ? aptix_error_oom() : 0;
}

static int get_str(char **out, const unsigned char **p,
		   const unsigned char *end)
{
	uint64_t n;

	if (aptix_rag__get_varint(&n, p, end) < 0 ||
	    n > (uint64_t)(end - *p))
		return -1;
	if (!(*out = aptix__strndup((const char *)*p, (size_t)n)))
		return APTIX_ERROR;
	*p += n;
	return 0;
}

static int corrupt(const char *what)
{
	aptix_error_set(APTIX_ERROR_REPOSITORY, "the retrieval index is "
			"corrupt (%s): remove it with 'aptix index --reset'",
			what);
	return APTIX_ECORRUPT;
}

int aptix_rag__manifest_decode(struct rag_manifest *m, const void *val,
			       size_t len)
{
	const unsigned char *p = val, *end = p + len;
	uint64_t n, d;
	size_t i;
	int r;

	memset(m, 0, sizeof(*m));
	if (len < 37 || p[0] != RAG_MANIFEST_VERSION)
		return corrupt("a file record");
	m->lines = (unsigned)p[1] << 8 | p[2];
	m->overlap = (unsigned)p[3] << 8 | p[4];
	memcpy(m->hash, p + 5, 32);
	p += 37;
	if ((r = get_str(&m->repo, &p, end)) ||
	    (r = get_str(&m->path, &p, end)))
		goto bad;
	if (aptix_rag__get_varint(&n, &p, end) < 0 ||
	    n > (uint64_t)(end - p) / 17) {
		r = -1;
		goto bad;
	}
	if (n && !(m->c = aptix__calloc((size_t)n, sizeof(*m->c)))) {
		r = APTIX_ERROR;
		goto bad;
	}
	m->n = (size_t)n;
	for (i = 0; i < m->n; i++) {
		if (end - p < 16) {
			r = -1;
			goto bad;
		}
		memcpy(m->c[i].uuid, p, 16);
		p += 16;
		if (aptix_rag__get_varint(&d, &p, end) < 0 ||
		    d > UINT32_MAX) {
			r = -1;
			goto bad;
		}
		m->c[i].docnum = (uint32_t)d;
	}
	return 0;
bad:
	aptix_rag__manifest_release(m);
	return r == -1 ? corrupt("a file record") : r;
}

void aptix_rag__manifest_release(struct rag_manifest *m)
{
	free(m->repo);
	free(m->path);
	free(m->c);
	memset(m, 0, sizeof(*m));
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

struct delete_prefix_ctx {
	const unsigned char *prefix;
	size_t len;
	aptix_buf keys;		/* varint length + key, many */
	size_t nkeys;
};

static int collect_keys_cb(const void *key, size_t klen, const void *val,
			   size_t vlen, void *payload)
{
	struct delete_prefix_ctx *c = payload;

	(void)val;
	(void)vlen;
	if (klen < c->len || memcmp(key, c->prefix, c->len))
		return APTIX_ITEROVER;
	aptix_rag__put_varint(&c->keys, klen);
	aptix_buf_put(&c->keys, key, klen);
	c->nkeys++;
	if (c->nkeys >= 4096)
		return APTIX_ITEROVER;
	return aptix_buf_oom(&c->keys) ? aptix_error_oom() : 0;
}

static int delete_keys_fn(aptix_store_wtxn *w, void *payload)
{
	struct delete_prefix_ctx *c = payload;
	const unsigned char *p = (const unsigned char *)c->keys.ptr;
	const unsigned char *end = p + c->keys.len;
	aptix_store *s = aptix_store_of_wtxn(w);
	uint64_t n;
	int r;

	while (p < end) {
		if (aptix_rag__get_varint(&n, &p, end) < 0)
			return APTIX_ERROR;
		r = s->wdel(w, APTIX_TABLE_RAG, p, (size_t)n);
		if (r < 0 && r != APTIX_ENOTFOUND)
			return r;
		p += n;
	}
	return 0;
}

struct delete_key_ctx {
	const void *key;
	size_t len;
};

static int delete_key_fn(aptix_store_wtxn *w, void *payload)
{
	struct delete_key_ctx *c = payload;
	aptix_store *s = aptix_store_of_wtxn(w);
	int r = s->wdel(w, APTIX_TABLE_RAG, c->key, c->len);

	return r == APTIX_ENOTFOUND ? 0 : r;
}

int aptix_rag__delete_key(aptix_repo *repo, const void *key, size_t len)
{
	struct delete_key_ctx c;

	c.key = key;
	c.len = len;
	return repo->store->write(repo->store, delete_key_fn, &c);
}

int aptix_rag__delete_prefix(aptix_repo *repo, const void *prefix,
			     size_t len)
{
	struct delete_prefix_ctx c;
	aptix_store *s = repo->store;
	int r;

	memset(&c, 0, sizeof(c));
	c.prefix = prefix;
	c.len = len;
	for (;;) {
		aptix_buf_clear(&c.keys);
		c.nkeys = 0;
		r = s->iter(s, APTIX_TABLE_RAG, prefix, len, collect_keys_cb,
			    &c);
		if (r < 0 || !c.nkeys)
			break;
		if ((r = s->write(s, delete_keys_fn, &c)) < 0)
			break;
	}
	aptix_buf_release(&c.keys);
	return r;
}

/* ------------------------------------------------------------------ */
/* Indexing                                                             */
/* ------------------------------------------------------------------ */

struct old_file {
	char *path;
	unsigned char hash[32];
	int fresh;		/* same chunking and repo name */
	int seen;
};

struct scan_ctx {
	const struct rag_settings *s;
	aptix_buf start;	/* ns + scope */
	size_t nslen;
	const char *scope;
	struct old_file *v;
	size_t n, alloc;
};

static int scan_cb(const void *key, size_t klen, const void *val,
		   size_t vlen, void *payload)
{
	struct scan_ctx *c = payload;
	struct rag_manifest m;
	struct old_file *o;
	int r;

	if (klen < c->start.len || memcmp(key, c->start.ptr, c->start.len))
		return APTIX_ITEROVER;
	if ((r = aptix_rag__manifest_decode(&m, val, vlen)) < 0)
		return r;
	if (!aptix_rag__path_in(m.path, c->scope)) {
		aptix_rag__manifest_release(&m);
		return 0;
	}
	if (c->n == c->alloc) {
		size_t na = c->alloc ? c->alloc * 2 : 64;
		struct old_file *nv = aptix__realloc(c->v, na * sizeof(*nv));

		if (!nv) {
			aptix_rag__manifest_release(&m);
			return APTIX_ERROR;
		}
		c->v = nv;
		c->alloc = na;
	}
	o = &c->v[c->n++];
	memset(o, 0, sizeof(*o));
	o->path = m.path;
	m.path = NULL;
	memcpy(o->hash, m.hash, 32);
	o->fresh = m.lines == (unsigned)c->s->chunk_lines &&
		m.overlap == (unsigned)c->s->chunk_overlap &&
		!strcmp(m.repo, c->s->repo_name);
	aptix_rag__manifest_release(&m);
	return 0;
}

static int old_cmp(const void *a, const void *b)
{
	return strcmp(((const struct old_file *)a)->path,
		      ((const struct old_file *)b)->path);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Is path acceptable: relative, no "." / ".." / empty component, no .aptix? */
static int path_ok(const char *p)
{
	const char *c = p;

	if (!*p || *p == '/')
		return 0;
	while (c) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);

		if (!n || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.') ||
		    (n == 6 && !memcmp(c, ".aptix", 6)) ||
		    (n == 4 && !memcmp(c, ".git", 4)))
			return 0;
		c = e ? e + 1 : NULL;
	}
	return 1;
}

/* Valid UTF-8 without NUL bytes (overlongs and surrogates refused). */
static int text_ok(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t k, need;
		uint32_t cp;

		if (!c)
			return 0;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (n - i <= need)
			return 0;
		for (k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((need == 2 && (cp < 0x800 || (cp >= 0xd800 &&
						   cp <= 0xdfff))) ||
		    (need == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return 0;
		i += need + 1;
	}
	return 1;
}

/* 1: read; 0: not indexable (missing, special, binary, too large). */
static int read_source(aptix_buf *out, const char *workdir, const char *path,
		       long max)
{
	aptix_buf full = APTIX_BUF_INIT;
	struct stat st;
	int fd, ok = 0;

	aptix_buf_printf(&full, "%s/%s", workdir, path);
	if (aptix_buf_oom(&full))
		return aptix_error_oom();
	fd = open(full.ptr, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	aptix_buf_release(&full);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size <= (off_t)max) {
		aptix_buf_clear(out);
		out->max = (size_t)max + 1;
		/* a file holding an API key is never indexed */
		if (aptix_buf_read_fd(out, fd) == 0 && out->len <= (size_t)max &&
		    text_ok((const unsigned char *)out->ptr, out->len) &&
		    !aptix__holds_secret(out->ptr, out->len, NULL))
			ok = 1;
		out->max = 0;
		aptix_error_clear();
	}
	close(fd);
	if (!ok)
		aptix_buf_release(out);
	return ok;
}

static void op_release(struct rag_file_op *op)
{
	size_t i;

	free(op->path);
	aptix_buf_release(&op->content);
	if (op->terms)
		for (i = 0; i < op->nchunks; i++)
			aptix_rag__terms_release(&op->terms[i]);
	free(op->terms);
	free(op->chunks);
	memset(op, 0, sizeof(*op));
}

static void batch_clear(struct rag_batch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		op_release(&b->ops[i]);
	b->n = 0;
	b->bytes = 0;
}

static struct rag_file_op *batch_add(struct rag_batch *b, const char *path)
{
	struct rag_file_op *op;

	if (b->n == b->alloc) {
		size_t na = b->alloc ? b->alloc * 2 : RAG_BATCH_FILES;
		struct rag_file_op *nv = aptix__realloc(b->ops,
							na * sizeof(*nv));

		if (!nv)
			return NULL;
		b->ops = nv;
		b->alloc = na;
	}
	op = &b->ops[b->n];
	memset(op, 0, sizeof(*op));
	aptix_buf_init(&op->content, 0);
	if (!(op->path = aptix__strdup(path)))
		return NULL;
	b->n++;
	return op;
}

struct indexer {
	aptix_repo *repo;
	const struct rag_settings *s;
	const aptix_rag_index_options *opts;
	aptix_rag_index_stats *st;
	struct rag_qdrant *q;
	struct rag_batch batch;
	struct rag_counts counts;
	int64_t t0;
	size_t done, total, chunks;
};

static int flush(struct indexer *ix)
{
	int r;

	if (!ix->batch.n)
		return 0;
	if (ix->s->backend == RAG_LOCAL)
		r = aptix_rag__local_apply(ix->repo, ix->s, &ix->batch,
					   &ix->counts);
	else
		r = aptix_rag__qdrant_apply(ix->q, ix->repo, ix->s,
					    &ix->opts->http, &ix->batch,
					    &ix->counts);
	batch_clear(&ix->batch);
	return r;
}

static void progress(struct indexer *ix, int finished)
{
	aptix_rag_progress p;

	if (!ix->opts->progress)
		return;
	p.files_done = ix->done;
	p.files_total = ix->total;
	p.chunks_done = ix->chunks;
	p.elapsed_ms = aptix_http_now_ms() - ix->t0;
	p.finished = finished;
	ix->opts->progress(&p, ix->opts->payload);
}

/* Chunk a changed file into op (its content already read). */
static int prepare_op(struct indexer *ix, struct rag_file_op *op)
{
	size_t i;
	int r;

	if ((r = aptix_rag__chunk_text(&op->chunks, &op->nchunks,
				       op->content.ptr, op->content.len,
				       ix->s->chunk_lines,
				       ix->s->chunk_overlap)) < 0)
		return r;
	for (i = 0; i < op->nchunks; i++)
		if ((r = aptix_rag__chunk_ident(&op->chunks[i],
						ix->s->repo_name, op->path,
						op->content.ptr)) < 0)
			return r;
	if (ix->s->backend != RAG_LOCAL || !op->nchunks)
		return 0;
	if (!(op->terms = aptix__calloc(op->nchunks, sizeof(*op->terms))))
		return APTIX_ERROR;
	for (i = 0; i < op->nchunks; i++)
		if ((r = aptix_rag__count_terms(&op->terms[i],
						op->content.ptr +
						op->chunks[i].off,
						op->chunks[i].len)) < 0)
			return r;
	return 0;
}

static int batch_full(const struct indexer *ix)
{
	const struct rag_batch *b = &ix->batch;

	if (ix->s->backend == RAG_QDRANT)
		return b->n >= RAG_QDRANT_BATCH_FILES ||
			b->bytes >= RAG_QDRANT_BATCH_BYTES;
	return b->n >= RAG_BATCH_FILES || b->bytes >= RAG_BATCH_BYTES;
}

static int index_file(struct indexer *ix, const char *path,
		      struct old_file *old)
{
	struct rag_file_op *op;
	aptix_buf content = APTIX_BUF_INIT;
	aptix_oid h;
	int r;

	r = read_source(&content, aptix_repo_workdir(ix->repo), path,
			ix->s->max_file_size);
	if (r < 0)
		return r;
	if (!r) {
		ix->st->files_skipped++;
		if (!old)
			return 0;
		if (!(op = batch_add(&ix->batch, path)))
			return APTIX_ERROR;
		op->remove = 1;
		return 0;
	}
	if ((r = aptix_sha256(&h, content.ptr, content.len)) < 0)
		goto done;
	if (old && old->fresh && !memcmp(old->hash, h.id, 32)) {
		ix->st->files_unchanged++;
		goto done;
	}
	if (!(op = batch_add(&ix->batch, path))) {
		r = APTIX_ERROR;
		goto done;
	}
	memcpy(op->hash, h.id, 32);
	op->content = content;
	aptix_buf_init(&content, 0);
	ix->batch.bytes += op->content.len;
	r = prepare_op(ix, op);
	ix->chunks += op->nchunks;
done:
	aptix_buf_release(&content);
	return r;
}

static int cancelled(const struct indexer *ix)
{
	if (ix->opts->cancel && *ix->opts->cancel) {
		aptix_error_set(APTIX_ERROR_INVALID, "indexing cancelled");
		return 1;
	}
	return 0;
}

static int manifest_ns(aptix_buf *ns, const struct rag_settings *s)
{
	if (s->backend == RAG_QDRANT)
		return aptix_rag__qdrant_ns(ns, s->collection);
	return aptix_buf_set(ns, "f", 1);
}

static int scan_old(struct scan_ctx *sc, aptix_repo *repo,
		    const aptix_buf *ns, const char *const *scopes,
		    size_t nscopes)
{
	size_t i, k;
	int r = 0, all;

	for (i = 0; i < (nscopes ? nscopes : 1); i++) {
		char *scope = aptix_rag__norm_prefix(nscopes ? scopes[i] : "");

		if (!scope)
			return APTIX_ERROR;
		sc->scope = scope;
		aptix_buf_set(&sc->start, ns->ptr, ns->len);
		aptix_buf_puts(&sc->start, scope);
		if (aptix_buf_oom(&sc->start))
			r = aptix_error_oom();
		else if (sc->start.len > KEY_PATH_CUT)
			aptix_buf_truncate(&sc->start, KEY_PATH_CUT);
		if (!r)
			r = repo->store->iter(repo->store, APTIX_TABLE_RAG,
					      sc->start.ptr, sc->start.len,
					      scan_cb, sc);
		all = !*scope;
		free(scope);
		if (r < 0)
			return r;
		if (all)
			break;
	}
	if (sc->n > 1)
		qsort(sc->v, sc->n, sizeof(*sc->v), old_cmp);
	/* overlapping scopes list a file twice */
	for (i = k = 0; i < sc->n; i++) {
		if (k && !strcmp(sc->v[k - 1].path, sc->v[i].path)) {
			free(sc->v[i].path);
			continue;
		}
		sc->v[k++] = sc->v[i];
	}
	sc->n = k;
	return 0;
}

int aptix_rag_index(aptix_rag_index_stats *out, aptix_repo *repo,
		    const aptix_config *cfg, const aptix_rag_index_options *o)
{
	struct rag_settings s;
	struct indexer ix;
	struct scan_ctx sc;
	aptix_buf ns = APTIX_BUF_INIT;
	char **files = NULL;
	size_t i, nfiles = 0;
	int r;

	APTIX_ASSERT_ARG(out);
	APTIX_ASSERT_ARG(repo);
	APTIX_ASSERT_ARG(o);
	APTIX_ASSERT_ARG(o->files || !o->nfiles);
	memset(out, 0, sizeof(*out));
	memset(&ix, 0, sizeof(ix));
	memset(&sc, 0, sizeof(sc));
	if ((r = aptix_rag__settings(&s, repo, cfg, o->backend)) < 0)
		return r;
	out->backend = s.backend == RAG_LOCAL ? "local" : "qdrant";
	ix.repo = repo;
	ix.s = &s;
	ix.opts = o;
	ix.st = out;
	ix.t0 = aptix_http_now_ms();
	sc.s = &s;

	if (s.backend == RAG_QDRANT &&
	    ((r = aptix_rag__qdrant_open(&ix.q, &s, 0, 3)) < 0 ||
	     (r = aptix_rag__qdrant_prepare(ix.q, repo)) < 0))
		goto done;
	if ((r = manifest_ns(&ns, &s)) < 0 ||
	    (r = scan_old(&sc, repo, &ns, o->scopes, o->nscopes)) < 0)
		goto done;

	/* the files, sorted, once each */
	if (o->nfiles && !(files = aptix__calloc(o->nfiles, sizeof(*files)))) {
		r = APTIX_ERROR;
		goto done;
	}
	for (i = 0; i < o->nfiles; i++) {
		if (!o->files[i] || !path_ok(o->files[i])) {
			out->files_scanned++;
			out->files_skipped++;
			continue;
		}
		files[nfiles++] = (char *)o->files[i];
	}
	if (nfiles > 1)
		qsort(files, nfiles, sizeof(*files), str_cmp);
	ix.total = nfiles;
	for (i = 0; i < nfiles; i++) {
		struct old_file key, *old;

		if (i && !strcmp(files[i - 1], files[i])) {
			ix.total--;
			continue;
		}
		if (cancelled(&ix)) {
			r = APTIX_ECANCELLED;
			break;
		}
		out->files_scanned++;
		key.path = files[i];
		old = sc.n ? bsearch(&key, sc.v, sc.n, sizeof(*sc.v),
				     old_cmp) : NULL;
		if (old)
			old->seen = 1;
		if ((r = index_file(&ix, files[i], old)) < 0)
			break;
		ix.done++;
		if (batch_full(&ix) && (r = flush(&ix)) < 0)
			break;
		progress(&ix, 0);
	}
	/* indexed files that are gone */
	for (i = 0; r == 0 && i < sc.n; i++) {
		if (sc.v[i].seen)
			continue;
		if (!batch_add(&ix.batch, sc.v[i].path)) {
			r = APTIX_ERROR;
			break;
		}
		ix.batch.ops[ix.batch.n - 1].remove = 1;
		if (batch_full(&ix) && (r = flush(&ix)) < 0)
			break;
	}
	if (r == 0 || r == APTIX_ECANCELLED) {
		int f = flush(&ix);

		if (r == 0)
			r = f;
	}
	if (r == 0)
		progress(&ix, 1);
	if (r == APTIX_ECANCELLED)
		aptix_error_set(APTIX_ERROR_INVALID, "indexing cancelled");
	out->files_changed = ix.counts.files_changed;
	out->files_removed = ix.counts.files_removed;
	out->chunks_added = ix.counts.chunks_added;
	out->chunks_removed = ix.counts.chunks_removed;
	out->chunks_embedded = ix.counts.chunks_embedded;
	if (r == 0)
		r = aptix_rag_index_count(&out->files_total,
					  &out->chunks_total, repo, cfg,
					  out->backend);
done:
	batch_clear(&ix.batch);
	free(ix.batch.ops);
	for (i = 0; i < sc.n; i++)
		free(sc.v[i].path);
	free(sc.v);
	aptix_buf_release(&sc.start);
	free(files);
	aptix_buf_release(&ns);
	aptix_rag__qdrant_free(ix.q);
	aptix_rag__settings_release(&s);
	out->duration_ms = aptix_http_now_ms() - ix.t0;
	return r;
}

struct count_manifest_ctx {
	const aptix_buf *ns;
	size_t files, chunks;
};

static int count_manifest_cb(const void *key, size_t klen, const void *val,
			     size_t vlen, void *payload)
{
	struct count_manifest_ctx *c = payload;
	struct rag_manifest m;
	int r;

	if (klen < c->ns->len || memcmp(key, c->ns->ptr, c->ns->len))
		return APTIX_ITEROVER;
	if ((r = aptix_rag__manifest_decode(&m, val, vlen)) < 0)
		return r;
	c->files++;
	c->chunks += m.n;
	aptix_rag__manifest_release(&m);
	return 0;
}

int aptix_rag_index_count(size_t *files, size_t *chunks, aptix_repo *repo,
			  const aptix_config *cfg, const char *backend)
{
	struct rag_settings s;
	struct count_manifest_ctx c;
	aptix_buf ns = APTIX_BUF_INIT;
	int r;

	APTIX_ASSERT_ARG(repo);
	*files = *chunks = 0;
	if ((r = aptix_rag__settings(&s, repo, cfg, backend)) < 0)
		return r;
	if (s.backend == RAG_LOCAL) {
		r = aptix_rag__local_count(files, chunks, repo);
	} else if ((r = manifest_ns(&ns, &s)) == 0) {
		memset(&c, 0, sizeof(c));
		c.ns = &ns;
		r = repo->store->iter(repo->store, APTIX_TABLE_RAG, ns.ptr,
				      ns.len, count_manifest_cb, &c);
		*files = c.files;
		*chunks = c.chunks;
	}
	aptix_buf_release(&ns);
	aptix_rag__settings_release(&s);
	return r;
}

int aptix_rag_index_reset(aptix_repo *repo, const aptix_config *cfg,
			  const char *backend)
{
	static const char *const local[] = { "d", "t", "f", "s" };
	struct rag_settings s;
	aptix_buf ns = APTIX_BUF_INIT;
	size_t i;
	int r;

	APTIX_ASSERT_ARG(repo);
	if ((r = aptix_rag__settings(&s, repo, cfg, backend)) < 0)
		return r;
	if (s.backend == RAG_LOCAL) {
		for (i = 0; i < ARRAY_SIZE(local) && r == 0; i++)
			r = aptix_rag__delete_prefix(repo, local[i], 1);
	} else if ((r = aptix_rag__qdrant_ns(&ns, s.collection)) == 0 &&
		   (r = aptix_rag__delete_prefix(repo, ns.ptr, ns.len)) == 0) {
		/* the collection record: "c" collection, exactly */
		aptix_buf_set(&ns, "c", 1);
		aptix_buf_puts(&ns, s.collection);
		aptix_buf_putc(&ns, '\0');
		if (aptix_buf_oom(&ns))
			r = aptix_error_oom();
		else
			r = aptix_rag__delete_key(repo, ns.ptr, ns.len - 1);
	}
	aptix_buf_release(&ns);
	aptix_rag__settings_release(&s);
	return r;
}

/* ------------------------------------------------------------------ */
/* Retrieval                                                            */
/* ------------------------------------------------------------------ */

static int has_terms_cb(const char *t, size_t n, void *payload)
{
	(void)t;
	(void)n;
	(void)payload;
	return 1;
}

int aptix_rag_retrieve(aptix_chunk_set *out, aptix_repo *repo,
		       const aptix_config *cfg, const aptix_rag_query *q)
{
	struct rag_settings s;
	struct rag_qdrant *qd = NULL;
	char **qprefixes = NULL, *const *prefixes;
	size_t nprefixes, i, n0;
	const char *repo_name, *language;
	long top_k;
	double threshold;
	int r, required;

	APTIX_ASSERT_ARG(out);
	APTIX_ASSERT_ARG(repo);
	APTIX_ASSERT_ARG(q);
	if ((r = aptix_rag__settings(&s, repo, cfg, NULL)) < 0) {
		int req = 0;

		aptix_config_get_bool(&req, cfg, "rag.required", 0);
		if (req)
			return r;
		aptix_chunk_set_warn(out, "retrieval skipped: %s",
				     aptix_error_last()->message);
		aptix_error_clear();
		return 0;
	}
	required = s.required;
	n0 = out->n;
	if (!q->query || aptix_rag__tokenize(q->query, strlen(q->query),
					     has_terms_cb, NULL) != 1) {
		r = 0;
		goto done;
	}
	/*
	 * The local index belongs to this store: its chunks are filtered
	 * by repo only when one is named (a renamed workspace keeps its
	 * index until re-indexed); a Qdrant collection may be shared.
	 */
	repo_name = q->repo_name && *q->repo_name ? q->repo_name :
		s.repo_explicit || s.backend == RAG_QDRANT ? s.repo_name :
		NULL;
	language = q->language && *q->language ? q->language : s.language;
	top_k = q->top_k > 0 ? q->top_k : s.top_k;
	threshold = q->score_threshold >= 0 ? q->score_threshold :
		s.threshold;
	prefixes = s.prefixes;
	nprefixes = s.nprefixes;
	if (q->path_prefixes) {
		if (q->nprefixes &&
		    !(qprefixes = aptix__calloc(q->nprefixes,
						sizeof(*qprefixes)))) {
			r = APTIX_ERROR;
			goto fail;
		}
		for (i = 0; i < q->nprefixes; i++)
			if (!(qprefixes[i] = aptix_rag__norm_prefix(
				      q->path_prefixes[i]))) {
				r = APTIX_ERROR;
				goto fail;
			}
		prefixes = qprefixes;
		nprefixes = q->nprefixes;
	}
	/* a prefix matching everything is no filter */
	for (i = 0; i < nprefixes; i++)
		if (!*prefixes[i])
			nprefixes = 0;

	if (s.backend == RAG_LOCAL) {
		r = aptix_rag__local_query(out, repo, q->query, repo_name,
					   prefixes, nprefixes, language,
					   top_k, threshold);
	} else {
		aptix_openai_options http = q->http;
		int64_t deadline = aptix_http_now_ms() + s.timeout_ms;
		const char *base = aptix_config_get(cfg, "openai.base-url");

		if (!http.base_url || !*http.base_url)
			http.base_url = base;
		if (!http.api_key)
			http.api_key = getenv("OPENAI_API_KEY");
		if (!http.total_timeout_ms ||
		    http.total_timeout_ms > s.timeout_ms)
			http.total_timeout_ms = (long)s.timeout_ms;
		http.on_delta = NULL;
		r = aptix_rag__qdrant_open(&qd, &s, deadline, 1);
		if (r == 0)
			r = aptix_rag__qdrant_query(out, qd, &s, &http,
						    q->query, repo_name,
						    prefixes, nprefixes,
						    language, top_k,
						    threshold);
	}
fail:
	if (r < 0) {
		/* no partial results */
		while (out->n > n0) {
			aptix_rag_chunk *c = &out->v[--out->n];

			free(c->chunk_id);
			free(c->repo);
			free(c->path);
			free(c->language);
			aptix_buf_release(&c->text);
		}
		if (r == APTIX_ECANCELLED || required)
			goto done;
		r = aptix_chunk_set_warn(out, "retrieval skipped: %s",
					 aptix_error_last()->message);
		aptix_error_clear();
	}
done:
	if (qprefixes) {
		for (i = 0; i < q->nprefixes; i++)
			free(qprefixes[i]);
		free(qprefixes);
	}
	aptix_rag__qdrant_free(qd);
	aptix_rag__settings_release(&s);
	return r;
}
