/*
 * plumbing/for-each-ref.c - list refs with a format (git for-each-ref).
 */
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const for_each_ref_usage[] = {
	"aptix for-each-ref [--count=<n>] [--sort=<key>]... "
	"[--format=<format>] [<pattern>...]",
	NULL
};

#define DEFAULT_FORMAT "%(objectname) %(objecttype)\t%(refname)"
#define DEFAULT_ABBREV 7

enum atom_kind {
	A_REFNAME, A_OBJECTNAME, A_OBJECTTYPE, A_SYMREF, A_CONVERSATION,
	A_TITLE, A_TURNS, A_UPDATED
};

static const struct {
	const char *name;
	enum atom_kind kind;
	int numeric;		/* sorts as a number */
} atoms[] = {
	{ "refname", A_REFNAME, 0 },
	{ "objectname", A_OBJECTNAME, 0 },
	{ "objecttype", A_OBJECTTYPE, 0 },
	{ "symref", A_SYMREF, 0 },
	{ "conversation", A_CONVERSATION, 0 },
	{ "title", A_TITLE, 0 },
	{ "turns", A_TURNS, 1 },
	{ "updated", A_UPDATED, 1 },
};

struct atom {
	enum atom_kind kind;
	int numeric;
	int abbrev;		/* :short: 0 none, else the length */
};

struct refinfo {
	char *name;
	char *symref;		/* the target of a symbolic ref */
	aptix_oid id;		/* the id it resolves to */
	const char *conv;	/* the conversation id in name, or NULL */
	int have_type;
	aptix_otype type;
	int have_conv, conv_found;
	aptix_conv_info ci;
};

struct sort_key {
	struct atom atom;
	int reverse;
};

struct listing {
	aptix_repo *repo;
	struct refinfo *refs;
	size_t nr, alloc;
	struct sort_key *keys;
	size_t nkeys;
	aptix_buf a, b;		/* scratch for comparisons */
};

/* --- atoms ------------------------------------------------------------- */

/* Parse "name" or "name:modifier" (len bytes); dies when unknown. */
static void parse_atom(struct atom *out, const char *s, size_t len)
{
	const char *colon = memchr(s, ':', len);
	size_t nlen = colon ? (size_t)(colon - s) : len, i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < sizeof(atoms) / sizeof(atoms[0]); i++)
		if (strlen(atoms[i].name) == nlen &&
		    !memcmp(atoms[i].name, s, nlen))
			break;
	if (i == sizeof(atoms) / sizeof(atoms[0]))
		die("unknown field name: %.*s", (int)len, s);
	out->kind = atoms[i].kind;
	out->numeric = atoms[i].numeric;
	if (!colon)
		return;
	colon++;
	len -= nlen + 1;
	if (out->kind != A_REFNAME && out->kind != A_OBJECTNAME &&
	    out->kind != A_SYMREF)
		die("%%(%.*s) does not take arguments", (int)nlen, s);
	if (len == 5 && !memcmp(colon, "short", 5)) {
		out->abbrev = DEFAULT_ABBREV;
		return;
	}
	if (out->kind == A_OBJECTNAME && len > 6 &&
	    !memcmp(colon, "short=", 6)) {
		char num[16];
		unsigned long n;

		if (len - 6 < sizeof(num)) {
			memcpy(num, colon + 6, len - 6);
			num[len - 6] = '\0';
			if (!cli_parse_ulong(num, &n)) {
				out->abbrev = n < APTIX_OID_MINPREFIX ?
					APTIX_OID_MINPREFIX :
					n > APTIX_OID_HEXSZ ? APTIX_OID_HEXSZ :
					(int)n;
				return;
			}
		}
		die("positive value expected '%.*s' in %%(%.*s)",
		    (int)(len - 6), colon + 6, (int)nlen, s);
	}
	die("unrecognized %%(%.*s) argument: %.*s", (int)nlen, s, (int)len,
	    colon);
}

/* The shortest unique abbreviation of id, at least len digits. */
static const char *unique_abbrev(char out[APTIX_OID_HEXSZ + 1],
				 aptix_odb *odb, const aptix_oid *id, int len)
{
	if (aptix_odb_abbrev(out, odb, id, len > 0 ? (size_t)len : 0) < 0)
		die_aptix();
	return out;
}

static void load_type(aptix_repo *repo, struct refinfo *ri)
{
	size_t size;

	if (ri->have_type)
		return;
	if (aptix_odb_read_header(&size, &ri->type, aptix_repo_odb(repo),
				  &ri->id) < 0)
		die("missing object %s for %s", aptix_oid_hex(&ri->id),
		    ri->name);
	ri->have_type = 1;
}

