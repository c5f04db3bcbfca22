/*
 * t/fuzz/fuzz_config.c - the config parser (git-config syntax), the
 * typed getters, and the splicing done by `aptix config <key> <value>`
 * (through src/config/test-hooks.h).
 *
 * Input: the config text. Invariant: after setting a key in a text that
 * parses, the new text parses and the key reads back as the value set;
 * after unsetting it, the key is gone.
 */
#include <string.h>
#include "fuzz.h"
#include "util/common.h"
#include "config/test-hooks.h"

static const char *const keys[] = {
	"openai.model", "openai.temperature", "openai.chain-ttl",
	"openai.max-attempts", "openai.timeout", "openai.instructions",
	"openai.base-url", "context.window-turns", "rag.required",
	"rag.score-threshold", "workspace.id", "x.Sub Section.key",
};

static int visit(const char *key, const char *value, const char *origin,
		 void *payload)
{
	FUZZ_CHECK(key && value && origin);
	(*(size_t *)payload) += strlen(key) + strlen(value);
	return 0;
}

static void typed_reads(const aptix_config *cfg)
{
	size_t i, total = 0;
	long l;
	int b;
	int64_t ms;
	double d;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		aptix_config_get(cfg, keys[i]);
		aptix_config_get_origin(cfg, keys[i]);
		aptix_config_get_long(&l, cfg, keys[i], 0);
		aptix_config_get_bool(&b, cfg, keys[i], 0);
		aptix_config_get_duration_ms(&ms, cfg, keys[i], 0);
		aptix_config_get_double(&d, cfg, keys[i], 0);
	}
	aptix_config_foreach(cfg, visit, &total);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	aptix_config *cfg = NULL, *cfg2 = NULL;
	aptix_buf out = APTIX_BUF_INIT, out2 = APTIX_BUF_INIT;
	const char *key, *got;
	char value[64];
	size_t k;

	if (aptix_config__parse_buffer(&cfg, text, size) < 0) {
		aptix_error_clear();
		return 0;
	}
	typed_reads(cfg);
	aptix_config_free(cfg);

	/* set a key: its value reads back */
	k = size ? data[size - 1] % (sizeof(keys) / sizeof(keys[0])) : 0;
	key = keys[k];
	snprintf(value, sizeof(value), "%s", size % 3 == 0 ? " a \"b\" #c\\" :
		 size % 3 == 1 ? "1" : "http://x/");
	if (aptix_config__edit_buffer(&out, text, size, key, value) == 0) {
		FUZZ_CHECK(aptix_config__parse_buffer(&cfg2, out.ptr,
						      out.len) == 0);
		got = aptix_config_get(cfg2, key);
		FUZZ_CHECK(got && !strcmp(got, value));
		aptix_config_free(cfg2);
		cfg2 = NULL;
		/* then unset it: no occurrence is left */
		if (aptix_config__edit_buffer(&out2, out.ptr, out.len, key,
					      NULL) == 0) {
			FUZZ_CHECK(aptix_config__parse_buffer(&cfg2, out2.ptr,
							      out2.len) == 0);
			FUZZ_CHECK(!aptix_config_get(cfg2, key));
			aptix_config_free(cfg2);
		}
	}
	aptix_buf_release(&out);
	aptix_buf_release(&out2);
	aptix_error_clear();
	return 0;
}
