#!/usr/bin/env bash
# tests/fault/ckpt_disk.sh — a checkpoint directory that is full, read-only,
# or not a directory, at the start of a run and in the middle of one, on one
# rank and on two; and `tessel import` onto a full disk.
#
# usage: ckpt_disk.sh TESSEL SRC TMP FAULT_LIB
#
# Every case must end with exit status 1 (never a crash), a message that
# names the checkpoint directory and the bytes a checkpoint needs, no
# temporary directory left behind, and — when a checkpoint was written
# before the failure — that checkpoint intact (`tessel sample` validates
# and loads it).
#
# The disk is a small tmpfs when this runs as root and mounting works; the
# same cases always also run through FAULT_LIB (LD_PRELOAD), which makes a
# directory fill up or turn read-only after a number of bytes, so the code
# path is tested on any machine.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" ckpt_disk
LIB=$4

mounts=()
unmount_all() {
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
  mounts=()
}
trap unmount_all EXIT

tiny_config 6 3

# expect_failure CKPT_DIR INTACT_STEP TEXT... (after `run`, whose output is in $WORK/$case_name.log)
#   INTACT_STEP: the checkpoint that must survive, or - when none was written
expect_failure() {
  local ckpt=$1 intact=$2 log="$WORK/$case_name.log"
  shift 2
  if [ "$status" -ge 128 ] || grep -qE 'Sanitizer|runtime error:|Segmentation fault|core dumped' "$log"; then
    fail "crashed (status $status):"
    sed 's/^/    /' "$log" >&2
    return
  fi
  [ "$status" -eq 1 ] || fail "exit status $status, expected 1"
  for text in "$ckpt" "$@"; do
    grep -qF -- "$text" "$log" || fail "the message lacks: $text"
  done
  left=$(find "$ckpt" -maxdepth 1 -name '.tmp-step_*' 2>/dev/null | wc -l)
  [ "$left" -eq 0 ] || fail "$left temporary checkpoint director(ies) left in $ckpt"
  if [ "$intact" != - ]; then
    "$TESSEL" sample "$ckpt/step_0000000$intact" --tokens 4 >/dev/null 2>"$WORK/$case_name.sample" ||
      fail "the checkpoint before the failure is not intact: $(cat "$WORK/$case_name.sample")"
  fi
  [ "$failures" -eq "$before" ] || sed 's/^/    /' "$log" >&2
}

# run CASE CKPT_DIR [ARGS...]: one run with its own log.dir
run() {
  case_name=$1
  before=$failures
  local ckpt=$2
  shift 2
  "$@" --set log.dir="$WORK/$case_name" --set checkpoint.dir="$ckpt" >"$WORK/$case_name.log" 2>&1
  status=$?
}

single() { "$TESSEL" run "$WORK/tiny.yaml" "$@"; }
two_ranks() { "$TESSEL" launch -n 2 "$WORK/tiny.yaml" --set plugin.name=ddp "$@"; }
# inject DIR FAULT CMD...: CMD with the fault library acting on DIR
inject() { (export LD_PRELOAD="$LIB" TESSEL_FAULT_DIR="$1" TESSEL_FAULT="$2" && "${@:3}"); }

# ---- through the fault library: any machine ----
d=$WORK/lib
mkdir -p "$d"
run lib_full_at_start "$d/full" inject "$d/full" full single
expect_failure "$d/full" - "free, but one checkpoint of this model needs about" "bytes"
# one checkpoint (about 420,000 bytes written) fits in 600,000, the second does not
run lib_full_mid_run "$d/fills" inject "$d/fills" enospc:600000 single
expect_failure "$d/fills" 1 "cannot write checkpoint step_00000002" "No space left on device" \
  "One checkpoint of this model needs about" "The last checkpoint is intact: $d/fills/step_00000001" \
  "Free some space or point checkpoint.dir at another disk"
