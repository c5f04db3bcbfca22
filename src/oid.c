/*
 * src/oid.c - object ids and SHA-256 (OpenSSL EVP).
 */
#include "common.h"
#include "aptix/oid.h"
#include "aptix/object.h"
#include "env.h"
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#include <openssl/evp.h>

static const char hexdigits[] = "0123456789abcdef";

int aptix_hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int aptix_is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (aptix_hex_value((unsigned char)s[i]) < 0)
			return 0;
	return 1;
}

int aptix_oid_fromstrn(aptix_oid *out, const char *hex, size_t len)
{
	size_t i;

	if (len > APTIX_OID_HEXSZ || !aptix_is_hex(hex, len)) {
		aptix_error_set(APTIX_ERROR_INVALID, "not an object id: '%.*s'",
				(int)(len > 80 ? 80 : len), hex);
		return APTIX_EINVALID;
	}
	memset(out->id, 0, sizeof(out->id));
	for (i = 0; i < len; i++) {
		int v = aptix_hex_value((unsigned char)hex[i]);

		out->id[i / 2] |= (unsigned char)(i % 2 ? v : v << 4);
	}
	return 0;
}

int aptix_oid_fromstr(aptix_oid *out, const char *hex)
{
	size_t n = strnlen(hex, APTIX_OID_HEXSZ + 1);

	if (n != APTIX_OID_HEXSZ) {
		aptix_error_set(APTIX_ERROR_INVALID, "not an object id: '%.*s'",
				(int)(n > 80 ? 80 : n), hex);
		return APTIX_EINVALID;
	}
	return aptix_oid_fromstrn(out, hex, n);
}

char *aptix_oid_tostr(char out[APTIX_OID_HEXSZ + 1], const aptix_oid *id)
{
	int i;

	for (i = 0; i < APTIX_OID_RAWSZ; i++) {
		out[2 * i] = hexdigits[id->id[i] >> 4];
		out[2 * i + 1] = hexdigits[id->id[i] & 0xf];
	}
	out[APTIX_OID_HEXSZ] = '\0';
	return out;
}

const char *aptix_oid_hex(const aptix_oid *id)
{
	static _Thread_local char slots[4][APTIX_OID_HEXSZ + 1];
	static _Thread_local int next;

	next = (next + 1) % 4;
	return aptix_oid_tostr(slots[next], id);
}

int aptix_oid_cmp(const aptix_oid *a, const aptix_oid *b)
{
	return memcmp(a->id, b->id, APTIX_OID_RAWSZ);
}

int aptix_oid_is_zero(const aptix_oid *id)
{
	int i;

	for (i = 0; i < APTIX_OID_RAWSZ; i++)
		if (id->id[i])
			return 0;
	return 1;
}

/*
 * OpenSSL's libcrypto is loaded with dlopen() on the first hash: linking
 * it would add some 0.6 ms of relocations to the start of every process,
 * while read commands (cat-object, rev-parse, log, show) never hash.
 * The library and the SHA-256 implementation are loaded and fetched once
 * per process (OpenSSL 3's costly step); each thread has its own digest
 * context, freed when the thread exits.
 */
static struct {
	void *handle;
	EVP_MD *(*md_fetch)(OSSL_LIB_CTX *, const char *, const char *);
	EVP_MD_CTX *(*ctx_new)(void);
	void (*ctx_free)(EVP_MD_CTX *);
	int (*init)(EVP_MD_CTX *, const EVP_MD *, ENGINE *);
	int (*update)(EVP_MD_CTX *, const void *, size_t);
	int (*final)(EVP_MD_CTX *, unsigned char *, unsigned int *);
} crypto;
static EVP_MD *hash_md;
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;
static pthread_key_t ctx_key;
static char crypto_failed[256];		/* why loading failed, if it did */

static int load_crypto(void)
{
	const char *name = aptix_env__get(APTIX_ENV_LIBCRYPTO);

	if (crypto.handle)
		return 0;
	crypto.handle = dlopen(name && *name ? name : "libcrypto.so.3",
			       RTLD_LAZY | RTLD_LOCAL);
	if (!crypto.handle) {
		aptix_error_set(APTIX_ERROR_OS, "cannot load OpenSSL's "
				"libcrypto: %s", dlerror());
		return APTIX_ERROR;
	}
	*(void **)&crypto.md_fetch = dlsym(crypto.handle, "EVP_MD_fetch");
	*(void **)&crypto.ctx_new = dlsym(crypto.handle, "EVP_MD_CTX_new");
	*(void **)&crypto.ctx_free = dlsym(crypto.handle, "EVP_MD_CTX_free");
	*(void **)&crypto.init = dlsym(crypto.handle, "EVP_DigestInit_ex");
	*(void **)&crypto.update = dlsym(crypto.handle, "EVP_DigestUpdate");
	*(void **)&crypto.final = dlsym(crypto.handle, "EVP_DigestFinal_ex");
	if (!crypto.md_fetch || !crypto.ctx_new || !crypto.ctx_free ||
	    !crypto.init ||
	    !crypto.update || !crypto.final) {
		aptix_error_set(APTIX_ERROR_OS, "libcrypto lacks the EVP "
				"digest functions");
		dlclose(crypto.handle);
		memset(&crypto, 0, sizeof(crypto));
		return APTIX_ERROR;
	}
	return 0;
}

