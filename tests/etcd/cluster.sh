#!/usr/bin/env bash
# cluster.sh - start/stop a throw-away N-member etcd cluster on loopback, for tests.
# (tests/etcd/with-cluster runs a command with a cluster of its own; see tests/etcd/README.md.)
#
#   cluster.sh start [N]        start N members (default 3), wait until every member is healthy
#   cluster.sh stop             stop every process this script started, remove data (idempotent)
#   cluster.sh status           one line per member: name pid alive health leader raft_term revision
#   cluster.sh kill-leader      SIGKILL the current leader; prints its name
#   cluster.sh kill NAME        SIGKILL member NAME (m1, m2, ...)
#   cluster.sh restart NAME     restart a killed member on its old data dir, wait for health
#   cluster.sh pause NAME       SIGSTOP a member (accepts TCP, never answers: a "hung" member)
#   cluster.sh resume NAME      SIGCONT it
#   cluster.sh leader           print the leader's name (leader-pid: its pid; pid NAME)
#   cluster.sh endpoints        print the client endpoints, comma-separated
#   cluster.sh wait-healthy [S] wait up to S seconds (default 20) until every live member is healthy
#   cluster.sh partition NAME   cut NAME off from its peers with nftables (its client port stays
#                               reachable); NAME must run under its own uid (ETCD_RUN_AS)
#   cluster.sh heal             remove the partition
#   cluster.sh env              ETCD_ENDPOINTS=... and ETCD_TLS_DIR=... (empty without TLS)
#   cluster.sh etcdctl ARGS...  run etcdctl (API 3) against the cluster (TLS files included)
#
# Environment (all optional):
#   ETCD_CLUSTER_DIR   state dir (pids, logs, endpoint list)   default ${TMPDIR:-/tmp}/etcd-cluster
#   ETCD_DATA          tmpfs | disk  where the member data dirs live  default tmpfs (/dev/shm)
#   ETCD_ADDR_MODE     ports (127.0.0.1, distinct ports) | ips (127.0.0.1<i>, ports 2379/2380)
#   ETCD_BASE_PORT     ports mode: client port = BASE+i, peer port = BASE+100+i  default 23700
#   ETCD_HEARTBEAT_MS / ETCD_ELECTION_MS   raft timing                  default 100 / 1000
#   ETCD_START_TIMEOUT seconds to wait for health at start              default 30
#   ETCD_CLUSTER_TTL   watchdog: stop the cluster after this many seconds even if nobody
#                      calls stop (protects CI from orphans); 0 disables  default 5400
#   ETCD_EXTRA_ARGS    extra flags for every member
#   ETCD_BIN           etcd binary                                       default etcd
#   ETCD_GOMAXPROCS    each member's GOMAXPROCS (the Go scheduler's CPUs). Default: the
#                      machine's CPUs divided among the members, at least 1, as if each
#                      member had its own share of the machine (3 members that each schedule
#                      over both cores of a 2-core machine contend: a post takes about a
#                      third longer)
#   ETCD_GRACEFUL_STOP=1  stop with SIGTERM (5 s grace) instead of SIGKILL
#   ETCD_KEEP_LOGS=DIR    stop copies the member logs there first (CI artifacts)
#   ETCD_RUN_AS        e.g. "m3=nobody": run that member under another uid (setpriv, no fork),
#                      so that 'partition m3' can match its outgoing peer traffic (root only)
#   ETCD_TLS=1         client URLs are https: a throw-away CA, a server certificate for
#                      127.0.0.1 and a client certificate (openssl) in $ETCD_CLUSTER_DIR/tls/
#                      (ca.crt, client.crt, client.key); members require client certificates.
#                      Peer traffic stays plain http.
#
# Only loopback addresses are used.  Every started process (members + watchdog) has a pid
# file under the state dir; stop checks /proc/<pid>/cmdline before signalling, so a reused
# pid is never killed.  Debian's etcd 3.4.23 needs --logger=zap whenever lease checkpointing
# is on (it panics otherwise); we always pass it.
set -euo pipefail

