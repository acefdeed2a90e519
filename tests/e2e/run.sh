#!/usr/bin/env bash
# End-to-end tests with real clients against a real sbxd.
# Usage: tests/e2e/run.sh BIN_DIR     (BIN_DIR holds sbxd, sbx-launcher, sbx-api)
# Starts sbxd on a free loopback port with a fresh temporary data dir, runs the MCP SDK
# test, stops the daemon (that pid only) and exits non-zero on any failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin_dir=${1:-}
if [[ -z $bin_dir || ! -x $bin_dir/sbxd ]]; then
	echo "usage: $0 BIN_DIR   (no executable sbxd in '${bin_dir}')" >&2
	echo "e2e: 0 passed, 1 failed"
	exit 1
fi
bin_dir=$(cd "$bin_dir" && pwd)
command -v bwrap >/dev/null || echo "note: bwrap not installed; runs will not report isolation bwrap" >&2

cd "$here"
if [[ -f package-lock.json ]]; then
	npm ci --no-audit --no-fund --loglevel=error
else
	npm install --no-audit --no-fund --loglevel=error
fi

root=$(mktemp -d /tmp/sbx-e2e.XXXXXX)
chmod 0711 "$root" # jails run as their own uid and must traverse to their workdir
data="$root/data"
mkdir -m 0711 "$data"
log="$root/sbxd.log"
port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
pid=""
status=1

stop_daemon() {
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 50); do # 5 s grace, then SIGKILL, only this pid
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "e2e: sbxd $pid ignored SIGTERM; SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	pid=""
}
finish() {
	stop_daemon
	if [[ $status -ne 0 ]]; then
		echo "----- sbxd log ($log) -----" >&2
		cat "$log" >&2 || true
		echo "----- end of sbxd log -----" >&2
	fi
	rm -rf "$root"
}
trap finish EXIT

"$bin_dir/sbxd" --foreground --listen "127.0.0.1:$port" --data-dir "$data" </dev/null >"$log" 2>&1 &
pid=$!

token=""
ok=0
for _ in $(seq 100); do # up to 10 s for /health to answer 200
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "e2e: sbxd exited during start-up" >&2
		break
	fi
	if [[ -z $token && -s $data/api.token ]]; then
		token=$(tr -d ' \r\n' <"$data/api.token")
	fi
	if [[ -n $token ]]; then
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
			-H "Authorization: Bearer $token" "http://127.0.0.1:$port/api/sandbox/health" || true)
		if [[ $code == 200 ]]; then ok=1; break; fi
	fi
	sleep 0.1
done
if [[ $ok -ne 1 ]]; then
	echo "e2e: sbxd did not become healthy on 127.0.0.1:$port within 10 s" >&2
	echo "e2e: 0 passed, 1 failed"
	exit 1
fi

# openapi.json checked by a real OpenAPI 3.1 validator (swagger-parser, installed by npm ci
# above with the MCP SDK), so the check runs on every machine
openapi_status=0
doc="$root/openapi.json"
if curl -sf --max-time 5 -H "Authorization: Bearer $token" \
	"http://127.0.0.1:$port/api/sandbox/openapi.json" -o "$doc" &&
	node -e 'import("@apidevtools/swagger-parser").then(async (m) => {
		const doc = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		if (!String(doc.openapi).startsWith("3.1")) throw new Error("not 3.1: " + doc.openapi);
		await m.default.validate(doc);
	}).catch((e) => { console.error(e.message); process.exit(1); })' "$doc"; then
	echo "ok   - openapi.json is a valid OpenAPI 3.1 document"
else
	echo "FAIL - openapi.json is not a valid OpenAPI 3.1 document"
	openapi_status=1
fi

set +e
SBX_MCP_URL="http://127.0.0.1:$port/mcp" SBX_TOKEN="$token" SBX_BIN_DIR="$bin_dir" node mcp.test.mjs
status=$?
set -e
[[ $openapi_status -eq 0 ]] || status=1
exit "$status"
