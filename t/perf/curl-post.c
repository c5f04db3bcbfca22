/*
 * t/perf/curl-post.c - the floor for one turn's fixed cost (issue 10):
 * a plain libcurl client that POSTs one Responses request and reads the
 * whole answer, as `aptix continue --no-stream` does, with no store, no
 * JSON, no hashing. Built and run by t/perf/fixed.sh; not installed.
 *
 *	curl-post <url> <body-file>
 */
#include <stdio.h>
#include <stdlib.h>
#include <curl/curl.h>

static size_t sink(char *p, size_t size, size_t n, void *data)
{
	(void)p;
	*(size_t *)data += size * n;
	return size * n;
}

int main(int argc, char **argv)
{
	static char body[1 << 16];
	struct curl_slist *h = NULL;
	size_t len, got = 0;
	FILE *f;
	CURL *c;
	CURLcode rc;

	if (argc != 3 || !(f = fopen(argv[2], "rb")))
		return 2;
	len = fread(body, 1, sizeof(body), f);
	fclose(f);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	c = curl_easy_init();
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Authorization: Bearer sk-bench");
	curl_easy_setopt(c, CURLOPT_URL, argv[1]);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &got);
	rc = curl_easy_perform(c);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	curl_global_cleanup();
	printf("%zu\n", got);
	return rc == CURLE_OK ? 0 : 1;
}
