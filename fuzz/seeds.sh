#!/usr/bin/env bash
# Writes the fuzz targets' seed inputs into fuzz/seeds/TARGET/ from what the project
# ships: rigs/*.toml, profiles/*.toml, a journal, synthetic results directories
# (analysis-bench --make-*), a results-channel frame and a tar of a results directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
s="$here/seeds"
rm -rf "$s"
mkdir -p "$s"/{rig,livefx,profile,journal,trace_journal,results,channel,untar}
cp "$root"/rigs/*.toml "$s/rig/"
cp "$root"/profiles/*.toml "$s/profile/"
# The [livefx] target's input is the body of the table: the livefx rigs from it on.
for f in "$root"/rigs/livefx*.toml; do
    sed -n '/^\[livefx\]/,$p' "$f" | tail -n +2 >"$s/livefx/$(basename "$f")"
done
cat >"$s/journal/journal.json" <<'J'
{"version":1,"pid":4242,"started":"2026-11-30T18:00:00Z","command":"xrunrig run rigs/pi-inversion.toml --profile profiles/rr-timeslice.toml","entries":[{"knob":{"kind":"sysctl","name":"kernel.sched_rr_timeslice_ms","path":"/proc/sys/kernel/sched_rr_timeslice_ms"},"original":"100"}]}
J
cat >"$s/trace_journal/trace-journal.json" <<'J'
{"version":2,"pid":4242,"started":"2026-12-01T18:00:00Z","boot_id":"b","root":"/sys/kernel/tracing","mounted_by_us":true,"instance":"/sys/kernel/tracing/instances/xrunrig-4242"}
J
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && nice -n 19 cargo run -q --release -p analysis --bin analysis-bench -- \
    --make-livefx "$tmp/lf" --cycles 3000 --trials 2 --inject-every 50 >/dev/null &&
    nice -n 19 cargo run -q --release -p analysis --bin analysis-bench -- --make-trials "$tmp/tr" >/dev/null)
# One input = the files the results target writes, in its order, cut at 0xFF bytes.
python3 - "$tmp" "$s/results" <<'P'
import os, sys
tmp, out = sys.argv[1], sys.argv[2]
names = ["summary.json", "run.json", "samples.jsonl", "events.jsonl", "histograms.json"]
for d in ("lf", "tr"):
    base = os.path.join(tmp, d)
    parts = []
    for n in names:
        p = os.path.join(base, n)
        parts.append(open(p, "rb").read() if os.path.exists(p) else b"")
    cyc = os.path.join(base, "cycles")
    bins = sorted(os.listdir(cyc))[:2] if os.path.isdir(cyc) else []
    for b in bins:
        parts.append(open(os.path.join(cyc, b), "rb").read()[: 40 * 200])
    open(os.path.join(out, d), "wb").write(b"\xff".join(p.replace(b"\xff", b"") for p in parts))
P
# A channel frame and a tar, as the guest sends them.
mkdir -p "$tmp/dir/cycles"
printf '{"format":1}\n' >"$tmp/dir/summary.json"
head -c 200 /dev/urandom >"$tmp/dir/cycles/a__b__0.bin"
tar -cf "$s/untar/results.tar" -C "$tmp/dir" .
sum=$(sha256sum "$s/untar/results.tar" | cut -d' ' -f1)
size=$(stat -c %s "$s/untar/results.tar")
{ printf 'console noise\nXRUNRIG-ARCHIVE v1 rc=0 size=%s sha256=%s\n' "$size" "$sum"; cat "$s/untar/results.tar"; } >"$s/channel/frame"
