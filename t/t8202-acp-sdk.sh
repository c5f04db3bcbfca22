#!/bin/sh
test_description='aptix acp driven by the official ACP TypeScript SDK

@agentclientprotocol/sdk (a test-only dependency: make deps installs it
into t/node_modules from t/package.json and its lockfile) drives `aptix
acp` through initialize, session/new, a prompt, session/load, session/list
and session/fork, against the OpenAI stand-in. The SDK checks every
message against its own types.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi
if ! command -v node >/dev/null 2>&1
then
	skip_all='node is needed to run the ACP TypeScript SDK'
	test_done
fi
if ! test -f "$TEST_DIRECTORY/node_modules/@agentclientprotocol/sdk/package.json"
then
	skip_all='the ACP TypeScript SDK is not installed (make deps installs it into t/node_modules)'
	test_done
fi

# kinds <field>: the array of update kinds out.json has there, on one line
kinds () {
	{ json_field "$1" <out.json | tr -d " \n" && echo; } >kinds
}

test_expect_success 'setup' '
	start_standin &&
	aptix init -q
'

test_expect_success 'the SDK: initialize, new, prompt, load, list, fork' '
	node "$TEST_DIRECTORY/acp-sdk-client.mjs" "$(pwd)" >out.json &&
	test "$(json_field .protocolVersion <out.json)" = 1 &&
	test "$(json_field .agent <out.json)" = aptix &&
	test "$(json_field .stopReason <out.json)" = end_turn &&
	test "$(json_field .forkStop <out.json)" = end_turn &&
	test "$(json_field .exit <out.json)" = 0 &&
	json_field .answer <out.json >answer &&
	grep "hello from the SDK" answer &&
	json_field .promptKinds <out.json | tr -d " \n" >kinds &&
	grep -q "^\[\"agent_message_chunk\"" kinds &&
	grep -q "\"usage_update\"\]$" kinds &&
	kinds .loadKinds &&
	echo "[\"user_message_chunk\",\"agent_message_chunk\"]" >expect &&
	test_cmp expect kinds &&
	test "$(json_field .loadTexts[0] <out.json)" = "hello from the SDK" &&
	sid=$(json_field .sessionId <out.json) &&
	json_field .listed <out.json >listed &&
	grep "$sid" listed &&
	kinds .forkKinds &&
	test_cmp expect kinds &&
	fork=$(json_field .forkId <out.json) &&
	aptix show --json "$fork" >show &&
	test "$(json_field .parent <show)" = "$(aptix rev-parse "$sid")"
'

test_done