SELF=$(readlink -f "$0")
DIR=${ETCD_CLUSTER_DIR:-${TMPDIR:-/tmp}/etcd-cluster}
BIN=${ETCD_BIN:-etcd}
EXTRA=${ETCD_EXTRA_ARGS:-}
DATA_KIND=${ETCD_DATA:-tmpfs}
MODE=${ETCD_ADDR_MODE:-ports}
BASE=${ETCD_BASE_PORT:-23700}
HB=${ETCD_HEARTBEAT_MS:-100}
EL=${ETCD_ELECTION_MS:-1000}
START_TIMEOUT=${ETCD_START_TIMEOUT:-30}
TTL=${ETCD_CLUSTER_TTL:-5400}
GOMAXPROCS_SET=${ETCD_GOMAXPROCS:-}

die() { echo "cluster.sh: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }

# --- addressing -------------------------------------------------------------------------
TLS=${ETCD_TLS:-}
host_of() { if [ "$MODE" = ips ]; then echo "127.0.0.1$1"; else echo 127.0.0.1; fi; }
cport_of() { if [ "$MODE" = ips ]; then echo 2379; else echo $((BASE + $1)); fi; }
pport_of() { if [ "$MODE" = ips ]; then echo 2380; else echo $((BASE + 100 + $1)); fi; }
curl_of() { echo "$([ -n "$TLS" ] && echo https || echo http)://$(host_of "$1"):$(cport_of "$1")"; }
peer_of() { echo "http://$(host_of "$1"):$(pport_of "$1")"; }
# curl's TLS options for the health checks (none without TLS)
ccurl() {
  if [ -n "$TLS" ]; then
    curl --cacert "$DIR/tls/ca.crt" --cert "$DIR/tls/client.crt" --key "$DIR/tls/client.key" "$@"
  else
    curl "$@"
  fi
}

# A throw-away CA, a server certificate for 127.0.0.1/localhost and a client certificate
# (EC P-256 keys: quick to make). Valid two days: nothing outlives a test run.
make_tls() {
  local t=$DIR/tls kind
  command -v openssl >/dev/null || die "ETCD_TLS needs openssl"
  mkdir -p "$t"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=agent-chat test CA" -keyout "$t/ca.key" -out "$t/ca.crt" 2>/dev/null
  for kind in server client; do
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -subj "/CN=agent-chat test $kind" -keyout "$t/$kind.key" -out "$t/$kind.csr" 2>/dev/null
    if [ $kind = server ]; then
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n'
    else
      printf 'extendedKeyUsage=clientAuth\n'
    fi > "$t/$kind.ext"
    openssl x509 -req -in "$t/$kind.csr" -CA "$t/ca.crt" -CAkey "$t/ca.key" -CAcreateserial \
      -days 2 -extfile "$t/$kind.ext" -out "$t/$kind.crt" 2>/dev/null
  done
  [ -s "$t/server.crt" ] && [ -s "$t/client.crt" ] || die "could not make the TLS files"
  chmod 600 "$t"/*.key
}

# alive = exists and is not a zombie (a member's parent is init, which may reap late or, in
# a container without an init, never)
running() {
  local st
  st=$(sed -n 's/^[0-9]* (.*) \([A-Z]\).*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# Any thread of pid still running? A killed Go process's main thread can be a
# zombie while its other threads still hold the descriptors (a connect then
# reaches a listening socket about to close: "connection reset", not the
# "refused" of a dead member).
threads_alive() {
  local t st
  for t in /proc/"$1"/task/*/stat; do
    st=$(sed -n 's/^[0-9]* (.*) \([A-Z]\).*/\1/p' "$t" 2>/dev/null) || continue
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ] && return 0
  done
  return 1
}

port_busy() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

run_as_of() {  # member index -> user name or empty
  local e
  for e in ${RUN_AS:-}; do [ "${e%%=*}" = "m$1" ] && { echo "${e#*=}"; return; }; done
  return 0
}
NFT_TABLE=etcd_check

load_state() {
  [ -f "$DIR/state" ] || die "no cluster state in $DIR (not started?)"
  # shellcheck disable=SC1091
  . "$DIR/state"
}

