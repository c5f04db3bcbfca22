/*
 * t/fuzz/fuzz_refname.c - the checks of ref names and conversation ids
 * (aptix_ref_check_name, aptix_conv_check_id).
 *
 * Input: the name (cut at the first NUL, as a C string is). Invariants:
 * an accepted ref name has no byte a terminal or a shell line could
 * misread (controls, C1 ones included, space, DEL) and none of
 * ~^:?*[\; an accepted
 * conversation id makes an accepted ref name under refs/conversations/.
 */
#include <string.h>
#include "fuzz.h"
#include "util/common.h"
#include "aptix/refs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 1), *ref;
	size_t i, n;

	if (!name)
		return 0;
	memcpy(name, data, size);
	name[size] = '\0';
	n = strlen(name);
	if (aptix_ref_check_name(name) == 0) {
		FUZZ_CHECK(n > 0 && n <= 1024);
		for (i = 0; i < n; i++) {
			unsigned char c = (unsigned char)name[i];

			FUZZ_CHECK(c > 0x20 && c != 0x7f);
			FUZZ_CHECK(!strchr("~^:?*[\\", c));
			/* no C1 control (U+0080..U+009F) */
			FUZZ_CHECK(!(c == 0xc2 && i + 1 < n &&
				     (unsigned char)name[i + 1] <= 0x9f));
		}
		FUZZ_CHECK(!strstr(name, ".."));
		FUZZ_CHECK(!strstr(name, "@{"));
		FUZZ_CHECK(!strstr(name, "//"));
		FUZZ_CHECK(name[n - 1] != '/' && name[n - 1] != '.');
		FUZZ_CHECK(!strcmp(name, "HEAD") || !strncmp(name, "refs/", 5));
	}
	if (aptix_conv_check_id(name) == 0) {
		FUZZ_CHECK(n >= 1 && n <= APTIX_CONV_MAXLEN);
		FUZZ_CHECK(name[0] != '.' && name[0] != '-');
		for (i = 0; i < n; i++)
			FUZZ_CHECK(strchr("abcdefghijklmnopqrstuvwxyz"
					  "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
					  "0123456789._-", name[i]));
		ref = malloc(n + sizeof(APTIX_CONV_PREFIX));
		FUZZ_CHECK(ref != NULL);
		memcpy(ref, APTIX_CONV_PREFIX, sizeof(APTIX_CONV_PREFIX) - 1);
		memcpy(ref + sizeof(APTIX_CONV_PREFIX) - 1, name, n + 1);
		FUZZ_CHECK(aptix_ref_check_name(ref) == 0);
		free(ref);
	}
	free(name);
	aptix_error_clear();
	return 0;
}
