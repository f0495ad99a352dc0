#!/usr/bin/env bash
# ensure-postgres.sh makes sure a throwaway PostgreSQL cluster for the
# token-store integration tests runs on loopback, and prints its DSN on
# stdout (everything else goes to stderr). It is idempotent and fast when the
# cluster already runs.
#
#   - The server is Debian's `postgresql` package: installed with apt when no
#     /usr/lib/postgresql/*/bin/postgres exists (root only). Its binaries are
#     used by absolute path, never whatever initdb or pg_ctl is on PATH.
#   - The cluster is ours alone: initdb into a staging directory, marked with
#     a file naming this script, then renamed into place, under
#     $SANDGATE_TEST_POSTGRES_DIR (default /var/cache/sandgate/postgres-PORT).
#     A directory there without the mark, or a server we did not start on the
#     port, is refused, never touched.
#   - It listens on 127.0.0.1:$SANDGATE_TEST_POSTGRES_PORT (default 55432)
#     only, with no unix socket, trust authentication for 127.0.0.1 only, and
#     durability off (a test database), running as the `postgres` user.
#   - Concurrent runs serialize on a lock; the server outlives this script.
set -euo pipefail

readonly PORT=${SANDGATE_TEST_POSTGRES_PORT:-55432}
readonly DIR=${SANDGATE_TEST_POSTGRES_DIR:-/var/cache/sandgate/postgres-$PORT}
readonly MARK=SANDGATE_TEST_CLUSTER
readonly LOCK=/var/lock/sandgate-ensure-postgres-$PORT.lock
readonly WAIT_SECONDS=${SANDGATE_POSTGRES_WAIT:-60}
readonly RUN_AS=postgres

log() { printf 'ensure-postgres: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

dsn() { printf 'postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable\n' "$PORT"; }

# bindir prints the bin directory of the newest Debian PostgreSQL installed.
bindir() {
	local d
	d=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n1)
	[[ -x $d/postgres ]] && printf '%s\n' "$d"
}

install_server() {
	[[ $(id -u) -eq 0 ]] || die "PostgreSQL is not installed and installing it needs root (apt-get install postgresql)"
	command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is not installed and there is no apt-get to install it"
	export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1
	if [[ $(apt-cache policy postgresql 2>/dev/null) != *"Candidate: "[0-9]* ]]; then
		log "apt-get update (the package lists do not know postgresql)"
		apt-get update -q
	fi
	log "apt-get install postgresql"
	if ! apt-get install -y -q postgresql; then
		log "install failed; refreshing the package lists once and retrying"
		apt-get update -q
		apt-get install -y -q postgresql
	fi
}

# as_owner runs a server binary as the cluster's owner, from a directory it
# can read.
as_owner() { (cd / && runuser -u "$RUN_AS" -- "$@"); }

# reserve_port keeps the kernel from handing $PORT out as the source port of
# an outgoing connection: 55432 lies in Linux's ephemeral range, and a client
# socket left in TIME-WAIT on it makes the server's bind fail ("Address
# already in use") for a minute.
reserve_port() {
	local f=/proc/sys/net/ipv4/ip_local_reserved_ports cur
	cur=$(cat "$f")
	if [[ ",$cur," != *",$PORT,"* ]]; then
		echo "${cur:+$cur,}$PORT" >"$f"
	fi
}

# without_inherited_fds runs "$@" in a subshell with every descriptor above
# stderr closed.
without_inherited_fds() {
	(
		for fd in /proc/"$BASHPID"/fd/*; do
			fd=${fd##*/}
			if ((fd > 2)); then eval "exec $fd>&-"; fi
		done
		"$@"
	)
}

# ours reports whether DIR holds the cluster this script created.
ours() { [[ -f $DIR/$MARK && -f $DIR/PG_VERSION ]]; }

# running reports whether our cluster's postmaster is alive.
running() { ours && as_owner "$BIN/pg_ctl" -D "$DIR" status >/dev/null 2>&1; }

# port_taken reports whether anything accepts connections on the port.
port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

create_cluster() {
	local stage=$DIR.staging
	# The staging name is ours alone: a leftover is a run that died mid-initdb.
	rm -rf -- "$stage"
	mkdir -p -- "$(dirname -- "$DIR")"
	install -d -m 0700 -o "$RUN_AS" -g "$RUN_AS" -- "$stage"
	log "initdb $DIR"
	as_owner "$BIN/initdb" -D "$stage" -U postgres -E UTF8 --locale=C --auth=reject --no-sync >&2
	cat >>"$stage/postgresql.conf" <<CONF

# Written by sandgate's build/ensure-postgres.sh: a throwaway test cluster.
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = ''
max_connections = 100
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
	printf '# sandgate test cluster: trust on IPv4 loopback only.\nhost all all 127.0.0.1/32 trust\n' >"$stage/pg_hba.conf"
	printf 'created by sandgate build/ensure-postgres.sh for tests; safe to delete when stopped\n' >"$stage/$MARK"
	chown "$RUN_AS:$RUN_AS" -- "$stage/$MARK" "$stage/pg_hba.conf" "$stage/postgresql.conf"
	mv -T -- "$stage" "$DIR"
}

main() {
	BIN=$(bindir) || true
	if [[ -z $BIN ]]; then
		install_server
		BIN=$(bindir) || die "postgresql installed but no /usr/lib/postgresql/*/bin/postgres found"
	fi
	readonly BIN
	if running; then
		dsn
		return 0
	fi
	[[ $(id -u) -eq 0 ]] || die "the test cluster in $DIR is not running and starting it needs root"

	exec 9>"$LOCK"
	flock -w "$WAIT_SECONDS" 9 || die "could not take $LOCK within ${WAIT_SECONDS}s"
	if running; then
		dsn
		return 0
	fi
	if [[ -e $DIR ]] && ! ours; then
		die "$DIR exists but was not created by this script; not touching it (set SANDGATE_TEST_POSTGRES_DIR)"
	fi
	if port_taken; then
		die "127.0.0.1:$PORT is taken by a server this script did not start; not touching it (set SANDGATE_TEST_POSTGRES_PORT)"
	fi
	ours || create_cluster
	reserve_port
	log "starting PostgreSQL $("$BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT (log: $DIR/server.log)"
	# pg_ctl detaches the server, which outlives this script: no descriptor
	# above stderr may leak into it (our lock on fd 9, or a lock the caller
	# holds, as `flock FILE make test` does, which would stay held forever).
	without_inherited_fds as_owner "$BIN/pg_ctl" -D "$DIR" -l "$DIR/server.log" -w -t "$WAIT_SECONDS" start >&2 ||
		{
			tail -n 30 "$DIR/server.log" >&2 || true
			die "the server did not start"
		}
	"$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" -t "$WAIT_SECONDS" || die "the server started but does not answer on 127.0.0.1:$PORT"
	dsn
}

main "$@"