static void load_conv(aptix_repo *repo, struct refinfo *ri)
{
	int r;

	if (ri->have_conv)
		return;
	ri->have_conv = 1;
	if (!ri->conv)
		return;
	r = aptix_index_conversation(&ri->ci, repo, ri->conv);
	if (r < 0 && r != APTIX_ENOTFOUND)
		die_aptix();
	ri->conv_found = r == 0;
}

/* Append the value of atom for ri to out. */
static void atom_value(aptix_buf *out, aptix_repo *repo, struct refinfo *ri,
		       const struct atom *atom)
{
	char hex[APTIX_OID_HEXSZ + 1], tbuf[32];

	switch (atom->kind) {
	case A_REFNAME:
		aptix_buf_puts(out, atom->abbrev ? aptix_ref_shorten(ri->name) :
			       ri->name);
		break;
	case A_OBJECTNAME:
		if (atom->abbrev)
			unique_abbrev(hex, aptix_repo_odb(repo), &ri->id,
				      atom->abbrev);
		else
			aptix_oid_tostr(hex, &ri->id);
		aptix_buf_puts(out, hex);
		break;
	case A_OBJECTTYPE:
		load_type(repo, ri);
		aptix_buf_puts(out, aptix_otype_name(ri->type));
		break;
	case A_SYMREF:
		if (ri->symref)
			aptix_buf_puts(out, atom->abbrev ?
				       aptix_ref_shorten(ri->symref) :
				       ri->symref);
		break;
	case A_CONVERSATION:
		if (ri->conv)
			aptix_buf_puts(out, ri->conv);
		break;
	case A_TITLE:
		load_conv(repo, ri);
		if (ri->conv_found)
			aptix_buf_puts(out, ri->ci.title);
		break;
	case A_TURNS:
		load_conv(repo, ri);
		if (ri->conv_found)
			aptix_buf_printf(out, "%u", (unsigned)ri->ci.turns);
		break;
	case A_UPDATED:
		load_conv(repo, ri);
		if (ri->conv_found)
			aptix_buf_puts(out, aptix_time_fmt(tbuf,
							   ri->ci.updated_at));
		break;
	}
}

static int64_t atom_number(aptix_repo *repo, struct refinfo *ri,
			   const struct atom *atom)
{
	load_conv(repo, ri);
	if (!ri->conv_found)
		return -1;
	return atom->kind == A_TURNS ? (int64_t)ri->ci.turns :
		ri->ci.updated_at;
}

/*
 * Expand fmt for ri into out; with ri NULL only check fmt. "%%" is a
 * percent sign, "%xx" the byte of hex value xx, "%(atom)" a field.
 */
static void expand_format(aptix_buf *out, const char *fmt, aptix_repo *repo,
			  struct refinfo *ri)
{
	const char *p = fmt, *close;
	struct atom atom;
	int hi, lo;

	while (*p) {
		if (*p != '%') {
			if (out)
				aptix_buf_putc(out, *p);
			p++;
			continue;
		}
		if (p[1] == '%') {
			if (out)
				aptix_buf_putc(out, '%');
			p += 2;
		} else if (p[1] == '(') {
			if (!(close = strchr(p, ')')))
				die("malformed format string %s", p);
			parse_atom(&atom, p + 2, (size_t)(close - p - 2));
			if (ri)
				atom_value(out, repo, ri, &atom);
			p = close + 1;
		} else if ((hi = aptix_hex_value(p[1])) >= 0 &&
			   (lo = aptix_hex_value(p[2])) >= 0) {
			if (out)
				aptix_buf_putc(out, (char)(hi << 4 | lo));
			p += 3;
		} else {
			if (out)
				aptix_buf_putc(out, '%');
			p++;
		}
	}
}

/* --- collecting and sorting -------------------------------------------- */

struct raw_ref {
	char *name, *target;
	aptix_oid id;
};

struct raw_list {
	struct raw_ref *r;
	size_t nr, alloc;
};

static int collect_cb(const aptix_ref *ref, void *payload)
{
	struct raw_list *l = payload;
	struct raw_ref *rr;

	l->r = cli_grow(l->r, &l->alloc, l->nr, sizeof(*l->r));
	rr = &l->r[l->nr++];
	rr->name = strdup(ref->name);
	rr->target = ref->target ? strdup(ref->target) : NULL;
	rr->id = ref->oid;
	if (!rr->name || (ref->target && !rr->target))
		die("out of memory");
	return 0;
}

/* git's rule: a prefix ending at a component boundary, or a glob */
static int match_patterns(const char *name, const char **patterns, int n)
{
	size_t nlen = strlen(name);
	int i;

	if (!n)
		return 1;
	for (i = 0; i < n; i++) {
		const char *p = patterns[i];
		size_t plen = strlen(p);

		if (plen && plen <= nlen && !strncmp(name, p, plen) &&
		    (name[plen] == '\0' || name[plen] == '/' ||
		     p[plen - 1] == '/'))
			return 1;
		if (!fnmatch(p, name, FNM_PATHNAME))
			return 1;
	}
	return 0;
}

