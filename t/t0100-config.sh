#!/bin/sh
test_description='aptix config: get, set, unset, list, origins, environment
overrides, malformed files, secrets and the lock'
. "$(dirname "$0")"/test-lib.sh

test_expect_success 'setup' '
	aptix init -q &&
	store=$(cd .aptix && pwd -P) &&
	test_path_is_dir "$store"
'

test_expect_success 'an unset key: exit 1, no output' '
	test_expect_code 1 aptix config openai.model >out &&
	test_must_be_empty out &&
	test_expect_code 1 aptix config --get openai.model >out &&
	test_must_be_empty out &&
	test_path_is_missing .aptix/config
'

test_expect_success 'set then get' '
	aptix config openai.model gpt-4o &&
	echo gpt-4o >expect &&
	aptix config openai.model >actual &&
	test_cmp expect actual &&
	aptix config --get openai.model >actual &&
	test_cmp expect actual &&
	aptix config OpenAI.MODEL >actual &&
	test_cmp expect actual
'

test_expect_success 'the store file is git-config style and private' '
	aptix config openai.temperature 0.2 &&
	aptix config rag.backend local &&
	printf "[openai]\n\tmodel = gpt-4o\n\ttemperature = 0.2\n[rag]\n\tbackend = local\n" >expect &&
	test_cmp expect .aptix/config &&
	test "$(stat -c %a .aptix/config)" = 600 &&
	test_path_is_missing .aptix/config.lock
'

test_expect_success 'set replaces the value and keeps comments' '
	{
		echo "# my settings" &&
		cat .aptix/config &&
		echo "; the end"
	} >tmp &&
	mv tmp .aptix/config &&
	aptix config openai.model gpt-5 &&
	aptix config openai.timeout 90s &&
	printf "# my settings\n[openai]\n\tmodel = gpt-5\n\ttemperature = 0.2\n\ttimeout = 90s\n[rag]\n\tbackend = local\n; the end\n" >expect &&
	test_cmp expect .aptix/config
'

test_expect_success 'a value that needs quoting comes back intact' '
	aptix config openai.instructions "  be brief; #1 \"rule\"  " &&
	printf "%s\n" "  be brief; #1 \"rule\"  " >expect &&
	aptix config openai.instructions >actual &&
	test_cmp expect actual &&
	aptix config --unset openai.instructions
'

test_expect_success '--list in load order' '
	cat >expect <<-\EOF &&
	openai.model=gpt-5
	openai.temperature=0.2
	openai.timeout=90s
	rag.backend=local
	EOF
	aptix config --list >actual &&
	test_cmp expect actual &&
	aptix config -l >actual &&
	test_cmp expect actual
'

test_expect_success 'the user file comes first, the store wins' '
	mkdir -p .config/aptix &&
	printf "[openai]\n\tmodel = user-model\n[workspace]\n\tid = ws-user\n" >.config/aptix/config &&
	user=$(cd .config/aptix && pwd -P)/config &&
	aptix config openai.model >actual &&
	echo gpt-5 >expect &&
	test_cmp expect actual &&
	aptix config workspace.id >actual &&
	echo ws-user >expect &&
	test_cmp expect actual &&
	printf "file:%s\t%s\n" \
		"$user" openai.model=user-model \
		"$user" workspace.id=ws-user \
		"$store/config" openai.model=gpt-5 \
		"$store/config" openai.temperature=0.2 \
		"$store/config" openai.timeout=90s \
		"$store/config" rag.backend=local >expect &&
	aptix config --list --show-origin >actual &&
	test_cmp expect actual
'

test_expect_success 'XDG_CONFIG_HOME replaces ~/.config' '
	mkdir -p xdg/aptix &&
	printf "[workspace]\n\tid = ws-xdg\n" >xdg/aptix/config &&
	echo ws-xdg >expect &&
	XDG_CONFIG_HOME="$TRASH_DIRECTORY/xdg" aptix config workspace.id >actual &&
	test_cmp expect actual
'

test_expect_success '--show-origin with a single key' '
	printf "file:%s\tgpt-5\n" "$store/config" >expect &&
	aptix config --show-origin openai.model >actual &&
	test_cmp expect actual &&
	printf "file:%s\tws-user\n" "$user" >expect &&
	aptix config --show-origin --get workspace.id >actual &&
	test_cmp expect actual
'

