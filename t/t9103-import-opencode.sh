#!/bin/sh
test_description='aptix import opencode: its SQLite database and its export'
. "$(dirname "$0")"/test-lib.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 (its sqlite3 module) makes the fork and the subagent'
	test_done
fi

FIX=$TEST_DIRECTORY/fixtures/import/opencode-1.18.33
BRAVE=opencode-ses_de29b8c35ffemW1AtIaY3mq0UY
COSMIC=opencode-ses_de29c3e84ffenhtJ2KuvAq816u

count_objects () {
	aptix cat-object --batch-check --batch-all-objects | wc -l
}

json_field () {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[2]))[sys.argv[1]])' "$1" "$2"
}

# tool_result <rev>: the first tool result of its turn, pretty-printed
tool_result () {
	local turn res
	turn=$(aptix log --format=%T -n 1 "$1") &&
	res=$(aptix cat-object -p "$turn" | sed -n "s/^tool result  *//p" | head -n 1) &&
	aptix cat-object -p "$res"
}

test_expect_success 'setup: a copy of the database with a fork and a subagent' '
	aptix init -q &&
	cp "$FIX/opencode.db" "$FIX/export.json" . &&
	chmod u+w opencode.db &&
	cp opencode.db forked.db &&
	python3 - <<-\EOF
	import json, sqlite3
	db = sqlite3.connect("forked.db")
	brave = "ses_de29b8c35ffemW1AtIaY3mq0UY"
	cosmic = "ses_de29c3e84ffenhtJ2KuvAq816u"
	def copy_session(new, title, parent, t0):
	    row = db.execute("select * from session where id = ?", (brave,)).fetchone()
	    cols = [d[0] for d in db.execute("select * from session").description]
	    rec = dict(zip(cols, row))
	    rec.update(id=new, title=title, parent_id=parent, slug=new,
	               time_created=t0, time_updated=t0)
	    db.execute("insert into session (%s) values (%s)" % (",".join(rec),
	               ",".join("?" * len(rec))), list(rec.values()))
	def message(sid, mid, t, info, parts):
	    db.execute("insert into message values (?,?,?,?,?)",
	               (mid, sid, t, t, json.dumps(info)))
	    for i, p in enumerate(parts):
	        db.execute("insert into part values (?,?,?,?,?,?)",
	                   ("%s_p%d" % (mid, i), mid, sid, t, t, json.dumps(p)))
	def answer(sid, mid, parent, t, text):
	    message(sid, mid, t, {"parentID": parent, "role": "assistant",
	            "modelID": "gpt-5", "providerID": "openai",
	            "path": {"cwd": "/home/user/proj", "root": "/home/user/proj"},
	            "tokens": {"total": 3, "input": 2, "output": 1,
	                       "reasoning": 0, "cache": {"read": 0, "write": 0}},
	            "time": {"created": t, "completed": t + 5}, "finish": "stop"},
	            [{"type": "text", "text": text}])
	def user(sid, mid, t, text):
	    message(sid, mid, t, {"role": "user", "time": {"created": t}},
	            [{"type": "text", "text": text}])
	# OpenCode forks: the messages copied under new ids, the parent
	# only in the title
	fork = "ses_fork0000000000000000000001"
	copy_session(fork, "New session - 2026-11-27T14:24:12.235Z (fork #1)",
	             None, 1795789500000)
	for n, (mid, t, data) in enumerate(db.execute("select id, time_created, data "
	        "from message where session_id = ? order by time_created", (brave,)).fetchall()):
	    new = "msg_fork%d" % n
	    db.execute("insert into message values (?,?,?,?,?)", (new, fork, t, t, data))
	    for pid, pt, pdata in db.execute("select id, time_created, data from part "
	            "where message_id = ? order by id", (mid,)).fetchall():
	        db.execute("insert into part values (?,?,?,?,?,?)",
	                   ("prt_fork_" + pid, new, fork, pt, pt, pdata))
	user(fork, "msg_fork9", 1795789600000, "And in the fork?")
	answer(fork, "msg_fork9a", "msg_fork9", 1795789600100, "The fork answers.")
	user(fork, "msg_fork10", 1795789700000, "Still running?")
	# a subagent: a session whose parent_id names its parent
	child = "ses_child000000000000000000001"
	copy_session(child, "a subtask", cosmic, 1795789800000)
	db.execute("delete from message where session_id = ?", (child,))
	user(child, "msg_child0", 1795789800100, "SUBTASK: count the files")
	answer(child, "msg_child0a", "msg_child0", 1795789800200, "Two files.")
	db.commit()
	EOF
'

