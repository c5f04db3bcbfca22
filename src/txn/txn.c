/*
 * src/txn/txn.c - write transactions: a batch of object writes, index
 * records, ref updates and running claims, applied in one transaction
 * of the repository's backend (aptix/sys/backend.h), each through its
 * domain: objects through the object backend, refs through the ref
 * backend, and so on. The transaction is the coordinator: what a queued
 * change implies elsewhere (a session's index records, a conversation
 * ref's head record) is applied here, in apply_fn, and nowhere else.
 */
#define _GNU_SOURCE 1	/* memmem */
#include "util/common.h"
#include "repo/repo.h"
#include "index/index.h"
#include "txn/txn.h"
#include "store/backend-kv.h"
#include "store/odb-store.h"
#include "object/zstream.h"
#include "aptix/sys/odb_backend.h"
#include "aptix/sys/refdb_backend.h"
#include "aptix/sys/claims_backend.h"
#include "aptix/refs.h"
#include "aptix/oidmap.h"
#include "aptix/index.h"
#include "aptix/credscan.h"

enum op_kind { OP_OBJECT, OP_SESSION_INDEX, OP_REF, OP_RUNNING_CLAIM,
	OP_RUNNING_RELEASE, OP_REF_VERIFY, OP_CONV_META, OP_OBJECT_REQUIRE,
	OP_CONV_CREATE, OP_INDEX_PUT };

struct op {
	enum op_kind kind;
	aptix_oid id;
	aptix_buf val;			/* OP_OBJECT: stored form;
					   OP_INDEX_PUT: the key */
	aptix_buf content;		/* and of a turn or session, the
					   content: read back by the index
					   without decoding */
	struct aptix_index_session_op *sess;
	char *name;			/* OP_REF */
	char *newval;			/* NULL: delete */
	aptix_oid new_id;		/* for the reflog */
	int old_mode;
	aptix_oid old_id;
	char *reason;
};

struct aptix_txn {
	aptix_repo *repo;
	struct op *ops;
	size_t n, alloc;
	aptix_oidmap objs;		/* id -> index of its OP_OBJECT */
	int defer_sync;			/* aptix_txn__defer_sync */
	int row_by_row;			/* aptix_txn__row_by_row */
};

int aptix_txn_new(aptix_txn **out, aptix_repo *repo)
{
	aptix_txn *tx = aptix__calloc(1, sizeof(*tx));

	*out = tx;
	if (!tx)
		return APTIX_ERROR;
	tx->repo = repo;
	return 0;
}

/* Drop the ops from the from-th on (their objects' ids stay mapped). */
static void drop_ops(aptix_txn *tx, size_t from)
{
	size_t i;

	for (i = from; i < tx->n; i++) {
		struct op *o = &tx->ops[i];

		aptix_buf_release(&o->val);
		aptix_buf_release(&o->content);
		if (o->sess) {
			aptix_index__op_release(o->sess);
			free(o->sess);
		}
		free(o->name);
		free(o->newval);
		free(o->reason);
	}
	tx->n = from;
}

static void clear_ops(aptix_txn *tx)
{
	drop_ops(tx, 0);
	aptix_oidmap_clear(&tx->objs);
}

size_t aptix_txn__mark(const aptix_txn *tx)
{
	return tx->n;
}

int aptix_txn__rollback(aptix_txn *tx, size_t mark)
{
	size_t i;

	if (mark >= tx->n)
		return 0;
	drop_ops(tx, mark);
	aptix_oidmap_clear(&tx->objs);
	for (i = 0; i < tx->n; i++)
		if (tx->ops[i].kind == OP_OBJECT &&
		    aptix_oidmap_put(&tx->objs, &tx->ops[i].id, i) < 0)
			return APTIX_ERROR;
	return 0;
}

int aptix_txn__queued_before(const aptix_txn *tx, const aptix_oid *id,
			     size_t mark)
{
	size_t i;

	return !aptix_oidmap_get(&i, &tx->objs, id) && i < mark;
}

void aptix_txn_free(aptix_txn *tx)
{
	if (!tx)
		return;
	clear_ops(tx);
	free(tx->ops);
	aptix_oidmap_release(&tx->objs);
	free(tx);
}

size_t aptix_txn_size(const aptix_txn *tx)
{
	return tx->n;
}

static struct op *new_op(aptix_txn *tx, enum op_kind kind)
{
	struct op *o;

