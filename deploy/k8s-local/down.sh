#!/usr/bin/env bash
# Stops what up.sh started in K8S_WORK, by the process ids it saved (each process leads its own
# session, so its children go with it), then waits for the ports to close.
W=${K8S_WORK:?set K8S_WORK to the work folder given to up.sh}
for name in fake-node scheduler controller-manager apiserver etcd; do
  f="$W/run/$name.pid"
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$f"
done
