#!/bin/bash

test_description='large objects of a shared store on S3

A store on a throwaway PostgreSQL keeps the objects of s3.threshold
stored bytes or more on S3-compatible storage: npm'"'"'s s3rver, and a
stand-in that checks SigV4 signatures and honours If-None-Match. Reads
re-hash what S3 returns; a missing or altered object is a clear error
and an fsck finding; credentials never show in what aptix prints.'

. ./test-lib.sh
. "$TEST_DIRECTORY/lib-pg.sh"
. "$TEST_DIRECTORY/lib-standin.sh"
. "$TEST_DIRECTORY/lib-s3.sh"

pg_require standin
if ! test_have_prereq S3RVER
then
	skip_all='s3rver is not installed (make deps installs it into t/node_modules)'
	test_done
fi

# A file of n KiB that zlib cannot shrink much (hex of random bytes).
big_file () {
	od -An -v -tx1 -N $(($2 * 512)) /dev/urandom | tr -d ' \n' >"$1"
}

# The ids of the objects S3 holds under <data dir>/<bucket>/<org>/.
s3_ids () {
	find "$1" -type f -name '*._S3rver_object' |
	sed 's|.*/\([0-9a-f]\{64\}\)\._S3rver_object$|\1|' | sort
}

test_expect_success 'setup: PostgreSQL, s3rver, a store on both' '
	start_pg &&
	pg_sql -v app_role=aptix_app -f "$SCHEMA" &&
	start_standin &&
	start_s3rver &&
	AWS_ACCESS_KEY_ID=S3RVER &&
	AWS_SECRET_ACCESS_KEY=S3RVER &&
	export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY &&
	mkdir s &&
	aptix -c s3.url="$S3RVER_URL" -c s3.bucket=aptix-test \
		-c s3.threshold=8k -C s init -q --backend "$PG_APP_URL" &&
	pg_sql -c "SELECT key, value FROM aptix_meta WHERE key LIKE '"'"'s3.%'"'"' ORDER BY key" >meta &&
	cat >expect <<-EOF &&
	s3.bucket|aptix-test
	s3.threshold|8192
	s3.url|$S3RVER_URL
	EOF
	test_cmp expect meta
'

test_expect_success 'init: a bad S3 location, or another bucket, is refused' '
	test_must_fail aptix -c s3.url=ftp://x -c s3.bucket=aptix-test \
		init -q --backend "$PG_APP_URL" bad 2>err &&
	grep "s3.url must be an http:// or https:// URL" err &&
	test_path_is_missing bad &&
	test_must_fail aptix -c s3.url="$S3RVER_URL" -c s3.bucket=B_A_D \
		init -q --backend "$PG_APP_URL" bad 2>err &&
	grep "s3.bucket must be a bucket name" err &&
	test_must_fail aptix -c s3.url=http://127.0.0.1:9 -c s3.bucket=other \
		init -q --backend "$PG_APP_URL" other 2>err &&
	grep "the shared store keeps its large objects in the bucket .aptix-test. of $S3RVER_URL already" err &&
	test_path_is_missing other &&
	pg_sql -c "SELECT value FROM aptix_meta WHERE key = '"'"'s3.url'"'"'" >actual &&
	echo "$S3RVER_URL" >expect &&
	test_cmp expect actual
'

test_expect_success 'a turn with a large file: the file lands on S3' '
	big_file s/big.txt 64 &&
	echo small >s/small.txt &&
	aptix -c files.max-size=1m -C s continue -q --no-rag --no-stream \
		--file big.txt --file small.txt -m "a large file" &&
	s3_ids "$S3RVER_DATA/aptix-test/default" >ids &&
	test_line_count = 1 ids &&
	B=$(cat ids) &&
	aptix -C s cat-object -p $B >actual &&
	test_cmp s/big.txt actual &&
	aptix -C s cat-object -t $B >type &&
	echo blob >expect &&
	test_cmp expect type &&
	aptix -C s show >show &&
	grep "a large file" show &&
	aptix -C s fsck --full
'

test_expect_success 'the PUT was create-only and signed with SigV4 (a capture)' '
	obj=$(find "$S3RVER_DATA/aptix-test/default" -name "$B._S3rver_object") &&
	sha=$(sha256sum "$obj" | cut -d" " -f1) &&
	grep "\"method\":\"PUT\",\"path\":\"/aptix-test/default/$B\"" \
		"$S3RVER_LOG" >put &&
	test_line_count = 1 put &&
	grep "\"if-none-match\":\"\*\"" put &&
	grep "\"x-amz-content-sha256\":\"$sha\"" put &&
	grep "\"authorization\":\"AWS4-HMAC-SHA256 Credential=S3RVER/[0-9]\{8\}/us-east-1/s3/aws4_request, SignedHeaders=[a-z0-9;-]*x-amz-content-sha256[a-z0-9;-]*, Signature=[0-9a-f]\{64\}\"" put &&
	grep "\"x-amz-date\":\"[0-9]\{8\}T[0-9]\{6\}Z\"" put &&
	! grep -v "AWS4-HMAC-SHA256" "$S3RVER_LOG"
