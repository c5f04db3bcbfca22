/*
 * src/object/oidmap.c - the object id -> number hash map (aptix/oidmap.h).
 */
#include "util/common.h"
#include "aptix/oidmap.h"

void aptix_oidmap_init(aptix_oidmap *m)
{
	memset(m, 0, sizeof(*m));
}

void aptix_oidmap_release(aptix_oidmap *m)
{
	free(m->entries);
	free(m->slots);
	aptix_oidmap_init(m);
}

void aptix_oidmap_clear(aptix_oidmap *m)
{
	m->n = 0;
	if (m->slots)
		memset(m->slots, 0, m->nslots * sizeof(*m->slots));
}

size_t aptix_oidmap_size(const aptix_oidmap *m)
{
	return m->n;
}

static size_t slot_of(const aptix_oid *id, size_t nslots)
{
	uint64_t h;

	memcpy(&h, id->id, sizeof(h));
	return (size_t)(h & (nslots - 1));
}

/* The slot holding id, or the empty slot where it would go. */
static size_t find_slot(const aptix_oidmap *m, const aptix_oid *id)
{
	size_t i = slot_of(id, m->nslots);

	while (m->slots[i] &&
	       aptix_oid_cmp(&m->entries[m->slots[i] - 1].id, id))
		i = (i + 1) & (m->nslots - 1);
	return i;
}

/* Keep the table at most half full. */
static int grow_slots(aptix_oidmap *m)
{
	size_t ns = m->nslots ? m->nslots * 2 : 64, j, k;
	size_t *s = aptix__calloc(ns, sizeof(*s));

	if (!s)
		return APTIX_ERROR;
	for (j = 0; j < m->n; j++) {
		k = slot_of(&m->entries[j].id, ns);
		while (s[k])
			k = (k + 1) & (ns - 1);
		s[k] = j + 1;
	}
	free(m->slots);
	m->slots = s;
	m->nslots = ns;
	return 0;
}

int aptix_oidmap_put(aptix_oidmap *m, const aptix_oid *id, size_t value)
{
	size_t i;

	if ((m->n + 1) * 2 > m->nslots && grow_slots(m) < 0)
		return APTIX_ERROR;
	i = find_slot(m, id);
	if (m->slots[i]) {
		m->entries[m->slots[i] - 1].value = value;
		return 0;
	}
	if (m->n == m->alloc) {
		size_t na = m->alloc ? m->alloc * 2 : 16;
		aptix_oidmap_entry *e = aptix__realloc(m->entries,
						       na * sizeof(*e));

		if (!e)
			return APTIX_ERROR;
		m->entries = e;
		m->alloc = na;
	}
	m->entries[m->n].id = *id;
	m->entries[m->n].value = value;
	m->slots[i] = ++m->n;
	return 0;
}

int aptix_oidmap_get(size_t *value, const aptix_oidmap *m,
		     const aptix_oid *id)
{
	size_t i;

	if (!m->n)
		return APTIX_ENOTFOUND;
	i = find_slot(m, id);
	if (!m->slots[i])
		return APTIX_ENOTFOUND;
	if (value)
		*value = m->entries[m->slots[i] - 1].value;
	return 0;
}

int aptix_oidmap_foreach(const aptix_oidmap *m, aptix_oidmap_foreach_cb cb,
			 void *payload)
{
	size_t i;
	int r;

	for (i = 0; i < m->n; i++)
		if ((r = cb(&m->entries[i].id, m->entries[i].value,
			    payload)) != 0)
			return r;
	return 0;
}
