/*
 * src/util/dl.h - the dlopen() flags of the libraries the library loads at
 * first use (libcrypto in oid.c, libcurl in http.c).
 *
 * RTLD_DEEPBIND: a library so loaded, and its dependencies, resolve
 * their symbols in their own dependency tree first, then in the global
 * scope (aptix and everything it links: lmdb, zlib, jansson, libedit...).
 * Without it every one of libcurl's ~9,000 symbol references is first
 * looked up, and missed, in each object of the global scope: measured
 * with callgrind, the flag takes some 4 million instructions off the
 * load of libcrypto and libcurl (t/perf/fixed.sh). Nothing in aptix
 * interposes on them; a malloc preloaded with LD_PRELOAD is not used by
 * them (they allocate and free their memory themselves).
 *
 * The sanitizers' runtimes refuse RTLD_DEEPBIND (they must see every
 * call to malloc), so their builds load without it.
 * Include this first: RTLD_DEEPBIND needs _GNU_SOURCE.
 */
#ifndef APTIX_SRC_DL_H
#define APTIX_SRC_DL_H

#ifndef _GNU_SOURCE
# define _GNU_SOURCE 1
#endif
#include <dlfcn.h>

#if defined(__has_feature)
# if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) \
	|| __has_feature(memory_sanitizer)
#  define APTIX_DL_SANITIZED 1
# endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
# define APTIX_DL_SANITIZED 1
#endif

#if defined(RTLD_DEEPBIND) && !defined(APTIX_DL_SANITIZED)
# define APTIX_DL_FLAGS (RTLD_LAZY | RTLD_LOCAL | RTLD_DEEPBIND)
#else
# define APTIX_DL_FLAGS (RTLD_LAZY | RTLD_LOCAL)
#endif

#endif
