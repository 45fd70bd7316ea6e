#!/bin/sh
# What lava/xrunrig-test.yaml runs on the device: install xrunrig, run one rig, report
# every summary row with lava-test-case, attach the results directory.
# Usage: xrunrig-lava.sh RIG PROFILE TRIALS XRUNRIG_URL UPLOAD_URL [xrunrig run options…]
# POSIX sh only (busybox ash is enough): boards rarely have bash, python or jq.
set -u
RIG=$1 PROFILE=$2 TRIALS=$3 XRUNRIG_URL=$4 UPLOAD_URL=$5
shift 5
OUT=${XRUNRIG_OUT:-/tmp/xrunrig-lava-results}
# Private state: the run's journal and lock stay with this job.
export XRUNRIG_STATE_DIR=${XRUNRIG_STATE_DIR:-/tmp/xrunrig-lava-state}
mkdir -p "$XRUNRIG_STATE_DIR" && chmod 700 "$XRUNRIG_STATE_DIR"

# 1. xrunrig: on the device already, downloaded, or built from this checkout.
if command -v xrunrig >/dev/null 2>&1; then
  XR=$(command -v xrunrig)
elif [ -n "$XRUNRIG_URL" ]; then
  XR=/usr/local/bin/xrunrig
  mkdir -p /usr/local/bin
  if command -v curl >/dev/null 2>&1; then curl -fsSL -o "$XR" "$XRUNRIG_URL"
  else wget -q -O "$XR" "$XRUNRIG_URL"; fi || { lava-test-case install --result fail; exit 1; }
  chmod 755 "$XR"
elif command -v cargo >/dev/null 2>&1; then
  cargo build --release --bin xrunrig || { lava-test-case install --result fail; exit 1; }
  XR=$PWD/target/release/xrunrig
else
  echo "xrunrig-lava: no xrunrig on the device, no XRUNRIG_URL and no cargo: give one" >&2
  lava-test-case install --result fail
  exit 1
fi
lava-test-case install --result pass

# 2. The run. Its exit code is 0, 1 (a bound not met: still a result) or more (no result).
set -- run "$RIG" --trials "$TRIALS" --out "$OUT" "$@"
[ -n "$PROFILE" ] && set -- "$@" --profile "$PROFILE"
rm -rf "$OUT"
"$XR" "$@"
rc=$?
if [ ! -f "$OUT/summary.json" ] || [ -e "$OUT/INCOMPLETE" ]; then
  echo "xrunrig-lava: the run left no complete results (exit $rc)" >&2
  lava-test-case run --result fail
  exit 1
fi
lava-test-case run --result pass
"$XR" report "$OUT" >/dev/null || true

# 3. One test case per summary row and figure (the KCIDB export's tests, same names).
"$XR" export lava "$OUT" >"$OUT.cases" || { lava-test-case export --result fail; exit 1; }
while read -r name result measurement units; do
  if [ -n "$measurement" ]; then
    lava-test-case "$name" --result "$result" --measurement "$measurement" --units "$units"
  else
    lava-test-case "$name" --result "$result"
  fi
done <"$OUT.cases"

# 4. The results directory: uploaded where the lab keeps artifacts, else into the log.
tar -C "$(dirname "$OUT")" -czf "$OUT.tar.gz" "$(basename "$OUT")"
if [ -n "$UPLOAD_URL" ]; then
  url="${UPLOAD_URL%/}/$(basename "$OUT").tar.gz"
  if curl -fsS -T "$OUT.tar.gz" "$url"; then
    lava-test-reference results --result pass --reference "$url"
  else
    lava-test-case results --result fail
  fi
else
  echo "XRUNRIG-RESULTS-BEGIN $(basename "$OUT").tar.gz"
  base64 "$OUT.tar.gz"
  echo "XRUNRIG-RESULTS-END"
  lava-test-case results --result pass
fi
exit 0
