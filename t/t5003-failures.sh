#!/bin/sh
test_description='failed turns against the OpenAI stand-in

Retries of 429 and 5xx, and every way a call can fail: the failure is
kept as a failed snapshot (the instruction is not lost), the head does
not move, status names it and rerun redoes it.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

field () {
	aptix show --json "$1" | json_field "$2"
}

# failed_from_err: the session named by the rerun hint in err
failed_from_err () {
	local short
	short=$(sed -n "s/.*retry with .aptix rerun \([0-9a-f]*\).$/\1/p" err) &&
	test -n "$short" &&
	aptix rev-parse "$short"
}

# expect_failed_turn <instruction> <error-regex>: stderr (in err) gave
# the error and the rerun hint naming a failed snapshot with that
# instruction and an error matching the regex, which log --all lists;
# HEAD is still $head. Sets $failed.
# shellcheck disable=SC2154 # head is set by the tests that call it
expect_failed_turn () {
	failed=$(failed_from_err) &&
	test "$failed" != "$head" &&
	test "$(aptix rev-parse HEAD)" = "$head" &&
	test "$(field "$failed" .status)" = failed &&
	test "$(field "$failed" .failed)" = true &&
	test "$(field "$failed" .turn_status)" = failed &&
	test "$(field "$failed" .instruction)" = "$1" &&
	test "$(field "$failed" .parent)" = "$head" &&
	field "$failed" .errors >errors &&
	grep -E "$2" errors &&
	grep -E "^error: .*$2" err &&
	grep "failed; the instruction is kept: retry with .aptix rerun $(printf %.12s "$failed")." err &&
	aptix log --all --oneline >log &&
	grep "^$(printf %.12s "$failed") \[failed\] $1$" log
}

test_expect_success 'setup' '
	start_standin &&
	aptix init -q &&
	aptix config openai.max-attempts 2 &&
	aptix continue -m "a good start" >out 2>err &&
	head=$(aptix rev-parse HEAD)
'

test_expect_success '429 with retry-after, then success: retried, completed' '
	n=$(request_count) &&
	standin_fault "{\"kind\":\"status\",\"status\":429,\"retry_after\":1}" &&
	aptix continue -m "rate limited once" >out 2>err &&
	test "$(request_count)" = $((n + 2)) &&
	test "$(request_log $((n + 1)) | json_field .response.status)" = 429 &&
	test "$(request_log $((n + 2)) | json_field .response.status)" = 200 &&
	test "$(request_body $((n + 1)))" = "$(request_body $((n + 2)))" &&
	# Retry-After: 1 was honoured
	t1=$(request_log $((n + 1)) | json_field .time) &&
	t2=$(request_log $((n + 2)) | json_field .time) &&
	python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) - float(sys.argv[1]) >= 0.9 else 1)" $t1 $t2 &&
	grep "^Answer #2 to: rate limited once " out &&
	grep "HTTP 429: Rate limit reached.*retrying in 1.0 s (attempt 2)" err &&
	test "$(aptix rev-parse HEAD)" != "$head" &&
	test "$(field HEAD .status)" = committed &&
	test "$(field HEAD .parent)" = "$head" &&
	head=$(aptix rev-parse HEAD)
'

test_expect_success '500 beyond max-attempts: exit 1, a failed snapshot, head kept' '
	n=$(request_count) &&
	standin_fault "{\"kind\":\"status\",\"status\":500,\"repeat\":2}" &&
	test_expect_code 1 aptix continue -m "server error" >out 2>err &&
	test "$(request_count)" = $((n + 2)) &&
	grep "The server had an error while processing your request" err &&
	grep "after 2 attempts" err &&
	expect_failed_turn "server error" "HTTP 500: The server had an error" &&
	test "$(field $failed .usage.model_requests)" -ge 1 &&
	# the error body is kept as the raw response
	aptix cat-object blob "$(field $failed .response_payload_id)" >raw &&
	grep "\"type\":\"server_error\"" raw &&
	f500=$failed
'

# Regression: show --raw prints both raw payloads (and --json --raw has
# request_payload and response_payload).
test_expect_success 'show --raw prints the raw response payload too' '
	aptix show --raw $f500 >show &&
	grep "server_error" show &&
	aptix show --raw --json $f500 >show.json &&
	grep "response_payload" show.json
'

test_expect_success 'status names the failed instruction' '
	aptix status >status &&
	grep "^Last turn failed" status &&
	grep "session $(printf %.12s $f500)  server error$" status &&
	grep "error: .*HTTP 500" status &&
	grep "aptix rerun $(printf %.12s $f500)" status &&
	aptix status --json >status.json &&
	grep "$f500" status.json
'

