/*
 * src/object/links.c - the references of a turn or a session read
 * straight from its JSON text, for walks that only follow links
 * (fsck --connectivity-only, reachability).
 *
 * aptix_object_foreach_ref() parses the whole object (Jansson, then the
 * canonical check that dumps it again): most of what fsck spent. This
 * scanner walks the text once, keeps no tree, and picks the ids where
 * the object format puts them (objects-format.md): a session's parent
 * and turn; a turn's instruction, answer, request and response, each
 * chunk's snippet, each file's content, its tool calls and tool
 * results. The ids come out in aptix_object_foreach_ref()'s order, with
 * its types and field names, zero ids left out as it leaves them out.
 * It checks the JSON's shape and each id it gives, not the other
 * fields: what the full parse would call a bad field elsewhere is not
 * its business. Other types go to aptix_object_foreach_ref().
 */
#include "util/common.h"
#include "object/object.h"

#define SCAN_MAX_DEPTH 32
#define SCAN_MAX_LINKS 64	/* kept on the stack; more: grown */

struct link_rule {
	aptix_otype in;		/* the object's type */
	const char *key;	/* its top-level key */
	const char *sub;	/* the key in each element (depth 3), or NULL */
	int depth;		/* 1: a string; 2: strings in an array; 3:
				   a key of the objects in an array */
	aptix_otype to;
	const char *name;	/* as aptix_object_foreach_ref() names it */
	int skip_zero;
};

/* In aptix_object_foreach_ref()'s order: the order ids come out in. */
static const struct link_rule rules[] = {
	{ APTIX_OBJ_SESSION, "parent", NULL, 1, APTIX_OBJ_SESSION, "parent",
	  1 },
	{ APTIX_OBJ_SESSION, "turn", NULL, 1, APTIX_OBJ_TURN, "turn", 0 },
	{ APTIX_OBJ_TURN, "instruction", NULL, 1, APTIX_OBJ_BLOB,
	  "instruction", 1 },
	{ APTIX_OBJ_TURN, "answer", NULL, 1, APTIX_OBJ_BLOB, "answer", 1 },
	{ APTIX_OBJ_TURN, "request", NULL, 1, APTIX_OBJ_BLOB, "request", 1 },
	{ APTIX_OBJ_TURN, "response", NULL, 1, APTIX_OBJ_BLOB, "response",
	  1 },
	{ APTIX_OBJ_TURN, "chunks", "snippet", 3, APTIX_OBJ_BLOB,
	  "chunk snippet", 1 },
	{ APTIX_OBJ_TURN, "files", "content", 3, APTIX_OBJ_BLOB,
	  "file content", 1 },
	{ APTIX_OBJ_TURN, "tool_calls", NULL, 2, APTIX_OBJ_TOOL_CALL,
	  "tool call", 0 },
	{ APTIX_OBJ_TURN, "tool_results", NULL, 2, APTIX_OBJ_TOOL_RESULT,
	  "tool result", 0 },
};

struct found {
	aptix_oid id;
	unsigned char rule;
};

struct scan {
	const char *p, *end;
	aptix_otype type;
	const struct link_rule *top;	/* the rule of the current top key */
	struct found small[SCAN_MAX_LINKS];
	struct found *v;
	size_t n, alloc;
	int in_status, failed;
};

static int bad(const char *why)
{
	aptix_error_set(APTIX_ERROR_OBJECT, "object is not valid: %s", why);
	return APTIX_ECORRUPT;
}

static void ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' ||
				 *s->p == '\t' || *s->p == '\r'))
		s->p++;
}

/* A string at s->p (at its quote): its raw bytes (escapes as written). */
static int string(const char **str, size_t *len, struct scan *s)
{
	const char *q;

	if (s->p >= s->end || *s->p != '"')
		return bad("a string expected");
	for (q = ++s->p; q < s->end && *q != '"'; q++)
		if (*q == '\\' && ++q == s->end)
			break;
	if (q >= s->end)
		return bad("an unterminated string");
	*str = s->p;
	*len = (size_t)(q - s->p);
	s->p = q + 1;
	return 0;
}

static int is_key(const char *k, size_t klen, const char *want)
{
	return want && strlen(want) == klen && !memcmp(k, want, klen);
}

static int add(struct scan *s, const struct link_rule *rule, const char *str,
	       size_t len)
{
	struct found *f;

	if (len != APTIX_OID_HEXSZ)
		return bad("an id is not 64 hex digits");
	if (s->n == s->alloc) {
		struct found *nv;

		s->alloc *= 2;
		if (!(nv = malloc(s->alloc * sizeof(*nv))))
			return aptix_error_oom();
		memcpy(nv, s->v, s->n * sizeof(*nv));
		if (s->v != s->small)
			free(s->v);
		s->v = nv;
	}
	f = &s->v[s->n];
	if (aptix_oid_fromstrn(&f->id, str, len) < 0)
		return bad("an id is not 64 hex digits");
	if (rule->skip_zero && aptix_oid_is_zero(&f->id))
		return 0;
	f->rule = (unsigned char)(rule - rules);
	s->n++;
	return 0;
}

