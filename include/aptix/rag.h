/*
 * aptix/rag.h - retrieval: indexing source files into chunks and finding
 * the chunks an instruction needs, from an index embedded in the store
 * (BM25, no network) or from Qdrant (embeddings).
 */
#ifndef APTIX_RAG_H
#define APTIX_RAG_H

#include "common.h"
#include "config.h"
#include "context.h"
#include "openai.h"
#include "repo.h"

typedef struct {
	unsigned version;
	const char *query;
	/** filter; NULL: rag.repo, else for qdrant the workspace's name */
	const char *repo_name;
	const char *const *path_prefixes;	/**< filter; NULL: config */
	size_t nprefixes;
	const char *language;		/**< filter; NULL: any */
	long top_k;			/**< 0: rag.top-k or 8 */
	double score_threshold;		/**< < 0: rag.score-threshold or 0 */
	aptix_openai_options http;	/**< for embeddings (qdrant) */
	/** qdrant: the server, e.g. http://localhost:6333 (NULL: unset) */
	const char *qdrant_url;
	/** qdrant: sent as the api-key header only (NULL: none) */
	const char *qdrant_api_key;
} aptix_rag_query;

#define APTIX_RAG_QUERY_INIT { 1, NULL, NULL, NULL, 0, NULL, 0, -1, \
	APTIX_OPENAI_OPTIONS_INIT, NULL, NULL }

/**
 * @brief Retrieve the chunks for a query with the configured backend
 *        (rag.backend: local, the default, or qdrant). A backend that is
 *        down, slow or failing gives an empty set with a warning, unless
 *        rag.required is true: then an error.
 * @note Chunks are appended to out (initialised by the caller) best
 *       first. For qdrant, an unset q->http.base_url is openai.base-url;
 *       the keys are only those in q (the library reads no key from the
 *       environment); embedding and search share the rag.timeout
 *       budget. The local backend needs no network; an index never
 *       built gives an empty set without a warning. Chunks holding a
 *       credential (indexed before the detector knew it) and chunks of
 *       paths .aptixignore names are dropped, with a warning.
 * @return 0 (warnings in out->warnings); with rag.required: APTIX_ENET
 *         (unreachable, timeout), APTIX_EHTTP (an error status: the
 *         server's message, e.g. a vector size mismatch), APTIX_EINVALID
 *         (q->qdrant_url unset, a malformed answer); APTIX_ECANCELLED.
 */
APTIX_EXTERN(int) aptix_rag_retrieve(aptix_chunk_set *out, aptix_repo *repo,
				     const aptix_config *cfg,
				     const aptix_rag_query *q);

/*
 * Settings (aptix config), all optional:
 *   rag.backend          local (default) or qdrant
 *   rag.repo             the repo name recorded on chunks and filtered
 *                        on (default: the name of the workspace root;
 *                        the local backend then does not filter)
 *   rag.path-prefix      retrieval filter: comma-separated prefixes
 *   rag.language         retrieval filter: one language
 *   rag.top-k            default 8; rag.score-threshold default 0
 *   rag.required         true: a failing backend is an error
 *   rag.timeout          retrieval budget (embedding and search), 10s
 *   rag.chunk-lines      lines per chunk, default 40
 *   rag.chunk-overlap    lines shared by neighbouring chunks, default 5
 *   rag.max-file-size    larger files are not indexed, default 1m
 *   rag.collection       Qdrant collection, default "aptix"
 *   rag.embedding-model  default text-embedding-3-small
 *   rag.embed-batch      texts per embeddings request, default 64
 * The Qdrant server and its key come in the options (the CLI takes them
 * from QDRANT_URL and QDRANT_API_KEY); the key is sent as the api-key
 * header, never stored nor printed.
 *
 * A path prefix is a directory (or a file) relative to the workspace
 * root: "src" matches "src" and "src/..." but not "srcx"; "" or "."
 * match everything. The same rule applies to the scopes of indexing.
 *
 * Chunk ids are UUIDs made of the first 16 bytes of the SHA-256 of
 * "repo NUL path NUL start NUL end NUL content-hash" with the version
 * (8: RFC 9562 name-based, SHA-256) and variant bits set: the same chunk
 * of the same file always gets the same id.
 */

/** Progress of aptix_rag_index(), told after each file and at the end. */
typedef struct {
	size_t files_done, files_total;
	size_t chunks_done;		/**< chunks of new or changed files */
	int64_t elapsed_ms;
	int finished;			/**< the last call */
} aptix_rag_progress;

