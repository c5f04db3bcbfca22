/*
 * src/rag-int.h - retrieval internals shared by rag.c (tokens, chunks,
 * manifests, the indexing driver), rag-local.c (BM25 in the store) and
 * rag-qdrant.c (the Qdrant REST client).
 *
 * Everything lives in the store's APTIX_TABLE_RAG, keys by prefix:
 *
 *   "s"                         local stats: u8 version, be64 chunks,
 *                               be64 total tokens, be32 next document
 *                               number, be64 files
 *   "d" be32 docnum             local document (a chunk): see rag-local.c
 *   "t" term                    local postings of a term: see rag-local.c
 *   "f" path                    local manifest of a file
 *   "q" collection NUL path     qdrant manifest of a file (what was
 *                               uploaded to that collection)
 *   "c" collection              qdrant collection record: u8 version,
 *                               SHA-256 of QDRANT_URL, be32 vector size
 *
 * A manifest (for incremental indexing): u8 version, be16 chunk lines,
 * be16 overlap, 32 bytes SHA-256 of the file, varint + repo name,
 * varint + path, varint count, then per chunk its 16-byte id and varint
 * document number (0 for qdrant). A path too long for a key is cut and
 * followed by NUL and its SHA-256; the value always holds it whole.
 */
#ifndef APTIX_SRC_RAG_INT_H
#define APTIX_SRC_RAG_INT_H

#include "common.h"
#include "repo.h"
#include "aptix/rag.h"

#define RAG_TERM_MAX 64			/* longer tokens are cut */
#define RAG_CHUNK_MAX_BYTES (16 << 10)	/* a chunk ends before this */
/*
 * Files per batch (one write transaction for the local backend), or this
 * much text. Fewer, larger local batches rewrite the postings of common
 * terms less often (the store stays about half the size it has with 64
 * files a batch) and a batch of 4 MiB still commits in well under a
 * second; qdrant batches are smaller so that what was uploaded is
 * recorded often.
 */
#define RAG_BATCH_FILES 512
#define RAG_BATCH_BYTES (4 << 20)
#define RAG_QDRANT_BATCH_FILES 64
#define RAG_QDRANT_BATCH_BYTES (1 << 20)
#define RAG_MANIFEST_VERSION 1

enum rag_backend { RAG_LOCAL = 0, RAG_QDRANT = 1 };

/* --- Tokens ------------------------------------------------------------ */

typedef int (*aptix_rag__term_cb)(const char *term, size_t len,
				  void *payload);

/*
 * The code-aware tokens of a text, in order: each identifier (a run of
 * letters, digits, '_' and non-ASCII bytes) lowercased and split at '_',
 * at camelCase / PascalCase boundaries (HTTPServer: http, server) and
 * between letters and digits; the whole identifier too when it has
 * several parts. Tokens of fewer than 2 bytes are dropped; longer than
 * RAG_TERM_MAX are cut. A non-zero return of cb stops and is returned.
 */
int aptix_rag__tokenize(const char *text, size_t len,
			aptix_rag__term_cb cb, void *payload);

/* A string-keyed hash map with a number per key. */
struct rag_smap_ent {
	char *key;
	uint32_t h;
	uint32_t val;
};

struct rag_smap {
	struct rag_smap_ent *v;
	size_t n, cap;
};

/* The entry of key (n bytes), created with val 0 when missing; NULL on
 * OOM. The pointer is valid until the next call. */
struct rag_smap_ent *aptix_rag__smap_get(struct rag_smap *m, const char *key,
					 size_t n);
void aptix_rag__smap_release(struct rag_smap *m);

struct rag_tf {
	char *term;
	uint32_t tf;
};

/* The distinct terms of a text with their frequencies, sorted. */
typedef struct {
	struct rag_tf *v;
	size_t n;
	uint32_t len;			/* number of tokens */
} aptix_rag__terms;

int aptix_rag__count_terms(aptix_rag__terms *out, const char *text,
			   size_t len);
void aptix_rag__terms_release(aptix_rag__terms *t);

/* --- Chunks ------------------------------------------------------------ */

typedef struct {
	long start_line, end_line;	/* 1-based, inclusive */
	size_t off, len;		/* the text in the file */
	char hash[65];			/* hex SHA-256 of the text */
	unsigned char uuid[16];
	char id[37];
} aptix_rag__chunk;

/*
 * Split text into chunks of about `lines` lines sharing `overlap` lines,
 * ending a chunk at a blank line in its last quarter when there is one,
 * before RAG_CHUNK_MAX_BYTES, and letting the last chunk grow by a
 * quarter rather than leave a small tail. Chunks of blank lines only are
 * left out. *out is malloc'd (NULL when there is no chunk).
 */
int aptix_rag__chunk_text(aptix_rag__chunk **out, size_t *n,
			  const char *text, size_t len, long lines,
			  long overlap);
/* Fill hash, uuid and id of a chunk of text. */
int aptix_rag__chunk_ident(aptix_rag__chunk *c, const char *repo,
			   const char *path, const char *text);
