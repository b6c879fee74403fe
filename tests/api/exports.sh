# What libtessel exports is its C API and nothing else: the functions
# defined in its dynamic symbol table are exactly those declared in
# include/tessel/tessel.h (cmake/libtessel.map keeps the runtime's tsl_*
# functions inside). A symbol the header does not declare would become an
# interface programs link against; one it declares but the library lacks
# fails their link.
#   exports.sh LIBTESSEL HEADER
set -euo pipefail
LIB=$1; HEADER=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
declared=$(grep -oE '^[A-Za-z_][A-Za-z0-9_ ]*[ *]tessel_[a-z0-9_]+\(' "$HEADER" | grep -oE 'tessel_[a-z0-9_]+\($' |
  tr -d '(' | sort -u)
[ -n "$declared" ] || fail "found no function declared in $HEADER"
exported=$(nm -D --defined-only "$LIB" | awk '$2 ~ /^[TtWiDdBbRrVv]$/ {print $3}' | sed 's/@.*//' | sort -u)
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
[ -z "$extra" ] || fail "$LIB exports symbols $HEADER does not declare: $(echo $extra | head -c 400)"
[ -z "$missing" ] || fail "$LIB does not export functions $HEADER declares: $missing"
echo "ok: $LIB exports exactly the $(echo "$declared" | wc -l) functions of $(basename "$HEADER")"
