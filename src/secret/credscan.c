/*
 * src/secret/credscan.c - the credential detector (aptix/credscan.h).
 *
 * The rules follow gitleaks' default configuration, written as code
 * rather than regular expressions so that a scan is one pass over the
 * bytes with no backtracking:
 *
 *  - token rules: a literal prefix at a word boundary (the byte before
 *    is not [A-Za-z0-9_]), then a maximal run of the rule's characters
 *    whose length is in the rule's range, and a minimum Shannon entropy
 *    of the whole token (placeholders such as ghp_xxxx... fall under
 *    it); AWS key ids ending in EXAMPLE (the documentation's) are not
 *    reported;
 *  - private-key: "-----BEGIN <label>-----" whose label holds "PRIVATE
 *    KEY", followed by at least 64 base64 characters (a key, not the
 *    marker in a parser's source); "\n" escapes (a key in a JSON
 *    string) and "Name: value" headers of encrypted keys are skipped;
 *  - jwt: eyJ....eyJ.... with three dot-separated base64url parts;
 *  - url-password: "scheme://user:password@" with a password that is
 *    not a reference or a placeholder;
 *  - assignments: "name = value", "name: value", "name := value",
 *    "name => value", quoted or not, where the name holds key, secret,
 *    token, credential, auth... (secret-assignment: 16 to 256 bytes,
 *    entropy >= 3.5) or password, passwd, pwd, pass...
 *    (password-assignment: 8 to 128 bytes, entropy >= 3.0), and AWS
 *    secret keys (a name with "aws" and "secret", 40 base64 bytes).
 *    The value must end where a value ends (a quote, a blank, ';', ',',
 *    '&', the end of the line), so that code (token = next_token(p))
 *    is not a value; references ($VAR, ${VAR}, %s, <name>, {{x}}),
 *    placeholders (example, xxx, changeme, your_...) and values
 *    without a digit or without a letter are not reported;
 *  - known-key: the keys the caller names, wherever they are.
 *
 * A finding ends the scan at its end: findings do not overlap, and a
 * value that a token rule recognises is reported by that rule rather
 * than as an assignment.
 */
#define _GNU_SOURCE 1	/* memmem */
#include "util/common.h"
#include "secret/secrets.h"
#include "aptix/credscan.h"

enum {
	C_UP = 1, C_LO = 2, C_DIG = 4, C_DASH = 8, C_UNDER = 16,
	C_SLASH = 32, C_PLUS = 64, C_EQ = 128, C_DOT = 256
};
#define C_ALNUM (C_UP | C_LO | C_DIG)
#define C_B64 (C_ALNUM | C_SLASH | C_PLUS | C_EQ)

struct token_rule {
	const char *id, *description;
	const char *prefixes[7];
	unsigned body;			/* character classes after the prefix */
	unsigned short min, max;	/* length of that run */
	double entropy;			/* minimum, of the whole token */
};

