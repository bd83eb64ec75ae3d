#!/usr/bin/env bash
# Usage: bash scripts/record-preempt-histories.sh
# Records the checkpoint-first drain replay fixture: two agents run examples/train.py (1:2 × 1,
# a checkpoint every 200 steps); at about step 60 node-b is drained with --checkpoint-first, every
# worker checkpoints, the job goes on alone from that checkpoint and succeeds.
set -u
cd "$(dirname "$0")/.."
T=.venv/bin/temporal; H=test/fixtures/histories
P=${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
W=$(mktemp -d)
$T server start-dev --headless --port $P --ui-port $((P + 1000)) --dynamic-config-value frontend.enableServerVersionCheck=false > $W/dev.log 2>&1 &
SP=$!
sleep 4
export PYTHON_EXEC=$PWD/.venv/bin/python
A="--rdzv-endpoint localhost:$P --local-addr 127.0.0.1 --nnodes 1:2 --rdzv-id preempt-job --checkpoint-dir $W/ckpt --rdzv-conf heartbeat_timeout=3,last_call_timeout=1,prepare_timeout=3 --shutdown-timeout 3 examples/train.py --steps 160 --ckpt-every 200 --step-time 0.03 --progress $W/progress"
TELASTIC_STATE_DIR=$W/a node bin/telastic.js run --node-id node-a $A > $W/a.log 2>&1 &
A1=$!
TELASTIC_STATE_DIR=$W/b node bin/telastic.js run --node-id node-b $A > $W/b.log 2>&1 &
A2=$!
for _ in $(seq 240); do
  [ "$(tail -1 $W/progress 2>/dev/null | cut -d' ' -f1)" -ge 60 ] 2>/dev/null && break
  sleep 0.5
done
node bin/telastic.js drain preempt-job node-b --checkpoint-first --grace 20s --address localhost:$P
wait $A1 $A2
echo "exit codes: node-a and node-b as above; status:"
node bin/telastic.js status preempt-job --address localhost:$P
$T workflow show -w preempt-job --address localhost:$P -o json > $H/preempt-job.json
kill $SP; rm -rf "$W"
