#!/usr/bin/env bash
# Usage: bash scripts/record-peer-watch-history.sh
# Records test/fixtures/histories/peer-watch-job.json: node-a and node-b (1:2 × 2, worker.py), node-b's
# agent is killed with SIGKILL once all four workers run; node-a's peer watch reports it, the
# job re-forms on node-a alone (one restart) and succeeds.
set -u
cd "$(dirname "$0")/.."
T=.venv/bin/temporal; H=test/fixtures/histories; P=${PORT:-17667}
W=$(mktemp -d)
$T server start-dev --headless --port $P --dynamic-config-value frontend.enableServerVersionCheck=false > $W/dev.log 2>&1 &
SP=$!
trap 'kill $AP $BP 2>/dev/null; kill $SP; wait $SP 2>/dev/null; rm -rf "$W"' EXIT
sleep 4
A="--rdzv-endpoint localhost:$P --local-addr 127.0.0.1 --nnodes 1:2 --nproc-per-node 2 --max-restarts 2 --rdzv-id peer-watch-job --rdzv-conf heartbeat_timeout=20,last_call_timeout=3,prepare_timeout=10 --shutdown-timeout 3 test/fixtures/worker.py --out $W/out"
TELASTIC_STATE_DIR=$W/a node bin/telastic.js run --node-id node-a $A > $W/a.log 2>&1 &
AP=$!
TELASTIC_STATE_DIR=$W/b node bin/telastic.js run --node-id node-b $A > $W/b.log 2>&1 &
BP=$!
for _ in $(seq 600); do [ "$(ls $W/out 2>/dev/null | grep -c '^pid\.')" -ge 4 ] && break; sleep 0.1; done
sleep 1
kill -9 $BP
R=$(ls $W/out | grep '^pid\.' | cut -d. -f2 | sort -n | tail -1)
for _ in $(seq 300); do ls $W/out | grep -qE "^pid\.($((R + 1))|$((R + 2)))\.node-a\." && break; sleep 0.1; done
sleep 1
touch $W/out/finish
wait $AP; echo "node-a exited $?"
$T workflow show -w peer-watch-job --address localhost:$P -o json > $H/peer-watch-job.json
grep -o "peer watch: [^\"]*" $H/peer-watch-job.json | sort -u
