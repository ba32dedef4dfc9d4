#!/usr/bin/env bash
# Text about the project only: no source, test, doc, script or data file of the
# repository cites the documents berth was designed from or an issue number. A reason
# is given as the reason itself, or as berth's own spec section (spec 03 §5). The
# patterns are built from pieces, so this file does not match them itself.
. "$(dirname "$0")/common.sh"

doc="se""ed"
num="iss""ue"
hits=$(git -C "$BERTH_SOURCE_DIR" grep --untracked -n -I -i -E \
  -e "\b${doc}s? ?0[0-9][0-9]\b" -e "\b${doc}'s\b" -e "\bthe ${doc}\b" \
  -e "\b${num}s? ?#?[0-9]+" -e "\(${num}\b" \
  -- . ':!tests/fuzz/corpus' 2>/dev/null || true)
if [[ -z $hits ]]; then
  ok "no file cites a design document or an issue number"
else
  fail "these lines cite a design document or an issue number:"$'\n'"$hits"
fi
finish
