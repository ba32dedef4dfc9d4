#!/usr/bin/env bash
# berth run PIPELINE NAME…: the steps named, or matched by a shell-style pattern, and
# everything they need, nothing else; a name that selects nothing is an error naming
# it; --dry-run honours the targets too.
. "$(dirname "$0")/common.sh"
copy_quickstart "$T/q"
cd "$T/q"

# states: "name=state ..." of the report in $OUT, in report order.
states() { json "' '.join(s['name'] + '=' + s['state'] for s in j['steps'])"; }

# A dry run of one target names it and what it needs, runs nothing.
run run pipeline.toml count-b --dry-run --format json
expect_eq "dry run of count-b: exit 0" "$RC" 0
expect_eq "dry run of count-b: only it" "$(states)" "count-b=would-run"
[[ ! -e results ]] && ok "dry run: nothing materialised" || fail "dry run materialised results"

# One name: that step alone (it needs nothing).
run run pipeline.toml count-b --format json
expect_eq "count-b: exit 0" "$RC" 0
expect_eq "count-b: only it ran" "$(states)" "count-b=executed"
[[ -e results/count-b/counts && ! -e results/count-a ]] && ok "count-b: only its result" ||
  fail "count-b: results are $(ls results)"

# A pattern: every step it matches.
run run pipeline.toml 'count-[ac]' --format json
expect_eq "count-[ac]: those two" "$(states)" "count-a=executed count-c=executed"

# The last step: everything it needs, the step run before now cached.
run run pipeline.toml total --format json
expect_eq "total: with what it needs" "$(states)" \
  "count-a=cached count-b=cached count-c=cached total=executed"

# Two targets, a pattern among them, in a dry run after everything is stored.
run run pipeline.toml 'count-*' total --dry-run --format json
expect_eq "dry run of everything: all cached" "$(states)" \
  "count-a=cached count-b=cached count-c=cached total=cached"

# An unknown name, and a pattern that matches nothing: errors naming them, nothing run.
expect_bad_input "unknown name" "no step is named 'count-z'" run pipeline.toml count-a count-z
expect_bad_input "pattern matching nothing" "no step matches the pattern 'sum-*'" \
  run pipeline.toml 'sum-*'
finish
