/*
 * serve/page-files.h - the files of the browser page (serve/page/),
 * embedded into the binary at build time by serve/embed.sh.
 */
#ifndef APTIX_PAGE_FILES_H
#define APTIX_PAGE_FILES_H

#include <stddef.h>

struct page_file {
	const char *name;		/* base name: "index.html" */
	const unsigned char *data;	/* NUL-terminated too */
	size_t size;
};

/* Ends with an entry whose name is NULL. */
extern const struct page_file page_files[];

#endif
