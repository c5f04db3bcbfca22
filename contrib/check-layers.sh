#!/bin/sh
# contrib/check-layers.sh - no include goes from a lower layer of src/ to a higher
# one. The order is the list of folders in src/README.md (its "Layers"
# section, lowest first); a file may include its own folder's headers,
# any lower folder's, and the public ones (aptix/...).
cd "$(dirname "$0")/.." || exit 2
order=$(sed -n '/^## Layers/,/^## /s/^[0-9][0-9]*\. `\([a-z]*\)\/`.*/\1/p' src/README.md)
test -n "$order" || { echo "check-layers: no layer list in src/README.md" >&2; exit 2; }
rank() {
	i=0
	for l in $order; do
		i=$((i + 1))
		test "$l" = "$1" && { echo $i; return; }
	done
	echo 0
}
bad=0
for dir in src/*/; do
	dir=${dir%/}
	layer=${dir#src/}
	r=$(rank "$layer")
	if test "$r" = 0; then
		echo "check-layers: $dir is not in src/README.md's layer list" >&2
		bad=1
		continue
	fi
	for f in "$dir"/*.[ch]; do
		grep -n '^#[ 	]*include[ 	]*"' "$f" |
		sed 's/^\([0-9]*\):#[ 	]*include[ 	]*"\([^"]*\)".*/\1 \2/' |
		while read -r line inc; do
			case $inc in
			aptix/*|aptix.h) continue ;;
			*/*) to=${inc%%/*} ;;
			*) echo "$f:$line: include \"$inc\" names no folder" \
				"(write \"<layer>/$inc\")"; continue ;;
			esac
			t=$(rank "$to")
			if test "$t" = 0; then
				echo "$f:$line: \"$inc\": no such layer"
			elif test "$t" -gt "$r"; then
				echo "$f:$line: $layer includes \"$inc\" of the" \
					"higher layer $to"
			fi
		done
	done
done >.layers.out
if test -s .layers.out; then
	cat .layers.out >&2
	bad=1
fi
rm -f .layers.out
for f in src/*.[ch]; do
	test -e "$f" || continue
	echo "check-layers: $f is in no layer folder" >&2
	bad=1
done
exit $bad
