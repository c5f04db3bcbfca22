/*
 * src/util/tokens.h - the words of a text, as retrieval and search count
 * them (tokens.c): code-aware tokens, a string-keyed map with a number
 * per key, the distinct terms of a text with their frequencies, and the
 * BM25 weights that score them. Used by the local retrieval index
 * (rag/) and the search index of sessions (index/search.c).
 */
#ifndef APTIX_SRC_UTIL_TOKENS_H
#define APTIX_SRC_UTIL_TOKENS_H

#include "util/common.h"

#define APTIX_TERM_MAX 64		/* longer tokens are cut (PARTS) */
#define APTIX_BM25_K1 1.2
#define APTIX_BM25_B 0.75

enum aptix_tok_mode {
	/*
	 * Each identifier (a run of letters, digits, '_' and non-ASCII
	 * bytes) lowercased and split at '_', at camelCase / PascalCase
	 * boundaries (HTTPServer: http, server) and between letters and
	 * digits; the whole identifier too when it has several parts.
	 * Tokens of fewer than 2 bytes are dropped; longer than
	 * APTIX_TERM_MAX are cut. (The retrieval index.)
	 */
	APTIX_TOK_PARTS = 0,
	/*
	 * Each identifier whole, lowercased (ASCII), when it has 2 to
	 * APTIX_TERM_MAX bytes; one that is longer is given to the
	 * callback as a NULL term of its length (it is not a term), one
	 * shorter is dropped. Every occurrence of a word of a needle in a
	 * text is then either a term of the text or within an identifier
	 * that is one (the search index: see index/search.c).
	 */
	APTIX_TOK_WHOLE = 1,
	/*
	 * WHOLE, and then, for an identifier of several parts (as PARTS
	 * splits it: parseConfig, nu_xi, sigma42), each part of 2 bytes
	 * or more too, so that `aptix search config` finds parseConfig.
	 * What WHOLE promises still holds: this only adds terms. (The
	 * search index.)
	 */
	APTIX_TOK_SEARCH = 2
};

typedef int (*aptix__term_cb)(const char *term, size_t len, void *payload);

/*
 * The tokens of a text, in order, by mode. A non-zero return of cb stops
 * and is returned.
 */
int aptix__tokenize(const char *text, size_t len, enum aptix_tok_mode mode,
		    aptix__term_cb cb, void *payload);
/* Is c a byte of an identifier (a letter, digit, '_' or non-ASCII)? */
int aptix__tok_byte(unsigned char c);

/* A string-keyed hash map with a number per key. */
struct aptix__smap_ent {
	char *key;
	uint32_t h;
	uint32_t val;
};

struct aptix__smap {
	struct aptix__smap_ent *v;
	size_t n, cap;
};

/* The entry of key (n bytes), created with val 0 when missing; NULL on
 * OOM. The pointer is valid until the next call. */
struct aptix__smap_ent *aptix__smap_get(struct aptix__smap *m, const char *key,
					size_t n);
/* The entry of key (n bytes), or NULL when it has none. */
struct aptix__smap_ent *aptix__smap_find(const struct aptix__smap *m,
					  const char *key, size_t n);
void aptix__smap_release(struct aptix__smap *m);

struct aptix__tf {
	char *term;
	uint32_t tf;
};

/* The distinct terms of a text with their frequencies, sorted. */
typedef struct {
	struct aptix__tf *v;
	size_t n;
	uint32_t len;			/* number of tokens */
	int long_words;			/* WHOLE: an identifier too long */
} aptix__terms;

int aptix__count_terms(aptix__terms *out, const char *text, size_t len,
		       enum aptix_tok_mode mode);
void aptix__terms_release(aptix__terms *t);

/* BM25: the weight of a term in df of n documents (never negative). */
double aptix__bm25_idf(double n, double df);
/* ... and of tf occurrences in a document of len tokens. */
double aptix__bm25(double idf, double tf, double len, double avgdl);

#endif