static const struct token_rule tokens[] = {
	{ "openai-project-key", "OpenAI API key",
	  { "sk-proj-", "sk-svcacct-", "sk-admin-", NULL },
	  C_ALNUM | C_DASH | C_UNDER, 20, 400, 3.0 },
	{ "openai-legacy-key", "OpenAI API key (legacy format)",
	  { "sk-", NULL }, C_ALNUM, 32, 64, 3.5 },
	{ "anthropic-api-key", "Anthropic API key",
	  { "sk-ant-", NULL }, C_ALNUM | C_DASH | C_UNDER, 32, 200, 3.0 },
	{ "aws-access-key-id", "AWS access key id",
	  { "AKIA", "ASIA", "ABIA", "ACCA", NULL }, C_UP | C_DIG, 16, 16,
	  3.0 },
	{ "github-token", "GitHub token",
	  { "ghp_", "gho_", "ghu_", "ghs_", "ghr_", NULL }, C_ALNUM, 36, 36,
	  3.0 },
	{ "github-fine-grained-token", "GitHub fine-grained token",
	  { "github_pat_", NULL }, C_ALNUM | C_UNDER, 60, 120, 3.0 },
	{ "gitlab-token", "GitLab personal access token",
	  { "glpat-", NULL }, C_ALNUM | C_DASH | C_UNDER, 20, 64, 3.0 },
	{ "slack-token", "Slack token",
	  { "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-", NULL },
	  C_ALNUM | C_DASH, 20, 255, 3.0 },
	{ "slack-webhook", "Slack webhook URL",
	  { "hooks.slack.com/services/", "hooks.slack.com/workflows/",
	    NULL }, C_ALNUM | C_SLASH, 40, 64, 3.0 },
	{ "stripe-key", "Stripe secret key",
	  { "sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_",
	    "rk_prod_", NULL }, C_ALNUM, 16, 247, 3.0 },
	{ "google-api-key", "Google API key",
	  { "AIza", NULL }, C_ALNUM | C_DASH | C_UNDER, 35, 35, 3.0 },
	{ "npm-token", "npm access token",
	  { "npm_", NULL }, C_ALNUM, 36, 36, 3.0 },
	{ "huggingface-token", "Hugging Face token",
	  { "hf_", NULL }, C_UP | C_LO, 34, 34, 3.0 },
	{ "sendgrid-api-key", "SendGrid API key",
	  { "SG.", NULL }, C_ALNUM | C_DASH | C_UNDER | C_DOT, 66, 66, 3.0 },
};

/* The other rules, in the order aptix_credscan_rule() lists them. */
enum {
	R_KNOWN, R_PRIVATE_KEY, R_JWT, R_URL, R_AWS_SECRET, R_SECRET,
	R_PASSWORD, R__COUNT
};

static const struct {
	const char *id, *description;
} others[R__COUNT] = {
	{ "known-key", "the value of a configured API key" },
	{ "private-key", "private key (PEM block)" },
	{ "jwt", "JSON Web Token" },
	{ "url-password", "password in a URL" },
	{ "aws-secret-access-key", "AWS secret access key" },
	{ "secret-assignment", "high-entropy value assigned to a key, "
	  "secret or token" },
	{ "password-assignment", "password assigned to a password field" },
};

size_t aptix_credscan_rule_count(void)
{
	return R__COUNT + ARRAY_SIZE(tokens);
}

int aptix_credscan_rule(const char **id, const char **description, size_t i)
{
	if (i < R__COUNT) {
		*id = others[i].id;
		*description = others[i].description;
		return 0;
	}
	i -= R__COUNT;
	if (i >= ARRAY_SIZE(tokens))
		return APTIX_ENOTFOUND;
	*id = tokens[i].id;
	*description = tokens[i].description;
	return 0;
}

double aptix_credscan_entropy(const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t count[256], i;
	double sum = 0, n = (double)len;

	if (!len)
		return 0;
	memset(count, 0, sizeof(count));
	for (i = 0; i < len; i++)
		count[p[i]]++;
	/* H = log2 n - (1/n) sum c log2 c */
	for (i = 0; i < 256; i++)
		if (count[i] > 1)
			sum += (double)count[i] * aptix__ln((double)count[i]);
	return (aptix__ln(n) - sum / n) / aptix__ln(2);
}

/* --- Characters ----------------------------------------------------------- */

static unsigned cls(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return C_UP;
	if (c >= 'a' && c <= 'z')
		return C_LO;
	if (c >= '0' && c <= '9')
		return C_DIG;
	switch (c) {
	case '-': return C_DASH;
	case '_': return C_UNDER;
	case '/': return C_SLASH;
	case '+': return C_PLUS;
	case '=': return C_EQ;
	case '.': return C_DOT;
	}
	return 0;
}

static int is_word(unsigned char c)
{
	return (cls(c) & (C_ALNUM | C_UNDER)) != 0;
}

static unsigned char lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* Whether s[0..n) holds needle, ignoring the case of ASCII letters. */
static int has_word(const unsigned char *s, size_t n, const char *needle)
{
	size_t k = strlen(needle), i, j;

	for (i = 0; k <= n && i <= n - k; i++) {
		for (j = 0; j < k &&
			     lower(s[i + j]) == (unsigned char)needle[j]; j++)
			;
		if (j == k)
			return 1;
	}
	return 0;
}

