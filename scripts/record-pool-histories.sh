#!/usr/bin/env bash
# Usage: bash scripts/record-pool-histories.sh
# Records the pool replay fixtures: two agents register with pool `rec`; job pool-job (1:2 × 1,
# rank 1 crashes once) is submitted, granted both nodes, restarts once and succeeds; one agent
# is stopped (SIGTERM: it leaves the pool), the other killed (its lease lapses).
set -u
cd "$(dirname "$0")/.."
T=.venv/bin/temporal; H=test/fixtures/histories; P=${PORT:-17667}
W=$(mktemp -d)
$T server start-dev --headless --port $P --dynamic-config-value frontend.enableServerVersionCheck=false > $W/dev.log 2>&1 &
SP=$!
sleep 4
C="--address localhost:$P"
node bin/telastic.js controller $C > $W/c.log 2>&1 &
CP=$!
AG="--pool rec --local-addr 127.0.0.1 --nproc 1 --allow test/fixtures --heartbeat-timeout 3 --shutdown-timeout 3 $C"
TELASTIC_STATE_DIR=$W/a node bin/telastic.js agent --node-id node-a $AG > $W/a.log 2>&1 &
A1=$!
TELASTIC_STATE_DIR=$W/b node bin/telastic.js agent --node-id node-b $AG > $W/b.log 2>&1 &
A2=$!
sleep 4
node bin/telastic.js submit --wait --pool rec --nnodes 1:2 --max-restarts 2 --rdzv-id pool-job \
  --rdzv-conf heartbeat_timeout=3,last_call_timeout=1,prepare_timeout=3 --shutdown-timeout 3 $C \
  test/fixtures/worker.py --out $W/out --seconds 4 --crash-rank 1
kill -TERM $A1; wait $A1
kill -KILL $A2
sleep 8
$T workflow show -w pool-job $C -o json > $H/pool-job.json
$T workflow show -w pool/rec $C -o json > $H/pool.json
node bin/telastic.js pool rec $C
kill $CP $SP; rm -rf "$W"
