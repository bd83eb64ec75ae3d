#!/bin/sh
# As the server module's docker/scripts/sh/entrypoint.sh: bind to the container's address unless
# told; when bound to every address, broadcast the container's own to the other services.
set -eu
: "${BIND_ON_IP:=$(getent hosts "$(hostname)" | awk '{print $1; exit}')}"
export BIND_ON_IP
if [ "$BIND_ON_IP" = 0.0.0.0 ] || [ "$BIND_ON_IP" = ::0 ]; then
  : "${TEMPORAL_BROADCAST_ADDRESS:=$(getent hosts "$(hostname)" | awk '{print $1; exit}')}"
  export TEMPORAL_BROADCAST_ADDRESS
fi
exec temporal-server start
