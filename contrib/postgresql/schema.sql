-- contrib/postgresql/schema.sql - the tables of an aptix store on
-- PostgreSQL (schema version 2), made by an administrator, never by
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
-- sessions, 1 children, 2 conversations, 3 timeline, 4 search.
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

GRANT SELECT ON aptix_schema TO :"app_role";
GRANT SELECT, INSERT, UPDATE, DELETE
	ON aptix_meta, aptix_objects, aptix_refs, aptix_reflog, aptix_index,
	   aptix_claims
	TO :"app_role";

COMMIT;
