-- contrib/postgresql/schema.sql - the tables of an aptix store on
-- PostgreSQL (schema version 3), made by an administrator, never by
-- aptix: the role aptix connects as must own no table and be no
-- superuser, or row-level security would not bind it. Run on a database
-- of an older version, it upgrades it (aptix says when that is needed).
--
--	psql "postgresql://admin@host/db" -v app_role=aptix_app \
--		-f contrib/postgresql/schema.sql
--
-- app_role: the role aptix logs in as (it needs LOGIN and CONNECT on
-- the database; NOSUPERUSER, NOBYPASSRLS). Run again, it only grants.
--
-- Every row carries its org; every table's policy lets a session see
-- and write the rows of the org it set for its transaction
-- (SET LOCAL aptix.org, as aptix does at the start of each), and none
-- when it set none. Objects are deduplicated within an org only: no
-- query of aptix_app can tell whether another org holds an object.
-- Since version 3, a conversation is its user's (SET LOCAL aptix.user,
-- beside aptix.org) unless shared: its refs, reflogs, index records and
-- claims are seen by the other users of the org only when it is.

\set ON_ERROR_STOP 1
\if :{?app_role}
\else
\echo 'schema.sql: give the application role: -v app_role=<role>'
\quit
\endif

BEGIN;

SELECT to_regclass('aptix_schema') IS NULL AS aptix_fresh \gset
\if :aptix_fresh

CREATE TABLE aptix_schema (
	version integer NOT NULL PRIMARY KEY
);
INSERT INTO aptix_schema VALUES (1);

CREATE TABLE aptix_meta (
	org text NOT NULL DEFAULT current_setting('aptix.org'),
	key text COLLATE "C" NOT NULL,
	value text NOT NULL,
	PRIMARY KEY (org, key)
);

-- Objects as aptix stores them (zlib already): not compressed again.
CREATE TABLE aptix_objects (
	org text NOT NULL DEFAULT current_setting('aptix.org'),
	id bytea NOT NULL CHECK (length(id) = 32),
	val bytea NOT NULL,
	PRIMARY KEY (org, id)
);
ALTER TABLE aptix_objects ALTER COLUMN val SET STORAGE EXTERNAL;

-- Refs change by compare-and-swap: UPDATE ... WHERE value = $old.
CREATE TABLE aptix_refs (
	org text NOT NULL DEFAULT current_setting('aptix.org'),
	name text COLLATE "C" NOT NULL,
	value text NOT NULL,
	PRIMARY KEY (org, name)
);

-- Newest last by seq; written in the transaction of the ref's update.
CREATE TABLE aptix_reflog (
	org text NOT NULL DEFAULT current_setting('aptix.org'),
	name text COLLATE "C" NOT NULL,
	seq bigint GENERATED ALWAYS AS IDENTITY,
	old_id bytea NOT NULL,
	new_id bytea NOT NULL,
	time_ms bigint NOT NULL,
	message bytea NOT NULL,
	PRIMARY KEY (org, name, seq)
);

-- The index records (objects-format.md, "Index records"): tbl 0
-- sessions, 1 children, 2 conversations, 3 timeline, 4 search, 5 recency,
-- 6 imports.
CREATE TABLE aptix_index (
	org text NOT NULL DEFAULT current_setting('aptix.org'),
	tbl smallint NOT NULL,
	key bytea NOT NULL,
	val bytea NOT NULL,
	PRIMARY KEY (org, tbl, key)
);

-- Running-turn claims: one lease row a conversation (the record names
-- its holder and lease), never an advisory lock.
CREATE TABLE aptix_claims (
	org text NOT NULL DEFAULT current_setting('aptix.org'),
	conv text COLLATE "C" NOT NULL,
	record text NOT NULL,
	since timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (org, conv)
);

ALTER TABLE aptix_schema ENABLE ROW LEVEL SECURITY;
ALTER TABLE aptix_schema FORCE ROW LEVEL SECURITY;
CREATE POLICY aptix_schema_read ON aptix_schema FOR SELECT USING (true);

-- Every other table: its org's rows alone, read and written.
DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['aptix_meta', 'aptix_objects', 'aptix_refs',
				 'aptix_reflog', 'aptix_index', 'aptix_claims']
	LOOP
		EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
		EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
		EXECUTE format('CREATE POLICY aptix_org ON %I '
			'USING (org = current_setting(''aptix.org'', true)) '
			'WITH CHECK (org = current_setting(''aptix.org'', true))',
			t);
	END LOOP;
