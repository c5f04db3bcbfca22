/*
 * src/config/config.c - git-config-style settings (see aptix/config.h).
 *
 * The syntax is the subset of git's that matters here:
 *
 *	# comment			; comment too
 *	[section]			keys become section.name
 *	[section "Sub Section"]		keys become section.Sub Section.name
 *		name = value		# trailing comment
 *		flag			a bare name means "true"
 *		quoted = "  a \"b\" \\ \n \t  "
 *		long = first \
 *			second		a trailing backslash continues
 *
 * Section and key names are case-insensitive and stored lowercased;
 * subsection names keep their case (as in git). Whitespace around names
 * and values is trimmed; inside an unquoted value each blank between
 * words counts as one space. A "\r\n" line end is read as "\n".
 *
 * Writing (aptix_config_set) works on the store's file only: the text is
 * re-read under config.lock, spliced (the line of the last occurrence is
 * replaced, a new key goes after the last line of its section, other
 * lines and comments stay byte for byte), written to the lock file,
 * fsync'ed and renamed over config; then the directory is fsync'ed.
 */
#include "util/common.h"
#include "aptix/config.h"
#include "aptix/credscan.h"
#include "aptix/history.h"
#include "util/env.h"
#include "secret/secrets.h"
#include "config/test-hooks.h"
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CONFIG_FILE "config"
#define CONFIG_LOCK "config.lock"

struct entry {
	char *key;		/* canonical */
	char *value;
	const char *origin;	/* one of cfg->origins */
};

struct aptix_config {
	struct entry *entries;
	size_t nr, alloc;
	char **origins;		/* "file:<path>", "env:<VAR>" */
	size_t norigins, origins_alloc;
};

static const struct {
	enum aptix_env_var var;
	const char *key;
} env_overrides[] = {
	{ APTIX_ENV_OPENAI_BASE_URL, "openai.base-url" },
	{ APTIX_ENV_MODEL, "openai.model" },
	{ APTIX_ENV_WORKSPACE, "workspace.id" },
};

/* ------------------------------------------------------------------ */
/* Parsing                                                              */
/* ------------------------------------------------------------------ */

enum { EV_SECTION, EV_ENTRY };

struct config_event {
	int type;
	/* EV_ENTRY: the canonical key; EV_SECTION: "section[.sub]" */
	const char *key;
	const char *value;	/* EV_ENTRY only */
	size_t begin;		/* offset of the '[' or of the name */
	size_t end;		/* just past the entry's (or header's) line */
};

typedef int (*event_fn)(const struct config_event *ev, void *payload);

struct parser {
	const char *data, *path;
	size_t len, pos;
	int line;
	aptix_buf section, key, value;
	event_fn fn;
	void *payload;
};

/* The next character ("\r\n" reads as '\n') without taking it. */
static int peek(const struct parser *p)
{
	if (p->pos >= p->len)
		return EOF;
	if (p->data[p->pos] == '\r' && p->pos + 1 < p->len &&
	    p->data[p->pos + 1] == '\n')
		return '\n';
	return (unsigned char)p->data[p->pos];
}

static int next(struct parser *p)
{
	int c = peek(p);

	if (c == EOF)
		return EOF;
	if (c == '\n') {
		p->line++;
		if (p->data[p->pos] == '\r')
			p->pos++;
	}
	p->pos++;
	return c;
}

static int is_blank(int c)
{
	return c != EOF && c != '\n' && isspace(c);
}

static int is_keychar(int c)
{
	return c != EOF && (isalnum(c) || c == '-');
}

static void skip_blanks(struct parser *p)
{
	while (is_blank(peek(p)))
		next(p);
}

static void skip_line(struct parser *p)
{
	int c;

	while ((c = next(p)) != EOF && c != '\n')
		;
}

static int bad_line(const struct parser *p)
{
	aptix_error_set(APTIX_ERROR_CONFIG, "bad config line %d in file '%s'",
			p->line, p->path);
	return APTIX_EINVALID;
}

/*
 * Where a new key of the section whose header ends at pos may go: after
 * the header's line when only blanks or a comment follow it there.
 */
static size_t header_end(const struct parser *p, size_t pos)
{
	size_t i = pos;

	while (i < p->len && p->data[i] != '\n' && isspace(
		       (unsigned char)p->data[i]))
		i++;
	if (i < p->len && (p->data[i] == '#' || p->data[i] == ';'))
		while (i < p->len && p->data[i] != '\n')
			i++;
	if (i >= p->len)
		return p->len;
	return p->data[i] == '\n' ? i + 1 : pos;
}

/* After the '['. */
static int parse_section(struct parser *p)
{
	struct config_event ev;
	int c;

	ev.begin = p->pos - 1;
	aptix_buf_clear(&p->section);
	skip_blanks(p);
	while (is_keychar(c = peek(p)) || c == '.') {
		aptix_buf_putc(&p->section, (char)tolower(c));
		next(p);
	}
	if (!p->section.len || p->section.ptr[0] == '.' ||
	    p->section.ptr[p->section.len - 1] == '.')
		return bad_line(p);
	skip_blanks(p);
	if (peek(p) == '"') {
		next(p);
		aptix_buf_putc(&p->section, '.');
		for (;;) {
			c = peek(p);
			if (c == EOF || c == '\n' || c == '\0')
				return bad_line(p);
			next(p);
			if (c == '"')
				break;
			if (c == '\\') {
				/* git: \" and \\, any other escape is the char */
				c = peek(p);
				if (c == EOF || c == '\n' || c == '\0')
					return bad_line(p);
				next(p);
			}
			aptix_buf_putc(&p->section, (char)c);
		}
		skip_blanks(p);
	}
	if (peek(p) != ']')
		return bad_line(p);
	next(p);
	if (aptix_buf_oom(&p->section))
		return APTIX_ERROR;
	ev.type = EV_SECTION;
	ev.key = p->section.ptr;
	ev.value = NULL;
	ev.end = header_end(p, p->pos);
	return p->fn ? p->fn(&ev, p->payload) : 0;
}

