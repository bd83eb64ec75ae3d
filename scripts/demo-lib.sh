# Sourced by scripts/demo.sh (and by test/scripts/demo-cleanup.test.ts, which runs this cleanup
# path for real): start `telastic dev` in the background, and on any exit of the script (its
# end, a failure, Ctrl-C, SIGTERM) stop everything it started. Run from the project root.

AGENTS=() # pids stopped first: an agent leaves its job through the server
DEV=

# start_dev LOG DEV-ARGS…: `telastic dev` in the background, its output in LOG; returns once it
# has printed its address, or fails showing LOG. The node process itself goes in the background,
# not a shell function that calls it: $DEV must be the process that owns the Temporal server
# (killing a function's subshell left node and its server running, with the port taken).
start_dev() {
  local log=$1 _
  shift
  # Made here, not only by the background command's redirect, which may not have run yet when
  # the first grep looks (grep then printed "No such file or directory" before anything else).
  : >"$log"
  node bin/telastic.js dev "$@" >"$log" 2>&1 &
  DEV=$!
  for _ in $(seq 1 120); do
    grep -q '^Temporal server' "$log" && return 0
    kill -0 "$DEV" 2>/dev/null || break
    sleep 0.5
  done
  cat "$log" >&2
  return 1
}

# stop PID…: SIGTERM, up to 20 s for them to go, then SIGKILL; reaps them.
stop() {
  local _
  [ $# -gt 0 ] || return 0
  kill "$@" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$@" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$@" 2>/dev/null || true
  wait "$@" 2>/dev/null || true
}

# The EXIT trap: the agents, then the server (a second signal to it, after a Ctrl-C that reached
# it too, only stops it waiting for its controller).
cleanup() {
  stop ${AGENTS[@]+"${AGENTS[@]}"}
  stop $DEV
}
trap cleanup EXIT
