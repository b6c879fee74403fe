#!/usr/bin/env bash
# tests/cli/check_configs.sh — `tessel check` on the shipped and the broken configs.
#
# usage: check_configs.sh TESSEL SOURCE_DIR
#
# (a) Every configs/*.yaml must check cleanly (exit 0). A config that needs
#     more than one rank says so in a comment: `# check-world: N`.
# (b) Every tests/configs/bad/*.yaml must fail with exit status exactly 2 and
#     a first line of stderr that starts with FILE:LINE:COL: and contains the
#     expected text. Each one states its expectation in header comments:
#       # expect: LINE:COL: <text in the message>   (FILE is the config itself)
#       # expect: --set=K=V:1:COL: <text>           (a position in a --set argument)
#       # expect-file: NAME                         (FILE is NAME beside the config,
#                                                    for errors inside a base file)
#       # args: --set model.layers=abc              (extra arguments, split on spaces)
#       # expect-also: LINE:COL: <text>             (another line of stderr, for configs
#                                                    with several mistakes; repeatable)
#       # expect-not: <text>                        (text no line of stderr may hold: a hint
#                                                    that does not apply; repeatable)
#     A crash (status >= 128) or a sanitizer report is a failure.
#
# TESSEL_TEST_WRAPPER, when set, runs tessel under a command, e.g.
#   TESSEL_TEST_WRAPPER="valgrind -q --leak-check=full --error-exitcode=99"
set -u