END
$$;

\endif

-- Version 2: every change of a ref is announced, in its transaction,
-- on the channel of its org (NOTIFY is delivered at COMMIT, and not at
-- all after a ROLLBACK). The payload is the ref's name alone: a
-- listener reads the ref again under its own row-level security.
SELECT max(version) < 2 AS aptix_to_v2 FROM aptix_schema \gset
\if :aptix_to_v2

CREATE FUNCTION aptix_refs_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	r aptix_refs;
BEGIN
	IF TG_OP = 'DELETE' THEN
		r := OLD;
	ELSE
		r := NEW;
	END IF;
	-- the channel as aptix computes it (src/store/pg-listen.c)
	PERFORM pg_notify('aptix_' || substr(encode(sha256(
		convert_to(r.org, 'UTF8')), 'hex'), 1, 32), r.name);
	RETURN NULL;
END
$$;

CREATE TRIGGER aptix_refs_notify
	AFTER INSERT OR UPDATE OR DELETE ON aptix_refs
	FOR EACH ROW EXECUTE FUNCTION aptix_refs_notify();

INSERT INTO aptix_schema VALUES (2);

\endif

-- Version 3: a user's conversations are private unless shared. Each
-- conversation has a row in aptix_owners: its owner (the aptix.user
-- of the transaction that first wrote a row of it) and whether it is
-- shared with the org. A row of refs, reflog, index or claims that
-- belongs to a conversation (its column conv, derived from the row)
-- is seen and written only by a session that sees the conversation's
-- owner row: its owner's, or anyone of the org once shared. Rows of no
-- conversation (objects, meta, HEADs, the search index, the sessions
-- and children records, which hold ids alone) stay the org's.
SELECT max(version) < 3 AS aptix_to_v3 FROM aptix_schema \gset
\if :aptix_to_v3

