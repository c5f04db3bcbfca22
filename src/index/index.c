/*
 * src/index/index.c - the session index (see aptix/index.h): records in the
 * store's sessions, children and conversations tables.
 *
 * Session record: u8 version, u8 session status, u8 turn status, u8 flags
 * (1: has parent, 2: the conversation id is a UUID, kept as its 16
 * bytes), parent id, turn id, be64 created (ms), be32 generation, the
 * conversation id (16 bytes, or u8 length + text), u8 length + summary;
 * version 2 adds the chain section (what the model holds:
 * src/index/index-chain.c); version 3
 * puts the rolling summary's section (src/index/index-summary.c) before it;
 * version 4 (flag 4) ends with be32 CRC-32 (zlib's) of the bytes before
 * it: a damaged record is an error, never another answer (a bit flipped
 * in a summary changed what log shows); version 5 puts what the turn
 * spent after the summary (src/index/index-usage.c). Versions 1-4 are
 * read as they are; reindex writes version 5.
 * Where the record is (store format 5): in the timeline table, under the
 * key be64 created (ms), session id, so that records are written in time
 * order (appended: their pages fill up, where a table keyed by ids keeps
 * its leaves about 60% full) and `log --all` reads them in one pass; the
 * sessions table then maps the id to u8 4 (SESSION_LOC), be64 created.
 * Records written by format 4 and older stay in the sessions table
 * (timeline value empty) until `aptix reindex`. A children key is be64
 * created of the parent, parent id, child id (format 5: a new child
 * lands where the newest sessions are), or parent id, child id (older).
 * Conversation record (the conversation's summary: status and sessions
 * read one per conversation, never every session): u8 version 2, u8
 * flags (1: has head, 2: archived, 4: has a failed attempt, 8: title set
 * by the user, 16: has a newest snapshot), u8 last status, u8 last turn
 * status, head id, be64 created, be64 updated, be32 turns, be32
 * committed, be32 failed, newest snapshot id, newest failed attempt id,
 * be64 its time, u8 length + title, u8 length + workspace.
 * Version 1 records (no counts) are still read: what they lack is
 * computed from the sessions until `aptix reindex` rewrites them.
 * objects-format.md ("The session index") specifies every record byte
 * for byte, with examples that t1000 checks: change it with the layout.
 */
#include "util/common.h"
#include "util/tokens.h"
#include "util/env.h"
#include "repo/repo.h"
#include "repo/running.h"
#include "index/index.h"
#include "aptix/index.h"
#include "aptix/search.h"
#include "aptix/refs.h"
#include "aptix/oidmap.h"
#include "store/odb-store.h"
#include "store/backend-kv.h"
#include "aptix/sys/index_backend.h"
#include "aptix/sys/refdb_backend.h"
#include "aptix/sys/claims_backend.h"
#include <zlib.h>

/* The index records of repo, at the last commit. */
static int index_iter(aptix_repo *repo, aptix_index_table t, unsigned flags,
		      const void *start, size_t slen,
		      aptix_backend_record_cb cb, void *payload)
{
	aptix_index_backend *ix = repo->backend->index;

	return ix->iterate(ix, NULL, t, start, slen, flags, cb, payload);
}

#define REC_VERSION 1
#define SESSION_V2 2	/* version 1 and the chain section */
#define SESSION_V3 3	/* version 2 and the rolling summary (read as 4) */
#define SESSION_V4 4	/* version 3 and the checksum */
#define SESSION_V5 5	/* version 4 and the usage section */
#define SESSION_VERSION 6	/* version 5, the rolling head compact */
#define CONV_V2 2
#define CONV_VERSION 3	/* version 2, the usage section and a checksum */
#define SESSION_LOC 4	/* sessions table: the record is in the timeline */
#define LOC_LEN 9
/* the store format of session records of version 6 */
#define INDEX_FORMAT APTIX_RECORD_FORMAT
#define LAYOUT_KEY APTIX_META_INDEX_LAYOUT

void aptix_summary_line(char *out, size_t max, const char *text, size_t len)
{
	size_t i, n = 0;

	while (len && (*text == '\n' || *text == ' ' || *text == '\t' ||
		       *text == '\r')) {
		text++;
		len--;
	}
	for (i = 0; i < len && text[i] != '\n' && text[i] != '\r'; i++)
		;
	n = aptix_utf8_cut(text, i, max);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)text[i];

		out[i] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
	}
	out[n] = '\0';
}

static void put_str8(aptix_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	unsigned char c;

	if (n > 255)
		n = 255;
	c = (unsigned char)n;
	aptix_buf_put(b, &c, 1);
	aptix_buf_put(b, s ? s : "", n);
}

/* s into out (outsz bytes), cut where no UTF-8 character is split. */
static void copy_cut(char *out, size_t outsz, const char *s)
{
	size_t n = aptix_utf8_cut(s, strlen(s), outsz - 1);

	memcpy(out, s, n);
	out[n] = '\0';
}

static int get_str8(char *out, size_t outsz, const unsigned char **p,
		    const unsigned char *end)
{
	size_t n, keep;

	if (*p >= end)
		return -1;
	n = **p;
	(*p)++;
	if ((size_t)(end - *p) < n)
		return -1;
	keep = n < outsz ? n : outsz - 1;
	memcpy(out, *p, keep);
	out[keep] = '\0';
	*p += n;
	return 0;
}

static int corrupt_record(const char *what)
{
	aptix_error_set(APTIX_ERROR_REPOSITORY, "index record of %s is "
			"corrupt: run 'aptix reindex'", what);
	return APTIX_ECORRUPT;
}

#define REC_PARENT 1
#define REC_CONV_UUID 2
#define REC_CRC 4	/* version 4: the record ends with its CRC-32 */
#define CRC_LEN 4

/*
 * The length of a session record without its checksum, verified: 0; a
 * record of version 4 that fails it is ECORRUPT (what names it). The
 * version and the flag must agree, so that no two flipped bits make a
 * damaged record one of an older version.
 */
static int record_body(size_t *blen, const void *val, size_t vlen,
		       const char *what)
{
	const unsigned char *p = val;
	int v4, flag;

	*blen = vlen;
	if (vlen < 80)
		return 0;	/* the caller's length check says so */
	v4 = p[0] >= SESSION_V4;
	flag = (p[3] & REC_CRC) != 0;
	if (!v4 && !flag)
		return 0;
	if (v4 != flag || vlen < 80 + CRC_LEN ||
	    crc32(0L, p, (uInt)(vlen - CRC_LEN)) !=
	    aptix__get_be32(p + vlen - CRC_LEN))
		return corrupt_record(what);
	*blen = vlen - CRC_LEN;
	return 0;
}

void aptix_index__reseal(void *val, size_t vlen)
{
	unsigned char *p = val;

	if (vlen >= 80 + CRC_LEN && p[0] >= SESSION_V4 &&
	    (p[3] & REC_CRC))
		aptix__put_be32(p + vlen - CRC_LEN,
				(uint32_t)crc32(0L, p, (uInt)(vlen -
							      CRC_LEN)));
}

static int seal(aptix_buf *b)
{
	unsigned char t[CRC_LEN];

	if (aptix_buf_oom(b))
		return APTIX_ERROR;
	aptix__put_be32(t, (uint32_t)crc32(0L, (const unsigned char *)b->ptr,
					   (uInt)b->len));
	aptix_buf_put(b, t, CRC_LEN);
	return aptix_buf_oom(b) ? APTIX_ERROR : 0;
}

/*
 * The conversation id of a session record: 16 bytes when it is a UUID
 * in its usual form (a record is read by every listing), else its text.
 */
static int conv_uuid(unsigned char u[16], const char *conv)
{
	char back[APTIX_UUID_STRSZ + 1];

	if (!conv || aptix_uuid_parse(u, conv) < 0)
		return 0;
	aptix_uuid_format(back, u);
	return !strcmp(back, conv);
}

static int get_conv(char *out, size_t outsz, int flags,
		    const unsigned char **p, const unsigned char *end)
{
	char text[APTIX_UUID_STRSZ + 1];

	if (!(flags & REC_CONV_UUID))
		return get_str8(out, outsz, p, end);
	if (end - *p < 16)
		return -1;
	aptix_uuid_format(text, *p);
	snprintf(out, outsz, "%s", text);
	*p += 16;
	return 0;
}

static int is_loc(const void *val, size_t vlen)
{
	return vlen == LOC_LEN && *(const unsigned char *)val == SESSION_LOC;
}

static void timeline_key(unsigned char key[40], int64_t created,
			 const unsigned char id[32])
{
	aptix__put_be64(key, (uint64_t)created);
	memcpy(key + 8, id, 32);
}

struct loc_view {
	aptix_store_view_cb cb;
	void *payload;
	int located;
	unsigned char key[40];
};

static int loc_view_cb(const void *val, size_t vlen, void *payload)
{
	struct loc_view *lv = payload;

	if (!is_loc(val, vlen))
		return lv->cb(val, vlen, lv->payload);
	memcpy(lv->key, (const unsigned char *)val + 1, 8);
	lv->located = 1;
	return 0;
}

static int lost_record(const unsigned char id[32])
{
	aptix_oid oid;

	memcpy(oid.id, id, 32);
	return corrupt_record(aptix_oid_hex(&oid));
}

/*
 * The two reads are two snapshots: a timeline record missing after its
 * locator was read may have gone with a reindex between them, so the
 * locator is read again before the record is called lost.
 */
int aptix_index__view_record(aptix_index_backend *ix,
			     const unsigned char id[32],
			     aptix_backend_view_cb cb, void *payload)
{
	struct loc_view lv;
	unsigned char seen[8];
	int r, tries;

	for (tries = 0; tries < 2; tries++) {
		lv.cb = cb;
		lv.payload = payload;
		lv.located = 0;
		r = ix->view(ix, APTIX_INDEX_SESSIONS, id, 32, loc_view_cb,
			     &lv);
		if (r < 0 || !lv.located)
			return r;
		if (tries && !memcmp(seen, lv.key, 8))
			break;	/* the same locator: the record is lost */
		memcpy(seen, lv.key, 8);
		memcpy(lv.key + 8, id, 32);
		r = ix->view(ix, APTIX_INDEX_TIMELINE, lv.key, 40, cb,
			     payload);
		if (r != APTIX_ENOTFOUND)
			return r;
	}
	return lost_record(id);
}

