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
	const char *repo_name;		/**< filter; NULL: rag.repo or derived */
	const char *const *path_prefixes;	/**< filter; NULL: config */
	size_t nprefixes;
	const char *language;		/**< filter; NULL: any */
	long top_k;			/**< 0: rag.top-k or 8 */
	double score_threshold;		/**< < 0: rag.score-threshold or 0 */
	aptix_openai_options http;	/**< for embeddings (qdrant) */
} aptix_rag_query;

#define APTIX_RAG_QUERY_INIT { 1, NULL, NULL, NULL, 0, NULL, 0, -1, \
	APTIX_OPENAI_OPTIONS_INIT }

/**
 * @brief Retrieve the chunks for a query with the configured backend
 *        (rag.backend: local, the default, or qdrant). A backend that is
 *        down, slow or failing gives an empty set with a warning, unless
 *        rag.required is true: then an error.
 */
APTIX_EXTERN(int) aptix_rag_retrieve(aptix_chunk_set *out, aptix_repo *repo,
				     const aptix_config *cfg,
				     const aptix_rag_query *q);

#endif
