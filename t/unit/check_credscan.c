/*
 * check_credscan.c - unit tests for src/secret/credscan.c (aptix/credscan.h):
 * each rule finds its positive sample and misses its near-misses, the
 * entropy thresholds; and for src/workspace/ignore.c (.aptixignore).
 *
 * No real credential appears here: every sample is built at run time
 * from a prefix split in two and pseudo-random characters, so that no
 * secret scanner takes this file for a leak.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aptix.h"
#include "workspace/ignore.h"
#include "secret/secrets.h"
#include "unit.h"

#define ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#define B32 "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
#define B64 ALNUM "+/"
#define LETTERS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/* n pseudo-random characters of alphabet appended to out. */
static void rnd(char *out, size_t n, const char *alphabet, uint64_t seed)
{
	unsigned char buf[512];
	size_t k = strlen(alphabet), i, len = strlen(out);

	ck_assert_uint_le(n, sizeof(buf));
	unit_fill_random(buf, n, seed);
	for (i = 0; i < n; i++)
		out[len + i] = alphabet[buf[i] % k];
	out[len + n] = '\0';
}

/* lead + a + b + n random characters + tail, in out. */
static const char *sample(char *out, const char *lead, const char *a,
			  const char *b, size_t n, const char *alphabet,
			  const char *tail, uint64_t seed)
{
	snprintf(out, 1024, "%s%s%s", lead, a, b);
	rnd(out, n, alphabet, seed);
	strcat(out, tail);
	return out;
}

static const char *rule_of(const char *text)
{
	aptix_credential c;

	if (!aptix_credscan_find(&c, text, strlen(text), NULL, 0))
		return NULL;
	return c.rule;
}

#define HIT(text, rule) do { \
	const char *got_ = rule_of(text); \
	ck_assert_msg(got_ && !strcmp(got_, rule), "%s: expected %s, got %s", \
		      text, rule, got_ ? got_ : "nothing"); \
} while (0)

#define MISS(text) do { \
	const char *got_ = rule_of(text); \
	ck_assert_msg(!got_, "%s: expected nothing, got %s", text, got_); \
} while (0)

START_TEST(test_rules_listed)
{
	const char *id, *desc, *seen[96];
	size_t i, j, n = aptix_credscan_rule_count();

	ck_assert_uint_eq(n, 65);
	ck_assert_uint_le(n, 96);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(aptix_credscan_rule(&id, &desc, i), 0);
		ck_assert(*id && *desc);
		for (j = 0; j < i; j++)
			ck_assert_str_ne(seen[j], id);
		seen[i] = id;
	}
	ck_assert_int_eq(aptix_credscan_rule(&id, &desc, n), APTIX_ENOTFOUND);
}
END_TEST

START_TEST(test_provider_tokens)
{
	char s[1024];

	HIT(sample(s, "OPENAI_API_KEY=", "sk-", "proj-", 48, ALNUM "_-", "",
		   1), "openai-project-key");
	HIT(sample(s, "key: ", "sk-", "", 48, ALNUM, "\n", 2),
	    "openai-legacy-key");
	HIT(sample(s, "", "sk-", "ant-api03-", 90, ALNUM, "", 3),
	    "anthropic-api-key");
	HIT(sample(s, "id=", "AK", "IA", 16, B32, "\n", 4),
	    "aws-access-key-id");
	HIT(sample(s, "token ", "gh", "p_", 36, ALNUM, " end", 5),
	    "github-token");
	HIT(sample(s, "", "gh", "s_", 36, ALNUM, "", 6), "github-token");
	HIT(sample(s, "", "github_", "pat_", 82, ALNUM "_", "", 7),
	    "github-fine-grained-token");
	HIT(sample(s, "", "gl", "pat-", 20, ALNUM, "", 8), "gitlab-token");
	HIT(sample(s, "", "xo", "xb-1234567890-", 30, ALNUM, "", 9),
	    "slack-token");
	HIT(sample(s, "https://", "hooks.slack.com/", "services/T0/", 40,
		   ALNUM, "", 10), "slack-webhook");
	HIT(sample(s, "", "sk_", "live_", 24, ALNUM, "", 11), "stripe-key");
	HIT(sample(s, "\"", "AI", "za", 35, ALNUM "_-", "\"", 12),
	    "google-api-key");
	HIT(sample(s, "", "np", "m_", 36, ALNUM, "", 13), "npm-token");
	HIT(sample(s, "", "h", "f_", 34, LETTERS, "", 14),
	    "huggingface-token");
	sample(s, "", "S", "G.", 66, ALNUM, "", 15);
	s[3 + 22] = '.';
	HIT(s, "sendgrid-api-key");
}
END_TEST