idx_of() {  # NAME -> index
  local n=${1#m}
  if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt "$N" ]; then die "no member '$1'"; fi
  echo "$n"
}

# pid of member i if alive AND really our etcd (cmdline mentions its data dir), else empty
live_pid() {
  local f=$1 pid want=$2
  [ -f "$f" ] || return 0
  pid=$(cat "$f" 2>/dev/null || true)
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  running "$pid" || return 0
  if tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$want"; then echo "$pid"; fi
}
member_pid() { live_pid "$DIR/m$1/pid" "$DATAROOT/m$1/data"; }

health_of() {  # -> true|false|down
  local out
  out=$(ccurl -s --max-time 1 "$(curl_of "$1")/health" 2>/dev/null) || { echo down; return; }
  case $out in *'"health":"true"'*) echo true ;; *) echo false ;; esac
}

status_json() { ccurl -s --max-time 1 -X POST -d '{}' "$(curl_of "$1")/v3/maintenance/status" 2>/dev/null; }
# numeric field NAME from a gateway JSON reply on stdin (uint64s are quoted); never fails
jnum() { { grep -o "\"$1\":\"[0-9]*\"" || true; } | head -n1 | tr -dc '0-9'; }

leader_idx() {
  local i s mid lid
  for i in $(seq 1 "$N"); do
    [ -n "$(member_pid "$i")" ] || continue
    s=$(status_json "$i") || continue
    [ -n "$s" ] || continue
    lid=$(printf '%s' "$s" | jnum leader)
    mid=$(printf '%s' "$s" | jnum member_id)
    if [ -n "$lid" ] && [ "$lid" != 0 ] && [ "$lid" = "$mid" ]; then echo "$i"; return 0; fi
  done
  return 1
}

launch() {  # i state(new|existing)
  local i=$1 cl="" j user pre=()
  for j in $(seq 1 "$N"); do cl="${cl:+$cl,}m$j=$(peer_of "$j")"; done
  mkdir -p "$DATAROOT/m$i" "$DIR/m$i"
  user=$(run_as_of "$i")
  if [ -n "$user" ]; then
    chmod 711 "$DATAROOT"
    chown "$user" "$DATAROOT/m$i"
    pre=(setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups --)
  fi
  # sh writes its own pid, then execs etcd: the pid file is etcd's pid.  setsid: a Ctrl-C
  # or a CI step's process-group kill does not reach the members; stop does.
  # etcd reads every ETCD_* environment variable as a flag: hand it none of ours.
  # The outer ( ... & ) keeps the member out of this shell's job table (no "Killed" noise).
  local tls_args=()
  if [ -n "$TLS" ]; then
    tls_args=(--cert-file "$DIR/tls/server.crt" --key-file "$DIR/tls/server.key"
              --trusted-ca-file "$DIR/tls/ca.crt" --client-cert-auth)
  fi
  local procs=$GOMAXPROCS_SET
  if [ -z "$procs" ]; then
    procs=$(( $(nproc 2>/dev/null || echo 1) / N ))
    [ "$procs" -ge 1 ] || procs=1
  fi
  # shellcheck disable=SC2086,SC2016
  ( for v in $(compgen -e); do case $v in ETCD_*|ETCDCTL_*) unset "$v" ;; esac; done
    export GOMAXPROCS=$procs
    setsid sh -c 'echo $$ > "$0"; exec "$@"' "$DIR/m$i/pid" \
    ${pre[@]+"${pre[@]}"} "$BIN" --name "m$i" --data-dir "$DATAROOT/m$i/data" \
    --logger=zap --log-outputs=stderr \
    --listen-client-urls "$(curl_of "$i")" --advertise-client-urls "$(curl_of "$i")" \
    --listen-peer-urls "$(peer_of "$i")" --initial-advertise-peer-urls "$(peer_of "$i")" \
    --initial-cluster "$cl" --initial-cluster-state "$2" --initial-cluster-token "$TOKEN" \
    --heartbeat-interval "$HB" --election-timeout "$EL" --pre-vote=true \
    --experimental-enable-lease-checkpoint --experimental-enable-lease-checkpoint-persist \
    ${tls_args[@]+"${tls_args[@]}"} $EXTRA \
    < /dev/null >> "$DIR/m$i/log" 2>&1 & )
  local t=0
  while [ ! -s "$DIR/m$i/pid" ] && [ $t -lt 100 ]; do sleep 0.01; t=$((t + 1)); done
}

