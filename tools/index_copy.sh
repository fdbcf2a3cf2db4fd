# Sourced by the benchmark scripts: copy_index SRC DST makes DST a copy of the index SRC that
# a run may change without touching SRC: hard links for the write-once files (segments *.ndds,
# RocksDB table files *.sst), real copies of everything else (catalog logs, MANIFEST, ...).
copy_index() {
  rm -rf "$2"; cp -al "$1" "$2"
  find "$2" -type f ! -name '*.ndds' ! -name '*.sst' | while read -r f; do
    cp -p "$f" "$f.copy" && mv -f "$f.copy" "$f"; done
}
