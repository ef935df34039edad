#!/usr/bin/env bash
# The suite on a loaded machine: N busy loops (default 4, twice the cores of a 2-core box) run beside the README's
# test command, and the load average is sampled each minute. No test may fail because the machine is slow (the
# tests inject clocks, wait on conditions and use generous bounds); this is how to check it.
#   bash scripts/load_test.sh [BURNERS] [-- pytest arguments]   (default: `make lint suite`, what `make test` runs after installing)
# Prints one summary line: the exit status, the minutes taken, and the load average's min/median/max.
set -uo pipefail
cd "$(dirname "$0")/.."
burners=4
if [[ $# -gt 0 && "$1" != "--" ]]; then burners="$1"; shift; fi
[[ $# -gt 0 && "$1" == "--" ]] && shift
[[ -x .venv/bin/python ]] || { echo "load_test: no .venv here; run 'bash scripts/bootstrap.sh' first" >&2; exit 2; }
log=$(mktemp -d)/load
python3 - "$burners" <<'EOF' &
import multiprocessing, sys

def spin():
    while True:
        pass

if __name__ == "__main__":
    procs = [multiprocessing.Process(target=spin, daemon=True) for _ in range(int(sys.argv[1]))]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
EOF
burn=$!
# First sample after a minute: the 1-minute average needs that long to show the busy loops (a sample at the start
# read 0.6 beside a median of 8).
(while sleep 60; do cut -d' ' -f1 /proc/loadavg >> "$log"; done) & sample=$!
trap 'pkill -P $burn 2>/dev/null; kill $burn $sample 2>/dev/null' EXIT
start=$(date +%s)
if [[ $# -gt 0 ]]; then
  .venv/bin/python -m pytest "$@"
else
  make --no-print-directory lint suite
fi
rc=$?
minutes=$(( ($(date +%s) - start) / 60 ))
python3 - "$rc" "$minutes" "$burners" "$log" <<'EOF'
import statistics, sys
rc, minutes, burners, path = sys.argv[1:]
loads = [float(x) for x in open(path).read().split()] or [float(open("/proc/loadavg").read().split()[0])]
print(f"load_test: exit {rc} after {minutes} min beside {burners} busy loops; load average "
      f"min {min(loads):.1f}, median {statistics.median(loads):.1f}, max {max(loads):.1f}")
EOF
exit "$rc"
