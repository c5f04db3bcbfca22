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
 *  - known-key: the keys the caller names, wherever they are;
 *  - formats with more shape than a prefix: PuTTY keys, Authorization
 *    headers, Azure keys and SAS signatures, .netrc entries, mysql -p,
 *    Telegram and Discord bot tokens, an AWS secret alone near "aws";
 *  - base64-encoded, hex-encoded: a run of base64 or hex that decodes
 *    to something the rules (and the keys) find, scanned once more.
 *
 * Lines continued with a backslash are joined before the scan, so that
 * a key cut in two that way is found (offsets map back to the data).
 *
 * A finding ends the scan at its end: findings do not overlap, and a
 * value that a token rule recognises is reported by that rule rather
 * than as an assignment.
 */
#define _GNU_SOURCE 1	/* memmem */
#include "util/common.h"
#include <pthread.h>
#include "secret/secrets.h"
#include "aptix/credscan.h"

enum {
	C_UP = 1, C_LO = 2, C_DIG = 4, C_DASH = 8, C_UNDER = 16,
	C_SLASH = 32, C_PLUS = 64, C_EQ = 128, C_DOT = 256,
	C_HEX = 512	/* in a token rule's body: [0-9a-fA-F] only */
};
#define C_ALNUM (C_UP | C_LO | C_DIG)
#define C_B64 (C_ALNUM | C_SLASH | C_PLUS | C_EQ)

struct token_rule {
	const char *id, *description;
	const char *prefixes[12];
	unsigned body;			/* character classes after the prefix */
	unsigned short min, max;	/* length of that run */
	double entropy;			/* minimum, of the whole token */
};

/*
 * The providers' formats, after gitleaks' rules of the same names (a
 * prefix that names the provider, then a body of a known alphabet and
 * length).
 */
