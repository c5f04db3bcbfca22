/*
 * src/index/index-chain.c - what the model holds, kept in the session index.
 *
 * A turn continues a response chain (previous_response_id), and the
 * chain holds every file version and chunk that its turns sent. Context
 * planning needs that set to leave out what the model has already seen.
 * Walking the ancestors to rebuild it made a turn's cost grow with the
 * length of the conversation; instead each session's index record ends
 * with the state of the chain a child of that session would continue,
 * computed from its parent's record when the session is indexed (in the
 * same write transaction as the turn, and again by reindex), as git's
 * commit-graph keeps generation numbers. Planning then reads one record:
 * a binary search per active file and per retrieved chunk.
 *
 * Chain section of a session record (version 2; see index.c):
 *   u8 flags          1: a chain (the newest committed turn is a link),
 *                     2: unknown (an ancestor was indexed by version 1),
 *                     4: files carry 16-byte fingerprints (below),
 *                     8: the section ends with be64 first (below)
 *   16 bytes          fingerprint of the chain's newest response id
 *   be64 chars        bytes the chain has carried: each turn's raw
 *                     request (or, without one, its instruction, files
 *                     and chunks) and answer
 *   be32 links        turns in the chain
 *   be32 nfiles       then per file, sorted by path: be16 length, path,
 *                     the SHA-256 of the version last sent: its first
 *                     16 bytes with flag 4 (what aptix writes since
 *                     store format 4: a record is read by every
 *                     listing, and 16 bytes tell a changed file from
 *                     an unchanged one as well), else all 32
 *   be32 nchunks      then 16-byte fingerprints of (chunk id, content
 *                     hash), sorted
 *   be64 first        with flag 8: of chars, what the chain's first turn
 *                     sent (its raw request): context.chain-max-chars
 *                     counts what the chain added since, so that a
 *                     restart bigger than the cap is not restarted at
 *                     once (written since format 5; a chain started by
 *                     an older version goes without)
 * A fingerprint is the first 16 bytes of the SHA-256 of the string(s).
 */
#include "util/common.h"
#include "repo/repo.h"
#include "index/index.h"
#include "aptix/context.h"
#include "aptix/index.h"

#define SEC_CHAIN 1
#define SEC_UNKNOWN 2
#define SEC_SHORT 4
#define SEC_FIRST 8
#define SEC_HEAD (1 + 16 + 8 + 4 + 4)

struct cfile {
	const char *path;
	size_t plen;
	const unsigned char *sha;
};

struct cstate {
	int has, unknown;
	size_t fplen;		/* bytes of a file's SHA-256 kept: 16 or 32 */
	unsigned char response[16];
	uint64_t chars;
	uint64_t first;
	int has_first;
	uint32_t links;
	struct cfile *files;
	size_t nfiles;
	const unsigned char *chunks;	/* 16 * nchunks bytes */
	size_t nchunks;
};

static void put32(aptix_buf *b, uint32_t v)
{
	unsigned char t[4];

	aptix__put_be32(t, v);
	aptix_buf_put(b, t, 4);
}

static void fingerprint(unsigned char out[16], const char *a, const char *b)
{
	aptix_buf s = APTIX_BUF_INIT;
	aptix_oid id;

	aptix_buf_puts(&s, a ? a : "");
	if (b) {
		aptix_buf_putc(&s, '\0');
		aptix_buf_puts(&s, b);
	}
	if (aptix_buf_oom(&s) || aptix_sha256(&id, s.ptr, s.len) < 0)
		memset(&id, 0, sizeof(id));
	memcpy(out, id.id, 16);
	aptix_buf_release(&s);
}

static int corrupt(void)
{
	aptix_error_set(APTIX_ERROR_REPOSITORY, "index record of a chain is "
			"corrupt: run 'aptix reindex'");
	return APTIX_ECORRUPT;
}