static int copy_record_cb(const void *val, size_t vlen, void *payload)
{
	aptix_buf *out = payload;

	aptix_buf_clear(out);
	aptix_buf_put(out, val, vlen);
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

int aptix_index__copy_record(aptix_buf *out, aptix_index_backend *ix,
			     const unsigned char id[32])
{
	return aptix_index__view_record(ix, id, copy_record_cb, out);
}

int aptix_index__wget_record(aptix_buf *out, aptix_backend_txn *tx,
			     const unsigned char id[32])
{
	aptix_index_backend *ix = tx->backend->index;
	unsigned char key[40];
	int r = ix->get(out, ix, tx, APTIX_INDEX_SESSIONS, id, 32);

	if (r < 0 || !is_loc(out->ptr, out->len))
		return r;
	memcpy(key, (const unsigned char *)out->ptr + 1, 8);
	memcpy(key + 8, id, 32);
	r = ix->get(out, ix, tx, APTIX_INDEX_TIMELINE, key, 40);
	return r == APTIX_ENOTFOUND ? lost_record(id) : r;
}

static int encode_session(aptix_buf *b, const aptix_session_info *si)
{
	unsigned char h[4], t[8], u[16];
	int uuid = conv_uuid(u, si->conversation);

	h[0] = SESSION_VERSION;
	h[1] = (unsigned char)si->status;
	h[2] = (unsigned char)si->turn_status;
	h[3] = (si->has_parent ? REC_PARENT : 0) | (uuid ? REC_CONV_UUID : 0) |
		REC_CRC;
	aptix_buf_put(b, h, 4);
	aptix_buf_put(b, si->parent.id, 32);
	aptix_buf_put(b, si->turn.id, 32);
	aptix__put_be64(t, (uint64_t)si->created_at);
	aptix_buf_put(b, t, 8);
	t[0] = (unsigned char)(si->generation >> 24);
	t[1] = (unsigned char)(si->generation >> 16);
	t[2] = (unsigned char)(si->generation >> 8);
	t[3] = (unsigned char)si->generation;
	aptix_buf_put(b, t, 4);
	if (uuid)
		aptix_buf_put(b, u, 16);
	else
		put_str8(b, si->conversation);
	put_str8(b, si->summary);
	aptix_index__usage_encode(b, si);
	return aptix_buf_oom(b) ? APTIX_ERROR : 0;
}

static int decode_session(aptix_session_info *si, const aptix_oid *id,
			  const void *val, size_t vlen)
{
	const unsigned char *p = val, *end;
	size_t blen;

	memset(si, 0, sizeof(*si));
	if (vlen < 80 || p[0] < REC_VERSION || p[0] > SESSION_VERSION ||
	    record_body(&blen, val, vlen, "a session") < 0)
		return corrupt_record(aptix_oid_hex(id));
	end = p + blen;
	si->id = *id;
	si->status = (aptix_session_status)p[1];
	si->turn_status = (aptix_turn_status)p[2];
	si->has_parent = p[3] & REC_PARENT;
	memcpy(si->parent.id, p + 4, 32);
	memcpy(si->turn.id, p + 36, 32);
	si->created_at = (int64_t)aptix__get_be64(p + 68);
	si->generation = (uint32_t)p[76] << 24 | (uint32_t)p[77] << 16 |
		(uint32_t)p[78] << 8 | p[79];
	p += 80;
	if (get_conv(si->conversation, sizeof(si->conversation),
		     ((const unsigned char *)val)[3], &p, end) ||
	    get_str8(si->summary, sizeof(si->summary), &p, end) ||
	    (*(const unsigned char *)val >= SESSION_V5 &&
	     aptix_index__usage_decode(si, &p, end) < 0))
		return corrupt_record(aptix_oid_hex(id));
	return 0;
}

static void put_be32(aptix_buf *b, uint32_t v)
{
	unsigned char t[4];

	aptix__put_be32(t, v);
	aptix_buf_put(b, t, 4);
}

static void put_be64(aptix_buf *b, int64_t v)
{
	unsigned char t[8];

	aptix__put_be64(t, (uint64_t)v);
	aptix_buf_put(b, t, 8);
}

/* After the fixed fields: the sections of a version 2 or 3 record. */
static int sections(const unsigned char **p, const unsigned char **end,
		    const void *val, size_t vlen)
{
	const unsigned char *q = val;
	aptix_session_info usage;
	char skip[256];
	size_t blen;

	if (vlen < 80 || q[0] < REC_VERSION || q[0] > SESSION_VERSION ||
	    record_body(&blen, val, vlen, "a session") < 0)
		return corrupt_record("a session");
	if (q[0] == REC_VERSION)
		return 1;
	*end = q + blen;
	*p = q + 80;
	if (get_conv(skip, sizeof(skip), q[3], p, *end) ||
	    get_str8(skip, sizeof(skip), p, *end) ||
	    (q[0] >= SESSION_V5 &&
	     aptix_index__usage_decode(&usage, p, *end) < 0))
		return corrupt_record("a session");
	return 0;
}

int aptix_index__record_summary(char out[121], const void *val,
				size_t vlen)
{
	const unsigned char *p = val, *end;
	char skip[256];
	size_t blen;

	if (vlen < 80 || record_body(&blen, val, vlen, "a session") < 0)
		return corrupt_record("a session");
	end = p + blen;
	p += 80;
	if (get_conv(skip, sizeof(skip), ((const unsigned char *)val)[3], &p,
		     end) ||
	    get_str8(out, APTIX_SUMMARY_MAX + 1, &p, end))
		return corrupt_record("a session");
	return 0;
}

int aptix_index__rolling_section(const unsigned char **sec, size_t *len,
				 const void *val, size_t vlen)
{
	const unsigned char *p, *end;
	uint32_t n;
	int r = sections(&p, &end, val, vlen);

	if (r)
		return r;
	if (*(const unsigned char *)val == SESSION_V2)
		return 1;
	if (end - p < 4 || (n = aptix__get_be32(p)) > (size_t)(end - p) - 4)
		return corrupt_record("a session");
	*sec = p + 4;
	*len = n;
	/* version 6 and only it has the compact head */
	if (!n || (*(const unsigned char *)val >= SESSION_VERSION) !=
	    ((p[4] & APTIX_INDEX_ROLLING_COMPACT) != 0))
		return corrupt_record("a session");
	return 0;
}

int aptix_index__chain_section(const unsigned char **sec, size_t *len,
			       const void *val, size_t vlen)
{
	const unsigned char *p, *end;
	int r = aptix_index__rolling_section(sec, len, val, vlen);

	if (r < 0)
		return r;
	if (r == 0) {	/* version 3: the chain follows the summary */
		if ((r = sections(&p, &end, val, vlen)) != 0)
			return r;
		*sec += *len;
		*len = (size_t)(end - *sec);
		return 0;
	}
	if ((r = sections(&p, &end, val, vlen)) != 0)
		return r;
	*sec = p;
	*len = (size_t)(end - p);
	return 0;
}

void aptix_index__op_release(struct aptix_index_session_op *op)
{
	aptix_session_release(&op->session);
	aptix_index__delta_release(&op->delta);
	aptix__terms_release(&op->search);
	op->search_ready = 0;
}

/*
 * The start both versions of a conversation record share: version,
 * flags, statuses (the last turn's 0 in version 1), the head, the times
 * and the number of turns.
 */
static void put_conv_head(aptix_buf *b, const aptix_conv_info *ci,
			  int version)
{
	unsigned char h[4];
	unsigned flags = (ci->has_head ? 1 : 0) | (ci->archived ? 2 : 0);

	if (version != REC_VERSION)
		flags |= (ci->has_failed ? 4 : 0) | (ci->titled ? 8 : 0) |
			(ci->has_last ? 16 : 0);
	h[0] = (unsigned char)version;
	h[1] = (unsigned char)flags;
	h[2] = (unsigned char)ci->last_status;
	h[3] = version == REC_VERSION ? 0 :
		(unsigned char)ci->last_turn_status;
	aptix_buf_put(b, h, 4);
	aptix_buf_put(b, ci->head.id, 32);
	put_be64(b, ci->created_at);
	put_be64(b, ci->updated_at);
	put_be32(b, ci->turns);
}

/* A version 1 record stays one until reindex (its counts are partial). */
static int encode_conv_v1(aptix_buf *b, const aptix_conv_info *ci)
{
	put_conv_head(b, ci, REC_VERSION);
	put_str8(b, ci->title);
	put_str8(b, ci->workspace);
	return aptix_buf_oom(b) ? APTIX_ERROR : 0;
}

static int encode_conv(aptix_buf *b, const aptix_conv_info *ci)
{
	put_conv_head(b, ci, CONV_VERSION);
	put_be32(b, ci->committed);
	put_be32(b, ci->failed);
	aptix_buf_put(b, ci->last.id, 32);
	aptix_buf_put(b, ci->last_failed.id, 32);
	put_be64(b, ci->failed_at);
	put_str8(b, ci->title);
	put_str8(b, ci->workspace);
	aptix_index__conv_usage_encode(b, ci);
	return seal(b);
}

/*
 * @return 0; 1 for a version 1 record, whose counts, newest snapshot and
 * failure are left to fill_legacy(); APTIX_ECORRUPT.
 */
static int decode_conv(aptix_conv_info *ci, const char *id, size_t idlen,
		       const void *val, size_t vlen)
{
	const unsigned char *p = val, *end = p + vlen;
	int v2, v3;

	memset(ci, 0, sizeof(*ci));
	if (idlen >= sizeof(ci->id))
		idlen = sizeof(ci->id) - 1;
	memcpy(ci->id, id, idlen);
	ci->id[idlen] = '\0';
	if (vlen < 56 || p[0] < REC_VERSION || p[0] > CONV_VERSION)
		return corrupt_record(ci->id);
	v2 = p[0] >= CONV_V2;
	v3 = p[0] >= CONV_VERSION;
	if (v2 && vlen < 56 + 8 + 72 + (v3 ? 2 + CRC_LEN : 0))
		return corrupt_record(ci->id);
	if (v3) {
		if (crc32(0L, p, (uInt)(vlen - CRC_LEN)) !=
		    aptix__get_be32(p + vlen - CRC_LEN))
			return corrupt_record(ci->id);
		end -= CRC_LEN;
	}
	ci->has_head = p[1] & 1;
	ci->archived = (p[1] & 2) != 0;
	ci->last_status = (aptix_session_status)p[2];
	memcpy(ci->head.id, p + 4, 32);
	ci->created_at = (int64_t)aptix__get_be64(p + 36);
	ci->updated_at = (int64_t)aptix__get_be64(p + 44);
	ci->turns = aptix__get_be32(p + 52);
	p += 56;
	if (v2) {
		ci->has_failed = (((const unsigned char *)val)[1] & 4) != 0;
		ci->titled = (((const unsigned char *)val)[1] & 8) != 0;
		ci->has_last = (((const unsigned char *)val)[1] & 16) != 0;
		ci->last_turn_status =
			(aptix_turn_status)((const unsigned char *)val)[3];
		ci->committed = aptix__get_be32(p);
		ci->failed = aptix__get_be32(p + 4);
		memcpy(ci->last.id, p + 8, 32);
		memcpy(ci->last_failed.id, p + 40, 32);
		ci->failed_at = (int64_t)aptix__get_be64(p + 72);
		p += 80;
	}
	if (get_str8(ci->title, sizeof(ci->title), &p, end) ||
	    get_str8(ci->workspace, sizeof(ci->workspace), &p, end) ||
	    (v3 && (aptix_index__conv_usage_decode(ci, &p, end) < 0 ||
		    p != end)))
		return corrupt_record(ci->id);
	return v2 ? 0 : 1;
}

int aptix_session_info_failed(const aptix_session_info *s)
{
	return s->status == APTIX_SESSION_FAILED ||
		s->turn_status == APTIX_TURN_FAILED;
}

/* Count a newly indexed session into its conversation's record. */
static void conv_count(aptix_conv_info *ci, const aptix_session_info *si)
{
	if (!ci->turns) {	/* the sums start with the first session */
		ci->has_usage = 1;
		ci->nusage = 0;
	}
	aptix_conv_usage_add(ci, si);
	ci->turns++;
	if (aptix_session_info_failed(si)) {
		ci->failed++;
		if (!ci->has_failed || si->created_at >= ci->failed_at) {
			ci->has_failed = 1;
			ci->last_failed = si->id;
			ci->failed_at = si->created_at;
		}
	} else {
		ci->committed++;
	}
	if (!ci->has_last || si->created_at >= ci->updated_at) {
		ci->has_last = 1;
		ci->last = si->id;
		ci->updated_at = si->created_at;
		ci->last_status = si->status;
		ci->last_turn_status = si->turn_status;
	}
}

/*
 * The turn's line of the rolling summary, when its session commits it:
 * the start of its instruction (in instr) and of its answer.
 */
static int odb_read(aptix_buf *out, aptix_otype *type, void *ctx,
		    const aptix_oid *id)
{
	return aptix_odb_read(out, type, ctx, id, 0);
}

static int odb_size(size_t *size, void *ctx, const aptix_oid *id)
{
	aptix_otype type;

	return aptix_odb_read_header(size, &type, ctx, id);
}

void aptix_index__odb_reader(struct aptix_index_reader *rd, aptix_odb *odb)
{
	rd->read = odb_read;
	rd->size = odb_size;
	rd->ctx = odb;
}

static int prepare_line(struct aptix_index_session_op *op,
			const struct aptix_index_reader *rd,
			const aptix_turn *t, const aptix_buf *instr)
{
	aptix_buf a = APTIX_BUF_INIT;
	aptix_otype type;
	int have = 0;

	if (!aptix_session_status_ok(op->session.status))
		return 0;
	if (!aptix_oid_is_zero(&t->answer)) {
		have = rd->read(&a, &type, rd->ctx, &t->answer) == 0 &&
			type == APTIX_OBJ_BLOB;
		aptix_error_clear();	/* purged since: no answer line */
	}
	aptix_index__line_set(&op->line, t->seq, op->summary, instr->ptr,
			      instr->len, have ? a.ptr : NULL,
			      have ? a.len : 0);
	aptix_buf_release(&a);
	return 0;
}

/* A session whose parent or turn is not what it must be: EINVALID. */
static int bad_link(const char *what, const aptix_oid *id, const char *how)
{
	aptix_error_set(APTIX_ERROR_OBJECT, "%s '%s' of the session is %s",
			what, aptix_oid_hex(id), how);
	return APTIX_EINVALID;
}

int aptix_index__prepare(struct aptix_index_session_op *op,
			 const struct aptix_index_reader *rd,
			 int strict, const aptix_oid *id, const void *data,
			 size_t len, const aptix_turn *turn)
{
	aptix_buf buf = APTIX_BUF_INIT;
	aptix_otype type;
	aptix_turn own;
	const aptix_turn *t = turn;
	int r;

	aptix_turn_init(&own);
	op->id = *id;
	memset(&op->line, 0, sizeof(op->line));
	memset(&op->usage, 0, sizeof(op->usage));
	if ((r = aptix_session_parse(&op->session, data, len)) < 0)
		return r == APTIX_ECORRUPT ? APTIX_EINVALID : r;
	if ((r = aptix_conv_check_id(op->session.conversation)) < 0)
		return APTIX_EINVALID;
	if (op->session.has_parent) {
		r = rd->read(&buf, &type, rd->ctx,
					  &op->session.parent);
		if (strict && r < 0 && r != APTIX_ENOTFOUND)
			goto done;	/* unreadable (a server gone): its error */
		if (strict && (r < 0 || type != APTIX_OBJ_SESSION)) {
			r = bad_link("parent", &op->session.parent,
				     r < 0 ? "missing" : "not a session");
			goto done;
		}
	}
	if (!t) {
		r = rd->read(&buf, &type, rd->ctx, &op->session.turn);
		if (r == 0 && type == APTIX_OBJ_TURN &&
		    aptix_turn_parse(&own, buf.ptr, buf.len) == 0)
			t = &own;
	}
	if (!t) {
		if (strict) {
			r = bad_link("turn", &op->session.turn,
				     r < 0 ? "missing" : "not a valid turn");
			goto done;
		}
		op->turn_status = APTIX_TURN_FAILED;
		r = 0;
		goto done;
	}
	op->turn_status = t->status;
	aptix_index__usage_from_turn(&op->usage, t);
	if (strict && strcmp(t->conversation, op->session.conversation) &&
	    !op->session.forked_from) {
		aptix_error_set(APTIX_ERROR_OBJECT, "the turn belongs to "
				"conversation '%s', the session to '%s'",
				t->conversation, op->session.conversation);
		r = APTIX_EINVALID;
		goto done;
	}
	r = rd->read(&buf, &type, rd->ctx, &t->instruction);
	if (r == 0 && type == APTIX_OBJ_BLOB) {
		aptix_summary_line(op->summary, APTIX_SUMMARY_MAX, buf.ptr,
				   buf.len);
		if ((r = aptix_index__delta_from_turn(&op->delta, rd, t,
						      buf.len)) < 0 ||
		    (r = prepare_line(op, rd, t, &buf)) < 0)
			goto done;
	} else if (!strict) {
		/*
		 * purged since: the turn keeps its place in the chain (its
		 * sizes unknown, as fsck --full allows) and the summary
		 */
		aptix_error_clear();
		aptix_buf_set(&buf, "[purged]", 8);
		snprintf(op->summary, sizeof(op->summary), "[purged]");
		if ((r = aptix_index__delta_from_turn(&op->delta, rd, t,
						      0)) < 0 ||
		    (r = prepare_line(op, rd, t, &buf)) < 0)
			goto done;
		op->delta.sizes_unknown = 1;
	} else {
		aptix_error_set(APTIX_ERROR_OBJECT, "instruction '%s' of the "
				"turn is missing",
				aptix_oid_hex(&t->instruction));
		r = APTIX_EINVALID;
		goto done;
	}
	r = 0;
done:
	if (r == 0 && op->want_search &&
	    (r = aptix_index__search_prepare(&op->search, rd, &op->session,
					     t)) == 0)
		op->search_ready = 1;
	aptix_turn_release(&own);
	aptix_buf_release(&buf);
	return r;
}

/* What op's turn spent, into the record's fields. */
static void usage_info(aptix_session_info *si,
		       const struct aptix_index_usage *u)
{
	si->has_usage = u->known;
	si->sends_results = u->sends_results;
	si->tool_calls = u->tool_calls;
	si->usage = u->u;
	memcpy(si->model, u->model, sizeof(si->model));
}

static int usage_differs(const aptix_session_info *a,
			 const aptix_session_info *b, int repeats)
{
	const aptix_usage *x = &a->usage, *y = &b->usage;

	if (a->repeats != repeats || a->has_usage != b->has_usage)
		return 1;
	return a->has_usage &&
		(strcmp(a->model, b->model) ||
		 a->sends_results != b->sends_results ||
		 a->tool_calls != b->tool_calls ||
		 x->input_tokens != y->input_tokens ||
		 x->cached_tokens != y->cached_tokens ||
		 x->output_tokens != y->output_tokens ||
		 x->reasoning_tokens != y->reasoning_tokens ||
		 x->total_tokens != y->total_tokens ||
		 x->model_requests != y->model_requests);
}

int aptix_index__verify_fields(const aptix_oid *id, const aptix_buf *rec,
			       const aptix_buf *prec,
			       const struct aptix_index_session_op *op)
{
	aptix_session_info have, parent, want;
	uint32_t generation = 1;
	int r, repeats = 0;

	if ((r = decode_session(&have, id, rec->ptr, rec->len)) < 0)
		return r;
	if (prec && prec->len) {
		if ((r = decode_session(&parent, &op->session.parent,
					prec->ptr, prec->len)) < 0)
			return r;
		generation = parent.generation + 1;
		repeats = !aptix_oid_cmp(&parent.turn, &op->session.turn);
	}
	memset(&want, 0, sizeof(want));
	usage_info(&want, &op->usage);
	if (strcmp(have.summary, op->summary))
		aptix_error_set(APTIX_ERROR_REPOSITORY, "summary is '%s' in "
				"the index record of %s, '%s' from its "
				"instruction", have.summary, aptix_oid_hex(id),
				op->summary);
	else if (have.turn_status != op->turn_status)
		aptix_error_set(APTIX_ERROR_REPOSITORY, "turn status is %d "
				"in the index record of %s, %d in its turn",
				(int)have.turn_status, aptix_oid_hex(id),
				(int)op->turn_status);
	else if (have.generation != generation)
		aptix_error_set(APTIX_ERROR_REPOSITORY, "generation is %lu "
				"in the index record of %s, %lu from its "
				"parent's", (unsigned long)have.generation,
				aptix_oid_hex(id), (unsigned long)generation);
	else if (*(const unsigned char *)rec->ptr >= SESSION_V5 &&
		 usage_differs(&have, &want, repeats))
		aptix_error_set(APTIX_ERROR_REPOSITORY, "usage in the index "
				"record of %s is not what its turn says "
				"(record: '%s', %ld in, %ld cached, %ld out; "
				"turn: '%s', %ld in, %ld cached, %ld out)",
				aptix_oid_hex(id), have.model,
				have.usage.input_tokens,
				have.usage.cached_tokens,
				have.usage.output_tokens, want.model,
				want.usage.input_tokens,
				want.usage.cached_tokens,
				want.usage.output_tokens);
	else
		return 0;
	return 3;
}

/*
 * *exists: 0 unknown, 1 known, 2 known by a version 1 record (kept at
 * version 1 by conv_store until reindex).
 */
static int conv_load(aptix_conv_info *ci, aptix_backend_txn *tx,
		     const char *conv, int *exists)
{
	aptix_index_backend *ix = tx->backend->index;
	aptix_buf v = APTIX_BUF_INIT;
	int r = ix->get(&v, ix, tx, APTIX_INDEX_CONVS, conv, strlen(conv));

	*exists = r == 0;
	if (r == 0) {
		r = decode_conv(ci, conv, strlen(conv), v.ptr, v.len);
		if (r == 1) {
			*exists = 2;
			r = 0;
		}
	} else if (r == APTIX_ENOTFOUND) {
		memset(ci, 0, sizeof(*ci));
		snprintf(ci->id, sizeof(ci->id), "%s", conv);
		r = 0;
	}
	aptix_buf_release(&v);
	return r;
}

/*
 * The record ci, and its key in the recency index (was: its update time
 * when loaded, when it existed).
 */
static int conv_store(aptix_backend_txn *tx, const aptix_conv_info *ci,
		      int exists, int64_t was)
{
	aptix_index_backend *ix = tx->backend->index;
	aptix_buf v = APTIX_BUF_INIT;
	int r = exists == 2 ? encode_conv_v1(&v, ci) : encode_conv(&v, ci);

	if (!r)
		r = ix->put(ix, tx, APTIX_INDEX_CONVS, ci->id, strlen(ci->id),
			    v.ptr, v.len);
	if (!r)
		r = aptix_index__recency_move(tx, ci->id, exists != 0, was, 1,
					      ci->updated_at);
	aptix_buf_release(&v);
	return r;
}

static int wget_rec(aptix_buf *out, const unsigned char id[32], void *ctx)
{
	int r = aptix_index__wget_record(out, ctx, id);

	return r == APTIX_ENOTFOUND ? corrupt_record("an ancestor") : r;
}

int aptix_index__apply_session(aptix_backend_txn *tx,
			       const struct aptix_index_session_op *op)
{
	aptix_index_backend *ix = tx->backend->index;
	aptix_store_wtxn *w = aptix_backend_kv_wtxn(tx);
	const aptix_session *ss = &op->session;
	aptix_session_info si, pi;
	aptix_conv_info ci;
	aptix_buf v = APTIX_BUF_INIT, psec = APTIX_BUF_INIT;
	aptix_buf prec = APTIX_BUF_INIT;
	unsigned char ckey[72], loc[LOC_LEN];
	const unsigned char *sec;
	size_t seclen;
	int r, exists, parent_known = 1;
	int64_t was;

	r = ix->get(&v, ix, tx, APTIX_INDEX_SESSIONS, op->id.id, 32);
	if (r == 0 || r != APTIX_ENOTFOUND)
		goto done;	/* indexed already (or an error) */
	memset(&si, 0, sizeof(si));
	si.id = op->id;
	si.parent = ss->parent;
	si.has_parent = ss->has_parent;
	si.turn = ss->turn;
	si.status = ss->status;
	si.turn_status = op->turn_status;
	si.created_at = ss->created_at;
	si.generation = 1;
	snprintf(si.conversation, sizeof(si.conversation), "%s",
		 ss->conversation);
	snprintf(si.summary, sizeof(si.summary), "%s", op->summary);
	usage_info(&si, &op->usage);
	if (ss->has_parent) {
		r = aptix_index__wget_record(&v, tx, ss->parent.id);
		if (r == APTIX_ENOTFOUND) {
			aptix_error_set(APTIX_ERROR_REPOSITORY, "parent '%s' "
					"is not in the index: run 'aptix "
					"reindex'", aptix_oid_hex(&ss->parent));
			r = APTIX_ECORRUPT;
		}
		if (r < 0 || (r = decode_session(&pi, &ss->parent, v.ptr,
						 v.len)) < 0)
			goto done;
		r = aptix_index__chain_section(&sec, &seclen, v.ptr, v.len);
		if (r < 0)
			goto done;
		if (r == 0)
			aptix_buf_put(&psec, sec, seclen);
		parent_known = r == 0;
		aptix_buf_put(&prec, v.ptr, v.len);
		si.generation = pi.generation + 1;
		si.repeats = !aptix_oid_cmp(&pi.turn, &ss->turn);
		timeline_key(ckey, pi.created_at, ss->parent.id);
		memcpy(ckey + 40, op->id.id, 32);
		if ((r = ix->put(ix, tx, APTIX_INDEX_CHILDREN, ckey, 72, "",
				 0)) < 0)
			goto done;
	}
	aptix_buf_clear(&v);
	if ((r = encode_session(&v, &si)) < 0 ||
	    (r = aptix_index__rolling_encode(&v, ss->has_parent ?
					     &ss->parent : NULL, &prec,
					     &op->line, wget_rec, tx, 1)) < 0 ||
	    (r = aptix_index__chain_encode(&v, ss->has_parent ?
					   (const unsigned char *)psec.ptr :
					   NULL, psec.len, parent_known,
					   aptix_session_status_ok(ss->status),
					   &op->delta,
					   APTIX_INDEX_CHAIN_FP, 1)) < 0 ||
	    (r = seal(&v)) < 0 ||
	    /* the layout above: an older aptix must refuse the store (a
	     * reindex writes no object that would say so); the format
	     * is a key-value store's layout */
	    (w && (r = aptix_odb_store_raise_format(w, INDEX_FORMAT)) < 0))
		goto done;
	timeline_key(ckey, si.created_at, op->id.id);
	loc[0] = SESSION_LOC;
	memcpy(loc + 1, ckey, 8);
	if ((r = ix->put(ix, tx, APTIX_INDEX_TIMELINE, ckey, 40, v.ptr,
			 v.len)) < 0 ||
	    (r = ix->put(ix, tx, APTIX_INDEX_SESSIONS, op->id.id, 32, loc,
			 LOC_LEN)) < 0)
		goto done;
	if ((r = conv_load(&ci, tx, ss->conversation, &exists)) < 0)
		goto done;
	was = ci.updated_at;
	if (!exists || !ci.turns) {
		ci.created_at = ss->created_at;
		if (!ci.titled)
			copy_cut(ci.title, sizeof(ci.title),
				 ss->title ? ss->title : op->summary);
		if (ss->workspace)
			copy_cut(ci.workspace, sizeof(ci.workspace),
				 ss->workspace);
	}
	conv_count(&ci, &si);
	r = conv_store(tx, &ci, exists, was);
done:
	aptix_buf_release(&v);
	aptix_buf_release(&psec);
	aptix_buf_release(&prec);
	return r;
}

int aptix_index__set_head(aptix_backend_txn *tx, const char *conv,
			  const aptix_oid *head, int64_t now UNUSED)
{
	aptix_index_backend *ix = tx->backend->index;
	aptix_conv_info ci;
	int r, exists;

	if (!head) {
		/*
		 * The ref was deleted: the conversation goes from the
		 * listings (its sessions stay, reachable from the reflog);
		 * reindex keeps it gone (rebuild_fn). A new turn in it
		 * starts a new record.
		 */
		if ((r = conv_load(&ci, tx, conv, &exists)) < 0 || !exists)
			return r;
		if ((r = ix->del(ix, tx, APTIX_INDEX_CONVS, conv,
				 strlen(conv))) < 0)
			return r;
		return aptix_index__recency_move(tx, conv, 1, ci.updated_at,
						 0, 0);
	}
	if ((r = conv_load(&ci, tx, conv, &exists)) < 0)
		return r;
	ci.head = *head;
	ci.has_head = 1;
	return conv_store(tx, &ci, exists, ci.updated_at);
}

/* --- Forgetting sessions (gc) ---------------------------------------- */

/* What gc's prune removes from the index, and what it must recount. */
struct forget {
	aptix_backend_txn *tx;
	unsigned char prefix[40];	/* children of this timeline key */
	aptix_buf keys;			/* ... found, 72 bytes each */
	size_t nkeys;
	aptix_conv_info *convs;		/* records to count again */
	size_t nconvs, aconvs;
	struct aptix__smap byconv;	/* conversation -> index in convs + 1 */
	uint32_t *ords;			/* their search ordinals */
	size_t nords, aords;
};

static int child_key(const void *k, size_t kl, const void *v UNUSED,
		     size_t vl UNUSED, void *p)
{
	struct forget *f = p;

	if (kl != 72 || memcmp(k, f->prefix, 40))
		return APTIX_ITEROVER;
	f->nkeys++;
	return aptix_buf_put(&f->keys, k, kl);
}

/* The children keys of the session whose timeline key is f->prefix. */
static int forget_children(struct forget *f)
{
	aptix_index_backend *ix = f->tx->backend->index;
	unsigned char start[72];
	size_t i;
	int r;

	memcpy(start, f->prefix, 40);
	memset(start + 40, 0xff, 32);
	aptix_buf_clear(&f->keys);
	f->nkeys = 0;
	r = ix->iterate(ix, f->tx, APTIX_INDEX_CHILDREN, start, 72,
			APTIX_INDEX_ITER_REVERSE, child_key, f);
	if (r == APTIX_ITEROVER)
		r = 0;
	for (i = 0; i < f->nkeys && !r; i++)
		r = ix->del(ix, f->tx, APTIX_INDEX_CHILDREN,
			    f->keys.ptr + i * 72, 72);
	return r;
}

/* Its conversation's record is counted again (when it has one). */
static int forget_conv(struct forget *f, const char *conv)
{
	struct aptix__smap_ent *e;
	aptix_conv_info ci;
	int r, exists;

	if (aptix__smap_find(&f->byconv, conv, strlen(conv)))
		return 0;
	if ((r = conv_load(&ci, f->tx, conv, &exists)) < 0 || !exists)
		return r;
	if (aptix__grow(&f->convs, &f->aconvs, f->nconvs, sizeof(*f->convs),
			8) < 0 ||
	    !(e = aptix__smap_get(&f->byconv, conv, strlen(conv))))
		return APTIX_ERROR;
	f->convs[f->nconvs++] = ci;
	e->val = (uint32_t)f->nconvs;
	return 0;
}

/* Session id's records: its own, its parent's child key, its children's. */
static int forget_one(struct forget *f, const aptix_oid *id)
{
	aptix_backend_txn *tx = f->tx;
	aptix_index_backend *ix = tx->backend->index;
	aptix_session_info si, pi;
	aptix_buf v = APTIX_BUF_INIT;
	unsigned char key[72];
	uint32_t ord = UINT32_MAX;
	int r = aptix_index__wget_record(&v, tx, id->id);

	if (r < 0 || (r = decode_session(&si, id, v.ptr, v.len)) < 0)
		goto done;
	timeline_key(f->prefix, si.created_at, id->id);
	if ((r = forget_children(f)) < 0)
		goto done;
	r = ix->del(ix, tx, APTIX_INDEX_TIMELINE, f->prefix, 40);
	if (r < 0 && r != APTIX_ENOTFOUND)
		goto done;
	if ((r = ix->del(ix, tx, APTIX_INDEX_SESSIONS, id->id, 32)) < 0)
		goto done;
	/* a parent that went before it took this key with its children */
	if (si.has_parent &&
	    aptix_index__wget_record(&v, tx, si.parent.id) == 0 &&
	    decode_session(&pi, &si.parent, v.ptr, v.len) == 0) {
		timeline_key(key, pi.created_at, si.parent.id);
		memcpy(key + 40, id->id, 32);
		if ((r = ix->del(ix, tx, APTIX_INDEX_CHILDREN, key, 72)) < 0 &&
		    r != APTIX_ENOTFOUND)
			goto done;
	}
	aptix_error_clear();
	if ((r = aptix_index__search_forget(tx, id, &ord)) == 0 &&
	    ord != UINT32_MAX) {
		if (aptix__grow(&f->ords, &f->aords, f->nords,
				sizeof(*f->ords), 64) < 0)
			r = APTIX_ERROR;
		else
			f->ords[f->nords++] = ord;
	}
	if (r == 0)
		r = forget_conv(f, si.conversation);
done:
	r = aptix__absent_ok(r);	/* not indexed: nothing to forget */
	aptix_buf_release(&v);
	return r;
}

/*
 * conv_count() of the sessions newest first: of two sessions of the
 * same time, the one counted first (the greater id) stays the newest,
 * as when they are counted oldest first.
 */
static void recount_one(aptix_conv_info *ci, const aptix_session_info *si)
{
	aptix_conv_info keep = *ci;

	conv_count(ci, si);
	if (keep.has_last && si->created_at == keep.updated_at) {
		ci->last = keep.last;
		ci->last_status = keep.last_status;
		ci->last_turn_status = keep.last_turn_status;
	}
	if (keep.has_failed && si->created_at == keep.failed_at)
		ci->last_failed = keep.last_failed;
	ci->created_at = si->created_at;	/* the oldest, at the end */
}

static int recount_cb(const void *k, size_t kl, const void *v, size_t vl,
		      void *p)
{
	struct forget *f = p;
	const struct aptix__smap_ent *e;
	aptix_session_info si;
	aptix_oid id;

	if (kl != 40)
		return 0;
	memcpy(id.id, (const unsigned char *)k + 8, 32);
	if (decode_session(&si, &id, v, vl) < 0) {
		aptix_error_clear();	/* fsck's business */
		return 0;
	}
	e = aptix__smap_find(&f->byconv, si.conversation,
			     strlen(si.conversation));
	if (e)
		recount_one(&f->convs[e->val - 1], &si);
	return 0;
}

/*
 * The records of the conversations that lost sessions, counted again
 * from the sessions left (one walk of the timeline); one with none left
 * goes, as reindex would leave it.
 */
static int recount_convs(struct forget *f)
{
	aptix_index_backend *ix = f->tx->backend->index;
	int64_t *was;
	size_t i;
	int r;

	if (!f->nconvs)
		return 0;
	if (!(was = aptix__calloc(f->nconvs, sizeof(*was))))
		return APTIX_ERROR;
	for (i = 0; i < f->nconvs; i++) {
		aptix_conv_info *ci = &f->convs[i];

		was[i] = ci->updated_at;
		ci->turns = ci->committed = ci->failed = 0;
		ci->has_last = ci->has_failed = 0;
		ci->has_usage = 0;
		ci->nusage = 0;
		memset(ci->usage, 0, sizeof(ci->usage));
	}
	r = ix->iterate(ix, f->tx, APTIX_INDEX_TIMELINE, NULL, 0,
			APTIX_INDEX_ITER_REVERSE, recount_cb, f);
	for (i = 0; i < f->nconvs && !r; i++) {
		aptix_conv_info *ci = &f->convs[i];

		if (ci->turns) {
			r = conv_store(f->tx, ci, 1, was[i]);
			continue;
		}
		if ((r = ix->del(ix, f->tx, APTIX_INDEX_CONVS, ci->id,
				 strlen(ci->id))) == 0)
			r = aptix_index__recency_move(f->tx, ci->id, 1, was[i],
						      0, 0);
	}
	free(was);
	return r;
}

int aptix_index__forget_sessions(aptix_backend_txn *tx, const aptix_oid *ids,
				 size_t n)
{
	struct forget f;
	size_t i;
	int r = 0;

	memset(&f, 0, sizeof(f));
	f.tx = tx;
	aptix_buf_init(&f.keys, 0);
	for (i = 0; i < n && !r; i++)
		r = forget_one(&f, &ids[i]);
	if (!r)
		r = recount_convs(&f);
	/* their words: no posting names a session gone */
	if (!r)
		r = aptix_index__search_drop(tx, f.ords, f.nords);
	aptix_buf_release(&f.keys);
	free(f.convs);
	aptix__smap_release(&f.byconv);
	free(f.ords);
	return r;
}

/*
 * conv_load() of a conversation that must exist (want 1: else
 * APTIX_ENOTFOUND) or must not (want 0: else APTIX_EEXISTS).
 */
static int conv_load_as(aptix_conv_info *ci, aptix_backend_txn *tx,
			const char *conv, int *exists, int want)
{
	int r = conv_load(ci, tx, conv, exists);

	if (r < 0 || !*exists == !want)
		return r;
	aptix_error_set(APTIX_ERROR_REPOSITORY, "conversation '%s' %s", conv,
			want ? "not found" : "exists");
	return want ? APTIX_ENOTFOUND : APTIX_EEXISTS;
}

/*
 * A conversation started with no turn yet (txn.c): its record alone,
 * created (ms) and workspace; the first turn fills it in. reindex keeps
 * it (rebuild_fn).
 */
int aptix_index__conv_create(aptix_backend_txn *tx, const char *conv,
			     const char *workspace, int64_t created)
{
	aptix_conv_info ci;
	int exists, r = conv_load_as(&ci, tx, conv, &exists, 0);

	if (r < 0)
		return r;
	ci.created_at = ci.updated_at = created;
	copy_cut(ci.workspace, sizeof(ci.workspace),
		 workspace ? workspace : "");
	return conv_store(tx, &ci, 0, 0);
}

/* A record with no snapshot at all: a conversation started, never run. */
static int conv_empty(const aptix_conv_info *ci)
{
	return !ci->has_head && !ci->has_last && !ci->turns;
}

/*
 * What the user says of a conversation (txn.c): title NULL keeps it,
 * archived < 0 keeps the flag.
 */
int aptix_index__conv_meta(aptix_backend_txn *tx, const char *conv,
			   const char *title, int archived)
{
	aptix_conv_info ci;
	int r, exists;

	if ((r = conv_load_as(&ci, tx, conv, &exists, 1)) < 0)
		return r;
	if (title) {
		copy_cut(ci.title, sizeof(ci.title), title);
		ci.titled = 1;
	}
	if (archived >= 0)
		ci.archived = archived != 0;
	return conv_store(tx, &ci, exists, ci.updated_at);
}

struct session_view {
	aptix_session_info *out;
	const aptix_oid *id;
};

static int session_view_cb(const void *val, size_t vlen, void *payload)
{
	struct session_view *sv = payload;

	return decode_session(sv->out, sv->id, val, vlen);
}

int aptix_index_session(aptix_session_info *out, aptix_repo *repo,
			const aptix_oid *id)
{
	struct session_view sv;
	int r;

	memset(out, 0, sizeof(*out));
	sv.out = out;
	sv.id = id;
	r = aptix_index__view_record(repo->backend->index, id->id, session_view_cb,
				     &sv);

	if (r == APTIX_ENOTFOUND)
		aptix_error_set(APTIX_ERROR_REPOSITORY, "session '%s' is not "
				"in the index", aptix_oid_hex(id));
	return r;
}

/* The created time of a session, from where the sessions table keeps it. */
static int time_cb(const void *val, size_t vlen, void *payload)
{
	const unsigned char *p = val;

	if (is_loc(val, vlen)) {
		*(int64_t *)payload = (int64_t)aptix__get_be64(p + 1);
		return 0;
	}
	if (vlen < 80)
		return corrupt_record("a session");
	*(int64_t *)payload = (int64_t)aptix__get_be64(p + 68);
	return 0;
}

int aptix_index_session_time(int64_t *out, aptix_repo *repo,
			     const aptix_oid *id)
{
	aptix_index_backend *ix = repo->backend->index;
	int r = ix->view(ix, APTIX_INDEX_SESSIONS, id->id, 32, time_cb, out);

	if (r == APTIX_ENOTFOUND)
		aptix_error_clear();
	return r;
}

int aptix_index_is_ancestor(aptix_repo *repo, const aptix_oid *ancestor,
			    const aptix_oid *descendant)
{
	aptix_session_info a, si;
	aptix_oid id = *descendant;
	int r;

	if ((r = aptix_index_session(&a, repo, ancestor)) < 0)
		return r;
	/* the first parent chain, down to the ancestor's generation */
	for (;;) {
		if (!aptix_oid_cmp(&id, ancestor))
			return 1;
		if ((r = aptix_index_session(&si, repo, &id)) < 0)
			return r;
		if (!si.has_parent || si.generation <= a.generation)
			return 0;
		id = si.parent;
	}
}

struct sess_walk {
	aptix_session_info_cb cb;
	void *payload;
	int stopped;
	int64_t since;		/* older ones are left out; 0: none */
};

/* The record of session sid to the walk's callback. */
static int sess_emit(struct sess_walk *sw, const unsigned char sid[32],
		     const void *val, size_t vlen)
{
	aptix_session_info si;
	aptix_oid id;
	int r;

	memcpy(id.id, sid, 32);
	if ((r = decode_session(&si, &id, val, vlen)) < 0)
		return r;
	if (sw->since && si.created_at < sw->since)
		return 0;
	r = sw->cb(&si, sw->payload);
	sw->stopped = r == APTIX_ITEROVER;
	return r;
}

static int sess_walk_cb(const void *key, size_t klen, const void *val,
			size_t vlen, void *payload)
{
	if (klen != 32)
		return corrupt_record("a session");
	if (is_loc(val, vlen))
		return 0;	/* in the timeline: seen there */
	return sess_emit(payload, key, val, vlen);
}

static int timeline_walk_cb(const void *key, size_t klen, const void *val,
			    size_t vlen, void *payload)
{
	if (klen != 40)
		return corrupt_record("the timeline");
	if (!vlen)
		return 0;	/* in the sessions table (format 4) */
	return sess_emit(payload, (const unsigned char *)key + 8, val, vlen);
}

/*
 * No record is kept in place: the store was made, or reindexed, so (and
 * stays so: the answer yes is kept in the repo).
 */
static int all_in_timeline(aptix_repo *repo)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r, yes;

	if (__atomic_load_n(&repo->index_in_timeline, __ATOMIC_RELAXED))
		return 1;
	r = repo->backend->meta_get(&v, repo->backend, NULL, LAYOUT_KEY);
	yes = r == 0 && v.len == strlen(APTIX_INDEX_LAYOUT_TIMELINE) &&
		!memcmp(v.ptr, APTIX_INDEX_LAYOUT_TIMELINE, v.len);
	if (r < 0)
		aptix_error_clear();
	aptix_buf_release(&v);
	if (yes)
		__atomic_store_n(&repo->index_in_timeline, 1, __ATOMIC_RELAXED);
	return yes;
}

