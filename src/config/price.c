/*
 * src/config/price.c - what a model's tokens cost (see aptix/history.h), for
 * `aptix usage`. An estimate: the built-in table below is the standard
 * tier's list price; config keys price.<model>.input, .cached-input and
 * .output override or extend it. A model neither knows costs "unknown",
 * never 0: a zero would read as free.
 */
#include "util/common.h"
#include "aptix/history.h"
#include <ctype.h>
#include <stdlib.h>
#include <strings.h>

static const struct {
	const char *model;
	double input, cached_input, output;
} table[] = {
	/*
	 * US dollars per 1M tokens, standard tier, from
	 * https://openai.com/api/pricing/ as read on 2025-08-20. Prices
	 * change: override them with `aptix config price.<model>.input`
	 * (and .cached-input, .output).
	 */
	{ "gpt-4.1", 2.00, 0.50, 8.00 },
	{ "gpt-4.1-mini", 0.40, 0.10, 1.60 },
	{ "gpt-4.1-nano", 0.10, 0.025, 0.40 },
	{ "gpt-4o", 2.50, 1.25, 10.00 },
	{ "gpt-4o-mini", 0.15, 0.075, 0.60 },
	{ "gpt-5", 1.25, 0.125, 10.00 },
	{ "gpt-5-mini", 0.25, 0.025, 2.00 },
	{ "gpt-5-nano", 0.05, 0.005, 0.40 },
	{ "o3", 2.00, 0.50, 8.00 },
	{ "o3-mini", 1.10, 0.55, 4.40 },
	{ "o4-mini", 1.10, 0.275, 4.40 },
};

static const char *const fields[] = { "input", "cached-input", "output" };

int aptix_price_key(const char *key)
{
	const char *last;
	size_t i;

	if (strncasecmp(key, "price.", 6))
		return 0;
	last = strrchr(key, '.');
	if (last <= key + 6)
		return 0;	/* no model between the dots */
	for (i = 0; i < ARRAY_SIZE(fields); i++)
		if (!strcasecmp(last + 1, fields[i]))
			return 1;
	return 0;
}

/* price.<model>.<field> from config: 1 when set, 0 when not, or error. */
static int config_price(double *out, const aptix_config *cfg,
			const char *model, const char *field)
{
	aptix_buf key = APTIX_BUF_INIT;
	const char *v;
	char *end;
	double d;
	size_t i;

	if (!cfg)
		return 0;
	aptix_buf_printf(&key, "price.%s.%s", model, field);
	if (aptix_buf_oom(&key))
		return APTIX_ERROR;
	/* a config file's [price.<model>] section name is lowercased */
	for (i = 6; i < key.len; i++)
		key.ptr[i] = (char)tolower((unsigned char)key.ptr[i]);
	v = aptix_config_get(cfg, key.ptr);
	if (!v) {
		aptix_buf_release(&key);
		return 0;
	}
	d = strtod(v, &end);
	if (end == v || *end || !(d >= 0) || d > 1e6) {
		aptix_error_set(APTIX_ERROR_CONFIG, "invalid value '%s' for "
				"'%s': expected US dollars per million tokens",
				v, key.ptr);
		aptix_buf_release(&key);
		return APTIX_EINVALID;
	}
	aptix_buf_release(&key);
	*out = d;
	return 1;
}

/* The table's entry, or the config's, for this exact name. */
static int lookup_exact(aptix_price *out, const aptix_config *cfg,
			const char *model)
{
	double *slot[3];
	size_t i;
	int r;

	out->input = out->cached_input = out->output = -1;
	out->from_config = 0;
	for (i = 0; i < ARRAY_SIZE(table); i++)
		if (!strcasecmp(table[i].model, model)) {
			out->input = table[i].input;
			out->cached_input = table[i].cached_input;
			out->output = table[i].output;
			break;
		}
	slot[0] = &out->input;
	slot[1] = &out->cached_input;
	slot[2] = &out->output;
	for (i = 0; i < 3; i++) {
		if ((r = config_price(slot[i], cfg, model, fields[i])) < 0)
			return r;
		if (r)
			out->from_config = 1;
	}
	if (out->input < 0 || out->output < 0)
		return APTIX_ENOTFOUND;
	if (out->cached_input < 0)	/* no discount known */
		out->cached_input = out->input;
	return 0;
}

/* "gpt-5-mini-2025-08-07" -> length of "gpt-5-mini", or 0. */
static size_t dated_base(const char *model)
{
	size_t n = strlen(model), i;
	static const char shape[] = "-dddd-dd-dd";

	if (n <= sizeof(shape) - 1)
		return 0;
	for (i = 0; i < sizeof(shape) - 1; i++) {
		char c = model[n - (sizeof(shape) - 1) + i];

		if (shape[i] == 'd' ? (c < '0' || c > '9') : c != '-')
			return 0;
	}
	return n - (sizeof(shape) - 1);
}

int aptix_price_lookup(aptix_price *out, const aptix_config *cfg,
		       const char *model)
{
	char base[128];
	size_t n;
	int r;

	if (!model || !*model) {
		out->input = out->cached_input = out->output = -1;
		out->from_config = 0;
		return APTIX_ENOTFOUND;
	}
	r = lookup_exact(out, cfg, model);
	if (r != APTIX_ENOTFOUND)
		return r;
	n = dated_base(model);
	if (!n || n >= sizeof(base))
		return APTIX_ENOTFOUND;
	memcpy(base, model, n);
	base[n] = '\0';
	return lookup_exact(out, cfg, base);
}

double aptix_price_cost(const aptix_price *p, int64_t input, int64_t cached,
			int64_t output)
{
	int64_t uncached;

	if (cached > input)
		cached = input;
	if (cached < 0)
		cached = 0;
	uncached = input - cached;
	return ((double)uncached * p->input +
		(double)cached * p->cached_input +
		(double)output * p->output) / 1e6;
}
