#!/bin/bash

test_description='a shared store announces its ref updates (LISTEN/NOTIFY)

A ref that moves on a PostgreSQL store is announced in the transaction
that moves it, on a channel of its org; aptix serve on such a store
listens and hands the change to its page as it happens: a turn made by
another process shows up in the event stream and in the page (headless
Chromium; a screenshot is kept as live-1400.png). A writer of another
org wakes no listener of this one.'

. ./test-lib.sh
. "$TEST_DIRECTORY/lib-pg.sh"
. "$TEST_DIRECTORY/lib-standin.sh"

pg_require standin

test_lazy_prereq CHROMIUM '
	python3 -c "import sys; sys.path.insert(0, \"$TEST_DIRECTORY\"); \
import lib_cdp; sys.exit(not lib_cdp.find_chromium())"
'

# wait_grep <file> <pattern>: until the file has a line matching (20 s)
wait_grep () {
	local i=0
	while ! grep -q "$2" "$1" 2>/dev/null
	do
		test "$i" -lt 200 || {
			echo "no '$2' in $1:" >&2
			cat "$1" >&2
			return 1
		}
		sleep 0.1
		i=$((i + 1))
	done
}

# channel <org>: the channel of the org's announcements, as aptix names it
channel () {
	printf "aptix_%s" "$(printf "%s" "$1" | sha256sum | cut -c1-32)"
}

# user_channel <org> <user>: the channel of the refs of that user's
# private conversations
user_channel () {
	printf "aptix_%s" "$(printf "%s\n%s" "$1" "$2" | sha256sum | cut -c1-32)"
}

test_expect_success 'setup: a server, its schema, the stand-in; two stores of acme, one of beta' '
	start_pg &&
	pg_sql -v app_role=aptix_app -f "$SCHEMA" &&
	start_standin &&
	mkdir one two other &&
	aptix -C one init -q --backend "$PG_APP_URL" --org acme &&
	aptix -C two init -q --backend "$PG_APP_URL" --org acme &&
	aptix -C other init -q --backend "$PG_APP_URL" --org beta &&
	aptix -C one continue -q --no-rag --no-stream -m "before the server"
'

test_expect_success 'a turn announces its ref on its user'"'"'s channel (private) or its org'"'"'s (shared), the name alone' '
	mkfifo listen.in &&
	{ psql -X -q -At "$PG_APP_URL" <listen.in >listen.out 2>&1 & } &&
	lpid=$! &&
	exec 9>listen.in &&
	test_when_finished "kill $lpid 2>/dev/null; :" &&
	echo "LISTEN $(channel acme);" >&9 &&
	echo "LISTEN $(user_channel acme aptix_app);" >&9 &&
	echo "SELECT '\''listening'\'';" >&9 &&
	wait_grep listen.out listening &&
	aptix -C other continue -q --no-rag --no-stream -m "a beta turn" &&
	echo "SELECT '\''after beta'\'';" >&9 &&
	wait_grep listen.out "after beta" &&
	! grep "notification" listen.out &&
	aptix -C one continue -q --no-rag --no-stream -m "an acme turn" &&
	conv=$(aptix -C one symbolic-ref HEAD) &&
	echo "SELECT '\''after acme'\'';" >&9 &&
	wait_grep listen.out "after acme" &&
	grep "notification \"$(user_channel acme aptix_app)\" with payload \"$conv\"" listen.out &&
	! grep "notification \"$(channel acme)\"" listen.out &&
	aptix -C one share HEAD &&
	echo "SELECT '\''after share'\'';" >&9 &&
	wait_grep listen.out "after share" &&
	grep "notification \"$(channel acme)\" with payload \"$conv\"" listen.out &&
	! grep -i "password\|value\|[0-9a-f]\{64\}" listen.out &&
	exec 9>&-
'

test_expect_success 'serve on the store: a turn of another process is in its event stream' '
	rm -f two/.aptix/serve.token &&
	test_start_server serve aptix -C two serve --port 0 &&
	test_wait_for_file two/.aptix/serve.token 10 serve &&
	URL=$(sed -n "s/^url //p" "$TRASH_DIRECTORY/serve.log") &&
	URL=${URL%/} &&
	TOKEN=$(cat two/.aptix/serve.token) &&
	{ curl -sS -N -o events -H "Authorization: Bearer $TOKEN" \
		-H "Accept: text/event-stream" "$URL/api/events" & } &&
	cpid=$! &&
	wait_grep events "^event: hello" &&
	grep "^data: {\"live\":true}" events &&
	aptix -C one continue -q --no-rag --no-stream -m "seen live" &&
	S=$(aptix -C one rev-parse HEAD) &&
	wait_grep events "\"value\":\"$S\"" &&
	grep "^event: ref" events &&
	curl -sS -f -H "Authorization: Bearer $TOKEN" \
		"$URL/api/conversations?all=1" >list &&
	grep "$S" list