	if (aptix__grow(&tx->ops, &tx->alloc, tx->n, sizeof(*tx->ops),
			16) < 0)
		return NULL;
	o = &tx->ops[tx->n++];
	memset(o, 0, sizeof(*o));
	aptix_buf_init(&o->val, 0);
	aptix_buf_init(&o->content, 0);
	o->kind = kind;
	return o;
}

/*
 * A new op on a copy of name, and of newval unless NULL; NULL when out
 * of memory (what was made is freed with tx).
 */
static struct op *named_op(aptix_txn *tx, enum op_kind kind,
			   const char *name, const char *newval)
{
	struct op *o = new_op(tx, kind);

	if (!o || !(o->name = aptix__strdup(name)) ||
	    (newval && !(o->newval = aptix__strdup(newval))))
		return NULL;
	return o;
}

static struct op *find_object(aptix_txn *tx, const aptix_oid *id)
{
	size_t i;

	return aptix_oidmap_get(&i, &tx->objs, id) ? NULL : &tx->ops[i];
}

/*
 * The id of an object to write (also in *out when out is set): 1 when
 * it is new to this transaction, 0 when the transaction has it already.
 */
static int hash_new(aptix_oid *id, aptix_oid *out, aptix_txn *tx,
		    aptix_otype type, const void *data, size_t len)
{
	int r = aptix_object_hash(id, type, data, len);

	if (r < 0)
		return r;
	if (out)
		*out = *id;
	return find_object(tx, id) ? 0 : 1;
}

/* A base of a stored value, from this transaction or the store. */
static int read_base(aptix_buf *out, const aptix_oid *id, aptix_otype type,
		     int splice, void *payload)
{
	aptix_txn *tx = payload;
	struct op *o = find_object(tx, id);
	aptix_otype t;
	int r;

	(void)splice;
	if (o)
		r = aptix_txn_read_object(out, &t, tx, id);
	else
		r = aptix_odb_read(out, &t, tx->repo->odb, id, 0);
	return !r && t != type ? APTIX_ECORRUPT : r;
}

int aptix_txn_read_object(aptix_buf *out, aptix_otype *type, aptix_txn *tx,
			  const aptix_oid *id)
{
	struct op *o = find_object(tx, id);

	if (o && o->content.len) {
		*type = o->val.ptr[0] & APTIX_STORED_TYPE;
		return aptix_buf_set(out, o->content.ptr, o->content.len);
	}
	if (o)
		return aptix_stored_decode_with(out, type, o->val.ptr,
						o->val.len, read_base, tx);
	return aptix_odb_read(out, type, tx->repo->odb, id, 0);
}

int aptix_txn__object_size(size_t *size, aptix_txn *tx, const aptix_oid *id)
{
	struct op *o = find_object(tx, id);
	aptix_otype type;
	size_t hlen;

	if (o)
		return aptix_stored_header(&type, size, &hlen, o->val.ptr,
					   o->val.len);
	return aptix_odb_read_header(size, &type, tx->repo->odb, id);
}

/* The index reads what it summarises through the write. */
static int txn_read(aptix_buf *out, aptix_otype *type, void *ctx,
		    const aptix_oid *id)
{
	return aptix_txn_read_object(out, type, ctx, id);
}

static int txn_size(size_t *size, void *ctx, const aptix_oid *id)
{
	return aptix_txn__object_size(size, ctx, id);
}

/*
 * The base to deflate a value against, given like, an object much like
 * it: like itself, or like's own base when like is based (a base is
 * never based: a read never follows more than one), with its content in
 * text. 1 when there is one; 0 when like is of another type, missing or
 * unreadable (the value is then stored without).
 */
static int find_dict_base(aptix_stored_base *out, aptix_buf *text,
			  aptix_txn *tx, aptix_otype type,
			  const aptix_oid *like)
{
	aptix_odb_backend *odb = tx->repo->backend->odb;
	aptix_buf val = APTIX_BUF_INIT;
	struct op *o;
	aptix_otype t = APTIX_OBJ_BLOB;
	int r;

	if (!like || aptix_oid_is_zero(like))
		return 0;
	out->id = *like;
	if ((o = find_object(tx, like)))
		r = aptix_stored_based_on(&out->id, o->val.ptr, o->val.len);
	else if ((r = odb->read_stored(&val, odb, NULL, like)) == 0)
		r = aptix_stored_based_on(&out->id, val.ptr, val.len);
	aptix_buf_release(&val);
	if (r >= 0)
		r = aptix_txn_read_object(text, &t, tx, &out->id);
	if (r < 0 || t != type) {
		aptix_error_clear();
		return 0;
	}
	out->type = type;
	out->content = text->ptr;
	out->len = text->len;
	return 1;
}