/* Parse a chain section; st->files is allocated (free it). */
static int parse(struct cstate *st, const unsigned char *p, size_t len)
{
	const unsigned char *end = p + len;
	size_t i, n;

	memset(st, 0, sizeof(*st));
	if (len < SEC_HEAD)
		return corrupt();
	st->has = (p[0] & SEC_CHAIN) != 0;
	st->unknown = (p[0] & SEC_UNKNOWN) != 0;
	st->has_first = (p[0] & SEC_FIRST) != 0;
	st->fplen = p[0] & SEC_SHORT ? APTIX_INDEX_CHAIN_FP : 32;
	memcpy(st->response, p + 1, 16);
	st->chars = aptix__get_be64(p + 17);
	st->links = aptix__get_be32(p + 25);
	n = aptix__get_be32(p + 29);
	p += SEC_HEAD;
	if (n > len / (2 + st->fplen))
		return corrupt();
	if (n && !(st->files = aptix__calloc(n, sizeof(*st->files))))
		return APTIX_ERROR;
	for (i = 0; i < n; i++) {
		size_t plen;

		if (end - p < 2)
			goto bad;
		plen = (size_t)p[0] << 8 | p[1];
		if ((size_t)(end - p) < 2 + plen + st->fplen)
			goto bad;
		st->files[i].path = (const char *)p + 2;
		st->files[i].plen = plen;
		st->files[i].sha = p + 2 + plen;
		p += 2 + plen + st->fplen;
	}
	st->nfiles = n;
	if (end - p < 4)
		goto bad;
	n = aptix__get_be32(p);
	p += 4;
	if ((size_t)(end - p) / 16 < n ||
	    (size_t)(end - p) != n * 16 + (st->has_first ? 8 : 0))
		goto bad;
	st->chunks = p;
	st->nchunks = n;
	if (st->has_first)
		st->first = aptix__get_be64(p + n * 16);
	return 0;
bad:
	free(st->files);
	st->files = NULL;
	return corrupt();
}