test_expect_success 'environment overrides' '
	echo https://proxy.example/v1 >expect &&
	OPENAI_BASE_URL=https://proxy.example/v1 aptix config openai.base-url >actual &&
	test_cmp expect actual &&
	echo env-model >expect &&
	APTIX_MODEL=env-model aptix config openai.model >actual &&
	test_cmp expect actual &&
	echo ws-env >expect &&
	APTIX_WORKSPACE=ws-env aptix config workspace.id >actual &&
	test_cmp expect actual &&
	APTIX_MODEL=env-model OPENAI_BASE_URL=http://localhost:1 \
		aptix config --list --show-origin >actual &&
	printf "env:APTIX_MODEL\topenai.model=env-model\n" >expect.model &&
	printf "env:OPENAI_BASE_URL\topenai.base-url=http://localhost:1\n" >expect.url &&
	tail -n 2 actual >last2 &&
	cat expect.url expect.model >expect &&
	test_cmp expect last2 &&
	APTIX_MODEL=env-model aptix config --show-origin openai.model >actual &&
	printf "env:APTIX_MODEL\tenv-model\n" >expect &&
	test_cmp expect actual &&
	echo gpt-5 >expect &&
	APTIX_MODEL= aptix config openai.model >actual &&
	test_cmp expect actual
'

test_expect_success 'environment overrides are never written' '
	cp .aptix/config before &&
	APTIX_MODEL=env-model aptix config rag.top-k 5 &&
	grep -v top-k .aptix/config >after &&
	test_cmp before after &&
	aptix config --unset rag.top-k &&
	test_cmp before .aptix/config
'

test_expect_success '--unset' '
	aptix config --unset openai.temperature &&
	test_expect_code 1 aptix config openai.temperature &&
	! grep temperature .aptix/config &&
	test_expect_code 5 aptix config --unset openai.temperature 2>err &&
	grep "^error: key .openai.temperature. is not set in" err
'

test_expect_success 'bad values are refused with the reason' '
	cp .aptix/config before &&
	test_must_fail aptix config openai.max-attempts 50 2>err &&
	echo "fatal: bad value '\''50'\'' for '\''openai.max-attempts'\'': must be between 1 and 20" >expect &&
	test_cmp expect err &&
	test_must_fail aptix config openai.chain-ttl 3x 2>err &&
	grep "^fatal: bad value .3x. for .openai.chain-ttl.: not a duration" err &&
	test_must_fail aptix config openai.temperature 3 2>err &&
	test_must_fail aptix config openai.base-url ftp://x 2>err &&
	test_must_fail aptix config rag.backend pinecone 2>err &&
	test_must_fail aptix config rag.top-k 0 2>err &&
	test_must_fail aptix config rag.required maybe 2>err &&
	test_must_fail aptix config context.window-turns 5000 2>err &&
	test_must_fail aptix config openai.model "" 2>err &&
	test_cmp before .aptix/config &&
	aptix config openai.chain-ttl 30d &&
	aptix config files.max-size 2m &&
	aptix config rag.required yes
'

test_expect_success 'keys of ones own (x.*) are accepted, malformed keys are not' '
	aptix config x.some-option "any thing" &&
	echo "any thing" >expect &&
	aptix config x.some-option >actual &&
	test_cmp expect actual &&
	test_must_fail aptix config a.b.c v 2>err &&
	grep "invalid key" err &&
	test_must_fail aptix config my_tool.x v 2>err &&
	grep "invalid key" err &&
	test_expect_code 2 aptix config nosection v 2>err &&
	grep "key does not contain a section: nosection" err &&
	test_expect_code 2 aptix config nosection 2>err &&
	grep "key does not contain a section" err
'

# Regression: a typo of a real key was stored and silently ignored.
test_expect_success 'an unknown key is refused, with the nearest key' '
	cp .aptix/config before &&
	test_must_fail aptix config openai.modle gpt-5-mini 2>err &&
	echo "fatal: unknown config key '"'"'openai.modle'"'"'; did you mean '"'"'openai.model'"'"'?" >expect &&
	test_cmp expect err &&
	test_must_fail aptix config totally.unknown 1 2>err &&
	grep "^fatal: unknown config key .totally.unknown. (aptix config --list-keys lists them; keys of your own go under .x..)$" err &&
	test_cmp before .aptix/config &&
	aptix config x.my-note "kept for me" &&
	test "$(aptix config x.my-note)" = "kept for me" &&
	aptix config --unset x.my-note &&
	test_expect_code 1 aptix config x.my-note