int aptix_txn_write_object(aptix_oid *out, aptix_txn *tx, aptix_otype type,
			   const void *data, size_t len)
{
	return aptix_txn_write_object_like(out, tx, type, data, len, NULL);
}

int aptix_txn_write_object_like(aptix_oid *out, aptix_txn *tx,
				aptix_otype type, const void *data,
				size_t len, const aptix_oid *like)
{
	int r;

	if ((r = aptix_object_validate(type, data, len)) < 0)
		return r;
	return aptix_txn__write_built(out, tx, type, data, len, like, NULL);
}

int aptix_txn__write_built(aptix_oid *out, aptix_txn *tx, aptix_otype type,
			   const void *data, size_t len,
			   const aptix_oid *like, const aptix_turn *turn)
{
	struct aptix_index_session_op *sess = NULL;
	aptix_stored_base base;
	aptix_buf text = APTIX_BUF_INIT;
	aptix_oid id;
	struct op *o;
	int r;

	if ((r = hash_new(&id, out, tx, type, data, len)) <= 0)
		return r;
	if (type == APTIX_OBJ_SESSION) {
		struct aptix_index_reader rd;

		if (!(sess = aptix__calloc(1, sizeof(*sess))))
			return APTIX_ERROR;
		sess->want_search = 1;
		rd.read = txn_read;
		rd.size = txn_size;
		rd.ctx = tx;
		if ((r = aptix_index__prepare(sess, &rd, 1, &id, data,
						 len, turn)) < 0) {
			aptix_index__op_release(sess);
			free(sess);
			return r;
		}
	}
	if (!(o = new_op(tx, OP_OBJECT))) {
		r = APTIX_ERROR;
		goto fail;
	}
	o->id = id;
	r = aptix_stored_encode_against(&o->val, type, data, len,
					find_dict_base(&base, &text, tx, type,
						       like) ? &base : NULL);
	aptix_buf_release(&text);
	if (r == 0 && type != APTIX_OBJ_BLOB &&
	    aptix_buf_set(&o->content, data, len) < 0)
		r = APTIX_ERROR;
	if (r < 0 || (r = aptix_oidmap_put(&tx->objs, &id, tx->n - 1)) < 0) {
		aptix_buf_release(&o->val);
		aptix_buf_release(&o->content);
		tx->n--;
		goto fail;
	}
	if (sess) {
		if (!(o = new_op(tx, OP_SESSION_INDEX))) {
			r = APTIX_ERROR;
			goto fail;
		}
		o->id = id;
		o->sess = sess;
	}
	return 0;
fail:
	if (sess) {
		aptix_index__op_release(sess);
		free(sess);
	}
	return r;
}

/* What val, a stored form, decodes to: the object id names, or ECORRUPT. */
static int decode_checked(aptix_buf *content, aptix_otype *type,
			  aptix_txn *tx, const aptix_oid *id, const void *val,
			  size_t len)
{
	aptix_oid got;
	int r = aptix_stored_decode_with(content, type, val, len, read_base,
					 tx);

	if (r == 0 && (r = aptix_object_hash(&got, *type, content->ptr,
					     content->len)) == 0 &&
	    aptix_oid_cmp(&got, id))
		r = APTIX_ECORRUPT;
	if (r == APTIX_ECORRUPT)
		aptix_error_set(APTIX_ERROR_ODB, "object '%s' is corrupt (its "
				"content does not hash to its id)",
				aptix_oid_hex(id));
	return r;
}

