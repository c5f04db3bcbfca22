/*
 * src/http/s3.h - a small client of S3-compatible object storage (AWS S3,
 * MinIO, Ceph, Swift's s3api): create-only PUT and GET of whole objects
 * in one bucket, path-style (<url>/<bucket>/<key>), signed with AWS
 * Signature Version 4 by libcurl (CURLOPT_AWS_SIGV4).
 *
 * Credentials never come from aptix's config: AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, else the profile
 * AWS_PROFILE (default "default") of the shared credentials file
 * (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials). They are
 * read when the client is made and reach no message: an error names the
 * method, the URL (which holds no credential) and S3's error code.
 */
#ifndef APTIX_HTTP_S3_H
#define APTIX_HTTP_S3_H

#include "util/common.h"

typedef struct aptix_s3 aptix_s3;

/**
 * A client of bucket at url (http:// or https://, the endpoint without
 * the bucket) in region (NULL or "": AWS_REGION, AWS_DEFAULT_REGION,
 * else us-east-1). APTIX_EINVALID: a bad URL or bucket, no credentials.
 */
int aptix__s3_new(aptix_s3 **out, const char *url, const char *bucket,
		  const char *region);
void aptix__s3_free(aptix_s3 *s);

/** APTIX_EINVALID (with why) unless url, bucket and region can be used. */
int aptix__s3_check(const char *url, const char *bucket, const char *region);

/**
 * PUT data under key unless an object is there (If-None-Match: *).
 * sha256hex: the SHA-256 of data in hex, sent as x-amz-content-sha256.
 * @return 0 stored; 1 when S3 answered 412 (an object is there already:
 *         the caller checks it); APTIX_ENET, APTIX_EHTTP.
 */
int aptix__s3_put(aptix_s3 *s, const char *key, const void *data,
		  size_t len, const char *sha256hex);

/**
 * The object under key into out (replaced), at most max bytes (0: no
 * limit). @return 0; APTIX_ENOTFOUND (404); APTIX_ENET, APTIX_EHTTP,
 * APTIX_EFULL.
 */
int aptix__s3_get(aptix_buf *out, aptix_s3 *s, const char *key, size_t max);

#endif
