#!/bin/bash
# Issue 14, second "Checked by": create, diff, rewind and undo on a tree with
# symlinks (relative, absolute, dangling, out of the workspace), an
# executable, an empty file, a 200 MB file and deleted/created files; the
# workspace after undo must equal the one before the rewind, byte for byte
# and mode for mode; peak RSS of the rewind under 128 MiB.
set -euo pipefail
# Usage: CGO_ENABLED=0 go build -o /tmp/trove ./cmd/trove && bash tools/ckprobe.sh /tmp/trove
T=${1:?trove binary}
W=$(mktemp -d /tmp/ckprobe.XXXX); S=$W/store; WS=$W/ws; mkdir -p $WS/src/sub
cd $WS
echo hello > a.txt; printf '#!/bin/sh\necho hi\n' > run.sh; chmod 755 run.sh; : > empty
head -c 200000000 /dev/urandom > big.bin
echo inner > src/sub/x.go
ln -s a.txt rel-link; ln -s $WS/a.txt abs-link; ln -s does-not-exist dangling; ln -s /etc/hostname outside; ln -s src dirlink
snap() { (cd $WS && find . -print0 | sort -z | xargs -0 stat -c '%n %F %a %s' ; find . -type f -print0 | sort -z | xargs -0 sha256sum; find . -type l -print0 | sort -z | xargs -0 -I{} sh -c 'echo "{} -> $(readlink "{}")"'); }
$T --store $S checkpoint --dir $WS create --max-file-size 0 base >/dev/null
d=$($T --store $S checkpoint --dir $WS diff base)
echo "diff right after create: [$d]"
# change things: edit, delete, create, chmod, relink, grow the big file
echo changed >> a.txt; rm empty; echo new > created.txt; chmod 644 run.sh; rm rel-link; ln -s run.sh rel-link
head -c 1000 /dev/urandom >> big.bin; rm -r src/sub; echo y > src/y.go
mkdir -p made/empty; chmod 700 src   # directories: made, removed (src/sub), mode changed
before=$(snap)
rss() { # peak RSS in KB of "$@", which must succeed
  local out; out=$(/usr/bin/time -f "RSS %M" "$@" 2>&1) || { echo "$out"; exit 1; }
  echo "$out" | grep -v '^RSS' | tail -3 >&2; echo "$out" | sed -n 's/^RSS //p'
}
kb=$(rss $T --store $S checkpoint --dir $WS rewind base); echo "rewind peak RSS $kb KB"; [ "$kb" -lt 131072 ] || { echo "over 128 MiB"; exit 1; }
$T --store $S checkpoint --dir $WS diff base | grep -q "^0 files" || { echo "diff after rewind not empty"; $T --store $S checkpoint --dir $WS diff base; }
kb=$(rss $T --store $S checkpoint --dir $WS rewind --undo); echo "undo peak RSS $kb KB"; [ "$kb" -lt 131072 ] || { echo "over 128 MiB"; exit 1; }
after=$(snap)
if [ "$before" = "$after" ]; then echo "undo: workspace equals the one before the rewind (bytes, modes, links)"; else echo "UNDO MISMATCH"; diff <(echo "$before") <(echo "$after") | head; exit 1; fi
readlink $WS/outside; [ -L $WS/outside ] && echo "outside link restored as a link"
rm -rf $W