/* After the '=': the value up to the end of its (last) line. */
static int parse_value(struct parser *p)
{
	size_t space = 0;
	int quote = 0, c;

	for (;;) {
		c = peek(p);
		if (c == EOF || c == '\n') {
			if (quote)
				return bad_line(p);
			next(p);
			return 0;
		}
		next(p);
		if (!quote && isspace(c)) {
			if (p->value.len)
				space++;
			continue;
		}
		if (!quote && (c == '#' || c == ';')) {
			skip_line(p);
			return 0;
		}
		for (; space; space--)
			aptix_buf_putc(&p->value, ' ');
		if (c == '\\') {
			c = peek(p);
			switch (c) {
			case EOF:
				continue;
			case '\n':
				next(p);
				continue;
			case 't':
				c = '\t';
				break;
			case 'n':
				c = '\n';
				break;
			case 'b':
				c = '\b';
				break;
			case '\\':
			case '"':
				break;
			default:
				return bad_line(p);
			}
			next(p);
		} else if (c == '"') {
			quote = !quote;
			continue;
		} else if (c == '\0') {
			return bad_line(p);
		}
		aptix_buf_putc(&p->value, (char)c);
	}
}

/* At the first letter of a name. */
static int parse_entry(struct parser *p)
{
	struct config_event ev;
	int c, r;

	if (!p->section.len)
		return bad_line(p);	/* a key before any [section] */
	ev.begin = p->pos;
	aptix_buf_set(&p->key, p->section.ptr, p->section.len);
	aptix_buf_putc(&p->key, '.');
	while (is_keychar(c = peek(p))) {
		aptix_buf_putc(&p->key, (char)tolower(c));
		next(p);
	}
	skip_blanks(p);
	aptix_buf_clear(&p->value);
	c = peek(p);
	if (c == EOF || c == '\n' || c == '#' || c == ';') {
		skip_line(p);
		aptix_buf_puts(&p->value, "true");
	} else if (c == '=') {
		next(p);
		if ((r = parse_value(p)) < 0)
			return r;
	} else {
		return bad_line(p);
	}
	if (aptix_buf_oom(&p->key) || aptix_buf_oom(&p->value))
		return APTIX_ERROR;
	ev.type = EV_ENTRY;
	ev.key = p->key.ptr;
	ev.value = p->value.ptr;
	ev.end = p->pos;
	return p->fn ? p->fn(&ev, p->payload) : 0;
}

static int parse_config(const char *data, size_t len, const char *path,
			event_fn fn, void *payload)
{
	struct parser p;
	int c, r = 0;

	memset(&p, 0, sizeof(p));
	p.data = data;
	p.len = len;
	p.path = path;
	p.line = 1;
	p.fn = fn;
	p.payload = payload;
	aptix_buf_init(&p.section, 0);
	aptix_buf_init(&p.key, 0);
	aptix_buf_init(&p.value, 0);
	if (len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3))
		p.pos = 3;	/* a UTF-8 byte order mark */
	while (r >= 0 && (c = peek(&p)) != EOF) {
		if (isspace(c))
			next(&p);
		else if (c == '#' || c == ';')
			skip_line(&p);
		else if (c == '[') {
			next(&p);
			r = parse_section(&p);
		}
		else if (isalpha(c))
			r = parse_entry(&p);
		else
			r = bad_line(&p);
	}
	aptix_buf_release(&p.section);
	aptix_buf_release(&p.key);
	aptix_buf_release(&p.value);
	return r < 0 ? r : 0;
}

/*
 * Read a whole file; a missing one (or one under a missing or non-
 * directory parent) reads as APTIX_ENOTFOUND, without an error message.
 */
static int read_config_file(aptix_buf *out, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return APTIX_ENOTFOUND;
		aptix_error_set_os("cannot open '%s'", path);
		return APTIX_ERROR;
	}
	r = aptix_buf_read_fd(out, fd);
	close(fd);
	if (r < 0 && errno == EISDIR)
		aptix_error_set(APTIX_ERROR_CONFIG, "cannot read '%s': it is "
				"a directory", path);
	return r;
}

/* ------------------------------------------------------------------ */
/* Keys                                                                 */
/* ------------------------------------------------------------------ */

/*
 * Does canon (a stored key) name key? The section and the name compare
 * case-insensitively, a subsection exactly.
 */
static int key_matches(const char *canon, const char *key)
{
	const char *c1 = strchr(canon, '.'), *c2 = strrchr(canon, '.');
	const char *k1 = strchr(key, '.'), *k2 = strrchr(key, '.');

	if (!c1 || !k1)
		return 0;
	if (c1 - canon != k1 - key || strncasecmp(canon, key,
						  (size_t)(c1 - canon)))
		return 0;
	if (strcasecmp(c2 + 1, k2 + 1))
		return 0;
	return c2 - c1 == k2 - k1 && !memcmp(c1, k1, (size_t)(c2 - c1));
}

static int contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return 1;
	return 0;
}

static int is_secret_key(const char *key)
{
	static const char *const words[] = {
		"api-key", "apikey", "api_key", "token", "secret", "password"
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(words); i++)
		if (contains_ci(key, words[i]))
			return 1;
	return 0;
}

/*
 * The canonical form of key into out: "section.name" made of
 * [a-z0-9-] (the name starting with a letter), or, with allow_sub, also
 * "section.subsection.name" (the subsection kept as is).
 */
