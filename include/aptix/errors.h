/*
 * aptix/errors.h - return codes and the thread-local last error.
 *
 * Every library function returns 0 (APTIX_OK) or a negative code below.
 * On failure it also records a human-readable message, fetched with
 * aptix_error_last(). The library never prints and never exits.
 */
#ifndef APTIX_ERRORS_H
#define APTIX_ERRORS_H

#include "common.h"

typedef enum {
	APTIX_OK = 0,
	APTIX_ERROR = -1,	/**< generic failure */
	APTIX_ENOTFOUND = -3,	/**< object, ref or key does not exist */
	APTIX_EEXISTS = -4,	/**< already exists */
	APTIX_EAMBIGUOUS = -5,	/**< short id matches several objects */
	APTIX_EINVALID = -6,	/**< malformed input or argument */
	APTIX_EMISMATCH = -7,	/**< hash or compare-and-swap mismatch */
	APTIX_ELOCKED = -8,	/**< held by another process */
	APTIX_EFULL = -9,	/**< map or disk full, size cap reached */
	APTIX_ENET = -10,	/**< network failure */
	APTIX_EHTTP = -11,	/**< HTTP error status */
	APTIX_ECORRUPT = -12,	/**< stored data is damaged */
	APTIX_EVERSION = -13,	/**< written by a newer format version */
	APTIX_ECANCELLED = -14,	/**< interrupted by the user */
	APTIX_PASSTHROUGH = -30,/**< backends only: try the next one */
	APTIX_ITEROVER = -31	/**< iteration finished */
} aptix_error_code;

typedef enum {
	APTIX_ERROR_NONE = 0,
	APTIX_ERROR_NOMEMORY,
	APTIX_ERROR_OS,
	APTIX_ERROR_INVALID,
	APTIX_ERROR_ODB,
	APTIX_ERROR_ZLIB,
	APTIX_ERROR_LMDB,
	APTIX_ERROR_REFERENCE,
	APTIX_ERROR_OBJECT,
	APTIX_ERROR_REPOSITORY,
	APTIX_ERROR_CONFIG,
	APTIX_ERROR_JSON,
	APTIX_ERROR_HTTP,
	APTIX_ERROR_OPENAI,
	APTIX_ERROR_QDRANT
} aptix_error_class;

typedef struct {
	char *message;
	int klass;
} aptix_error;

/**
 * @brief The last error recorded on this thread.
 * @note The pointer stays valid until the next library call that fails
 *       or aptix_error_clear(). Never NULL: with no error the message
 *       is "no error".
 */
APTIX_EXTERN(const aptix_error *) aptix_error_last(void);

/** Forget the last error. */
APTIX_EXTERN(void) aptix_error_clear(void);

/**
 * @brief Record an error message (printf-style) of the given class.
 *        Used by the library and by backends.
 */
APTIX_EXTERN(void) aptix_error_set(int klass, const char *fmt, ...)
	APTIX_FORMAT(2, 3);

/** Record an out-of-memory error; returns APTIX_ERROR. */
APTIX_EXTERN(int) aptix_error_oom(void);

/** Record "<fmt>: strerror(errno)" of class APTIX_ERROR_OS. */
APTIX_EXTERN(void) aptix_error_set_os(const char *fmt, ...)
	APTIX_FORMAT(1, 2);

#endif