int aptix_txn__write_stored(aptix_txn *tx, const aptix_oid *id,
			    const void *val, size_t len)
{
	struct aptix_index_session_op *sess = NULL;
	aptix_buf content = APTIX_BUF_INIT;
	struct aptix_index_reader rd;
	aptix_otype type;
	struct op *o;
	int r;

	if (find_object(tx, id))
		return 0;
	if ((r = decode_checked(&content, &type, tx, id, val, len)) < 0)
		goto done;
	if (type == APTIX_OBJ_SESSION) {
		rd.read = txn_read;
		rd.size = txn_size;
		rd.ctx = tx;
		if (!(sess = aptix__calloc(1, sizeof(*sess))) ||
		    (sess->want_search = 1,
		     r = aptix_index__prepare(sess, &rd, 1, id, content.ptr,
					      content.len, NULL)) < 0) {
			r = r < 0 ? r : APTIX_ERROR;
			goto done;
		}
	}
	if (!(o = new_op(tx, OP_OBJECT)) ||
	    aptix_buf_set(&o->val, val, len) < 0 ||
	    (type != APTIX_OBJ_BLOB &&
	     aptix_buf_set(&o->content, content.ptr, content.len) < 0) ||
	    aptix_oidmap_put(&tx->objs, id, tx->n - 1) < 0) {
		if (o) {
			aptix_buf_release(&o->val);
			aptix_buf_release(&o->content);
			tx->n--;
		}
		r = APTIX_ERROR;
		goto done;
	}
	o->id = *id;
	if (sess) {
		if (!(o = new_op(tx, OP_SESSION_INDEX))) {
			r = APTIX_ERROR;
			goto done;
		}
		o->id = *id;
		o->sess = sess;
		sess = NULL;
	}
done:
	if (sess) {
		aptix_index__op_release(sess);
		free(sess);
	}
	aptix_buf_release(&content);
	return r;
}

/* The escaped text of base at or after from in data, by either escaping. */
static int find_base(aptix_stored_splice *sp, const char *data, size_t len,
		     const aptix_buf *text, aptix_buf *esc, size_t from)
{
	int kind;

	for (kind = 0; kind <= 1; kind++) {
		const char *hit;

		if (aptix__json_escape(esc, text->ptr, text->len, kind) < 0 ||
		    !esc->len || from > len)
			continue;
		hit = memmem(data + from, len - from, esc->ptr, esc->len);
		if (hit) {
			sp->at = (size_t)(hit - data);
			sp->len = esc->len;
			sp->kind = kind;
			return 1;
		}
	}
	return 0;
}

int aptix_txn_write_blob_against(aptix_oid *out, aptix_txn *tx,
				 const void *data, size_t len,
				 const aptix_oid *bases, size_t nbases,
				 const aptix_oid *like)
{
	aptix_stored_splice sp[APTIX_STORED_MAX_SPLICES];
	aptix_stored_base base;
	aptix_buf text = APTIX_BUF_INIT, esc = APTIX_BUF_INIT;
	aptix_oid id;
	aptix_otype type;
	struct op *o;
	size_t i, j, n = 0;
	int r;

	if ((r = hash_new(&id, out, tx, APTIX_OBJ_BLOB, data, len)) <= 0)
		return r;
	if (aptix_odb_exists(tx->repo->odb, &id))
		return aptix_txn__require_object(tx, &id);
	for (i = 0; i < nbases && n < APTIX_STORED_MAX_SPLICES; i++) {
		aptix_stored_splice *s = &sp[n];

		/* small bases save less than their reference costs */
		if (aptix_txn_read_object(&text, &type, tx, &bases[i]) < 0 ||
		    type != APTIX_OBJ_BLOB || text.len < 64) {
			aptix_error_clear();
			continue;
		}
		s->base = bases[i];
		if (!find_base(s, data, len, &text, &esc, 0))
			continue;
		for (j = 0; j < n; j++)	/* one splice per range */
			if (s->at < sp[j].at + sp[j].len &&
			    sp[j].at < s->at + s->len)
				break;
		if (j == n)
			n++;
	}
	aptix_buf_release(&text);
	aptix_buf_release(&esc);
	if (!(o = new_op(tx, OP_OBJECT)))
		return APTIX_ERROR;
	o->id = id;
	r = find_dict_base(&base, &text, tx, APTIX_OBJ_BLOB, like);
	r = aptix_stored_encode_spliced(&o->val, data, len, sp, n,
					r ? &base : NULL, read_base, tx);
	aptix_buf_release(&text);
	if (r < 0 ||
	    (r = aptix_oidmap_put(&tx->objs, &id, tx->n - 1)) < 0) {
		aptix_buf_release(&o->val);
		tx->n--;
	}
	return r;
}

