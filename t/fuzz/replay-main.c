/*
 * t/fuzz/replay-main.c - a main() for a fuzz harness without libFuzzer:
 * runs LLVMFuzzerTestOneInput() once on each file named on the command
 * line (a directory: on each file in it), so that the corpus and the
 * inputs of past crashes are replayed by `make check`.
 *
 *	replay-<name> [-v] <file or directory>...
 *
 * Exit 0 when every input ran; a finding aborts (or is reported by the
 * sanitizers in a sanitizer build).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int verbose;
static unsigned long count;

static int run_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	unsigned char *data = NULL, *p;
	size_t len = 0, alloc = 0, n;

	if (!fp) {
		fprintf(stderr, "replay: cannot open '%s': %s\n", path,
			strerror(errno));
		return -1;
	}
	do {
		if (len == alloc) {
			alloc = alloc ? alloc * 2 : 4096;
			if (!(p = realloc(data, alloc))) {
				fclose(fp);
				free(data);
				return -1;
			}
			data = p;
		}
		n = fread(data + len, 1, alloc - len, fp);
		len += n;
	} while (n);
	fclose(fp);
	if (verbose)
		fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
	/* an exact-size copy, so that ASan sees reads past the end */
	p = malloc(len ? len : 1);
	if (!p) {
		free(data);
		return -1;
	}
	if (len)
		memcpy(p, data, len);
	free(data);
	LLVMFuzzerTestOneInput(p, len);
	free(p);
	count++;
	return 0;
}

static int run_path(const char *path)
{
	struct stat sb;
	struct dirent **names;
	int n, i, r = 0;

	if (stat(path, &sb) < 0) {
		fprintf(stderr, "replay: cannot stat '%s': %s\n", path,
			strerror(errno));
		return -1;
	}
	if (!S_ISDIR(sb.st_mode))
		return run_file(path);
	n = scandir(path, &names, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: cannot read '%s'\n", path);
		return -1;
	}
	for (i = 0; i < n; i++) {
		char *sub;

		if (names[i]->d_name[0] != '.' && !r &&
		    (sub = malloc(strlen(path) + strlen(names[i]->d_name) +
				  2))) {
			snprintf(sub, strlen(path) + strlen(names[i]->d_name) + 2,
				 "%s/%s", path, names[i]->d_name);
			r = run_path(sub);
			free(sub);
		}
		free(names[i]);
	}
	free(names);
	return r;
}

int main(int argc, char **argv)
{
	int i = 1;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1 && !strcmp(argv[1], "-v")) {
		verbose = 1;
		i++;
	}
	for (; i < argc; i++)
		if (run_path(argv[i]) < 0)
			return 1;
	printf("replayed %lu inputs\n", count);
	return 0;
}
