# tests/abi/minor.awk — a plugin header (plugin.h or one of its parts in
# plugin/) as an older or a newer minor release would ship it, for building
# plugins against them.
#
#   awk -v mode=trim -f minor.awk plugin/host.h > older/tessel/plugin/host.h
#   awk -v mode=pad  -f minor.awk plugin/host.h > newer/tessel/plugin/host.h
#
# Only sized structs change (those whose first member is `uint32_t size;`),
# the way a minor release changes them: `trim` drops each one's last member
# declaration (an older minor had not added it yet), `pad` appends members
# (a newer minor has added some). Everything else is copied as it is.

# The code on a line, comments removed; `in_comment` carries a comment
# that spans lines.
function code_of(line,   out, at) {
  out = ""
  while (line != "") {
    if (in_comment) {
      at = index(line, "*/")
      if (!at) return out
      line = substr(line, at + 2)
      in_comment = 0
    } else {
      at = index(line, "/*")
      if (!at) return out line
      out = out substr(line, 1, at - 1)
      line = substr(line, at + 2)
      in_comment = 1
    }
  }
  return out
}

function flush_block(   i, last, first, decl) {
  if (!sized) {
    for (i = 1; i <= n; i++) print buf[i]
    return
  }
  if (mode == "pad") {
    for (i = 1; i < n; i++) print buf[i]
    print "  uint64_t tessel_newer_minor_[6];"
    print buf[n]
    return
  }
  # trim: the last declaration is the last line (before the closing one)
  # whose code ends a statement, with its comment lines; it starts after
  # the statement before it
  decl = 0
  for (i = n - 1; i > 1; i--) if (ends[i]) { decl = i; break }
  last = decl
  while (last + 1 < n && !ends[last + 1] && buf[last + 1] !~ /^  [a-z]/) last++
  first = 2
  for (i = decl - 1; i > 1; i--) if (ends[i]) { first = i + 1; break }
  while (first < last && !ends[first] && buf[first] !~ /^  [a-z]/ && buf[first] !~ /^  \/\*/) first++
  for (i = 1; i < first; i++) print buf[i]
  for (i = last + 1; i <= n; i++) print buf[i]
}

BEGIN { inside = 0; in_comment = 0 }
{
  code = code_of($0)
  if (!inside && $0 ~ /^typedef struct [a-z_]+ \{$/) {
    inside = 1; n = 0; sized = 0
  }
  if (!inside) { print; next }
  buf[++n] = $0
  ends[n] = code ~ /;/
  if (n == 2 && $0 ~ /^  uint32_t size;/) sized = 1
  if ($0 ~ /^\} [a-z_]+;$/) { flush_block(); inside = 0 }
}
