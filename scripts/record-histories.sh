#!/usr/bin/env bash
# Usage: bash scripts/record-histories.sh WORKFLOW_ID=FIXTURE_NAME …  (e.g. recorded-job/lobby-0=lobby)
# Records the replay fixtures: node-a (1:2 × 2, rank 1 crashes once), node-b joins; job succeeds.
# GROUP_SIZE=1 runs the rounds in group child workflows (2 nodes, 2 groups); the default, in the job.
set -u
cd "$(dirname "$0")/.."
T=.venv/bin/temporal; H=test/fixtures/histories; P=${PORT:-17666}
W=$(mktemp -d)
$T server start-dev --headless --port $P --dynamic-config-value frontend.enableServerVersionCheck=false > $W/dev.log 2>&1 &
SP=$!
sleep 4
A="--rdzv-endpoint localhost:$P --local-addr 127.0.0.1 --nnodes 1:2 --nproc-per-node 2 --max-restarts 2 --rdzv-id recorded-job --rdzv-conf heartbeat_timeout=3,last_call_timeout=1,prepare_timeout=3,group_size=${GROUP_SIZE:-64} --shutdown-timeout 3 test/fixtures/worker.py --out $W/out --seconds 4 --crash-rank 1"
TELASTIC_STATE_DIR=$W/a node bin/telastic.js run --node-id node-a $A > $W/a.log 2>&1 &
sleep 3
TELASTIC_STATE_DIR=$W/b node bin/telastic.js run --node-id node-b $A > $W/b.log 2>&1
sleep 1
timeout 10 node bin/telastic.js controller --address localhost:$P >/dev/null 2>&1 &
sleep 8
for f in "${@}"; do
  id=${f%%=*}; name=${f#*=}
  $T workflow show -w $id --address localhost:$P -o json > $H/$name.json
done
$T workflow list --address localhost:$P -o json | python3 -c "import json,sys; [print(w['execution']['workflowId'], w['status']) for w in json.load(sys.stdin)]"
kill $SP; rm -rf "$W"
