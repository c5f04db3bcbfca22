/*
 * src/store/odb-s3.h - large objects on S3-compatible storage, behind a
 * storage backend's object domain (odb-s3.c).
 */
#ifndef APTIX_STORE_ODB_S3_H
#define APTIX_STORE_ODB_S3_H

#include "aptix/sys/backend.h"

/* s3.threshold's default: 1 MiB. */
#define APTIX_S3_THRESHOLD_DEFAULT ((size_t)1 << 20)

/* Where a store keeps its large objects (its meta keys s3.*). */
struct aptix_s3_location {
	const char *url;	/* the endpoint, without the bucket */
	const char *bucket;
	const char *region;	/* NULL: the environment's, or us-east-1 */
	size_t threshold;	/* stored values of this many bytes or more */
};

/*
 * Put be's objects of loc->threshold bytes or more on S3, under keys
 * "<org>/<id>": be->odb is replaced by a backend that wraps it, freed
 * with be. APTIX_EINVALID: be's objects cannot be wrapped.
 */
int aptix__odb_s3_wrap(aptix_backend *be, const struct aptix_s3_location *loc,
		       const char *org);

/*
 * The same when be's meta (outside any transaction) names an S3
 * location (s3.url, s3.bucket, s3.region, s3.threshold); 0 and nothing
 * done when it names none.
 */
int aptix__odb_s3_from_meta(aptix_backend *be, const char *org);

/*
 * Write loc into be's meta (s3.*), in a transaction of its own; refused
 * (APTIX_EINVALID) when be names another URL or bucket already: its
 * objects there would be lost. Takes effect at the next open.
 */
int aptix__odb_s3_set_location(aptix_backend *be,
			       const struct aptix_s3_location *loc);

/* What set_location would refuse, checked outside any transaction. */
int aptix__odb_s3_check_location(aptix_backend *be,
				 const struct aptix_s3_location *loc);

/* 1 when a stored value is the note that its object is on S3. */
int aptix__odb_s3_is_marker(const void *val, size_t len);

#endif