static int path_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static const struct cfile *find_file(const struct cstate *st,
				     const char *path)
{
	size_t lo = 0, hi = st->nfiles, plen = strlen(path);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = path_cmp(path, plen, st->files[mid].path,
				 st->files[mid].plen);

		if (!c)
			return &st->files[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static int has_chunk(const struct cstate *st, const unsigned char fp[16])
{
	size_t lo = 0, hi = st->nchunks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(fp, st->chunks + mid * 16, 16);

		if (!c)
			return 1;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return 0;
}

/* --- What a turn adds ----------------------------------------------- */

void aptix_index__delta_release(struct aptix_index_chain_delta *d)
{
	size_t i;

	for (i = 0; i < d->nfiles; i++)
		free(d->paths[i]);
	free(d->paths);
	free(d->shas);
	free(d->chunks);
	memset(d, 0, sizeof(*d));
}

static void add_size(struct aptix_index_chain_delta *d,
		     const struct aptix_index_reader *rd,
		     const aptix_oid *id)
{
	size_t n;

	if (aptix_oid_is_zero(id))
		return;
	if (rd->size(&n, rd->ctx, id) == 0) {
		d->chars += n;
	} else {
		d->sizes_unknown = 1;	/* purged since (aptix purge) */
		aptix_error_clear();
	}
}

int aptix_index__delta_from_turn(struct aptix_index_chain_delta *d,
				 const struct aptix_index_reader *rd,
				 const aptix_turn *t,
				 size_t instruction_len)
{
	size_t i, n;

	memset(d, 0, sizeof(*d));
	d->link = t->status == APTIX_TURN_COMPLETED && t->response_id &&
		*t->response_id;
	if (!d->link)
		return 0;
	d->continues = t->previous_response_id && *t->previous_response_id &&
		!t->chain_restarted;
	fingerprint(d->response, t->response_id, NULL);
	if (d->continues)
		fingerprint(d->previous, t->previous_response_id, NULL);
	/* what was sent (the raw request: instruction, files, chunks and
	 * any rehydrated context) and what came back */
	if (!aptix_oid_is_zero(&t->request))
		add_size(d, rd, &t->request);
	else
		d->chars = instruction_len;
	d->answer = d->chars;
	add_size(d, rd, &t->answer);
	d->answer = d->chars - d->answer;
	if (t->nfiles) {
		d->paths = aptix__calloc(t->nfiles, sizeof(*d->paths));
		d->shas = aptix__calloc(t->nfiles, sizeof(*d->shas));
		if (!d->paths || !d->shas)
			return APTIX_ERROR;
	}
	for (i = n = 0; i < t->nfiles; i++) {
		const aptix_file_ref *f = &t->files[i];
		aptix_oid sha;

		if (!f->sent || !f->sha256 ||
		    aptix_oid_fromstr(&sha, f->sha256) < 0) {
			aptix_error_clear();
			continue;
		}
		if (strlen(f->path) > 0xffff)
			continue;
		if (!(d->paths[n] = aptix__strdup(f->path)))
			return APTIX_ERROR;
		memcpy(d->shas[n], sha.id, 32);
		d->nfiles = ++n;
		if (f->size > 0 && aptix_oid_is_zero(&t->request))
			d->chars += (uint64_t)f->size;
	}
	if (t->nchunks &&
	    !(d->chunks = aptix__calloc(t->nchunks, sizeof(*d->chunks))))
		return APTIX_ERROR;
	for (i = 0; i < t->nchunks; i++) {
		const aptix_chunk_ref *c = &t->chunks[i];

		if (!c->sent)
			continue;
		fingerprint(d->chunks[d->nchunks++], c->chunk_id,
			    c->content_hash);
		if (aptix_oid_is_zero(&t->request))
			add_size(d, rd, &c->snippet);
	}
	return 0;
}

/* --- The state a child continues ------------------------------------ */

struct nfile {
	const char *path;
	size_t plen;
	const unsigned char *sha;
};

static int nfile_cmp(const void *a, const void *b)
{
	const struct nfile *x = a, *y = b;

	return path_cmp(x->path, x->plen, y->path, y->plen);
}

static int chunk_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

static void put_unknown(aptix_buf *out)
{
	unsigned char z[SEC_HEAD + 4];

	memset(z, 0, sizeof(z));
	z[0] = SEC_UNKNOWN;
	aptix_buf_put(out, z, sizeof(z));
}

/*
 * Append the chain section of a new session's record. parent_sec is the
 * parent record's section (NULL: a root, or a parent of version 1 when
 * parent_known is 0); committed: the session is a committed snapshot
 * (a failed one carries its parent's state on unchanged).
 */
int aptix_index__chain_encode(aptix_buf *out, const unsigned char *parent_sec,
			      size_t parent_len, int parent_known,
			      int committed,
			      const struct aptix_index_chain_delta *d,
			      size_t fplen, int first)
{
	struct cstate base;
	struct nfile *nf = NULL;
	unsigned char (*ch)[16] = NULL;
	unsigned char head[SEC_HEAD];
	size_t i, j, n, nc;
	int r = 0;

	memset(&base, 0, sizeof(base));
	if (!committed) {
		if (!parent_known)
			put_unknown(out);
		else if (parent_sec)
			aptix_buf_put(out, parent_sec, parent_len);
		else {	/* a failed root: no chain */
			memset(head, 0, sizeof(head));
			aptix_buf_put(out, head, sizeof(head));
			put32(out, 0);
		}
		return aptix_buf_oom(out) ? APTIX_ERROR : 0;
	}
	if (d->link && d->continues) {
		if (!parent_known) {
			put_unknown(out);
			return aptix_buf_oom(out) ? APTIX_ERROR : 0;
		}
		if (parent_sec &&
		    (r = parse(&base, parent_sec, parent_len)) < 0)
			return r;
		if (base.unknown) {
			free(base.files);
			put_unknown(out);
			return aptix_buf_oom(out) ? APTIX_ERROR : 0;
		}
		if (!base.has || memcmp(base.response, d->previous, 16) ||
		    base.fplen < fplen) {
			/* not this chain: it ends (or, only to check an
			 * older record, one that cannot be remade) */
			free(base.files);
			memset(&base, 0, sizeof(base));
		}
	}
	memset(head, 0, sizeof(head));
	if (!d->link) {		/* the chain ends here */
		aptix_buf_put(out, head, sizeof(head));
		put32(out, 0);
		return aptix_buf_oom(out) ? APTIX_ERROR : 0;
	}
	/* files: the newest send of a path wins */
	n = base.nfiles + d->nfiles;
	nc = base.nchunks + d->nchunks;
	if ((n && !(nf = aptix__calloc(n, sizeof(*nf)))) ||
	    (nc && !(ch = aptix__calloc(nc, 16)))) {
		r = APTIX_ERROR;
		goto done;
	}
	for (i = 0; i < d->nfiles; i++) {
		nf[i].path = d->paths[i];
		nf[i].plen = strlen(d->paths[i]);
		nf[i].sha = d->shas[i];
	}
	/* stable: of two sends of one path in one turn, keep the last */
	for (i = 0; i < d->nfiles; i++)
		for (j = i + 1; j < d->nfiles; j++)
			if (nf[j].plen == nf[i].plen &&
			    !memcmp(nf[j].path, nf[i].path, nf[i].plen))
				nf[i].path = NULL;
	for (i = j = 0; i < d->nfiles; i++)
		if (nf[i].path)
			nf[j++] = nf[i];
	n = j;
	for (i = 0; i < base.nfiles; i++) {
		struct nfile key = { base.files[i].path, base.files[i].plen,
				     base.files[i].sha };
		size_t k;

		for (k = 0; k < d->nfiles; k++)
			if (strlen(d->paths[k]) == key.plen &&
			    !memcmp(d->paths[k], key.path, key.plen))
				break;
		if (k == d->nfiles)
			nf[n++] = key;
	}
	if (n)
		qsort(nf, n, sizeof(*nf), nfile_cmp);
	if (base.nchunks)
		memcpy(ch, base.chunks, base.nchunks * 16);
	if (d->nchunks)
		memcpy(ch + base.nchunks, d->chunks, d->nchunks * 16);
	if (nc)
		qsort(ch, nc, 16, chunk_cmp);
	for (i = j = 0; i < nc; i++)
		if (!j || memcmp(ch[j - 1], ch[i], 16))
			memcpy(ch[j++], ch[i], 16);
	nc = j;

	head[0] = SEC_CHAIN;
	if (fplen == APTIX_INDEX_CHAIN_FP)
		head[0] |= SEC_SHORT;
	/* a chain starts here, or goes on from one that kept its first */
	if (first && (!base.has || base.has_first))
		head[0] |= SEC_FIRST;
	memcpy(head + 1, d->response, 16);
	aptix__put_be64(head + 17, base.chars + d->chars);
	aptix_buf_put(out, head, 25);
	put32(out, base.links + 1);
	put32(out, (uint32_t)n);
	for (i = 0; i < n; i++) {
		unsigned char l[2];

		l[0] = (unsigned char)(nf[i].plen >> 8);
		l[1] = (unsigned char)nf[i].plen;
		aptix_buf_put(out, l, 2);
		aptix_buf_put(out, nf[i].path, nf[i].plen);
		aptix_buf_put(out, nf[i].sha, fplen);
	}
	put32(out, (uint32_t)nc);
	if (nc)
		aptix_buf_put(out, ch, nc * 16);
	if (head[0] & SEC_FIRST) {
		unsigned char f[8];

		aptix__put_be64(f, base.has ? base.first :
				d->chars - d->answer);
		aptix_buf_put(out, f, 8);
	}
	r = aptix_buf_oom(out) ? APTIX_ERROR : 0;
done:
	free(nf);
	free(ch);
	free(base.files);
	return r;
}

/* --- Planning from the record --------------------------------------- */

struct plan_view {
	aptix_file_set *files;
	aptix_chunk_set *chunks;
	struct aptix_index_chain_info *info;
	int known;
};

static int plan_view_cb(const void *val, size_t vlen, void *payload)
{
	struct plan_view *pv = payload;
	const unsigned char *sec;
	struct cstate st;
	size_t len, i;
	int r;

	if ((r = aptix_index__chain_section(&sec, &len, val, vlen)) != 0)
		return r < 0 ? r : 0;	/* version 1: not known */
	if ((r = parse(&st, sec, len)) < 0)
		return r;
	if (st.unknown) {
		free(st.files);
		return 0;
	}
	pv->known = 1;
	if (pv->info) {
		pv->info->has_chain = st.has;
		pv->info->chars = st.chars;
		pv->info->first = st.first;
		pv->info->links = st.links;
		pv->info->files = st.nfiles;
		pv->info->chunks = st.nchunks;
	}
	for (i = 0; st.has && pv->files && i < pv->files->n; i++) {
		aptix_active_file *f = &pv->files->v[i];
		const struct cfile *cf;
		aptix_oid sha;

		if (f->action != APTIX_FILE_SEND ||
		    !(cf = find_file(&st, f->path)))
			continue;
		if (aptix_oid_fromstr(&sha, f->sha256) == 0 &&
		    !memcmp(sha.id, cf->sha, st.fplen))
			f->action = APTIX_FILE_UNCHANGED;
		aptix_error_clear();
	}
	for (i = 0; st.has && pv->chunks && i < pv->chunks->n; i++) {
		aptix_rag_chunk *c = &pv->chunks->v[i];
		unsigned char fp[16];

		if (!c->sent)
			continue;
		fingerprint(fp, c->chunk_id, c->content_hash);
		if (has_chunk(&st, fp))
			c->sent = 0;
	}
	free(st.files);
	return 0;
}

int aptix_index__chain_plan(aptix_repo *repo, const aptix_oid *parent,
			    aptix_file_set *files, aptix_chunk_set *chunks,
			    struct aptix_index_chain_info *info)
{
	struct plan_view pv = { files, chunks, info, 0 };
	int r;

	if (info)
		memset(info, 0, sizeof(*info));
	r = aptix_index__view_record(repo->backend->index, parent->id, plan_view_cb,
				     &pv);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		return 1;
	}
	if (r < 0)
		return r;
	return pv.known ? 0 : 1;
}

/* --- fsck ------------------------------------------------------------ */

static int read_record(aptix_buf *out, aptix_repo *repo, const aptix_oid *id)
{
	return aptix_index__copy_record(out, repo->backend->index, id->id);
}

/*
 * The rolling summary's section of a record against what its session,
 * turn and parent make (src/index/index-summary.c): 0, or 2 with the error
 * set.
 */
static int verify_rolling(aptix_repo *repo, const aptix_oid *id,
			  const aptix_buf *rec, const aptix_session *s,
			  const aptix_buf *prec,
			  const struct aptix_index_session_op *op)
{
	aptix_buf want = APTIX_BUF_INIT;
	const unsigned char *sec;
	size_t len;
	int r;

	if ((r = aptix_index__rolling_section(&sec, &len, rec->ptr,
					      rec->len)) != 0)
		return r < 0 ? r : 0;	/* an older record: none to check */
	if ((r = aptix_index__rolling_encode(&want, s->has_parent ?
					     &s->parent : NULL, prec,
					     &op->line,
					     aptix_index__rolling_get,
					     repo, sec[0] &
					     APTIX_INDEX_ROLLING_COMPACT)) < 0)
		goto done;
	if (want.len != len + 4 ||
	    memcmp((const unsigned char *)want.ptr + 4, sec, len)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "rolling summary "
				"record of %s disagrees with its turn and "
				"parent", aptix_oid_hex(id));
		r = 2;
	}
done:
	aptix_buf_release(&want);
	return r;
}

