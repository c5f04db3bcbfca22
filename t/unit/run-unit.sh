#!/bin/sh
#
# run-unit.sh - run the Check unit tests as one TAP producer for prove.
#
# The binary is "$APTIX_BUILD_DIR/t/unit/aptix-unit"; APTIX_BUILD_DIR
# defaults to the top of the source tree (two levels up from here). It
# runs in a scratch working directory, removed afterwards. Arguments
# (suite names) are passed on, and so are the names in
# $APTIX_UNIT_SUITES (make tsan-test).

script_dir=$(cd "$(dirname "$0")" && pwd) || exit 1
: "${APTIX_BUILD_DIR:=$(cd "$script_dir/../.." && pwd)}"
# where tests find t/standin/ and other source files from the scratch dir
: "${APTIX_SOURCE_DIR:=$(cd "$script_dir/../.." && pwd)}"
export APTIX_SOURCE_DIR
unit="$APTIX_BUILD_DIR/t/unit/aptix-unit"

if ! test -x "$unit"; then
	echo "1..0 # SKIP $unit is not built (make t/unit/aptix-unit)"
	exit 0
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/aptix-unit-run.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM HUP

cd "$scratch" || exit 1
# shellcheck disable=SC2086
APTIX_UNIT_TAP=1 "$unit" "$@" $APTIX_UNIT_SUITES
