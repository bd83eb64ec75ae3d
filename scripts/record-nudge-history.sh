#!/usr/bin/env bash
# Usage: bash scripts/record-nudge-history.sh
# Records test/fixtures/histories/nudge-job.json: node-a and node-b (1:2 × 2, worker.py); node-b's
# agent is frozen (SIGSTOP) past the heartbeat timeout, so the job drops it as lost and nudges it
# (the `nudge-fate` patch, workflows/nudge.ts); thawed (SIGCONT), node-b takes the nudge, asks,
# joins again, and the job runs a round of both again and succeeds.
set -u
cd "$(dirname "$0")/.."
T=.venv/bin/temporal; H=test/fixtures/histories; P=${PORT:-17668}
W=$(mktemp -d)
$T server start-dev --headless --port $P --dynamic-config-value frontend.enableServerVersionCheck=false > $W/dev.log 2>&1 &
SP=$!
trap 'kill -CONT $BP 2>/dev/null; kill $AP $BP 2>/dev/null; kill $SP; wait $SP 2>/dev/null; rm -rf "$W"' EXIT
sleep 4
A="--rdzv-endpoint localhost:$P --local-addr 127.0.0.1 --nnodes 1:2 --nproc-per-node 2 --max-restarts 2 --rdzv-id nudge-job --rdzv-conf heartbeat_timeout=3,last_call_timeout=3,prepare_timeout=10 --shutdown-timeout 3 test/fixtures/worker.py --out $W/out"
TELASTIC_STATE_DIR=$W/a node bin/telastic.js run --node-id node-a $A > $W/a.log 2>&1 &
AP=$!
TELASTIC_STATE_DIR=$W/b node bin/telastic.js run --node-id node-b $A > $W/b.log 2>&1 &
BP=$!
for _ in $(seq 600); do [ "$(ls $W/out 2>/dev/null | grep -c '^pid\.')" -ge 4 ] && break; sleep 0.1; done
sleep 1
R=$(ls $W/out | grep '^pid\.' | cut -d. -f2 | sort -n | tail -1)
kill -STOP $BP
sleep 6
kill -CONT $BP
# node-b back: a later round with workers on both nodes.
for _ in $(seq 300); do N=$(ls $W/out | grep '^pid\.' | cut -d. -f2 | sort -n | tail -1); [ "$N" -gt "$R" ] && ls $W/out | grep -q "^pid\.$N\.node-b\." && break; sleep 0.1; done
sleep 1
touch $W/out/finish
wait $AP; echo "node-a exited $?"
wait $BP; echo "node-b exited $?"
$T workflow show -w nudge-job --address localhost:$P -o json > $H/nudge-job.json
grep -c '"nudge"' $H/nudge-job.json; grep -o 'nudge-fate' $H/nudge-job.json | sort -u
grep -h "dropped\|nudge" $W/b.log | head -5