/*
 * The timeline's records in time order, then those kept in place (a
 * walk of the sessions table, unless the store says there are none).
 */
int aptix_index_foreach_session(aptix_repo *repo, aptix_session_info_cb cb,
				void *payload)
{
	return aptix_index_foreach_session_since(repo, 0, cb, payload);
}

int aptix_index__timeline_from(aptix_repo *repo, const unsigned char *key,
			       aptix_session_info_cb cb, void *payload)
{
	struct sess_walk sw = { cb, payload, 0, 0 };

	return index_iter(repo, APTIX_INDEX_TIMELINE, 0, key, key ? 40 : 0,
			  timeline_walk_cb, &sw);
}

/*
 * The timeline's keys start with the created time (big-endian): the
 * walk starts at since. A time before 1970 sorts after every later one
 * there, so those are still walked, and left out by sess_emit().
 */
int aptix_index_foreach_session_since(aptix_repo *repo, int64_t since,
				      aptix_session_info_cb cb, void *payload)
{
	struct sess_walk sw = { cb, payload, 0, since };
	unsigned char start[8];
	int r;

	aptix__put_be64(start, (uint64_t)since);
	r = index_iter(repo, APTIX_INDEX_TIMELINE, 0, since > 0 ? start : NULL,
		       since > 0 ? sizeof(start) : 0, timeline_walk_cb, &sw);

	if (r < 0 || sw.stopped || all_in_timeline(repo))
		return r;
	return index_iter(repo, APTIX_INDEX_SESSIONS, 0, NULL, 0,
				 sess_walk_cb, &sw);
}

