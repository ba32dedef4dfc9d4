#!/usr/bin/env bash
# Output forwarding: line-buffered, tagged, timestamped, XML-escaped, per-rank files,
# the trailing partial line flushed; stdin to rank 0, all ranks, or none.
. "$(dirname "$0")/common.sh"

run launch -n 1 --output tag sh -c 'echo out; echo err >&2'
expect_contains "tag stdout" "$OUT" "]<stdout>: out"
expect_contains "tag stderr" "$ERR" "]<stderr>: err"
expect_eq "tag form [job,rank]" "$(printf '%s' "$OUT" | sed -E 's/^\[[0-9]+,0\]<stdout>: out$/ok/')" ok
run launch -n 1 --output tag-detailed echo x
expect_contains "tag-detailed names the node" "$OUT" "[$(hostname -s):"
run launch -n 1 --output timestamp echo x
expect_eq "timestamp form" "$(printf '%s' "$OUT" | grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z \[')" 1
run launch -n 1 --output xml sh -c 'echo "<a & b>"'
expect_eq "xml escaped" "$OUT" '<stdout rank="0">&lt;a &amp; b&gt;</stdout>'
run launch -n 1 printf 'no newline at end'
expect_eq "trailing partial line flushed" "$OUT" "no newline at end"
run launch --bind-to none -n 2 --output-dir "$T/od" sh -c 'echo r$BERTH_RANK; echo e$BERTH_RANK >&2'
expect_eq "output-dir stdout" "$(cat "$T/od/rank.1/stdout")" r1
expect_eq "output-dir stderr" "$(cat "$T/od/rank.0/stderr")" e0
expect_eq "output-dir: nothing on berth's stdout" "$OUT" ""

OUT=$(printf 'line\n' | "$BERTH" launch --bind-to none -n 2 sh -c 'read l && echo "$BERTH_RANK:$l" || echo "$BERTH_RANK:none"' | sort | tr '\n' ' ')
expect_eq "stdin to rank 0 by default" "$OUT" "0:line 1:none "
OUT=$(printf 'line\n' | "$BERTH" launch --bind-to none -n 2 --stdin all sh -c 'read l; echo "$BERTH_RANK:$l"' | sort | tr '\n' ' ')
expect_eq "stdin to all" "$OUT" "0:line 1:line "
OUT=$(printf 'line\n' | "$BERTH" launch -n 1 --stdin none sh -c 'read l && echo got || echo none')
expect_eq "stdin none" "$OUT" none
# Lines of two ranks never interleave mid-line.
run launch --bind-to none -n 2 sh -c 'for i in $(seq 200); do echo "rank$BERTH_RANK-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-$i"; done'
expect_eq "whole lines only" "$(printf '%s\n' "$OUT" | grep -cvE '^rank[01]-a+-[0-9]+$')" 0
finish