/* The providers added after gitleaks' rules: a sample of each. */
static const struct {
	const char *rule, *a, *b;	/* the prefix, cut in two */
	size_t n;			/* random characters after it */
	const char *alphabet;
} more_tokens[] = {
	{ "twilio-api-key", "S", "K", 32, "0123456789abcdef" },
	{ "shopify-token", "shp", "at_", 32, "0123456789abcdef" },
	{ "shopify-token", "shp", "ss_", 32, "0123456789ABCDEF" },
	{ "digitalocean-token", "do", "p_v1_", 64, "0123456789abcdef" },
	{ "databricks-token", "da", "pi", 32, "0123456789abcdef" },
	{ "pypi-token", "py", "pi-AgEIcHlwaS5vcmc", 70, ALNUM "_-" },
	{ "vault-token", "hv", "s.", 95, ALNUM "_-" },
	{ "age-secret-key", "AGE-SECRET-", "KEY-1", 58,
	  "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" },
	{ "linear-api-key", "lin", "_api_", 40, ALNUM },
	{ "postman-api-key", "PM", "AK-", 24, "0123456789abcdef" },
	{ "doppler-token", "dp", ".pt.", 43, ALNUM },
	{ "gitlab-token", "gl", "rt-", 20, ALNUM },
	{ "gitlab-token", "gl", "dt-", 20, ALNUM },
	{ "grafana-token", "gl", "c_", 40, ALNUM },
	{ "sentry-token", "sntr", "yu_", 64, ALNUM },
	{ "slack-token", "xa", "pp-", 40, ALNUM },
	{ "stripe-key", "wh", "sec_", 32, ALNUM },
	{ "google-oauth-secret", "GOC", "SPX-", 28, ALNUM },
	{ "huggingface-token", "api", "_org_", 34, LETTERS },
	{ "rubygems-token", "ruby", "gems_", 48, "0123456789abcdef" },
	{ "pulumi-token", "pu", "l-", 40, "0123456789abcdef" },
	{ "atlassian-token", "ATA", "TT3", 186, ALNUM "_-" },
	{ "notion-token", "nt", "n_", 46, ALNUM },
	{ "planetscale-token", "pscale", "_tkn_", 43, ALNUM },
	{ "prefect-token", "pn", "u_", 36, ALNUM },
	{ "alibaba-access-key-id", "LT", "AI", 20, ALNUM },
	{ "heroku-api-key", "HRKU", "-AA", 58, ALNUM "_-" },
	{ "artifactory-api-key", "AK", "Cp", 69, ALNUM },
	{ "clojars-token", "CLOJARS", "_", 60, ALNUM },
	{ "onepassword-token", "ops", "_eyJ", 260, B64 },
	{ "flyio-token", "fo", "1_", 43, ALNUM "_-" },
	{ "square-token", "sq0", "atp-", 22, ALNUM },
	{ "settlemint-token", "sm", "_pat_", 16, ALNUM },
	{ "scalingo-token", "tk", "-us-", 48, ALNUM },
	{ "readme-token", "rd", "me_", 70, "abcdefghijklmnopqrstuvwxyz0123456789" },
	{ "infracost-token", "ic", "o-", 32, ALNUM },
	{ "facebook-token", "EA", "AM", 120, ALNUM },
	{ "openai-project-key", "sk-", "None-", 48, ALNUM },
};