struct origin_walk {
	const char *conv;
	int64_t at;
	aptix_session_info first;
	int found;
};

static int origin_cb(const aptix_session_info *si, void *payload)
{
	struct origin_walk *ow = payload;

	if (si->created_at > ow->at)
		return APTIX_ITEROVER;	/* past the conversation's start */
	if (strcmp(si->conversation, ow->conv))
		return 0;
	ow->first = *si;
	ow->found = 1;
	return APTIX_ITEROVER;
}

int aptix_index_conversation_origin(aptix_conv_origin *out, aptix_repo *repo,
				    const aptix_conv_info *ci)
{
	struct origin_walk ow;
	aptix_session_info parent;
	int r;

	memset(out, 0, sizeof(*out));
	memset(&ow, 0, sizeof(ow));
	ow.conv = ci->id;
	ow.at = ci->created_at;
	r = aptix_index_foreach_session_since(repo, ci->created_at > 0 ?
					      ci->created_at : 1, origin_cb,
					      &ow);
	if (r < 0 && r != APTIX_ITEROVER)
		return r;
	if (!ow.found) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the first session "
				"of conversation '%s' is not in the index",
				ci->id);
		return APTIX_ENOTFOUND;
	}
	if (!ow.first.has_parent)
		return 0;
	if ((r = aptix_index_session(&parent, repo, &ow.first.parent)) < 0)
		return r;
	if (!strcmp(parent.conversation, ci->id))
		return 0;	/* a parent of its own: not a fork */
	out->forked = 1;
	out->from = ow.first.parent;
	memcpy(out->conversation, parent.conversation,
	       sizeof(out->conversation));
	return 0;
}