static int starts(const unsigned char *p, const unsigned char *end,
		  const char *lit)
{
	size_t n = strlen(lit);

	return (size_t)(end - p) >= n && !memcmp(p, lit, n);
}

/* --- The scan ------------------------------------------------------------- */

struct scan {
	const unsigned char *p;
	size_t len;
	size_t line, line_at;		/* line number of offset line_at */
	aptix_credential_cb cb;
	void *payload;
};

static int report(struct scan *s, const char *id, const char *desc,
		  size_t off, size_t len)
{
	aptix_credential c;

	if (off < s->line_at) {
		s->line = 1;
		s->line_at = 0;
	}
	for (; s->line_at < off; s->line_at++)
		if (s->p[s->line_at] == '\n')
			s->line++;
	c.rule = id;
	c.description = desc;
	c.line = s->line;
	c.offset = off;
	c.length = len;
	return s->cb(&c, s->payload);
}

/*
 * The token rule that matches at i: its index and the token's length in
 * *n, or -1.
 */
static long token_at(const struct scan *s, size_t i, size_t *n)
{
	const unsigned char *p = s->p + i, *end = s->p + s->len;
	size_t r, k;

	if (i && is_word(s->p[i - 1]))
		return -1;
	for (r = 0; r < ARRAY_SIZE(tokens); r++) {
		const struct token_rule *t = &tokens[r];

		for (k = 0; t->prefixes[k]; k++) {
			size_t pl = strlen(t->prefixes[k]), run = 0;

			if (p[0] != (unsigned char)t->prefixes[k][0] ||
			    !starts(p, end, t->prefixes[k]))
				continue;
			while (p + pl + run < end &&
			       (cls(p[pl + run]) & t->body))
				run++;
			if (run < t->min || run > t->max ||
			    aptix_credscan_entropy(p, pl + run) < t->entropy)
				continue;
			if (!strcmp(t->id, "aws-access-key-id") &&
			    has_word(p, pl + run, "example"))
				continue;	/* AWS's documentation */
			*n = pl + run;
			return (long)r;
		}
	}
	return -1;
}

/* Base64 characters of a PEM body from q (see the file comment). */
static size_t pem_body(const unsigned char *q, const unsigned char *end,
		       const unsigned char **stop)
{
	size_t count = 0;
	int headers = 0;

	while (q < end) {
		if (cls(*q) & C_B64) {
			count++;
			q++;
		} else if (*q == ' ' || *q == '\t' || *q == '\r' ||
			   *q == '\n') {
			q++;
		} else if (*q == '\\' && q + 1 < end &&
			   (q[1] == 'n' || q[1] == 'r')) {
			q += 2;
		} else if (*q == ':' && headers < 4) {
			/* "Proc-Type: 4,ENCRYPTED": skip the line */
			headers++;
			count = 0;
			while (q < end && *q != '\n' && *q != '\\')
				q++;
		} else {
			break;
		}
	}
	*stop = q;
	return count;
}

static int private_key_at(const struct scan *s, size_t i, size_t *n)
{
	const unsigned char *p = s->p + i, *end = s->p + s->len, *q, *stop;
	const unsigned char *label, *close = NULL;

	if (!starts(p, end, "-----BEGIN "))
		return 0;
	label = p + 11;
	for (q = label; q < end && q - label < 80 && *q != '\n'; q++)
		if (starts(q, end, "-----")) {
			close = q;
			break;
		}
	if (!close || !has_word(label, (size_t)(close - label),
				"private key"))
		return 0;
	q = close + 5;
	if (pem_body(q, end, &stop) < 64)
		return 0;
	if (starts(stop, end, "-----END")) {
		for (q = stop + 8; q < end && *q != '\n'; q++)
			if (q + 5 <= end && starts(q, end, "-----")) {
				q += 5;
				break;
			}
		stop = q;
	}
	*n = (size_t)(stop - p);
	return 1;
}

