#!/usr/bin/env bash
# The pool demo: `telastic dev` (server, Web UI, controller) and three `telastic agent`s of pool
# "demo" (1 slot each, allowed to run examples/). Job A is submitted with the CLI and job B with
# the plain Temporal SDK (scripts/submit-sdk.ts), both elastic on 1:2 nodes: A gets two nodes, B
# the third. When A finishes, B grows into a freed node without spending a restart, and finishes.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${TELASTIC_DEMO_PORT:-7233}
UI_PORT=${TELASTIC_DEMO_UI_PORT:-8233}
ADDR="localhost:$PORT"
RUN=pool-$(date +%H%M%S)
WORK="$PWD/.telastic/demo/$RUN"
JOB_A=demo-a-${RUN#pool-}
JOB_B=demo-b-${RUN#pool-}
mkdir -p "$WORK"
telastic() { node bin/telastic.js "$@"; }
started=$SECONDS

# Agents first (SIGTERM: each leaves the pool, which needs the server), then the server.
stop() {
  local pids=("$@") _
  [ ${#pids[@]} -gt 0 ] || return 0
  kill "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "${pids[@]}" 2>/dev/null || break; sleep 0.5; done
  kill -9 "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
}
AGENTS=()
DEV=
trap 'stop ${AGENTS[@]+"${AGENTS[@]}"}; stop $DEV' EXIT

# A fresh database per run: the pool and its jobs are this run's only.
node bin/telastic.js dev --port "$PORT" --ui-port "$UI_PORT" --db "$WORK/temporal.db" >"$WORK/dev.log" 2>&1 &
DEV=$!
for _ in $(seq 1 120); do grep -q '^Temporal server' "$WORK/dev.log" && break; sleep 0.5; done
grep -q '^Temporal server' "$WORK/dev.log" || { cat "$WORK/dev.log"; exit 1; }
grep -E '^(Temporal server|Web UI)' "$WORK/dev.log"

# Each agent runs submitted scripts only under examples/, and keeps checkpoints only under this
# run's directory (it lists and prunes them there), with its own interpreter.
for n in 1 2 3; do
  PYTHON_EXEC="$PWD/.venv/bin/python" TELASTIC_STATE_DIR="$WORK/state/demo-n$n" \
    node bin/telastic.js agent --pool demo --node-id "demo-n$n" --local-addr 127.0.0.1 --nproc 1 \
      --allow "$PWD/examples" "$WORK" --shutdown-timeout 5 --address "$ADDR" >"$WORK/agent-n$n.log" 2>&1 &
  AGENTS+=($!)
done
pool() { telastic pool demo --address "$ADDR" 2>/dev/null; }
# "running 2": a job's state and world size, from the first line of telastic status.
brief() { telastic status "$1" --address "$ADDR" 2>/dev/null | sed -n '1s/^job [^ ]*: \([a-z]*\) · round [0-9]* · world size \([0-9]*\).*/\1 \2/p'; }
# await WHAT CMD…: poll CMD until it succeeds, for at most 2 minutes.
await() {
  local what=$1 end=$((SECONDS + 120)); shift
  until "$@"; do [ $SECONDS -lt $end ] || { echo "timed out waiting for $what (logs: $WORK)" >&2; exit 1; }; sleep 0.5; done
}
is() { [[ "$(brief "$1")" == $2 ]]; }
ended() { [[ "$(brief "$1")" =~ ^(succeeded|failed|cancelled) ]]; }
await '3 free nodes' eval 'pool | grep -q "3 free"'
echo; pool

echo; echo ">>> job A with the CLI: telastic submit --pool demo --nnodes 1:2 … examples/train.py (200 steps × 0.1 s)"
telastic submit --pool demo --address "$ADDR" --nnodes 1:2 --nproc-per-node 1 --max-restarts 3 --rdzv-id "$JOB_A" \
  --checkpoint-dir "$WORK/ckpt-a" examples/train.py --steps 200 --ckpt-every 25 --step-time 0.1 --progress "$WORK/a.progress"
echo ">>> job B with the plain SDK: client.workflow.start('elasticJob', …) on 1:2 nodes (400 steps × 0.1 s)"
node lib/scripts/submit-sdk.js "$ADDR" demo "$JOB_B" "$WORK/ckpt-b" examples/train.py \
  --steps 400 --ckpt-every 25 --step-time 0.1 --progress "$WORK/b.progress"

await 'A on 2 nodes, B on 1' eval 'is "$JOB_A" "running 2" && is "$JOB_B" "running 1"'
echo; pool
echo; telastic status "$JOB_A" --address "$ADDR"
echo; telastic status "$JOB_B" --address "$ADDR"

await 'A to end' ended "$JOB_A"
echo; telastic status "$JOB_A" --address "$ADDR" | head -n 1
echo; echo ">>> A's nodes go back to the pool and B grows into one (restarts stay 0)"
await 'B on 2 nodes' is "$JOB_B" "running 2"
echo; pool
echo; telastic status "$JOB_B" --address "$ADDR"

await 'B to end' ended "$JOB_B"
echo; telastic status "$JOB_B" --address "$ADDR" | head -n 1
echo "    B's progress (step world_size), first and last step at each size:"
awk '$2 != w { if (last) print "    " last; print "    " $1, $2; w = $2 } { last = $1 " " $2 } END { print "    " last }' "$WORK/b.progress" | uniq
UI="http://localhost:$UI_PORT/namespaces/default/workflows"
echo
echo "Web UI (until this script exits):"
echo "  job A: $UI/$JOB_A"
echo "  job B: $UI/$JOB_B"
echo "  pool:  $UI/pool%2Fdemo"
echo "logs: $WORK   took $((SECONDS - started)) s"
is "$JOB_B" "succeeded *"
# At a terminal, keep everything up for the Web UI until Enter (or Ctrl-C).
if [ -t 0 ]; then read -r -p "press Enter to stop the agents and the server " _ || true; fi
