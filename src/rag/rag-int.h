/*
 * src/rag/rag-int.h - retrieval internals shared by rag.c (settings, the
 * driver of indexing and retrieval), rag-chunk.c (tokens, chunks),
 * rag-manifest.c (records of the rag table), and the two backends behind
 * struct aptix_rag_backend: rag-local.c (BM25 in the store) and
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
 *   "i" ns                      be64 ms: when the last indexing run of
 *                               the whole work tree under the backend's
 *                               namespace ns began (status reads only
 *                               the files modified since)
 *   "q" collection NUL path     qdrant manifest of a file (what was
 *                               uploaded to that collection)
 *   "c" collection              qdrant collection record: u8 version,
 *                               SHA-256 of QDRANT_URL (33 bytes)
 *
 * objects-format.md ("The retrieval index") specifies every record.
 *
 * A manifest (for incremental indexing): u8 version, be16 chunk lines,
 * be16 overlap, 32 bytes SHA-256 of the file, varint + repo name,
 * varint + path, varint count, then per chunk its 16-byte id and varint
 * document number (0 for qdrant). A path too long for a key is cut and
 * followed by NUL and its SHA-256; the value always holds it whole.
 */
#ifndef APTIX_SRC_RAG_INT_H
#define APTIX_SRC_RAG_INT_H

#include "util/common.h"
#include "repo/repo.h"
#include "aptix/rag.h"
#include "util/tokens.h"

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
#define RAG_KEY_PATH_MAX 480	/* keys are at most 511 bytes */
#define RAG_KEY_PATH_CUT 400

enum rag_backend { RAG_LOCAL = 0, RAG_QDRANT = 1 };

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
/*
 * The manifest of op as indexed under s, its chunks' uuids in order
 * (docnum 0). m owns m->c alone (free it, not the manifest): repo and
 * path are s's and op's. 0, or APTIX_ERROR.
 */
struct rag_file_op;
int aptix_rag__manifest_of(struct rag_manifest *m,
			   const struct rag_settings *s,
			   const struct rag_file_op *op);
/*
 * Every manifest whose key starts with prefix (a namespace, or one and
 * the start of a path), decoded, in key order: fn may take m->path
 * (setting it NULL); m is released after it. fn's negative return ends
 * the walk with it.
 */
typedef int (*aptix_rag__manifest_fn)(struct rag_manifest *m, void *payload);
int aptix_rag__manifest_each(aptix_repo *repo, const void *prefix,
			     size_t plen, aptix_rag__manifest_fn fn,
			     void *payload);

/* --- The indexing batch ------------------------------------------------- */

