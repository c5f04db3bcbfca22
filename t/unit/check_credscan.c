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
	const char *id, *desc, *seen[64];
	size_t i, j, n = aptix_credscan_rule_count();

	ck_assert_uint_eq(n, 21);
	ck_assert_uint_le(n, 64);
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