struct layout_check {
	aptix_repo *repo;
	aptix_index_problem_cb cb;
	void *payload;
	int problems;
	int all_in_timeline;	/* the meta key says so */
};

static void layout_problem(struct layout_check *lc, const void *id,
			   const char *what)
{
	aptix_oid oid;

	memcpy(oid.id, id, 32);
	lc->cb(&oid, what, lc->payload);
	lc->problems++;
}

static int exists_cb(const void *val UNUSED, size_t vlen, void *payload)
{
	*(size_t *)payload = vlen;
	return 0;
}

static int layout_sessions_cb(const void *key, size_t klen, const void *val,
			      size_t vlen, void *payload)
{
	struct layout_check *lc = payload;
	aptix_index_backend *ix = lc->repo->backend->index;
	unsigned char tk[40];
	size_t len = 0;
	int r;

	if (klen != 32)
		return 0;
	if (!is_loc(val, vlen)) {	/* the record itself */
		if (lc->all_in_timeline)	/* which listings skip */
			layout_problem(lc, key, "a record kept in the "
				       "sessions table, which the store says "
				       "holds none");
		return 0;
	}
	memcpy(tk, (const unsigned char *)val + 1, 8);
	memcpy(tk + 8, key, 32);
	r = ix->view(ix, APTIX_INDEX_TIMELINE, tk, 40, exists_cb, &len);
	if (r == APTIX_ENOTFOUND || (!r && !len))
		layout_problem(lc, key, "its record is missing from the "
			       "timeline");
	return r == APTIX_ENOTFOUND ? 0 : r;
}

static int layout_timeline_cb(const void *key, size_t klen,
			      const void *val UNUSED, size_t vlen,
			      void *payload)
{
	struct layout_check *lc = payload;
	aptix_index_backend *ix = lc->repo->backend->index;
	const unsigned char *id = (const unsigned char *)key + 8;
	aptix_buf loc = APTIX_BUF_INIT;
	int r;

	if (klen != 40 || !vlen)
		return 0;
	r = ix->get(&loc, ix, NULL, APTIX_INDEX_SESSIONS, id, 32);
	if (r == APTIX_ENOTFOUND || (!r && (!is_loc(loc.ptr, loc.len) ||
					    memcmp(loc.ptr + 1, key, 8))))
		layout_problem(lc, id, "a timeline record that the sessions "
			       "table does not name");
	aptix_buf_release(&loc);
	return r == APTIX_ENOTFOUND ? 0 : r;
}

int aptix_index_check_layout(aptix_repo *repo, aptix_index_problem_cb cb,
			     void *payload)
{
	struct layout_check lc = { repo, cb, payload, 0, 0 };
	int r;

	lc.all_in_timeline = all_in_timeline(repo);
	r = index_iter(repo, APTIX_INDEX_SESSIONS, 0, NULL, 0,
			      layout_sessions_cb, &lc);

	if (r >= 0)
		r = index_iter(repo, APTIX_INDEX_TIMELINE, 0, NULL,
				      0, layout_timeline_cb, &lc);
	return r < 0 ? r : lc.problems;
}

struct recent_walk {
	aptix_repo *repo;
	aptix_session_info_cb cb;
	void *payload;
	unsigned char key[40];		/* the session to start below */
	int has_key;
};

static int recent_cb(const void *key, size_t klen, const void *val,
		     size_t vlen, void *payload)
{
	struct recent_walk *rw = payload;
	aptix_session_info si;
	aptix_oid id;
	int r;

	if (klen != 40)
		return corrupt_record("the timeline");
	if (rw->has_key && !memcmp(key, rw->key, 40))
		return 0;	/* the one to start below */
	memcpy(id.id, (const unsigned char *)key + 8, 32);
	if (vlen)
		r = decode_session(&si, &id, val, vlen);
	else if ((r = aptix_index_session(&si, rw->repo, &id)) ==
		 APTIX_ENOTFOUND)
		return 0;
	if (r < 0)
		return r;
	return rw->cb(&si, rw->payload);
}

static int recent_walk(aptix_repo *repo, int64_t created_at,
		       const aptix_oid *id, aptix_session_info_cb cb,
		       void *payload)
{
	struct recent_walk rw;

	memset(&rw, 0, sizeof(rw));
	rw.repo = repo;
	rw.cb = cb;
	rw.payload = payload;
	if (id) {
		aptix__put_be64(rw.key, (uint64_t)created_at);
		memcpy(rw.key + 8, id->id, 32);
		rw.has_key = 1;
	}
	return index_iter(repo, APTIX_INDEX_TIMELINE, APTIX_INDEX_ITER_REVERSE,
			  id ? rw.key : NULL, id ? sizeof(rw.key) : 0,
			  recent_cb, &rw);
}

int aptix_index_foreach_recent(aptix_repo *repo, aptix_session_info_cb cb,
			       void *payload)
{
	return recent_walk(repo, 0, NULL, cb, payload);
}

struct kids_walk {
	aptix_index_child_cb cb;
	void *payload;
	int64_t oldest;
};

static int kids_cb(const void *key, size_t klen, const void *val UNUSED,
		   size_t vlen UNUSED, void *payload)
{
	struct kids_walk *kw = payload;
	const unsigned char *k = key;
	aptix_oid parent, child;

	if (klen != 72)
		return 0;	/* of a record kept in place: not here */
	if ((int64_t)aptix__get_be64(k) < kw->oldest)
		return APTIX_ITEROVER;
	memcpy(parent.id, k + 8, 32);
	memcpy(child.id, k + 40, 32);
	return kw->cb(&parent, &child, kw->payload);
}

int aptix_index_foreach_child_between(aptix_repo *repo, int64_t newest,
				      int64_t oldest,
				      aptix_index_child_cb cb, void *payload)
{
	struct kids_walk kw = { cb, payload, oldest };
	unsigned char start[72];
	int r;

	if (!all_in_timeline(repo))
		return APTIX_ENOTFOUND;
	aptix__put_be64(start, (uint64_t)newest);
	memset(start + 8, 0xff, 64);
	r = index_iter(repo, APTIX_INDEX_CHILDREN, APTIX_INDEX_ITER_REVERSE,
		       start, sizeof(start), kids_cb, &kw);
	return r == APTIX_ITEROVER ? 0 : r;
}

/*
 * A walk that goes on where the last one stopped: every record is in
 * the timeline (else ENOTFOUND, and the caller reads the index whole).
 */
int aptix_index_foreach_recent_before(aptix_repo *repo, int64_t created_at,
				      const aptix_oid *id,
				      aptix_session_info_cb cb, void *payload)
{
	if (!all_in_timeline(repo))
		return APTIX_ENOTFOUND;
	return recent_walk(repo, created_at, id, cb, payload);
}

static int any_cb(const void *k UNUSED, size_t kl UNUSED,
		  const void *v UNUSED, size_t vl UNUSED, void *payload)
{
	*(int *)payload = 1;
	return APTIX_ITEROVER;
}

