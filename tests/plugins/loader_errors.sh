#!/bin/sh
# tests/plugins/loader_errors.sh — every way a strategy plugin can fail to
# load, each provoked by a deliberately broken test plugin, must end in one
# clear paragraph and a defined exit status, never a crash.
#
# usage: loader_errors.sh TESSEL TEST_PLUGIN_DIR SCRATCH_DIR
#   TESSEL           the built `tessel` program
#   TEST_PLUGIN_DIR  ${CMAKE_BINARY_DIR}/test-plugins (one directory per case)
#   SCRATCH_DIR      emptied and used for configs and captured output
#
# Exit statuses asserted (core/plugin/loader.c, common/status.c): a plugin
# that cannot be found or an option error is a configuration error (2); a
# file that is there but broken, or a hook that fails for its own reasons,
# is a runtime failure (1).
set -u

TESSEL=$1
PLUGINS=$2
TMP=$3

case $TESSEL in /*) ;; *) echo "TESSEL must be an absolute path, got $TESSEL" >&2; exit 1 ;; esac
[ -x "$TESSEL" ] || { echo "$TESSEL is not an executable" >&2; exit 1; }

rm -rf "$TMP"
mkdir -p "$TMP" || exit 1
cd "$TMP" || exit 1
# The search must see only what each case sets.
unset TESSEL_PLUGIN_PATH

# This tessel's plugin ABI (TESSEL_ABI_VERSION in include/tessel/plugin.h):
# what refusals name and what the test plugins, built against it, report.
ABI=$(sed -n 's/^#define TESSEL_ABI_VERSION TESSEL_ABI(\([0-9]*\), \([0-9]*\))$/\1.\2/p' \
  "$(dirname "$0")/../../include/tessel/plugin.h")
[ -n "$ABI" ] || { echo "FAIL: no TESSEL_ABI_VERSION in include/tessel/plugin.h" >&2; exit 1; }
ABI_RE=$(echo "$ABI" | sed 's/\./\\./')

failures=0
case_name=""

fail() {
  echo "FAIL [$case_name]: $*" >&2
  failures=$((failures + 1))
}

# cfg NAME LINE...: write NAME.yaml with the core sections (lines 1-3), then
# `plugin:` on line 4 and the given lines indented under it from line 5 on.
# Prints the config's absolute path.
cfg() {
  f="$TMP/$1.yaml"
  shift
  {
    echo 'model: {layers: 1, heads: 1, channels: 8, seq_len: 8}'
    echo "data: {text: [\"$TMP/*.yaml\"]}" # text a run would prepare: `check` leaves it to the run
    echo 'train: {steps: 1}'
    echo 'plugin:'
    for line in "$@"; do echo "  $line"; done
  } >"$f"
  echo "$f"
}

# run CASE CMD...: run a command, keeping its status and output.
run() {
  case_name=$1
  shift
  "$@" >"$TMP/$case_name.out" 2>"$TMP/$case_name.err"
  status=$?
  out="$TMP/$case_name.out"
  err="$TMP/$case_name.err"
}

show() {
  echo "--- [$case_name] status $status; stderr:" >&2
  cat "$err" >&2
  echo "--- stdout:" >&2
  cat "$out" >&2
}

# A failure: the expected status (so no signal), nothing on stdout, and the
# message one paragraph (non-empty, no blank line).
expect_failure() {
  if [ "$status" -ge 128 ]; then
    fail "crashed or was killed (status $status)"
  elif [ "$status" -ne "$1" ]; then
    fail "exit status $status, expected $1"
  fi
  [ -s "$out" ] && fail "printed on stdout although the check failed"
  [ -s "$err" ] || fail "printed no error message"
  grep -q '^[[:space:]]*$' "$err" && fail "the message is more than one paragraph (it has a blank line)"
}

# expect_err TEXT...: each fixed string appears in the error output.
expect_err() {
  for text in "$@"; do
    grep -qF -- "$text" "$err" || fail "the message lacks: $text"
  done
}

check_case() { # CASE CONFIG [ENV=VALUE...] runs `tessel check CONFIG`
  c=$1
  config=$2
  shift 2
  run "$c" env "$@" "$TESSEL" check "$config"
}

# ---------------------------------------------------------------- controls

# The good plugin loads, reads its option and arranges any world.
config=$(cfg good "path: $PLUGINS/good-v1/libtessel-testgood.so" "greeting_count: 3")
check_case good "$config"
[ "$status" -eq 0 ] || fail "a valid config with testgood failed (status $status)"
expect_err "strategy testgood, mesh dp 1"
grep -q '^  greeting_count: 3$' "$out" || fail "the resolved config lacks plugin.greeting_count: 3"
[ "$status" -eq 0 ] || show

run good_world4 "$TESSEL" check --world 4 "$config"
[ "$status" -eq 0 ] || fail "testgood failed for a world of 4 (status $status)"
expect_err "strategy testgood, mesh dp 4"

# By name through TESSEL_PLUGIN_PATH; the option's default is filled in.
config=$(cfg good_by_name "name: testgood")
check_case good_by_name "$config" TESSEL_PLUGIN_PATH="$PLUGINS/good-v1"
[ "$status" -eq 0 ] || { fail "testgood was not found by name (status $status)"; show; }
grep -q '^  greeting_count: 1$' "$out" || fail "the resolved config lacks the default greeting_count: 1"

# Only the entry symbol is exported, and the plugin does not link the core.
case_name=exports
syms=$(nm -D --defined-only "$PLUGINS/good-v1/libtessel-testgood.so" | awk '{print $NF}' | grep -v '^_')
[ "$syms" = "tessel_strategy_v2" ] || fail "testgood exports [$syms], expected only tessel_strategy_v2"
needed=$(readelf -d "$PLUGINS/good-v1/libtessel-testgood.so" | grep NEEDED)
echo "$needed" | grep -q 'libtessel' && fail "testgood links the core: $needed"
# nosym is a real shared object that exports an entry under the wrong name.
syms=$(nm -D --defined-only "$PLUGINS/nosym/libtessel-nosym.so" | awk '{print $NF}' | grep -v '^_')
[ "$syms" = "tessel_strategy_entry" ] || fail "nosym exports [$syms], expected only tessel_strategy_entry"

# A plugin that links libtessel (linkscore: testgood linked with the core)
# loads, as it did, but with a warning that names the file and says what to
# do; the good plugin gets none (it once loaded without a word, though
# plugin-check fails it).
before=$failures
grep -q "links libtessel" "$TMP/good.err" && fail "testgood, which links nothing of tessel, was warned about libtessel"
lib=$PLUGINS/linkscore/libtessel-testgood.so
readelf -d "$lib" | grep -q 'NEEDED.*libtessel' || fail "linkscore does not link the core: the case tests nothing"
config=$(cfg linkscore "path: $lib")
check_case linkscore "$config"
[ "$status" -eq 0 ] || fail "a plugin linking libtessel no longer loads (status $status)"
expect_err "warning: the strategy plugin $lib links libtessel" "a plugin must link nothing of tessel" \
  "Rebuild it without linking libtessel"
[ "$(grep -c 'links libtessel' "$err")" -eq 1 ] || fail "the warning is not said once"
[ "$failures" -eq "$before" ] || show

# --------------------------------------------------------------- not found

before=$failures
mkdir -p "$TMP/dirA" "$TMP/dirB"
config=$(cfg not_found "name: absent")
check_case not_found "$config" TESSEL_PLUGIN_PATH="$TMP/dirA:$TMP/dirB"
expect_failure 2
expect_err "strategy plugin 'absent' was not found" "$TMP/dirA/libtessel-absent.so" "$TMP/dirB/libtessel-absent.so" \
  "TESSEL_PLUGIN_PATH"
# Every path tried, in search order: both TESSEL_PLUGIN_PATH directories,
# the installed plugin directory, the build tree.
tried=$(grep -c '/libtessel-absent\.so$' "$err")
[ "$tried" -eq 4 ] || fail "the message lists $tried paths, expected 4 (2 from TESSEL_PLUGIN_PATH, installed, build tree)"
first=$(grep -m1 '/libtessel-absent\.so$' "$err")
[ "$first" = "  $TMP/dirA/libtessel-absent.so" ] || fail "the first path listed is '$first', expected dirA's"
[ "$failures" -eq "$before" ] || show

# A name kilobytes long makes the message longer than a report holds: its
# middle is cut, and both its start (the key) and its end (what to do) stay
before=$failures
long=$(printf '%04500d' 0 | tr 0 q)
config=$(cfg not_found_long "name: $long")
check_case not_found_long "$config" TESSEL_PLUGIN_PATH="$TMP/dirA:$TMP/dirB"
expect_failure 2
expect_err "plugin.name: strategy plugin 'qqq" " … " \
  "set plugin.path to the library, or add its directory to TESSEL_PLUGIN_PATH."
[ "$(wc -c <"$err")" -lt 2000 ] || fail "the message is $(wc -c <"$err") bytes, not cut to a report's room"
[ "$failures" -eq "$before" ] || show

config=$(cfg not_found_path "path: $TMP/dirA/libtessel-gone.so")
check_case not_found_path "$config"
expect_failure 2
expect_err "$TMP/dirA/libtessel-gone.so" "plugin.path"

# A file not named libtessel-NAME.so: said at plugin.path (line 5, column 9)
# like the others (it once came without a position)
touch "$TMP/dirA/strategy.so"
config=$(cfg misnamed "path: $TMP/dirA/strategy.so")
check_case misnamed "$config"
expect_failure 2
expect_err "$config:5:9: plugin.path: $TMP/dirA/strategy.so: strategy plugin files are named libtessel-<name>.so"

# ------------------------------------------------------------ broken files

# broken CASE STATUS TEXT...: `plugin.path` at the case's library; the
# message must name the file and carry each TEXT.
broken() {
  b=$1
  want=$2
  shift 2
  lib=$(ls "$PLUGINS/$b"/libtessel-*.so)
  config=$(cfg "$b" "path: $lib")
  before=$failures
  check_case "$b" "$config"
  expect_failure "$want"
  expect_err "$lib" "$@"
  [ "$failures" -eq "$before" ] || show
}

broken notso 1 "is not a loadable shared object"
grep -qF 'not an ELF file' "$err" || fail "the reason (not an ELF file) is missing"
broken nosym 1 "does not export the entry symbol tessel_strategy_v2"
broken future 1 "built for plugin ABI 3.x" "tessel_strategy_v3" "speaks plugin ABI $ABI" "The plugin is for a newer tessel"
broken v1 1 "built for plugin ABI 1.x" "tessel_strategy_v1" "speaks plugin ABI $ABI" "Port the plugin to this ABI"
broken abifield 1 "built for plugin ABI 3.0" "this tessel speaks ABI $ABI"
broken small 1 "strategy table is 16 bytes"
broken oddsize 1 "not a multiple of 8 as sizeof(tessel_strategy) always is"
broken misnamed 1 "calls itself 'somethingelse'" "file name says 'misnamed'"
broken nomesh 1 "lacks the required hook 'mesh'"
broken optcap 1 "declares TESSEL_CAP_OWNS_OPTIMIZER but lacks the hook 'optimizer_step'"
broken optstep 1 "has an 'optimizer_step' hook but does not declare TESSEL_CAP_OWNS_OPTIMIZER"

# ------------------------------------------------------------ create hooks

before=$failures
config=$(cfg createfail "path: $PLUGINS/createfail/libtessel-createfail.so")
check_case createfail "$config"
expect_failure 1
expect_err "strategy 'createfail' failed in create" "createfail: the frobnicator is missing"
[ "$failures" -eq "$before" ] || show

# Line 5 is `  path: ...`, line 6 `  mode: medium`: the error is located at
# the value of mode (column 9), as every config getter locates bad values.
before=$failures
config=$(cfg createcfg "path: $PLUGINS/createcfg/libtessel-createcfg.so" "mode: medium")
check_case createcfg "$config"
expect_failure 2
expect_err "$config:6:9: plugin.mode: mode must be fast or slow"
[ "$failures" -eq "$before" ] || show

# A mesh or a getter call the core must refuse, not take: a product that
# wraps to the world size, masks naming axes that do not exist, an enum
# default past its choices (read out of bounds once), and "unsupported" from
# an optional hook: a failure, never a silent switch to the core's default.
for m in "overflow|2|does not match the world size 1" "data_axes|1|declared data_axes 0x6, naming axes beyond its 1" \
         "group|1|declared group 0 as axes 0x30, beyond its 1 axes" \
         "enum|1|the default choice 9 is not an index into its 2 choices" \
         "status|1|returned -100, which is not a tessel_status" \
         "unsupported|1|failed in layout(wte.weight): no layout for a parameter of 2 dimensions"; do
  kind=${m%%|*} rest=${m#*|}
  want=${rest%%|*} text=${rest#*|}
  before=$failures
  config=$(cfg "badmesh_$kind" "path: $PLUGINS/badmesh/libtessel-badmesh.so" "mistake: $kind")
  check_case "badmesh_$kind" "$config"
  [ "$status" -eq "$want" ] || fail "badmesh $kind: status $status, expected $want"
  expect_err "$text"
  [ "$failures" -eq "$before" ] || show
done

# --------------------------------------------------- a plugin's own options

before=$failures
config=$(cfg option_range "name: testgood" "greeting_count: 0")
check_case option_range "$config" TESSEL_PLUGIN_PATH="$PLUGINS/good-v1"
expect_failure 2
expect_err "$config:6:19: plugin.greeting_count: must be at least 1, got 0"

config=$(cfg option_type "name: testgood" "greeting_count: many")
check_case option_type "$config" TESSEL_PLUGIN_PATH="$PLUGINS/good-v1"
expect_failure 2
expect_err "$config:6:19: plugin.greeting_count:"

config=$(cfg option_unknown "name: testgood" "greting_count: 3")
check_case option_unknown "$config" TESSEL_PLUGIN_PATH="$PLUGINS/good-v1"
expect_failure 2
expect_err "$config:6:3: unknown key 'greting_count' in plugin (did you mean 'greeting_count'?)"
[ "$failures" -eq "$before" ] || show

# ---------------------------------------------------------- tessel plugins

# Good, broken and shadowed plugins side by side.
before=$failures
run plugins env TESSEL_PLUGIN_PATH="$PLUGINS/good-v1:$PLUGINS/notso:$PLUGINS/good-v2" "$TESSEL" plugins
[ "$status" -eq 0 ] || fail "tessel plugins failed (status $status)"
grep -q '^NAME  *VERSION  *ABI  *CAPABILITIES' "$out" || fail "no header line"
# testgood 1.0: name, version, ABI, capabilities and description, then its path.
row=$(grep -A1 -E "^testgood +1\\.0 +$ABI_RE +data-parallel +test strategy: every parameter replicated over one data-parallel axis\$" "$out")
[ -n "$row" ] || fail "testgood 1.0 is not listed with version, ABI $ABI, capabilities and description"
echo "$row" | sed -n 2p | grep -qxF "  $PLUGINS/good-v1/libtessel-testgood.so" || fail "testgood 1.0's path is not listed"
# The broken file: listed with the reason instead of a crash.
row=$(grep -A1 -F "$PLUGINS/notso/libtessel-notso.so" "$out" | head -2)
echo "$row" | head -1 | grep -q '^?' || fail "notso is not listed as an unloadable file"
echo "$row" | sed -n 2p | grep -q '^  cannot load: .*is not a loadable shared object' || fail "notso's reason is missing"
# The second testgood, later in the search order, is shadowed.
row=$(grep -A1 -E '^testgood +2\.0 ' "$out")
echo "$row" | sed -n 2p | grep -qF "$PLUGINS/good-v2/libtessel-testgood.so  (shadowed by an earlier one of the same name)" ||
  fail "testgood 2.0 is not listed as shadowed"
[ "$failures" -eq "$before" ] || show

# A name wider than the NAME column widens it for every row: the columns
# after it start where the header's do (they once went out of line).
before=$failures
run plugins_wide env TESSEL_PLUGIN_PATH="$PLUGINS/good-v1:$PLUGINS/good-longname" "$TESSEL" plugins
[ "$status" -eq 0 ] || fail "tessel plugins failed (status $status)"
at=$(head -1 "$out" | awk '{print index($0, "VERSION")}')
for name in testgood testgood_with_a_long_name; do
  row=$(grep -E "^$name " "$out")
  [ -n "$row" ] || { fail "$name is not listed"; continue; }
  [ "$(printf '%s\n' "$row" | awk '{print index($0, "1.0 ")}')" -eq "$at" ] ||
    fail "$name's version does not start under VERSION (column $at): '$row'"
done
[ "$failures" -eq "$before" ] || show

# Every broken case in one listing: each reported, none fatal. createfail and
# createcfg load fine (listing never runs create).
before=$failures
path=""
for b in notso nosym future v1 abifield small misnamed nomesh createfail createcfg; do path="$path${path:+:}$PLUGINS/$b"; done
run plugins_broken env TESSEL_PLUGIN_PATH="$path" "$TESSEL" plugins
[ "$status" -eq 0 ] || fail "tessel plugins failed (status $status)"
n=$(grep -c '^  cannot load: ' "$out")
[ "$n" -eq 8 ] || fail "$n files reported as unloadable, expected 8"
for b in notso nosym future v1 abifield small misnamed nomesh; do
  grep -A1 -F "$PLUGINS/$b/libtessel-$b.so" "$out" | grep -q '^  cannot load: ' || fail "$b is not reported with its error"
done
grep -qE "^createfail +1\\.0 +$ABI_RE " "$out" || fail "createfail is not listed as loadable"
grep -qE "^createcfg +1\\.0 +$ABI_RE " "$out" || fail "createcfg is not listed as loadable"
[ "$failures" -eq "$before" ] || show

# A broken file earlier in the path shadows a good one of the same name (a
# search by name finds the broken one, so the listing must not offer the
# good one as usable); a directory named twice is listed once.
before=$failures
mkdir -p "$TMP/brokenfirst"
cp "$PLUGINS/nosym/libtessel-nosym.so" "$TMP/brokenfirst/libtessel-testgood.so"
case_name=shadow_broken
run shadow_broken env TESSEL_PLUGIN_PATH="$TMP/brokenfirst:$PLUGINS/good-v1:$PLUGINS/good-v1/" "$TESSEL" plugins
[ "$status" -eq 0 ] || fail "tessel plugins failed (status $status)"
grep -A1 -E "^testgood " "$out" | grep -qF "shadowed by an earlier file of the same name, which cannot load" ||
  fail "the good testgood is not reported as shadowed by the broken one"
[ "$(grep -c "$PLUGINS/good-v1/libtessel-testgood.so" "$out")" -eq 1 ] || fail "a directory named twice is listed twice"
[ "$failures" -eq "$before" ] || show

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "all loader error cases passed"