test_expect_success 'rerun of the failed turn works once the fault is gone' '
	standin_reset &&
	n=$(request_count) &&
	aptix rerun $f500 >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	grep "^Answer #3 to: server error " out &&
	test "$(field HEAD .status)" = committed &&
	test "$(field HEAD .instruction)" = "server error" &&
	test "$(field HEAD .parent)" = "$head" &&
	test "$(last_request_body | json_field .previous_response_id)" = \
		"$(field $head .response_id)" &&
	# the failed snapshot stays as it was; the retry went where the
	# failed turn would have gone: the same conversation, now its head
	test "$(field $f500 .status)" = failed &&
	test "$(field HEAD .conversation)" = "$(field $f500 .conversation)" &&
	head=$(aptix rev-parse HEAD)
'

test_expect_success '429 insufficient_quota is not retried' '
	n=$(request_count) &&
	standin_fault "{\"kind\":\"status\",\"status\":429,\"code\":\"insufficient_quota\"}" &&
	test_expect_code 1 aptix continue -m "out of quota" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	! grep retrying err &&
	expect_failed_turn "out of quota" "HTTP 429: You exceeded your current quota"
'

test_expect_success 'a 404 from a base URL without /v1 hints at it' '
	(
		OPENAI_BASE_URL=$STANDIN_URL &&
		test_expect_code 1 aptix continue -m "no v1" >out 2>err
	) &&
	grep "HTTP 404" err &&
	grep "does not end in /v1" err &&
	standin_fault "{\"kind\":\"status\",\"status\":404}" &&
	test_expect_code 1 aptix continue -m "a real 404" >out 2>err &&
	grep "HTTP 404" err &&
	! grep "/v1" err
'

test_expect_success 'an HTML 502 page: failed, without the HTML in the message' '
	standin_fault "{\"kind\":\"status\",\"status\":502,\"html\":true,\"repeat\":2}" &&
	test_expect_code 1 aptix continue -m "bad gateway" >out 2>err &&
	expect_failed_turn "bad gateway" "HTTP 502" &&
	! grep "<" err
'

test_expect_success 'a dropped connection without streaming is retried' '
	n=$(request_count) &&
	standin_fault "{\"kind\":\"drop\"}" &&
	aptix continue --no-stream -m "dropped once" >out 2>err &&
	test "$(request_count)" = $((n + 2)) &&
	grep "retrying in" err &&
	grep "^Answer #.* to: dropped once " out &&
	test "$(field HEAD .status)" = committed &&
	test "$(field HEAD .parent)" = "$head" &&
	head=$(aptix rev-parse HEAD)
'

test_expect_success 'a dropped stream: failed, the partial answer was shown' '
	standin_fault "{\"kind\":\"drop\"}" &&
	test_expect_code 1 aptix continue -m "dropped stream" >out 2>err &&
	grep "^Answer #[0-9]* to:" out &&
	expect_failed_turn "dropped stream" "transfer closed|connection|closed|incomplete" &&
	test "$(field $failed .response_payload_id)" != null
'

test_expect_success 'bad JSON in the stream: failed' '
	standin_fault "{\"kind\":\"bad_json\"}" &&
	test_expect_code 1 aptix continue -m "bad json" >out 2>err &&
	expect_failed_turn "bad json" "malformed"
'

test_expect_success 'bad JSON without streaming: failed' '
	standin_fault "{\"kind\":\"bad_json\"}" &&
	test_expect_code 1 aptix continue --no-stream -m "bad json whole" >out 2>err &&
	expect_failed_turn "bad json whole" "malformed|JSON|json"
'

test_expect_success 'an error event: failed, with the server message' '
	standin_fault "{\"kind\":\"error_event\",\"message\":\"the flux capacitor broke\"}" &&
	test_expect_code 1 aptix continue -m "error event" >out 2>err &&
	expect_failed_turn "error event" "server_error: the flux capacitor broke"
'

test_expect_success 'a failed response: failed, with its error' '
	standin_fault "{\"kind\":\"failed\",\"message\":\"model fell over\",\"code\":\"model_error\"}" &&
	test_expect_code 1 aptix continue -m "failed response" >out 2>err &&
	expect_failed_turn "failed response" "model_error: model fell over" &&
	test "$(field $failed .response_payload_id)" != null
'

test_expect_success 'a failed response without streaming: failed' '
	standin_fault "{\"kind\":\"failed\"}" &&
	test_expect_code 1 aptix continue --no-stream -m "failed whole" >out 2>err &&
	expect_failed_turn "failed whole" "response failed"
'

test_expect_success '--json on a failure: kind error, code and message' '
	standin_fault "{\"kind\":\"status\",\"status\":503,\"repeat\":2}" &&
	test_expect_code 1 aptix continue --json -m "json failure" >out 2>err &&
	test "$(json_field .kind <out)" = error &&
	failed=$(json_field .session <out) &&
	test "$(field $failed .status)" = failed &&
	test "$(json_field .error_message <out)" != null &&
	json_field .error_message <out | grep "HTTP 503" &&
	test "$(json_field .error_code <out)" != null &&
	test "$(aptix rev-parse HEAD)" = "$head"
