# Shared by the benchmark report scripts (sourced, not run).
#   bench_init <script name> <program> <build dir>
# sets SRC, BUILD, BIN, LIB and LOG (a scratch directory removed at exit, together with the
# background server whose pid is in SPID) after checking that the program and softrdma's
# libraries are built.

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

bench_cleanup() {
	[ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null
	rm -rf "$LOG"
}

bench_init() {
	local name=$1 prog=$2
	BUILD=$(cd "$3" 2>/dev/null && pwd) || { echo "$name: no build directory $3" >&2; exit 2; }
	BIN=$BUILD/bin/$prog
	LIB=$BUILD/lib
	[ -x "$BIN" ] || { echo "$name: $BIN not built (cmake --build $BUILD --target $prog)" >&2; exit 2; }
	if [ ! -e "$LIB/libibverbs.so.1" ] || [ ! -e "$LIB/librdmacm.so.1" ]; then
		echo "$name: softrdma libraries missing in $LIB" >&2
		exit 2
	fi
	LOG=$(mktemp -d "/tmp/$prog-run.XXXXXX")
	SPID=
	trap bench_cleanup EXIT
}

rel() { # path relative to the source tree when inside it
	case $1 in "$SRC"/*) echo "${1#"$SRC"/}" ;; *) echo "$1" ;; esac
}