static int queue_ref(aptix_txn *tx, const char *name, char *newval,
		     const aptix_oid *new_id, int old_mode,
		     const aptix_oid *old_id, const char *reason)
{
	struct op *o;
	int r;

	if ((r = aptix_ref_check_name(name)) < 0) {
		free(newval);
		return r;
	}
	if (!(o = new_op(tx, OP_REF))) {
		free(newval);
		return APTIX_ERROR;
	}
	o->name = aptix__strdup(name);
	o->newval = newval;
	o->reason = aptix__strdup(reason ? reason : "");
	if (new_id)
		o->new_id = *new_id;
	o->old_mode = old_mode;
	if (old_id)
		o->old_id = *old_id;
	if (!o->name || !o->reason)
		return APTIX_ERROR;
	return 0;
}

int aptix_txn_ref_update(aptix_txn *tx, const char *name,
			 const aptix_oid *new_id, const aptix_oid *old_id,
			 const char *reason)
{
	char *val = NULL;
	int mode = OLD_ANY;

	if (new_id) {
		if (!(val = aptix__malloc(APTIX_OID_HEXSZ + 1)))
			return APTIX_ERROR;
		aptix_oid_tostr(val, new_id);
	}
	if (old_id)
		mode = aptix_oid_is_zero(old_id) ? OLD_ABSENT : OLD_EXACT;
	return queue_ref(tx, name, val, new_id, mode, old_id, reason);
}

int aptix_txn_symref_update(aptix_txn *tx, const char *name,
			    const char *target, const char *reason)
{
	aptix_buf val = APTIX_BUF_INIT;
	int r;

	if ((r = aptix_ref_check_name(target)) < 0)
		return r;
	if (!strcmp(target, name)) {
		aptix_error_set(APTIX_ERROR_REFERENCE,
				"ref '%s' cannot point to itself", name);
		return APTIX_EINVALID;
	}
	if (aptix_buf_printf(&val, "ref: %s", target) < 0)
		return APTIX_ERROR;
	return queue_ref(tx, name, aptix_buf_detach(&val), NULL, OLD_ANY,
			 NULL, reason);
}

/*
 * The running claims: conversation -> JSON record of the turn being run
 * (see run.c). A claim fails with APTIX_ELOCKED while the record's
 * process lives, with APTIX_EEXISTS when it died (recover, then retry).
 */
static int running_claim(aptix_backend_txn *bt, struct op *o)
{
	aptix_claims_backend *cl = bt->backend->claims;
	aptix_buf cur = APTIX_BUF_INIT;
	int r = cl->lookup(&cur, cl, bt, o->name);

	if (r == 0) {
		r = aptix_run__check_claim(o->name, cur.ptr, cur.len);
		aptix_buf_release(&cur);
		return r;
	}
	aptix_buf_release(&cur);
	if (r != APTIX_ENOTFOUND)
		return r;
	aptix_error_clear();
	return cl->acquire(cl, bt, o->name, o->newval);
}

static int running_release(aptix_backend_txn *bt, struct op *o)
{
	aptix_claims_backend *cl = bt->backend->claims;
	aptix_buf cur = APTIX_BUF_INIT;
	char hex[APTIX_OID_HEXSZ + 1];
	int r = cl->lookup(&cur, cl, bt, o->name);

	/* only our own claim: the pending turn's id is in the record */
	aptix_oid_tostr(hex, &o->old_id);
	if (r == 0 && strstr(cur.ptr, hex) && o->old_mode &&
	    aptix_run__check_claim(o->name, cur.ptr, cur.len) ==
	    APTIX_ELOCKED) {
		/* recovering: its holder renewed it meanwhile, it lives */
		r = APTIX_ENOTFOUND;
	} else if (r == 0 && strstr(cur.ptr, hex))
		r = cl->release(cl, bt, o->name, cur.ptr);
	else if (o->old_mode) {
		/* strict: someone else released (recovered) it first */
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the claim on '%s' "
				"is gone", o->name);
		r = r == 0 || r == APTIX_ENOTFOUND ? APTIX_ENOTFOUND : r;
	} else if (r == 0 || r == APTIX_ENOTFOUND)
		r = 0;
	aptix_buf_release(&cur);
	return r;
}

