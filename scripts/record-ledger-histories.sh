#!/usr/bin/env bash
# Usage: bash scripts/record-ledger-histories.sh
# Records the ledger replay fixture: a controller hosts the embedded ledger (quarantine after 2
# failures); two agents run job ledger-job (1:2 × 1) whose rank 1 crashes in the first two rounds,
# so its node is quarantined and the job runs on without it; the node is released with
# `telastic nodes --release`, admitted again, and the job succeeds.
set -u
cd "$(dirname "$0")/.."
T=.venv/bin/temporal; H=test/fixtures/histories; P=${PORT:-17668}
W=$(mktemp -d)
$T server start-dev --headless --port $P --dynamic-config-value frontend.enableServerVersionCheck=false > $W/dev.log 2>&1 &
SP=$!
sleep 4
C="--address localhost:$P"
export TELASTIC_LEDGER_DIR=$W/ledger TELASTIC_QUARANTINE_AFTER=2
node bin/telastic.js controller $C > $W/c.log 2>&1 &
CP=$!
sleep 3
A="--rdzv-endpoint localhost:$P --local-addr 127.0.0.1 --nnodes 1:2 --max-restarts 3 --no-coordinator --rdzv-id ledger-job --rdzv-conf heartbeat_timeout=3,last_call_timeout=1,prepare_timeout=3 --shutdown-timeout 3 test/fixtures/worker.py --out $W/out --seconds 120 --crash-rank 1 --crash-times 2"
TELASTIC_STATE_DIR=$W/a node bin/telastic.js run --node-id node-a $A > $W/a.log 2>&1 &
A1=$!
TELASTIC_STATE_DIR=$W/b node bin/telastic.js run --node-id node-b $A > $W/b.log 2>&1 &
A2=$!
status() { node bin/telastic.js status ledger-job $C --json 2>/dev/null; }
bad=""
for _ in $(seq 120); do
  bad=$(status | jq -r '.quarantined[0].nodeId // empty' 2>/dev/null)
  [ -n "$bad" ] && break
  sleep 1
done
echo "quarantined: ${bad:-none}"
node bin/telastic.js nodes --release "$bad"
for _ in $(seq 60); do
  [ "$(status | jq -r '.worldSize' 2>/dev/null)" = 2 ] && break
  sleep 1
done
touch $W/out/finish
wait $A1 $A2
sleep 3
node bin/telastic.js history ledger-job
$T workflow show -w ledger-job $C -o json > $H/ledger-job.json
kill $CP; wait $CP; kill $SP; rm -rf "$W"