'

test_expect_success 'a secret is refused and never written' '
	cp .aptix/config before &&
	test_must_fail aptix config openai.api-key sk-test-0123456789 2>err &&
	echo "fatal: refusing to store a secret in the config: set OPENAI_API_KEY in the environment" >expect &&
	test_cmp expect err &&
	test_must_fail aptix config github.token tok-0123456789 2>err &&
	test_must_fail aptix config db.password hunter2-0123456789 2>err &&
	test_must_fail aptix config my.secret s3cr3t-0123456789 2>err &&
	test_cmp before .aptix/config &&
	! grep -r sk-test-0123456789 .aptix &&
	! grep -r 0123456789 .aptix &&
	! grep -ri api-key .aptix &&
	test_path_is_missing .aptix/config.lock
'

test_expect_success 'a secret written by hand can be unset' '
	cp .aptix/config before &&
	printf "[openai]\n\tapi-key = sk-by-hand\n" >>.aptix/config &&
	aptix config --unset openai.api-key &&
	printf "[openai]\n" >>before &&
	test_cmp before .aptix/config &&
	! grep -r sk-by-hand .aptix
'

test_expect_success 'a malformed store file is fatal, naming file and line' '
	cp .aptix/config good &&
	test_when_finished "cp good .aptix/config" &&
	printf "[openai]\n\tmodel = x\n\tthis is not valid\n" >.aptix/config &&
	test_must_fail aptix config --list >out 2>err &&
	test_must_be_empty out &&
	echo "fatal: bad config line 3 in file '\''$store/config'\''" >expect &&
	test_cmp expect err &&
	test_must_fail aptix config openai.model 2>err &&
	test_cmp expect err &&
	cp .aptix/config broken &&
	test_must_fail aptix config openai.model y 2>err &&
	test_cmp expect err &&
	test_cmp broken .aptix/config &&
	test_path_is_missing .aptix/config.lock
'

test_expect_success 'an unterminated quote names its line' '
	cp .aptix/config good &&
	test_when_finished "cp good .aptix/config" &&
	printf "[a]\n\tb = 1\n\n\tc = \"open\n" >.aptix/config &&
	test_must_fail aptix config a.b 2>err &&
	grep "^fatal: bad config line 4 in file" err
'

test_expect_success 'a malformed user file is fatal too' '
	cp .config/aptix/config good-user &&
	test_when_finished "cp good-user .config/aptix/config" &&
	printf "[ok]\n\tk = v\n[broken\n" >.config/aptix/config &&
	test_must_fail aptix config --list 2>err &&
	echo "fatal: bad config line 3 in file '\''$user'\''" >expect &&
	test_cmp expect err
'

test_expect_success 'a stale config.lock gives a clear error' '
	cp .aptix/config before &&
	>.aptix/config.lock &&
	test_when_finished "rm -f .aptix/config.lock" &&
	test_must_fail aptix config openai.model locked 2>err &&
	grep "^fatal: cannot lock the config: .*/.aptix/config.lock. exists (made [0-9]* s ago)\. Another aptix process" err &&
	grep "remove the file manually to continue\.$" err &&
	test_must_fail aptix config --unset openai.model 2>err2 &&
	sed "s/made [0-9]* s/made N s/" err >expect &&
	sed "s/made [0-9]* s/made N s/" err2 >actual &&
	test_cmp expect actual &&
	test_path_is_file .aptix/config.lock &&
	test_cmp before .aptix/config &&
	aptix config openai.model >actual &&
	echo gpt-5 >expect &&
	test_cmp expect actual
'

test_expect_success 'after the lock is gone, set works again' '
	test_path_is_missing .aptix/config.lock &&
	aptix config openai.model unlocked &&
	echo unlocked >expect &&
	aptix config openai.model >actual &&
	test_cmp expect actual
'

test_expect_success 'works from a subdirectory and with -C' '
	mkdir -p sub/dir &&
	(cd sub/dir && aptix config openai.model >../../actual) &&
	test_cmp expect actual &&
	aptix -C sub config openai.model >actual &&
	test_cmp expect actual
'