int aptix_index_has_timeline(aptix_repo *repo)
{
	int timeline = 0, sessions = 0;

	if (index_iter(repo, APTIX_INDEX_TIMELINE, 0, NULL, 0,
			      any_cb, &timeline) < 0 ||
	    index_iter(repo, APTIX_INDEX_SESSIONS, 0, NULL, 0,
			      any_cb, &sessions) < 0) {
		aptix_error_clear();
		return 0;
	}
	return timeline || !sessions;
}

struct child_walk {
	const aptix_oid *parent;
	aptix_odb_foreach_cb cb;
	void *payload;
	unsigned char prefix[40];	/* of the keys walked */
	size_t plen;
	int in_place, stopped;
};

static void child_walk_init(struct child_walk *cw, const aptix_oid *parent,
			    aptix_odb_foreach_cb cb, void *payload)
{
	memset(cw, 0, sizeof(*cw));
	cw->parent = parent;
	cw->cb = cb;
	cw->payload = payload;
}

static int child_walk_cb(const void *key, size_t klen, const void *val UNUSED,
			 size_t vlen UNUSED, void *payload)
{
	struct child_walk *cw = payload;
	aptix_oid child;
	int r;

	if (klen < cw->plen || memcmp(key, cw->prefix, cw->plen))
		return APTIX_ITEROVER;
	if (klen != cw->plen + 32)
		return 0;	/* not a key of this form */
	memcpy(child.id, (const unsigned char *)key + cw->plen, 32);
	r = cw->cb(&child, cw->payload);
	cw->stopped = r == APTIX_ITEROVER;
	return r;
}

/* The parent's time, and whether its record is kept in place. */
static int created_cb(const void *val, size_t vlen, void *payload)
{
	struct child_walk *cw = payload;
	const unsigned char *p = val;

	if (is_loc(val, vlen)) {
		memcpy(cw->prefix, p + 1, 8);
		return 0;
	}
	if (vlen < 80)
		return corrupt_record(aptix_oid_hex(cw->parent));
	memcpy(cw->prefix, p + 68, 8);
	cw->in_place = 1;
	return 0;
}

/* The children under keys of either form (see aptix_index_children). */
static int walk_children(aptix_repo *repo, struct child_walk *cw)
{
	int r;

	memcpy(cw->prefix + 8, cw->parent->id, 32);
	cw->plen = 40;
	if ((r = index_iter(repo, APTIX_INDEX_CHILDREN, 0,
				   cw->prefix, 40, child_walk_cb, cw)) < 0 ||
	    !cw->in_place || cw->stopped)
		return r;
	memcpy(cw->prefix, cw->parent->id, 32);
	cw->plen = 32;
	return index_iter(repo, APTIX_INDEX_CHILDREN, 0,
				 cw->prefix, 32, child_walk_cb, cw);
}

int aptix_index_children_at(aptix_repo *repo, const aptix_oid *parent,
			    int64_t parent_created, aptix_odb_foreach_cb cb,
			    void *payload)
{
	struct child_walk cw;

	child_walk_init(&cw, parent, cb, payload);
	aptix__put_be64(cw.prefix, (uint64_t)parent_created);
	/* the keys of format 4 too, unless no record is kept in place */
	cw.in_place = !all_in_timeline(repo);
	return walk_children(repo, &cw);
}

/*
 * Children keys start with the parent's time (format 5); a parent whose
 * record is kept in place (format 4) may have children of either form.
 */
int aptix_index_children(aptix_repo *repo, const aptix_oid *parent,
			 aptix_odb_foreach_cb cb, void *payload)
{
	struct child_walk cw;
	int r;

	child_walk_init(&cw, parent, cb, payload);
	r = repo->backend->index->view(repo->backend->index, APTIX_INDEX_SESSIONS, parent->id,
			      32, created_cb, &cw);
	if (r == APTIX_ENOTFOUND)
		return 0;
	return r < 0 ? r : walk_children(repo, &cw);
}

/*
 * Version 1 records lack the counts and the newest failure: compute them
 * from the sessions, in one scan for all of them (a store indexed before
 * version 2, until `aptix reindex`).
 */
struct legacy_fill {
	aptix_conv_info **v;	/* sorted by id */
	size_t n;
};

static int legacy_by_id(const void *a, const void *b)
{
	return strcmp((*(aptix_conv_info *const *)a)->id,
		      (*(aptix_conv_info *const *)b)->id);
}

static int legacy_key(const void *key, const void *elt)
{
	return strcmp(key, (*(aptix_conv_info *const *)elt)->id);
}

static int legacy_cb(const aptix_session_info *si, void *payload)
{
	struct legacy_fill *lf = payload;
	aptix_conv_info **ci = bsearch(si->conversation, lf->v, lf->n,
				       sizeof(*lf->v), legacy_key);

	if (ci)
		conv_count(*ci, si);
	return 0;
}

static int fill_legacy(aptix_repo *repo, aptix_conv_info **v, size_t n)
{
	struct legacy_fill lf = { v, n };
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		v[i]->turns = v[i]->committed = v[i]->failed = 0;
		v[i]->has_last = v[i]->has_failed = 0;
		v[i]->updated_at = 0;
	}
	qsort(v, n, sizeof(*v), legacy_by_id);
	return aptix_index_foreach_session(repo, legacy_cb, &lf);
}

struct conv_view {
	aptix_conv_info *out;
	const char *id;
};

static int conv_view_cb(const void *val, size_t vlen, void *payload)
{
	struct conv_view *cv = payload;

	return decode_conv(cv->out, cv->id, strlen(cv->id), val, vlen);
}

int aptix_index_conversation(aptix_conv_info *out, aptix_repo *repo,
			     const char *id)
{
	struct conv_view cv;
	int r;

	memset(out, 0, sizeof(*out));
	if (!*id)
		return APTIX_ENOTFOUND;
	cv.out = out;
	cv.id = id;
	r = repo->backend->index->view(repo->backend->index, APTIX_INDEX_CONVS, id, strlen(id),
			      conv_view_cb, &cv);
	if (r == APTIX_ENOTFOUND)
		aptix_error_set(APTIX_ERROR_REPOSITORY,
				"conversation '%s' not found", id);
	if (r == 1)
		r = fill_legacy(repo, &out, 1);
	return r;
}

struct conv_walk {
	aptix_conv_info *v;
	size_t n, alloc;
	size_t nlegacy;
};

static int conv_walk_cb(const void *key, size_t klen, const void *val,
			size_t vlen, void *payload)
{
	struct conv_walk *cw = payload;
	int r;

	if (aptix__grow(&cw->v, &cw->alloc, cw->n, sizeof(*cw->v), 32) < 0)
		return APTIX_ERROR;
	if ((r = decode_conv(&cw->v[cw->n], key, klen, val, vlen)) < 0)
		return r;
	if (r == 1) {
		cw->v[cw->n].has_last = -1;	/* marks it for fill_legacy */
		cw->nlegacy++;
	}
	cw->n++;
	return 0;
}

int aptix_index_foreach_conversation(aptix_repo *repo, aptix_conv_info_cb cb,
				     void *payload)
{
	struct conv_walk cw = { NULL, 0, 0, 0 };
	aptix_conv_info **legacy = NULL;
	size_t i, j = 0;
	int r;

	/* copied out first: cb may write, and version 1 records are filled */
	r = index_iter(repo, APTIX_INDEX_CONVS, 0, NULL, 0,
			      conv_walk_cb, &cw);
	if (!r && cw.nlegacy) {
		if (!(legacy = aptix__calloc(cw.nlegacy, sizeof(*legacy))))
			r = APTIX_ERROR;
		for (i = 0; !r && i < cw.n; i++)
			if (cw.v[i].has_last == -1)
				legacy[j++] = &cw.v[i];
		if (!r)
			r = fill_legacy(repo, legacy, j);
	}
	for (i = 0; !r && i < cw.n; i++)
		r = cb(&cw.v[i], payload);
	if (r == APTIX_ITEROVER)
		r = 0;
	free(legacy);
	free(cw.v);
	return r;
}

/* --- Rebuild ---------------------------------------------------------- */

/*
 * The rebuild holds one small entry per session (its id and time), not
 * its prepared record: each session is read again, prepared, applied
 * and dropped, oldest first, so memory grows by an entry a session, not
 * by a record. Only the sessions that wait for their parent (a clock
 * gone wrong, a parent missing) stay prepared. It writes in batches
 * (the old records deleted, then the sessions), each a commit of its
 * own, under a mark that says the index is incomplete (below): a kill
 * at any instant leaves the old index, or one marked incomplete that
 * the next reindex makes whole.
 */
struct rebuild_ent {
	aptix_oid id;
	int64_t created;
};

#define REBUILD_CLEAR_BATCH 16384	/* keys a write deletes */
#define REBUILD_SESSIONS 2048		/* sessions a write indexes */

struct rebuild {
	aptix_repo *repo;
	struct aptix_index_reader rd;
	struct rebuild_ent *ents;	/* every session, by time */
	size_t nents, aents;
	struct aptix_index_session_op **ops;	/* those waiting */
	size_t n, alloc;
	size_t indexed;
	size_t at, batch;		/* the batch of sessions being written */
	size_t nwait, indexed_at;	/* ... and where it started */
	aptix_buf data;
	aptix_buf stale;		/* import keys whose snapshot is gone */
	size_t *stale_lens;
	size_t nstale, astale;
	char **convs;		/* conversation refs: name, hex */
	aptix_oid *heads;
	size_t nconvs;
	aptix_conv_info *meta;	/* what users said: titles, archived */
	size_t nmeta, ameta;
	char **gone;		/* conversations whose ref was deleted */
	size_t ngone, agone;
	char last[APTIX_REF_MAXLEN + 1];	/* reflog walk: its ref */
	int last_deleted;
	int rerun;		/* the mark was there: a reindex interrupted */
	int clearing;		/* the old records are being cleared */
};

/* A session object: its id and time (a damaged one is fsck's). */
static int collect_session(const aptix_oid *id, aptix_otype type,
			   size_t size UNUSED, void *payload)
{
	struct rebuild *rb = payload;
	aptix_session s;
	int r;

	if (type != APTIX_OBJ_SESSION)
		return 0;
	if ((r = aptix_odb_read(&rb->data, &type, rb->repo->odb, id, 0)) < 0)
		return r == APTIX_ECORRUPT ? 0 : r;
	if (aptix_session_parse(&s, rb->data.ptr, rb->data.len) < 0) {
		aptix_error_clear();
		return 0;
	}
	if (aptix__grow(&rb->ents, &rb->aents, rb->nents, sizeof(*rb->ents),
			1024) < 0) {
		aptix_session_release(&s);
		return APTIX_ERROR;
	}
	rb->ents[rb->nents].id = *id;
	rb->ents[rb->nents++].created = s.created_at;
	aptix_session_release(&s);
	return 0;
}

/*
 * Inside the write: read, prepare and index the session id. One whose
 * parent is not indexed yet is kept prepared in rb->ops, to wait.
 */
static int rebuild_one(struct rebuild *rb, aptix_backend_txn *tx,
		       const aptix_oid *id)
{
	aptix_index_backend *ix = tx->backend->index;
	struct aptix_index_session_op *op;
	aptix_otype type;
	int r;

	if ((r = aptix_odb_read(&rb->data, &type, rb->repo->odb, id, 0)) < 0) {
		if (r != APTIX_ECORRUPT)
			return r;
		aptix_error_clear();
		return 0;
	}
	if (!(op = aptix__calloc(1, sizeof(*op))))
		return APTIX_ERROR;
	r = aptix_index__prepare(op, &rb->rd, 0, id, rb->data.ptr,
				 rb->data.len, NULL);
	if (r < 0) {	/* an unreadable session: fsck reports it */
		aptix_error_clear();
		r = 0;
		goto done;
	}
	if (op->session.has_parent) {
		r = ix->get(&rb->data, ix, tx, APTIX_INDEX_SESSIONS,
			    op->session.parent.id, 32);
		if (r == APTIX_ENOTFOUND) {
			aptix_error_clear();
			if (aptix__grow(&rb->ops, &rb->alloc, rb->n,
					sizeof(*rb->ops), 16) < 0) {
				r = APTIX_ERROR;
				goto done;
			}
			rb->ops[rb->n++] = op;
			return 0;
		}
		if (r < 0)
			goto done;
	}
	if ((r = aptix_index__apply_session(tx, op)) == 0)
		rb->indexed++;
done:
	aptix_index__op_release(op);
	free(op);
	return r;
}