static int canonical_key(aptix_buf *out, const char *key, int allow_sub)
{
	const char *d1 = strchr(key, '.'), *d2 = strrchr(key, '.'), *s;
	int ok = d1 && d1 > key && d2[1] && isalpha((unsigned char)d2[1]);

	for (s = key; ok && s < d1; s++)
		ok = is_keychar((unsigned char)*s);
	for (s = d2 + 1; ok && *s; s++)
		ok = is_keychar((unsigned char)*s);
	if (ok && d1 != d2) {
		ok = allow_sub;
		for (s = d1 + 1; ok && s < d2; s++)
			ok = *s != '\n';
	}
	if (!ok) {
		aptix_error_set(APTIX_ERROR_CONFIG, "invalid key '%s': expected "
				"section.name made of a-z, 0-9 and '-'", key);
		return APTIX_EINVALID;
	}
	aptix_buf_clear(out);
	for (s = key; *s; s++)
		aptix_buf_putc(out, (s < d1 || s > d2) ?
			       (char)tolower((unsigned char)*s) : *s);
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

/* ------------------------------------------------------------------ */
/* Values                                                               */
/* ------------------------------------------------------------------ */

/* Each returns NULL, or why the text is not a valid value. */
static const char *parse_long(long *out, const char *s)
{
	long long v, mult = 1;
	char *end;

	if (!*s || isspace((unsigned char)*s))
		return "not an integer";
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s)
		return "not an integer";
	if (*end == 'k' || *end == 'K')
		mult = 1024;
	else if (*end == 'm' || *end == 'M')
		mult = 1024 * 1024;
	else if (*end == 'g' || *end == 'G')
		mult = 1024 * 1024 * 1024;
	if (mult != 1)
		end++;
	if (*end)
		return "not an integer";
	if (errno == ERANGE || v > LONG_MAX / mult || v < LONG_MIN / mult)
		return "out of range";
	*out = (long)(v * mult);
	return NULL;
}

static const char *parse_duration(int64_t *out, const char *s)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} units[] = {
		{ "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 },
		{ "h", 3600000 }, { "d", 86400000 },
	};
	unsigned long long v;
	char *end;
	size_t i;

	if (!isdigit((unsigned char)*s))
		goto bad;
	errno = 0;
	v = strtoull(s, &end, 10);
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (errno == ERANGE ||
		    v > (unsigned long long)(INT64_MAX / units[i].ms))
			return "out of range";
		*out = (int64_t)v * units[i].ms;
		return NULL;
	}
bad:
	return "not a duration (such as 30d, 12h, 15m, 90s, 500ms or a "
		"number of seconds)";
}

static const char *parse_bool(int *out, const char *s)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0", "" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(yes); i++)
		if (!strcasecmp(s, yes[i])) {
			*out = 1;
			return NULL;
		}
	for (i = 0; i < ARRAY_SIZE(no); i++)
		if (!strcasecmp(s, no[i])) {
			*out = 0;
			return NULL;
		}
	return "not a boolean (true/false, yes/no, on/off or 1/0)";
}

static const char *parse_double(double *out, const char *s)
{
	char *end;
	double d;

	if (!*s || isspace((unsigned char)*s))
		return "not a number";
	errno = 0;
	d = strtod(s, &end);
	if (end == s || *end || isnan(d))
		return "not a number";
	if (errno == ERANGE || !isfinite(d))
		return "out of range";
	*out = d;
	return NULL;
}

static int bad_value(const char *key, const char *value, const char *why)
{
	aptix_error_set(APTIX_ERROR_CONFIG, "bad value '%s' for '%s': %s",
			value, key, why);
	return APTIX_EINVALID;
}

/* Why v breaks k's bounds, or NULL. */
static const char *check_range(char *why, size_t n,
			       const aptix_config_key *k, double v)
{
	if (v >= k->min && v <= k->max)
		return NULL;
	if (k->min == 0 && k->max == HUGE_VAL)
		return "must not be negative";
	if (k->max == HUGE_VAL)
		snprintf(why, n, "must be at least %.15g", k->min);
	else if (k->min == -HUGE_VAL)
		snprintf(why, n, "must be at most %.15g", k->max);
	else
		snprintf(why, n, "must be between %.15g and %.15g",
			 k->min, k->max);
	return why;
}

/* "must be 'a', 'b' or 'c'" for an enum key. */
static const char *enum_why(aptix_buf *why, const aptix_config_key *k)
{
	size_t i;

	aptix_buf_puts(why, "must be ");
	for (i = 0; k->values[i]; i++) {
		if (i)
			aptix_buf_puts(why, k->values[i + 1] ? ", " : " or ");
		aptix_buf_printf(why, "'%s'", k->values[i]);
	}
	return aptix_buf_oom(why) ? "must be one of the allowed values" :
		why->ptr;
}

/* 0, or APTIX_EINVALID when value is not valid for table key k. */
static int validate_key(const aptix_config_key *k, const char *value)
{
	aptix_buf enum_msg = APTIX_BUF_INIT;
	const char *why = NULL;
	char range[96];
	long l;
	double d;
	int64_t ms;
	int b, r;
	size_t i;

	if ((k->flags & APTIX_CONFIG_NONEMPTY) && !*value)
		return bad_value(k->name, value, "must not be empty");
	switch (k->type) {
	case APTIX_CONFIG_STRING:
		break;
	case APTIX_CONFIG_LONG:
		if (!(why = parse_long(&l, value)))
			why = check_range(range, sizeof(range), k, (double)l);
		break;
	case APTIX_CONFIG_DOUBLE:
		if (!(why = parse_double(&d, value)))
			why = check_range(range, sizeof(range), k, d);
		break;
	case APTIX_CONFIG_DURATION:
		if (!(why = parse_duration(&ms, value)))
			why = check_range(range, sizeof(range), k, (double)ms);
		break;
	case APTIX_CONFIG_BOOL:
		why = parse_bool(&b, value);
		break;
	case APTIX_CONFIG_URL:
		if (strncmp(value, "http://", 7) &&
		    strncmp(value, "https://", 8))
			why = "must start with http:// or https://";
		break;
	case APTIX_CONFIG_ENUM:
		for (i = 0; k->values[i] && strcmp(value, k->values[i]); i++)
			;
		if (!k->values[i])
			why = enum_why(&enum_msg, k);
		break;
	}
	r = why ? bad_value(k->name, value, why) : 0;
	aptix_buf_release(&enum_msg);
	return r;
}

