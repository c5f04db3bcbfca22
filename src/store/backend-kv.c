/*
 * src/store/backend-kv.c - the domain vtables of a storage backend
 * (aptix/sys/backend.h) over a key-value store (aptix/sys/store_backend.h):
 * one adapter for LMDB and memory.
 *
 * Layout, in the store's tables (objects-format.md, "The LMDB store"):
 * objects: raw id -> stored form (odb-store.c); refs: name -> value;
 * reflog: name NUL be64 sequence -> old id, new id, be64 time in ms,
 * message; running: conversation -> claim record; the index tables as
 * their names say; meta: key -> text.
 */
#include "util/common.h"
#include "store/backend-kv.h"
#include "store/odb-store.h"
#include "store/backend-vtables.h"
#include "object/zstream.h"
#include "aptix/oid.h"

struct kv {
	aptix_backend parent;
	aptix_refdb_backend refdb;
	aptix_index_backend index;
	aptix_claims_backend claims;
	void (*odb_free)(aptix_odb_backend *b);
	aptix_store *store;
	char name[32];
};

struct kv_txn {
	aptix_backend_txn parent;
	aptix_store_wtxn *w;
};

#define KV_OF(p, field) \
	((struct kv *)(void *)((char *)(p) - offsetof(struct kv, field)))

static int kv_transaction(aptix_backend *b, aptix_backend_txn_fn fn,
			  void *payload);

aptix_store *aptix_backend_kv_store(aptix_backend *b)
{
	return b && b->transaction == kv_transaction ?
		((struct kv *)b)->store : NULL;
}

aptix_store_wtxn *aptix_backend_kv_wtxn(aptix_backend_txn *tx)
{
	return tx && tx->backend->transaction == kv_transaction ?
		((struct kv_txn *)tx)->w : NULL;
}

int aptix_backend_kv_foreign(aptix_backend_txn *tx)
{
	aptix_error_set(APTIX_ERROR_REPOSITORY, "a transaction of the '%s' "
			"backend given to a key-value store's slot",
			tx ? tx->backend->name : "(none)");
	return APTIX_EINVALID;
}

struct trampoline {
	struct kv *kv;
	aptix_backend_txn_fn fn;
	void *payload;
};

static int trampoline_fn(aptix_store_wtxn *w, void *payload)
{
	struct trampoline *t = payload;
	struct kv_txn tx;

	tx.parent.backend = &t->kv->parent;
	tx.w = w;
	return t->fn(&tx.parent, t->payload);
}

static int kv_transaction(aptix_backend *b, aptix_backend_txn_fn fn,
			  void *payload)
{
	struct trampoline t;

	t.kv = (struct kv *)b;
	t.fn = fn;
	t.payload = payload;
	return t.kv->store->write(t.kv->store, trampoline_fn, &t);
}

/* A read in tx (its own writes seen) or at the last commit. */
static int kv_get(aptix_buf *out, struct kv *kv, aptix_backend_txn *tx,
		  aptix_table t, const void *key, size_t klen)
{
	aptix_store *s = kv->store;

	if (!tx)
		return s->get(out, s, t, key, klen);
	if (!aptix_backend_kv_wtxn(tx))
		return aptix_backend_kv_foreign(tx);
	return s->wget(out, aptix_backend_kv_wtxn(tx), t, key, klen);
}

static int kv_put(struct kv *kv, aptix_backend_txn *tx, aptix_table t,
		  const void *key, size_t klen, const void *val, size_t vlen)
{
	aptix_store_wtxn *w = aptix_backend_kv_wtxn(tx);

	return w ? kv->store->wput(w, t, key, klen, val, vlen) :
		aptix_backend_kv_foreign(tx);
}

static int kv_del(struct kv *kv, aptix_backend_txn *tx, aptix_table t,
		  const void *key, size_t klen)
{
	aptix_store_wtxn *w = aptix_backend_kv_wtxn(tx);

	return w ? kv->store->wdel(w, t, key, klen) :
		aptix_backend_kv_foreign(tx);
}

/*
 * Compare-and-swap of one text value: expect NULL any, "" absent, else
 * exactly; val NULL deletes. Both refs and claims are this.
 */
