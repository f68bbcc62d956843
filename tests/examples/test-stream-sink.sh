#!/usr/bin/env bash
# tests/examples/test-stream-sink.sh STREAM_SINK: examples/stream_sink.c streams its
# synthetic frames through the default preset: the sink sees every frame once, in order,
# finds both plumes in each where the source drew them and nothing else, and the summary
# says so; a frame count of its own is honoured, and a bad one is a usage error.
set -euo pipefail
exe=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$exe") || fail "stream_sink exited with $?: $out"
echo "$out"
frame_lines=$(echo "$out" | grep -E '^frame [0-9]+: ' || true)
[[ $(echo "$frame_lines" | wc -l) -eq 48 ]] || fail "not 48 frame lines"
# Frames 0..47 in order, each with both plumes found and no other hot spot.
expected_order=$(seq 0 47 | sed 's/^/frame /')
[[ $(echo "$frame_lines" | sed -E 's/^(frame [0-9]+):.*/\1/') == "$expected_order" ]] ||
  fail "the frames did not come in order"
bad=$(echo "$frame_lines" | grep -Ev '^frame [0-9]+: 2 hot spots \([0-9.]+, [0-9.]+\) \([0-9.]+, [0-9.]+\): 2 of 2 plumes found$' || true)
[[ -z $bad ]] || fail "frames without both plumes, or with more: $bad"
echo "$out" | grep -qx '48 frames in order, 96 of 96 plumes found, 0 false alarms' ||
  fail "no summary of 48 frames, 96 plumes found"
# Frame 0's plumes are drawn at (30, 20) and (96, 110): the weighted centroids are there.
echo "$frame_lines" | head -n 1 | grep -qx 'frame 0: 2 hot spots (30.0, 20.0) (96.0, 110.0): 2 of 2 plumes found' ||
  fail "frame 0's plumes are not at (30, 20) and (96, 110): $(echo "$frame_lines" | head -n 1)"

out=$("$exe" 5) || fail "stream_sink 5 exited with $?: $out"
echo "$out" | grep -qx '5 frames in order, 10 of 10 plumes found, 0 false alarms' ||
  fail "stream_sink 5: $out"

status=0
"$exe" 0 2>/dev/null || status=$?
[[ $status -eq 2 ]] || fail "stream_sink 0 exited with $status, not 2 (usage)"
echo "stream_sink: ok"