/* Levenshtein distance of a and b, capped at cap + 1. */
static size_t edit_distance(const char *a, const char *b, size_t cap)
{
	size_t la = strlen(a), lb = strlen(b), i, j, row[96], diag, up;

	if (lb >= ARRAY_SIZE(row) || (la > lb ? la - lb : lb - la) > cap)
		return cap + 1;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		diag = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t best = diag + (a[i - 1] != b[j - 1]);

			up = row[j];
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* 0, or APTIX_EINVALID when value is not valid for a table key. */
static int validate_known(const char *key, const char *value)
{
	const aptix_config_key *k = aptix_config_key_find(key);

	return k ? validate_key(k, value) : 0;
}

/* ------------------------------------------------------------------ */
/* Loading and reading                                                  */
/* ------------------------------------------------------------------ */

static const char *add_origin(aptix_config *cfg, const char *kind,
			      const char *where)
{
	aptix_buf b = APTIX_BUF_INIT;
	char *s;

	if (aptix__grow(&cfg->origins, &cfg->origins_alloc, cfg->norigins,
			sizeof(*cfg->origins), 8) < 0)
		return NULL;
	aptix_buf_printf(&b, "%s:%s", kind, where);
	if (!(s = aptix_buf_detach(&b)))
		return NULL;
	cfg->origins[cfg->norigins++] = s;
	return s;
}

static void entry_release(struct entry *e)
{
	free(e->key);
	free(e->value);
}

static int add_entry(aptix_config *cfg, const char *key, const char *value,
		     const char *origin)
{
	struct entry *e;

	if (aptix__grow(&cfg->entries, &cfg->alloc, cfg->nr,
			sizeof(*cfg->entries), 8) < 0)
		return APTIX_ERROR;
	e = &cfg->entries[cfg->nr];
	e->key = aptix__strdup(key);
	e->value = aptix__strdup(value);
	e->origin = origin;
	if (!e->key || !e->value) {
		entry_release(e);
		return APTIX_ERROR;
	}
	cfg->nr++;
	return 0;
}

struct load_ctx {
	aptix_config *cfg;
	const char *origin;
};

static int load_cb(const struct config_event *ev, void *payload)
{
	struct load_ctx *ctx = payload;

	if (ev->type != EV_ENTRY)
		return 0;
	return add_entry(ctx->cfg, ev->key, ev->value, ctx->origin);
}

static int load_file(aptix_config *cfg, const char *path)
{
	aptix_buf data = APTIX_BUF_INIT;
	struct load_ctx ctx;
	int r = read_config_file(&data, path);

	if (r == APTIX_ENOTFOUND) {
		r = 0;
		goto done;
	}
	if (r < 0)
		goto done;
	ctx.cfg = cfg;
	if (!(ctx.origin = add_origin(cfg, "file", path))) {
		r = APTIX_ERROR;
		goto done;
	}
	r = parse_config(data.ptr, data.len, path, load_cb, &ctx);
done:
	aptix_buf_release(&data);
	return r;
}

/* The user's file: $XDG_CONFIG_HOME/aptix/config or ~/.config/aptix/config. */
static int user_config_path(aptix_buf *out)
{
	const char *xdg = aptix_env__get(APTIX_ENV_XDG_CONFIG_HOME);
	const char *home = aptix_env__get(APTIX_ENV_HOME);

	if (xdg)
		aptix_buf_printf(out, "%s/aptix/config", xdg);
	else if (home)
		aptix_buf_printf(out, "%s/.config/aptix/config", home);
	else
		return APTIX_ENOTFOUND;
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

/*
 * APTIX_CONFIG_PARAMETERS: the "key=value" lines of aptix -c, last so
 * that they win (git's GIT_CONFIG_PARAMETERS). The CLI checked them.
 */
static int load_parameters(aptix_config *cfg)
{
	const char *v = aptix_env__get(APTIX_ENV_CONFIG_PARAMETERS);
	const char *origin, *eol, *eq;
	char *line;
	int r = 0;

	if (!v)
		return 0;
	if (!(origin = add_origin(cfg, "command line", "")))
		return APTIX_ERROR;
	for (; r == 0 && *v; v = *eol ? eol + 1 : eol) {
		eol = v + strcspn(v, "\n");
		eq = memchr(v, '=', (size_t)(eol - v));
		if (!eq || eq == v)
			continue;
		if (!(line = aptix__strndup(v, (size_t)(eol - v))))
			return APTIX_ERROR;
		line[eq - v] = '\0';
		r = add_entry(cfg, line, line + (eq - v) + 1, origin);
		free(line);
	}
	return r;
}

/* The end of a constructor: cfg to *out, or freed when r says it failed. */
static int hand_out(aptix_config **out, aptix_config *cfg, int r)
{
	if (r < 0) {
		aptix_config_free(cfg);
		return r;
	}
	*out = cfg;
	return 0;
}

int aptix_config_open_dir(aptix_config **out, const char *storedir)
{
	aptix_buf path = APTIX_BUF_INIT;
	aptix_config *cfg;
	const char *v, *origin;
	size_t i;
	int r;

	APTIX_ASSERT_ARG(out);
	*out = NULL;
	if (!(cfg = aptix__calloc(1, sizeof(*cfg))))
		return APTIX_ERROR;
	r = user_config_path(&path);
	if (r == 0)
		r = load_file(cfg, path.ptr);
	else if (r == APTIX_ENOTFOUND)
		r = 0;
	if (r == 0 && storedir) {
		aptix_buf_clear(&path);
		aptix_buf_printf(&path, "%s/" CONFIG_FILE, storedir);
		r = aptix_buf_oom(&path) ? APTIX_ERROR :
			load_file(cfg, path.ptr);
	}
	for (i = 0; r == 0 && i < ARRAY_SIZE(env_overrides); i++) {
		if (!(v = aptix_env__get(env_overrides[i].var)))
			continue;
		if (!(origin = add_origin(cfg, "env",
					  aptix_env__name(env_overrides[i].var))))
			r = APTIX_ERROR;
		else
			r = add_entry(cfg, env_overrides[i].key, v, origin);
	}
	if (r == 0)
		r = load_parameters(cfg);
	aptix_buf_release(&path);
	return hand_out(out, cfg, r);
}

void aptix_config_free(aptix_config *cfg)
{
	size_t i;

	if (!cfg)
		return;
	for (i = 0; i < cfg->nr; i++)
		entry_release(&cfg->entries[i]);
	free(cfg->entries);
	aptix__strv_clear(&cfg->origins, &cfg->norigins);
	free(cfg);
}

static const struct entry *find_entry(const aptix_config *cfg,
				      const char *key)
{
	size_t i;

	if (!cfg || !key)
		return NULL;
	for (i = cfg->nr; i-- > 0;)
		if (key_matches(cfg->entries[i].key, key))
			return &cfg->entries[i];
	return NULL;
}

const char *aptix_config_get(const aptix_config *cfg, const char *key)
{
	const struct entry *e = find_entry(cfg, key);

	return e ? e->value : NULL;
}

const char *aptix_config_get_origin(const aptix_config *cfg,
				    const char *key)
{
	const struct entry *e = find_entry(cfg, key);

	return e ? e->origin : NULL;
}

/*
 * The entry for a typed getter: NULL when unset; *r is then 0, or
 * APTIX_EINVALID when the value breaks the rules of a known key.
 */
static const struct entry *typed_entry(int *r, const aptix_config *cfg,
				       const char *key)
{
	const struct entry *e = find_entry(cfg, key);

	*r = e ? validate_known(e->key, e->value) : 0;
	return *r < 0 ? NULL : e;
}

/*
 * The typed getters: the default unless the key is set; a set value must
 * parse (and fit a known key's range), else a message naming key and
 * value.
 */
#define GET_TYPED(parse) do { \
	const struct entry *e; \
	const char *why; \
	int r; \
	APTIX_ASSERT_ARG(out); \
	APTIX_ASSERT_ARG(key); \
	*out = dflt; \
	if (!(e = typed_entry(&r, cfg, key))) \
		return r; \
	if ((why = parse(out, e->value))) \
		return bad_value(e->key, e->value, why); \
	return 0; \
} while (0)

int aptix_config_get_long(long *out, const aptix_config *cfg,
			  const char *key, long dflt)
{
	GET_TYPED(parse_long);
}

int aptix_config_get_bool(int *out, const aptix_config *cfg,
			  const char *key, int dflt)
{
	GET_TYPED(parse_bool);
}

int aptix_config_get_duration_ms(int64_t *out, const aptix_config *cfg,
				 const char *key, int64_t dflt)
{
	GET_TYPED(parse_duration);
}

int aptix_config_get_double(double *out, const aptix_config *cfg,
			    const char *key, double dflt)
{
	GET_TYPED(parse_double);
}

/*
 * The text a table getter reads for key: its value when set, else the
 * table's default (NULL when there is none), checked against the table.
 * *k gets the table entry.
 */
static int table_value(const char **out, const aptix_config_key **k,
		       const aptix_config *cfg, const char *key,
		       aptix_config_type type)
{
	const struct entry *e;

	*out = NULL;
	*k = aptix_config_key_find(key);
	/* the string getter also reads enum and URL keys */
	if (!*k || ((*k)->type != type && (type != APTIX_CONFIG_STRING ||
			((*k)->type != APTIX_CONFIG_ENUM &&
			 (*k)->type != APTIX_CONFIG_URL)))) {
		aptix_error_set(APTIX_ERROR_CONFIG, "'%s' is not a table key "
				"of type %s", key, aptix_config_type_name(type));
		return APTIX_EINVALID;
	}
	e = find_entry(cfg, key);
	if (e) {
		*out = e->value;
		return validate_key(*k, e->value);
	}
	*out = (*k)->dflt;
	return 0;
}

/*
 * The numeric table getters: *out is the default's value (0 when there
 * is none), then the set value's when it is valid.
 */
#define GET_TABLE(type, parse) do { \
	const aptix_config_key *k; \
	const char *v; \
	int r; \
	APTIX_ASSERT_ARG(out); \
	APTIX_ASSERT_ARG(key); \
	*out = 0; \
	r = table_value(&v, &k, cfg, key, type); \
	if (k && k->dflt) \
		parse(out, k->dflt); \
	if (r < 0) \
		return r; \
	if (!v) { \
		aptix_error_set(APTIX_ERROR_CONFIG, "'%s' is not set and has " \
				"no default", k->name); \
		return APTIX_ENOTFOUND; \
	} \
	parse(out, v); \
	return 0; \
} while (0)