'

test_expect_success 'SIGINT while streaming: cancelled, a failed snapshot' '
	n=$(request_count) &&
	standin_fault "{\"kind\":\"slow\",\"delay\":2}" &&
	{ aptix continue -m "interrupt me while I stream my answer" >out 2>err & } &&
	pid=$! &&
	test_when_finished "kill_children $pid" &&
	i=0 &&
	while ! grep -q "^Answer" out && test $i -lt 100
	do
		sleep 0.05 && i=$((i + 1)) || return 1
	done &&
	grep "^Answer" out &&
	kill -INT $pid &&
	wait_for_exit $pid 5 &&
	{ wait $pid; code=$?; } &&
	test "$code" = 130 &&
	expect_failed_turn "interrupt me while I stream my answer" "cancelled" &&
	aptix status >status &&
	! grep "in flight" status
'

test_expect_success 'SIGINT while waiting for the first byte: cancelled at once' '
	n=$(request_count) &&
	standin_fault "{\"kind\":\"hang\",\"max\":20}" &&
	{ aptix continue -m "interrupt me before I answer" >out 2>err & } &&
	pid=$! &&
	test_when_finished "kill_children $pid" &&
	wait_for_requests $((n + 1)) &&
	kill -INT $pid &&
	wait_for_exit $pid 5 &&
	{ wait $pid; code=$?; } &&
	test "$code" = 130 &&
	test_must_be_empty out &&
	expect_failed_turn "interrupt me before I answer" "cancelled"
'

test_expect_success 'SIGTERM during a retry backoff: cancelled at once' '
	n=$(request_count) &&
	standin_fault "{\"kind\":\"status\",\"status\":500,\"retry_after\":30}" &&
	{ aptix continue -m "terminate me while I wait" >out 2>err & } &&
	pid=$! &&
	test_when_finished "kill_children $pid" &&
	i=0 &&
	while ! grep -q "retrying in" err && test $i -lt 100
	do
		sleep 0.05 && i=$((i + 1)) || return 1
	done &&
	kill -TERM $pid &&
	wait_for_exit $pid 5 &&
	{ wait $pid; code=$?; } &&
	test "$code" = 143 &&
	test "$(request_count)" = $((n + 1)) &&
	expect_failed_turn "terminate me while I wait" "cancelled"
'

test_expect_success 'a hung server and a short openai.timeout: failed, timed out' '
	aptix config openai.timeout 1s &&
	test_when_finished "aptix config --unset openai.timeout" &&
	standin_fault "{\"kind\":\"hang\",\"max\":20}" &&
	start=$(date +%s) &&
	test_expect_code 1 aptix continue -m "hang up" >out 2>err &&
	test $(($(date +%s) - start)) -le 6 &&
	expect_failed_turn "hang up" "timed out|timeout"
'

test_expect_success 'a silent stream and a short openai.idle-timeout: failed, timed out' '
	aptix config openai.idle-timeout 1s &&
	test_when_finished "aptix config --unset openai.idle-timeout" &&
	# each attempt times out (max-attempts is 2 here)
	standin_fault "{\"kind\":\"hang\",\"max\":20,\"repeat\":2}" &&
	start=$(date +%s) &&
	test_expect_code 1 aptix continue -m "silent server" >out 2>err &&
	test $(($(date +%s) - start)) -le 6 &&
	expect_failed_turn "silent server" "timed out|timeout|idle"
'

test_expect_success 'an endless stream: failed at openai.max-response' '
	aptix config openai.max-response 64k &&
	test_when_finished "aptix config --unset openai.max-response" &&
	# the stand-in gives up after 8 MiB, so that this cannot hang
	standin_fault "{\"kind\":\"endless\",\"max\":8388608}" &&
	test_expect_code 1 aptix continue -m "never ending" >out 2>err &&
	expect_failed_turn "never ending" \
		"streamed response larger than 65536 bytes" &&
	grep "openai.max-response" err
'

test_expect_success 'an endless body without streaming: failed at the cap too' '
	aptix config openai.max-response 64k &&
	test_when_finished "aptix config --unset openai.max-response" &&
	standin_fault "{\"kind\":\"endless\",\"max\":8388608}" &&
	test_expect_code 1 aptix continue --no-stream -m "endless body" \
		>out 2>err &&
	expect_failed_turn "endless body" "response larger than 65536 bytes"
'

test_expect_success 'nothing is left running, the store is sound' '
	aptix status >status &&
	! grep "in flight" status &&
	aptix fsck
'

test_done