tessel=${1:?usage: check_configs.sh TESSEL SOURCE_DIR}
src=${2:?usage: check_configs.sh TESSEL SOURCE_DIR}
cd "$src" || exit 1
tmp=$(mktemp -d "${TESSEL_TEST_TMP:-/tmp}/check_configs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
wrapper=${TESSEL_TEST_WRAPPER:-}

failures=0
checked=0

fail() {
  echo "FAIL $1"
  shift
  for line in "$@"; do echo "  $line"; done
  failures=$((failures + 1))
}

# The value of a `# KEY: value` header comment in file $1, or empty.
header() { sed -n "s/^# $2: //p" "$1" | head -n 1; }

crashed() { # status, stderr file
  [ "$1" -ge 128 ] || grep -qE 'Sanitizer|runtime error:|Segmentation fault|core dumped' "$2"
}

# (a) the shipped configs
shopt -s nullglob
good=(configs/*.yaml)
[ ${#good[@]} -gt 0 ] || fail "configs/" "no configs/*.yaml to check"
for cfg in "${good[@]}"; do
  world=$(header "$cfg" check-world)
  $wrapper "$tessel" check --quiet --world "${world:-1}" "$cfg" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  checked=$((checked + 1))
  if [ $rc -ne 0 ]; then
    fail "$cfg (--world ${world:-1})" "expected exit 0, got $rc:" "$(head -n 5 "$tmp/err")"
  fi
done

# (b) the broken ones
bad=(tests/configs/bad/*.yaml)
[ ${#bad[@]} -ge 20 ] || fail "tests/configs/bad/" "expected at least 20 broken configs, found ${#bad[@]}"
for cfg in "${bad[@]}"; do
  expect=$(header "$cfg" expect)
  file=$(header "$cfg" expect-file)
  args=$(header "$cfg" args)
  file=${file:+$(dirname "$cfg")/$file}
  file=${file:-$cfg}
  # split "POSITION: TEXT"; POSITION is LINE:COL, or a whole label such as --set=...:1:COL
  if [[ $expect =~ ^([0-9]+:[0-9]+):\ (.*)$ ]]; then
    prefix="$file:${BASH_REMATCH[1]}: "
    text=${BASH_REMATCH[2]}
  elif [[ $expect =~ ^([^\ ]*:[0-9]+:[0-9]+):\ (.*)$ ]]; then
    prefix="${BASH_REMATCH[1]}: "
    text=${BASH_REMATCH[2]}
  else
    fail "$cfg" "no '# expect: LINE:COL: text' header (got '$expect')"
    continue
  fi
  read -r -a argv <<<"$args" # split on spaces, without globbing "[2,"
  $wrapper "$tessel" check --quiet "${argv[@]}" "$cfg" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  checked=$((checked + 1))
  first=$(head -n 1 "$tmp/err")
  if crashed $rc "$tmp/err"; then
    fail "$cfg${args:+ ($args)}" "crashed with status $rc:" "$(head -n 20 "$tmp/err")"
    continue
  fi
  problems=()
  [ $rc -eq 2 ] || problems+=("expected exit status 2, got $rc")
  [[ $first == "$prefix"* ]] || problems+=("expected the first line of stderr to start with the position")
  [[ $first == *"$text"* ]] || problems+=("expected the first line of stderr to contain the text")
  while IFS= read -r also; do # every other mistake must be reported too, positioned
    [[ $also =~ ^([0-9]+:[0-9]+):\ (.*)$ ]] || { problems+=("bad expect-also header '$also'"); continue; }
    grep -qF -- "$file:${BASH_REMATCH[1]}: ${BASH_REMATCH[2]}" "$tmp/err" \
      || problems+=("expected a line '$file:${BASH_REMATCH[1]}: ${BASH_REMATCH[2]}...'")
  done < <(sed -n 's/^# expect-also: //p' "$cfg")
  while IFS= read -r never; do
    grep -qF -- "$never" "$tmp/err" && problems+=("expected no line holding '$never'")
  done < <(sed -n 's/^# expect-not: //p' "$cfg")
  if [ ${#problems[@]} -gt 0 ]; then
    fail "$cfg${args:+ ($args)}" "${problems[@]}" "- expected: $prefix...$text..." "+ got:      $first"
  fi
done

# (c) A config file that does not exist is a usage error too: exit status 2,
# the path named, for check and run alike; so is a file's name with a
# slash after it (it read "Not a directory", exit 1) and an empty name.
for cmd in check run; do
  for path in "$tmp/missing.yaml" configs/quickstart.yaml/ ""; do
    $wrapper "$tessel" $cmd "$path" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    checked=$((checked + 1))
    first=$(head -n 1 "$tmp/err")
    want="$path: no such config file"
    [ -n "$path" ] || want="the config file's name is empty"
    [ $rc -eq 2 ] && [[ $first == *"$want"* ]] \
      || fail "tessel $cmd '$path'" "expected exit status 2 and '$want', got $rc: $first"
  done
done

# (d) tp2d or tp3d left to choose its group on a world no grid or cube
# divides runs as plain data parallelism: it checks, and says so.
for case in "tp2d 2 4" "tp3d 4 8"; do
  read -r name world least <<<"$case"
  $wrapper "$tessel" check --world "$world" --set plugin.name="$name" configs/quickstart.yaml >"$tmp/out" 2>"$tmp/err"
  rc=$?
  checked=$((checked + 1))
  [ $rc -eq 0 ] && grep -q "runs as plain data parallelism; run on a multiple of $least ranks" "$tmp/err" \
    || fail "$name at $world ranks" "expected exit status 0 and a warning, got $rc: $(head -n 3 "$tmp/err")"
done

# (e) The resolved config `check` prints is what a run uses: checked again,
# it passes. Shards given as data.train once printed data.dir and
# val_fraction, which are refused beside train; a Llama's rope_scaling
# prints with the values it left to their defaults.
$wrapper "$tessel" data prepare README.md -o "$tmp/shards" >/dev/null 2>&1 || fail "data prepare README.md" "failed"
printf '%s\n' "model: {layers: 1, heads: 2, channels: 16, seq_len: 16}" \
  "data: {train: \"$tmp/shards/train_*.bin\", val: \"$tmp/shards/val_*.bin\"}" "train: {steps: 1, batch_size: 2}" \
  >"$tmp/shards.yaml"
printf '%s\n' "model: {arch: llama, layers: 1, heads: 2, channels: 16, seq_len: 16, rope_scaling: {type: llama3, factor: 32}}" \
  "data: {train: \"$tmp/shards/train_*.bin\"}" "train: {steps: 1, batch_size: 2}" >"$tmp/rope.yaml"
for cfg in configs/quickstart.yaml "$tmp/shards.yaml" "$tmp/rope.yaml"; do
  $wrapper "$tessel" check "$cfg" >"$tmp/resolved.yaml" 2>"$tmp/err" || fail "$cfg" "did not check: $(head -n 3 "$tmp/err")"
  $wrapper "$tessel" check --quiet "$tmp/resolved.yaml" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  checked=$((checked + 1))
  [ $rc -eq 0 ] || fail "$cfg, as check printed it" "expected exit 0, got $rc: $(head -n 3 "$tmp/err")"
done

echo "$checked config(s) checked, $failures failure(s)"
[ $failures -eq 0 ]
