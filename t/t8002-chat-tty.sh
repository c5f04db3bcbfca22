#!/bin/sh
test_description='aptix chat in a real terminal (tmux), against the stand-in

The picker (selection by arrows, by number, the filter, every
workspace), the prompt, streaming, Ctrl-C during a turn and at the
prompt, SIGHUP during a turn, the history with Ctrl-R, and a second
chat on a busy conversation. Screens are polled with a bounded wait,
never a fixed sleep.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

test_lazy_prereq TMUX 'tmux -V'

if ! test_have_prereq PYTHON3 || ! test_have_prereq TMUX
then
	skip_all='python3 (for the stand-in) and tmux are needed'
	test_done
fi

# A tmux server per test: a server the previous test stopped may still
# be going away (and take the panes of a new session with it)
tmux_ () {
	# shellcheck disable=SC2154 # test_count: test-lib.sh
	tmux -S "$TRASH_DIRECTORY/tmux.$test_count.sock" -f /dev/null "$@"
}

# tmux_stop: stop this test's tmux server and wait until every chat it
# ran has exited (a chat still going away holds its conversation's lock)
tmux_stop () {
	local name
	tmux_ kill-server 2>/dev/null
	test -f chats.list || return 0
	while read -r name
	do
		test -s "$name.pid" && pid_gone "$(cat "$name.pid")" 20
	done <chats.list
	rm -f chats.list
	return 0
}

# start_chat <name> [<chat options>...]: aptix chat in a 120x40 terminal;
# its pid goes to <name>.pid. $CHAT_ENV: arguments of env(1) for it.
start_chat () {
	local name=$1 tries=0
	shift
	rm -f "$name.pid" &&
	echo "$name" >>chats.list &&
	# the previous test's server may still be going away ("server
	# exited unexpectedly"): a new one is started then
	until tmux_ new-session -d -x 120 -y 40 -s "$name" \
		"echo \$\$ >$name.pid && exec env $CHAT_ENV aptix chat --no-rag $*"
	do
		tries=$((tries + 1))
		test "$tries" -lt 20 || return 1
		sleep 0.1
	done &&
	test_wait_for_file "$name.pid" 10 &&
	test -s "$name.pid"
}

screen () {
	if test -n "$SCREEN_FLAT"
	then
		tmux_ capture-pane -p -t "$1" | tr -d "\n" && echo
	else
		tmux_ capture-pane -p -t "$1"
	fi
}

# wait_screen <name> <regex> [<seconds>]: poll until the screen shows it
wait_screen () {
	local tenths=$((${3:-10} * 10))
	while ! screen "$1" 2>/dev/null | grep -q -e "$2"
	do
		if test "$tenths" -le 0
		then
			echo "wait_screen: no '$2' on the screen of $1:" >&2
			screen "$1" >&2
			return 1
		fi
		sleep 0.1
		tenths=$((tenths - 1))
	done
}

# wait_flat <name> <regex> [<seconds>]: the same, on the rows of the
# screen put end to end (a line wrapped by the terminal is one again)
wait_flat () {
	SCREEN_FLAT=t wait_screen "$@"
}

# prompt_back <name>: the prompt waits, empty (keys typed before it shows
# are read in the terminal's cooked mode, where Ctrl-D is lost)
prompt_back () {
	wait_screen "$1" "[])]>$"
}

keys () {
	local name=$1
	shift
	tmux_ send-keys -t "$name" "$@"
}

# pid_alive <pid>: the process runs (a zombie tmux has not reaped yet
# does not count)
pid_alive () {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	test "${stat%% *}" != Z
}

# pid_gone <pid> [<seconds>]: poll until the process is gone
pid_gone () {
	local tenths=$((${2:-10} * 10))
	while pid_alive "$1"
	do
		test "$tenths" -le 0 && return 1
		sleep 0.1
		tenths=$((tenths - 1))
	done
}

# clear_screen <name>: Ctrl-L, then only the prompt shows: the answers
# chat recalled as it opened the conversation are gone
clear_screen () {
	keys "$1" C-l &&
	wait_flat "$1" "^\[[0-9a-f]* [^]]*\]>$"
}

# cancel_turn <name> <instruction>: a slow turn, cancelled by Ctrl-C
# once its answer streams (on a screen cleared first: no earlier answer
# or cancel there)
cancel_turn () {
	clear_screen "$1" &&
	standin_fault "{\"kind\":\"slow\",\"delay\":5}" &&
	keys "$1" "$2" Enter &&
	wait_screen "$1" "^Answer #[0-9]* to: " &&
	keys "$1" C-c &&
	wait_screen "$1" "^chat: cancelled; the turn is kept as failed"
}