int aptix_config_long(long *out, const aptix_config *cfg, const char *key)
{
	GET_TABLE(APTIX_CONFIG_LONG, parse_long);
}

int aptix_config_bool(int *out, const aptix_config *cfg, const char *key)
{
	GET_TABLE(APTIX_CONFIG_BOOL, parse_bool);
}

int aptix_config_double(double *out, const aptix_config *cfg,
			const char *key)
{
	GET_TABLE(APTIX_CONFIG_DOUBLE, parse_double);
}

int aptix_config_duration_ms(int64_t *out, const aptix_config *cfg,
			     const char *key)
{
	GET_TABLE(APTIX_CONFIG_DURATION, parse_duration);
}

int aptix_config_string(const char **out, const aptix_config *cfg,
			const char *key)
{
	const aptix_config_key *k;
	const char *v;
	int r;

	APTIX_ASSERT_ARG(out);
	APTIX_ASSERT_ARG(key);
	r = table_value(&v, &k, cfg, key, APTIX_CONFIG_STRING);
	*out = r < 0 ? (k ? k->dflt : NULL) : v;
	return r;
}

int aptix_config_foreach(const aptix_config *cfg, aptix_config_cb cb,
			 void *payload)
{
	size_t i;
	int r;

	APTIX_ASSERT_ARG(cb);
	for (i = 0; cfg && i < cfg->nr; i++) {
		r = cb(cfg->entries[i].key, cfg->entries[i].value,
		       cfg->entries[i].origin, payload);
		if (r)
			return r;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Writing                                                              */
/* ------------------------------------------------------------------ */

struct range {
	size_t begin, end;
};

struct edit_ctx {
	const char *key;	/* canonical */
	size_t section_len;	/* of key's "section[.sub]" part */
	int in_section, section_found;
	size_t section_end;	/* where a new key goes */
	struct range *found;	/* occurrences of key */
	size_t nfound, found_alloc;
};

static int edit_cb(const struct config_event *ev, void *payload)
{
	struct edit_ctx *x = payload;

	if (ev->type == EV_SECTION) {
		x->in_section = strlen(ev->key) == x->section_len &&
			!memcmp(ev->key, x->key, x->section_len);
		if (x->in_section) {
			x->section_found = 1;
			x->section_end = ev->end;
		}
		return 0;
	}
	if (x->in_section)
		x->section_end = ev->end;
	if (strcmp(ev->key, x->key))
		return 0;
	if (aptix__grow(&x->found, &x->found_alloc, x->nfound,
			sizeof(*x->found), 8) < 0)
		return APTIX_ERROR;
	x->found[x->nfound].begin = ev->begin;
	x->found[x->nfound].end = ev->end;
	x->nfound++;
	return 0;
}

/* Control characters a quoted value cannot carry. */
static int has_bad_control(const char *s)
{
	for (; *s; s++) {
		if (*s == 0x7f || ((unsigned char)*s < 0x20 && *s != '\t' &&
				    *s != '\n' && *s != '\b'))
			return 1;
	}
	return 0;
}

/* "name = value\n", the value quoted and escaped as needed. */
static void put_entry_line(aptix_buf *out, const char *name,
			   const char *value)
{
	size_t n = strlen(value);
	int quote = !n || isspace((unsigned char)value[0]) ||
		isspace((unsigned char)value[n - 1]) || strpbrk(value, "#;");
	const char *s;

	aptix_buf_printf(out, "%s = ", name);
	if (quote)
		aptix_buf_putc(out, '"');
	for (s = value; *s; s++) {
		switch (*s) {
		case '\\':
			aptix_buf_puts(out, "\\\\");
			break;
		case '"':
			aptix_buf_puts(out, "\\\"");
			break;
		case '\n':
			aptix_buf_puts(out, "\\n");
			break;
		case '\t':
			aptix_buf_puts(out, "\\t");
			break;
		case '\b':
			aptix_buf_puts(out, "\\b");
			break;
		default:
			aptix_buf_putc(out, *s);
		}
	}
	if (quote)
		aptix_buf_putc(out, '"');
	aptix_buf_putc(out, '\n');
}

/*
 * End the text with a whole line before a line is added after it; a
 * last line continued by a backslash gets an empty line after it (which
 * ends its value as the end of the file did), else the added line would
 * join that value.
 */
static void ensure_newline(aptix_buf *out)
{
	size_t n;

	if (out->len && out->ptr[out->len - 1] != '\n')
		aptix_buf_putc(out, '\n');
	n = out->len;
	if (n > 2 && out->ptr[n - 2] == '\r')
		n--;
	if (n >= 2 && out->ptr[n - 2] == '\\')
		aptix_buf_putc(out, '\n');
}

/* The new text of the file: old with key set to value (NULL: removed). */
static int edit_text(aptix_buf *out, const aptix_buf *old,
		     const struct edit_ctx *x, const char *value)
{
	const char *name = x->key + x->section_len + 1;
	size_t i, pos = 0, begin;

	if (!value) {
		for (i = 0; i < x->nfound; i++) {
			/* the whole line when the key starts it */
			begin = x->found[i].begin;
			while (begin > pos && (old->ptr[begin - 1] == ' ' ||
					       old->ptr[begin - 1] == '\t'))
				begin--;
			if (begin > 0 && old->ptr[begin - 1] != '\n')
				begin = x->found[i].begin;
			aptix_buf_put(out, old->ptr + pos, begin - pos);
			pos = x->found[i].end;
		}
		aptix_buf_put(out, old->ptr + pos, old->len - pos);
	} else if (x->nfound) {
		const struct range *last = &x->found[x->nfound - 1];

		aptix_buf_put(out, old->ptr, last->begin);
		put_entry_line(out, name, value);
		aptix_buf_put(out, old->ptr + last->end, old->len - last->end);
	} else if (x->section_found) {
		aptix_buf_put(out, old->ptr, x->section_end);
		ensure_newline(out);
		aptix_buf_putc(out, '\t');
		put_entry_line(out, name, value);
		aptix_buf_put(out, old->ptr + x->section_end,
			      old->len - x->section_end);
	} else {
		aptix_buf_put(out, old->ptr, old->len);
		ensure_newline(out);
		aptix_buf_printf(out, "[%.*s]\n\t", (int)x->section_len,
				 x->key);
		put_entry_line(out, name, value);
	}
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

static int write_all(int fd, const char *p, size_t n, const char *path)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int full = w < 0 && (errno == ENOSPC ||
					     errno == EDQUOT);

			aptix_error_set_os("cannot write '%s'", path);
			return full ? APTIX_EFULL : APTIX_ERROR;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = 0;

	if (fd < 0 || (fsync(fd) < 0 && errno != EINVAL)) {
		aptix_error_set_os("cannot sync directory '%s'", dir);
		r = APTIX_ERROR;
	}
	if (fd >= 0)
		close(fd);
	return r;
}

/* The checks of aptix_config_set(): canon gets the canonical key. */
static int check_setting(aptix_buf *canon, const char *key,
			 const char *value)
{
	int r;

	/* unsetting one is allowed: it removes a secret written by hand */
	if (value && is_secret_key(key)) {
		aptix_error_set(APTIX_ERROR_CONFIG, "refusing to store a "
				"secret in the config: set OPENAI_API_KEY in "
				"the environment");
		return APTIX_EINVALID;
	}
	/* price.<model>.<field>, remote.<name>.url: subsections */
	if ((r = canonical_key(canon, key, !value ||
				 !strncasecmp(key, "price.", 6) ||
				 !strncasecmp(key, "remote.", 7))) < 0)
		return r;
	if (value) {
		aptix_credential c;
		char why[160];

		/* never echo the value: it may be the credential */
		/* a PostgreSQL URL may name its user: that is no secret */
		if (aptix__url_is_postgresql(value) ?
		    aptix__url_has_password(value) :
		    aptix__url_has_userinfo(value)) {
			aptix_error_set(APTIX_ERROR_CONFIG, "refusing to store "
					"'%s': the URL holds user information "
					"(user:password@); give credentials "
					"in the environment, never in a URL",
					canon->ptr);
			return APTIX_EINVALID;
		}
		if (aptix_credscan_find(&c, value, strlen(value), NULL, 0)) {
			aptix_error_set(APTIX_ERROR_CONFIG, "refusing to store "
					"'%s': its value holds a credential, "
					"%s",
					canon->ptr, aptix_credential_describe(
						why, sizeof(why), &c));
			return APTIX_EINVALID;
		}
		if (has_bad_control(value))
			return bad_value(canon->ptr, value, "contains a "
					 "control character");
		if ((r = validate_known(canon->ptr, value)) < 0)
			return r;
	}
	return 0;
}

/* price.<model>.<field>: US dollars per million tokens (src/config/price.c). */
static int check_price(const char *key, const char *value)
{
	char *end;
	double d;

	if (!value)
		return 0;
	d = strtod(value, &end);
	if (end == value || *end || !(d >= 0) || d > 1e6)
		return bad_value(key, value, "expected US dollars per million "
				 "tokens, as 1.25");
	return 0;
}

/* remote.<name>.url and remote.<name>.org (aptix remote add). */
static int remote_key(const char *key)
{
	const char *last = strrchr(key, '.');

	return !strncasecmp(key, "remote.", 7) && last > key + 7 &&
		(!strcasecmp(last, ".url") || !strcasecmp(last, ".org"));
}

/*
 * A key the table does not know is refused (aptix config refuses to set
 * it), with the nearest table key when one is close, except in the free
 * namespace "x.", kept for the user's own keys: a typo of a real key
 * must not be stored and silently ignored.
 */
int aptix_config_check_key(const char *key, const char *value)
{
	const aptix_config_key *keys, *best = NULL;
	size_t n, i, d, bestd = 3;

	aptix_buf canon = APTIX_BUF_INIT;
	int r = check_setting(&canon, key, value);

	aptix_buf_release(&canon);
	if (r < 0 || aptix_config_key_find(key) || !strncmp(key, "x.", 2))
		return r;
	if (aptix_price_key(key))
		return check_price(key, value);
	if (remote_key(key))
		return 0;
	keys = aptix_config_keys(&n);
	for (i = 0; i < n; i++)
		if ((d = edit_distance(key, keys[i].name, 2)) < bestd) {
			bestd = d;
			best = &keys[i];
		}
	if (best)
		aptix_error_set(APTIX_ERROR_CONFIG, "unknown config key '%s'; "
				"did you mean '%s'?", key, best->name);
	else
		aptix_error_set(APTIX_ERROR_CONFIG, "unknown config key '%s' "
				"(aptix config --list-keys lists them; keys of "
				"your own go under 'x.')", key);
	return APTIX_EINVALID;
}

int aptix_config_check_value(const char *key, const char *value)
{
	APTIX_ASSERT_ARG(key && value);
	if (aptix_price_key(key))
		return check_price(key, value);
	return validate_known(key, value);
}

static int check_cb(const char *key, const char *value, const char *origin,
		    void *payload)
{
	(void)origin;
	(void)payload;
	return aptix_config_check_value(key, value) < 0 ? APTIX_EINVALID : 0;
}

int aptix_config_check_all(const aptix_config *cfg)
{
	return aptix_config_foreach(cfg, check_cb, NULL);
}

/* The new text of the file at path, which holds old: see edit_text(). */
static int splice_setting(aptix_buf *text, const aptix_buf *old,
			  const char *canon, const char *key,
			  const char *value, const char *path)
{
	struct edit_ctx x;
	int r;

	memset(&x, 0, sizeof(x));
	x.key = canon;
	x.section_len = (size_t)(strrchr(canon, '.') - canon);
	r = parse_config(old->ptr, old->len, path, edit_cb, &x);
	if (r == 0 && !value && !x.nfound) {
		aptix_error_set(APTIX_ERROR_CONFIG, "key '%s' is not set in "
				"'%s'", key, path);
		r = APTIX_ENOTFOUND;
	}
	if (r == 0)
		r = edit_text(text, old, &x, value);
	free(x.found);
	return r;
}

/*
 * The lock file is there: as git does, say whose it may be and how to
 * clear it when its writer crashed.
 */
static void lock_held(const char *lock)
{
	struct stat st;
	char age[64] = "";
	time_t now = time(NULL);

	/*
	 * time() reads a coarse clock that can lag a file's fresh mtime by
	 * a tick: a lock made this very moment may look a second younger
	 * than now.
	 */
	if (stat(lock, &st) == 0)
		snprintf(age, sizeof(age), " (made %lld s ago)",
			 now > st.st_mtime ?
			 (long long)(now - st.st_mtime) : 0LL);
	aptix_error_set(APTIX_ERROR_CONFIG, "cannot lock the config: '%s' "
			"exists%s. Another aptix process seems to be "
			"writing the config (aptix config); make sure it "
			"has finished, then try again. If it still fails, an "
			"aptix process crashed while writing it: remove the "
			"file manually to continue.", lock, age);
}

/* Set or unset key in dir's config file, under its lock. */
static int set_in_dir(const char *dir, const char *key, const char *value)
{
	aptix_buf canon = APTIX_BUF_INIT, path = APTIX_BUF_INIT;
	aptix_buf lock = APTIX_BUF_INIT, old = APTIX_BUF_INIT;
	aptix_buf text = APTIX_BUF_INIT;
	int fd = -1, r;

	if ((r = aptix_sanitize_stdfds()) < 0 ||
	    (r = check_setting(&canon, key, value)) < 0)
		goto done;

	aptix_buf_printf(&path, "%s/" CONFIG_FILE, dir);
	aptix_buf_printf(&lock, "%s/" CONFIG_LOCK, dir);
	if (aptix_buf_oom(&path) || aptix_buf_oom(&lock)) {
		r = APTIX_ERROR;
		goto done;
	}
	fd = open(lock.ptr, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		if (errno == EEXIST) {
			lock_held(lock.ptr);
			r = APTIX_ELOCKED;
		} else {
			aptix_error_set_os("cannot create '%s'", lock.ptr);
			r = APTIX_ERROR;
		}
		goto done;
	}
	/* read under the lock, so that no concurrent change is lost */
	r = read_config_file(&old, path.ptr);
	if (r == APTIX_ENOTFOUND)
		r = 0;
	if (r < 0)
		goto fail;
	if ((r = splice_setting(&text, &old, canon.ptr, key, value,
				  path.ptr)) < 0 ||
	    (r = write_all(fd, text.ptr, text.len, lock.ptr)) < 0)
		goto fail;
	if (fsync(fd) < 0) {
		aptix_error_set_os("cannot sync '%s'", lock.ptr);
		r = APTIX_ERROR;
		goto fail;
	}
	r = close(fd);
	fd = -1;
	if (r < 0) {
		aptix_error_set_os("cannot write '%s'", lock.ptr);
		r = APTIX_ERROR;
		goto fail;
	}
	if (rename(lock.ptr, path.ptr) < 0) {
		aptix_error_set_os("cannot rename '%s' to '%s'", lock.ptr,
				   path.ptr);
		r = APTIX_ERROR;
		goto fail;
	}
	r = fsync_dir(dir);
	goto done;
fail:
	if (fd >= 0)
		close(fd);
	fd = -1;
	unlink(lock.ptr);
done:
	aptix_buf_release(&canon);
	aptix_buf_release(&path);
	aptix_buf_release(&lock);
	aptix_buf_release(&old);
	aptix_buf_release(&text);
	return r;
}

int aptix_config_set_dir(const char *storedir, const char *key,
			 const char *value)
{
	APTIX_ASSERT_ARG(storedir);
	APTIX_ASSERT_ARG(key);
	return set_in_dir(storedir, key, value);
}

int aptix_config_open_store_file(aptix_config **out, const char *storedir)
{
	aptix_buf path = APTIX_BUF_INIT;
	aptix_config *cfg;
	int r;

	APTIX_ASSERT_ARG(out && storedir);
	*out = NULL;
	if (!(cfg = aptix__calloc(1, sizeof(*cfg))))
		return APTIX_ERROR;
	aptix_buf_printf(&path, "%s/" CONFIG_FILE, storedir);
	r = aptix_buf_oom(&path) ? APTIX_ERROR : load_file(cfg, path.ptr);
	aptix_buf_release(&path);
	return hand_out(out, cfg, r);
}

int aptix_config_user_path(aptix_buf *out)
{
	APTIX_ASSERT_ARG(out);
	aptix_buf_clear(out);
	if (user_config_path(out) == APTIX_ENOTFOUND) {
		aptix_error_set(APTIX_ERROR_CONFIG, "neither XDG_CONFIG_HOME "
				"nor HOME is set: no user config file");
		return APTIX_ENOTFOUND;
	}
	return aptix_buf_oom(out) ? aptix_error_oom() : 0;
}

/* mkdir -p of the user file's directory: ~/.config may not exist yet */
static int make_dirs(char *path)
{
	char *p;

	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0777) < 0 && errno != EEXIST) {
			aptix_error_set_os("cannot create '%s'", path);
			*p = '/';
			return APTIX_ERROR;
		}
		*p = '/';
	}
	if (mkdir(path, 0777) < 0 && errno != EEXIST) {
		aptix_error_set_os("cannot create '%s'", path);
		return APTIX_ERROR;
	}
	return 0;
}