'

test_expect_success 'a turn of another org is not in the stream' '
	aptix -C other continue -q --no-rag --no-stream -m "beta again" &&
	B=$(aptix -C other rev-parse HEAD) &&
	aptix -C one continue -q --no-rag --no-stream -m "acme marker" &&
	M=$(aptix -C one rev-parse HEAD) &&
	wait_grep events "$M" &&
	! grep "$B" events
'

test_expect_success CHROMIUM 'the page in a browser shows the turn as it is made' '
	PAGE=$(sed -n "s/^page //p" "$TRASH_DIRECTORY/serve.log") &&
	{
		PYTHONPATH=$TEST_DIRECTORY TRASH=$TRASH_DIRECTORY PAGE=$PAGE \
		python3 - >cdp.out 2>&1 <<-\EOF &
		import os, sys
		from lib_cdp import Browser
		b = Browser(os.environ["TRASH"], width=1400, height=757)
		try:
		    b.viewport(1400, 757)
		    b.navigate(os.environ["PAGE"])
		    b.wait_for("document.body.dataset.graph === \"ready\"")
		    b.click("#all")
		    b.wait_for("document.body.dataset.live === \"announced\"")
		    b.wait_for("aptix.graph && aptix.graph.nodes.length >= 4")
		    n = b.eval("aptix.graph.nodes.length")
		    open(os.path.join(os.environ["TRASH"], "ready"), "w").write(str(n))
		    b.wait_for("document.querySelectorAll(\"#graph .node\").length"
		               " === %d" % (n + 1), timeout=30)
		    label = b.eval("[...document.querySelectorAll(\"#graph .node "
		                   "text:not(.mark)\")].map(t => t.textContent)"
		                   ".join(\"\\n\")")
		    assert "made elsewhere" in label, label
		    b.screenshot(os.path.join(os.environ["TRASH"], "live-1400.png"))
		    assert not b.console_errors(), b.console_errors()
		    print("ok")
		finally:
		    b.close()
		EOF
	} &&
	ppid=$! &&
	test_wait_for_file ready 60 &&
	aptix -C one continue -q --no-rag --no-stream -m "made elsewhere" &&
	wait $ppid &&
	cat cdp.out &&
	grep -x ok cdp.out &&
	test_path_is_file live-1400.png
'

test_expect_success 'a database of schema 1: upgrade asked for, then made by schema.sql' '
	# schema 1 is schema 2 (t/fixtures/pg-schema-v2.sql) without its
	# trigger, in a database of its own
	pg_sql -d postgres -c "CREATE DATABASE aptix_v1" &&
	pg_sql -d aptix_v1 -v app_role=aptix_app \
		-f "$TEST_DIRECTORY/fixtures/pg-schema-v2.sql" &&
	pg_sql -d aptix_v1 -c "DROP TRIGGER aptix_refs_notify ON aptix_refs" \
		-c "DROP FUNCTION aptix_refs_notify()" \
		-c "DELETE FROM aptix_schema WHERE version = 2" &&
	url=$(printf "%s" "$PG_APP_URL" | sed -e "s|/aptix?|/aptix_v1?|") &&
	mkdir v1 &&
	test_must_fail aptix -C v1 init -q --backend "$url" --org acme 2>err &&
	grep "of version 1, older than this aptix needs" err &&
	grep "schema.sql again" err &&
	pg_sql -d aptix_v1 -v app_role=aptix_app -f "$SCHEMA" &&
	aptix -C v1 init -q --backend "$url" --org acme &&
	aptix -C v1 continue -q --no-rag --no-stream -m "a turn after the upgrade" &&
	aptix -C v1 log -1 --format=%s >actual &&
	echo "a turn after the upgrade" >expect &&
	test_cmp expect actual &&
	pg_sql -d aptix_v1 -c "SELECT count(*) FROM pg_trigger WHERE tgname = '\''aptix_refs_notify'\''" >actual &&
	echo 1 >expect &&
	test_cmp expect actual
'

test_expect_success 'stop the servers' '
	kill $cpid &&
	test_stop_server serve &&
	stop_pg
'

test_done