/* The ref holds exactly old_id (old_mode OLD_EXACT) or nothing. */
static int ref_verify(aptix_backend_txn *bt, struct op *o)
{
	aptix_refdb_backend *db = bt->backend->refdb;
	aptix_buf cur = APTIX_BUF_INIT;
	aptix_oid id;
	int r = db->lookup(&cur, db, bt, o->name);
	int ok;

	if (r < 0 && r != APTIX_ENOTFOUND) {
		aptix_buf_release(&cur);
		return r;
	}
	if (r == APTIX_ENOTFOUND)
		ok = o->old_mode == OLD_ABSENT;
	else
		ok = o->old_mode == OLD_EXACT && cur.len == APTIX_OID_HEXSZ &&
			aptix_oid_fromstrn(&id, cur.ptr, cur.len) == 0 &&
			!aptix_oid_cmp(&id, &o->old_id);
	aptix_buf_release(&cur);
	if (ok)
		return 0;
	aptix_error_set(APTIX_ERROR_REFERENCE, "ref '%s' moved", o->name);
	return APTIX_EMISMATCH;
}

int aptix_txn__ref_verify(aptix_txn *tx, const char *name,
			  const aptix_oid *old_id)
{
	struct op *o = named_op(tx, OP_REF_VERIFY, name, NULL);

	if (!o)
		return APTIX_ERROR;
	o->old_mode = old_id ? OLD_EXACT : OLD_ABSENT;
	if (old_id)
		o->old_id = *old_id;
	return 0;
}

int aptix_txn__running_claim(aptix_txn *tx, const char *conv,
			     const char *record)
{
	return named_op(tx, OP_RUNNING_CLAIM, conv, record) ? 0 : APTIX_ERROR;
}

int aptix_txn__running_release(aptix_txn *tx, const char *conv,
			       const aptix_oid *pending_turn, int strict)
{
	struct op *o = named_op(tx, OP_RUNNING_RELEASE, conv, NULL);

	if (!o)
		return APTIX_ERROR;
	o->old_id = *pending_turn;
	o->old_mode = strict;
	return 0;
}

/* title NULL keeps it; archived < 0 keeps the flag. */
static int conv_meta(aptix_repo *repo, const char *conv, const char *title,
		     int archived)
{
	aptix_txn *tx;
	struct op *o;
	int r;

	if ((r = aptix_conv_check_id(conv)) < 0)
		return r;
	if ((r = aptix_txn_new(&tx, repo)) < 0)
		return r;
	if (!(o = named_op(tx, OP_CONV_META, conv, title))) {
		aptix_txn_free(tx);
		return APTIX_ERROR;
	}
	o->old_mode = archived;
	r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	return r;
}

int aptix_txn_conversation_create(aptix_txn *tx, const char *conv,
				  const char *workspace)
{
	aptix_buf ref = APTIX_BUF_INIT;
	int r;

	if ((r = aptix_conv_check_new_id(conv)) < 0)
		return r;
	if (workspace && strlen(workspace) > 128) {
		aptix_error_set(APTIX_ERROR_INVALID, "workspace id longer "
				"than 128 bytes");
		return APTIX_EINVALID;
	}
	/* no head either: its ref may have gone earlier in tx (a clear) */
	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, conv);
	r = aptix_buf_oom(&ref) ? APTIX_ERROR :
		aptix_txn__ref_verify(tx, ref.ptr, NULL);
	aptix_buf_release(&ref);
	if (r < 0)
		return r;
	return named_op(tx, OP_CONV_CREATE, conv, workspace) ? 0 :
		APTIX_ERROR;
}

int aptix_txn__index_put(aptix_txn *tx, aptix_index_table t,
			 const void *key, size_t klen, const void *val,
			 size_t vlen)
{
	struct op *o;

	if (!(o = new_op(tx, OP_INDEX_PUT)) ||
	    aptix_buf_set(&o->val, key, klen) < 0 ||
	    aptix_buf_set(&o->content, val, vlen) < 0)
		return APTIX_ERROR;
	o->old_mode = (int)t;
	return 0;
}

int aptix_conversation_set_title(aptix_repo *repo, const char *conv,
				 const char *title)
{
	return aptix_conversation_set_title_keys(repo, conv, title, NULL, 0);
}