'

test_expect_success 'push and clone through S3' '
	mkdir a &&
	aptix -C a init -q &&
	big_file a/other.txt 48 &&
	aptix -c files.max-size=1m -C a continue -q --no-rag --no-stream \
		--file other.txt -m "pushed large file" &&
	aptix -C a remote add origin "$PG_APP_URL" &&
	aptix -C a push 2>err &&
	s3_ids "$S3RVER_DATA/aptix-test/default" >ids &&
	test_line_count = 2 ids &&
	O=$(grep -v $B ids) &&
	aptix -C a cat-object -p $O >actual &&
	test_cmp a/other.txt actual &&
	aptix clone -q "$PG_APP_URL" c &&
	aptix -C c cat-object -p $O >actual &&
	test_cmp a/other.txt actual &&
	aptix -C c cat-object -p $B >actual &&
	test_cmp s/big.txt actual &&
	aptix -C c fsck --full &&
	aptix -C s fsck --full
'

test_expect_success 'an object missing from S3: a clear error, an fsck finding' '
	obj=$(find "$S3RVER_DATA/aptix-test/default" -name "$B._S3rver_object") &&
	mv "$obj" saved &&
	test_when_finished "mv saved \"$obj\"" &&
	test_must_fail aptix -C s cat-object -p $B 2>err &&
	grep "object .$B. is missing from S3 ($S3RVER_URL/aptix-test/default/$B)" err &&
	test_must_fail aptix -C s fsck >out 2>err &&
	grep "^corrupt blob $B: object .$B. is missing from S3" out
'

test_expect_success 'an object altered on S3: a clear error, an fsck finding' '
	obj=$(find "$S3RVER_DATA/aptix-test/default" -name "$B._S3rver_object") &&
	cp "$obj" saved &&
	test_when_finished "cp saved \"$obj\"" &&
	printf "XYZ" | dd of="$obj" bs=1 seek=200 conv=notrunc 2>/dev/null &&
	test_must_fail aptix -C s cat-object -p $B 2>err &&
	grep "object .$B. on S3 ($S3RVER_URL/aptix-test/default/$B) was altered" err &&
	test_must_fail aptix -C s fsck >out 2>err &&
	grep "^corrupt blob $B: object .$B. on S3 .* was altered" out
'

test_expect_success 'after the repair, fsck is clean again' '
	aptix -C s fsck --full
'

test_expect_success 'wrong or missing credentials: clear errors, no secret' '
	AWS_ACCESS_KEY_ID=AKIDNOBODY AWS_SECRET_ACCESS_KEY=Sekrit9Wrong \
		test_must_fail aptix -C s cat-object -p $B >out 2>err &&
	grep "S3 GET $S3RVER_URL/aptix-test/default/$B: HTTP 403 (InvalidAccessKeyId)" err &&
	! grep Sekrit9Wrong out err &&
	(
		unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY &&
		test_must_fail aptix -C s cat-object -p $B 2>err
	) &&
	grep "no S3 credentials: set AWS_ACCESS_KEY_ID" err &&
	aptix -C s log --format=%s >actual &&
	echo "a large file" >expect &&
	test_cmp expect actual
'

test_expect_success 'credentials from ~/.aws/credentials' '
	mkdir -p "$HOME/.aws" &&
	printf "[other]\naws_access_key_id = NOPE\n[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n" \
		>"$HOME/.aws/credentials" &&
	test_when_finished "rm -rf \"$HOME/.aws\"" &&
	(
		unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY &&
		aptix -C s cat-object -p $B >actual
	) &&
	test_cmp s/big.txt actual
'

test_expect_success 'S3 unreachable: a clear error naming the object, no secret' '
	port=$(cat "$TRASH_DIRECTORY/s3rver.port") &&
	pg_sql -c "UPDATE aptix_meta SET value = '"'"'http://127.0.0.1:1'"'"' WHERE key = '"'"'s3.url'"'"'" &&
	test_when_finished "pg_sql -c \"UPDATE aptix_meta SET value = '"'"'$S3RVER_URL'"'"' WHERE key = '"'"'s3.url'"'"'\"" &&
	test_must_fail aptix -C s cat-object -p $B 2>err &&
	grep "object .$B. cannot be read from S3 (http://127.0.0.1:1/aptix-test/default/$B): GET http://127.0.0.1:1/aptix-test/default/$B: failed to connect" err &&
	! grep S3RVER err &&
	big_file s/more.txt 32 &&
	test_must_fail aptix -c files.max-size=1m -C s continue -q --no-rag \
		--no-stream --file more.txt -m "not stored" 2>err &&
	grep "cannot be stored on S3" err
'

