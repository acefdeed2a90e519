# Shared by the bench/ scripts (sourced, not run): start a private sbxd on a free
# 127.0.0.1 port with a temporary data dir, read its token, create sandboxes, build the C
# client, clean up on exit. Only processes started here are ever signalled, by pid.
# The caller sets `me` (its name) before sourcing.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin_dir=${1:-${BIN_DIR:-$repo/build/bin}}
[[ -x $bin_dir/sbxd ]] || { echo "$me: no $bin_dir/sbxd; build first (make build)" >&2; exit 1; }
bin_dir=$(cd "$bin_dir" && pwd)

need() { # need TOOL [APT_PACKAGE]: install from the distribution's apt when missing
	command -v "$1" >/dev/null && return 0
	if [[ -n ${2:-} ]] && command -v apt-get >/dev/null && [[ $(id -u) -eq 0 ]]; then
		apt-get install -y -q "$2" >/dev/null 2>&1 || true
	fi
	command -v "$1" >/dev/null || { echo "$me: $1 not installed (apt-get install ${2:-$1})" >&2; exit 1; }
}
need curl curl
need python3 python3

root=$(mktemp -d /tmp/sbx-bench.XXXXXX)
chmod 0711 "$root" # the jail uid must traverse to its workdir
data=$root/data
mkdir -m 0711 "$data"
log=$root/sbxd.log
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pid=""
stop_daemon() {
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
	wait "$pid" 2>/dev/null || true
	pid=""
}
fail() {
	echo "$me: $*" >&2
	echo "----- sbxd log -----" >&2; cat "$log" >&2 || true
	exit 1
}
trap 'stop_daemon; [[ -n ${KEEP:-} ]] || rm -rf "$root"' EXIT

json() { python3 -c 'import json,sys; v=json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[int(k)] if isinstance(v, list) else v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)' "$1"; }

start_sbxd() {
	# SBXD_ARGS: more sbxd options, e.g. SBXD_ARGS=--no-warm for cold runs only
	# shellcheck disable=SC2086
	"$bin_dir/sbxd" --foreground --listen "127.0.0.1:$port" --data-dir "$data" ${SBXD_ARGS:-} </dev/null >"$log" 2>&1 &
	pid=$!
	base=http://127.0.0.1:$port/api/sandbox
	token=""
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || fail "sbxd exited during start-up"
		[[ -z $token && -s $data/api.token ]] && token=$(tr -d ' \r\n' <"$data/api.token")
		if [[ -n $token ]] && [[ $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "$base/health") == 200 ]]; then
			break
		fi
		sleep 0.1
	done
	[[ -n $token ]] || fail "no api.token after 10 s"
	auth="Authorization: Bearer $token"
}

body='{"language":"sh","code":"true"}'

create_sandbox() { # create_sandbox NAME: strict, no network; prints the id
	local created
	created=$(curl -sf -H "$auth" -H 'Content-Type: application/json' \
		-d "{\"name\":\"$1\",\"fsMode\":\"strict\",\"network\":false}" "$base/sandboxes") || fail "create failed"
	json id <<<"$created"
}

check_run() { # check_run ID: one run of `true` must succeed, really in bwrap
	local first
	first=$(curl -sf -H "$auth" -H 'Content-Type: application/json' -d "$body" "$base/sandboxes/$1/runs") || fail "run failed"
	[[ $(json exitCode <<<"$first") == 0 && $(json isolation <<<"$first") == bwrap ]] ||
		fail "the run did not succeed in bwrap: $first"
}

build_client() { # the one-POST C client, compiled into the temp dir (never into the product)
	need cc gcc
	client=$root/client
	cc -O2 -Wall -Wextra -o "$client" "$repo/bench/client.c" || fail "cannot compile bench/client.c"
}

sbx_pids() { # the pids of sbxd (ours) and its two children
	echo "sbxd $pid"
	local c
	for c in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
		echo "$(tr -d '\n' </proc/"$c"/comm) $c"
	done
}

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo "?"; }

raw_bwrap_cmd() { # raw_bwrap_cmd ID WORKDIR: sets raw_cmd (shell text), jail_uid, source_of_argv
	local id=$1 workdir=$2 profile a
	jail_uid=$(stat -c %u "$workdir")
	jail_gid=$(stat -c %g "$workdir")

	# The launcher's argv from the profile route; fd-passing options (--seccomp FD, --info-fd
	# FD, ...) name descriptors of the launcher's process and are dropped (README: caveats).
	profile=$(curl -sf -H "$auth" "$base/sandboxes/$id/profile" || true)
	argv=()
	source_of_argv="GET /sandboxes/{id}/profile"
	if [[ -n $profile ]] && [[ $(json kind <<<"$profile") == bwrap ]]; then
		mapfile -t argv < <(python3 -c '
import json, sys
a = json.load(sys.stdin).get("argv") or []
fdopts = {"--seccomp", "--info-fd", "--json-status-fd", "--sync-fd", "--block-fd",
          "--userns-block-fd", "--add-seccomp-fd", "--args", "--userns", "--userns2", "--pidns"}
out, i = [], 0
# sbx-jail-init (the Landlock wall and ready wait) is the engine's, not bwrap's: raw bwrap
# runs sh directly
prog = a.index("--") + 1 if "--" in a else len(a)
if prog < len(a) and a[prog].endswith("/sbx-jail-init") and "--" in a[prog:]:
    a = a[:prog] + a[a.index("--", prog) + 1:]
    ji = [k for k in range(len(a) - 2) if a[k] == "--ro-bind" and a[k + 1].endswith("/sbx-jail-init")]
    for k in reversed(ji): del a[k:k + 3]
while i < len(a):
    if a[i] in fdopts: i += 2; continue
    if a[i] in ("--file", "--bind-data", "--ro-bind-data"): i += 3; continue
    out.append(a[i]); i += 1
print("\n".join(out))' <<<"$profile")
	fi
	if [[ ${#argv[@]} -eq 0 ]]; then
		# DESIGN.md §5, strict, no network
		source_of_argv="reconstructed from DESIGN.md §5 (no profile route)"
		argv=(bwrap --die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-uts
			--unshare-net --unshare-user --cap-drop ALL)
		for p in /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc/ld.so.cache /etc/ld.so.conf \
			/etc/ld.so.conf.d /etc/alternatives /etc/ssl /etc/passwd /etc/group /nix/store; do
			argv+=(--ro-bind-try "$p" "$p")
		done
		argv+=(--dev /dev --proc /proc --tmpfs /tmp --tmpfs "${HOME:-/root}" --bind "$workdir" "$workdir"
			--chdir "$workdir" --setenv HOME "$workdir" -- /bin/sh -s)
	fi
	[[ ${argv[0]} == */bwrap || ${argv[0]} == bwrap ]] || argv=(bwrap "${argv[@]}")

	printf 'true\n' >"$root/true.sh"
	chmod 0644 "$root/true.sh"
	raw_cmd="setpriv --reuid=$jail_uid --regid=$jail_gid --clear-groups --no-new-privs"
	if [[ $jail_uid -eq 0 ]]; then raw_cmd="setpriv --no-new-privs"; fi
	raw_cmd+=" env -i PATH=/usr/bin:/bin HOME=$(printf '%q' "$workdir")"
	for a in "${argv[@]}"; do raw_cmd+=" $(printf '%q' "$a")"; done
	raw_cmd+=" <$(printf '%q' "$root/true.sh")"
	eval "$raw_cmd" >/dev/null || fail "raw bwrap does not run: $raw_cmd"
}