test_expect_success 'usage errors' '
	test_expect_code 129 aptix config &&
	test_expect_code 129 aptix config a.b c d &&
	test_expect_code 129 aptix config --list extra &&
	test_expect_code 129 aptix config --get a.b extra &&
	test_expect_code 129 aptix config --unset a.b extra &&
	test_expect_code 129 aptix config --list --unset a.b &&
	test_expect_code 129 aptix config --get a.b --unset a.b &&
	test_expect_code 129 aptix config --show-origin a.b c &&
	test_expect_code 129 aptix config --show-origin --unset a.b
'

test_expect_success 'outside a store: the user file is read, the store is not written' '
	mkdir -p /tmp/aptix-config-nostore-$$ &&
	test_when_finished "rm -rf /tmp/aptix-config-nostore-$$" &&
	mkdir -p "$HOME/.config/aptix" &&
	test_when_finished "rm -f \"$HOME/.config/aptix/config\"" &&
	printf "[openai]\n\tmodel = user-model\n" >"$HOME/.config/aptix/config" &&
	(
		cd /tmp/aptix-config-nostore-$$ &&
		aptix config --list >out &&
		echo openai.model=user-model >expect &&
		test_cmp expect out &&
		test "$(aptix config openai.model)" = user-model &&
		test_must_fail aptix config openai.model x 2>err &&
		grep "^fatal: not an aptix store" err &&
		test_must_fail aptix config --unset openai.model 2>err &&
		grep "^fatal: not an aptix store" err
	)
'

test_expect_success 'config --global writes the user file, XDG_CONFIG_HOME honoured' '
	mkdir -p /tmp/aptix-config-global-$$ &&
	test_when_finished "rm -rf /tmp/aptix-config-global-$$" &&
	rm -rf "$HOME/.config" &&
	test_when_finished "rm -rf \"$HOME/.config\"" &&
	(
		cd /tmp/aptix-config-global-$$ &&
		aptix config --global openai.model global-model &&
		printf "[openai]\n\tmodel = global-model\n" >expect &&
		test_cmp expect "$HOME/.config/aptix/config" &&
		test_must_fail aptix config --global openai.modle x 2>err &&
		grep "did you mean .openai.model." err &&
		XDG_CONFIG_HOME="$TRASH_DIRECTORY/xdg2" \
			aptix config --global rag.backend local &&
		printf "[rag]\n\tbackend = local\n" >expect &&
		test_cmp expect "$TRASH_DIRECTORY/xdg2/aptix/config" &&
		aptix config --global --list --show-origin >out &&
		printf "file:%s\topenai.model=global-model\n" \
			"$HOME/.config/aptix/config" >expect &&
		test_cmp expect out
	) &&
	# in a store: --global reads and writes only the user file
	aptix config openai.model store-model &&
	test "$(aptix config openai.model)" = store-model &&
	test "$(aptix config --global openai.model)" = global-model &&
	aptix config --global --list >out &&
	echo openai.model=global-model >expect &&
	test_cmp expect out &&
	aptix config --global --unset openai.model &&
	test_expect_code 1 aptix config --global openai.model &&
	test "$(aptix config openai.model)" = store-model &&
	aptix config --unset openai.model &&
	test_expect_code 5 aptix config --global --unset openai.model 2>err
'

test_expect_success 'retrieval and timeout keys are checked when set' '
	test_must_fail aptix config rag.chunk-lines 0 2>err &&
	grep "rag.chunk-lines" err &&
	test_must_fail aptix config rag.timeout soon 2>err &&
	grep "rag.timeout" err &&
	aptix config openai.idle-timeout 30s &&
	test "$(aptix config openai.idle-timeout)" = 30s &&
	test_must_fail aptix config openai.idle-timeout never
'

test_expect_success '--list-keys: one key a line, five tab-separated fields' '
	aptix config --list-keys >keys &&
	test_line_count -gt 20 keys &&
	awk -F "	" "NF != 5 { print; bad = 1 } END { exit bad }" keys &&
	cut -f1 keys >names &&
	sort names >sorted &&
	test_cmp sorted names &&
	grep "^openai.max-attempts	integer	5	1..20	." keys &&
	grep "^rag.top-k	integer	8	1..100	." keys &&
	grep "^rag.backend	enum	local	local|qdrant	." keys &&
	grep "^openai.chain-ttl	duration	30d	-	." keys &&
	grep "^workspace.id	string	-	-	." keys &&
	test_expect_code 129 aptix config --list-keys openai.model &&
	test_expect_code 129 aptix config --list-keys --list &&
	test_expect_code 129 aptix config --json
'