/* A run of base64url characters from q: its length. */
static size_t b64url_run(const unsigned char *q, const unsigned char *end)
{
	size_t n = 0;

	while (q + n < end && (cls(q[n]) & (C_ALNUM | C_DASH | C_UNDER)))
		n++;
	return n;
}

static int jwt_at(const struct scan *s, size_t i, size_t *n)
{
	const unsigned char *p = s->p + i, *end = s->p + s->len, *q = p;
	size_t a, b, c;

	if ((i && is_word(s->p[i - 1])) || !starts(p, end, "eyJ"))
		return 0;
	a = b64url_run(q, end);
	q += a;
	if (a < 13 || q >= end || *q != '.' || !starts(q + 1, end, "eyJ"))
		return 0;
	b = b64url_run(++q, end);
	q += b;
	if (b < 13 || q >= end || *q != '.')
		return 0;
	c = b64url_run(++q, end);
	if (c < 10)
		return 0;
	*n = (size_t)(q + c - p);
	return 1;
}

/* Values that stand for a secret rather than being one. */
static int placeholder(const unsigned char *v, size_t n)
{
	static const char *const words[] = {
		"example", "xxx", "***", "...", "placeholder", "changeme",
		"change_me", "change-me", "your_", "your-", "yourkey",
		"dummy", "redacted", "sample", "${", "{{", "}}", "$(", "%s",
		"%(", "<", ">", "@@", "insert", "replace", "fixme", "todo"
	};
	size_t i;

	if (!n || strchr("$%{@&*#!:./\\", v[0]))
		return 1;
	for (i = 0; i < ARRAY_SIZE(words); i++)
		if (has_word(v, n, words[i]))
			return 1;
	return 0;
}

/*
 * A SCREAMING_CASE name (NL80211_KEY_MAX, HMAC-SHA256), not a value; or
 * a path of words (keyId/19700101/region/service): two parts or more of
 * three lowercase letters or more between slashes.
 */
static int constant(const unsigned char *v, size_t n)
{
	size_t i, run = 0, words = 0;
	int under = 0, upper = 1, part = 1;

	for (i = 0; i <= n; i++) {
		if (i == n || v[i] == '/') {
			words += part && run >= 3;
			run = 0;
			part = 1;
			continue;
		}
		run++;
		part &= cls(v[i]) == C_LO;
		if (v[i] == '_' || v[i] == '-')
			under = 1;
		else if (!(cls(v[i]) & (C_UP | C_DIG)))
			upper = 0;
	}
	return (upper && under) || words >= 2;
}

/*
 * Code rather than a value, when not quoted: a member access or pointer
 * chain (AnalysisImpl.second, win32api.RegOpenKeyEx, e^.sp_pwdp: each
 * part starts with a letter), a name of words without digits
 * (Err_WrongPass), an identifier of several words
 * (Tgnutls_x509_privkey_t).
 */
static int code_like(const unsigned char *v, size_t n)
{
	size_t i, under = 0;
	int digit = 0, sep = 0, part = 1;

	for (i = 0; i < n; i++) {
		unsigned k = cls(v[i]);

		if (v[i] == '.' || v[i] == '^') {
			sep = 1;
			part = 1;
			continue;
		}
		if (part && !(k & (C_UP | C_LO | C_UNDER)))
			return 0;
		part = 0;
		if (!(k & (C_UP | C_LO | C_DIG | C_UNDER)))
			return 0;
		under += v[i] == '_';
		digit |= k == C_DIG;
	}
	return sep || (under && !digit) || under >= 2;
}

/* What a token looks like: base64, base64url, hex ([\w.=+/~-]). */
static int token_chars(const unsigned char *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!cls(v[i]) && v[i] != '~')
			return 0;
	return 1;
}

/* The character classes of v: letters, digits, others. */
static void classes(const unsigned char *v, size_t n, int *letter,
		    int *digit, int *symbol, int *kinds)
{
	int up = 0, lo = 0, dig = 0, other = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned k = cls(v[i]);

		up |= k == C_UP;
		lo |= k == C_LO;
		dig |= k == C_DIG;
		other |= !(k & C_ALNUM);
	}
	*letter = up || lo;
	*digit = dig;
	*symbol = other;
	*kinds = up + lo + dig + other;
}