static struct listing *sorting;

static int compare_refs(const void *va, const void *vb)
{
	struct refinfo *a = (struct refinfo *)va, *b = (struct refinfo *)vb;
	struct listing *l = sorting;
	size_t k;
	int c;

	for (k = l->nkeys; k-- > 0;) {
		const struct sort_key *key = &l->keys[k];

		if (key->atom.numeric) {
			int64_t x = atom_number(l->repo, a, &key->atom);
			int64_t y = atom_number(l->repo, b, &key->atom);

			c = x < y ? -1 : x > y;
		} else {
			aptix_buf_clear(&l->a);
			aptix_buf_clear(&l->b);
			atom_value(&l->a, l->repo, a, &key->atom);
			atom_value(&l->b, l->repo, b, &key->atom);
			c = strcmp(l->a.ptr, l->b.ptr);
		}
		if (c)
			return key->reverse ? -c : c;
	}
	return strcmp(a->name, b->name);
}

int cmd_for_each_ref(int argc, const char **argv, struct aptix_repo *repo)
{
	const char *format = DEFAULT_FORMAT;
	aptix_strlist sort = APTIX_STRLIST_INIT;
	struct raw_list raw = { NULL, 0, 0 };
	aptix_buf line = APTIX_BUF_INIT;
	struct listing l;
	int count = 0;
	size_t i, shown, plen = strlen(APTIX_CONV_PREFIX);
	struct option options[] = {
		OPT_STRING(0, "format", &format, "format", "format to use "
			   "for the output"),
		OPT_INTEGER(0, "count", &count, "show only <n> matched refs"),
		OPT_STRING_LIST(0, "sort", &sort, "key", "field name to sort "
				"on; prefix - for descending order"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, for_each_ref_usage, 0);
	if (count < 0)
		die("invalid --count argument: '%d'", count);
	memset(&l, 0, sizeof(l));
	l.repo = repo;
	aptix_buf_init(&l.a, 0);
	aptix_buf_init(&l.b, 0);
	expand_format(NULL, format, repo, NULL);
	if (sort.nr && !(l.keys = calloc(sort.nr, sizeof(*l.keys))))
		die("out of memory");
	for (i = 0; i < sort.nr; i++) {
		const char *key = sort.items[i];

		l.keys[i].reverse = *key == '-';
		key += l.keys[i].reverse;
		parse_atom(&l.keys[i].atom, key, strlen(key));
	}
	l.nkeys = sort.nr;

	/* read the refs first: the store is not read during the walk */
	if (aptix_ref_foreach(repo, "refs/", collect_cb, &raw) < 0)
		die_aptix();
	if (!(l.refs = calloc(raw.nr ? raw.nr : 1, sizeof(*l.refs))))
		die("out of memory");
	for (i = 0; i < raw.nr; i++) {
		struct raw_ref *rr = &raw.r[i];
		struct refinfo *ri;

		if (!match_patterns(rr->name, argv, argc)) {
			free(rr->name);
			free(rr->target);
			continue;
		}
		if (rr->target &&
		    aptix_ref_resolve(&rr->id, NULL, repo, rr->name) < 0) {
			warning("ignoring broken ref %s", rr->name);
			free(rr->name);
			free(rr->target);
			continue;
		}
		ri = &l.refs[l.nr++];
		ri->name = rr->name;
		ri->symref = rr->target;
		ri->id = rr->id;
		if (!strncmp(ri->name, APTIX_CONV_PREFIX, plen) &&
		    aptix_conv_check_id(ri->name + plen) == 0)
			ri->conv = ri->name + plen;
	}
	free(raw.r);
	if (l.nkeys) {
		sorting = &l;
		qsort(l.refs, l.nr, sizeof(*l.refs), compare_refs);
		sorting = NULL;
	}
	shown = l.nr;
	if (count && (size_t)count < shown)
		shown = (size_t)count;
	for (i = 0; i < shown; i++) {
		aptix_buf_clear(&line);
		expand_format(&line, format, repo, &l.refs[i]);
		aptix_buf_putc(&line, '\n');
		if (aptix_buf_oom(&line))
			die("out of memory");
		fwrite(line.ptr, 1, line.len, stdout);
	}
	for (i = 0; i < l.nr; i++) {
		free(l.refs[i].name);
		free(l.refs[i].symref);
	}
	free(l.refs);
	free(l.keys);
	aptix_buf_release(&l.a);
	aptix_buf_release(&l.b);
	aptix_buf_release(&line);
	aptix_strlist_release(&sort);
	return 0;
}
