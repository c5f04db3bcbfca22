/*
 * src/workspace/ignore.h - .aptixignore: paths never sent nor indexed.
 *
 * The file at the workspace root holds patterns in gitignore syntax (one
 * file, at the root only; README.md "Credentials" documents it):
 * blank lines and lines starting with '#' are skipped; '!' negates;
 * a trailing '/' matches directories only; a pattern with a '/' at its
 * start or in its middle is anchored at the root, else it matches a
 * name at any depth; '*' and '?' do not match '/', '[...]' is a class
 * ('!' or '^' negates it), '\' escapes; "**" as a whole component
 * matches any number of directories ("**" + "/foo", "foo/" + "**",
 * "a/" + "**" + "/b"). The last matching pattern wins, and as in git a
 * file in an ignored directory cannot be re-included by a negation.
 */
#ifndef APTIX_SRC_IGNORE_H
#define APTIX_SRC_IGNORE_H

#define APTIX_IGNORE_FILE ".aptixignore"

struct aptix__ignore;

/*
 * The patterns of root's .aptixignore (none when there is no such
 * file: *out is still set). Returns 0, or APTIX_ERROR when the file
 * exists but cannot be read.
 */
int aptix__ignore_load(struct aptix__ignore **out, const char *root);

/* 1 when path (relative to the root, '/' separators) is ignored. */
int aptix__ignore_match(const struct aptix__ignore *ig, const char *path);

/* Whether pattern matches text, gitignore's wildmatch (for tests). */
int aptix__wildmatch(const char *pattern, const char *text);

void aptix__ignore_free(struct aptix__ignore *ig);

#endif