int aptix_conversation_set_title_keys(aptix_repo *repo, const char *conv,
				      const char *title,
				      const char *const *keys, size_t nkeys)
{
	aptix_credential c;
	char why[160];
	const char *p;

	for (p = title; *p == ' ' || *p == '\t'; p++)
		;
	if (!*p) {
		aptix_error_set(APTIX_ERROR_INVALID, "the title is empty");
		return APTIX_EINVALID;
	}
	for (p = title; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			aptix_error_set(APTIX_ERROR_INVALID, "the title has "
					"a control character (one line, "
					"please)");
			return APTIX_EINVALID;
		}
	if (strlen(title) > APTIX_SUMMARY_MAX) {
		aptix_error_set(APTIX_ERROR_INVALID, "the title is longer "
				"than %d bytes", APTIX_SUMMARY_MAX);
		return APTIX_EINVALID;
	}
	if (!aptix_utf8_valid(title, strlen(title))) {
		aptix_error_set(APTIX_ERROR_INVALID, "the title is not "
				"valid UTF-8");
		return APTIX_EINVALID;
	}
	/* as an instruction: a title is stored, and shown everywhere */
	if (aptix_credscan_find(&c, title, strlen(title), keys, nkeys)) {
		aptix_error_set(APTIX_ERROR_INVALID, "the title holds %s, %s: "
				"refusing to store it",
				aptix_credential_kind(&c),
				aptix_credential_describe(why, sizeof(why),
							  &c));
		return APTIX_EINVALID;
	}
	return conv_meta(repo, conv, title, -1);
}

int aptix_conversation_set_archived(aptix_repo *repo, const char *conv,
				    int archived)
{
	return conv_meta(repo, conv, NULL, archived != 0);
}

/*
 * A ref, its reflog entry and, for a conversation's ref, the index's
 * record of the conversation's head: the one place that ties them.
 */
static int apply_ref(aptix_backend_txn *bt, struct op *o, int64_t now)
{
	const char *conv = aptix_refs__conversation(o->name);
	int r = aptix_refs__apply(bt, o->name, o->newval, o->old_mode,
				  &o->old_id, &o->new_id, o->reason, now);

	if (r < 0 || !conv || (o->newval && !strncmp(o->newval, "ref: ", 5)))
		return r;
	return aptix_index__set_head(bt, conv, o->newval ? &o->new_id : NULL,
				     now);
}

/* A key-value store may flush this write with the next one. */
static void defer_sync(aptix_backend_txn *bt)
{
	aptix_store_wtxn *w = aptix_backend_kv_wtxn(bt);
	aptix_store *s = w ? aptix_store_of_wtxn(w) : NULL;

	if (s && s->wdefer_sync)
		s->wdefer_sync(w);
}

/*
 * An object this write uses without writing it (it was there when the
 * write was made) must still be there: aptix gc may have deleted it
 * meanwhile, if nothing reached it then.
 */
int aptix_txn__require_object(aptix_txn *tx, const aptix_oid *id)
{
	struct op *o = new_op(tx, OP_OBJECT_REQUIRE);

	if (!o)
		return APTIX_ERROR;
	o->id = *id;
	return 0;
}

static int require_object(aptix_backend_txn *bt, const aptix_oid *id)
{
	aptix_odb_backend *odb = bt->backend->odb;
	aptix_buf val = APTIX_BUF_INIT;
	int r = odb->read_stored(&val, odb, bt, id);

	aptix_buf_release(&val);
	if (r != APTIX_ENOTFOUND)
		return r;
	aptix_error_set(APTIX_ERROR_ODB, "object %s, which this write uses, "
			"was deleted meanwhile (by 'aptix gc'?): nothing was "
			"written; run the command again", aptix_oid_hex(id));
	return APTIX_ENOTFOUND;
}

/* Objects written together at most (write_stored_many). */
#define OBJECT_RUN 1000

typedef int (*object_run_fn)(void *ctx, const aptix_oid *ids,
			     const void *const *vals, const size_t *lens,
			     size_t n);

/* Every queued object to fn, in runs of up to OBJECT_RUN. */
static int object_runs(aptix_txn *tx, object_run_fn fn, void *ctx)
{
	aptix_oid *ids;
	const void **vals;
	size_t *lens, n = 0, i;
	int r = 0;

	ids = aptix__malloc(OBJECT_RUN * sizeof(*ids));
	vals = aptix__malloc(OBJECT_RUN * sizeof(*vals));
	lens = aptix__malloc(OBJECT_RUN * sizeof(*lens));
	if (!ids || !vals || !lens)
		r = APTIX_ERROR;
	for (i = 0; r == 0 && i <= tx->n; i++) {
		if (i < tx->n && tx->ops[i].kind == OP_OBJECT) {
			ids[n] = tx->ops[i].id;
			vals[n] = tx->ops[i].val.ptr;
			lens[n++] = tx->ops[i].val.len;
		}
		if (n && (n == OBJECT_RUN || i == tx->n)) {
			r = fn(ctx, ids, vals, lens, n);
			n = 0;
		}
	}
	free(ids);
	free(vals);
	free(lens);
	return r;
}