static int value(struct scan *s, int depth, const struct link_rule *here);

/*
 * After a member of an object (close '}') or an element of an array
 * (close ']'): 1 at a ',' (another follows), 0 at close, both taken.
 */
static int after_value(struct scan *s, char close)
{
	ws(s);
	if (s->p < s->end && *s->p == ',') {
		s->p++;
		return 1;
	}
	if (s->p < s->end && *s->p == close) {
		s->p++;
		return 0;
	}
	return bad(close == '}' ? "a ',' or '}' expected" :
		   "a ',' or ']' expected");
}

/* 1, past it, when the container opened ends at once (close); else 0. */
static int empty_container(struct scan *s, char close)
{
	ws(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		return 1;
	}
	return 0;
}

/* An object's members; at depth 1 (the object itself) keys pick rules. */
static int members(struct scan *s, int depth, const struct link_rule *here)
{
	const char *k;
	size_t klen, i;
	const struct link_rule *rule;
	int r;

	if (empty_container(s, '}'))
		return 0;
	for (;;) {
		ws(s);
		if ((r = string(&k, &klen, s)) < 0)
			return r;
		ws(s);
		if (s->p >= s->end || *s->p++ != ':')
			return bad("a ':' expected");
		rule = NULL;
		if (depth == 1) {
			for (i = 0; i < ARRAY_SIZE(rules); i++)
				if (rules[i].in == s->type &&
				    is_key(k, klen, rules[i].key))
					rule = &rules[i];
			s->in_status = s->type == APTIX_OBJ_SESSION &&
				is_key(k, klen, "status");
		} else if (depth == 3 && here && is_key(k, klen, here->sub)) {
			rule = here;
		}
		ws(s);
		if ((r = value(s, depth, rule)) < 0)
			return r;
		s->in_status = 0;
		if ((r = after_value(s, '}')) <= 0)
			return r;
	}
}

static int elements(struct scan *s, int depth, const struct link_rule *here)
{
	int r;

	if (empty_container(s, ']'))
		return 0;
	for (;;) {
		ws(s);
		if ((r = value(s, depth, here)) < 0 ||
		    (r = after_value(s, ']')) <= 0)
			return r;
	}
}

/*
 * The value at s->p, inside depth levels of containers; here: the rule
 * that applies to a string found at this place (depth 1 and 3: this
 * member's; depth 2: the array's), NULL for none.
 */
static int value(struct scan *s, int depth, const struct link_rule *here)
{
	const char *str;
	size_t len;
	int r;

	if (s->p >= s->end)
		return bad("a value expected");
	if (depth >= SCAN_MAX_DEPTH)
		return bad("nested too deep");
	switch (*s->p) {
	case '{':
		s->p++;
		return members(s, depth + 1, here && here->depth == 3 &&
			       depth == 2 ? here : NULL);
	case '[':
		s->p++;
		return elements(s, depth + 1, here && depth == 1 &&
				here->depth > 1 ? here : NULL);
	case '"':
		if ((r = string(&str, &len, s)) < 0)
			return r;
		if (s->in_status && depth == 1)
			s->failed = len == 6 && !memcmp(str, "failed", 6);
		if (here && here->depth == depth)
			return add(s, here, str, len);
		return 0;
	default:
		/* a number, true, false or null: up to the next delimiter */
		while (s->p < s->end && *s->p != ',' && *s->p != '}' &&
		       *s->p != ']' && *s->p != ' ' && *s->p != '\n')
			s->p++;
		return 0;
	}
}

int aptix_object_scan_refs(aptix_otype type, const void *data, size_t len,
			   aptix_ref_cb cb, void *payload, int *failed)
{
	struct scan s;
	size_t i, k;
	int r;

	if (failed)
		*failed = 0;
	if (type != APTIX_OBJ_SESSION && type != APTIX_OBJ_TURN)
		return aptix_object_foreach_ref(type, data, len, cb, payload);
	memset(&s, 0, sizeof(s));
	s.p = data;
	s.end = s.p + len;
	s.type = type;
	s.v = s.small;
	s.alloc = SCAN_MAX_LINKS;
	ws(&s);
	if (s.p >= s.end || *s.p != '{')
		r = bad("not a JSON object");
	else if ((r = value(&s, 0, NULL)) == 0) {
		ws(&s);
		if (s.p != s.end)
			r = bad("bytes after the object");
	}
	/* in foreach_ref's order: rule by rule, each in the text's order */
	for (k = 0; !r && k < ARRAY_SIZE(rules); k++)
		for (i = 0; !r && i < s.n; i++)
			if (s.v[i].rule == k)
				r = cb(&s.v[i].id, rules[k].to, rules[k].name,
				       payload);
	if (!r && failed)
		*failed = s.failed;
	if (s.v != s.small)
		free(s.v);
	return r;
}