static int url_password_at(const struct scan *s, size_t i, size_t *off,
			   size_t *n)
{
	const unsigned char *p = s->p;
	size_t j = i, k, colon = 0, at = 0;
	int letter, digit, symbol, kinds;

	if (!starts(p + i, p + s->len, "://"))
		return 0;
	while (j > 0 && (cls(p[j - 1]) & (C_ALNUM | C_PLUS | C_DOT |
					  C_DASH)))
		j--;
	if (i - j < 2)
		return 0;
	for (k = i + 3; k < s->len && k - i < 256; k++) {
		unsigned char c = p[k];

		if (c == '@') {
			at = k;
			break;
		}
		if (c == ':' && !colon)
			colon = k;
		if (c <= ' ' || strchr("/?#\"'`<>()[]{}\\", c))
			return 0;
	}
	if (!at || !colon || colon == i + 3 || colon + 1 >= at)
		return 0;
	*off = colon + 1;
	*n = at - colon - 1;
	classes(p + *off, *n, &letter, &digit, &symbol, &kinds);
	if (*n < 6 || placeholder(p + *off, *n) ||
	    has_word(p + *off, *n, "pass") || has_word(p + *off, *n, "secret")
	    || has_word(p + *off, *n, "token") || kinds < 2 ||
	    aptix_credscan_entropy(p + *off, *n) < 2.5)
		return 0;
	return 1;
}

/* Split name into lowercase segments at _ . - and camelCase humps. */
static int segment_is(const unsigned char *name, size_t n, const char *word)
{
	size_t i = 0, k = strlen(word);

	while (i < n) {
		size_t j = i + 1;

		while (j < n && !(cls(name[j]) & (C_DASH | C_UNDER | C_DOT)) &&
		       !(cls(name[j]) == C_UP && cls(name[j - 1]) == C_LO))
			j++;
		if (j - i == k) {
			size_t m;

			for (m = 0; m < k && lower(name[i + m]) ==
				     (unsigned char)word[m]; m++)
				;
			if (m == k)
				return 1;
		}
		i = j;
		while (i < n && (cls(name[i]) & (C_DASH | C_UNDER | C_DOT)))
			i++;
	}
	return 0;
}

enum { NAME_NONE, NAME_KEY, NAME_PASSWORD };

static int name_kind(const unsigned char *name, size_t n)
{
	static const char *const pw_words[] = {
		"password", "passwd", "passphrase"
	};
	static const char *const pw_segs[] = { "pwd", "pass", "pw" };
	size_t last = n;
	static const char *const key_words[] = {
		"secret", "token", "apikey", "api_key", "api-key",
		"credential", "privatekey", "private_key", "accesskey",
		"access_key", "authorization"
	};
	static const char *const key_segs[] = { "key", "auth", "creds" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(pw_words); i++)
		if (has_word(name, n, pw_words[i]))
			return NAME_PASSWORD;
	/* "pass" and "pw" only end a name (DB_PASS, not PassManager) */
	while (last > 0 && !(cls(name[last - 1]) & (C_DASH | C_UNDER |
						    C_DOT)) &&
	       !(last < n && cls(name[last]) == C_UP &&
		 cls(name[last - 1]) == C_LO))
		last--;
	if (segment_is(name, n, pw_segs[0]) ||
	    segment_is(name + last, n - last, pw_segs[1]) ||
	    segment_is(name + last, n - last, pw_segs[2]))
		return NAME_PASSWORD;
	for (i = 0; i < ARRAY_SIZE(key_words); i++)
		if (has_word(name, n, key_words[i]))
			return NAME_KEY;
	for (i = 0; i < ARRAY_SIZE(key_segs); i++)
		if (segment_is(name, n, key_segs[i]))
			return NAME_KEY;
	return NAME_NONE;
}

/*
 * An assignment whose operator is at i: the rule (R_*) and the value's
 * place, or -1.
 */
