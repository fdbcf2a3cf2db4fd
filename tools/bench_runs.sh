#!/usr/bin/env bash
# The scale target of `ndd-index runs` (issue 17): TREC 2009's shape, 50 topics x 70 runs x
# 1,000 documents (3.5M run lines), against an index built from an `ndd-gen` corpus.
#
#   tools/bench_runs.sh BIN_DIR WORK_DIR [DOCS=1000000] [MEM=512MiB]
#
# Generates the corpus (WARC) into WORK_DIR/gen and ingests it into WORK_DIR/ix unless they
# exist, then writes WORK_DIR/runs/run-NN.txt: per topic, a pool of 4,000 random documents plus
# the planted variants of their clusters (so pools hold near-duplicates, as topic collections
# do); each run ranks 1,000 of its topic's pool, drawn with a preference for the pool's head
# (runs overlap, as TREC runs do), plus about 1% docnos that are not in the index (the run files
# are kept and reused: delete WORK_DIR/runs to write them again). Then times
# `ndd-index runs --json --mem MEM` (wall, CPU, max RSS via /usr/bin/time; peak heap RssAnon and
# peak mapped-file pages RssFile via tools/peak_mem.sh) and prints the load (`uptime`) before and
# after. Needs python3.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 BIN_DIR WORK_DIR [DOCS] [MEM]" >&2
    exit 2
fi
BIN=$(cd "$1" && pwd)
W=$2
DOCS=${3:-1000000}
MEM=${4:-512MiB}
mkdir -p "$W"
W=$(cd "$W" && pwd)
log() { echo "[$(date +%T)] $*" >&2; }

if [ ! -e "$W/gen/gen.json" ]; then
    log "generating $DOCS documents"
    "$BIN/ndd-gen" --out "$W/gen" --docs "$DOCS" --format warc --seed 7 --quiet
fi
if [ ! -e "$W/ix" ]; then
    log "ingesting"
    /usr/bin/time -v "$BIN/ndd-index" ingest --index "$W/ix" --mem "$MEM" -q --json "$W/gen" \
        > "$W/ingest.json" 2> "$W/ingest.time"
fi
if [ ! -e "$W/runs/run-70.txt" ]; then
log "writing 50 topics x 70 runs x 1,000 documents"
rm -rf "$W/runs"
mkdir -p "$W/runs"
python3 - "$W" <<'PY'
import random, sys, collections
w = sys.argv[1]
rng = random.Random(2009)
keys, label = [], {}
members = collections.defaultdict(list)
with open(f"{w}/gen/truth-clusters.tsv") as f:
    next(f)
    for line in f:
        k, l = line.rstrip("\n").split("\t")
        keys.append(k)
        members[l].append(k)
        label[k] = l
pools = {}
for t in range(1, 51):
    seed = rng.sample(keys, 4000)
    pool, seen = [], set()
    for k in seed:
        for m in members[label[k]]:
            if m not in seen:
                seen.add(m)
                pool.append(m)
    rng.shuffle(pool)
    pools[t] = pool
weights_cache = {}
for r in range(1, 71):
    with open(f"{w}/runs/run-{r:02}.txt", "w") as out:
        for t in range(1, 51):
            pool = pools[t]
            n = len(pool)
            if n not in weights_cache:
                weights_cache[n] = [1.0 / (i + 50) for i in range(n)]
            chosen = set()
            while len(chosen) < 1000:
                chosen.update(rng.choices(range(n), weights=weights_cache[n], k=1000 - len(chosen)))
            docs = [pool[i] for i in chosen]
            for j in range(10):
                docs[rng.randrange(len(docs))] = f"http://missing.example/t{t}-r{r}-{j}.html"
            for rank, d in enumerate(docs, 1):
                out.write(f"{t} Q0 {d} {rank} {rng.random() * 100:.4f} run{r:02}\n")
PY
fi
wc -l "$W"/runs/*.txt | tail -1 >&2
HERE=$(cd "$(dirname "$0")" && pwd)
log "ndd-index runs --mem $MEM; load before: $(uptime)"
/usr/bin/time -v -o "$W/runs.time" "$HERE/peak_mem.sh" \
    "$BIN/ndd-index" runs --index "$W/ix" --json --mem "$MEM" "$W"/runs/run-*.txt \
    > "$W/runs.json" 2> "$W/runs.peak"
log "load after: $(uptime)"
grep -E "Elapsed|Maximum resident|User time|System time" "$W/runs.time" >&2
cat "$W/runs.peak" >&2
python3 -c "
import json; r = json.load(open('$W/runs.json'))
print('seconds', round(r['seconds'], 1), 'topics', len(r['topics']), 'run_topics', len(r['run_topics']),
      'topic docs', sum(t['docs'] for t in r['topics']), 'pairs>=T', r['sources']['pairs'],
      'unresolved', r['unresolved']['count'])
print('table n=10:', [round(x['run_topics_percent'], 2) for x in r['table'][0]['rows']][:6])" >&2