field () {
	aptix show --json "$1" | json_field "$2"
}

test_expect_success 'setup: three conversations, one of another workspace' '
	start_standin &&
	test_when_finished tmux_stop &&
	aptix init -q &&
	test_tick &&
	echo "alpha topic" | aptix chat --new --no-rag >out 2>err &&
	alpha=$(field HEAD .conversation) &&
	test_tick &&
	echo "beta topic" | aptix chat --new --no-rag >out 2>err &&
	beta=$(field HEAD .conversation) &&
	echo "gamma topic" |
	aptix chat --new --no-rag --workspace elsewhere >out 2>err &&
	gamma=$(field HEAD .conversation) &&
	test "$alpha" != "$beta"
'

test_expect_success 'the picker: this workspace'"'"'s, most recent first' '
	test_when_finished tmux_stop &&
	start_chat p1 &&
	wait_screen p1 "new conversation" &&
	screen p1 >s &&
	grep -n "topic" s >rows &&
	test_line_count = 2 rows &&
	grep "^>   1  ${beta%%-*} .*beta topic" s &&
	grep "^    2  ${alpha%%-*} .*alpha topic" s &&
	! grep gamma s &&
	keys p1 a &&
	wait_screen p1 "gamma topic" &&
	keys p1 Escape &&
	pid_gone "$(cat p1.pid)"
'

test_expect_success 'the picker: filter, then Enter opens; the turn streams' '
	test_when_finished tmux_stop &&
	start_chat p2 &&
	wait_screen p2 "new conversation" &&
	keys p2 / A L P H &&
	wait_screen p2 "Filter: ALPH_" &&
	screen p2 >s &&
	! grep "beta topic" s &&
	keys p2 Enter Enter &&
	wait_screen p2 "^\[${alpha%%-*} alpha topic\]>" &&
	head=$(aptix rev-parse "$alpha") &&
	n=$(request_count) &&
	clear_screen p2 &&
	standin_fault "{\"kind\":\"slow\",\"delay\":1}" &&
	keys p2 "tell me more about it please" Enter &&
	# the answer shows while the call still runs
	wait_screen p2 "^Answer #[0-9]* to: " &&
	screen p2 >s &&
	! grep "tokens (" s &&
	wait_screen p2 "tokens (" &&
	test "$(request_count)" = $((n + 1)) &&
	test "$(last_request_body | json_field .previous_response_id)" = \
		"$(field "$head" .response_id)" &&
	test "$(field "$alpha" .parent)" = "$head" &&
	prompt_back p2 &&
	keys p2 /quit Enter &&
	pid_gone "$(cat p2.pid)"
'

test_expect_success 'the picker: arrows and numbers; 0 is a new conversation' '
	test_when_finished tmux_stop &&
	start_chat p3 &&
	wait_screen p3 "new conversation" &&
	keys p3 Down Up Down &&
	wait_screen p3 "^>   2 " &&
	keys p3 0 Enter &&
	wait_screen p3 "^chat: new conversation" &&
	wait_screen p3 "(new)\]>" &&
	prompt_back p3 &&
	keys p3 C-d &&
	pid_gone "$(cat p3.pid)" &&
	start_chat p4 &&
	wait_screen p4 "new conversation" &&
	num=$(screen p4 | sed -n "s/^[> ] *\([0-9]*\)  ${beta%%-*} .*/\1/p") &&
	test -n "$num" &&
	keys p4 $num Enter &&
	wait_screen p4 "^\[${beta%%-*} beta topic\]>" &&
	prompt_back p4 &&
	keys p4 C-d &&
	pid_gone "$(cat p4.pid)"
'