test_expect_success 'the database: both sessions, their tool calls and exit codes' '
	aptix import --json opencode opencode.db >out 2>err &&
	test_must_be_empty err &&
	test "$(json_field file_count out)" = 1 &&
	test "$(json_field new_turn_count out)" = 2 &&
	test "$(json_field tool_call_count out)" = 2 &&
	aptix show --format=%A $BRAVE >answer &&
	echo "The command finished; I saw its output." >expect &&
	test_cmp expect answer &&
	tool_result $BRAVE >res &&
	grep "^exit code  *2$" res &&
	grep "^status  *error$" res &&
	grep "^source  *opencode$" res &&
	tool_result $COSMIC >res &&
	grep "^status  *ok$" res
'

test_expect_success 'usage, model and times come from the assistant steps' '
	aptix show --json $BRAVE >show.json &&
	python3 - <<-\EOF
	import json
	v = json.load(open("show.json"))
	u = v["usage"]
	assert (u["input_tokens"], u["output_tokens"]) == (200, 40), u
	assert v["model"] == "gpt-5", v["model"]
	EOF
'

test_expect_success 'again, and its export: nothing new (the same turns)' '
	count_objects >before &&
	aptix import --json opencode opencode.db export.json >out &&
	test "$(json_field new_turn_count out)" = 0 &&
	count_objects >after &&
	test_cmp before after
'

test_expect_success 'the export alone, into another store, gives the same snapshot' '
	mkdir other &&
	(cd other && aptix init -q && aptix import -q opencode ../export.json >/dev/null &&
	 aptix rev-parse $BRAVE) >actual &&
	aptix rev-parse $BRAVE >expect &&
	test_cmp expect actual
'

test_expect_success 'a fork shares its parent snapshots, found by title and content' '
	aptix import --json opencode forked.db >out 2>err &&
	test "$(json_field new_turn_count out)" = 2 &&
	test "$(json_field pending_count out)" = 1 &&
	fork=opencode-ses_fork0000000000000000000001 &&
	aptix rev-parse $BRAVE >expect &&
	aptix rev-parse $fork~1 >actual &&
	test_cmp expect actual &&
	aptix show --format=%A $fork >answer &&
	echo "The fork answers." >expect &&
	test_cmp expect answer &&
	aptix cat-object -p $fork >snap &&
	grep "^forked from  *$BRAVE" snap
'

test_expect_success 'a subagent is a child conversation of its parent' '
	child=opencode-ses_child000000000000000000001 &&
	aptix rev-parse $COSMIC >expect &&
	aptix rev-parse $child~1 >actual &&
	test_cmp expect actual &&
	aptix cat-object -p $child >snap &&
	grep "^session type  *subagent$" snap
'

test_expect_success 'a damaged database: a clear warning, exit 1, the store unchanged' '
	count_objects >before &&
	aptix for-each-ref >refs-before &&
	python3 - <<-\EOF &&
	data = bytearray(open("opencode.db", "rb").read())
	data[100:4096] = bytes(3996)
	data[4096:] = b"\xff" * (len(data) - 4096)
	open("corrupt.db", "wb").write(bytes(data))
	EOF
	test_expect_code 1 aptix import opencode corrupt.db 2>err &&
	grep "corrupt.db: cannot read the OpenCode database" err &&
	count_objects >after &&
	aptix for-each-ref >refs-after &&
	test_cmp before after &&
	test_cmp refs-before refs-after
'

test_expect_success 'a message that is not JSON: warned, the rest imported' '
	cp opencode.db badrow.db &&
	python3 - <<-\EOF &&
	import sqlite3
	db = sqlite3.connect("badrow.db")
	db.execute("update message set data = ? where id = ?",
	           ("{broken", "msg_21d63db71001SpIFqbOJUi7EX1"))
	db.commit()
	EOF
	mkdir badrow &&
	(cd badrow && aptix init -q &&
	 test_expect_code 1 aptix import opencode ../badrow.db >/dev/null 2>../err &&
	 aptix rev-parse $BRAVE) >actual &&
	grep "message .msg_21d63db71001SpIFqbOJUi7EX1. is not JSON: not read" err &&
	aptix rev-parse $BRAVE >expect &&
	test_cmp expect actual
'

test_expect_success 'not a database nor an export; a truncated export' '
	echo "hello" >notes.txt &&
	test_expect_code 1 aptix import opencode notes.txt 2>err &&
	grep "notes.txt.*not an OpenCode database or export" err &&
	head -c 3000 export.json >truncated.json &&
	test_expect_code 1 aptix import opencode truncated.json 2>err &&
	grep "truncated.json:[0-9]*: not an OpenCode database or export" err
'

test_expect_success 'a directory is searched for opencode.db; --dry-run writes nothing' '
	mkdir -p data/opencode &&
	cp opencode.db data/opencode/ &&
	mkdir dry &&
	(cd dry && aptix init -q &&
	 aptix import --dry-run --json opencode ../data >../out &&
	 aptix cat-object --batch-check --batch-all-objects >../objects) &&
	test "$(json_field new_turn_count out)" = 2 &&
	test_must_be_empty objects
'

test_done
