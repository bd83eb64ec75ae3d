#!/bin/sh
# The namespace telastic runs in ($NAMESPACE, $RETENTION), once the frontend serves; kept when it
# exists. Waits at most 3 minutes, saying so every 10 s, then fails with the server's last answer.
set -eu
i=0
until out=$(temporal operator cluster health 2>&1); do
  i=$((i + 1))
  if [ "$i" -ge 90 ]; then echo "temporal-namespace: $TEMPORAL_ADDRESS did not answer in 3 minutes: $out" >&2; exit 1; fi
  [ $((i % 5)) -eq 0 ] && echo "temporal-namespace: waiting for $TEMPORAL_ADDRESS: $out"
  sleep 2
done
if temporal operator namespace describe --namespace "$NAMESPACE" >/dev/null 2>&1; then
  echo "temporal-namespace: namespace $NAMESPACE exists"
else
  temporal operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION"
  echo "temporal-namespace: created namespace $NAMESPACE (retention $RETENTION)"
fi