int aptix_config_set_user(const char *key, const char *value)
{
	aptix_buf dir = APTIX_BUF_INIT;
	int r;

	APTIX_ASSERT_ARG(key);
	if ((r = aptix_config_user_path(&dir)) == 0) {
		/* the file's directory: the path less "/config" */
		dir.len -= sizeof(CONFIG_FILE);
		dir.ptr[dir.len] = '\0';
		if ((r = make_dirs(dir.ptr)) == 0)
			r = set_in_dir(dir.ptr, key, value);
	}
	aptix_buf_release(&dir);
	return r;
}

/* ------------------------------------------------------------------ */
/* For the fuzzers (src/config/test-hooks.h)                                   */
/* ------------------------------------------------------------------ */

int aptix_config__parse_buffer(aptix_config **out, const char *data,
			       size_t len)
{
	aptix_config *cfg;
	struct load_ctx ctx;
	int r;

	*out = NULL;
	if (!(cfg = aptix__calloc(1, sizeof(*cfg))))
		return APTIX_ERROR;
	ctx.cfg = cfg;
	if (!(ctx.origin = add_origin(cfg, "file", "<memory>")))
		r = APTIX_ERROR;
	else
		r = parse_config(data, len, "<memory>", load_cb, &ctx);
	return hand_out(out, cfg, r);
}