static int kv_cas(struct kv *kv, aptix_backend_txn *tx, aptix_table t,
		  const char *key, const char *expect, const char *val)
{
	aptix_buf cur = APTIX_BUF_INIT;
	size_t klen = strlen(key);
	int r = kv_get(&cur, kv, tx, t, key, klen);

	if (r < 0 && r != APTIX_ENOTFOUND)
		goto done;
	if (expect && (r == APTIX_ENOTFOUND ? *expect != '\0' :
		       cur.len != strlen(expect) ||
		       memcmp(cur.ptr, expect, cur.len))) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "'%s' changed "
				"meanwhile", key);
		r = APTIX_EMISMATCH;
		goto done;
	}
	if (val)
		r = kv_put(kv, tx, t, key, klen, val, strlen(val));
	else if (r == 0)
		r = kv_del(kv, tx, t, key, klen);
	else
		aptix_error_set(APTIX_ERROR_REFERENCE, "'%s' not found", key);
done:
	aptix_buf_release(&cur);
	return r;
}

/* --- meta --------------------------------------------------------------- */

static int kv_meta_get(aptix_buf *out, aptix_backend *b,
		       aptix_backend_txn *tx, const char *key)
{
	return kv_get(out, (struct kv *)b, tx, APTIX_TABLE_META, key,
		      strlen(key));
}

static int kv_meta_put(aptix_backend_txn *tx, const char *key,
		       const char *value)
{
	return kv_put((struct kv *)tx->backend, tx, APTIX_TABLE_META, key,
		      strlen(key), value, strlen(value));
}

/* --- refs and reflogs --------------------------------------------------- */

static int ref_lookup(aptix_buf *out, aptix_refdb_backend *b,
		      aptix_backend_txn *tx, const char *name)
{
	return kv_get(out, KV_OF(b, refdb), tx, APTIX_TABLE_REFS, name,
		      strlen(name));
}

static int reflog_resolve(const unsigned char **out, size_t *olen,
			  aptix_store *s, aptix_buf *tmp, const char *name,
			  const unsigned char *v, size_t vlen);

/* A walk of the keys that start with name (len nlen). */
struct name_walk {
	const char *name;
	size_t nlen;
	aptix_backend_record_cb cb;	/* refs */
	aptix_reflog_cb log_cb;		/* reflog entries */
	aptix_reflog_all_cb all_cb;	/* every reflog's */
	void *payload;
	aptix_store *store;		/* reflogs: where links lead */
};

/*
 * Walks table t with fn from prefix ("" or NULL: from the start), which w
 * names for fn to stop at its end.
 */
static int walk_prefix(aptix_store *s, aptix_table t, const char *prefix,
		       aptix_store_iter_cb fn, struct name_walk *w)
{
	w->name = prefix ? prefix : "";
	w->nlen = strlen(w->name);
	return s->iter(s, t, w->nlen ? w->name : NULL, w->nlen, 0, fn, w);
}

/*
 * Hands the reflog entry v of name (rw->name when name is NULL) to the
 * walk's callback: all_cb with name, or log_cb when name is NULL. A
 * link is handed as the entry it links to.
 */
static int reflog_emit(struct name_walk *rw, const char *name,
		       const unsigned char *v, size_t vlen)
{
	aptix_buf tmp = APTIX_BUF_INIT;
	aptix_reflog_entry e;
	char *msg = NULL;
	int r;

	r = reflog_resolve(&v, &vlen, rw->store, &tmp, name ? name : rw->name,
			   v, vlen);
	if (r == 0) {
		memcpy(e.old_id.id, v, 32);
		memcpy(e.new_id.id, v + 32, 32);
		e.time_ms = (int64_t)aptix__get_be64(v + 64);
		if (!(msg = aptix__strndup((const char *)v + 72, vlen - 72)))
			r = APTIX_ERROR;
	}
	if (r == 0) {
		e.message = msg;
		r = name ? rw->all_cb(name, &e, rw->payload) :
			rw->log_cb(&e, rw->payload);
	}
	free(msg);
	aptix_buf_release(&tmp);
	return r;
}