static int assignment_at(const struct scan *s, size_t i, size_t *off,
			 size_t *n)
{
	const unsigned char *p = s->p;
	size_t len = s->len, op_end, j, j0, name_end, name_start, v, e;
	unsigned char q = 0;
	int kind, letter, digit, symbol, kinds, blank_ok;
	double h;
	size_t tn;

	/* the operator: = : := => ?= (not == != <= >= :: or "://") */
	if (p[i] == ':') {
		if ((i && p[i - 1] == ':') || (i + 1 < len && p[i + 1] == ':'))
			return -1;
		if (i + 2 < len && p[i + 1] == '/' && p[i + 2] == '/')
			return -1;
		op_end = i + 1 + (i + 1 < len && p[i + 1] == '=');
		j = i;
	} else {
		if (i && strchr("=!<>+-*/%&|^~:", p[i - 1]))
			return -1;
		if (i + 1 < len && p[i + 1] == '=')
			return -1;
		op_end = i + 1 + (i + 1 < len && p[i + 1] == '>');
		j = i && p[i - 1] == '?' ? i - 1 : i;
	}
	/* the name, before it: blanks, a closing quote, the identifier */
	j0 = j;
	while (j > 0 && i - j < 8 && (p[j - 1] == ' ' || p[j - 1] == '\t'))
		j--;
	/* "X= Y" (a shell's empty X), unlike "x = y" or "x: y" */
	blank_ok = j < j0 || p[i] == ':';
	if (j > 0 && (p[j - 1] == '"' || p[j - 1] == '\'')) {
		q = p[j - 1];
		j--;
	}
	name_end = j;
	while (j > 0 && name_end - j < 80 &&
	       (cls(p[j - 1]) & (C_ALNUM | C_UNDER | C_DASH | C_DOT)))
		j--;
	name_start = j;
	if (name_end - name_start < 2 || (q && (!j || p[j - 1] != q)))
		return -1;
	kind = name_kind(p + name_start, name_end - name_start);
	if (kind == NAME_NONE)
		return -1;

	/* the value: quoted, or up to where a value ends */
	for (v = op_end; blank_ok && v < len && v - op_end < 8 &&
	     (p[v] == ' ' || p[v] == '\t'); v++)
		;
	q = v < len && (p[v] == '"' || p[v] == '\'' || p[v] == '`') ? p[v] :
		0;
	if (q) {
		v++;
		for (e = v; e < len && e - v <= 512 && p[e] != q &&
		     p[e] != '\n'; e++)
			;
		if (e >= len || p[e] != q)
			return -1;
	} else {
		for (e = v; e < len && e - v <= 512 &&
		     (cls(p[e]) || strchr("~@#%^*!$:", p[e])) && p[e]; e++)
			;
		if (e < len && !strchr(" \t\r\n;,&", p[e]))
			return -1;	/* code, not a value */
	}
	*off = v;
	*n = e - v;
	if (token_at(s, v, &tn) >= 0)
		return -1;	/* the token rule reports it */
	h = aptix_credscan_entropy(p + v, *n);
	/*
	 * Before the placeholder test: 40 characters of base64 under an
	 * AWS secret's name are one, whatever they start with (a random
	 * secret starts with '/' once in 64, which reads as a path) or
	 * hold ("xXx"), unless AWS's documentation example.
	 */
	if (has_word(p + name_start, name_end - name_start, "aws") &&
	    has_word(p + name_start, name_end - name_start, "secret") &&
	    *n == 40 && h >= 3.0 && !has_word(p + v, *n, "example")) {
		for (j = v; j < e && (cls(p[j]) & C_B64); j++)
			;
		if (j == e)
			return R_AWS_SECRET;
	}
	if (placeholder(p + v, *n))
		return -1;
	classes(p + v, *n, &letter, &digit, &symbol, &kinds);
	for (j = v; j < e; j++)
		if (p[j] == ' ' || p[j] == '\t')
			return -1;	/* words, not a secret */
	if (constant(p + v, *n) || (!q && code_like(p + v, *n)))
		return -1;
	if (kind == NAME_KEY && *n >= 16 && *n <= 256 && letter && digit &&
	    token_chars(p + v, *n) && h >= 3.5)
		return R_SECRET;
	/* words joined by - _ . are names, not passwords */
	for (symbol = 0, j = v; j < e; j++)
		symbol |= !(cls(p[j]) & (C_ALNUM | C_DASH | C_UNDER | C_DOT));
	if (kind == NAME_PASSWORD && *n >= 8 && *n <= 128 && kinds >= 2 &&
	    (digit || symbol) && h >= 3.0 &&
	    !has_word(p + v, *n, "://"))	/* url-password's */
		return R_PASSWORD;
	return -1;
}

