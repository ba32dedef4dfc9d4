#!/usr/bin/env bash
# `cmake --install` of the build tree ctest runs in: the binary, its man page, its bash
# completion and (when built) the Python module land under the prefix, and each works
# from there.
. "$(dirname "$0")/common.sh"
: "${BERTH_BUILD_DIR:?BERTH_BUILD_DIR must name the build tree (run under ctest)}"

P=$T/prefix
set +e
"${CMAKE:-cmake}" --install "$BERTH_BUILD_DIR" --prefix "$P" >"$T/install.out" 2>&1
rc=$?
set -e
expect_eq "cmake --install exits 0" "$rc" 0
((rc == 0)) || { cat "$T/install.out" >&2; finish; }

# The binary: the version and the commit it was built from, as the build tree's says.
if [[ -x $P/bin/berth ]]; then
  ok "bin/berth is installed"
  version=$(sed -n 's/^project(berth VERSION \([0-9.]*\).*/\1/p' "$BERTH_SOURCE_DIR/CMakeLists.txt")
  got=$("$P/bin/berth" --version 2>&1) || fail "the installed berth --version exited $?"
  expect_contains "the installed berth --version names the version" "$got" "berth $version "
  if [[ $got =~ \(commit\ ([0-9a-f]{12}|unknown)\)$ ]]; then
    ok "the installed berth --version names the commit"
  else
    fail "the installed berth --version names no commit: [$got]"
  fi
  expect_eq "the installed berth is the one built" "$got" "$("$BERTH" --version 2>&1)"
else
  fail "bin/berth is not installed (or not executable)"
fi

# The man page: where man looks, and it renders.
page=$P/share/man/man1/berth.1
if [[ -f $page ]]; then
  ok "share/man/man1/berth.1 is installed"
  rendered=$(MANWIDTH=80 man -P cat -l "$page" 2>&1) || fail "man -l of the installed page exited $?"
  expect_contains "the installed man page renders the launch section" "$rendered" "berth launch"
  expect_contains "the installed man page renders its name line" "$rendered" \
    "berth - run many pieces of work inside an HPC allocation"
  # MANPATH from the prefix finds it by name, as `man berth` would.
  found=$(MANPATH=$P/share/man man -w berth 2>&1) || true
  expect_eq "man finds the page under the prefix by name" "$found" "$page"
else
  fail "share/man/man1/berth.1 is not installed"
fi

# The pipeline file's page, beside it in section 5: `man 5 berth-pipeline` finds it.
page5=$P/share/man/man5/berth-pipeline.5
if [[ -f $page5 ]]; then
  ok "share/man/man5/berth-pipeline.5 is installed"
  found=$(MANPATH=$P/share/man man -w 5 berth-pipeline 2>&1) || true
  expect_eq "man finds the pipeline page under the prefix by section and name" "$found" "$page5"
else
  fail "share/man/man5/berth-pipeline.5 is not installed"
fi

# The completion: sourced in bash, it completes berth, and offers the subcommands.
comp=$P/share/bash-completion/completions/berth
if [[ -f $comp ]]; then
  ok "share/bash-completion/completions/berth is installed"
  got=$(bash --norc --noprofile -c '. "$1" && complete -p berth' bash "$comp" 2>&1) || true
  expect_contains "sourced, the completion defines a completion for berth" "$got" "complete -F"
  got=$(bash --norc --noprofile -c '. "$1"; COMP_WORDS=(berth la); COMP_CWORD=1; _berth
    printf "%s\n" "${COMPREPLY[@]}"' bash "$comp" 2>&1) || true
  expect_eq "the installed completion completes a subcommand" "$got" "launch"
else
  fail "share/bash-completion/completions/berth is not installed"
fi

# The Python module, when the build has one (BERTH_PYTHON_SITE, from CMake): under the
# prefix's site-packages, and `import berth` with PYTHONPATH there finds it. A
# sanitizer build's module needs its runtime preloaded (cmake/python.cmake).
module=""
if [[ -n ${BERTH_PYTHON_SITE:-} ]]; then
  module=$(find "$P/$BERTH_PYTHON_SITE" -maxdepth 1 -name 'berth*.so' 2>/dev/null | head -1)
  if [[ -n $module ]]; then
    ok "the Python module is installed under $BERTH_PYTHON_SITE"
    sanitizer=()
    [[ -n ${BERTH_PYTHON_PRELOAD:-} ]] && sanitizer+=("LD_PRELOAD=$BERTH_PYTHON_PRELOAD")
    [[ -n ${BERTH_PYTHON_SANITIZER_OPTIONS:-} ]] && sanitizer+=("$BERTH_PYTHON_SANITIZER_OPTIONS")
    got=$(cd "$T" && env "${sanitizer[@]}" PYTHONPATH="$P/$BERTH_PYTHON_SITE" "${BERTH_PYTHON:-python3}" \
      -c 'import berth; print(berth.__file__); print(berth.engine_version)' 2>&1) ||
      fail "PYTHONPATH=<prefix>/$BERTH_PYTHON_SITE python3 -c 'import berth' failed: $got"
    expect_eq "import berth imports the installed module" "$(sed -n 1p <<<"$got")" "$module"
    expect_eq "the installed module is the berth built" "$(sed -n 2p <<<"$got")" \
      "$("$BERTH" --version 2>&1)"
  else
    fail "the Python module is not installed under $BERTH_PYTHON_SITE"
  fi
fi

# Only those (and the machine descriptions src/topo installs): no libraries, no headers.
others=$(cd "$P" && find . -type f ! -path ./bin/berth ! -path ./share/man/man1/berth.1 \
  ! -path ./share/man/man5/berth-pipeline.5 \
  ! -path ./share/bash-completion/completions/berth ! -path './share/berth/machines/*' \
  ! -path "./${module#"$P/"}" | sort)
expect_eq "nothing else is installed" "$others" ""
finish