static int prefix_cb(const void *key, size_t klen, const void *val,
		     size_t vlen, void *payload)
{
	struct name_walk *pw = payload;

	if (klen < pw->nlen || memcmp(key, pw->name, pw->nlen))
		return APTIX_ITEROVER;
	return pw->cb(key, klen, val, vlen, pw->payload);
}

static int ref_iterate(aptix_refdb_backend *b, const char *prefix,
		       aptix_backend_record_cb cb, void *payload)
{
	struct name_walk pw = { NULL, 0, cb, NULL, NULL, payload, NULL };

	return walk_prefix(KV_OF(b, refdb)->store, APTIX_TABLE_REFS, prefix,
			   prefix_cb, &pw);
}

struct last_seq {
	const char *name;
	size_t nlen;
	uint64_t seq;
	int found;
};

static int last_seq_cb(const void *key, size_t klen, const void *val UNUSED,
		       size_t vlen UNUSED, void *payload)
{
	struct last_seq *ls = payload;

	if (klen == ls->nlen + 9 && !memcmp(key, ls->name, ls->nlen + 1)) {
		ls->seq = aptix__get_be64((const unsigned char *)key +
					  ls->nlen + 1);
		ls->found = 1;
	}
	return APTIX_ITEROVER;
}

/* name NUL and the highest sequence number: where a walk back starts. */
static size_t reflog_last_key(unsigned char *key, const char *name)
{
	size_t nlen = strlen(name);

	memcpy(key, name, nlen);
	key[nlen] = '\0';
	memset(key + nlen + 1, 0xff, 8);
	return nlen + 9;
}

/*
 * HEAD's entry of a move of the ref it points at is that ref's entry
 * again (refs.c logs both, as git does). It is kept as a link to it
 * (objects-format.md, "reflog"), a value shorter than an entry's 72
 * bytes of head:
 *
 *   0x01 <time: be64> <sequence: varint> <conversation: 16-byte UUID>
 *   0x02 <time: be64> <sequence: varint> <the target ref's name>
 *
 * tag 1 names refs/conversations/<UUID>, tag 2 any ref. A link is
 * written only when the target's last entry has the very bytes HEAD's
 * would have, and when it is shorter than 72 bytes.
 */
#define REFLOG_HEAD 72		/* old id, new id, time */
#define REFLOG_LINK_UUID 1
#define REFLOG_LINK_NAME 2
#define REFLOG_LINK_FORMAT 7	/* the store format that has links */
#define CONV_PREFIX "refs/conversations/"

static int reflog_link_encode(aptix_buf *out, const char *target,
			      uint64_t seq, int64_t time_ms)
{
	const char *conv = target + strlen(CONV_PREFIX);
	char back[APTIX_UUID_STRSZ + 1];
	unsigned char u[16], tbuf[8];
	int uuid;

	uuid = !strncmp(target, CONV_PREFIX, strlen(CONV_PREFIX)) &&
		aptix_uuid_parse(u, conv) == 0;
	if (uuid) {
		aptix_uuid_format(back, u);
		uuid = !strcmp(back, conv);
	}
	aptix_buf_clear(out);
	aptix_buf_putc(out, uuid ? REFLOG_LINK_UUID : REFLOG_LINK_NAME);
	aptix__put_be64(tbuf, (uint64_t)time_ms);
	aptix_buf_put(out, tbuf, 8);
	aptix__put_varint(out, seq);
	if (uuid)
		aptix_buf_put(out, u, 16);
	else
		aptix_buf_puts(out, target);
	if (aptix_buf_oom(out))
		return APTIX_ERROR;
	return out->len < REFLOG_HEAD;
}

/*
 * The link v (vlen < 72) decoded: its target's key (name NUL be64
 * sequence) into key, its time into *time_ms. 0, or APTIX_ECORRUPT.
 */
