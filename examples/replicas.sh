#!/usr/bin/env bash
# Three `mcp-frame serve` replicas of the example server behind nginx (round robin, no session affinity), sharing
# one throwaway Redis, each forwarding to the others over HTTP (--advertise-url): the setup of docs/deploy.md on
# one machine. Needs redis-server and nginx (Debian: apt-get install redis-server nginx) and a built checkout
# (npm run build). The tests run it as it is.
#
#   examples/replicas.sh [front port]      (default 8080)
#
# Prints "ready: <url>" once nginx and every replica answer, then waits; Ctrl-C (or SIGTERM) stops every part and
# removes the working folder. Any part that stops on its own stops the rest.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
front=${1:-8080}
cli=(node "$root/dist/lib/cli/main.js")
work=$(mktemp -d "${TMPDIR:-/tmp}/mcp-frame-replicas-XXXXXX")
pids=()

stop() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })"
}

# Waits until `url` answers 200 (at most 20 s), or says which part did not.
answers() {
  node -e "
    const [url, what] = process.argv.slice(1);
    const end = Date.now() + 20000;
    const again = () => fetch(url).then((r) => (r.ok ? process.exit(0) : retry()), retry);
    const retry = () => (Date.now() > end ? (console.error(what + ' did not answer at ' + url), process.exit(1)) : setTimeout(again, 100));
    again();" "$1" "$2"
}

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)

upstreams=''
ports=()
for i in 1 2 3; do
  port=$(free_port)
  ports+=("$port")
  # The store's URL from the environment: with a password in it (redis://:secret@host:6379), it stays off argv.
  MCP_FRAME_STORE="redis://127.0.0.1:$redis_port" "${cli[@]}" serve --port "$port" --store-env MCP_FRAME_STORE \
    --advertise-url "http://127.0.0.1:$port" \
    --allow-host "127.0.0.1:$front" -- node "$root/dist/examples/server.js" 2>"$work/replica-$i.log" &
  pids+=($!)
  upstreams+="    server 127.0.0.1:$port max_fails=1 fail_timeout=5s;"$'\n'
done
# serve listens at once and says 503 on /healthz until Redis answers: every replica ready means Redis is too.
for i in 1 2 3; do
  answers "http://127.0.0.1:${ports[$((i - 1))]}/healthz" "replica $i (log: $work/replica-$i.log)"
done

cat >"$work/nginx.conf" <<EOF
# Round robin (no ip_hash, no sticky cookie), event streams unbuffered.
daemon off;
pid $work/nginx.pid;
events {}
http {
  access_log off;
  client_body_temp_path $work/body;
  proxy_temp_path $work/proxy;
  upstream mcp_replicas {
$upstreams    keepalive 16;
  }
  server {
    listen 127.0.0.1:$front;
    location / {
      proxy_pass http://mcp_replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host;   # serve admits this Host through --allow-host
      proxy_buffering off;                # every event as it comes
      proxy_read_timeout 1h;              # event streams stay open
    }
  }
}
EOF
nginx -p "$work" -c "$work/nginx.conf" -e stderr 2>"$work/nginx.log" &
pids+=($!)
answers "http://127.0.0.1:$front/healthz" "nginx (log: $work/nginx.log)"

echo "ready: http://127.0.0.1:$front/mcp"
# Until a signal, or until a part stops on its own (then the rest stop too, and this exits 1).
wait -n "${pids[@]}"
echo "a part stopped on its own; stopping the rest (logs were in $work)" >&2
exit 1