test_expect_success 'Tab completion, Ctrl-C clears the line, /resume' '
	test_when_finished tmux_stop &&
	start_chat c1 --session "$beta" &&
	wait_screen c1 "beta topic\]>" &&
	keys c1 /wor Tab &&
	wait_screen c1 "> /workspace$" &&
	keys c1 C-c &&
	wait_screen c1 "> /workspace ^C$" &&
	keys c1 /co Tab &&
	wait_screen c1 "^/context  /compact$" &&
	keys c1 C-c &&
	n=$(request_count) &&
	keys c1 "never sent" C-c &&
	keys c1 "/help" Enter &&
	wait_screen c1 "/quit  *leave" &&
	test "$(request_count)" = $n &&
	keys c1 /resume Enter &&
	wait_screen c1 "+ new conversation" &&
	keys c1 Escape &&
	wait_screen c1 "^\[${beta%%-*} beta topic\]>$" &&
	keys c1 /resume Enter &&
	wait_screen c1 "+ new conversation" &&
	keys c1 0 Enter &&
	wait_screen c1 "^chat: new conversation" &&
	prompt_back c1 &&
	keys c1 C-d &&
	pid_gone "$(cat c1.pid)"
'

test_expect_success 'multi-line input with a trailing backslash' '
	test_when_finished tmux_stop &&
	start_chat m1 --session "$beta" &&
	wait_screen m1 "beta topic\]>" &&
	keys m1 "first line \\" Enter &&
	wait_screen m1 "^\.\.\.$" &&
	keys m1 "second line" Enter &&
	wait_screen m1 "tokens (" &&
	test "$(field "$beta" .instruction)" = \
		"$(printf "first line \nsecond line")" &&
	prompt_back m1 &&
	keys m1 C-d &&
	pid_gone "$(cat m1.pid)"
'

test_expect_success 'UTF-8 typed in a UTF-8 locale is kept, on screen and stored' '
	test_when_finished tmux_stop &&
	CHAT_ENV="-u LC_ALL LANG=C.UTF-8" start_chat u1 --session "$beta" &&
	wait_screen u1 "beta topic\]>" &&
	keys u1 "ünïcödé 🚀 test" &&
	wait_screen u1 "beta topic\]> ünïcödé 🚀 test$" &&
	keys u1 Enter &&
	wait_screen u1 "tokens (" &&
	test "$(field "$beta" .instruction)" = "ünïcödé 🚀 test" &&
	prompt_back u1 &&
	keys u1 C-d &&
	pid_gone "$(cat u1.pid)"
'

test_expect_success 'a paste is one message; Ctrl-J and Alt-Enter break lines' '
	test_when_finished tmux_stop &&
	CHAT_ENV="-u LC_ALL LANG=C.UTF-8" start_chat v1 --session "$beta" &&
	wait_screen v1 "beta topic\]>" &&
	printf "%s\n" "Traceback (most recent call last):" \
		"  File \"x.py\", line 1, in <module>" \
		"ValueError: bad ünïcödé" >trace &&
	n=$(request_count) &&
	keys v1 "why this?" C-j &&
	tmux_ load-buffer trace &&
	tmux_ paste-buffer -p -t v1 &&
	wait_screen v1 "^ValueError: bad ünïcödé$" &&
	keys v1 "fix it" &&
	wait_screen v1 "^fix it$" &&
	test "$(request_count)" = $n &&
	keys v1 Enter &&
	wait_screen v1 "tokens (" &&
	test "$(request_count)" = $((n + 1)) &&
	{ echo "why this?" && cat trace && echo "fix it"; } >expect &&
	field "$beta" .instruction >actual &&
	test_cmp expect actual &&
	prompt_back v1 &&
	clear_screen v1 &&
	keys v1 "line one" C-j "line two" M-Enter "line three" &&
	wait_screen v1 "^line three$" &&
	keys v1 Enter &&
	wait_screen v1 "tokens (" &&
	test "$(request_count)" = $((n + 2)) &&
	test_write_lines "line one" "line two" "line three" >expect &&
	field "$beta" .instruction >actual &&
	test_cmp expect actual &&
	prompt_back v1 &&
	keys v1 C-d &&
	pid_gone "$(cat v1.pid)"
'

test_expect_success 'a resized window redraws the prompt and the line' '
	test_when_finished tmux_stop &&
	start_chat w1 --session "$beta" &&
	wait_screen w1 "beta topic\]>" &&
	line="a long line that wraps once the window is narrow enough" &&
	keys w1 "$line" &&
	wait_screen w1 "]> $line$" &&
	tmux_ resize-window -t w1 -x 40 &&
	keys w1 C-a Z &&
	wait_flat w1 "\[${beta%%-*} beta topic\]> Z$line$" &&
	test "$(screen w1 | grep -c "beta topic\]>")" = 1 &&
	tmux_ resize-window -t w1 -x 100 &&
	keys w1 C-e X &&
	wait_flat w1 "\[${beta%%-*} beta topic\]> Z${line}X$" &&
	keys w1 Enter &&
	wait_screen w1 "tokens (" &&
	test "$(field "$beta" .instruction)" = "Z${line}X" &&
	prompt_back w1 &&
	keys w1 C-d &&
	pid_gone "$(cat w1.pid)"
