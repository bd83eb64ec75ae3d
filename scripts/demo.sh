#!/usr/bin/env bash
# The demo: a Temporal dev server with its Web UI, two local agents running an elastic PyTorch
# DDP job (examples/train.py, 2 nodes × 2 processes), and one agent killed mid-run: the job
# shrinks to the survivor, resumes from the last checkpoint and finishes.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHON_EXEC="$PWD/.venv/bin/python"
PORT=${TELASTIC_DEMO_PORT:-7233}
UI_PORT=${TELASTIC_DEMO_UI_PORT:-8233}
JOB=demo-$(date +%H%M%S)
WORK=.telastic/demo/$JOB
DB=.telastic/demo/temporal.db
mkdir -p "$WORK"
telastic() { node bin/telastic.js "$@"; }
# start_dev, and an EXIT trap that stops the agents and the server however this script ends.
source scripts/demo-lib.sh

start_dev "$WORK/dev.log" --port "$PORT" --ui-port "$UI_PORT" --db "$DB"
cat "$WORK/dev.log"
echo "job $JOB: http://localhost:$UI_PORT/namespaces/default/workflows/$JOB"

run() {
  exec node bin/telastic.js run --rdzv-endpoint "localhost:$PORT" --rdzv-id "$JOB" --nnodes 1:2 --nproc-per-node 2 \
    --max-restarts 3 --checkpoint-dir "$WORK/checkpoints" --node-id "$1" --local-addr 127.0.0.1 \
    examples/train.py --steps 300 --ckpt-every 25 --step-time 0.03 --progress "$WORK/progress.log"
}
run node-a >"$WORK/node-a.log" 2>&1 & A=$!
run node-b >"$WORK/node-b.log" 2>&1 & B=$!
AGENTS=("$A" "$B")

step() { tail -n 1 "$WORK/progress.log" 2>/dev/null | cut -d' ' -f1; }
until [ "$(step)" -ge 100 ] 2>/dev/null; do sleep 0.5; done
echo; telastic status "$JOB" --address "localhost:$PORT"
echo; echo ">>> step $(step): kill -9 node-b's agent (its workers die with it)"
{ kill -9 $B; wait $B; } 2>/dev/null || true
AGENTS=("$A") # B is reaped: its pid may belong to another process by the time the trap runs
for _ in $(seq 1 240); do grep -q 'world_size 2' "$WORK/node-a.log" && break; sleep 0.5; done
sleep 2; echo; telastic status "$JOB" --address "localhost:$PORT"
wait $A && echo && echo ">>> node-a: $(tail -n 1 "$WORK/node-a.log")"
AGENTS=()
grep -E 'resumed|step (100|200|300) ' "$WORK/node-a.log" | sed 's/^/    /'

# The ledger (embedded, beside the dev server's database) has the job's story, rounds and failures.
LEDGER="$(dirname "$DB")/ledger"
for _ in $(seq 1 20); do
  TELASTIC_LEDGER_DIR=$LEDGER telastic history "$JOB" 2>/dev/null | grep -q '^job .* · succeeded' && break; sleep 0.5
done
echo; echo ">>> the ledger: TELASTIC_LEDGER_DIR=$LEDGER npx telastic history $JOB"
TELASTIC_LEDGER_DIR=$LEDGER telastic history "$JOB" | sed 's/^/    /' || true
TELASTIC_LEDGER_DIR=$LEDGER telastic report "$JOB" --html "$WORK/report.html" | sed 's/^/    /' || true

URL="http://localhost:$UI_PORT/namespaces/default/workflows/$JOB"
echo; echo "logs: $WORK"
echo "Web UI: $URL (until this script exits)"
# At a terminal, the job's history can be looked at before the server goes.
if [ -t 0 ] && [ -t 1 ]; then
  read -r -t 120 -p "keep the Web UI up to look at the job's history? [y/N] " keep || { keep=; echo; }
  if [[ $keep == [yY]* ]]; then
    echo "serving $URL until Ctrl-C"
    wait "$DEV" || true
  fi
fi
PORTS=""
[ "$PORT" = 7233 ] || PORTS+=" --port $PORT"
[ "$UI_PORT" = 8233 ] || PORTS+=" --ui-port $UI_PORT"
echo "to look at it again later: npx telastic dev --db $DB$PORTS, then $URL"
