/*
 * src/object/zstream.h - the stored form of an object (objects-format.md,
 * "Storage"): a flag-and-type byte, the content size as a LEB128
 * varint, then the content, zlib-compressed unless that saves nothing.
 */
#ifndef APTIX_ZSTREAM_H
#define APTIX_ZSTREAM_H

#include "aptix/object.h"

#define APTIX_STORED_RAW 0x80
/* format 2: a turn or session packed (pack.c), a blob spliced */
#define APTIX_STORED_PACKED 0x40
/* format 3: deflated with a base object's text as preset dictionary */
#define APTIX_STORED_BASED 0x20
#define APTIX_STORED_TYPE 0x1f
#define APTIX_STORED_MAX_SPLICES 64
/* the dictionary: at most the first 32 KiB of the base's text */
#define APTIX_STORED_DICT_MAX 32768

/**
 * Reads the content of a base into out: of a splice (splice = 1: a blob,
 * never itself spliced), or of a based value (splice = 0: an object of
 * the given type, never itself based). A reader refuses what breaks
 * those rules as corrupt.
 */
typedef int (*aptix_stored_base_fn)(aptix_buf *out, const aptix_oid *id,
				    aptix_otype type, int splice,
				    void *payload);

/** A base for a value's dictionary: its id, type and content. */
typedef struct {
	aptix_oid id;
	aptix_otype type;
	const void *content;
	size_t len;
} aptix_stored_base;

/** One splice: the escaped content of base is data[at .. at + len). */
typedef struct {
	aptix_oid base;
	size_t at, len;
	int kind;		/* escaping: see aptix__json_escape */
} aptix_stored_splice;

/**
 * Compression levels used for new objects (measured in `make bench`):
 * of contents over 16 KiB, and of smaller ones (see zstream.c).
 */
extern int aptix_zlib_level;
extern int aptix_zlib_small_level;

/** Encode content into out (replacing what it held). */
int aptix_stored_encode(aptix_buf *out, aptix_otype type, const void *data,
			size_t len);
/**
 * The same, deflated against base (of the same type, never itself
 * based) when that makes the value at most three quarters of its size
 * without. base NULL: as aptix_stored_encode.
 */
int aptix_stored_encode_against(aptix_buf *out, aptix_otype type,
				const void *data, size_t len,
				const aptix_stored_base *base);
/**
 * A blob stored as its bytes minus the given splices (sorted here),
 * each a reference to a base blob, the rest deflated against base as
 * aptix_stored_encode_against does (base may be NULL); checked by
 * decoding it with base_fn, stored plain when the check fails.
 */
int aptix_stored_encode_spliced(aptix_buf *out, const void *data,
				size_t len, aptix_stored_splice *sp,
				size_t n, const aptix_stored_base *base,
				aptix_stored_base_fn base_fn, void *payload);
/**
 * The dictionary a based value is deflated with: the first 32 KiB of
 * the base's packed form (a turn or session that packs) or content.
 */
int aptix_stored_dict_text(aptix_buf *out, aptix_otype type,
			   const void *content, size_t len);
/** The base of a based value: 1 (*out set), 0 none, < 0 corrupt. */
int aptix_stored_based_on(aptix_oid *out, const void *val, size_t vlen);
/** Does decoding the value need other objects (spliced or based)? */
int aptix_stored_needs_bases(const void *val, size_t vlen);
/** Decode, reading the bases of a spliced blob with base_fn. */
int aptix_stored_decode_with(aptix_buf *out, aptix_otype *type,
			     const void *val, size_t vlen,
			     aptix_stored_base_fn base_fn, void *payload);
/** Is it a spliced blob (whose decoding needs its bases)? */
int aptix_stored_is_spliced(const void *val, size_t vlen);

/** The bases of a spliced blob (up to max of them): how many, or < 0. */
int aptix_stored_splice_bases(aptix_oid *out, size_t max, const void *val,
			      size_t vlen);
/**
 * Every object decoding the value needs: its splice bases, then its
 * delta base. How many (0 for a value that needs none), or < 0 when the
 * splice list is corrupt.
 */
int aptix_stored_bases(aptix_oid out[APTIX_STORED_MAX_SPLICES + 1],
		       const void *val, size_t vlen);

/* The LEB128 varint of v into p (10 bytes suffice): its length. */
size_t aptix__varint_encode(unsigned char *p, uint64_t v);

/* pack.c */
/* A LEB128 varint (the stored-value headers and packed JSON): 0, or -1. */
int aptix__get_varint(uint64_t *v, const unsigned char **p,
		       const unsigned char *end);
void aptix__put_varint(aptix_buf *out, uint64_t v);
int aptix__pack_json(aptix_buf *out, const void *json, size_t len);
int aptix__unpack_json(aptix_buf *out, const void *packed, size_t len);
int aptix__json_escape(aptix_buf *out, const void *text, size_t len,
		       int kind);

/** Header only: type and size. ECORRUPT when malformed. */
int aptix_stored_header(aptix_otype *type, size_t *size, size_t *hdrlen,
			const void *val, size_t vlen);
/** Decode into out. ECORRUPT when damaged or truncated. */
int aptix_stored_decode(aptix_buf *out, aptix_otype *type, const void *val,
			size_t vlen);

#endif
