/*
 * aptix/history.h - helpers of the history views: dates as a user types
 * them (`log --since`, `usage --since`) and what a model's tokens cost
 * (`aptix usage`).
 */
#ifndef APTIX_HISTORY_H
#define APTIX_HISTORY_H

#include "common.h"
#include "config.h"

/**
 * @brief Parse a date as git's --since does: an ISO date
 * ("2026-11-24", "2026-11-24 10:30", "2026-11-24T10:30:00Z",
 * "...+02:00"; local time without a zone), "@<seconds>", "now",
 * "today" (midnight), "yesterday", and "<n> <unit>[s] [ago]" where unit
 * is second, minute, hour, day, week, month (30 days) or year (365
 * days); dots may separate the words ("2.days.ago").
 * @param[out] ms milliseconds since the epoch
 * @param now_ms what relative forms count from
 * @return 0, or APTIX_EINVALID (the error names the text)
 */
APTIX_EXTERN(int) aptix_date_parse(int64_t *ms, const char *text,
				   int64_t now_ms);

/** US dollars per million tokens; a negative price is unknown. */
typedef struct {
	double input, cached_input, output;
	int from_config;		/**< a config key set one of them */
} aptix_price;

/**
 * @brief The price of a model: config keys price.<model>.input,
 * price.<model>.cached-input and price.<model>.output override the
 * built-in table (src/config/price.c). A dated snapshot name
 * ("gpt-5-mini-2025-08-07") falls back to its base name. cfg may be NULL.
 * @return 0; APTIX_ENOTFOUND when neither knows the model's input and
 * output prices (no error set); APTIX_EINVALID for a bad config value.
 */
APTIX_EXTERN(int) aptix_price_lookup(aptix_price *out,
				     const aptix_config *cfg,
				     const char *model);
/**
 * @brief The cost in US dollars of input tokens (cached ones included,
 * as the API counts them), cached input tokens and output tokens.
 */
APTIX_EXTERN(double) aptix_price_cost(const aptix_price *p, int64_t input,
				      int64_t cached, int64_t output);
/**
 * @brief 1 when key is a price key (price.<model>.input, .cached-input or
 * .output); 0 otherwise.
 */
APTIX_EXTERN(int) aptix_price_key(const char *key);

#endif
