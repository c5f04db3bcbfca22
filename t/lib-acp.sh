# t/lib-acp.sh: what the tests of aptix acp share (sourced after
# test-lib.sh and lib-standin.sh): the ACP schema every message is checked
# against and the opencode transcripts (copies in t/fixtures/acp, from
# ../shared/fixtures: the suite needs nothing outside the tree), and the
# prerequisites, skipping the script when one is missing.

ACP_SCHEMA=${ACP_SCHEMA:-$TEST_DIRECTORY/fixtures/acp/schema/v1/schema.json}
OPENCODE=${OPENCODE_FIXTURES:-$TEST_DIRECTORY/fixtures/acp/opencode-1.18.33}
export ACP_SCHEMA OPENCODE

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in and the driver'
	test_done
fi
if ! python3 -c 'import jsonschema' 2>/dev/null
then
	skip_all='python3-jsonschema is needed to check messages (make deps)'
	test_done
fi
if ! test -f "$ACP_SCHEMA"
then
	skip_all="the ACP schema is missing ($ACP_SCHEMA)"
	test_done
fi

# acp_ws <<EOF ... EOF: a python3 script with the driver (lib_acp.py)
# imported, run in the work tree ws
acp_ws () {
	(cd ws && PYTHONPATH=$TEST_DIRECTORY STANDIN_LOG_DIR=$STANDIN_LOG_DIR \
		python3 -c 'import sys; exec(sys.stdin.read())')
}
