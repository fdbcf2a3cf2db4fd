#!/usr/bin/env bash
# Runs a command and reports, on stderr, its peak anonymous and file-backed resident memory,
# sampled from /proc/PID/status every 0.1 s (RssAnon, RssFile). Peak RSS from
# `/usr/bin/time -v` counts the pages of memory-mapped segment files the process touched,
# which the kernel can drop at any time; RssAnon is the heap the process really owns.
#   tools/peak_mem.sh CMD ARGS...
"$@" &
pid=$!
anon=0; file=0
while kill -0 "$pid" 2>/dev/null; do
  if read -r a f < <(awk '/^RssAnon/ {a=$2} /^RssFile/ {f=$2} END {print a+0, f+0}' "/proc/$pid/status" 2>/dev/null); then
    [ "$a" -gt "$anon" ] && anon=$a
    [ "$f" -gt "$file" ] && file=$f
  fi
  sleep 0.1
done
wait "$pid"; rc=$?
echo "peak_rss_anon_MiB=$((anon / 1024)) peak_rss_file_MiB=$((file / 1024))" >&2
exit $rc