static int collect_convs_key(const void *k, size_t kl, const void *v,
			     size_t vl, void *p)
{
	struct rebuild *rb = p;
	aptix_conv_info ci;

	/*
	 * a title or archived flag the user set survives the rebuild, and
	 * so does a conversation started with no turn yet
	 */
	if (decode_conv(&ci, k, kl, v, vl) >= 0 &&
	    (ci.titled || ci.archived || conv_empty(&ci))) {
		if (aptix__grow(&rb->meta, &rb->ameta, rb->nmeta,
				sizeof(*rb->meta), 16) < 0)
			return APTIX_ERROR;
		rb->meta[rb->nmeta++] = ci;
	} else {
		aptix_error_clear();
	}
	return 0;
}

/* An import key whose snapshot is gone goes (index-imports.c). */
static int collect_stale_import(const void *k, size_t kl, const void *v,
				size_t vl, void *p)
{
	struct rebuild *rb = p;

	if (!aptix_index__import_key_stale(rb->repo, v, vl))
		return 0;
	if (aptix__grow(&rb->stale_lens, &rb->astale, rb->nstale,
			sizeof(*rb->stale_lens), 16) < 0)
		return APTIX_ERROR;
	rb->stale_lens[rb->nstale++] = kl;
	return aptix_buf_put(&rb->stale, k, kl);
}

/* The last reflog entry of rb->last deleted it: remember the name. */
static int note_gone(struct rebuild *rb)
{
	char *name;

	if (!*rb->last || !rb->last_deleted)
		return 0;
	if (aptix__grow(&rb->gone, &rb->agone, rb->ngone, sizeof(*rb->gone),
			8) < 0)
		return APTIX_ERROR;
	if (!(name = aptix__strdup(rb->last + strlen(APTIX_CONV_PREFIX))))
		return APTIX_ERROR;
	rb->gone[rb->ngone++] = name;
	return 0;
}

/*
 * Reflog entries of conversation refs, by name then oldest first: a ref
 * whose newest entry logs a zero id was deleted (update-ref -d, the
 * conversation command's delete).
 */
static int collect_deleted(const char *name, const aptix_reflog_entry *e,
			   void *p)
{
	struct rebuild *rb = p;
	int r;

	if (strcmp(rb->last, name)) {
		if ((r = note_gone(rb)) < 0)
			return r;
		snprintf(rb->last, sizeof(rb->last), "%s", name);
	}
	rb->last_deleted = aptix_oid_is_zero(&e->new_id);
	return 0;
}

static int collect_conv_ref(const aptix_ref *ref, void *payload)
{
	struct rebuild *rb = payload;
	char **c;
	aptix_oid *h;

	if (ref->target)
		return 0;
	c = aptix__realloc(rb->convs, (rb->nconvs + 1) * sizeof(char *));
	if (!c)
		return APTIX_ERROR;
	rb->convs = c;
	h = aptix__realloc(rb->heads, (rb->nconvs + 1) * sizeof(aptix_oid));
	if (!h)
		return APTIX_ERROR;
	rb->heads = h;
	if (!(c[rb->nconvs] = aptix__strdup(ref->name +
					    strlen(APTIX_CONV_PREFIX))))
		return APTIX_ERROR;
	h[rb->nconvs++] = ref->oid;
	return 0;
}

/* Order sessions so that every parent comes before its children. */
static int by_created(const void *a, const void *b)
{
	const struct rebuild_ent *x = a, *y = b;

	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	return aptix_oid_cmp(&x->id, &y->id);
}

/*
 * No waiting session could be indexed: root those whose parent is not
 * waiting too (it is missing). The first waiting session may wait for
 * a parent created later (clocks go wrong), so it is not necessarily
 * one of them.
 */
static int root_orphans(struct rebuild *rb, const char *applied)
{
	aptix_oidmap waiting = APTIX_OIDMAP_INIT;
	size_t i, first = rb->n;
	int rooted = 0, r = 0;

	for (i = 0; i < rb->n && !r; i++)
		if (!applied[i])
			r = aptix_oidmap_put(&waiting, &rb->ops[i]->id, i);
	for (i = 0; i < rb->n && !r; i++) {
		if (applied[i])
			continue;
		if (first == rb->n)
			first = i;
		if (aptix_oidmap_get(NULL, &waiting,
				     &rb->ops[i]->session.parent)) {
			rb->ops[i]->session.has_parent = 0;
			rooted = 1;
		}
	}
	/* cannot happen: ids are hashes */
	if (!r && !rooted && first < rb->n)
		rb->ops[first]->session.has_parent = 0;
	aptix_oidmap_release(&waiting);
	return r;
}

/* The tables the rebuild makes again (the search index has its own). */
static const aptix_index_table rebuilt[] = {
	APTIX_INDEX_SESSIONS, APTIX_INDEX_CHILDREN, APTIX_INDEX_TIMELINE,
	APTIX_INDEX_CONVS, APTIX_INDEX_RECENCY
};

/*
 * The sessions that waited for their parent, in rounds: one whose
 * parent is not indexed yet waits for a later round. When a round makes
 * no progress, the waiting sessions whose parent is missing are indexed
 * as roots.
 */
static int rebuild_waiting(struct rebuild *rb, aptix_backend_txn *tx)
{
	aptix_index_backend *ix = tx->backend->index;
	aptix_buf tmp = APTIX_BUF_INIT;
	size_t i, done = 0;
	char *applied;
	int r = 0;

	if (!(applied = aptix__calloc(rb->n + 1, 1)))
		return APTIX_ERROR;
	while (done < rb->n && !r) {
		size_t before = done;

		for (i = 0; i < rb->n && !r; i++) {
			struct aptix_index_session_op *op = rb->ops[i];

			if (applied[i])
				continue;
			if (op->session.has_parent) {
				int pr = ix->get(&tmp, ix, tx,
						 APTIX_INDEX_SESSIONS,
						 op->session.parent.id, 32);

				if (pr == APTIX_ENOTFOUND)
					continue;
				if (pr < 0) {
					r = pr;
					break;
				}
			}
			r = aptix_index__apply_session(tx, op);
			applied[i] = 1;
			done++;
			rb->indexed++;
		}
		if (!r && done == before)
			r = root_orphans(rb, applied);
	}
	free(applied);
	aptix_buf_release(&tmp);
	return r;
}

static void drop_waiting(struct rebuild *rb)
{
	size_t i;

	for (i = 0; i < rb->n; i++) {
		aptix_index__op_release(rb->ops[i]);
		free(rb->ops[i]);
	}
	rb->n = 0;
}

/* --- The mark of a rebuild under way ---------------------------------- */

/*
 * The rebuild writes in batches, each its own commit, so that what a
 * write holds (LMDB keeps every page it dirties in memory) stays
 * bounded; between two of them the index is neither the old one nor the
 * new. Its first write sets meta "reindex" (objects-format.md) to what
 * users said of conversations (titles, archived flags, conversations
 * with no turn yet), read from the records it is about to clear, and its
 * last write empties it. While it is set, commands refuse the store and
 * writes fail (aptix_index_incomplete), saying to run reindex; a reindex
 * run again starts over from the list kept there.
 */
#define MARK_VERSION "r1 "

static int mark_encode(aptix_buf *out, const struct rebuild *rb)
{
	aptix_buf bin = APTIX_BUF_INIT;
	unsigned char be[8], flags;
	size_t i;
	int r;

	for (i = 0; i < rb->nmeta; i++) {
		const aptix_conv_info *m = &rb->meta[i];

		put_str8(&bin, m->id);
		put_str8(&bin, m->title);
		put_str8(&bin, m->workspace);
		flags = (unsigned char)((m->titled ? 1 : 0) |
					(m->archived ? 2 : 0) |
					(conv_empty(m) ? 4 : 0));
		aptix_buf_put(&bin, &flags, 1);
		aptix__put_be64(be, (uint64_t)m->created_at);
		aptix_buf_put(&bin, be, 8);
	}
	aptix_buf_puts(out, MARK_VERSION);
	for (i = 0; i < bin.len; i++)
		aptix_buf_printf(out, "%02x", (unsigned char)bin.ptr[i]);
	r = aptix_buf_oom(&bin) || aptix_buf_oom(out) ? APTIX_ERROR : 0;
	aptix_buf_release(&bin);
	return r;
}

static int mark_corrupt(void)
{
	aptix_error_set(APTIX_ERROR_REPOSITORY, "the mark of an interrupted "
			"reindex is corrupt: meta '%s'", APTIX_META_REINDEX);
	return APTIX_ECORRUPT;
}

/* The conversations' metadata kept in the mark v (a text) into rb. */
static int mark_decode(struct rebuild *rb, const aptix_buf *v)
{
	size_t n = strlen(MARK_VERSION), i;
	aptix_buf bin = APTIX_BUF_INIT;
	const unsigned char *p, *end;
	int r = 0;

	if (v->len < n || memcmp(v->ptr, MARK_VERSION, n) || (v->len - n) % 2 ||
	    !aptix_is_hex(v->ptr + n, v->len - n))
		return mark_corrupt();
	for (i = n; i < v->len; i += 2) {
		int hi = aptix_hex_value(v->ptr[i]);
		int lo = aptix_hex_value(v->ptr[i + 1]);
		unsigned char c = (unsigned char)(hi << 4 | lo);

		if (hi < 0 || lo < 0)
			return mark_corrupt();
		aptix_buf_put(&bin, &c, 1);
	}
	if (aptix_buf_oom(&bin))
		return aptix_error_oom();
	p = (const unsigned char *)bin.ptr;
	end = p + bin.len;
	while (!r && p < end) {
		aptix_conv_info *m;

		if (aptix__grow(&rb->meta, &rb->ameta, rb->nmeta,
				sizeof(*rb->meta), 16) < 0) {
			r = APTIX_ERROR;
			break;
		}
		m = &rb->meta[rb->nmeta];
		memset(m, 0, sizeof(*m));
		if (get_str8(m->id, sizeof(m->id), &p, end) < 0 ||
		    get_str8(m->title, sizeof(m->title), &p, end) < 0 ||
		    get_str8(m->workspace, sizeof(m->workspace), &p, end) < 0 ||
		    end - p < 9) {
			r = mark_corrupt();
			break;
		}
		m->titled = p[0] & 1;
		m->archived = (p[0] & 2) != 0;
		m->turns = (p[0] & 4) ? 0 : 1;	/* conv_empty() as it was */
		m->created_at = (int64_t)aptix__get_be64(p + 1);
		p += 9;
		rb->nmeta++;
	}
	aptix_buf_release(&bin);
	return r;
}

/* 1 when the mark is set (inside tx, or at the last commit: NULL). */
static int mark_set(aptix_backend *be, aptix_backend_txn *tx)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r = aptix__absent_ok(be->meta_get(&v, be, tx,
					      APTIX_META_REINDEX));

	if (r == 0)
		r = v.len != 0;
	aptix_buf_release(&v);
	return r;
}

int aptix_index_incomplete(aptix_repo *repo)
{
	int r;

	APTIX_ASSERT_ARG(repo);
	if ((r = mark_set(repo->backend, NULL)) == 1)
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the index is "
				"incomplete: an 'aptix reindex' is running or "
				"was interrupted; run 'aptix reindex'");
	return r;
}

int aptix_index__check_complete(aptix_backend_txn *tx)
{
	int r = mark_set(tx->backend, tx);

	if (r == 1) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "cannot write: the "
				"index is incomplete (an 'aptix reindex' is "
				"running or was interrupted; run 'aptix "
				"reindex')");
		r = APTIX_ELOCKED;
	}
	return r;
}

size_t aptix_index__reindex_batch(size_t dflt)
{
	const char *v = aptix_env__get(APTIX_ENV_TEST_REINDEX_BATCH);
	char *end;
	unsigned long long n;

	if (!v)
		return dflt;
	n = strtoull(v, &end, 10);
	return *end || !n ? dflt : (size_t)n;
}

/* --- The writes of a rebuild ------------------------------------------ */

static int mark_fn(aptix_backend_txn *tx, void *payload)
{
	const aptix_buf *mark = payload;

	return tx->backend->meta_put(tx, APTIX_META_REINDEX, mark->ptr);
}

/* A table being emptied: a batch of its keys. */
struct clear {
	aptix_index_table t;
	aptix_buf keys;
	size_t *klens;
	size_t n, max;
};

static int clear_key(const void *k, size_t kl, const void *v UNUSED,
		     size_t vl UNUSED, void *p)
{
	struct clear *c = p;

	if (c->n == c->max)
		return APTIX_ITEROVER;
	c->klens[c->n++] = kl;
	return aptix_buf_put(&c->keys, k, kl);
}

/* One write: a batch of keys of the table goes. */
static int clear_fn(aptix_backend_txn *tx, void *payload)
{
	struct clear *c = payload;
	aptix_index_backend *ix = tx->backend->index;
	size_t i, off;
	int r;

	aptix_buf_clear(&c->keys);
	c->n = 0;
	r = ix->iterate(ix, tx, c->t, NULL, 0, APTIX_INDEX_ITER_REVERSE,
			clear_key, c);
	if (r == APTIX_ITEROVER)
		r = 0;
	for (i = 0, off = 0; i < c->n && !r; off += c->klens[i++])
		r = aptix__absent_ok(ix->del(ix, tx, c->t, c->keys.ptr + off,
					     c->klens[i]));
	return r;
}

