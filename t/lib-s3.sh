# shellcheck shell=bash
#
# lib-s3.sh -- S3-compatible storage of the test's own, for the tests of
# large objects on S3 (issue 26). Two servers, both on 127.0.0.1 with a
# port chosen when they start, their data in the trash directory,
# stopped by PID:
#
#	start_s3rver      npm's s3rver (t/node_modules: make deps), bucket
#	                  aptix-test; S3RVER_URL, S3RVER_DATA (its files:
#	                  S3RVER_DATA/aptix-test/<org>/<id>...), S3RVER_LOG
#	                  (each request's signing headers, JSON lines)
#	start_s3_standin [--fail-first-put] [--on-put <program>]
#	                  t/standin/s3_standin.py, which checks SigV4 with
#	                  its own secret and honours If-None-Match: * on
#	                  PUT; S3SI_URL, S3SI_DATA, S3SI_KEY, S3SI_SECRET
#
# test_have_prereq S3RVER: node and s3rver are installed.

test_lazy_prereq S3RVER '
	command -v node >/dev/null &&
	test -f "$TEST_DIRECTORY/node_modules/s3rver/package.json"
'

start_s3rver () {
	S3RVER_DATA=$TRASH_DIRECTORY/s3rver-data
	S3RVER_LOG=$TRASH_DIRECTORY/s3rver-requests.log
	rm -f "$TRASH_DIRECTORY/s3rver.port" &&
	: >"$S3RVER_LOG" &&
	test_start_server s3rver node "$TEST_DIRECTORY/standin/s3rver.js" \
		--directory "$S3RVER_DATA" --bucket aptix-test \
		--port-file "$TRASH_DIRECTORY/s3rver.port" \
		--log "$S3RVER_LOG" &&
	test_wait_for_file "$TRASH_DIRECTORY/s3rver.port" 20 s3rver &&
	S3RVER_URL=http://127.0.0.1:$(cat "$TRASH_DIRECTORY/s3rver.port") &&
	export S3RVER_URL S3RVER_DATA S3RVER_LOG
}

start_s3_standin () {
	S3SI_DATA=$TRASH_DIRECTORY/s3si-data
	S3SI_KEY=AKIDSTANDIN
	S3SI_SECRET=s3cr3t-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	rm -f "$TRASH_DIRECTORY/s3si.port" &&
	mkdir -p "$S3SI_DATA" &&
	test_start_server s3si python3 "$TEST_DIRECTORY/standin/s3_standin.py" \
		--port-file "$TRASH_DIRECTORY/s3si.port" --dir "$S3SI_DATA" \
		--key-id "$S3SI_KEY" --secret "$S3SI_SECRET" "$@" &&
	test_wait_for_file "$TRASH_DIRECTORY/s3si.port" 10 s3si &&
	S3SI_URL=http://127.0.0.1:$(cat "$TRASH_DIRECTORY/s3si.port") &&
	export S3SI_URL S3SI_DATA S3SI_KEY S3SI_SECRET
}