int aptix_config__edit_buffer(aptix_buf *out, const char *data, size_t len,
			      const char *key, const char *value)
{
	aptix_buf canon = APTIX_BUF_INIT, old = APTIX_BUF_INIT;
	int r;

	if ((r = check_setting(&canon, key, value)) == 0 &&
	    (r = aptix_buf_set(&old, data, len)) == 0)
		r = splice_setting(out, &old, canon.ptr, key, value,
				   "<memory>");
	aptix_buf_release(&canon);
	aptix_buf_release(&old);
	return r;
}

int aptix_config_restart_over_cap(char *msg, size_t max,
				  const aptix_config *cfg)
{
	long cap, window, summary;

	if (aptix_config_long(&cap, cfg, "context.chain-max-chars") < 0 ||
	    aptix_config_long(&window, cfg, "context.window-chars") < 0 ||
	    aptix_config_long(&summary, cfg, "context.summary-chars") < 0) {
		aptix_error_clear();
		return 0;
	}
	if (cap <= 0 || cap >= window + summary)
		return 0;
	snprintf(msg, max, "context.chain-max-chars (%ld) is below what a "
		 "chain restart sends (context.window-chars %ld + "
		 "context.summary-chars %ld, plus files): every restart "
		 "carries more than the cap; raise it, or lower the others",
		 cap, window, summary);
	return 1;
}
