#!/bin/sh
test_description='a turn runs git at most once, and never outside a work tree

git status gives the dirty files; where the workspace sits in the work
tree comes from looking up the .git entry, not from another git
process. Outside a work tree no git runs at all; commands that read the store
run none. The same git status gives the commit, branch and dirty flag
each turn records (issue 12).'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

# A git on PATH that logs each call to $GIT_CALLS, then runs the real one.
test_expect_success 'setup: a logging git' '
	real=$(command -v git) &&
	mkdir bin &&
	cat >bin/git <<-EOF &&
	#!/bin/sh
	echo "\$*" >>"\$GIT_CALLS"
	exec "$real" "\$@"
	EOF
	chmod +x bin/git &&
	GIT_CALLS=$PWD/calls && export GIT_CALLS
'

test_expect_success 'in a work tree (a subdirectory of it): one git status' '
	git init -q wt &&
	mkdir wt/sub &&
	echo dirty >wt/sub/dirty.txt &&
	(cd wt/sub && aptix init -q) &&
	rm -f calls &&
	(cd wt/sub && PATH=$TRASH_DIRECTORY/bin:$PATH aptix continue --dry-run -m x >../../out) &&
	test_line_count = 1 calls &&
	grep "^--no-optional-locks -C .* status " calls &&
	grep "dirty.txt" out
'

test_expect_success 'aptix status runs git once too' '
	rm -f calls &&
	(cd wt/sub && PATH=$TRASH_DIRECTORY/bin:$PATH aptix status >../../out) &&
	test_line_count = 1 calls &&
	grep "dirty.txt" out
'

test_expect_success 'no pathspec for git when the store is in .git' '
	git init -q top &&
	echo dirty >top/dirty.txt &&
	(cd top && aptix init -q) &&
	test_path_is_missing top/.aptix &&
	rm -f calls &&
	(cd top && PATH=$TRASH_DIRECTORY/bin:$PATH aptix status >../out) &&
	test_line_count = 1 calls &&
	grep -e " --untracked-files=all\$" calls &&
	grep "dirty.txt" out
'

test_expect_success 'a store kept in the work tree is left out of git status' '
	inside=$(mktemp -d "${TMPDIR:-/tmp}/aptix-dotstore.XXXXXX") &&
	test_when_finished "rm -rf \"$inside\"" &&
	(cd "$inside" && aptix init -q && git init -q) &&
	test_path_is_dir "$inside/.aptix" &&
	echo dirty >"$inside/dirty.txt" &&
	rm -f calls &&
	(cd "$inside" && PATH=$TRASH_DIRECTORY/bin:$PATH aptix status >"$TRASH_DIRECTORY/out") &&
	test_line_count = 1 calls &&
	grep -e " -- \. :(exclude)\.aptix\$" calls &&
	grep "dirty.txt" out &&
	! grep "data.mdb" out
'

test_expect_success 'outside a work tree: no git at all' '
	outside=$(mktemp -d "${TMPDIR:-/tmp}/aptix-nogit.XXXXXX") &&
	test_when_finished "rm -rf \"$outside\"" &&
	! (cd "$outside" && git rev-parse --git-dir >/dev/null 2>&1) &&
	(cd "$outside" && aptix init -q) &&
	rm -f calls &&
	(cd "$outside" && PATH=$TRASH_DIRECTORY/bin:$PATH aptix continue --dry-run -m x >/dev/null) &&
	test_path_is_missing calls
'

test_expect_success PYTHON3 'a whole turn runs git once and records the work tree' '
	start_standin &&
	git -C wt add sub/dirty.txt &&
	git -C wt commit -q -m one &&
	git -C wt checkout -q -b topic &&
	head=$(git -C wt rev-parse HEAD) &&
	rm -f calls &&
	(cd wt/sub && PATH=$TRASH_DIRECTORY/bin:$PATH &&
	 aptix continue -q --no-stream -m clean) >/dev/null &&
	test_line_count = 1 calls &&
	(cd wt/sub && aptix show) >out &&
	grep "^Work tree: *$head on topic\$" out &&
	(cd wt/sub && aptix show --json) >json &&
	test "$(json_field .worktree.commit <json)" = "$head" &&
	test "$(json_field .worktree.branch <json)" = topic &&
	test "$(json_field .worktree.dirty <json)" = false &&
	(cd wt/sub && aptix cat-object -p "$(json_field .turn <../../json)") >out &&
	grep "^worktree  *$head clean branch topic\$" out
'

test_expect_success PYTHON3 'reading commands run no git' '
	rm -f calls &&
	(cd wt/sub && PATH=$TRASH_DIRECTORY/bin:$PATH &&
	 aptix --version && aptix log -n1 && aptix show && aptix sessions &&
	 aptix rev-parse HEAD) >/dev/null &&
	test_path_is_missing calls
'

test_expect_success PYTHON3 'a dirty work tree, then a detached HEAD' '
	echo more >wt/sub/dirty.txt &&
	(cd wt/sub && aptix continue -q --no-stream -m dirty) >/dev/null &&
	(cd wt/sub && aptix show) >out &&
	grep "^Work tree: *$head on topic (dirty)\$" out &&
	git -C wt checkout -q --detach &&
	(cd wt/sub && aptix continue -q --no-stream -m detached) >/dev/null &&
	(cd wt/sub && aptix show) >out &&
	grep "^Work tree: *$head (detached HEAD) (dirty)\$" out &&
	(cd wt/sub && aptix show --json) >json &&
	test "$(json_field .worktree.branch <json)" = null
'

test_expect_success PYTHON3 'outside a work tree a turn records none' '
	outside=$(mktemp -d "${TMPDIR:-/tmp}/aptix-nogit.XXXXXX") &&
	test_when_finished "rm -rf \"$outside\"" &&
	(cd "$outside" && aptix init -q &&
	 aptix continue -q --no-stream -m x >/dev/null &&
	 aptix show >"$TRASH_DIRECTORY/out" &&
	 aptix show --json >"$TRASH_DIRECTORY/json") &&
	! grep "^Work tree" out &&
	test "$(json_field .worktree <json)" = null
'

test_done