/*
 * The rest of the record from the session's objects: its rolling
 * summary section (2), then the fields that log and show read (3).
 */
static int verify_made(aptix_repo *repo, const struct aptix_index_reader *rd,
		       const aptix_oid *id, const aptix_buf *rec,
		       const aptix_session *s, const aptix_buf *prec)
{
	struct aptix_index_session_op op;
	aptix_buf raw = APTIX_BUF_INIT;
	aptix_otype type;
	int r;

	memset(&op, 0, sizeof(op));
	if ((r = rd->read(&raw, &type, rd->ctx, id)) < 0 ||
	    (r = aptix_index__prepare(&op, rd, 0, id, raw.ptr,
				      raw.len, NULL)) < 0)
		goto done;
	if ((r = verify_rolling(repo, id, rec, s, prec, &op)) == 0)
		r = aptix_index__verify_fields(id, rec, prec, &op);
done:
	aptix_index__op_release(&op);
	aptix_buf_release(&raw);
	return r;
}

int aptix_index_verify_chain(aptix_repo *repo, const aptix_oid *id)
{
	aptix_buf rec = APTIX_BUF_INIT, prec = APTIX_BUF_INIT;
	aptix_buf want = APTIX_BUF_INIT;
	struct aptix_index_chain_delta d;
	const unsigned char *sec, *psec = NULL;
	size_t len, plen = 0, ilen = 0;
	aptix_session s;
	aptix_turn t;
	struct aptix_index_reader rd;
	aptix_otype type;
	int r, known = 1;

	memset(&d, 0, sizeof(d));
	aptix_index__odb_reader(&rd, repo->odb);
	aptix_session_init(&s);
	aptix_turn_init(&t);
	if ((r = read_record(&rec, repo, id)) < 0 ||
	    (r = aptix_index__chain_section(&sec, &len, rec.ptr,
					    rec.len)) != 0)
		goto done;	/* version 1: nothing to check */
	if ((r = aptix_session_lookup(&s, repo, id)) < 0)
		goto done;
	if (s.has_parent) {
		if ((r = read_record(&prec, repo, &s.parent)) < 0)
			goto done;
		r = aptix_index__chain_section(&psec, &plen, prec.ptr,
					       prec.len);
		if (r < 0)
			goto done;
		known = r == 0;
	}
	if (aptix_turn_lookup(&t, repo, &s.turn) == 0) {
		/* an instruction purged since: its size is gone */
		int gone = aptix_odb_read_header(&ilen, &type, repo->odb,
						 &t.instruction) < 0;

		aptix_error_clear();
		if ((r = aptix_index__delta_from_turn(&d, &rd, &t, ilen)) < 0)
			goto done;
		d.sizes_unknown |= gone;
	} else {
		aptix_error_clear();	/* indexed as a failed turn */
	}
	/* remade in the record's own form (older ones keep 32 bytes) */
	r = aptix_index__chain_encode(&want, s.has_parent ? psec : NULL,
				      plen, known,
				      aptix_session_status_ok(s.status), &d,
				      len && sec[0] & SEC_SHORT ?
				      APTIX_INDEX_CHAIN_FP : 32,
				      len && sec[0] & SEC_FIRST);
	if (r < 0)
		goto done;
	/* a purged blob's size is gone: the count cannot be checked */
	if (d.sizes_unknown && want.len == len && len >= 25) {
		memcpy((unsigned char *)want.ptr + 17, sec + 17, 8);
		if (sec[0] & SEC_FIRST)	/* nor what the first turn sent */
			memcpy((unsigned char *)want.ptr + len - 8,
			       sec + len - 8, 8);
	}
	if (want.len != len || memcmp(want.ptr, sec, len)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "chain record of %s "
				"disagrees with its turn and parent",
				aptix_oid_hex(id));
		r = 1;
	}
	if (r == 0)
		r = verify_made(repo, &rd, id, &rec, &s, &prec);
done:
	aptix_index__delta_release(&d);
	aptix_session_release(&s);
	aptix_turn_release(&t);
	aptix_buf_release(&rec);
	aptix_buf_release(&prec);
	aptix_buf_release(&want);
	return r;
}
