/*
 * t/perf/jsonl-parse.c - the baseline of `aptix import`'s benchmark: read
 * the files named on the command line line by line and parse each line
 * with Jansson, as the importer does, and nothing else. Prints the bytes
 * and lines read.
 */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	unsigned long long bytes = 0, lines = 0, bad = 0;
	char *line = NULL;
	size_t alloc = 0;
	ssize_t n;
	int i;

	for (i = 1; i < argc; i++) {
		FILE *fp = fopen(argv[i], "r");

		if (!fp) {
			perror(argv[i]);
			return 1;
		}
		while ((n = getline(&line, &alloc, fp)) > 0) {
			json_t *v = json_loadb(line, (size_t)n, 0, NULL);

			bytes += (unsigned long long)n;
			lines++;
			if (!v)
				bad++;
			json_decref(v);
		}
		fclose(fp);
	}
	free(line);
	printf("%llu %llu %llu\n", bytes, lines, bad);
	return 0;
}