static int scan_rules(struct scan *s)
{
	const unsigned char *p = s->p;
	unsigned char trig[256];
	size_t i, k, off, n;
	long t;
	int r;

	memset(trig, 0, sizeof(trig));
	for (i = 0; i < ARRAY_SIZE(tokens); i++)
		for (k = 0; tokens[i].prefixes[k]; k++)
			trig[(unsigned char)tokens[i].prefixes[k][0]] = 1;
	trig['-'] = trig['e'] = trig[':'] = trig['='] = 1;

	for (i = 0; i < s->len; i++) {
		if (!trig[p[i]])
			continue;
		if ((t = token_at(s, i, &n)) >= 0) {
			if ((r = report(s, tokens[t].id,
					tokens[t].description, i, n)))
				return r;
			i += n - 1;
			continue;
		}
		if (p[i] == '-' && private_key_at(s, i, &n)) {
			if ((r = report(s, others[R_PRIVATE_KEY].id,
					others[R_PRIVATE_KEY].description, i,
					n)))
				return r;
			i += n - 1;
			continue;
		}
		if (p[i] == 'e' && jwt_at(s, i, &n)) {
			if ((r = report(s, others[R_JWT].id,
					others[R_JWT].description, i, n)))
				return r;
			i += n - 1;
			continue;
		}
		if (p[i] == ':' && url_password_at(s, i, &off, &n)) {
			if ((r = report(s, others[R_URL].id,
					others[R_URL].description, off, n)))
				return r;
			i = off + n;
			continue;
		}
		if ((p[i] == '=' || p[i] == ':') &&
		    (t = assignment_at(s, i, &off, &n)) >= 0) {
			if ((r = report(s, others[t].id,
					others[t].description, off, n)))
				return r;
			i = off + n;
		}
	}
	return 0;
}

int aptix_credscan_foreach(const void *data, size_t len,
			   const char *const *keys, size_t nkeys,
			   aptix_credential_cb cb, void *payload)
{
	struct scan s;
	size_t start, off;
	long k;
	int r;

	memset(&s, 0, sizeof(s));
	s.p = data;
	s.len = len;
	s.line = 1;
	s.cb = cb;
	s.payload = payload;
	if (!len)
		return 0;
	for (k = 0; k < (long)nkeys; k++) {
		for (start = 0; start < len; start = off + 1) {
			if (aptix__find_secret(&off, s.p + start, len - start,
					       &keys[k], 1) < 0)
				break;
			off += start;
			if ((r = report(&s, others[R_KNOWN].id,
					others[R_KNOWN].description, off,
					strlen(keys[k]))))
				return r;
		}
	}
	return scan_rules(&s);
}

static int first_cb(const aptix_credential *c, void *payload)
{
	*(aptix_credential *)payload = *c;
	return 1;
}

int aptix_credscan_find(aptix_credential *out, const void *data, size_t len,
			const char *const *keys, size_t nkeys)
{
	aptix_credential c;

	memset(&c, 0, sizeof(c));
	if (aptix_credscan_foreach(data, len, keys, nkeys, first_cb, &c) != 1)
		return 0;
	if (out)
		*out = c;
	return 1;
}

const char *aptix_credential_kind(const aptix_credential *c)
{
	return strcmp(c->rule, others[R_KNOWN].id) ? "a credential" :
		"an API key";
}

const char *aptix_credential_describe(char *buf, size_t n,
				      const aptix_credential *c)
{
	snprintf(buf, n, "%s on line %zu (rule %s)", c->description, c->line,
		 c->rule);
	return buf;
}