test_expect_success '--list-keys --json holds the same keys' '
	aptix config --list-keys --json >keys.json &&
	python3 -c "
import json, sys
keys = json.load(open(\"keys.json\"))
print(\"\n\".join(k[\"name\"] for k in keys))
assert all(k[\"doc\"] for k in keys)
top = [k for k in keys if k[\"name\"] == \"rag.top-k\"][0]
assert (top[\"min\"], top[\"max\"], top[\"default\"]) == (1, 100, \"8\"), top
" >json-names &&
	test_cmp names json-names
'

test_expect_success 'every key of --list-keys can be set to its default' '
	cp .aptix/config before &&
	awk -F "	" "\$3 != \"-\" { print \$1 \"	\" \$3 }" keys >defaults &&
	while IFS="	" read -r key value
	do
		aptix config "$key" "$value" || return 1
	done <defaults &&
	cp before .aptix/config
'

test_expect_success 'README.md lists the keys --list-keys lists' '
	sed -n "/^<!-- config-keys: begin/,/^<!-- config-keys: end/p" \
		"$TEST_DIRECTORY/../README.md" | sed "1d;\$d" >readme-keys &&
	test_line_count -gt 20 readme-keys &&
	sh "$TEST_DIRECTORY/readme-config-keys.sh" >expect &&
	test_cmp expect readme-keys
'

test_expect_success 'aptix -c overrides the config for one command' '
	aptix config openai.model from-file &&
	aptix -c openai.model=from-c config openai.model >out &&
	echo from-c >expect &&
	test_cmp expect out &&
	APTIX_MODEL=from-env aptix -c openai.model=from-c \
		config openai.model >out &&
	test_cmp expect out &&
	aptix -c openai.model=from-c config --show-origin openai.model >out &&
	printf "command line:\tfrom-c\n" >expect &&
	test_cmp expect out &&
	aptix config openai.model >out &&
	echo from-file >expect &&
	test_cmp expect out
'

test_expect_success 'aptix -c is repeatable; the last one wins' '
	aptix -c openai.model=one -c openai.model=two -c x.mine=yes \
		config openai.model >out &&
	echo two >expect &&
	test_cmp expect out
'

test_expect_success 'aptix -c checks keys and values as config does' '
	test_expect_code 129 aptix -c openai.modle=x config openai.model \
		2>err &&
	grep "did you mean .openai.model" err &&
	test_expect_code 129 aptix -c openai.temperature=hot \
		config openai.model 2>err &&
	grep "openai.temperature" err &&
	test_expect_code 129 aptix -c novalue config openai.model 2>err &&
	grep "<key>=<value>" err &&
	test_expect_code 129 aptix -c 2>err
'

test_expect_success 'a bad value written by hand: a read fails, a turn writes nothing' '
	rm -rf bad && mkdir bad &&
	(
		cd bad &&
		aptix init -q &&
		printf "[openai]\n\ttemperature = 7\n" >>.aptix/config &&
		test_expect_code 128 aptix config openai.temperature >out 2>err &&
		test_must_be_empty out &&
		grep "fatal: bad value .7. for .openai.temperature.: must be between 0 and 2" err &&
		test_expect_code 128 aptix config --get openai.temperature 2>err &&
		grep "must be between 0 and 2" err &&
		key=sk-test-$(od -An -N12 -tx1 /dev/urandom | tr -d " \n") &&
		OPENAI_API_KEY=$key OPENAI_BASE_URL=http://127.0.0.1:9/v1 \
			test_expect_code 128 aptix continue -m "hi" >out 2>err &&
		grep "fatal: bad value .7. for .openai.temperature." err &&
		aptix log --all >log &&
		test_must_be_empty log &&
		aptix for-each-ref >refs &&
		test_must_be_empty refs
	)
'

test_expect_success 'a value holding the key of the environment is refused, whatever its format' '
	key=K3yOfN0KnownF0rmat$(date +%N) &&
	OPENAI_API_KEY=$key test_must_fail aptix config openai.model "$key" 2>err &&
	grep "fatal: refusing to store .openai.model.: its value holds an API key" err &&
	! grep -F "$key" err &&
	QDRANT_API_KEY=$key test_must_fail aptix config x.note "a $key b" 2>err &&
	grep "its value holds an API key" err &&
	! grep -F "$key" .aptix/config &&
	OPENAI_API_KEY=$key aptix config openai.model gpt-4o-mini
'

test_done
