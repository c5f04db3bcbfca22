/*
 * src/object/uuid.c - UUIDs: random (version 4) ones for conversation ids, and
 * the text form the RAG backends use for chunk ids (RFC 9562).
 */
#include "util/common.h"
#include "aptix/oid.h"
#include <fcntl.h>
#include <unistd.h>

void aptix_uuid_format(char out[APTIX_UUID_STRSZ + 1],
		       const unsigned char u[16])
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[u[i] >> 4];
		out[o++] = hex[u[i] & 15];
	}
	out[o] = '\0';
}

int aptix_uuid_parse(unsigned char u[16], const char *s)
{
	size_t i, k = 0;

	for (i = 0; s[i] && k < 32; i++) {
		int v;

		if (s[i] == '-' && (i == 8 || i == 13 || i == 18 || i == 23))
			continue;
		if ((v = aptix_hex_value((unsigned char)s[i])) < 0)
			return APTIX_EINVALID;
		if (k & 1)
			u[k / 2] = (unsigned char)(u[k / 2] | v);
		else
			u[k / 2] = (unsigned char)(v << 4);
		k++;
	}
	return k == 32 && !s[i] ? 0 : APTIX_EINVALID;
}

int aptix_uuid_v4(char out[APTIX_UUID_STRSZ + 1])
{
	unsigned char r[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, r, sizeof(r));

	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)sizeof(r)) {
		aptix_error_set_os("cannot read /dev/urandom");
		return APTIX_ERROR;
	}
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	aptix_uuid_format(out, r);
	return 0;
}
