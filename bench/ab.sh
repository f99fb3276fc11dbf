#!/usr/bin/env bash
# Before/after benchmarks of two commits: each bench runs --quick --json at A, then at B, bench by
# bench, so drift in the machine's load falls on both sides alike. Each commit gets a detached
# worktree (its own embedded database) sharing this checkout's .venv; the last JSON line of every
# run is kept under bench/results/ab/LABEL/<commit>.<bench>.json. bench/ab_table.py compares them.
#
#   bench/ab.sh LABEL COMMIT_A COMMIT_B [bench ...]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
label=$1; a=$2; b=$3; shift 3
benches=${*:-"store search context compaction judge_cost embedding_cache pipeline mcp load storage"}
out=$root/bench/results/ab/$label; mkdir -p "$out"
trees=${AB_DIR:-/tmp/bench-ab}
for c in $a $b; do
  d=$trees/$c
  if [ ! -d "$d" ]; then
    git -C "$root" worktree add -q --detach "$d" "$c" && ln -sfn "$root/.venv" "$d/.venv"
    ln -sfn "$root/../shared" "$(dirname "$d")/shared" 2>/dev/null || true
  fi
  (cd "$d" && SECRET_KEY=x DEBUG=1 .venv/bin/python manage.py migrate -v0 >/dev/null)
done
for bench in $benches; do
  for c in $a $b; do
    start=$(date +%s)
    # Older commits serve production settings, which redirect plain HTTP; the bench talks to 127.0.0.1.
    (cd "$trees/$c" && SECRET_KEY=x SECURE_SSL_REDIRECT=false timeout 900 .venv/bin/python "bench/$bench.py" \
      --quick --json > "$out/$c.$bench.log" 2>&1)
    rc=$?
    tail -1 "$out/$c.$bench.log" > "$out/$c.$bench.json"
    echo "$bench $c rc=$rc $(( $(date +%s) - start ))s load=$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out/summary.txt"
  done
done
for c in $a $b; do
  (cd "$trees/$c" && git checkout -q bench/results && SECRET_KEY=x DEBUG=1 .venv/bin/python manage.py embedded_db stop >/dev/null 2>&1)
done
