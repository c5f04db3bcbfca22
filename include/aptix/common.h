/*
 * aptix/common.h - export macros and basic types shared by every header.
 */
#ifndef APTIX_COMMON_H
#define APTIX_COMMON_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
# define APTIX_EXTERN(type) extern __attribute__((visibility("default"))) type
# define APTIX_FORMAT(a, b) __attribute__((format(printf, a, b)))
# define APTIX_UNUSED __attribute__((unused))
#else
# define APTIX_EXTERN(type) extern type
# define APTIX_FORMAT(a, b)
# define APTIX_UNUSED
#endif

/**
 * @brief Set a cancel flag (the `cancel` of the options of a call) so
 *        that the call stops: an atomic store, safe from another
 *        thread and from a signal handler. The library reads the flag
 *        with an atomic load; a plain assignment from another thread
 *        is a data race.
 */
APTIX_EXTERN(void) aptix_cancel(volatile sig_atomic_t *flag);

/** Version of the library, also printed by `aptix --version`. */
#define APTIX_VERSION "0.1.0"

/** Highest on-disk store format this library reads and writes. */
#define APTIX_STORE_FORMAT 8

#endif