START_TEST(test_more_tokens)
{
	char s[1024], t[1024];
	size_t i;

	for (i = 0; i < sizeof(more_tokens) / sizeof(more_tokens[0]); i++) {
		sample(s, "X = '", more_tokens[i].a, more_tokens[i].b,
		       more_tokens[i].n, more_tokens[i].alphabet, "'\n",
		       100 + i);
		if (!strcmp(more_tokens[i].rule, "postman-api-key")) {
			s[strlen(s) - 2] = '\0';
			strcat(s, "-");
			rnd(s, 34, "0123456789abcdef", 200 + i);
		}
		HIT(s, more_tokens[i].rule);
		/* glued to a word before or after, it is none */
		snprintf(t, sizeof(t), "x%s", s + 5);
		MISS(t);
		/* a hex body followed by a letter */
		if (!strcmp(more_tokens[i].alphabet, "0123456789abcdef") ||
		    !strcmp(more_tokens[i].alphabet, "0123456789ABCDEF")) {
			snprintf(t, sizeof(t), "%.*sZz\n",
				 (int)strlen(s) - 7, s + 5);
			MISS(t);
		}
	}
	/* one character short */
	MISS(sample(s, "", "da", "pi", 31, "0123456789abcdef", "", 3));
	/* not hex */
	MISS(sample(s, "", "S", "K", 32, "ghijklmnopqrstuvwxyz", "", 3));
}
END_TEST

/* base64 of data[0..n), appended to out */
static void b64(char *out, const char *data, size_t n)
{
	static const char a[] = B64;
	size_t i, o = strlen(out);

	for (i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)data[i] << 16 |
			(i + 1 < n ? (unsigned char)data[i + 1] << 8 : 0) |
			(i + 2 < n ? (unsigned char)data[i + 2] : 0);

		out[o++] = a[v >> 18 & 63];
		out[o++] = a[v >> 12 & 63];
		out[o++] = i + 1 < n ? a[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? a[v & 63] : '=';
	}
	out[o] = '\0';
}