void aptix_rag__uuid_format(char out[37], const unsigned char u[16]);
int aptix_rag__uuid_parse(unsigned char u[16], const char *s);
/* "c", "python"...: from the file name; "text" when unknown. */
const char *aptix_rag__language(const char *path);
/* path is prefix, or under the directory prefix ("" matches all). */
int aptix_rag__path_in(const char *path, const char *prefix);
/* A prefix made canonical: no "./", no trailing or doubled '/'. */
char *aptix_rag__norm_prefix(const char *p);

/* --- Settings ---------------------------------------------------------- */

struct rag_settings {
	enum rag_backend backend;
	long chunk_lines, chunk_overlap, embed_batch;
	long max_file_size;
	long top_k;
	double threshold;
	int required;
	int64_t timeout_ms;
	char *repo_name;
	int repo_explicit;		/* rag.repo is set */
	const char *collection;
	const char *model;
	char **prefixes;		/* rag.path-prefix, split */
	size_t nprefixes;
	const char *language;
};

int aptix_rag__settings(struct rag_settings *s, aptix_repo *repo,
			const aptix_config *cfg, const char *backend);
void aptix_rag__settings_release(struct rag_settings *s);

/* --- Varints and records ------------------------------------------------ */

void aptix_rag__put_varint(aptix_buf *b, uint64_t v);
/* -1 when the input ends or overflows. */
int aptix_rag__get_varint(uint64_t *v, const unsigned char **p,
			  const unsigned char *end);
void aptix_rag__put_be32(unsigned char *p, uint32_t v);
uint32_t aptix_rag__get_be32(const unsigned char *p);

struct rag_mchunk {
	unsigned char uuid[16];
	uint32_t docnum;
};

struct rag_manifest {
	unsigned lines, overlap;
	unsigned char hash[32];
	char *repo;
	char *path;
	struct rag_mchunk *c;
	size_t n;
};

/* The key of path's manifest in namespace ns ("f", "q<coll>\0"). */
int aptix_rag__manifest_key(aptix_buf *key, const aptix_buf *ns,
			    const char *path);
int aptix_rag__manifest_encode(aptix_buf *out, const struct rag_manifest *m);
int aptix_rag__manifest_decode(struct rag_manifest *m, const void *val,
			       size_t len);
void aptix_rag__manifest_release(struct rag_manifest *m);

/* --- The indexing batch ------------------------------------------------- */

struct rag_file_op {
	char *path;
	int remove;			/* drop the file's chunks */
	unsigned char hash[32];
	aptix_buf content;
	aptix_rag__chunk *chunks;
	size_t nchunks;
	aptix_rag__terms *terms;	/* local: per chunk */
};

struct rag_batch {
	struct rag_file_op *ops;
	size_t n, alloc;
	size_t bytes;
};

struct rag_counts {
	size_t chunks_added, chunks_removed, chunks_embedded;
	size_t files_changed, files_removed;
};

/* --- Local backend (rag-local.c) ----------------------------------------- */

int aptix_rag__local_apply(aptix_repo *repo, const struct rag_settings *s,
			   struct rag_batch *b, struct rag_counts *counts);
int aptix_rag__local_query(aptix_chunk_set *out, aptix_repo *repo,
			   const char *query, const char *repo_name,
			   char *const *prefixes, size_t nprefixes,
			   const char *language, long top_k,
			   double threshold);
int aptix_rag__local_count(size_t *files, size_t *chunks,
			   aptix_repo *repo);

/* --- Qdrant backend (rag-qdrant.c) ---------------------------------------- */

struct rag_qdrant;

/* Read QDRANT_URL / QDRANT_API_KEY. deadline: 0 or a time limit. */
int aptix_rag__qdrant_open(struct rag_qdrant **out,
			   const struct rag_settings *s, int64_t deadline,
			   int attempts);
void aptix_rag__qdrant_free(struct rag_qdrant *q);
/* Before indexing: the collection's state; drops stale manifests. */
int aptix_rag__qdrant_prepare(struct rag_qdrant *q, aptix_repo *repo);
int aptix_rag__qdrant_apply(struct rag_qdrant *q, aptix_repo *repo,
			    const struct rag_settings *s,
			    const aptix_openai_options *http,
			    struct rag_batch *b, struct rag_counts *counts);
int aptix_rag__qdrant_query(aptix_chunk_set *out, struct rag_qdrant *q,
			    const struct rag_settings *s,
			    const aptix_openai_options *http,
			    const char *query, const char *repo_name,
			    char *const *prefixes, size_t nprefixes,
			    const char *language, long top_k,
			    double threshold);
/* The manifest namespace of a collection: "q" collection NUL. */
int aptix_rag__qdrant_ns(aptix_buf *ns, const char *collection);

/* Add a chunk to a set (takes copies). */
int aptix_rag__set_add(aptix_chunk_set *out, const char *id,
		       const char *repo, const char *path, long start,
		       long end, const char *language, const char *hash,
		       double score, const char *text, size_t text_len);

/* Delete every key of the table starting with prefix (short writes). */
int aptix_rag__delete_prefix(aptix_repo *repo, const void *prefix,
			     size_t len);
int aptix_rag__delete_key(aptix_repo *repo, const void *key, size_t len);

#endif
