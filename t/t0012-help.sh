#!/bin/sh
test_description='every command answers -h with its usage and exit 129'
. "$(dirname "$0")"/test-lib.sh

aptix --list-cmds=all >commands
aptix init -q store >/dev/null 2>&1

test_expect_success 'there are commands' '
	test $(wc -l <commands) -gt 2
'

while read cmd
do
	test_expect_success "$cmd -h" '
		test_expect_code 129 aptix '"$cmd"' -h >out 2>err &&
		grep "^usage: aptix '"$cmd"'" out &&
		test_must_be_empty err
	'
	test_expect_success "$cmd -h outside a store" '
		(cd / && test_expect_code 129 aptix '"$cmd"' -h >/dev/null)
	'
	test_expect_success "$cmd rejects an unknown option" '
		test_expect_code 129 aptix -C store '"$cmd"' --no-such-option 2>err &&
		grep "unknown option" err
	'
done <commands

# The synopsis of -h names every option of the table (by its short or
# long name, or as --no-<name>), unless it says [<options>]: the -h of
# fork once lacked --dry-run, rerun's --no-rag, continue's -q.
test_expect_success 'each synopsis names every option' '
	while read cmd
	do
		aptix "$cmd" --dump-options >dump &&
		grep -q "^usage.*<[a-z ]*options>" dump && continue
		awk -F "\t" -v cmd="$cmd" "
			\$1 == \"usage\" { u = u \" \" \$2 }
			\$1 == \"option\" { s[NR] = \$2; l[NR] = \$3 }
			END {
				n = split(u, w, /[][ |()=]+/)
				for (i = 1; i <= n; i++) seen[w[i]] = 1
				delete seen[\"\"]
				for (i in l) {
					neg = l[i]; sub(/^--/, \"--no-\", neg)
					if (!seen[s[i]] && !seen[l[i]] && !seen[neg])
						print cmd \": \" s[i] l[i]
				}
			}" dump || return 1
	done <commands >missing &&
	test_must_be_empty missing
'

test_done
