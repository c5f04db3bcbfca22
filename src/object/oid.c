/*
 * src/object/oid.c - object ids and SHA-256 (OpenSSL EVP).
 */
#include "util/dl.h"
#include "util/common.h"
#include "aptix/oid.h"
#include "aptix/object.h"
#include "util/env.h"
#include <pthread.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

static const char hexdigits[] = "0123456789abcdef";

/* Each byte's value as a hex digit, -1 for none: one load a digit. */
static const signed char hexval[256] = {
#define N16 -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1
	N16, N16, N16,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -1, -1, -1, -1, -1,
	-1, 10, 11, 12, 13, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	N16,
	-1, 10, 11, 12, 13, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	N16, N16, N16, N16, N16, N16, N16, N16, N16
#undef N16
};

int aptix_hex_value(int c)
{
	return c >= 0 && c < 256 ? hexval[c] : -1;
}

int aptix_is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (hexval[(unsigned char)s[i]] < 0)
			return 0;
	return 1;
}

int aptix_oid_fromstrn(aptix_oid *out, const char *hex, size_t len)
{
	const unsigned char *h = (const unsigned char *)hex;
	size_t i;
	int bad = 0;

	if (len <= APTIX_OID_HEXSZ) {
		memset(out->id, 0, sizeof(out->id));
		for (i = 0; i + 1 < len; i += 2) {
			int a = hexval[h[i]], b = hexval[h[i + 1]];

			bad |= a | b;
			out->id[i / 2] = (unsigned char)((a & 15) << 4 | (b & 15));
		}
		if (len % 2) {
			bad |= hexval[h[len - 1]];
			out->id[len / 2] =
				(unsigned char)((hexval[h[len - 1]] & 15) << 4);
		}
	}
	if (len > APTIX_OID_HEXSZ || bad < 0) {
		aptix_error_set(APTIX_ERROR_INVALID, "not an object id: '%.*s'",
				(int)(len > 80 ? 80 : len), hex);
		return APTIX_EINVALID;
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
 *
 * The digest runs through libcrypto's direct SHA-256 entry points
 * (SHA256_Init/Update/Final: the same implementation, with its assembly,
 * that the default provider wraps) when it exports them: fetching the
 * method through EVP first starts OpenSSL 3's provider machinery, some
 * 6 million instructions per process for hashing a handful of objects.
 * A libcrypto built without them gets the EVP path, fetched once, with
 * one digest context per thread. Loading happens once per process.
 */
static struct {
	void *handle;
	/* direct */
	int (*sha_init)(SHA256_CTX *);
	int (*sha_update)(SHA256_CTX *, const void *, size_t);
	int (*sha_final)(unsigned char *, SHA256_CTX *);
	/* EVP */
	EVP_MD *(*md_fetch)(OSSL_LIB_CTX *, const char *, const char *);
	EVP_MD_CTX *(*ctx_new)(void);
	void (*ctx_free)(EVP_MD_CTX *);
	int (*init)(EVP_MD_CTX *, const EVP_MD *, ENGINE *);
	int (*update)(EVP_MD_CTX *, const void *, size_t);
	int (*final)(EVP_MD_CTX *, unsigned char *, unsigned int *);
	EVP_MD *md;
} crypto;
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;
static pthread_key_t ctx_key;
static char crypto_failed[256];		/* why loading failed, if it did */

#define SYM(field, name) (*(void **)&crypto.field = \
	dlsym(crypto.handle, name))

static void free_ctx(void *ctx)
{
	crypto.ctx_free(ctx);
}

static int load_evp(void)
{
	if (!SYM(md_fetch, "EVP_MD_fetch") || !SYM(ctx_new, "EVP_MD_CTX_new") ||
	    !SYM(ctx_free, "EVP_MD_CTX_free") ||
	    !SYM(init, "EVP_DigestInit_ex") ||
	    !SYM(update, "EVP_DigestUpdate") ||
	    !SYM(final, "EVP_DigestFinal_ex")) {
		aptix_error_set(APTIX_ERROR_OS, "libcrypto lacks the SHA-256 "
				"and EVP digest functions");
		return APTIX_ERROR;
	}
	if (!(crypto.md = crypto.md_fetch(NULL, "SHA256", NULL))) {
		aptix_error_set(APTIX_ERROR_OS, "OpenSSL has no SHA-256");
		return APTIX_ERROR;
	}
	if (pthread_key_create(&ctx_key, free_ctx)) {
		aptix_error_set(APTIX_ERROR_OS, "cannot create a thread key");
		return APTIX_ERROR;
	}
	return 0;
}

static void crypto_init(void)
{
	const char *name = aptix_env__get(APTIX_ENV_LIBCRYPTO);

	crypto.handle = dlopen(name && *name ? name : "libcrypto.so.3",
			       APTIX_DL_FLAGS);
	if (!crypto.handle)
		aptix_error_set(APTIX_ERROR_OS, "cannot load OpenSSL's "
				"libcrypto: %s", dlerror());
	else if ((SYM(sha_init, "SHA256_Init") &&
		  SYM(sha_update, "SHA256_Update") &&
		  SYM(sha_final, "SHA256_Final")) || load_evp() == 0)
		return;
	snprintf(crypto_failed, sizeof(crypto_failed), "%s",
		 aptix_error_last()->message);
}

/* One digest in progress: on the stack (direct) or per thread (EVP). */
struct hash {
	SHA256_CTX direct;
	EVP_MD_CTX *evp;
};

static int hash_begin(struct hash *h)
{
	pthread_once(&crypto_once, crypto_init);
	if (crypto_failed[0]) {
		aptix_error_set(APTIX_ERROR_OS, "%s", crypto_failed);
		return APTIX_ERROR;
	}
	if (crypto.sha_init) {
		h->evp = NULL;
		if (!crypto.sha_init(&h->direct))
			goto fail;
		return 0;
	}
	if (!(h->evp = pthread_getspecific(ctx_key))) {
		if (!(h->evp = crypto.ctx_new()))
			return aptix_error_oom();
		if (pthread_setspecific(ctx_key, h->evp)) {
			crypto.ctx_free(h->evp);
			aptix_error_set(APTIX_ERROR_OS, "cannot set thread "
					"state");
			return APTIX_ERROR;
		}
	}
	if (crypto.init(h->evp, crypto.md, NULL))
		return 0;
fail:
	aptix_error_set(APTIX_ERROR_OS, "SHA-256 init failed");
	return APTIX_ERROR;
}

static int hash_update(struct hash *h, const void *data, size_t len)
{
	if (h->evp ? crypto.update(h->evp, data, len) :
	    crypto.sha_update(&h->direct, data, len))
		return 0;
	aptix_error_set(APTIX_ERROR_OS, "SHA-256 failed");
	return APTIX_ERROR;
}

static int hash_end(struct hash *h, aptix_oid *out)
{
	unsigned int n = APTIX_OID_RAWSZ;

	if (h->evp ? crypto.final(h->evp, out->id, &n) :
	    crypto.sha_final(out->id, &h->direct)) {
		if (n == APTIX_OID_RAWSZ)
			return 0;
	}
	aptix_error_set(APTIX_ERROR_OS, "SHA-256 failed");
	return APTIX_ERROR;
}

int aptix_sha256(aptix_oid *out, const void *data, size_t len)
{
	struct hash h;
	int r;

	if ((r = hash_begin(&h)) < 0 || (r = hash_update(&h, data, len)) < 0)
		return r;
	return hash_end(&h, out);
}

int aptix_sha256_fd(aptix_oid *out, int fd, uint64_t *size)
{
	unsigned char block[65536];
	uint64_t total = 0;
	struct hash h;
	ssize_t n;
	int r;

	if ((r = hash_begin(&h)) < 0)
		return r;
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
		if ((r = hash_update(&h, block, (size_t)n)) < 0)
			return r;
		total += (uint64_t)n;
	}
	if ((r = hash_end(&h, out)) < 0)
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
	struct hash h;
	int n, r;

	if (!name) {
		aptix_error_set(APTIX_ERROR_INVALID, "invalid object type %d",
				(int)type);
		return APTIX_EINVALID;
	}
	n = snprintf(hdr, sizeof(hdr), "%s %zu", name, len);
	if ((r = hash_begin(&h)) < 0 ||
	    (r = hash_update(&h, hdr, (size_t)n + 1)) < 0 ||
	    (r = hash_update(&h, data, len)) < 0)
		return r;
	return hash_end(&h, out);
}