static int reflog_link_decode(aptix_buf *key, int64_t *time_ms,
			      const unsigned char *v, size_t vlen)
{
	const unsigned char *p = v + 9, *end = v + vlen;
	char conv[APTIX_UUID_STRSZ + 1];
	unsigned char sbuf[8];
	uint64_t seq;

	if (vlen < 10 || (v[0] != REFLOG_LINK_UUID &&
			  v[0] != REFLOG_LINK_NAME) ||
	    aptix__get_varint(&seq, &p, end) < 0 ||
	    (v[0] == REFLOG_LINK_UUID && end - p != 16) ||
	    (v[0] == REFLOG_LINK_NAME &&
	     (p == end || memchr(p, '\0', (size_t)(end - p)))))
		return APTIX_ECORRUPT;
	*time_ms = (int64_t)aptix__get_be64(v + 1);
	aptix_buf_clear(key);
	if (v[0] == REFLOG_LINK_UUID) {
		aptix_uuid_format(conv, p);
		aptix_buf_puts(key, CONV_PREFIX);
		aptix_buf_puts(key, conv);
	} else {
		aptix_buf_put(key, p, (size_t)(end - p));
	}
	aptix_buf_putc(key, '\0');
	aptix__put_be64(sbuf, seq);
	aptix_buf_put(key, sbuf, 8);
	return aptix_buf_oom(key) ? APTIX_ERROR : 0;
}

int aptix_backend_kv_reflog_time(int64_t *time_ms, const void *val,
				 size_t vlen)
{
	aptix_buf key = APTIX_BUF_INIT;
	int r;

	if (vlen >= REFLOG_HEAD) {
		*time_ms = (int64_t)aptix__get_be64((const unsigned char *)
						    val + 64);
		return 0;
	}
	r = reflog_link_decode(&key, time_ms, val, vlen);
	aptix_buf_release(&key);
	return r;
}

/*
 * The entry v of name's reflog as old id, new id, time and reason:
 * v itself, or for a link what it links to (read into tmp). 0, or
 * APTIX_ECORRUPT (v malformed, or its target missing or a link).
 */
static int reflog_resolve(const unsigned char **out, size_t *olen,
			  aptix_store *s, aptix_buf *tmp, const char *name,
			  const unsigned char *v, size_t vlen)
{
	aptix_buf key = APTIX_BUF_INIT;
	int64_t t;
	int r;

	*out = v;
	*olen = vlen;
	if (vlen >= REFLOG_HEAD)
		return 0;
	r = reflog_link_decode(&key, &t, v, vlen);
	if (r == 0)
		r = s->get(tmp, s, APTIX_TABLE_REFLOG, key.ptr, key.len);
	if (r == 0 && tmp->len >= REFLOG_HEAD) {
		*out = (const unsigned char *)tmp->ptr;
		*olen = tmp->len;
	} else if (r == 0 || r == APTIX_ENOTFOUND || r == APTIX_ECORRUPT) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "reflog of '%s' is "
				"corrupt: an entry links to %s", name,
				r == APTIX_ECORRUPT ? "nothing readable" :
				"an entry that is missing or a link");
		r = APTIX_ECORRUPT;
	}
	aptix_buf_release(&key);
	return r;
}

/* The value of the entry e: old id, new id, be64 time, reason. */
static int reflog_encode(aptix_buf *val, const aptix_reflog_entry *e)
{
	unsigned char tbuf[8];

	aptix__put_be64(tbuf, (uint64_t)e->time_ms);
	aptix_buf_clear(val);
	aptix_buf_put(val, e->old_id.id, APTIX_OID_RAWSZ);
	aptix_buf_put(val, e->new_id.id, APTIX_OID_RAWSZ);
	aptix_buf_put(val, tbuf, 8);
	aptix_buf_puts(val, e->message ? e->message : "");
	return aptix_buf_oom(val) ? APTIX_ERROR : 0;
}

/* The key of name's next entry (name NUL be64 sequence) into key. */
static int reflog_next_key(size_t *klen, uint64_t *seq, struct kv *kv,
			   aptix_store_wtxn *w, unsigned char *key,
			   const char *name)
{
	struct last_seq ls = { name, strlen(name), 0, 0 };
	int r;

	*klen = reflog_last_key(key, name);
	if ((r = kv->store->witer_rev(w, APTIX_TABLE_REFLOG, key, *klen,
				      last_seq_cb, &ls)) < 0)
		return r;
	*seq = ls.found ? ls.seq + 1 : 0;
	aptix__put_be64(key + ls.nlen + 1, *seq);
	return ls.found;
}

/*
 * HEAD's entry val as a link into link, when HEAD points at a ref whose
 * last entry is val: 1, else 0 (or an error).
 */