wait_healthy() {  # timeout_s [all] -> 0 when every member with a live pid is healthy
  # (and at least one is; with 'all': all N members are alive and healthy)
  local deadline=$(( $(now_ms) + $1 * 1000 )) i ok n
  while :; do
    ok=1; n=0
    for i in $(seq 1 "$N"); do
      [ -n "$(member_pid "$i")" ] || continue
      n=$((n + 1))
      [ "$(health_of "$i")" = true ] || { ok=0; break; }
    done
    if [ "${2:-}" = all ] && [ $n -lt "$N" ]; then ok=0; fi
    [ $ok = 1 ] && [ $n -gt 0 ] && return 0
    [ "$(now_ms)" -ge $deadline ] && return 1
    sleep 0.05
  done
}

stop_pid() {  # pid: KILL (data is thrown away anyway); ETCD_GRACEFUL_STOP=1: TERM, 5 s, KILL
  local pid=$1 t=0
  kill -CONT "$pid" 2>/dev/null || true     # a paused member cannot handle TERM
  if [ -n "${ETCD_GRACEFUL_STOP:-}" ]; then
    # a leader given TERM first tries to hand over leadership, which stalls while its peers
    # are stopping too; that is why this is not the default
    kill -TERM "$pid" 2>/dev/null || return 0
    while running "$pid" && [ $t -lt 50 ]; do sleep 0.1; t=$((t + 1)); done
  fi
  if running "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  t=0; while running "$pid" && [ $t -lt 50 ]; do sleep 0.1; t=$((t + 1)); done
}

# --- subcommands ------------------------------------------------------------------------
cmd_start() {
  N=${1:-3}
  [[ "$N" =~ ^[1-9]$ ]] || die "N must be 1..9"
  if [ -f "$DIR/state" ]; then
    ( load_state; for i in $(seq 1 "$N"); do [ -z "$(member_pid "$i")" ] || exit 1; done ) \
      || die "a cluster from $DIR is still running; run '$0 stop' first"
    "$SELF" stop >/dev/null 2>&1 || true
  fi
  case $DATA_KIND in
    tmpfs) if [ -d /dev/shm ] && [ -w /dev/shm ]; then DATAROOT=$(mktemp -d /dev/shm/etcd-check.XXXXXX)
           else echo "cluster.sh: /dev/shm unusable, data on disk" >&2; DATA_KIND=disk; fi ;;
    disk) ;;
    *) die "ETCD_DATA must be tmpfs or disk" ;;
  esac
  mkdir -p "$DIR"
  [ "$DATA_KIND" = disk ] && DATAROOT=$(mktemp -d "$DIR/data.XXXXXX")
  TOKEN="ac-$$-$(now_ms)"
  for i in $(seq 1 "$N"); do
    for p in "$(cport_of "$i")" "$(pport_of "$i")"; do
      if port_busy "$(host_of "$i")" "$p"; then
        rm -rf "$DATAROOT"; rmdir "$DIR" 2>/dev/null || true
        die "port $(host_of "$i"):$p busy (another cluster? set ETCD_BASE_PORT or ETCD_CLUSTER_DIR)"
      fi
    done
  done
  rm -rf "$DIR"/m* "$DIR/watchdog.pid" "$DIR/tls"
  [ -n "$TLS" ] && make_tls
  cat > "$DIR/state" <<EOF