START_TEST(test_more_formats)
{
	char s[1024], t[1400], k[256];
	aptix_credential c;
	size_t i;

	/* an encrypted PEM key: its headers are skipped */
	snprintf(s, sizeof(s), "-----BEGIN RSA PRIVATE " "KEY-----\n"
		 "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,"
		 "0A1B2C3D4E5F60718293A4B5C6D7E8F9\n\n");
	rnd(s, 64, B64, 60);
	strcat(s, "\n");
	rnd(s, 64, B64, 61);
	strcat(s, "\n-----END RSA PRIVATE KEY-----\n");
	HIT(s, "private-key");
	/* PuTTY */
	snprintf(s, sizeof(s), "PuTTY-User-Key-File-3: ssh-ed25519\n"
		 "Encryption: none\nComment: k\nPublic-Lines: 1\n");
	rnd(s, 60, B64, 62);
	strcat(s, "\nPrivate-Lines: 1\n");
	rnd(s, 44, B64, 63);
	strcat(s, "\nPrivate-MAC: 00ff\n");
	HIT(s, "putty-private-key");
	MISS("PuTTY-User-Key-File-3: ssh-rsa\nPrivate-Lines: 1\nAAAA\n");
	/* Telegram */
	HIT(sample(s, "bot(123456789:", "A", "A", 33, ALNUM "_-", ")", 64),
	    "telegram-bot-token");
	MISS(sample(s, "bot(123456789:", "A", "A", 32, ALNUM "_-", ")", 64));
	/* Discord: the id part decodes to digits */
	strcpy(s, "login('");
	b64(s, "678995501728612178", 18);
	strcat(s, ".eR6i-e.");
	rnd(s, 27, ALNUM "_-", 65);
	strcat(s, "')");
	HIT(s, "discord-bot-token");
	memcpy(s + 7, "Zm9v", 4);
	MISS(s);
	/* .netrc */
	HIT(sample(s, "machine h login u password ", "", "", 12, ALNUM, "\n",
		   66), "netrc-password");
	HIT(sample(s, "machine h\n\tlogin u\n\tpassword ", "", "", 12, ALNUM,
		   "\n", 66), "netrc-password");
	MISS(sample(s, "the password ", "", "", 12, ALNUM, "\n", 66));
	MISS("machine h login u pass" "word passwd1\n");
	MISS("machine h login u pass" "word alone-in-the-dark\n");
	/* mysql -p */
	HIT(sample(s, "mysql -u root -p", "", "", 12, ALNUM, " db\n", 67),
	    "cli-password");
	MISS("mysql -u root -p db\n");
	MISS(sample(s, "mkdir -p", "", "", 12, ALNUM, "\n", 67));
	/* Azure */
	sample(s, "AccountName=a;AccountKey=", "", "", 86, B64, "==;", 68);
	HIT(s, "azure-storage-key");
	sample(s, "https://a.blob.core.windows.net/c?sv=2021-06-08&sig=", "",
	       "", 40, ALNUM, "%3D", 69);
	HIT(s, "azure-sas-signature");
	sample(s, "https://host/c?x=1&sig=", "", "", 40, ALNUM, "%3D", 69);
	MISS(s);
	/* Authorization headers */
	HIT(sample(s, "Authorization: Bearer ", "", "", 40, ALNUM, "\n", 70),
	    "authorization-header");
	HIT(sample(s, "{\"Authorization\": \"Token ", "", "", 40, ALNUM,
		   "\"}", 70), "authorization-header");
	strcpy(s, "Authorization: Basic ");
	b64(s, "deploy:Xq7#pL2v9Rw", 18);
	HIT(s, "authorization-header");
	strcpy(s, "Authorization: Basic ");
	b64(s, "testuser:testpass", 17);
	MISS(s);
	MISS("Authorization: Bearer $TOKEN\n");
	MISS("Authorization: Bearer <your-token-here-12345>\n");
	MISS("-H \"Authorization: Bearer ${OPENAI_API_KEY}\"\n");
	/* an AWS secret alone: AWS named near it, else none */
	HIT(sample(s, "# aws deploy user\n", "", "", 40, B64 "0123456789",
		   "\n", 71), "aws-secret-access-key");
	MISS(sample(s, "# deploy user\n", "", "", 40, B64 "0123456789", "\n",
		    71));
	/* base64 and hex of a token; a hash is none */
	sample(k, "", "gh", "p_", 36, ALNUM, "", 72);
	strcpy(s, "GH=");
	b64(s, k, strlen(k));
	HIT(s, "base64-encoded");
	strcpy(t, "GH=");
	for (i = 0; k[i]; i++)
		snprintf(t + strlen(t), 3, "%02x", (unsigned char)k[i]);
	HIT(t, "hex-encoded");
	MISS("sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b"
	     "7852b855\n");
	MISS("id 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f0"
	     "0a08 and more\n");
	/* a configured key, base64-encoded */
	{
		const char *keys[] = { "KEYMARKER0123456789abc" };

		strcpy(s, "x: ");
		b64(s, keys[0], strlen(keys[0]));
		ck_assert(aptix_credscan_find(&c, s, strlen(s), keys, 1));
		ck_assert_str_eq(c.rule, "base64-encoded");
		ck_assert(!aptix_credscan_find(&c, s, strlen(s), NULL, 0));
	}
	/* cut over two lines with a shell continuation */
	snprintf(t, sizeof(t), "one\nexport T=%.*s\\\n%s\n", 20, k, k + 20);
	ck_assert(aptix_credscan_find(&c, t, strlen(t), NULL, 0));
	ck_assert_str_eq(c.rule, "github-token");
	ck_assert_uint_eq(c.line, 2);
	ck_assert_uint_eq(c.offset, 13);
	ck_assert_uint_eq(c.length, strlen(k) + 2);
}
END_TEST

