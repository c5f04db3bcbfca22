/*
 * src/odb/odb-mem.c - an in-memory object backend: the unit tests' workhorse
 * and a scratch area for dry runs.
 */
#include "util/common.h"
#include "aptix/sys/odb_backend.h"

typedef struct {
	aptix_oid id;
	aptix_otype type;
	char *data;
	size_t len;
} mem_obj;

typedef struct {
	aptix_odb_backend parent;
	mem_obj *objs;		/* sorted by id */
	size_t n, alloc;
} mem_backend;

static size_t mem_find(mem_backend *m, const aptix_oid *id, int *found)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = aptix_oid_cmp(&m->objs[mid].id, id);

		if (!c) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

static int mem_read(aptix_buf *out, aptix_otype *type, aptix_odb_backend *b,
		    const aptix_oid *id)
{
	mem_backend *m = (mem_backend *)b;
	int found;
	size_t i = mem_find(m, id, &found);

	if (!found)
		return APTIX_ENOTFOUND;
	*type = m->objs[i].type;
	return aptix_buf_set(out, m->objs[i].data, m->objs[i].len);
}

static int mem_read_header(size_t *size, aptix_otype *type,
			   aptix_odb_backend *b, const aptix_oid *id)
{
	mem_backend *m = (mem_backend *)b;
	int found;
	size_t i = mem_find(m, id, &found);

	if (!found)
		return APTIX_ENOTFOUND;
	*type = m->objs[i].type;
	*size = m->objs[i].len;
	return 0;
}

static int mem_exists(aptix_odb_backend *b, const aptix_oid *id)
{
	int found;

	mem_find((mem_backend *)b, id, &found);
	return found;
}

static int mem_write(aptix_odb_backend *b, const aptix_oid *id,
		     const void *data, size_t len, aptix_otype type)
{
	mem_backend *m = (mem_backend *)b;
	int found;
	size_t i = mem_find(m, id, &found);
	char *copy;

	if (found)
		return 0;
	if (aptix__grow(&m->objs, &m->alloc, m->n, sizeof(*m->objs),
			16) < 0)
		return APTIX_ERROR;
	if (!(copy = aptix__malloc(len + 1)))
		return APTIX_ERROR;
	memcpy(copy, data, len);
	copy[len] = '\0';
	memmove(&m->objs[i + 1], &m->objs[i], (m->n - i) * sizeof(mem_obj));
	m->objs[i].id = *id;
	m->objs[i].type = type;
	m->objs[i].data = copy;
	m->objs[i].len = len;
	m->n++;
	return 0;
}

static int mem_exists_prefix(aptix_oid *out, int *count,
			     aptix_odb_backend *b, const aptix_oid *prefix,
			     size_t hexlen)
{
	mem_backend *m = (mem_backend *)b;
	int found;
	size_t i = mem_find(m, prefix, &found), full = hexlen / 2;

	*count = 0;
	for (; i < m->n && *count < 2; i++) {
		const unsigned char *k = m->objs[i].id.id;

		if (memcmp(k, prefix->id, full) || (hexlen % 2 &&
		    (k[full] & 0xf0) != (prefix->id[full] & 0xf0)))
			break;
		if (!*count)
			*out = m->objs[i].id;
		(*count)++;
	}
	return 0;
}

static int mem_foreach(aptix_odb_backend *b, aptix_odb_foreach_cb cb,
		       void *payload)
{
	mem_backend *m = (mem_backend *)b;
	size_t i;
	int r;

	for (i = 0; i < m->n; i++)
		if ((r = cb(&m->objs[i].id, payload)) != 0)
			return r;
	return 0;
}

static void mem_free(aptix_odb_backend *b)
{
	mem_backend *m = (mem_backend *)b;
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->objs[i].data);
	free(m->objs);
	free(m);
}

int aptix_odb_backend_mem(aptix_odb_backend **out)
{
	mem_backend *m = aptix__calloc(1, sizeof(*m));

	if (!m)
		return APTIX_ERROR;
	m->parent.version = APTIX_ODB_BACKEND_VERSION;
	m->parent.read = mem_read;
	m->parent.read_header = mem_read_header;
	m->parent.write = mem_write;
	m->parent.exists = mem_exists;
	m->parent.exists_prefix = mem_exists_prefix;
	m->parent.foreach = mem_foreach;
	m->parent.free = mem_free;
	*out = &m->parent;
	return 0;
}