N=$N
MODE=$MODE
BASE=$BASE
HB=$HB
EL=$EL
TOKEN=$TOKEN
DATAROOT=$DATAROOT
DATA_KIND=$DATA_KIND
RUN_AS="${ETCD_RUN_AS:-}"
TLS="$TLS"
EOF
  RUN_AS="${ETCD_RUN_AS:-}"
  local eps="" t0 t1
  for i in $(seq 1 "$N"); do eps="${eps:+$eps,}$(curl_of "$i")"; done
  echo "$eps" > "$DIR/endpoints"
  t0=$(now_ms)
  for i in $(seq 1 "$N"); do launch "$i" new; done
  if [ "$TTL" -gt 0 ]; then
    # own session + process group so stop can kill the sleep too
    # shellcheck disable=SC2016
    setsid sh -c 'echo $$ > "$0"; sleep "$1"; exec "$2" stop' "$DIR/watchdog.pid" "$TTL" "$SELF" \
      < /dev/null > /dev/null 2>&1 &
  fi
  if ! wait_healthy "$START_TIMEOUT" all; then
    echo "cluster.sh: not healthy after ${START_TIMEOUT}s; last log lines:" >&2
    for i in $(seq 1 "$N"); do echo "--- m$i" >&2; tail -n 5 "$DIR/m$i/log" >&2 || true; done
    "$SELF" stop >&2 || true
    exit 1
  fi
  t1=$(now_ms)
  echo "healthy_ms=$((t1 - t0)) members=$N data=$DATA_KIND($DATAROOT)"
  echo "ETCD_ENDPOINTS=$eps"
}

cmd_stop() {
  [ -f "$DIR/state" ] || { echo "cluster.sh: nothing to stop"; return 0; }
  load_state
  local wd i pid
  if [ -f "$DIR/watchdog.pid" ]; then
    wd=$(cat "$DIR/watchdog.pid" 2>/dev/null || true)
    if [[ "$wd" =~ ^[0-9]+$ ]] && [ "$wd" != $$ ] && [ -r "/proc/$wd/cmdline" ] \
       && tr '\0' ' ' < "/proc/$wd/cmdline" | grep -qF "$DIR/watchdog.pid"; then
      kill -TERM -- "-$wd" 2>/dev/null || kill -TERM "$wd" 2>/dev/null || true
    fi
  fi
  [ -f "$DIR/partitioned" ] && cmd_heal >/dev/null
  for i in $(seq 1 "$N"); do
    pid=$(member_pid "$i")
    [ -n "$pid" ] && stop_pid "$pid" &
  done
  wait
  for i in $(seq 1 "$N"); do
    [ -z "$(member_pid "$i")" ] || die "member m$i survived stop"
  done
  if [ -n "${ETCD_KEEP_LOGS:-}" ]; then
    mkdir -p "$ETCD_KEEP_LOGS"; for i in $(seq 1 "$N"); do cp "$DIR/m$i/log" "$ETCD_KEEP_LOGS/m$i.log" 2>/dev/null || true; done
  fi
  case $DATAROOT in /dev/shm/etcd-check.*|"$DIR"/data.*) rm -rf "$DATAROOT" ;; esac
  rm -rf "$DIR"/m* "$DIR/state" "$DIR/endpoints" "$DIR/watchdog.pid" "$DIR/partitioned" "$DIR/tls"
  rmdir "$DIR" 2>/dev/null || true
  echo "stopped"
}

cmd_status() {
  load_state
  local li i pid s rev term
  li=$(leader_idx || true)
  printf '%-4s %-8s %-6s %-6s %-6s %-5s %s\n' name pid alive health leader term revision
  for i in $(seq 1 "$N"); do
    pid=$(member_pid "$i")
    if [ -n "$pid" ]; then
      s=$(status_json "$i" || true)
      rev=$(printf '%s' "$s" | jnum revision)
      term=$(printf '%s' "$s" | jnum raftTerm)
      printf '%-4s %-8s %-6s %-6s %-6s %-5s %s\n' "m$i" "$pid" yes "$(health_of "$i")" \
        "$([ "$li" = "$i" ] && echo yes || echo no)" "${term:--}" "${rev:--}"
    else
      printf '%-4s %-8s %-6s %-6s %-6s %-5s %s\n' "m$i" - no down no - -
    fi
  done
  echo "endpoints=$(cat "$DIR/endpoints")"
}