static const struct token_rule tokens[] = {
	{ "openai-project-key", "OpenAI API key",
	  { "sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-", NULL },
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
	{ "gitlab-token", "GitLab token",
	  { "glpat-", "glrt-", "gldt-", "glft-", "glsoat-", "glffct-",
	    "glimt-", "glagent-", "gloas-", "glptt-", "glcbt-", NULL },
	  C_ALNUM | C_DASH | C_UNDER, 20, 300, 3.0 },
	{ "slack-token", "Slack token",
	  { "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-", "xapp-",
	    NULL }, C_ALNUM | C_DASH, 20, 255, 3.0 },
	{ "slack-webhook", "Slack webhook URL",
	  { "hooks.slack.com/services/", "hooks.slack.com/workflows/",
	    NULL }, C_ALNUM | C_SLASH, 40, 64, 3.0 },
	{ "stripe-key", "Stripe secret key",
	  { "sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_",
	    "rk_prod_", "whsec_", NULL }, C_ALNUM, 16, 247, 3.0 },
	{ "google-api-key", "Google API key",
	  { "AIza", NULL }, C_ALNUM | C_DASH | C_UNDER, 35, 35, 3.0 },
	{ "google-oauth-secret", "Google OAuth client secret",
	  { "GOCSPX-", NULL }, C_ALNUM | C_DASH | C_UNDER, 28, 28, 3.0 },
	{ "npm-token", "npm access token",
	  { "npm_", NULL }, C_ALNUM, 36, 36, 3.0 },
	{ "huggingface-token", "Hugging Face token",
	  { "hf_", "api_org_", NULL }, C_UP | C_LO, 34, 34, 3.0 },
	{ "sendgrid-api-key", "SendGrid API key",
	  { "SG.", NULL }, C_ALNUM | C_DASH | C_UNDER | C_DOT, 66, 66, 3.0 },
	{ "twilio-api-key", "Twilio API key",
	  { "SK", NULL }, C_HEX, 32, 32, 3.0 },
	{ "shopify-token", "Shopify access token or shared secret",
	  { "shpat_", "shpca_", "shppa_", "shpss_", NULL }, C_HEX, 32, 32,
	  3.0 },
	{ "digitalocean-token", "DigitalOcean token",
	  { "dop_v1_", "doo_v1_", "dor_v1_", NULL }, C_HEX, 64, 64, 3.0 },
	{ "databricks-token", "Databricks API token",
	  { "dapi", NULL }, C_HEX, 32, 32, 3.0 },
	{ "pypi-token", "PyPI upload token",
	  { "pypi-AgEIcHlwaS5vcmc", NULL }, C_ALNUM | C_DASH | C_UNDER, 50,
	  1000, 3.0 },
	{ "vault-token", "HashiCorp Vault token",
	  { "hvs.", "hvb.", NULL }, C_ALNUM | C_DASH | C_UNDER, 90, 300,
	  3.0 },
	{ "age-secret-key", "age secret key",
	  { "AGE-SECRET-KEY-1", NULL }, C_UP | C_DIG, 58, 58, 3.0 },
	{ "linear-api-key", "Linear API key",
	  { "lin_api_", NULL }, C_ALNUM, 40, 40, 3.0 },
	{ "postman-api-key", "Postman API key",
	  { "PMAK-", NULL }, C_HEX | C_DASH, 59, 59, 3.0 },
	{ "doppler-token", "Doppler token",
	  { "dp.pt.", "dp.st.", "dp.ct.", "dp.sa.", NULL }, C_ALNUM, 40, 50,
	  3.0 },
	{ "grafana-token", "Grafana token",
	  { "glsa_", "glc_", NULL }, C_ALNUM | C_UNDER | C_PLUS | C_SLASH |
	  C_EQ, 32, 400, 3.0 },
	{ "sentry-token", "Sentry token",
	  { "sntryu_", "sntrys_", NULL }, C_ALNUM | C_UNDER | C_PLUS |
	  C_SLASH | C_EQ, 64, 500, 3.0 },
	{ "rubygems-token", "RubyGems API key",
	  { "rubygems_", NULL }, C_HEX, 48, 48, 3.0 },
	{ "pulumi-token", "Pulumi access token",
	  { "pul-", NULL }, C_HEX, 40, 40, 3.0 },
	{ "atlassian-token", "Atlassian API token",
	  { "ATATT3", NULL }, C_ALNUM | C_DASH | C_UNDER | C_EQ, 150, 250,
	  3.0 },
	{ "sendinblue-token", "Brevo (Sendinblue) API key",
	  { "xkeysib-", "xsmtpsib-", NULL }, C_ALNUM | C_DASH, 80, 81, 3.0 },
	{ "notion-token", "Notion integration token",
	  { "ntn_", NULL }, C_ALNUM, 46, 46, 3.0 },
	{ "planetscale-token", "PlanetScale token or password",
	  { "pscale_tkn_", "pscale_oauth_", "pscale_pw_", NULL },
	  C_ALNUM | C_UNDER | C_DASH | C_DOT | C_EQ, 32, 64, 3.0 },
	{ "prefect-token", "Prefect API key",
	  { "pnu_", NULL }, C_ALNUM, 36, 36, 3.0 },
	{ "dynatrace-token", "Dynatrace API token",
	  { "dt0c01.", NULL }, C_ALNUM | C_DOT, 89, 89, 3.0 },
	{ "alibaba-access-key-id", "Alibaba Cloud access key id",
	  { "LTAI", NULL }, C_ALNUM, 20, 20, 3.0 },
	{ "heroku-api-key", "Heroku API key",
	  { "HRKU-AA", NULL }, C_ALNUM | C_DASH | C_UNDER, 58, 58, 3.0 },
	{ "artifactory-api-key", "Artifactory API key",
	  { "AKCp", NULL }, C_ALNUM, 69, 69, 3.0 },
	{ "clojars-token", "Clojars deploy token",
	  { "CLOJARS_", NULL }, C_ALNUM, 60, 60, 3.0 },
	{ "onepassword-token", "1Password service account token",
	  { "ops_eyJ", NULL }, C_ALNUM | C_PLUS | C_SLASH | C_EQ, 250, 4000,
	  3.0 },
	{ "flyio-token", "Fly.io access token",
	  { "fo1_", "fm1a_", "fm1r_", "fm2_", NULL }, C_ALNUM | C_PLUS |
	  C_SLASH | C_EQ | C_DASH | C_UNDER, 43, 4000, 3.0 },
	{ "square-token", "Square access token or secret",
	  { "sq0atp-", "sq0csp-", NULL }, C_ALNUM | C_DASH | C_UNDER,
	  22, 60, 3.5 },
	{ "settlemint-token", "SettleMint access token",
	  { "sm_aat_", "sm_pat_", "sm_sat_", NULL }, C_ALNUM, 16, 16, 3.0 },
	{ "scalingo-token", "Scalingo API token",
	  { "tk-us-", NULL }, C_ALNUM | C_DASH | C_UNDER, 48, 48, 3.0 },
	{ "readme-token", "ReadMe API token",
	  { "rdme_", NULL }, C_LO | C_DIG, 70, 70, 3.0 },
	{ "infracost-token", "Infracost API token",
	  { "ico-", NULL }, C_ALNUM, 32, 32, 3.0 },
	{ "facebook-token", "Facebook page access token",
	  { "EAAM", "EAAC", NULL }, C_ALNUM, 100, 400, 3.5 },
	{ "cloudflare-origin-ca-key", "Cloudflare Origin CA key",
	  { "v1.0-", NULL }, C_HEX | C_DASH, 171, 171, 3.0 },
};

/* The other rules, in the order aptix_credscan_rule() lists them. */
enum {
	R_KNOWN, R_PRIVATE_KEY, R_PUTTY, R_JWT, R_URL, R_AUTH_HEADER,
	R_AZURE_KEY, R_AZURE_SAS, R_AWS_SECRET, R_SECRET, R_PASSWORD,
	R_NETRC, R_CLI_PASSWORD, R_TELEGRAM, R_DISCORD, R_BASE64, R_HEX,
	R__COUNT
};

static const struct {
	const char *id, *description;
} others[R__COUNT] = {
	{ "known-key", "the value of a configured API key" },
	{ "private-key", "private key (PEM block)" },
	{ "putty-private-key", "PuTTY private key (.ppk)" },
	{ "jwt", "JSON Web Token" },
	{ "url-password", "password in a URL" },
	{ "authorization-header", "credential in an Authorization header" },
	{ "azure-storage-key", "Azure storage account key" },
	{ "azure-sas-signature", "Azure shared access signature (sig=)" },
	{ "aws-secret-access-key", "AWS secret access key" },
	{ "secret-assignment", "high-entropy value assigned to a key, "
	  "secret or token" },
	{ "password-assignment", "password assigned to a password field" },
	{ "netrc-password", "password in a .netrc entry" },
	{ "cli-password", "password on a MySQL command line (-p...)" },
	{ "telegram-bot-token", "Telegram bot token" },
	{ "discord-bot-token", "Discord bot token" },
	{ "base64-encoded", "credential, base64-encoded" },
	{ "hex-encoded", "credential, hex-encoded" },
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

/*
 * The class of each byte: cls_slow() once, into a table (a scan asks
 * for the class of every byte, some several times). Filled by
 * build_tables(), which every scan runs first (pthread_once).
 */
static unsigned short cls_table[256];

static unsigned cls(unsigned char c)
{
	return cls_table[c];
}

static unsigned cls_slow(unsigned char c)
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
	const unsigned char *p;		/* what the rules read */
	size_t len;
	const char *const *keys;
	size_t nkeys;
	int depth;			/* 1: decoded from base64 or hex */
	/* p is the data with its backslash-newlines removed: where */
	const size_t *join_at, *join_cum; /* joined offset, bytes removed
					     up to it */
	size_t njoin;
	const unsigned char *orig;	/* the data, for line numbers */
	size_t line, line_at;		/* line number of offset line_at */
	aptix_credential_cb cb;
	void *payload;
};

/* The offset in the data of offset off of what the rules read. */
static size_t orig_offset(const struct scan *s, size_t off)
{
	size_t lo = 0, hi = s->njoin;

	/* the last join at or before off */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->join_at[mid] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return off + (lo ? s->join_cum[lo - 1] : 0);
}

static int report(struct scan *s, size_t rule, size_t off, size_t len)
{
	aptix_credential c;
	size_t end = off + len;

	if (s->njoin && len) {
		off = orig_offset(s, off);
		end = orig_offset(s, end - 1) + 1;
	}
	if (off < s->line_at) {
		s->line = 1;
		s->line_at = 0;
	}
	for (; s->line_at < off; s->line_at++)
		if (s->orig[s->line_at] == '\n')
			s->line++;
	aptix_credscan_rule(&c.rule, &c.description, rule);
	c.line = s->line;
	c.offset = off;
	c.length = end - off;
	return s->cb(&c, s->payload);
}

static int is_hex(unsigned char c)
{
	return cls(c) == C_DIG || (lower(c) >= 'a' && lower(c) <= 'f');
}

static unsigned hex_value(unsigned char c)
{
	return cls(c) == C_DIG ? (unsigned)(c - '0') :
		(unsigned)(lower(c) - 'a' + 10);
}

/* Whether c is in the body classes of a token rule. */
static int in_body(unsigned char c, unsigned body)
{
	if ((body & C_HEX) && is_hex(c))
		return 1;
	return (cls(c) & body) != 0;
}

/*
 * The token rules' prefixes by their first byte: token_at() tries only
 * those that can match (a scan calls it at every word start; trying
 * every prefix of every rule cost some 700 instructions a call). Built
 * once, in the rules' order, so that the first match is the same.
 */
#define PREFIX_SLOTS 1024
static struct {
	unsigned short start[257];	/* by first byte: [start, start + 1) */
	unsigned short rule[PREFIX_SLOTS], k[PREFIX_SLOTS];
	unsigned char len[PREFIX_SLOTS];
} prefix_index;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;
_Static_assert(sizeof(tokens) / sizeof(tokens[0]) *
	       (sizeof(tokens[0].prefixes) / sizeof(char *)) <= PREFIX_SLOTS,
	       "PREFIX_SLOTS holds every prefix");

static void build_tables(void)
{
	unsigned short count[257] = { 0 }, at[256];
	size_t r, k, c;

	for (c = 0; c < 256; c++)
		cls_table[c] = (unsigned short)cls_slow((unsigned char)c);

	for (r = 0; r < ARRAY_SIZE(tokens); r++)
		for (k = 0; tokens[r].prefixes[k]; k++)
			count[(unsigned char)tokens[r].prefixes[k][0]]++;
	for (c = 0; c < 256; c++) {
		prefix_index.start[c + 1] = (unsigned short)
			(prefix_index.start[c] + count[c]);
		at[c] = prefix_index.start[c];
	}
	for (r = 0; r < ARRAY_SIZE(tokens); r++)
		for (k = 0; tokens[r].prefixes[k]; k++) {
			c = (unsigned char)tokens[r].prefixes[k][0];
			prefix_index.rule[at[c]] = (unsigned short)r;
			prefix_index.k[at[c]] = (unsigned short)k;
			prefix_index.len[at[c]++] = (unsigned char)
				strlen(tokens[r].prefixes[k]);
		}
}

/* Whether a token rule's prefix starts with c (after build_tables()). */
static int may_start_token(unsigned char c)
{
	return prefix_index.start[c] != prefix_index.start[c + 1];
}

/*
 * The token rule that matches at i: its index and the token's length in
 * *n, or -1.
 */
static long token_at(const struct scan *s, size_t i, size_t *n)
{
	const unsigned char *p = s->p + i, *end = s->p + s->len;
	size_t e, run;

	if (!may_start_token(p[0]) || (i && is_word(s->p[i - 1])))
		return -1;
	for (e = prefix_index.start[p[0]]; e < prefix_index.start[p[0] + 1];
	     e++) {
		const struct token_rule *t = &tokens[prefix_index.rule[e]];
		const char *prefix = t->prefixes[prefix_index.k[e]];
		size_t pl = prefix_index.len[e];

		if (!starts(p, end, prefix))
			continue;
		run = 0;
		while (p + pl + run < end && in_body(p[pl + run], t->body))
			run++;
		/* a token ends at a word's end */
		if (p + pl + run < end && (cls(p[pl + run]) & C_ALNUM))
			continue;
		if (run < t->min || run > t->max ||
		    aptix_credscan_entropy(p, pl + run) < t->entropy)
			continue;
		if (!strcmp(t->id, "aws-access-key-id") &&
		    has_word(p, pl + run, "example"))
			continue;	/* AWS's documentation */
		*n = pl + run;
		return (long)prefix_index.rule[e];
	}
	return -1;
}

/* The length of the line at q, to its newline or "\\n" escape. */
static size_t line_len(const unsigned char *q, const unsigned char *end)
{
	size_t n = 0;

	while (q + n < end && q[n] != '\n' &&
	       !(q[n] == '\\' && q + n + 1 < end &&
		 (q[n + 1] == 'n' || q[n + 1] == 'r')))
		n++;
	return n;
}

/*
 * Base64 characters of a PEM body from q (see the file comment): the
 * "Name: value" header lines of an encrypted key (Proc-Type, DEK-Info)
 * are skipped, before the first base64 character.
 */
static size_t pem_body(const unsigned char *q, const unsigned char *end,
		       const unsigned char **stop)
{
	size_t count = 0, n;
	int headers = 0, at_line = 0;

	while (q < end) {
		if (at_line && !count && headers < 8 &&
		    (n = line_len(q, end)) && memchr(q, ':', n) &&
		    *q != ':') {
			headers++;
			q += n;
			continue;
		}
		at_line = 0;
		if (cls(*q) & C_B64) {
			count++;
			q++;
		} else if (*q == ' ' || *q == '\t' || *q == '\r') {
			q++;
		} else if (*q == '\n') {
			q++;
			at_line = 1;
		} else if (*q == '\\' && q + 1 < end &&
			   (q[1] == 'n' || q[1] == 'r')) {
			at_line = q[1] == 'n';
			q += 2;
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

/*
 * Values that stand for a secret rather than being one: a config line
 * reading "password = TODO" or "key: <insert key>" holds no credential.
 */
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

/* --- Formats beyond tokens and assignments ---------------------------------- */

/* A run of decimal digits from q: its length. */
static size_t digit_run(const unsigned char *q, const unsigned char *end)
{
	size_t n = 0;

	while (q + n < end && cls(q[n]) == C_DIG)
		n++;
	return n;
}

/* The offset of the start of the line holding offset i. */
static size_t line_start(const struct scan *s, size_t i, size_t max)
{
	size_t j = i;

	while (j > 0 && i - j < max && s->p[j - 1] != '\n')
		j--;
	return j;
}

/*
 * PuTTY's private key: "PuTTY-User-Key-File-<n>: <type>" at the start
 * of a line, then "Private-Lines: <n>" and its base64 lines (the key);
 * the finding runs to their end.
 */
static int putty_at(const struct scan *s, size_t i, size_t *n)
{
	const unsigned char *p = s->p + i, *end = s->p + s->len, *q;
	size_t count = 0, lim = s->len - i < 8192 ? s->len - i : 8192;

	if ((i && s->p[i - 1] != '\n') ||
	    !starts(p, end, "PuTTY-User-Key-File-"))
		return 0;
	q = memmem(p, lim, "\nPrivate-Lines:", 15);
	if (!q)
		return 0;
	q += 15;
	q += line_len(q, end);
	while (q < end && (*q == '\n' || *q == '\r' ||
			   (cls(*q) & C_B64))) {
		if (*q == '\n' && q + 1 < end && memchr(q + 1, ':',
			line_len(q + 1, end)))
			break;		/* Private-MAC: */
		count += (cls(*q) & C_B64) != 0;
		q++;
	}
	if (count < 32)
		return 0;
	*n = (size_t)(q - p);
	return 1;
}

/*
 * A Telegram bot token: the bot's id (5 to 16 digits), ':', then 'A'
 * and 34 characters of base64url.
 */
static int telegram_at(const struct scan *s, size_t i, size_t *n)
{
	const unsigned char *p = s->p + i, *end = s->p + s->len;
	size_t d, r;

	if (i && is_word(s->p[i - 1]))
		return 0;
	d = digit_run(p, end);
	if (d < 5 || d > 16 || p + d + 2 >= end || p[d] != ':' ||
	    p[d + 1] != 'A')
		return 0;
	r = b64url_run(p + d + 1, end);
	if (r != 35 || aptix_credscan_entropy(p + d + 1, r) < 3.5)
		return 0;
	*n = d + 1 + r;
	return 1;
}

/* The value of a base64 character (either alphabet), or -1. */
static int b64_value(unsigned char c)
{
	unsigned k = cls(c);

	if (k == C_UP)
		return c - 'A';
	if (k == C_LO)
		return c - 'a' + 26;
	if (k == C_DIG)
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/*
 * Decode base64 (standard or url alphabet; '=', newlines and carriage
 * returns skipped) of q[0..n) into out, at most max bytes: the length.
 */
static size_t b64_decode(unsigned char *out, size_t max,
			 const unsigned char *q, size_t n)
{
	size_t i, len = 0;
	unsigned acc = 0;
	int bits = 0, v;

	for (i = 0; i < n && len < max; i++) {
		if ((v = b64_value(q[i])) < 0)
			continue;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[len++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	return len;
}

/*
 * A Discord bot token: the bot's id in base64url (24 to 28 characters
 * that decode to digits), '.', 6 or 7 characters, '.', 27 to 38.
 */
static int discord_at(const struct scan *s, size_t i, size_t *n)
{
	const unsigned char *p = s->p + i, *end = s->p + s->len;
	unsigned char id[32];
	size_t a, b, c, k, m;

	if (i && is_word(s->p[i - 1]))
		return 0;
	a = b64url_run(p, end);
	if (a < 24 || a > 28 || p + a >= end || p[a] != '.')
		return 0;
	b = b64url_run(p + a + 1, end);
	if (b < 6 || b > 7 || p + a + 1 + b >= end || p[a + 1 + b] != '.')
		return 0;
	c = b64url_run(p + a + b + 2, end);
	if (c < 27 || c > 38 || (p + a + b + 2 + c < end &&
				 p[a + b + 2 + c] == '.'))
		return 0;
	m = b64_decode(id, sizeof(id), p, a);
	for (k = 0; k < m; k++)
		if (cls(id[k]) != C_DIG)
			return 0;
	if (m < 17 || aptix_credscan_entropy(p + a + b + 2, c) < 3.5)
		return 0;
	*n = a + b + c + 2;
	return 1;
}

/* Whether v is a secret's value by the url-password rule's measure. */
static int password_like(const unsigned char *v, size_t n, size_t min)
{
	int letter, digit, symbol, kinds;

	size_t i;

	classes(v, n, &letter, &digit, &symbol, &kinds);
	/* words joined by - _ . are names, not passwords */
	for (symbol = 0, i = 0; i < n; i++)
		symbol |= !(cls(v[i]) & (C_ALNUM | C_DASH | C_UNDER | C_DOT));
	return n >= min && n <= 128 && (digit || symbol) &&
		!placeholder(v, n) &&
		!has_word(v, n, "pass") && !has_word(v, n, "secret") &&
		!has_word(v, n, "token") && kinds >= 2 &&
		aptix_credscan_entropy(v, n) >= 2.5;
}

/* The word of s->p at j (a bounded has_word()). */
static int word_at(const struct scan *s, size_t j, const char *w)
{
	size_t k = strlen(w);

	return j + k <= s->len && has_word(s->p + j, k, w) &&
		(!j || !is_word(s->p[j - 1])) &&
		(j + k == s->len || !is_word(s->p[j + k]));
}

/* Whether the word w is in s->p[from, to). */
static int word_in(const struct scan *s, size_t from, size_t to,
		   const char *w)
{
	size_t j;

	for (j = from; j < to; j++)
		if (lower(s->p[j]) == (unsigned char)w[0] && word_at(s, j, w))
			return 1;
	return 0;
}

/* A value from v: quoted (to its quote) or to a blank. */
static size_t plain_value(const struct scan *s, size_t *v)
{
	const unsigned char *p = s->p;
	unsigned char q = 0;
	size_t e;

	if (*v < s->len && (p[*v] == '"' || p[*v] == '\''))
		q = p[(*v)++];
	for (e = *v; e < s->len && e - *v <= 128 && p[e] > ' ' &&
	     p[e] != q && p[e] < 127; e++)
		;
	if (q && (e >= s->len || p[e] != q))
		return 0;
	return e - *v;
}

/*
 * .netrc: "password <value>" after "machine <host>" (or "default")
 * and "login <user>", on the same line or the lines before.
 */
static int netrc_at(const struct scan *s, size_t i, size_t *off, size_t *n)
{
	const unsigned char *p = s->p;
	size_t from = i > 512 ? i - 512 : 0, v = i + 8;

	if (!word_at(s, i, "password") || v >= s->len ||
	    (p[v] != ' ' && p[v] != '\t'))
		return 0;
	if ((!word_in(s, from, i, "machine") &&
	     !word_in(s, from, i, "default")) || !word_in(s, from, i, "login"))
		return 0;
	while (v < s->len && (p[v] == ' ' || p[v] == '\t'))
		v++;
	*n = plain_value(s, &v);
	*off = v;
	return p[v] != '$' && password_like(p + v, *n, 6);
}

/*
 * mysql (mysqldump, mysqladmin, mariadb...) -p<password>: the password
 * glued to -p, on a line that runs one of them.
 */
static int cli_password_at(const struct scan *s, size_t i, size_t *off,
			   size_t *n)
{
	const unsigned char *p = s->p;
	size_t v = i + 2, ls;
	static const char *const tools[] = {
		"mysql", "mysqldump", "mysqladmin", "mysqlimport",
		"mysqlcheck", "mysqlshow", "mysqlpump", "mariadb",
		"mariadb-dump", "mariadb-admin"
	};
	size_t k;

	if (!i || (p[i - 1] != ' ' && p[i - 1] != '\t') || v >= s->len ||
	    p[i + 1] != 'p' || p[v] <= ' ' || p[v] == '-')
		return 0;
	ls = line_start(s, i, 1024);
	for (k = 0; k < ARRAY_SIZE(tools); k++)
		if (word_in(s, ls, i, tools[k]))
			break;
	if (k == ARRAY_SIZE(tools))
		return 0;
	*n = plain_value(s, &v);
	*off = v;
	return *n >= 4 && !placeholder(p + v, *n) &&
		!has_word(p + v, *n, "password");
}

/* A name, case ignored, ending just before the operator at i. */
static int name_before(const struct scan *s, size_t i, const char *name)
{
	size_t k = strlen(name), j = i;

	while (j > 0 && i - j < 4 && (s->p[j - 1] == ' ' ||
				      s->p[j - 1] == '"' ||
				      s->p[j - 1] == '\''))
		j--;
	return j >= k && has_word(s->p + j - k, k, name) &&
		(j == k || !is_word(s->p[j - k - 1]));
}

/* A run of base64 characters from q (standard alphabet, no '='). */
static size_t b64_run(const unsigned char *q, const unsigned char *end)
{
	size_t n = 0;

	while (q + n < end && (cls(q[n]) & (C_ALNUM | C_PLUS | C_SLASH)))
		n++;
	return n;
}

/*
 * Azure: a storage account key in a connection string
 * (AccountKey=<88 base64>), a shared access key (SharedAccessKey=), the
 * signature of a SAS URL (sig=, URL-encoded base64, in a query that
 * has sv= or se=).
 */
static int azure_at(const struct scan *s, size_t i, size_t *off, size_t *n)
{
	const unsigned char *p = s->p, *end = s->p + s->len;
	size_t v = i + 1, r, ls;
	int letter, digit, symbol, kinds;

	if (p[i] != '=' || v >= s->len)
		return -1;
	if (name_before(s, i, "accountkey") ||
	    name_before(s, i, "sharedaccesskey")) {
		if (p[v] == '"' || p[v] == '\'')
			v++;
		r = b64_run(p + v, end);
		while (v + r < s->len && p[v + r] == '=' && r % 4)
			r++;
		classes(p + v, r, &letter, &digit, &symbol, &kinds);
		*off = v;
		*n = r;
		return r >= 40 && kinds >= 3 &&
			aptix_credscan_entropy(p + v, r) >= 4.0 ?
			R_AZURE_KEY : -1;
	}
	if (i < 4 || memcmp(p + i - 3, "sig", 3) || !strchr("?&;", p[i - 4]))
		return -1;
	for (r = 0; v + r < s->len && (cls(p[v + r]) &
				      (C_B64 | C_DASH | C_UNDER) ||
				      p[v + r] == '%'); r++)
		;
	ls = line_start(s, i, 2048);
	if (r < 30 || (!memmem(p + ls, i - ls, "sv=", 3) &&
		       !memmem(p + ls, i - ls, "se=", 3)) ||
	    aptix_credscan_entropy(p + v, r) < 3.5)
		return -1;
	*off = v;
	*n = r;
	return R_AZURE_SAS;
}

/*
 * "Authorization: Bearer <token>" (or Token), as a header, in JSON or
 * in code; "Basic <base64>" when it decodes to user:password with a
 * password by the url-password rule's measure.
 */
static int auth_header_at(const struct scan *s, size_t i, size_t *off,
			  size_t *n)
{
	const unsigned char *p = s->p;
	unsigned char dec[192];
	size_t v = i + 1, r, m;
	const unsigned char *colon;
	int basic = 0, letter, digit, symbol, kinds;

	if (!name_before(s, i, "authorization"))
		return 0;
	while (v < s->len && v - i < 8 && (p[v] == ' ' || p[v] == '\t' ||
					   p[v] == '"' || p[v] == '\''))
		v++;
	if (v + 6 < s->len && has_word(p + v, 6, "bearer"))
		v += 6;
	else if (v + 5 < s->len && has_word(p + v, 5, "token"))
		v += 5;
	else if (v + 5 < s->len && has_word(p + v, 5, "basic"))
		v += 5, basic = 1;
	else
		return 0;
	if (v >= s->len || (p[v] != ' ' && p[v] != '\t'))
		return 0;
	while (v < s->len && (p[v] == ' ' || p[v] == '\t'))
		v++;
	for (r = 0; v + r < s->len && (cls(p[v + r]) || p[v + r] == '~');
	     r++)
		;
	*off = v;
	*n = r;
	if (token_at(s, v, &m) >= 0 || jwt_at(s, v, &m))
		return 0;	/* the token's rule reports it */
	classes(p + v, r, &letter, &digit, &symbol, &kinds);
	if (!basic)
		return r >= 16 && r <= 4096 && letter && digit &&
			!placeholder(p + v, r) &&
			!constant(p + v, r) &&
			aptix_credscan_entropy(p + v, r) >= 3.0;
	if (r < 12 || r > 256)
		return 0;
	m = b64_decode(dec, sizeof(dec), p + v, r);
	colon = memchr(dec, ':', m);
	return colon && colon > dec &&
		password_like(colon + 1, (size_t)(dec + m - colon - 1), 8);
}

/*
 * An AWS secret access key without a name: 40 base64 characters alone
 * (not in a longer run), of high entropy, with AWS named or an access
 * key id within the 512 bytes before it or the 256 after.
 */
static int aws_bare_at(const struct scan *s, size_t i, size_t *n)
{
	const unsigned char *p = s->p, *end = s->p + s->len;
	size_t r, from, to;
	int letter, digit, symbol, kinds;

	if (i && (cls(p[i - 1]) & (C_B64 | C_DASH | C_UNDER | C_DOT)))
		return 0;
	r = b64_run(p + i, end);
	if (r != 40 || (i + r < s->len && (cls(p[i + r]) &
					   (C_EQ | C_DASH | C_UNDER | C_DOT))))
		return 0;
	classes(p + i, r, &letter, &digit, &symbol, &kinds);
	if (kinds < 3 || aptix_credscan_entropy(p + i, r) < 4.2 ||
	    has_word(p + i, r, "example"))
		return 0;
	from = i > 512 ? i - 512 : 0;
	to = s->len - (i + r) > 256 ? i + r + 256 : s->len;
	if (!has_word(p + from, to - from, "aws") &&
	    !memmem(p + from, to - from, "AKIA", 4) &&
	    !memmem(p + from, to - from, "ASIA", 4))
		return 0;
	*n = r;
	return 1;
}

static int scan_all(struct scan *s);

static int first_rule_cb(const aptix_credential *c, void *payload)
{
	(void)c;
	*(int *)payload = 1;
	return 1;
}

/*
 * An encoded credential: a run of base64 (20 characters or more; the
 * lines of wrapped base64 are one run) or of hex (32 digits or more),
 * decoded, in which a rule finds a credential.
 */
static int encoded_at(const struct scan *s, size_t i, size_t *n)
{
	const unsigned char *p = s->p;
	size_t e = i, seg = 0, chars = 0, hex = 0, max, dlen;
	unsigned char *dec;
	struct scan d;
	int found = 0;

	if (s->depth || (i && (cls(p[i - 1]) & (C_ALNUM | C_PLUS | C_SLASH |
						 C_DASH | C_UNDER))))
		return -1;
	for (;;) {
		while (e < s->len && (cls(p[e]) & (C_ALNUM | C_PLUS | C_SLASH |
						   C_DASH | C_UNDER))) {
			hex += is_hex(p[e]);
			e++, seg++, chars++;
		}
		if (e < s->len && p[e] == '=') {	/* padding ends it */
			while (e < s->len && p[e] == '=' && chars++ % 4)
				e++;
			break;
		}
		/* wrapped base64: a full line, then more */
		if (seg < 60 || e + 1 >= s->len || p[e] != '\n' ||
		    !(cls(p[e + 1]) & (C_ALNUM | C_PLUS | C_SLASH)))
			break;
		e++;
		seg = 0;
	}
	if (hex == chars && e - i != chars)
		hex = 0;	/* hex is one line */
	if (chars < 20 || (hex == chars && (chars < 32 || chars % 2)))
		return -1;
	max = chars > 1 << 20 ? 1 << 20 : chars;
	if (!(dec = aptix__malloc(max)))
		return -1;
	if (hex == chars) {
		for (dlen = 0; dlen < max / 2; dlen++)
			dec[dlen] = (unsigned char)(
				hex_value(p[i + 2 * dlen]) << 4 |
				hex_value(p[i + 2 * dlen + 1]));
	} else {
		dlen = b64_decode(dec, max, p + i, e - i);
	}
	memset(&d, 0, sizeof(d));
	d.p = d.orig = dec;
	d.len = dlen;
	d.keys = s->keys;
	d.nkeys = s->nkeys;
	d.depth = 1;
	d.line = 1;
	d.cb = first_rule_cb;
	d.payload = &found;
	scan_all(&d);
	free(dec);
	if (!found)
		return -1;
	*n = e - i;
	return hex == chars ? R_HEX : R_BASE64;
}

/* The rule matching at i (R_* or R__COUNT + a token rule), or -1. */
static int match_at(const struct scan *s, size_t i, size_t *off, size_t *n)
{
	unsigned char c = s->p[i];
	long t;
	int r;

	*off = i;
	if ((t = token_at(s, i, n)) >= 0)
		return R__COUNT + (int)t;
	if (c == '-' && private_key_at(s, i, n))
		return R_PRIVATE_KEY;
	if (c == '-' && cli_password_at(s, i, off, n))
		return R_CLI_PASSWORD;
	if (c == 'P' && putty_at(s, i, n))
		return R_PUTTY;
	if (c == 'e' && jwt_at(s, i, n))
		return R_JWT;
	if (cls(c) == C_DIG && telegram_at(s, i, n))
		return R_TELEGRAM;
	if ((c == 'M' || c == 'N' || c == 'O') && discord_at(s, i, n))
		return R_DISCORD;
	if (c == 'p' && netrc_at(s, i, off, n))
		return R_NETRC;
	if (c == ':' && url_password_at(s, i, off, n))
		return R_URL;
	if ((c == ':' || c == '=') && auth_header_at(s, i, off, n))
		return R_AUTH_HEADER;
	if (c == '=' && (r = azure_at(s, i, off, n)) >= 0)
		return r;
	if ((c == '=' || c == ':') && (r = assignment_at(s, i, off, n)) >= 0)
		return r;
	if (!(cls(c) & (C_ALNUM | C_PLUS | C_SLASH | C_DASH | C_UNDER)))
		return -1;
	*off = i;
	if (aws_bare_at(s, i, n))
		return R_AWS_SECRET;
	return encoded_at(s, i, n);
}

static int scan_rules(struct scan *s)
{
	size_t i, off, n;
	int rule, r;

	for (i = 0; i < s->len; i++) {
		if ((rule = match_at(s, i, &off, &n)) < 0)
			continue;
		if ((r = report(s, (size_t)rule, off, n)))
			return r;
		i = off + n - 1;
	}
	return 0;
}

/* The keys the caller named, then the rules. */
static int scan_all(struct scan *s)
{
	size_t start, off, k;
	int r;

	for (k = 0; k < s->nkeys; k++) {
		for (start = 0; start < s->len; start = off + 1) {
			if (aptix__find_secret(&off, s->p + start,
					       s->len - start, &s->keys[k],
					       1) < 0)
				break;
			off += start;
			if ((r = report(s, R_KNOWN, off, strlen(s->keys[k]))))
				return r;
		}
	}
	return scan_rules(s);
}

/*
 * Join the lines continued with a backslash (a shell's "\<newline>"),
 * so that a credential cut in two that way is found whole: s->p becomes
 * the joined copy (*buf, the caller frees it and *joins).
 */
static void join_continuations(struct scan *s, unsigned char **buf,
			       size_t **joins)
{
	const unsigned char *p = s->orig;
	size_t i, count = 0, out = 0, removed = 0;

	*buf = NULL;
	*joins = NULL;
	for (i = 0; i + 1 < s->len; i++)
		count += p[i] == '\\' && (p[i + 1] == '\n' ||
					  (p[i + 1] == '\r' && i + 2 < s->len &&
					   p[i + 2] == '\n'));
	if (!count || !(*buf = aptix__malloc(s->len)) ||
	    !(*joins = aptix__calloc(2 * count, sizeof(**joins)))) {
		free(*buf);
		*buf = NULL;
		return;
	}
	for (i = 0; i < s->len; i++) {
		size_t k = p[i] != '\\' || i + 1 >= s->len ? 0 :
			p[i + 1] == '\n' ? 2 :
			p[i + 1] == '\r' && i + 2 < s->len &&
			p[i + 2] == '\n' ? 3 : 0;

		if (!k) {
			(*buf)[out++] = p[i];
			continue;
		}
		removed += k;
		(*joins)[s->njoin] = out;
		(*joins)[count + s->njoin] = removed;
		s->njoin++;
		i += k - 1;
	}
	s->p = *buf;
	s->len = out;
	s->join_at = *joins;
	s->join_cum = *joins + count;
}

int aptix_credscan_foreach(const void *data, size_t len,
			   const char *const *keys, size_t nkeys,
			   aptix_credential_cb cb, void *payload)
{
	struct scan s;
	unsigned char *joined;
	size_t *joins;
	int r;

	memset(&s, 0, sizeof(s));
	s.p = s.orig = data;
	s.len = len;
	s.keys = keys;
	s.nkeys = nkeys;
	s.line = 1;
	s.cb = cb;
	s.payload = payload;
	if (!len)
		return 0;
	pthread_once(&tables_once, build_tables);
	join_continuations(&s, &joined, &joins);
	r = scan_all(&s);
	free(joined);
	free(joins);
	return r;
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