static int head_link(aptix_buf *link, struct kv *kv, aptix_store_wtxn *w,
		     const aptix_buf *val)
{
	unsigned char key[APTIX_REF_MAXLEN + 10];
	aptix_buf head = APTIX_BUF_INIT, last = APTIX_BUF_INIT;
	size_t klen;
	uint64_t seq;
	int r;

	r = kv->store->wget(&head, w, APTIX_TABLE_REFS, "HEAD", 4);
	if (r < 0 || head.len < 6 || head.len - 5 > APTIX_REF_MAXLEN ||
	    memcmp(head.ptr, "ref: ", 5) || memchr(head.ptr, '\0', head.len)) {
		r = r == APTIX_ENOTFOUND ? 0 : r;
		goto done;
	}
	if ((r = reflog_next_key(&klen, &seq, kv, w, key, head.ptr + 5)) <= 0)
		goto done;
	aptix__put_be64(key + klen - 8, --seq);
	r = kv->store->wget(&last, w, APTIX_TABLE_REFLOG, key, klen);
	if (r < 0 || last.len != val->len ||
	    memcmp(last.ptr, val->ptr, val->len)) {
		r = r == APTIX_ENOTFOUND ? 0 : r;
		goto done;
	}
	r = reflog_link_encode(link, head.ptr + 5, seq, (int64_t)
			       aptix__get_be64((const unsigned char *)
					       val->ptr + 64));
	if (r > 0)
		r = aptix_odb_store_raise_format(w, REFLOG_LINK_FORMAT) < 0 ?
			APTIX_ERROR : 1;
done:
	if (r >= 0)
		aptix_error_clear();
	aptix_buf_release(&head);
	aptix_buf_release(&last);
	return r;
}

static int ref_reflog_append(aptix_refdb_backend *b, aptix_backend_txn *tx,
			     const char *name, const aptix_reflog_entry *e)
{
	struct kv *kv = KV_OF(b, refdb);
	aptix_store_wtxn *w = aptix_backend_kv_wtxn(tx);
	unsigned char key[APTIX_REF_MAXLEN + 10];
	aptix_buf val = APTIX_BUF_INIT, link = APTIX_BUF_INIT;
	size_t klen;
	uint64_t seq;
	int r;

	if (!w)
		return aptix_backend_kv_foreign(tx);
	if (strlen(name) > APTIX_REF_MAXLEN)
		return APTIX_EINVALID;
	if ((r = reflog_next_key(&klen, &seq, kv, w, key, name)) < 0 ||
	    (r = reflog_encode(&val, e)) < 0)
		goto done;
	r = strcmp(name, "HEAD") ? 0 : head_link(&link, kv, w, &val);
	if (r >= 0)
		r = r ? kv->store->wput(w, APTIX_TABLE_REFLOG, key, klen,
					link.ptr, link.len) :
			kv->store->wput(w, APTIX_TABLE_REFLOG, key, klen,
					val.ptr, val.len);
done:
	aptix_buf_release(&val);
	aptix_buf_release(&link);
	return r;
}

static int ref_update(aptix_refdb_backend *b, aptix_backend_txn *tx,
		      const aptix_refdb_update *u)
{
	int r = kv_cas(KV_OF(b, refdb), tx, APTIX_TABLE_REFS, u->name,
		       u->old_value, u->new_value);

	if (r == APTIX_EMISMATCH)
		aptix_error_set(APTIX_ERROR_REFERENCE, "ref '%s' moved",
				u->name);
	if (r < 0 || !u->log)
		return r;
	return ref_reflog_append(b, tx, u->name, u->log);
}

static int reflog_walk_cb(const void *key, size_t klen, const void *val,
			  size_t vlen, void *payload)
{
	struct name_walk *rw = payload;

	if (klen != rw->nlen + 9 || memcmp(key, rw->name, rw->nlen + 1))
		return APTIX_ITEROVER;
	return reflog_emit(rw, NULL, val, vlen);
}

