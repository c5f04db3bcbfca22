/*
 * porcelain/xfer.h - the lines of push, fetch and clone (push.c).
 */
#ifndef APTIX_PORCELAIN_XFER_H
#define APTIX_PORCELAIN_XFER_H

#include <aptix.h>

/*
 * Each update of res as git prints them, to stderr (" * [new ...]  a ->
 * b", " ! [rejected]        a -> a (fetch first)"), after a line
 * "<where> <url>"; up-to-date ones only when verbose.
 */
void xfer_print(const aptix_xfer_result *res, const char *where,
		const char *url, int verbose);

#endif