run lib_read_only_at_start "$d/ro" inject "$d/ro" erofs:0 single
expect_failure "$d/ro" - "cannot create directory: Read-only file system" "bytes"
run lib_read_only_mid_run "$d/turns_ro" inject "$d/turns_ro" erofs:600000 single
# with room on the disk the advice is about the file system, not space
expect_failure "$d/turns_ro" 1 "cannot write checkpoint step_00000002" "Read-only file system" \
  "One checkpoint of this model needs about" "The last checkpoint is intact" \
  "There is room, so the cause is the file system"
# the advice follows the cause the failure carries, not words of its
# message: a directory whose name reads like a full disk was advised to
# free space when it turned read-only
named=$d/"No space left on device"
run lib_read_only_named_like_full "$named" inject "$named" erofs:600000 single
expect_failure "$named" 1 "Read-only file system" "There is room, so the cause is the file system"
run lib_read_only_mid_run_2_ranks "$d/ro2" inject "$d/ro2" erofs:600000 two_ranks
expect_failure "$d/ro2" 1 "cannot write checkpoint step_00000002" "Read-only file system" \
  "One checkpoint of this model needs about"
# a strategy that stores state itself: its gathers after the failed write
# run its hooks, which once wiped the cause from the message
run lib_full_mid_run_gemini "$d/gemini" inject "$d/gemini" enospc:600000 single --set plugin.name=gemini
expect_failure "$d/gemini" 1 "cannot write checkpoint step_00000002" "No space left on device" \
  "The last checkpoint is intact: $d/gemini/step_00000001"
# a file where checkpoint.dir goes is a mistake of the config, found with it
echo "not a directory" >"$d/afile"
run not_a_directory "$d/afile" single
[ "$status" -eq 2 ] && grep -qF "checkpoint.dir: $d/afile exists and is not a directory" "$WORK/$case_name.log" ||
  fail "a file as checkpoint.dir: exit status $status, expected 2 with the key: $(head -3 "$WORK/$case_name.log")"
# an import that fills the disk leaves nothing, not even the parents it
# made (written as shell completion does, with a trailing slash, which
# once made the output directory itself and then failed to rename onto it)
mkdir -p "$d/import"
case_name=import_full
inject "$d/import" enospc:1000 "$TESSEL" import tests/fixtures/gpt2_tiny -o "$d/import/new/ck/" >"$WORK/$case_name.log" 2>&1
status=$?
[ "$status" -eq 1 ] && grep -q "No space left on device" "$WORK/$case_name.log" ||
  fail "exit status $status: $(cat "$WORK/$case_name.log")"
[ -z "$(ls -A "$d/import")" ] || fail "a failed import left $(find "$d/import" -mindepth 1 | tr '\n' ' ')"

# ---- a real small file system, when this machine lets us mount one ----
tmpfs() { # DIR SIZE [ro]
  mkdir -p "$1" && mount -t tmpfs -o "size=$2${3:+,$3}" tmpfs "$1" 2>/dev/null && mounts+=("$1")
}
if [ "$(id -u)" -eq 0 ] && tmpfs "$WORK/probe" 64k; then
  t=$WORK/tmpfs
  tmpfs "$t/small" 200k
  run tmpfs_full_at_start "$t/small/ck" single
  expect_failure "$t/small/ck" - "free, but one checkpoint of this model needs about" "bytes"
  tmpfs "$t/room_for_one" 700k
  run tmpfs_full_mid_run "$t/room_for_one/ck" single
  expect_failure "$t/room_for_one/ck" 1 "cannot write checkpoint step_00000002" "No space left on device" \
    "The last checkpoint is intact: $t/room_for_one/ck/step_00000001"
  tmpfs "$t/ro" 2m ro
  run tmpfs_read_only "$t/ro" single
  expect_failure "$t/ro" - "is not writable (Read-only file system)" "bytes"
  tmpfs "$t/one_for_two" 700k
  run tmpfs_full_mid_run_2_ranks "$t/one_for_two/ck" two_ranks
  expect_failure "$t/one_for_two/ck" 1 "cannot write checkpoint step_00000002" "No space left on device"
  echo "ran the cases on tmpfs and through the fault library"
else
  echo "not root or no mount: ran the cases through the fault library only"
fi

unmount_all
finish "ok: full, read-only and non-directory checkpoint dirs end with status 1, a message, nothing half-written"