static int ref_reflog_foreach(aptix_refdb_backend *b, const char *name,
			      aptix_reflog_cb cb, void *payload)
{
	aptix_store *s = KV_OF(b, refdb)->store;
	unsigned char key[APTIX_REF_MAXLEN + 10];
	struct name_walk rw = { name, strlen(name), NULL, cb, NULL, payload,
				s };

	if (rw.nlen > APTIX_REF_MAXLEN)
		return APTIX_EINVALID;
	return s->iter(s, APTIX_TABLE_REFLOG, key,
		       reflog_last_key(key, name), 1, reflog_walk_cb, &rw);
}

/* A reflog entry of any name under the walk's prefix. */
static int reflog_all_cb(const void *key, size_t klen, const void *val,
			 size_t vlen, void *payload)
{
	struct name_walk *rw = payload;
	char name[APTIX_REF_MAXLEN + 1];
	size_t nlen;

	if (klen < rw->nlen || memcmp(key, rw->name, rw->nlen))
		return APTIX_ITEROVER;
	nlen = strnlen(key, klen);
	if (nlen + 9 != klen || nlen > APTIX_REF_MAXLEN) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "a reflog entry of "
				"'%.*s' is corrupt", (int)nlen,
				(const char *)key);
		return APTIX_ECORRUPT;
	}
	memcpy(name, key, nlen);
	name[nlen] = '\0';
	return reflog_emit(rw, name, val, vlen);
}

static int ref_reflog_iterate(aptix_refdb_backend *b, const char *prefix,
			      aptix_reflog_all_cb cb, void *payload)
{
	aptix_store *s = KV_OF(b, refdb)->store;
	struct name_walk rw = { NULL, 0, NULL, NULL, cb, payload, s };

	return walk_prefix(s, APTIX_TABLE_REFLOG, prefix, reflog_all_cb, &rw);
}

/* --- index records ------------------------------------------------------ */

static const aptix_table index_tables[APTIX_INDEX__COUNT] = {
	APTIX_TABLE_SESSIONS, APTIX_TABLE_CHILDREN, APTIX_TABLE_CONVS,
	APTIX_TABLE_TIMELINE, APTIX_TABLE_SEARCH, APTIX_TABLE_RECENCY,
	APTIX_TABLE_IMPORTS
};

static int index_get(aptix_buf *out, aptix_index_backend *b,
		     aptix_backend_txn *tx, aptix_index_table t,
		     const void *key, size_t klen)
{
	return kv_get(out, KV_OF(b, index), tx, index_tables[t], key, klen);
}

static int index_view(aptix_index_backend *b, aptix_index_table t,
		      const void *key, size_t klen, aptix_backend_view_cb cb,
		      void *payload)
{
	aptix_store *s = KV_OF(b, index)->store;

	return s->view(s, index_tables[t], key, klen, cb, payload);
}

static int index_iterate(aptix_index_backend *b, aptix_backend_txn *tx,
			 aptix_index_table t, const void *start, size_t slen,
			 unsigned flags, aptix_backend_record_cb cb,
			 void *payload)
{
	aptix_store *s = KV_OF(b, index)->store;
	aptix_store_wtxn *w = aptix_backend_kv_wtxn(tx);

	if (tx && !w)
		return aptix_backend_kv_foreign(tx);
	if (w && (flags & APTIX_INDEX_ITER_REVERSE))
		return s->witer_rev(w, index_tables[t], start, slen, cb,
				    payload);
	if (w) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "this store walks "
				"a write's records only backwards");
		return APTIX_EINVALID;
	}
	return s->iter(s, index_tables[t], start, slen,
		       !!(flags & APTIX_INDEX_ITER_REVERSE), cb, payload);
}

static int index_put(aptix_index_backend *b, aptix_backend_txn *tx,
		     aptix_index_table t, const void *key, size_t klen,
		     const void *val, size_t vlen)
{
	return kv_put(KV_OF(b, index), tx, index_tables[t], key, klen, val,
		      vlen);
}

static int index_del(aptix_index_backend *b, aptix_backend_txn *tx,
		     aptix_index_table t, const void *key, size_t klen)
{
	return kv_del(KV_OF(b, index), tx, index_tables[t], key, klen);
}

static int index_count(uint64_t *out, aptix_index_backend *b,
		       aptix_index_table t)
{
	aptix_store *s = KV_OF(b, index)->store;

	*out = 0;
	return s->count ? s->count(out, s, index_tables[t]) :
		APTIX_ENOTFOUND;
}