int aptix_index__clear_table(aptix_repo *repo, aptix_index_table t)
{
	aptix_backend *be = repo->backend;
	struct clear c;
	int r;

	memset(&c, 0, sizeof(c));
	c.t = t;
	c.max = aptix_index__reindex_batch(REBUILD_CLEAR_BATCH);
	aptix_buf_init(&c.keys, 0);
	if (!(c.klens = aptix__calloc(c.max, sizeof(*c.klens))))
		return APTIX_ERROR;
	do
		r = be->transaction(be, clear_fn, &c);
	while (!r && c.n == c.max);
	free(c.klens);
	aptix_buf_release(&c.keys);
	return r;
}

static int stale_fn(aptix_backend_txn *tx, void *payload)
{
	struct rebuild *rb = payload;
	size_t i, off;
	int r = 0;

	for (i = 0, off = 0; i < rb->nstale && !r;
	     off += rb->stale_lens[i++]) {
		r = tx->backend->index->del(tx->backend->index, tx,
					    APTIX_INDEX_IMPORTS,
					    rb->stale.ptr + off,
					    rb->stale_lens[i]);
		r = aptix__absent_ok(r);
	}
	return r;
}

/*
 * One write: the sessions from rb->at on, a batch. A write tried again
 * starts the batch over: the sessions it left waiting go.
 */
static int sessions_fn(aptix_backend_txn *tx, void *payload)
{
	struct rebuild *rb = payload;
	size_t i, end = rb->at + rb->batch;
	int r = 0;

	while (rb->n > rb->nwait) {
		rb->n--;
		aptix_index__op_release(rb->ops[rb->n]);
		free(rb->ops[rb->n]);
	}
	rb->indexed = rb->indexed_at;
	for (i = rb->at; i < rb->nents && i < end && !r; i++)
		r = rebuild_one(rb, tx, &rb->ents[i].id);
	return r;
}

/* The last write: the sessions that waited, the conversations. */
static int finish_fn(aptix_backend_txn *tx, void *payload)
{
	struct rebuild *rb = payload;
	size_t i;
	int r;

	rb->indexed = rb->indexed_at;
	r = rebuild_waiting(rb, tx);
	for (i = 0; i < rb->nconvs && !r; i++)
		r = aptix_index__set_head(tx, rb->convs[i], &rb->heads[i], 0);
	for (i = 0; i < rb->ngone && !r; i++) {
		size_t k;

		for (k = 0; k < rb->nconvs; k++)
			if (!strcmp(rb->convs[k], rb->gone[i]))
				break;
		if (k == rb->nconvs)	/* deleted, and not made again */
			r = aptix_index__set_head(tx, rb->gone[i], NULL, 0);
	}
	for (i = 0; i < rb->nmeta && !r; i++) {
		const aptix_conv_info *m = &rb->meta[i];

		/* started with no turn, and still none: as it was */
		if (conv_empty(m) && (r = aptix_index__conv_create(
					      tx, m->id, m->workspace,
					      m->created_at)) == APTIX_EEXISTS)
			r = 0;
		if (!r)
			r = aptix_index__conv_meta(tx, m->id, m->titled ?
						   m->title : NULL,
						   m->archived);
		r = aptix__absent_ok(r);	/* no session left */
	}
	if (!r)
		r = aptix_index__recency_seal(tx);
	return r ? r : aptix__repo_mark_layout(tx);
}

/*
 * The index made again, in writes of a bounded size, oldest sessions
 * first (the search index after, search.c): the mark first, the old
 * records cleared, the sessions a batch a write, the mark emptied last.
 */
static int rebuild_writes(struct rebuild *rb)
{
	aptix_backend *be = rb->repo->backend;
	aptix_buf mark = APTIX_BUF_INIT;
	size_t i;
	int r = 0;

	rb->clearing = 1;
	for (i = 0; i < ARRAY_SIZE(rebuilt) && !r; i++)
		r = aptix_index__clear_table(rb->repo, rebuilt[i]);
	if (!r && rb->nstale)
		r = be->transaction(be, stale_fn, rb);
	for (rb->at = 0; rb->at < rb->nents && !r; rb->at += rb->batch) {
		rb->nwait = rb->n;
		rb->indexed_at = rb->indexed;
		r = be->transaction(be, sessions_fn, rb);
	}
	rb->indexed_at = rb->indexed;
	if (!r)
		r = be->transaction(be, finish_fn, rb);
	/* the sessions' entries are done with: not held beside the words */
	free(rb->ents);
	rb->ents = NULL;
	rb->nents = rb->aents = 0;
	if (!r)
		r = aptix_search_rebuild(rb->repo, NULL);
	aptix_buf_clear(&mark);
	if (!r)
		r = be->transaction(be, mark_fn, &mark);
	aptix_buf_release(&mark);
	return r;
}

/*
 * The first write of a reindex: its mark, with what users said of
 * conversations (titles, archived, conversations with no turn yet)
 * read in the same write, so that every write after it fails until the
 * reindex's last write empties the mark: a turn cannot commit between
 * what the reindex reads and what it writes. A mark already there (a
 * reindex that did not finish) is taken as it is: its list is what the
 * records it was read from said, and they are gone.
 */
static int mark_begin_fn(aptix_backend_txn *tx, void *payload)
{
	struct rebuild *rb = payload;
	aptix_backend *be = tx->backend;
	aptix_buf v = APTIX_BUF_INIT, mark = APTIX_BUF_INIT;
	int r = be->meta_get(&v, be, tx, APTIX_META_REINDEX);
	size_t i;

	rb->nmeta = 0;		/* a transaction run again starts over */
	rb->rerun = r == 0 && v.len;
	if (rb->rerun) {
		r = mark_decode(rb, &v);
	} else if (r == 0 || r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		/* a write walks its records backwards (every backend can) */
		r = be->index->iterate(be->index, tx, APTIX_INDEX_CONVS, NULL,
				       0, APTIX_INDEX_ITER_REVERSE,
				       collect_convs_key, rb);
		for (i = 0; i < rb->nmeta / 2; i++) {	/* ascending again */
			aptix_conv_info t = rb->meta[i];

			rb->meta[i] = rb->meta[rb->nmeta - 1 - i];
			rb->meta[rb->nmeta - 1 - i] = t;
		}
		if (r == 0 && (r = mark_encode(&mark, rb)) == 0)
			r = be->meta_put(tx, APTIX_META_REINDEX, mark.ptr);
	}
	aptix_buf_release(&v);
	aptix_buf_release(&mark);
	return r;
}

struct live_claim {
	char conv[APTIX_REF_MAXLEN + 1];
	long pid;
	char host[65];
};

static int live_claim_cb(const void *key, size_t klen, const void *val,
			 size_t vlen, void *payload)
{
	struct live_claim *lc = payload;
	struct running_rec rr;
	int alive;

	memset(&rr, 0, sizeof(rr));
	if (aptix__parse_running(&rr, val, vlen) < 0) {
		aptix_error_clear();	/* recovery's and fsck's to say */
		return 0;
	}
	alive = aptix__claim_alive(&rr, aptix__wall_ms(), NULL, 0);
	if (alive > 0) {
		snprintf(lc->conv, sizeof(lc->conv), "%.*s",
			 (int)(klen < sizeof(lc->conv) ? klen :
			       sizeof(lc->conv) - 1), (const char *)key);
		lc->pid = rr.pid;
		snprintf(lc->host, sizeof(lc->host), "%s", rr.host);
	}
	aptix__running_rec_release(&rr);
	return alive > 0 ? APTIX_ITEROVER : 0;
}

/*
 * A turn that claimed its conversation before the mark could not
 * commit its answer during the reindex (a write fails then): the
 * reindex waits for no one and refuses, its mark taken back (nothing
 * was cleared yet). After the mark, no claim can be taken.
 */
static int no_turn_running(struct rebuild *rb)
{
	aptix_claims_backend *cl = rb->repo->backend->claims;
	struct live_claim lc;
	int r;

	memset(&lc, 0, sizeof(lc));
	r = cl ? cl->iterate(cl, live_claim_cb, &lc) : 0;
	if (r == APTIX_ITEROVER || r > 0)
		r = 0;		/* stopped at the first live claim */
	if (r == 0 && *lc.conv) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "a turn is running "
				"in conversation '%s' (process %ld on %s): "
				"reindex once it is done", lc.conv, lc.pid,
				lc.host);
		r = APTIX_ELOCKED;
	}
	return r;
}

/* A fresh reindex stopped before it cleared anything: the mark goes. */
static void mark_take_back(struct rebuild *rb)
{
	aptix_backend *be = rb->repo->backend;
	aptix_buf empty = APTIX_BUF_INIT;
	char keep[512];

	if (rb->rerun || rb->clearing)
		return;
	snprintf(keep, sizeof(keep), "%s", aptix_error_last() ?
		 aptix_error_last()->message : "");
	aptix_buf_puts(&empty, "");
	if (be->transaction(be, mark_fn, &empty) < 0)
		aptix_error_clear();	/* it says to run reindex: true */
	aptix_error_set(APTIX_ERROR_REPOSITORY, "%s", keep);
	aptix_buf_release(&empty);
}

/* The first problem the store's check finds. */
static void first_problem(const char *msg, void *payload)
{
	aptix_buf *first = payload;

	if (!first->len)
		aptix_buf_puts(first, msg);
}

int aptix_index_rebuild(aptix_repo *repo, size_t *nsessions)
{
	struct rebuild rb;
	aptix_buf first = APTIX_BUF_INIT;
	size_t i;
	int r;

	/*
	 * The rebuild rewrites every page of the index: on damaged pages
	 * LMDB would write through the damage (into its own memory). A
	 * store whose pages are not sound is left alone.
	 */
	r = repo->store && repo->store->check ?
		repo->store->check(repo->store, first_problem, &first) : 0;
	if (r > 0) {
		aptix_error_set(APTIX_ERROR_LMDB, "store is corrupt: %s (and "
				"%d more problems: run 'aptix fsck'); it is "
				"not rewritten: 'aptix salvage <dir>' copies "
				"what is readable", first.ptr ? first.ptr : "",
				r - 1);
		aptix_buf_release(&first);
		return APTIX_ECORRUPT;
	}
	aptix_buf_release(&first);
	if (r < 0)
		return r;
	/* the values first: an older store's come out in the newest layout */
	if (repo->store && repo->store->relayout &&
	    (r = repo->store->relayout(repo->store)) < 0)
		return r;
	memset(&rb, 0, sizeof(rb));
	rb.repo = repo;
	rb.batch = aptix_index__reindex_batch(REBUILD_SESSIONS);
	aptix_buf_init(&rb.data, 0);
	aptix_buf_init(&rb.stale, 0);
	aptix_index__odb_reader(&rb.rd, repo->odb);
	if ((r = repo->backend->transaction(repo->backend, mark_begin_fn,
					    &rb)) < 0)
		goto done;
	if ((!rb.rerun && (r = no_turn_running(&rb)) < 0) ||
	    (r = aptix_odb_foreach_header(repo->odb, collect_session,
					  &rb)) < 0)
		goto done;
	if (rb.nents)
		qsort(rb.ents, rb.nents, sizeof(*rb.ents), by_created);
	if ((r = index_iter(repo, APTIX_INDEX_IMPORTS, 0, NULL, 0,
				   collect_stale_import, &rb)) < 0 ||
	    (r = aptix_ref_foreach(repo, APTIX_CONV_PREFIX, collect_conv_ref,
				   &rb)) < 0 ||
	    (r = repo->backend->refdb->reflog_iterate(repo->backend->refdb,
						      APTIX_CONV_PREFIX,
						      collect_deleted,
						      &rb)) < 0 ||
	    (r = note_gone(&rb)) < 0)
		goto done;
	r = rebuild_writes(&rb);
	if (!r && nsessions)
		*nsessions = rb.indexed;
done:
	if (r < 0)
		mark_take_back(&rb);
	drop_waiting(&rb);
	free(rb.ops);
	free(rb.ents);
	aptix_buf_release(&rb.data);
	aptix_buf_release(&rb.stale);
	free(rb.stale_lens);
	for (i = 0; i < rb.nconvs; i++)
		free(rb.convs[i]);
	free(rb.convs);
	free(rb.heads);
	free(rb.meta);
	for (i = 0; i < rb.ngone; i++)
		free(rb.gone[i]);
	free(rb.gone);
	return r;
}

int aptix_index_compact(aptix_repo *repo)
{
	aptix_store *s = repo->store;

	if (!s || !s->compact)
		return 1;
	if (s->readonly(s)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "cannot compact the "
				"store: it is read-only");
		return APTIX_ERROR;
	}
	return s->compact(s, 0);
}