'

test_expect_success '/show <n> shows inline, without a pager: keys go to chat' '
	test_when_finished tmux_stop &&
	CHAT_ENV="APTIX_PAGER=less LESS=R" start_chat s1 --session "$beta" &&
	wait_screen s1 "beta topic\]>" &&
	keys s1 "/show 1" Enter &&
	wait_screen s1 "^Instruction:" &&
	prompt_back s1 &&
	screen s1 >s &&
	grep "^Instruction:" s &&
	grep "^    beta topic$" s &&
	keys s1 "/quit" Enter &&
	pid_gone "$(cat s1.pid)"
'

test_expect_success 'resume shows the last turns; /rewind lists and goes back' '
	test_when_finished tmux_stop &&
	aptix log --format=%H "$beta" >turns &&
	n=$(wc -l <turns) &&
	test "$n" -gt 3 &&
	start_chat z1 --session "$beta" &&
	wait_screen z1 "beta topic\]>" &&
	screen z1 >s &&
	grep "^\.\.\. $((n - 3)) earlier turns\{0,1\} (/rewind lists them)$" s &&
	for i in 1 2 3
	do
		id=$(sed -n "${i}p" turns | cut -c1-12) &&
		grep "^--- turn $((n + 1 - i)), $id, " s || return 1
	done &&
	! grep "^--- turn $((n - 3)), " s &&
	grep "^> ValueError: bad ünïcödé$" s &&
	grep "^> \[1 more line: /show $((n - 2))\]$" s &&
	grep "^> line two$" s &&
	grep "^Answer #[0-9]* to: Za long line" s &&
	keys z1 /rewind Enter &&
	wait_screen z1 "^/rewind <n> goes back to turn <n>" &&
	first=$(tail -n 1 turns) &&
	wait_screen z1 "^   1  $(echo "$first" | cut -c1-12)  beta topic$" &&
	keys z1 "/rewind 1" Enter &&
	wait_screen z1 "^chat: /rewind: the next turn forks $(echo "$first" | cut -c1-12)" &&
	keys z1 "after the rewind" Enter &&
	wait_screen z1 "^chat: now in conversation" &&
	test "$(field HEAD .parent)" = "$first" &&
	test "$(field HEAD .instruction)" = "after the rewind" &&
	test "$(aptix rev-parse "$beta")" = "$(head -n 1 turns)" &&
	prompt_back z1 &&
	keys z1 C-d &&
	pid_gone "$(cat z1.pid)"
'

test_expect_success 'Ctrl-C during a turn: failed, prompt back, next chains; /rerun' '
	test_when_finished tmux_stop &&
	head=$(aptix rev-parse "$beta") &&
	start_chat x1 --session "$beta" &&
	wait_screen x1 "beta topic\]>" &&
	cancel_turn x1 "a slow question with an answer of many words" &&
	aptix log --failed --format="%H %S %s" "$beta" >log &&
	grep " failed a slow question with an answer of many words$" log >line &&
	test_line_count = 1 line &&
	failed=$(cut -d" " -f1 line) &&
	test "$(field "$failed" .instruction)" = \
		"a slow question with an answer of many words" &&
	test "$(field "$failed" .status)" = failed &&
	field "$failed" .answer | grep "^Answer #[0-9]* to: " &&
	test "$(aptix rev-parse "$beta")" = "$head" &&
	prompt_back x1 &&
	keys x1 "and now a quick one" Enter &&
	wait_screen x1 "tokens (" &&
	test "$(field "$beta" .parent)" = "$head" &&
	test "$(last_request_body | json_field .previous_response_id)" = \
		"$(field "$head" .response_id)" &&
	prompt_back x1 &&
	head=$(aptix rev-parse "$beta") &&
	cancel_turn x1 "cancel me, then run me again" &&
	prompt_back x1 &&
	keys x1 /rerun Enter &&
	wait_screen x1 "tokens (" &&
	test "$(field "$beta" .instruction)" = "cancel me, then run me again" &&
	test "$(field "$beta" .parent)" = "$head" &&
	test "$(field "$beta" .status)" = committed &&
	screen x1 >s &&
	! grep "now in conversation" s &&
	grep "^chat: cancelled; .*(/rerun runs it again)" s &&
	prompt_back x1 &&
	# a SIGINT that is no key (one that comes as Enter is pressed)
	clear_screen x1 &&
	kill -INT "$(cat x1.pid)" &&
	keys x1 "still here" Enter &&
	wait_screen x1 "tokens (" &&
	test "$(field "$beta" .status)" = committed &&
	prompt_back x1 &&
	keys x1 /quit Enter &&
	pid_gone "$(cat x1.pid)"