-- The conversation of a ref or reflog row: refs/conversations/<id>.
CREATE FUNCTION aptix_conv_of_ref(name text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN starts_with(name, 'refs/conversations/')
		THEN substr(name, 20) END
$$;

-- The conversation of an index record (objects-format.md, "The
-- session index"): the key of a conversation record (table 2), the key
-- of a recency record after its 8 bytes of time (table 5), the str8 at
-- byte 41 of an import key's value (table 6); in a
-- timeline record (table 3), the field at byte 80: 16 bytes of a UUID
-- when flag 2 (byte 3) is set, else a str8.
CREATE FUNCTION aptix_conv_of_index(tbl smallint, key bytea, val bytea)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE
	WHEN tbl = 2 THEN encode(key, 'escape')
	WHEN tbl = 5 AND length(key) > 8 THEN
		encode(substring(key FROM 9), 'escape')
	WHEN tbl = 6 AND length(val) > 42 AND get_byte(val, 0) = 1 AND
	     length(val) >= 42 + get_byte(val, 41) THEN
		encode(substring(val FROM 43 FOR get_byte(val, 41)), 'escape')
	WHEN tbl = 3 AND length(val) >= 97 THEN
		CASE WHEN get_byte(val, 3) & 2 = 2 THEN
			substr(encode(substring(val FROM 81 FOR 16), 'hex'), 1, 8)
			|| '-' || substr(encode(substring(val FROM 81 FOR 16),
					 'hex'), 9, 4)
			|| '-' || substr(encode(substring(val FROM 81 FOR 16),
					 'hex'), 13, 4)
			|| '-' || substr(encode(substring(val FROM 81 FOR 16),
					 'hex'), 17, 4)
			|| '-' || substr(encode(substring(val FROM 81 FOR 16),
					 'hex'), 21)
		WHEN length(val) > 81 + get_byte(val, 80) THEN
			encode(substring(val FROM 82 FOR get_byte(val, 80)),
			       'escape')
		END
	END
$$;

CREATE TABLE aptix_owners (
	org text NOT NULL DEFAULT current_setting('aptix.org'),
	conv text COLLATE "C" NOT NULL,
	owner text NOT NULL DEFAULT current_setting('aptix.user'),
	shared boolean NOT NULL DEFAULT false,
	PRIMARY KEY (org, conv)
);
ALTER TABLE aptix_owners ENABLE ROW LEVEL SECURITY;
ALTER TABLE aptix_owners FORCE ROW LEVEL SECURITY;
-- seen by its owner, and by the org once shared; made by its owner
-- alone, shared and unshared by its owner alone
CREATE POLICY aptix_owners_read ON aptix_owners FOR SELECT
	USING (org = current_setting('aptix.org', true) AND
	       (owner = current_setting('aptix.user', true) OR shared));
CREATE POLICY aptix_owners_make ON aptix_owners FOR INSERT
	WITH CHECK (org = current_setting('aptix.org', true) AND
		    owner = current_setting('aptix.user', true));
CREATE POLICY aptix_owners_share ON aptix_owners FOR UPDATE
	USING (org = current_setting('aptix.org', true) AND
	       owner = current_setting('aptix.user', true))
	WITH CHECK (org = current_setting('aptix.org', true) AND
		    owner = current_setting('aptix.user', true));

-- The first row written of a conversation makes its owner row (the
-- row's policy then lets it through); a row of a conversation the
-- session does not see finds none, and the policy refuses it.
-- Whether the session sees conversation c of org: its owner row is
-- visible (aptix_owners' policy). VOLATILE on purpose: it sees the owner
-- row that aptix_own() made during the same statement (a STABLE or
-- inlined check would read the statement's snapshot, from before it).
CREATE FUNCTION aptix_sees(o text, c text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	RETURN EXISTS (SELECT 1 FROM aptix_owners w
		       WHERE w.org = o AND w.conv = c);
END
$$;

-- The conversation of any index record: as aptix_conv_of_index() for
-- tables 2, 3, 5 and 6; a session's locator (table 0: id -> 0x04, the first 8
-- bytes of its timeline key) and a child record (table 1: parent's
-- timeline key, child id) are its session's, read from the timeline
-- record (aptix writes that one first); the search index is the org's.
CREATE FUNCTION aptix_index_conv(o text, tbl smallint, key bytea,
				 val bytea) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	s bytea;
	loc bytea;
BEGIN
	IF tbl = 2 OR tbl = 3 OR tbl = 5 OR tbl = 6 THEN
		RETURN aptix_conv_of_index(tbl, key, val);
	END IF;
	IF tbl = 0 AND length(key) = 32 AND length(val) = 9 THEN
		s := key;
		loc := val;
	ELSIF tbl = 1 AND length(key) = 72 THEN
		s := substring(key FROM 41 FOR 32);
		SELECT i.val INTO loc FROM aptix_index i
		WHERE i.org = o AND i.tbl = 0 AND i.key = s;
	ELSE
		RETURN NULL;
	END IF;
	IF loc IS NULL OR length(loc) <> 9 THEN
		RETURN NULL;
	END IF;
	RETURN (SELECT i.conv FROM aptix_index i WHERE i.org = o AND
		i.tbl = 3 AND i.key = substring(loc FROM 2 FOR 8) || s);
END
$$;

CREATE FUNCTION aptix_own() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	c text;
BEGIN
	IF TG_TABLE_NAME = 'aptix_index' THEN
		c := aptix_index_conv(NEW.org, NEW.tbl, NEW.key, NEW.val);
		NEW.conv := c;
	ELSIF TG_TABLE_NAME = 'aptix_claims' THEN
		c := NEW.conv;
	ELSE
		c := aptix_conv_of_ref(NEW.name);
	END IF;
	IF c IS NOT NULL AND
	   coalesce(current_setting('aptix.user', true), '') <> '' AND
	   NOT EXISTS (SELECT 1 FROM aptix_owners o
		       WHERE o.org = NEW.org AND o.conv = c) THEN
		INSERT INTO aptix_owners (org, conv, owner)
		VALUES (NEW.org, c, current_setting('aptix.user', true))
		ON CONFLICT DO NOTHING;
	END IF;
	RETURN NEW;
END
$$;

ALTER TABLE aptix_refs ADD COLUMN conv text COLLATE "C"
	GENERATED ALWAYS AS (aptix_conv_of_ref(name)) STORED;
ALTER TABLE aptix_reflog ADD COLUMN conv text COLLATE "C"
	GENERATED ALWAYS AS (aptix_conv_of_ref(name)) STORED;
-- set by aptix_own() (a generated column cannot read other rows)
ALTER TABLE aptix_index ADD COLUMN conv text COLLATE "C";

-- The conversations of a store made before: shared (as they all were),
-- of no user until an administrator names one (UPDATE aptix_owners
-- SET owner = ... WHERE conv = ...).
DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['aptix_refs', 'aptix_reflog', 'aptix_index',
				 'aptix_claims', 'aptix_owners']
	LOOP
		EXECUTE format('ALTER TABLE %I NO FORCE ROW LEVEL SECURITY', t);
	END LOOP;
	-- the records of sessions after their timeline records
	UPDATE aptix_index SET conv = aptix_conv_of_index(tbl, key, val)
	WHERE tbl IN (2, 3, 5, 6);
	UPDATE aptix_index SET conv = aptix_index_conv(org, tbl, key, val)
	WHERE tbl = 0;
	UPDATE aptix_index SET conv = aptix_index_conv(org, tbl, key, val)
	WHERE tbl = 1;
	INSERT INTO aptix_owners (org, conv, owner, shared)
	SELECT DISTINCT org, conv, '', true FROM (
		SELECT org, conv FROM aptix_refs UNION
		SELECT org, conv FROM aptix_reflog UNION
		SELECT org, conv FROM aptix_index UNION
		SELECT org, conv FROM aptix_claims) x
	WHERE conv IS NOT NULL ON CONFLICT DO NOTHING;
	FOREACH t IN ARRAY ARRAY['aptix_refs', 'aptix_reflog', 'aptix_index',
				 'aptix_claims', 'aptix_owners']
	LOOP
		EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
	END LOOP;
	FOREACH t IN ARRAY ARRAY['aptix_refs', 'aptix_reflog', 'aptix_index',
				 'aptix_claims']
	LOOP
		EXECUTE format('DROP POLICY aptix_org ON %I', t);
		-- a plain subquery first (an index probe, no function
		-- call), then aptix_sees(), which sees the owner row that
		-- aptix_own() made in this statement (an INSERT ... ON
		-- CONFLICT checks its new row against USING too)
		EXECUTE format('CREATE POLICY aptix_owned ON %I '
			'USING (org = current_setting(''aptix.org'', true) '
			'AND (conv IS NULL OR EXISTS (SELECT 1 FROM '
			'aptix_owners w WHERE w.org = %I.org AND '
			'w.conv = %I.conv) OR aptix_sees(org, conv))) '
			'WITH CHECK (org = current_setting(''aptix.org'', true) '
			'AND (conv IS NULL OR aptix_sees(org, conv)))',
			t, t, t);
		EXECUTE format('CREATE TRIGGER aptix_own BEFORE INSERT OR '
			'UPDATE ON %I FOR EACH ROW EXECUTE FUNCTION '
			'aptix_own()', t);
	END LOOP;
END
$$;

-- A change of a private conversation's ref is announced on its owner's
-- channel (org, a newline and the owner, hashed as the org's is), not on
-- the org's, which would tell every listener of the org its id; the
-- rest as in version 2. A conversation shared or unshared is announced
-- on the org's channel (its ref's name), so that pages show or drop it.
CREATE OR REPLACE FUNCTION aptix_refs_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	r aptix_refs;
	who text;
	open boolean;
BEGIN
	IF TG_OP = 'DELETE' THEN
		r := OLD;
	ELSE
		r := NEW;
	END IF;
	IF r.conv IS NOT NULL THEN
		SELECT owner, shared INTO who, open FROM aptix_owners
		WHERE org = r.org AND conv = r.conv;
	END IF;
	-- the channels as aptix computes them (src/store/pg-listen.c)
	PERFORM pg_notify('aptix_' || substr(encode(sha256(convert_to(
		CASE WHEN who IS NULL OR open THEN r.org
		ELSE r.org || E'\n' || who END, 'UTF8')), 'hex'), 1, 32),
		r.name);
	RETURN NULL;
END
$$;

CREATE FUNCTION aptix_owners_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.shared IS DISTINCT FROM OLD.shared THEN
		PERFORM pg_notify('aptix_' || substr(encode(sha256(convert_to(
			NEW.org, 'UTF8')), 'hex'), 1, 32),
			'refs/conversations/' || NEW.conv);
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER aptix_owners_notify
	AFTER UPDATE ON aptix_owners
	FOR EACH ROW EXECUTE FUNCTION aptix_owners_notify();

INSERT INTO aptix_schema VALUES (3);

\endif

GRANT SELECT ON aptix_schema TO :"app_role";
GRANT SELECT, INSERT, UPDATE ON aptix_owners TO :"app_role";
GRANT SELECT, INSERT, UPDATE, DELETE
	ON aptix_meta, aptix_objects, aptix_refs, aptix_reflog, aptix_index,
	   aptix_claims
	TO :"app_role";

COMMIT;