static void free_ctx(void *ctx)
{
	crypto.ctx_free(ctx);
}

static void crypto_init(void)
{
	if (load_crypto() == 0 &&
	    !(hash_md = crypto.md_fetch(NULL, "SHA256", NULL)))
		aptix_error_set(APTIX_ERROR_OS, "OpenSSL has no SHA-256");
	else if (hash_md && pthread_key_create(&ctx_key, free_ctx))
		aptix_error_set(APTIX_ERROR_OS, "cannot create a thread key");
	else if (hash_md)
		return;
	snprintf(crypto_failed, sizeof(crypto_failed), "%s",
		 aptix_error_last()->message);
}

/* This thread's digest context, initialised for SHA-256. */
static EVP_MD_CTX *hash_begin(void)
{
	EVP_MD_CTX *ctx;

	pthread_once(&crypto_once, crypto_init);
	if (crypto_failed[0]) {
		aptix_error_set(APTIX_ERROR_OS, "%s", crypto_failed);
		return NULL;
	}
	if (!(ctx = pthread_getspecific(ctx_key))) {
		if (!(ctx = crypto.ctx_new())) {
			aptix_error_oom();
			return NULL;
		}
		if (pthread_setspecific(ctx_key, ctx)) {
			crypto.ctx_free(ctx);
			aptix_error_set(APTIX_ERROR_OS, "cannot set thread "
					"state");
			return NULL;
		}
	}
	if (!crypto.init(ctx, hash_md, NULL)) {
		aptix_error_set(APTIX_ERROR_OS, "SHA-256 init failed");
		return NULL;
	}
	return ctx;
}

static int hash_end(EVP_MD_CTX *ctx, aptix_oid *out)
{
	unsigned int n = 0;

	if (!crypto.final(ctx, out->id, &n) ||
	    n != APTIX_OID_RAWSZ) {
		aptix_error_set(APTIX_ERROR_OS, "SHA-256 failed");
		return APTIX_ERROR;
	}
	return 0;
}

int aptix_sha256(aptix_oid *out, const void *data, size_t len)
{
	EVP_MD_CTX *ctx = hash_begin();

	if (!ctx)
		return APTIX_ERROR;
	if (!crypto.update(ctx, data, len)) {
		aptix_error_set(APTIX_ERROR_OS, "SHA-256 failed");
		return APTIX_ERROR;
	}
	return hash_end(ctx, out);
}

int aptix_sha256_fd(aptix_oid *out, int fd, uint64_t *size)
{
	unsigned char block[65536];
	uint64_t total = 0;
	ssize_t n;
	EVP_MD_CTX *ctx = hash_begin();
	int r;

	if (!ctx)
		return APTIX_ERROR;
	for (;;) {
		n = read(fd, block, sizeof(block));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			aptix_error_set_os("read error");
			return APTIX_ERROR;
		}
		if (n == 0)
			break;
		if (!crypto.update(ctx, block, (size_t)n)) {
			aptix_error_set(APTIX_ERROR_OS, "SHA-256 failed");
			return APTIX_ERROR;
		}
		total += (uint64_t)n;
	}
	if ((r = hash_end(ctx, out)) < 0)
		return r;
	if (size)
		*size = total;
	return 0;
}

int aptix_object_hash(aptix_oid *out, aptix_otype type, const void *data,
		      size_t len)
{
	char hdr[64];
	const char *name = aptix_otype_name(type);
	EVP_MD_CTX *ctx;
	int n;

	if (!name) {
		aptix_error_set(APTIX_ERROR_INVALID, "invalid object type %d",
				(int)type);
		return APTIX_EINVALID;
	}
	n = snprintf(hdr, sizeof(hdr), "%s %zu", name, len);
	if (!(ctx = hash_begin()))
		return APTIX_ERROR;
	if (!crypto.update(ctx, hdr, (size_t)n + 1) ||
	    !crypto.update(ctx, data, len)) {
		aptix_error_set(APTIX_ERROR_OS, "SHA-256 failed");
		return APTIX_ERROR;
	}
	return hash_end(ctx, out);
}