'

test_expect_success 'SIGHUP during a turn: the turn is finished and committed' '
	test_when_finished tmux_stop &&
	head=$(aptix rev-parse "$beta") &&
	start_chat h1 --session "$beta" &&
	wait_screen h1 "beta topic\]>" &&
	clear_screen h1 &&
	standin_fault "{\"kind\":\"slow\",\"delay\":1}" &&
	keys h1 "answer me even if I hang up" Enter &&
	wait_screen h1 "^Answer #[0-9]* to: " &&
	kill -HUP "$(cat h1.pid)" &&
	pid_gone "$(cat h1.pid)" 20 &&
	test "$(field "$beta" .parent)" = "$head" &&
	test "$(field "$beta" .status)" = committed &&
	test "$(field "$beta" .instruction)" = "answer me even if I hang up" &&
	field "$beta" .answer | grep "to: answer me even if I hang up"
'

test_expect_success 'the history is kept per store; Ctrl-R searches it' '
	test_when_finished tmux_stop &&
	grep "^answer\\\\040me" .aptix/chat_history &&
	start_chat r1 --session "$beta" &&
	wait_screen r1 "beta topic\]>" &&
	keys r1 C-r hang &&
	wait_screen r1 "answer me even if I hang up" &&
	keys r1 C-c &&
	prompt_back r1 &&
	keys r1 C-d &&
	pid_gone "$(cat r1.pid)"
'

test_expect_success 'a line holding a credential is refused and never saved' '
	test_when_finished tmux_stop &&
	tok=gh"p_"$(LC_ALL=C tr -dc A-Za-z0-9 </dev/urandom | head -c 36) &&
	start_chat k1 --session "$beta" &&
	wait_screen k1 "beta topic\]>" &&
	keys k1 "push with $tok please" Enter &&
	wait_screen k1 "the instruction holds a credential, GitHub token" &&
	prompt_back k1 &&
	keys k1 "/rename $tok" Enter &&
	wait_screen k1 "the title holds a credential, GitHub token" &&
	prompt_back k1 &&
	keys k1 "/help" Enter &&
	wait_screen k1 "/rename" &&
	prompt_back k1 &&
	keys k1 C-d &&
	pid_gone "$(cat k1.pid)" &&
	grep "^/help$" .aptix/chat_history &&
	! grep -F "$tok" .aptix/chat_history &&
	aptix sessions --json --all-workspaces >list &&
	! grep -F "$tok" list
'

test_expect_success 'a second chat on a busy conversation: read-only or fork' '
	test_when_finished tmux_stop &&
	start_chat b1 --session "$alpha" &&
	wait_screen b1 "alpha topic\]>" &&
	head=$(aptix rev-parse "$alpha") &&
	start_chat b2 --session "$alpha" &&
	wait_screen b2 "is open in another chat (pid $(cat b1.pid) on " &&
	wait_screen b2 "\[r\] view it read-only, \[f\] fork it" &&
	keys b2 r &&
	wait_screen b2 "(read-only)>" &&
	keys b2 "not allowed" Enter &&
	wait_screen b2 "open read-only: /fork to continue" &&
	prompt_back b2 &&
	keys b2 C-d &&
	pid_gone "$(cat b2.pid)" &&
	start_chat b3 --session "$alpha" &&
	wait_screen b3 "\[r\] view it read-only" &&
	# typed at once: the keys after the answer wait for the prompt
	keys b3 f "in a fork" Enter &&
	wait_screen b3 "the next turn forks" &&
	wait_screen b3 "^chat: now in conversation" &&
	test "$(field HEAD .parent)" = "$head" &&
	test "$(aptix rev-parse "$alpha")" = "$head" &&
	prompt_back b3 &&
	keys b3 C-d &&
	pid_gone "$(cat b3.pid)" &&
	keys b1 "the holder goes on" Enter &&
	wait_screen b1 "tokens (" &&
	test "$(field "$alpha" .parent)" = "$head"
'

test_done