/* --- running-turn claims ------------------------------------------------ */

static int claim_lookup(aptix_buf *out, aptix_claims_backend *b,
			aptix_backend_txn *tx, const char *conv)
{
	return kv_get(out, KV_OF(b, claims), tx, APTIX_TABLE_RUNNING, conv,
		      strlen(conv));
}

static int claim_iterate(aptix_claims_backend *b, aptix_backend_record_cb cb,
			 void *payload)
{
	aptix_store *s = KV_OF(b, claims)->store;

	return s->iter(s, APTIX_TABLE_RUNNING, NULL, 0, 0, cb, payload);
}

static int claim_acquire(aptix_claims_backend *b, aptix_backend_txn *tx,
			 const char *conv, const char *record)
{
	int r = kv_cas(KV_OF(b, claims), tx, APTIX_TABLE_RUNNING, conv, "",
		       record);

	return r == APTIX_EMISMATCH ? aptix__claim_error(APTIX_EEXISTS, conv) :
		r;
}

/* "" would mean "absent" to kv_cas: a claim's record is never empty. */
static int claim_cas(aptix_claims_backend *b, aptix_backend_txn *tx,
		     const char *conv, const char *old, const char *record)
{
	aptix_buf cur = APTIX_BUF_INIT;
	int r;

	if (!old || !*old)
		return APTIX_EINVALID;
	r = claim_lookup(&cur, b, tx, conv);
	aptix_buf_release(&cur);
	if (r < 0)
		return r == APTIX_ENOTFOUND ? aptix__claim_error(r, conv) : r;
	r = kv_cas(KV_OF(b, claims), tx, APTIX_TABLE_RUNNING, conv, old,
		   record);
	return r == APTIX_EMISMATCH ? aptix__claim_error(r, conv) : r;
}

APTIX__CLAIMS_CAS_SLOTS(claim_cas)

/* --- the bundle --------------------------------------------------------- */

static int kv_readonly(aptix_backend *b)
{
	aptix_store *s = ((struct kv *)b)->store;

	return s->readonly(s);
}

static int kv_disk_usage(uint64_t *out, aptix_backend *b)
{
	aptix_store *s = ((struct kv *)b)->store;

	return s->disk_usage(out, s);
}

static void kv_free(aptix_backend *b)
{
	struct kv *kv = (struct kv *)b;

	if (!b)
		return;
	if (kv->odb_free)
		kv->odb_free(b->odb);
	if (kv->store)
		kv->store->free(kv->store);
	free(kv);
}

void aptix_backend_kv_release_store(aptix_backend *b)
{
	((struct kv *)b)->store = NULL;
	kv_free(b);
}

APTIX__DOMAIN_VTABLES(kv);

static const aptix_backend kv_bundle = {
	.version = APTIX_BACKEND_VERSION,
	.transaction = kv_transaction,
	.meta_get = kv_meta_get,
	.meta_put = kv_meta_put,
	.readonly = kv_readonly,
	.disk_usage = kv_disk_usage,
	.free = kv_free,
};

int aptix_backend_kv_new(aptix_backend **out, aptix_store *store,
			 const char *name, unsigned layout)
{
	struct kv *kv = aptix__calloc(1, sizeof(*kv));
	aptix_odb_backend *odb;
	int r;

	*out = NULL;
	if (!kv || (r = aptix_odb_backend_store(&odb, store)) < 0) {
		free(kv);
		store->free(store);
		return APTIX_ERROR;
	}
	/* the bundle owns it: an odb it is added to must not free it */
	kv->odb_free = odb->free;
	odb->free = NULL;
	kv->store = store;
	snprintf(kv->name, sizeof(kv->name), "%s", name);
	kv->refdb = kv_refdb;
	kv->index = kv_index;
	kv->claims = kv_claims;
	kv->parent = kv_bundle;
	kv->parent.name = kv->name;
	kv->parent.layout = layout;
	kv->parent.odb = odb;
	kv->parent.refdb = &kv->refdb;
	kv->parent.index = &kv->index;
	kv->parent.claims = &kv->claims;
	*out = &kv->parent;
	return 0;
}