cmd_kill() {
  local i=$1 pid
  pid=$(member_pid "$i")
  [ -n "$pid" ] || die "m$i is not running"
  kill -KILL "$pid"
  while running "$pid" || threads_alive "$pid"; do sleep 0.01; done
  echo "m$i"
}

cmd_partition() {
  local i=$1 user j others="" pp
  user=$(run_as_of "$i")
  [ -n "$user" ] || die "m$i does not run under its own uid; start with ETCD_RUN_AS=m$i=nobody"
  command -v nft >/dev/null || die "nft not installed (apt-get install nftables)"
  pp=$(pport_of "$i")
  nft add table inet $NFT_TABLE
  nft "add chain inet $NFT_TABLE out { type filter hook output priority 0 ; }"
  nft "add chain inet $NFT_TABLE in { type filter hook input priority 0 ; }"
  if [ "$MODE" = ips ]; then
    nft add rule inet $NFT_TABLE out meta skuid "$user" tcp dport "$pp" drop
    nft add rule inet $NFT_TABLE in ip daddr "$(host_of "$i")" tcp dport "$pp" drop
    nft add rule inet $NFT_TABLE out ip saddr "$(host_of "$i")" tcp sport "$pp" drop
  else
    for j in $(seq 1 "$N"); do [ "$j" = "$i" ] || others="${others:+$others, }$(pport_of "$j")"; done
    nft add rule inet $NFT_TABLE out meta skuid "$user" tcp dport "{ $others }" drop
    nft add rule inet $NFT_TABLE in tcp dport "$pp" drop
    nft add rule inet $NFT_TABLE out tcp sport "$pp" drop
  fi
  echo "m$i" > "$DIR/partitioned"
  echo "m$i"
}
cmd_heal() {
  nft delete table inet $NFT_TABLE 2>/dev/null || true
  rm -f "$DIR/partitioned"
  echo healed
}

case ${1:-} in
  start) shift; cmd_start "$@" ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  pid) load_state; i=$(idx_of "${2:-}"); pid=$(member_pid "$i"); [ -n "$pid" ] || die "m$i not running"; echo "$pid" ;;
  leader-pid) load_state; li=$(leader_idx) || die "no leader"; member_pid "$li" ;;
  leader) load_state; li=$(leader_idx) || die "no leader"; echo "m$li" ;;
  kill-leader) load_state; li=$(leader_idx) || die "no leader"; cmd_kill "$li" ;;
  kill) load_state; cmd_kill "$(idx_of "${2:-}")" ;;
  restart) load_state; i=$(idx_of "${2:-}"); [ -z "$(member_pid "$i")" ] || die "m$i is running"
           launch "$i" existing; wait_healthy "${3:-20}" || die "m$i not healthy"; echo "m$i" ;;
  pause) load_state; i=$(idx_of "${2:-}"); pid=$(member_pid "$i"); [ -n "$pid" ] || die "m$i not running"; kill -STOP "$pid"; echo "m$i" ;;
  resume) load_state; i=$(idx_of "${2:-}"); pid=$(member_pid "$i"); [ -n "$pid" ] || die "m$i not running"; kill -CONT "$pid"; echo "m$i" ;;
  endpoints) load_state; cat "$DIR/endpoints" ;;
  partition) load_state; cmd_partition "$(idx_of "${2:-}")" ;;
  heal) load_state; cmd_heal ;;
  wait-healthy) load_state; wait_healthy "${2:-20}" || die "not healthy"; echo healthy ;;
  env) load_state; echo "ETCD_ENDPOINTS=$(cat "$DIR/endpoints")"
       echo "ETCD_TLS_DIR=$([ -n "$TLS" ] && echo "$DIR/tls")" ;;
  etcdctl) load_state; shift
           tls=(); [ -n "$TLS" ] && tls=(--cacert "$DIR/tls/ca.crt" --cert "$DIR/tls/client.crt" --key "$DIR/tls/client.key")
           ETCDCTL_API=3 exec etcdctl --endpoints "$(cat "$DIR/endpoints")" ${tls[@]+"${tls[@]}"} "$@" ;;
  *) sed -n '2,24p' "$SELF" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