struct rag_file_op {
	char *path;
	int remove;			/* drop the file's chunks */
	unsigned char hash[32];
	aptix_buf content;
	aptix_rag__chunk *chunks;
	size_t nchunks;
	aptix__terms *terms;	/* local: per chunk */
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

/* Add a chunk to a set (takes copies). */
int aptix_rag__set_add(aptix_chunk_set *out, const char *id,
		       const char *repo, const char *path, long start,
		       long end, const char *language, const char *hash,
		       double score, const char *text, size_t text_len);

/* Delete every key of the table starting with prefix (short writes). */
int aptix_rag__delete_prefix(aptix_repo *repo, const void *prefix,
			     size_t len);
int aptix_rag__delete_key(aptix_repo *repo, const void *key, size_t len);
/* key set to val (vlen bytes), in a write of its own. */
int aptix_rag__put_key(aptix_repo *repo, const void *key, size_t klen,
		       const void *val, size_t vlen);
/* The files and chunks of the manifests under ns, from the store. */
int aptix_rag__count_manifests(size_t *files, size_t *chunks,
			       aptix_repo *repo, const aptix_buf *ns);

/* --- Backends ----------------------------------------------------------- */

/*
 * What a retrieval backend implements. The driver (rag.c) reads the
 * settings, opens the backend rag.backend names with
 * aptix_rag__backend_open() and from then on only calls through this
 * table; it owns the chunking, the file manifests it reads to decide
 * what changed, the batches and the statistics.
 *
 * A backend embeds this struct as its first member and is made by its
 * constructor (aptix_rag__local_new, aptix_rag__qdrant_new), which
 * fills the fields and does no I/O: counting and resetting work without
 * a server. repo, the settings and everything the options point to are
 * borrowed and must outlive the backend; the backend owns ns and
 * whatever it allocates, all released by free.
 *
 * A NULL slot means "not supported": the driver refuses the operation
 * with APTIX_EINVALID ("begin" only: nothing to prepare). Slots return
 * 0 or a negative aptix code with aptix_error_set() done, and may
 * return:
 *   begin   before a batch is applied: reach the server, check what the
 *           store says was uploaded (APTIX_EINVALID for bad options,
 *           APTIX_ENET, APTIX_EHTTP, a store error)
 *   apply   index a batch: ops with remove set lose their chunks, the
 *           others get theirs (new or changed files, already chunked,
 *           with per-chunk terms when needs_terms), and their manifests
 *           under ns are written; counts are added to. The batch stays
 *           the caller's. APTIX_ENET, APTIX_EHTTP, APTIX_EFULL, a store
 *           error; what was applied before a failure stays applied.
 *   query   append the best chunks for q to out, best first (copies,
 *           aptix_rag__set_add); the driver drops them on failure.
 *           APTIX_ENET, APTIX_EHTTP, APTIX_EINVALID, APTIX_ECORRUPT.
 *   count   files and chunks in the index, from the store only
 *   reset   forget the index (the store's part of it)
 *   free    release the backend; accepts NULL
 */
#define APTIX_RAG_BACKEND_VERSION 1

/* A retrieval, its defaults resolved by the driver. */
struct rag_query {
	const char *text;
	const char *repo_name;		/* NULL: no filter */
	char *const *prefixes;		/* none matching everything */
	size_t nprefixes;
	const char *language;		/* NULL: any */
	long top_k;
	double threshold;
};

/* What a backend is opened with; every pointer borrowed. */
struct rag_backend_options {
	aptix_openai_options http;	/* embeddings (by value) */
	const char *qdrant_url;		/* NULL or "": not set */
	const char *qdrant_api_key;	/* NULL or "": none */
	int64_t deadline;		/* 0: a time limit per request */
	int attempts;			/* per call, at least 1 */
};

struct aptix_rag_backend {
	unsigned version;		/* APTIX_RAG_BACKEND_VERSION */
	const char *name;		/* "local", "qdrant" (static) */
	aptix_repo *repo;
	const struct rag_settings *s;
	aptix_buf ns;			/* the key prefix of its manifests */
	size_t batch_files, batch_bytes;	/* flush a batch this full */
	int needs_terms;		/* apply wants chunks' terms */
	/*
	 * The index may hold other workspaces' chunks: retrieval always
	 * filters on the repo name (else only when rag.repo is set).
	 */
	int shared;
	int (*begin)(struct aptix_rag_backend *b);
	int (*apply)(struct aptix_rag_backend *b, struct rag_batch *batch,
		     struct rag_counts *counts);
	int (*query)(aptix_chunk_set *out, struct aptix_rag_backend *b,
		     const struct rag_query *q);
	int (*count)(size_t *files, size_t *chunks,
		     struct aptix_rag_backend *b);
	int (*reset)(struct aptix_rag_backend *b);
	void (*free)(struct aptix_rag_backend *b);
};

typedef int (*aptix_rag__backend_new_fn)(struct aptix_rag_backend **out,
					 aptix_repo *repo,
					 const struct rag_settings *s,
					 const struct rag_backend_options *o);

/*
 * The path and the text of a local chunk record (a "d" key's value):
 * 0, or APTIX_ECORRUPT. For purge.c, which looks for a secret in them.
 */
int aptix_rag__local_doc(aptix_buf *path, aptix_buf *text, const void *val,
			 size_t len);

int aptix_rag__local_new(struct aptix_rag_backend **out, aptix_repo *repo,
			 const struct rag_settings *s,
			 const struct rag_backend_options *o);
int aptix_rag__qdrant_new(struct aptix_rag_backend **out, aptix_repo *repo,
			  const struct rag_settings *s,
			  const struct rag_backend_options *o);

/* For constructors: version, name, repo, s and an empty ns. */
void aptix_rag__backend_init(struct aptix_rag_backend *b, const char *name,
			     aptix_repo *repo, const struct rag_settings *s);

/*
 * The backend of s->backend, by the driver's table; APTIX_EINVALID for
 * a kind it does not know. Free with aptix_rag__backend_free().
 */
int aptix_rag__backend_open(struct aptix_rag_backend **out, aptix_repo *repo,
			    const struct rag_settings *s,
			    const struct rag_backend_options *o);
void aptix_rag__backend_free(struct aptix_rag_backend *b);

#endif