typedef struct {
	unsigned version;
	const char *backend;		/**< NULL: rag.backend */
	/**
	 * The files to index, relative to the workspace root with '/'
	 * separators. Files that are missing, not regular, binary (NUL
	 * bytes, invalid UTF-8) or larger than rag.max-file-size are
	 * skipped (and their chunks removed if they had some).
	 */
	const char *const *files;
	size_t nfiles;
	/**
	 * Indexed files under these prefixes that are not in files are
	 * removed from the index. NULL or nscopes == 0: the whole index.
	 */
	const char *const *scopes;
	size_t nscopes;
	/**
	 * For embeddings (qdrant). Files holding http.api_key,
	 * qdrant_api_key or another credential are never indexed, whatever
	 * the backend.
	 */
	aptix_openai_options http;
	const char *qdrant_url;		/**< qdrant: the server (NULL: unset) */
	const char *qdrant_api_key;	/**< qdrant: the api-key header */
	void (*progress)(const aptix_rag_progress *p, void *payload);
	void *payload;
	volatile sig_atomic_t *cancel;	/**< non-zero: stop between batches */
	/**
	 * Told of each file not indexed because it holds a credential
	 * (aptix/credscan.h; why: "GitHub token on line 3 (rule
	 * github-token)"); may be NULL. Such files are skipped (their chunks
	 * removed), as are the paths .aptixignore names.
	 */
	void (*on_withheld)(const char *path, const char *why, void *payload);
} aptix_rag_index_options;

#define APTIX_RAG_INDEX_OPTIONS_INIT { 1, NULL, NULL, 0, NULL, 0, \
	APTIX_OPENAI_OPTIONS_INIT, NULL, NULL, NULL, NULL, NULL, NULL }

typedef struct {
	const char *backend;		/**< "local" or "qdrant" (static) */
	size_t files_scanned;		/**< files given */
	size_t files_unchanged;		/**< same content as indexed */
	size_t files_changed;		/**< new or changed: re-chunked */
	size_t files_removed;		/**< their chunks were dropped */
	size_t files_skipped;		/**< binary, too large, unreadable */
	size_t chunks_added, chunks_removed;
	size_t chunks_embedded;		/**< texts sent for embedding */
	size_t files_total, chunks_total;	/**< in the index after */
	int64_t duration_ms;
} aptix_rag_index_stats;

/**
 * @brief Index files incrementally with the configured backend: a file
 *        whose content did not change is skipped, a changed file has
 *        only its new chunks added (embedded and uploaded for qdrant)
 *        and its vanished chunks removed. The local backend writes in
 *        short transactions, one per batch of files; the qdrant backend
 *        records what it uploaded in the store (no write transaction is
 *        held across a network call), creating the collection when it
 *        is missing.
 * @return 0; APTIX_EINVALID for bad settings; APTIX_ENET / APTIX_EHTTP
 *         when Qdrant or the embeddings endpoint fails (the batches
 *         done so far stay indexed); APTIX_ECANCELLED; a store error.
 */
APTIX_EXTERN(int) aptix_rag_index(aptix_rag_index_stats *out,
				  aptix_repo *repo, const aptix_config *cfg,
				  const aptix_rag_index_options *opts);

/**
 * @brief What the index of a backend (NULL: rag.backend) holds, from
 *        the store only (no network): files and chunks.
 */
/**
 * @brief Forget the index of a backend (NULL: rag.backend): local, every
 *        chunk; qdrant, the store's record of what was uploaded to
 *        rag.collection (the next aptix_rag_index() uploads every chunk
 *        again; points are not deleted from the server).
 */
APTIX_EXTERN(int) aptix_rag_index_reset(aptix_repo *repo,
					const aptix_config *cfg,
					const char *backend);

/** What the index holds that the work tree no longer has. */
typedef struct {
	size_t files;		/**< files in the index */
	size_t changed;		/**< their content changed since indexing */
	size_t gone;		/**< removed (or no longer regular files) */
	char first[256];	/**< one of them, for a message ("" if none) */
} aptix_rag_staleness;

/**
 * @brief Compare the index of rag.backend with the work tree, from the
 *        store and the files (no network): which indexed files changed
 *        or went since they were indexed. Only files modified since the
 *        last full indexing run began are read and hashed.
 * @return 0 (all zero when retrieval is not set up); a store error.
 */
APTIX_EXTERN(int) aptix_rag_index_staleness(aptix_rag_staleness *out,
					    aptix_repo *repo,
					    const aptix_config *cfg);

APTIX_EXTERN(int) aptix_rag_index_count(size_t *files, size_t *chunks,
					aptix_repo *repo,
					const aptix_config *cfg,
					const char *backend);

#endif