test_expect_success 'the stand-in checks SigV4: signed requests pass, a wrong secret does not' '
	start_s3_standin &&
	mkdir si &&
	aptix -c s3.url="$S3SI_URL" -c s3.bucket=bkt -c s3.region=eu-west-3 \
		-c s3.threshold=8k -C si init -q --backend "$PG_APP_URL" \
		--org si &&
	big_file si/big.txt 40 &&
	AWS_ACCESS_KEY_ID=$S3SI_KEY AWS_SECRET_ACCESS_KEY=$S3SI_SECRET \
		aptix -c files.max-size=1m -C si continue -q --no-rag \
		--no-stream --file big.txt -m "signed" &&
	ls "$S3SI_DATA/bkt/si" >ids &&
	test_line_count = 1 ids &&
	SB=$(cat ids) &&
	AWS_ACCESS_KEY_ID=$S3SI_KEY AWS_SECRET_ACCESS_KEY=$S3SI_SECRET \
		aptix -C si cat-object -p $SB >actual &&
	test_cmp si/big.txt actual &&
	grep "^PUT /bkt/si/$SB 200$" s3si.log &&
	grep "^GET /bkt/si/$SB 200$" s3si.log &&
	AWS_ACCESS_KEY_ID=$S3SI_KEY AWS_SECRET_ACCESS_KEY=Wr0ngSecret77 \
		test_must_fail aptix -C si cat-object -p $SB >out 2>err &&
	grep "HTTP 403 (SignatureDoesNotMatch)" err &&
	! grep -e Wr0ngSecret77 -e "$S3SI_SECRET" out err
'

test_expect_success 'a PUT whose answer was lost: 412 on the next, checked, kept' '
	test_stop_server s3si &&
	start_s3_standin --fail-first-put &&
	pg_sql -c "UPDATE aptix_meta SET value = '"'"'$S3SI_URL'"'"' WHERE key = '"'"'s3.url'"'"' AND org = '"'"'si'"'"'" &&
	big_file si/again.txt 40 &&
	export AWS_ACCESS_KEY_ID=$S3SI_KEY AWS_SECRET_ACCESS_KEY=$S3SI_SECRET &&
	test_must_fail aptix -c files.max-size=1m -C si continue -q \
		--no-rag --no-stream --file again.txt -m "lost answer" 2>err &&
	grep "HTTP 500 (InternalError)" err &&
	aptix -c files.max-size=1m -C si continue -q --no-rag --no-stream \
		--file again.txt -m "lost answer, again" &&
	grep "^PUT /bkt/si/[0-9a-f]* 412$" s3si.log &&
	A=$(sed -n "s|^PUT /bkt/si/\([0-9a-f]*\) 412$|\1|p" s3si.log) &&
	aptix -C si cat-object -p $A >actual &&
	test_cmp si/again.txt actual &&
	aptix -C si fsck --full
'

test_expect_success 'the PUT is made before the PostgreSQL transaction opens' '
	test_stop_server s3si &&
	write_script on-put.sh <<-EOF &&
	psql -X -q -At -d aptix -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\''aptix'\'' AND state LIKE '\''idle in transaction%'\''" >>"$TRASH_DIRECTORY/in-txn"
	EOF
	start_s3_standin --on-put "$TRASH_DIRECTORY/on-put.sh" &&
	pg_sql -c "UPDATE aptix_meta SET value = '"'"'$S3SI_URL'"'"' WHERE key = '"'"'s3.url'"'"' AND org = '"'"'si'"'"'" &&
	big_file si/first.txt 40 &&
	export AWS_ACCESS_KEY_ID=$S3SI_KEY AWS_SECRET_ACCESS_KEY=$S3SI_SECRET &&
	aptix -c files.max-size=1m -C si continue -q --no-rag --no-stream \
		--file first.txt -m "put first" &&
	grep "^PUT /bkt/si/[0-9a-f]* 200$" s3si.log &&
	# one PUT, during which no transaction of aptix was open
	echo 0 >expect &&
	test_cmp expect in-txn &&
	A=$(sed -n "s|^PUT /bkt/si/\([0-9a-f]*\) 200$|\1|p" s3si.log | tail -n 1) &&
	aptix -C si cat-object -p $A >actual &&
	test_cmp si/first.txt actual &&
	aptix -C si fsck --full
'

UNIT=${APTIX_BUILD_DIR:-$TEST_DIRECTORY/..}/t/unit/aptix-unit
test -x "$UNIT" && test_set_prereq UNIT

# The conformance suite against the server, its output shown on failure.
run_conformance_ () {
	AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER \
	APTIX_TEST_PG_URL=$PG_APP_URL APTIX_TEST_S3_URL=$S3RVER_URL \
		"$UNIT" backend >out 2>&1 ||
	{
		cat out
		return 1
	}
}

test_expect_success UNIT 'the backend conformance suite, every value on S3' '
	run_conformance_ &&
	grep -q "100%" out &&
	find "$S3RVER_DATA/aptix-test" -path "*conformance-*" \
		-name "*._S3rver_object" >objs &&
	test $(wc -l <objs) -ge 2
'

test_done