static int write_run(void *ctx, const aptix_oid *ids,
		     const void *const *vals, const size_t *lens, size_t n)
{
	aptix_backend_txn *bt = ctx;
	aptix_odb_backend *odb = bt->backend->odb;

	return odb->write_stored_many(odb, bt, ids, vals, lens, n);
}

static int prepare_run(void *ctx, const aptix_oid *ids,
		       const void *const *vals, const size_t *lens, size_t n)
{
	aptix_odb_backend *odb = ctx;

	return odb->prepare_stored(odb, ids, vals, lens, n);
}

/*
 * Every queued object, first, in calls of up to OBJECT_RUN objects to a
 * backend that takes batches (one round trip, not one an object): an
 * object never depends on a record or a ref, and they may depend on it
 * (a session's index records are made after its objects are queued).
 */
static int write_objects(aptix_backend_txn *bt, aptix_txn *tx)
{
	return object_runs(tx, write_run, bt);
}

/* The words of the sessions written, into the search index. */
static int apply_search(aptix_backend_txn *bt, aptix_txn *tx)
{
	struct aptix_index_session_op **ops;
	size_t i, n = 0;
	int r;

	for (i = 0; i < tx->n; i++)
		n += tx->ops[i].kind == OP_SESSION_INDEX;
	if (!n)
		return 0;
	if (!(ops = aptix__calloc(n, sizeof(*ops))))
		return APTIX_ERROR;
	for (i = 0, n = 0; i < tx->n; i++)
		if (tx->ops[i].kind == OP_SESSION_INDEX)
			ops[n++] = tx->ops[i].sess;
	r = aptix_index__search_apply(bt, ops, n);
	free(ops);
	return r;
}

static int apply_fn(aptix_backend_txn *bt, void *payload)
{
	aptix_txn *tx = payload;
	aptix_odb_backend *odb = bt->backend->odb;
	int64_t now = aptix_now_ms();
	int batched = odb->write_stored_many && !tx->row_by_row;
	size_t i;
	int r = 0;

	/* an index half rebuilt is not written to (index.c) */
	if ((r = aptix_index__check_complete(bt)) < 0)
		return r;
	if (tx->defer_sync)
		defer_sync(bt);
	if (batched)
		r = write_objects(bt, tx);

	for (i = 0; i < tx->n && !r; i++) {
		struct op *o = &tx->ops[i];

		switch (o->kind) {
		case OP_OBJECT:
			r = batched ? 0 :
				odb->write_stored(odb, bt, &o->id, o->val.ptr,
						  o->val.len);
			break;
		case OP_SESSION_INDEX:
			r = aptix_index__apply_session(bt, o->sess);
			break;
		case OP_REF:
			r = apply_ref(bt, o, now);
			break;
		case OP_RUNNING_CLAIM:
			r = running_claim(bt, o);
			break;
		case OP_RUNNING_RELEASE:
			r = running_release(bt, o);
			break;
		case OP_REF_VERIFY:
			r = ref_verify(bt, o);
			break;
		case OP_CONV_META:
			r = aptix_index__conv_meta(bt, o->name, o->newval,
						   o->old_mode);
			break;
		case OP_CONV_CREATE:
			r = aptix_index__conv_create(bt, o->name, o->newval,
						     now);
			break;
		case OP_OBJECT_REQUIRE:
			r = require_object(bt, &o->id);
			break;
		case OP_INDEX_PUT:
			r = bt->backend->index->put(bt->backend->index, bt,
						    (aptix_index_table)
						    o->old_mode, o->val.ptr,
						    o->val.len,
						    o->content.ptr,
						    o->content.len);
			break;
		}
	}
	return r ? r : apply_search(bt, tx);
}

void aptix_txn__defer_sync(aptix_txn *tx)
{
	tx->defer_sync = 1;
}

void aptix_txn__row_by_row(aptix_txn *tx)
{
	tx->row_by_row = 1;
}

int aptix_txn_commit(aptix_txn *tx)
{
	aptix_backend *be = tx->repo->backend;
	int r;

	if (!tx->n)
		return 0;
	/* what goes elsewhere (S3) is put before the transaction opens */
	if (be->odb && be->odb->prepare_stored &&
	    (r = object_runs(tx, prepare_run, be->odb)) < 0)
		return r;
	r = be->transaction(be, apply_fn, tx);
	if (!r)
		clear_ops(tx);
	return r;
}
