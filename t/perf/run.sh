#!/bin/sh
# make bench: aptix against git on the same work, on this machine.
# Prints a table; never asserts (speed is measured, not tested).
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
export GIT_CONFIG_NOSYSTEM=1 HOME="$W" LC_ALL=C
unset APTIX_DIR

now() { date +%s.%N; }
# rate N START END -> per second
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
du_bytes() { du -sb "$1" | cut -f1; }
alloc_bytes() { du -s --block-size=1 "$1" | cut -f1; }

# deterministic, partly compressible content: text-like lines
gen_files() { # dir count size
	python3 - "$1" "$2" "$3" <<'PY'
import os, random, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
rnd = random.Random(42)
words = [''.join(rnd.choice('abcdefghijklmnopqrstuvwxyz_') for _ in range(rnd.randint(2, 10))) for _ in range(2000)]
for i in range(n):
    out, ln = [], 0
    while ln < size:
        line = ' '.join(rnd.choice(words) for _ in range(rnd.randint(3, 12))) + '\n'
        out.append(line); ln += len(line)
    with open(os.path.join(d, '%06d' % i), 'w') as f:
        f.write(''.join(out)[:size])
PY
}

echo "aptix bench on $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo
printf '%-34s %12s %12s %12s %8s %8s\n' "write (objects/s)" aptix "git h-o" "git f-i" "vs h-o" "vs f-i"
for spec in 1024:4000 16384:2000 262144:200; do
	size=${spec%%:*} n=${spec##*:}
	gen_files "$W/in-$size" "$n" "$size"
	ls "$W/in-$size"/* >"$W/paths-$size"

	rm -rf "$W/a" && mkdir "$W/a" && (cd "$W/a" && "$APTIX" init -q)
	s=$(now); (cd "$W/a" && "$APTIX" hash-object -w --stdin-paths <"$W/paths-$size" >/dev/null); e=$(now)
	ap=$(rate "$n" "$s" "$e")

	rm -rf "$W/g" && git init -q --object-format=sha256 "$W/g"
	s=$(now); (cd "$W/g" && git hash-object -w --stdin-paths <"$W/paths-$size" >/dev/null); e=$(now)
	gh=$(rate "$n" "$s" "$e")

	rm -rf "$W/f" && git init -q --object-format=sha256 "$W/f"
	python3 - "$W/paths-$size" >"$W/fi-$size" <<'PY'
import sys
out = sys.stdout.buffer
for i, p in enumerate(open(sys.argv[1]).read().split()):
    data = open(p, 'rb').read()
    out.write(b'blob\nmark :%d\ndata %d\n' % (i + 1, len(data)) + data + b'\n')
PY
	s=$(now); (cd "$W/f" && git fast-import --quiet <"$W/fi-$size"); e=$(now)
	gf=$(rate "$n" "$s" "$e")
	printf '%-34s %12s %12s %12s %8s %8s\n' "$n x $size B blobs" "$ap" "$gh" "$gf" \
		"$(ratio "$ap" "$gh")x" "$(ratio "$ap" "$gf")x"

	total=$(cat "$W/in-$size"/* | wc -c)
	eval "disk_$size=\"$(ratio "$(alloc_bytes "$W/a/.aptix")" "$total") $(ratio "$(alloc_bytes "$W/g/.git/objects")" "$total") $(ratio "$(alloc_bytes "$W/f/.git/objects")" "$total")\""

	# reads: every object through one batch process
	(cd "$W/a" && "$APTIX" cat-object --batch-check --batch-all-objects | cut -d' ' -f1 >"$W/ids-$size")
	s=$(now); (cd "$W/a" && "$APTIX" cat-object --batch <"$W/ids-$size" >/dev/null); e=$(now)
	eval "read_a_$size=$(rate "$n" "$s" "$e")"
	s=$(now); (cd "$W/g" && git cat-file --batch <"$W/ids-$size" >/dev/null); e=$(now)
	eval "read_g_$size=$(rate "$n" "$s" "$e")"
	s=$(now); (cd "$W/f" && git cat-file --batch <"$W/ids-$size" >/dev/null); e=$(now)
	eval "read_f_$size=$(rate "$n" "$s" "$e")"
done
echo
printf '%-34s %12s %12s %12s %8s %8s\n' "read, cat --batch (objects/s)" aptix "git loose" "git pack" "vs loose" "vs pack"
for size in 1024 16384 262144; do
	eval "a=\$read_a_$size g=\$read_g_$size f=\$read_f_$size"
	printf '%-34s %12s %12s %12s %8s %8s\n' "$size B blobs" "$a" "$g" "$f" "$(ratio "$a" "$g")x" "$(ratio "$a" "$f")x"
done
echo
printf '%-34s %12s %12s %12s\n' "disk bytes per byte stored" aptix "git loose" "git pack"
for size in 1024 16384 262144; do
	eval "set -- \$disk_$size"
	printf '%-34s %12s %12s %12s\n' "$size B blobs" "$1" "$2" "$3"
done

# process start included: one small object, many runs
echo
id=$(cd "$W/a" && head -n1 "$W/ids-1024")
if command -v hyperfine >/dev/null 2>&1; then
	(cd "$W/a" && hyperfine -N -w 20 -r 300 --export-json "$W/hf.json" \
		"$APTIX cat-object -p $id"  \
		>/dev/null 2>&1 || true)
	(cd "$W/g" && hyperfine -N -w 20 -r 300 --export-json "$W/hf-git.json" \
		"git cat-file -p $id" "git rev-parse HEAD" >/dev/null 2>&1 || true)
	python3 - "$W/hf.json" "$W/hf-git.json" <<'PY'
import json, sys
rows = []
for f in sys.argv[1:]:
    try:
        for r in json.load(open(f))['results']:
            rows.append((r['command'].split('/')[-1][:40], r['mean'] * 1000, r['stddev'] * 1000))
    except Exception:
        pass
print('%-42s %10s %10s' % ('latency, process start included', 'mean ms', 'stddev'))
for c, m, s in rows:
    print('%-42s %10.2f %10.2f' % (c, m, s))
PY
fi
if [ -x "$PERF_DIR/more.sh" ]; then
	APTIX="$APTIX" W="$W" sh "$PERF_DIR/more.sh"
fi
