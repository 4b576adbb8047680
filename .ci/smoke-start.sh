#!/usr/bin/env bash
# Boots `npm start` with no DATABASE_URL (embedded PostgreSQL), waits for /readyz, then calls
# GET /v1/health with the printed demo key. Stops the service whatever happens.
set -euo pipefail
port=${SMOKE_PORT:-3917}
data_dir=$(mktemp -d /tmp/lop-ci-data.XXXXXX)
chmod 755 "$data_dir"
log=$(mktemp)
# Its own process group, so SIGTERM reaches the service behind npm, as Ctrl-C would.
PORT=$port PARTNER_DATA_DIR=$data_dir PARTNER_EMBEDDED_PG_PORT=$((port + 1)) setsid npm start >"$log" 2>&1 &
pid=$!
cleanup() {
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.5; done
  rm -rf "$data_dir" "$log"
}
trap cleanup EXIT

for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then echo "npm start exited early:"; cat "$log"; exit 1; fi
  sleep 1
done
curl -fsS "http://127.0.0.1:$port/readyz"; echo
key=$(grep -oE 'lop_test_[0-9A-Za-z]{32,64}' "$log" | head -1)
[ -n "$key" ] || { echo "no demo key printed:"; cat "$log"; exit 1; }
curl -fsS -H "Authorization: Bearer $key" "http://127.0.0.1:$port/api/public/partner/v1/health"; echo
echo "service boots on the embedded default and answers an authenticated call"