START_TEST(test_provider_near_misses)
{
	char s[1024];

	/* a placeholder: too little entropy */
	MISS("ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	/* one character short, one too many */
	MISS(sample(s, "", "gh", "p_", 35, ALNUM, "", 5));
	MISS(sample(s, "", "gh", "p_", 37, ALNUM, "", 5));
	/* not at a word boundary */
	MISS(sample(s, "x", "gh", "p_", 36, ALNUM, "", 5));
	/* AWS's documentation key, and a lowercase body */
	MISS("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE");
	MISS(sample(s, "", "AK", "IA", 16, "abcdefghijklmnop", "", 4));
	/* sk- with a short body, and task-proj- */
	MISS("sk-1234");
	MISS(sample(s, "ta", "sk-", "proj-", 48, ALNUM, "", 1));
	MISS(sample(s, "", "AI", "za", 34, ALNUM, "", 12));
}
END_TEST

static const char *pem(char *s, const char *label, int lines)
{
	int i;

	snprintf(s, 1024, "-----BEGIN %s-----\n", label);
	for (i = 0; i < lines; i++) {
		rnd(s, 64, B64, (uint64_t)(40 + i));
		strcat(s, "\n");
	}
	strcat(s, "-----END ");
	strcat(s, label);
	strcat(s, "-----\n");
	return s;
}

START_TEST(test_private_key)
{
	char s[1024], j[1200];
	aptix_credential c;

	HIT(pem(s, "RSA PRIVATE " "KEY", 3), "private-key");
	HIT(pem(s, "PRIVATE " "KEY", 2), "private-key");
	HIT(pem(s, "OPENSSH PRIVATE " "KEY", 2), "private-key");
	/* the whole block is the finding */
	pem(s, "EC PRIVATE " "KEY", 2);
	ck_assert(aptix_credscan_find(&c, s, strlen(s), NULL, 0));
	ck_assert_uint_eq(c.offset, 0);
	ck_assert_uint_eq(c.length, strlen(s) - 1);
	/* in a JSON string, with \n escapes */
	snprintf(j, sizeof(j), "{\"private_key\": \"-----BEGIN PRIVATE "
		 "KEY-----\\n");
	rnd(j, 70, B64, 50);
	strcat(j, "\\n-----END PRIVATE KEY-----\\n\"}");
	HIT(j, "private-key");

	/* the marker alone (a parser), a public key */
	MISS("#define PEM \"-----BEGIN RSA PRIVATE KEY-----\"\n");
	MISS(pem(s, "PUBLIC " "KEY", 3));
	MISS(pem(s, "CERTIFICATE", 3));
	/* too short a body */
	snprintf(s, sizeof(s), "-----BEGIN PRIVATE KEY-----\nMIIB\n"
		 "-----END PRIVATE KEY-----\n");
	MISS(s);
}
END_TEST

START_TEST(test_jwt_and_url)
{
	char s[1024];

	sample(s, "Authorization: Bearer ", "ey", "J", 20, ALNUM, ".eyJ", 20);
	rnd(s, 30, ALNUM, 21);
	strcat(s, ".");
	rnd(s, 30, ALNUM "_-", 22);
	HIT(s, "jwt");
	MISS("eyJhbGciOi.eyJzdWIi.abc");

	HIT(sample(s, "DATABASE_URL=postgres://admin:", "", "", 14, ALNUM,
		   "@db.internal/app", 30), "url-password");
	MISS("postgres://user:password@localhost/db");
	MISS("cvs://:pserver:anoncvs@sources.redhat.com:/cvs/src");
	MISS("https://user:${PASSWORD}@host/");
	MISS("mailto:someone@example.org");
	MISS("https://example.com/a@b");
}
END_TEST

START_TEST(test_assignments)
{
	char s[1024];

	HIT(sample(s, "aws_secret_access_key = ", "", "", 40, B64, "\n", 31),
	    "aws-secret-access-key");
	/* random secrets that read as a path or hold a placeholder's word
	 * (t7007 missed them now and then) */
	HIT("AWS_SECRET_ACCESS_KEY=/EEqI/TCiYO8tkKOA963XwBLU8fqOIkyoLXpX+tG\n",
	    "aws-secret-access-key");
	HIT("AWS_SECRET_ACCESS_KEY=L/9dmwUEuovKViuktbEndI4gIbhnvjDpxpymXxXB\n",
	    "aws-secret-access-key");
	/* AWS's documentation example is none */
	MISS("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n");
	HIT(sample(s, "API_SECRET=\"", "", "", 32, ALNUM, "\"", 32),
	    "secret-assignment");
	HIT(sample(s, "  \"authToken\": \"", "", "", 40, ALNUM, "\",", 33),
	    "secret-assignment");
	HIT(sample(s, "client_secret := '", "", "", 24, ALNUM, "'", 34),
	    "secret-assignment");
	HIT(sample(s, "DB_PASSWORD=", "", "", 12, ALNUM, "!\n", 35),
	    "password-assignment");
	HIT(sample(s, "password: \"", "", "", 14, ALNUM "#%", "\"", 36),
	    "password-assignment");

	/* code, references, placeholders, constants */
	MISS("token = next_token(p);\n");
	MISS("password = get_password()\n");
	MISS("API_KEY=${API_KEY}\n");
	MISS("secret: \"changeme\"\n");
	MISS("api_key = \"your_api_key_here_1234\"\n");
	MISS("NL80211_KEY_MAX = __NL80211_KEY_AFTER_LAST - 1\n");
	MISS("  ResultPass = AnalysisImpl.second;\n");
	MISS("RegOpenKeyEx = win32api.RegOpenKeyEx\n");
	MISS("key_node.tag = 'tag:yaml.org,2002:str'\n");
	MISS("  key: Tgnutls_x509_privkey_t;\n");
	MISS("if (token == other_token_1234567890)\n");
	MISS("password: string;\n");
	MISS("GIT_CONFIG_KEY_0= GIT_CONFIG_VALUE_0=value1234abcdefgh\n");
	MISS("password=alternate-value\n");
	MISS("Authorization: PROVIDER14-HMAC-SHA256 Credential=keyId/"
	     "19700101/region/service/provider14_request, X=1\n");
	MISS("url-password: \"scheme://user:password@\" with\n");
	MISS("FunctionPassCtor = ScheduleDAGCtor9;\n");
	/* a name that is no secret's */
	MISS(sample(s, "checksum = \"", "", "", 32, ALNUM, "\"", 32));
	/* a sentence, not a secret */
	MISS("secret: the answer is 42 and more words\n");
}
END_TEST

START_TEST(test_entropy_thresholds)
{
	char s[256];

	ck_assert(aptix_credscan_entropy("", 0) == 0);
	ck_assert(aptix_credscan_entropy("aaaa", 4) == 0);
	ck_assert(aptix_credscan_entropy("ab", 2) > 0.999 &&
		  aptix_credscan_entropy("ab", 2) < 1.001);
	ck_assert(aptix_credscan_entropy("abcd", 4) > 1.999 &&
		  aptix_credscan_entropy("abcd", 4) < 2.001);
	{
		unsigned char all[256];
		int i;

		for (i = 0; i < 256; i++)
			all[i] = (unsigned char)i;
		ck_assert(aptix_credscan_entropy(all, 256) > 7.999);
	}
	/* secret-assignment wants 3.5 bits: 16 distinct = 4.0, 8 = 3.0 */
	MISS("API_SECRET=\"abcd1234abcd1234\"");	/* 3.0 */
	HIT("API_SECRET=\"abcdefgh12345678\"", "secret-assignment"); /* 4 */
	/* password-assignment wants 3.0: 8 distinct = 3.0, 4 = 2.0 */
	HIT("DB_PASSWORD=abcd1234", "password-assignment");
	MISS("DB_PASSWORD=ab12ab12");
	/* a token's placeholder: 36 x + a digit stays under 3.0 */
	snprintf(s, sizeof(s), "gh" "p_%s1",
		 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	MISS(s);
}
END_TEST

START_TEST(test_known_keys_and_lines)
{
	const char *keys[] = { NULL, "short", "QDRANTMARKER0123456789" };
	const char *text = "one\ntwo\nthe key QDRANTMARKER0123456789 here\n";
	aptix_credential c;
	char why[160];

	ck_assert(aptix_credscan_find(&c, text, strlen(text), keys, 3));
	ck_assert_str_eq(c.rule, "known-key");
	ck_assert_uint_eq(c.line, 3);
	ck_assert_uint_eq(c.offset, 16);
	ck_assert_uint_eq(c.length, 22);
	aptix_credential_describe(why, sizeof(why), &c);
	ck_assert_str_eq(why, "the value of a configured API key on line 3 "
			 "(rule known-key)");
	/* keys under 8 bytes are ignored */
	ck_assert(!aptix_credscan_find(&c, "a short b", 9, keys, 2));
	ck_assert(!aptix_credscan_find(&c, "", 0, keys, 3));
}
END_TEST

static int count_cb(const aptix_credential *c, void *payload)
{
	(void)c;
	(*(int *)payload)++;
	return 0;
}

START_TEST(test_foreach_all)
{
	char s[1024];
	int n = 0;

	sample(s, "A=", "gh", "p_", 36, ALNUM, "\nB=", 5);
	rnd(s, 0, ALNUM, 0);
	strcat(s, "sk-proj-");
	rnd(s, 40, ALNUM, 6);
	strcat(s, "\n");
	ck_assert_int_eq(aptix_credscan_foreach(s, strlen(s), NULL, 0,
						count_cb, &n), 0);
	ck_assert_int_eq(n, 2);
}
END_TEST

static int collect_cb(const char *text, size_t len, void *payload)
{
	aptix_buf *b = payload;

	ck_assert_uint_gt(len, 0);
	aptix_buf_put(b, text, len);
	return 0;
}

/* The text fed in pieces cut at every step: what comes out, redacted. */
static void stream_pieces(const char *text, size_t step, const char *expect)
{
	const char *keys[] = { "KEYMARKER0123456789", "short", NULL };
	struct aptix__redact_stream rs;
	aptix_buf out = APTIX_BUF_INIT;
	size_t i, n = strlen(text);

	aptix__redact_stream_init(&rs, keys, 3, collect_cb, &out);
	for (i = 0; i < n; i += step) {
		ck_assert_int_eq(aptix__redact_stream_feed(&rs, text + i,
				 i + step > n ? n - i : step), 0);
		/* nothing shown so far holds a whole key */
		ck_assert(!strstr(out.ptr, keys[0]));
	}
	ck_assert_int_eq(aptix__redact_stream_flush(&rs), 0);
	ck_assert_str_eq(out.ptr, expect);
	aptix__redact_stream_release(&rs);
	aptix_buf_release(&out);
}

START_TEST(test_redact_stream)
{
	const char *text = "a KEYMARKER0123456789 b KEYMARKER0123456789KEYM"
		"ARKER0123456789 short c KEYMARKER012";
	const char *expect = "a <redacted> b <redacted><redacted> short c "
		"KEYMARKER012";
	size_t step;

	for (step = 1; step <= strlen(text); step++)
		stream_pieces(text, step, expect);
	stream_pieces("", 1, "");
	stream_pieces("no key at all", 4, "no key at all");
}
END_TEST

START_TEST(test_wildmatch)
{
	ck_assert(aptix__wildmatch("*.env", ".env"));
	ck_assert(aptix__wildmatch("*.env", "prod.env"));
	ck_assert(!aptix__wildmatch("*.env", "a/prod.env"));
	ck_assert(aptix__wildmatch("a/*/c", "a/b/c"));
	ck_assert(!aptix__wildmatch("a/*/c", "a/b/x/c"));
	ck_assert(aptix__wildmatch("a/**/c", "a/c"));
	ck_assert(aptix__wildmatch("a/**/c", "a/b/x/c"));
	ck_assert(aptix__wildmatch("**/secrets", "secrets"));
	ck_assert(aptix__wildmatch("**/secrets", "x/y/secrets"));
	ck_assert(aptix__wildmatch("logs/**", "logs/a/b"));
	ck_assert(!aptix__wildmatch("logs/**", "logs"));
	ck_assert(aptix__wildmatch("key?.pem", "key1.pem"));
	ck_assert(!aptix__wildmatch("key?.pem", "key/.pem"));
	ck_assert(aptix__wildmatch("id_[a-z]sa", "id_rsa"));
	ck_assert(!aptix__wildmatch("id_[!r]sa", "id_rsa"));
	ck_assert(aptix__wildmatch("\\*lit", "*lit"));
	ck_assert(!aptix__wildmatch("\\*lit", "xlit"));
	ck_assert(aptix__wildmatch("[unclosed", "[unclosed"));
}
END_TEST

START_TEST(test_ignore_file)
{
	char *dir = unit_mkdtemp(), *path = unit_path(dir, ".aptixignore");
	struct aptix__ignore *ig;
	const char *text =
		"# comment\n"
		"\n"
		"*.env\n"
		"!example.env\n"
		"/build\n"
		"secrets/\n"
		"docs/**/private.md\n"
		"\\#hash\n"
		"trailing   \n";

	unit_write_file(path, text, strlen(text));
	ck_assert_int_eq(aptix__ignore_load(&ig, dir), 0);
	ck_assert(aptix__ignore_match(ig, ".env"));
	ck_assert(aptix__ignore_match(ig, "deep/dir/prod.env"));
	ck_assert(!aptix__ignore_match(ig, "example.env"));
	ck_assert(aptix__ignore_match(ig, "build"));
	ck_assert(aptix__ignore_match(ig, "build/out.o"));
	ck_assert(!aptix__ignore_match(ig, "src/build"));
	/* a directory pattern: the files under it, not a file so named */
	ck_assert(aptix__ignore_match(ig, "secrets/a.txt"));
	ck_assert(aptix__ignore_match(ig, "x/secrets/a.txt"));
	ck_assert(!aptix__ignore_match(ig, "secrets"));
	ck_assert(aptix__ignore_match(ig, "docs/private.md"));
	ck_assert(aptix__ignore_match(ig, "docs/a/b/private.md"));
	ck_assert(!aptix__ignore_match(ig, "docs/public.md"));
	ck_assert(aptix__ignore_match(ig, "#hash"));
	ck_assert(aptix__ignore_match(ig, "trailing"));
	ck_assert(!aptix__ignore_match(ig, "src/main.c"));
	aptix__ignore_free(ig);

	/* no negation inside an ignored directory, as in git */
	text = "secrets/\n!secrets/ok.txt\n";
	unit_write_file(path, text, strlen(text));
	ck_assert_int_eq(aptix__ignore_load(&ig, dir), 0);
	ck_assert(aptix__ignore_match(ig, "secrets/ok.txt"));
	aptix__ignore_free(ig);

	/* no file: nothing is ignored */
	unlink(path);
	ck_assert_int_eq(aptix__ignore_load(&ig, dir), 0);
	ck_assert(!aptix__ignore_match(ig, ".env"));
	aptix__ignore_free(ig);
	free(path);
	unit_rmtree(dir);
	free(dir);
}
END_TEST

Suite *credscan_suite(void)
{
	Suite *s = suite_create("credscan");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_rules_listed);
	tcase_add_test(tc, test_provider_tokens);
	tcase_add_test(tc, test_more_tokens);
	tcase_add_test(tc, test_more_formats);
	tcase_add_test(tc, test_provider_near_misses);
	tcase_add_test(tc, test_private_key);
	tcase_add_test(tc, test_jwt_and_url);
	tcase_add_test(tc, test_assignments);
	tcase_add_test(tc, test_entropy_thresholds);
	tcase_add_test(tc, test_known_keys_and_lines);
	tcase_add_test(tc, test_foreach_all);
	tcase_add_test(tc, test_redact_stream);
	tcase_add_test(tc, test_wildmatch);
	tcase_add_test(tc, test_ignore_file);
	suite_add_tcase(s, tc);
	return s;
}
