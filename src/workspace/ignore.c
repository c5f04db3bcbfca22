/*
 * src/workspace/ignore.c - .aptixignore (see ignore.h).
 */
#include "util/common.h"
#include "workspace/ignore.h"

struct pattern {
	char *text;		/* without '!', leading or trailing '/' */
	int negate, dir_only, anchored;
};

struct aptix__ignore {
	struct pattern *v;
	size_t n;
};

/* A [...] class at *pp (on '['): 1 match, 0 no, -1 not a class. */
static int match_class(const char **pp, char c)
{
	const char *p = *pp + 1;
	int neg = 0, ok = 0;

	if (*p == '!' || *p == '^') {
		neg = 1;
		p++;
	}
	if (*p == ']') {
		ok |= c == ']';
		p++;
	}
	while (*p && *p != ']') {
		char lo = *p, hi;

		if (lo == '\\' && p[1])
			lo = *++p;
		if (p[1] == '-' && p[2] && p[2] != ']') {
			hi = p[2];
			p += 2;
			if (hi == '\\' && p[1])
				hi = *++p;
			ok |= c >= lo && c <= hi;
		} else {
			ok |= c == lo;
		}
		p++;
	}
	if (!*p)
		return -1;
	*pp = p;
	return c && c != '/' && ok != neg;
}

static int wm(const char *start, const char *p, const char *t)
{
	const char *q;
	int r;

	for (; *p; p++, t++) {
		switch (*p) {
		case '\\':
			if (!p[1] || *t != p[1])
				return 0;
			p++;
			break;
		case '?':
			if (!*t || *t == '/')
				return 0;
			break;
		case '[':
			r = match_class(&p, *t);
			if (r == 0 || (r < 0 && *t != '['))
				return 0;
			break;
		case '*':
			if (p[1] == '*' && (p == start || p[-1] == '/') &&
			    (!p[2] || p[2] == '/')) {
				/* "**" as a whole component */
				if (!p[2])
					return 1;
				for (q = p + 3;; t++) {
					if (wm(start, q, t))
						return 1;
					if (!(t = strchr(t, '/')))
						return 0;
				}
			}
			while (p[1] == '*')
				p++;
			for (q = p + 1;; t++) {
				if (wm(start, q, t))
					return 1;
				if (!*t || *t == '/')
					return 0;
			}
		default:
			if (*t != *p)
				return 0;
		}
	}
	return !*t;
}

int aptix__wildmatch(const char *pattern, const char *text)
{
	return wm(pattern, pattern, text);
}

static int add_line(struct aptix__ignore *ig, char *s, size_t len)
{
	struct pattern *v, *pt;
	size_t n = len;

	/* trailing blanks go, unless escaped */
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' ||
		     s[n - 1] == '\r') && !(n >= 2 && s[n - 2] == '\\'))
		n--;
	s[n] = '\0';
	if (!n || s[0] == '#')
		return 0;
	if (!(v = aptix__realloc(ig->v, (ig->n + 1) * sizeof(*v))))
		return APTIX_ERROR;
	ig->v = v;
	pt = &v[ig->n];
	memset(pt, 0, sizeof(*pt));
	if (s[0] == '!') {
		pt->negate = 1;
		s++;
		n--;
	} else if (s[0] == '\\' && (s[1] == '!' || s[1] == '#')) {
		s++;
		n--;
	}
	if (n && s[n - 1] == '/') {
		pt->dir_only = 1;
		s[--n] = '\0';
	}
	if (!n)
		return 0;
	pt->anchored = strchr(s, '/') != NULL;
	if (s[0] == '/') {
		s++;
		n--;
	}
	if (!(pt->text = aptix__strndup(s, n)))
		return APTIX_ERROR;
	ig->n++;
	return 0;
}

int aptix__ignore_load(struct aptix__ignore **out, const char *root)
{
	struct aptix__ignore *ig;
	aptix_buf path = APTIX_BUF_INIT, text = APTIX_BUF_INIT;
	char *p, *end;
	int r;

	*out = NULL;
	if (!(ig = aptix__calloc(1, sizeof(*ig))))
		return APTIX_ERROR;
	aptix_buf_printf(&path, "%s/%s", root, APTIX_IGNORE_FILE);
	if (aptix_buf_oom(&path)) {
		r = aptix_error_oom();
		goto done;
	}
	r = aptix_buf_read_file(&text, path.ptr);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		r = 0;
		goto done;
	}
	if (r < 0) {
		aptix_error_set_os("cannot read '%s'", path.ptr);
		goto done;
	}
	for (p = text.ptr, end = text.ptr + text.len; p < end && !r;) {
		char *e = memchr(p, '\n', (size_t)(end - p));

		if (!e)
			e = end;
		*e = '\0';
		r = add_line(ig, p, (size_t)(e - p));
		p = e + 1;
	}
done:
	aptix_buf_release(&path);
	aptix_buf_release(&text);
	if (r < 0) {
		aptix__ignore_free(ig);
		return r;
	}
	*out = ig;
	return 0;
}

/* The verdict of the patterns on path[0..len), a directory or not. */
static int verdict(const struct aptix__ignore *ig, const char *path,
		   int is_dir)
{
	const char *base = strrchr(path, '/');
	size_t i;
	int ignored = 0;

	base = base ? base + 1 : path;
	for (i = 0; i < ig->n; i++) {
		const struct pattern *pt = &ig->v[i];

		if (pt->dir_only && !is_dir)
			continue;
		if (aptix__wildmatch(pt->text, pt->anchored ? path : base))
			ignored = !pt->negate;
	}
	return ignored;
}

int aptix__ignore_match(const struct aptix__ignore *ig, const char *path)
{
	char *copy, *s;
	int r = 0;

	if (!ig || !ig->n)
		return 0;
	if (!(copy = aptix__strdup(path)))
		return 0;
	/* a file in an ignored directory is ignored */
	for (s = strchr(copy, '/'); s && !r; s = strchr(s + 1, '/')) {
		*s = '\0';
		r = verdict(ig, copy, 1);
		*s = '/';
	}
	if (!r)
		r = verdict(ig, copy, 0);
	free(copy);
	return r;
}

void aptix__ignore_free(struct aptix__ignore *ig)
{
	size_t i;

	if (!ig)
		return;
	for (i = 0; i < ig->n; i++)
		free(ig->v[i].text);
	free(ig->v);
	free(ig);
}
