#include "launch/directives.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/strings.h"

namespace berth::launch {
namespace {

// Parses a command line's worth of directive flags, as the CLI will: each flag takes
// one argument, except --prepend-env and --append-env, which take two.
Result<std::vector<EnvDirective>> parse_flags(const std::vector<std::string>& args) {
  std::vector<EnvDirective> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    bool two = flag == "--prepend-env" || flag == "--append-env";
    if (i + (two ? 2 : 1) >= args.size()) {
      return fail(Errc::kInternal, "test table: " + flag + " lacks its arguments");
    }
    const std::string& a = args[++i];
    Result<EnvDirective> d = Error(Errc::kInternal, "test table: unknown flag " + flag);
    if (flag == "--set-env") d = parse_set_env(a);
    if (flag == "--add-env") d = parse_add_env(a);
    if (flag == "--unset-env") d = parse_unset_env(a);
    if (flag == "-x") d = parse_export(a);
    if (flag == "--prepend-env") d = parse_prepend_env(a, args[++i]);
    if (flag == "--append-env") d = parse_append_env(a, args[++i]);
    if (!d.ok()) return std::move(d).error();
    out.push_back(std::move(*d));
  }
  return out;
}

// "A=1 B=2", in name order; "(empty)" for no variables.
std::string render(const Env& env) {
  std::string out;
  for (const auto& [name, value] : env.vars()) {
    if (!out.empty()) out += ' ';
    out += name + "=" + value;
  }
  return out.empty() ? "(empty)" : out;
}

Env env_of(const std::vector<std::pair<std::string, std::string>>& vars) {
  Env env;
  for (const auto& [n, v] : vars) env.set(n, v);
  return env;
}

const char* kind_name(EnvDirective::Kind k) {
  switch (k) {
    case EnvDirective::kSet:
      return "set";
    case EnvDirective::kAdd:
      return "add";
    case EnvDirective::kUnset:
      return "unset";
    case EnvDirective::kPrepend:
      return "prepend";
    case EnvDirective::kAppend:
      return "append";
    case EnvDirective::kExport:
      return "export";
  }
  return "?";
}

// The parsed directive as one string: "prepend PATH sep=':' value='/opt/bin'".
std::string render(const EnvDirective& d) {
  std::string out = std::string(kind_name(d.kind)) + " " + d.name + (d.prefix ? "*" : "");
  if (d.kind == EnvDirective::kPrepend || d.kind == EnvDirective::kAppend) {
    out += " sep='" + d.separator + "'";
  }
  if (d.kind != EnvDirective::kUnset && d.kind != EnvDirective::kExport) {
    out += " value='" + d.value + "'";
  }
  return out;
}

std::string parse_outcome(const std::vector<std::string>& args) {
  auto r = parse_flags(args);
  if (!r.ok()) return "error: " + r.error().message();
  std::string out;
  for (const EnvDirective& d : *r) out += (out.empty() ? "" : "; ") + render(d);
  return out;
}

TEST(Directives, ParsesEveryFlag) {
  struct Case {
    std::vector<std::string> args;
    const char* want;
  };
  const Case cases[] = {
      {{"--set-env", "FOO=1"}, "set FOO value='1'"},
      {{"--set-env", "FOO="}, "set FOO value=''"},
      {{"--set-env", "FOO=a=b"}, "set FOO value='a=b'"},  // the first '=' splits
      {{"--set-env", "_x9=v v"}, "set _x9 value='v v'"},
      {{"--add-env", "FOO=1"}, "add FOO value='1'"},
      {{"--unset-env", "FOO"}, "unset FOO"},
      {{"--unset-env", "FOO_*"}, "unset FOO_*"},
      {{"--unset-env", "PATH*"}, "unset PATH*"},
      {{"--prepend-env", "PATH[:]", "/opt/bin"}, "prepend PATH sep=':' value='/opt/bin'"},
      {{"--append-env", "PATH[:]", "/opt/bin"}, "append PATH sep=':' value='/opt/bin'"},
      {{"--prepend-env", "FLAGS[]", "-O2"}, "prepend FLAGS sep='' value='-O2'"},
      {{"--append-env", "FLAGS[ ]", "-g"}, "append FLAGS sep=' ' value='-g'"},
      {{"--append-env", "L[::]", "x"}, "append L sep='::' value='x'"},
      {{"--append-env", "L[[]", "x"}, "append L sep='[' value='x'"},
      {{"--append-env", "L[]]", "x"}, "append L sep=']' value='x'"},  // up to the final ']'
      {{"--prepend-env", "L[:]", ""}, "prepend L sep=':' value=''"},
      {{"-x", "HOME"}, "export HOME"},
      {{"-x", "OMPI_*"}, "export OMPI_*"},
      {{"-x", "FOO=bar"}, "set FOO value='bar'"},  // -x N=V is a set
      {{"-x", "FOO="}, "set FOO value=''"},
      {{"--set-env", "A=1", "--unset-env", "B", "-x", "C"}, "set A value='1'; unset B; export C"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args[0] + " " + c.args[1]);
    EXPECT_EQ(parse_outcome(c.args), c.want);
  }
}

TEST(Directives, RejectsMalformedFlags) {
  struct Case {
    std::vector<std::string> args;
    const char* want;
  };
  const Case cases[] = {
      {{"--set-env", "FOO"}, "error: --set-env: 'FOO' has no '=VALUE'"},
      {{"--set-env", ""}, "error: --set-env: '' has no '=VALUE'"},
      {{"--set-env", "=1"}, "error: --set-env: '=1' has no name before '='"},
      {{"--set-env", "1FOO=x"}, "error: --set-env: '1FOO' is not a variable name"},
      {{"--set-env", "FO-O=x"}, "error: --set-env: 'FO-O' is not a variable name"},
      {{"--set-env", "FOO*=x"}, "error: --set-env: 'FOO*' is not a variable name"},
      {{"--set-env", " FOO=x"}, "error: --set-env: ' FOO' is not a variable name"},
      {{"--set-env", std::string("FOO=a\0b", 7)},
       "error: --set-env: the value of 'FOO' contains a NUL byte"},
      {{"--set-env", "F\nO=x"}, "error: --set-env: 'F\\x0aO' is not a variable name"},
      {{"--add-env", "FOO"}, "error: --add-env: 'FOO' has no '=VALUE'"},
      {{"--add-env", "=1"}, "error: --add-env: '=1' has no name before '='"},
      {{"--unset-env", ""}, "error: --unset-env: needs a variable name"},
      {{"--unset-env", "*"}, "error: --unset-env: '*' has no prefix before the '*'"},
      {{"--unset-env", "FOO=1"}, "error: --unset-env: 'FOO=1' is not a variable name"},
      {{"--unset-env", "1*"}, "error: --unset-env: '1*' is not a variable name followed by '*'"},
      {{"--unset-env", "F*O"}, "error: --unset-env: 'F*O' is not a variable name"},
      {{"--unset-env", "FOO**"},
       "error: --unset-env: 'FOO**' is not a variable name followed by '*'"},
      {{"--prepend-env", "PATH", "/x"}, "error: --prepend-env: 'PATH' is missing '[SEPARATOR]'"},
      {{"--prepend-env", "PATH[:", "/x"}, "error: --prepend-env: 'PATH[:' is missing ']'"},
      {{"--prepend-env", "PATH[", "/x"}, "error: --prepend-env: 'PATH[' is missing ']'"},
      {{"--prepend-env", "PATH[:]x", "/x"}, "error: --prepend-env: 'PATH[:]x' has text after ']'"},
      {{"--prepend-env", "[:]", "/x"}, "error: --prepend-env: '[:]' has no name before '['"},
      {{"--prepend-env", "PA-TH[:]", "/x"}, "error: --prepend-env: 'PA-TH' is not a variable name"},
      {{"--prepend-env", "PATH=[:]", "/x"}, "error: --prepend-env: 'PATH=' is not a variable name"},
      {{"--prepend-env", "", "/x"}, "error: --prepend-env: '' is missing '[SEPARATOR]'"},
      {{"--prepend-env", std::string("P[\0]", 4), "/x"},
       "error: --prepend-env: the separator of 'P' contains a NUL byte"},
      {{"--append-env", "PATH", "/x"}, "error: --append-env: 'PATH' is missing '[SEPARATOR]'"},
      {{"--append-env", "PATH[:", "/x"}, "error: --append-env: 'PATH[:' is missing ']'"},
      {{"--append-env", "P[:]", std::string("a\0", 2)},
       "error: --append-env: the value of 'P' contains a NUL byte"},
      {{"-x", ""}, "error: -x: needs a variable name"},
      {{"-x", "*"}, "error: -x: '*' has no prefix before the '*'"},
      {{"-x", "1X"}, "error: -x: '1X' is not a variable name"},
      {{"-x", "A-*"}, "error: -x: 'A-*' is not a variable name followed by '*'"},
      {{"-x", "=v"}, "error: -x: '=v' has no name before '='"},
      {{"-x", "A*=v"}, "error: -x: 'A*' is not a variable name"},
      // A malformed directive after good ones still fails the whole command line.
      {{"--set-env", "A=1", "--prepend-env", "B", "x"},
       "error: --prepend-env: 'B' is missing '[SEPARATOR]'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(str::printable(c.args[0] + " " + c.args[1]));
    auto r = parse_flags(c.args);
    EXPECT_EQ(parse_outcome(c.args), c.want);
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    }
  }
}

struct ApplyCase {
  const char* what;
  std::vector<std::pair<std::string, std::string>> start;  // the env before
  std::vector<std::string> args;
  const char* want;
};

void run_apply_cases(const std::vector<ApplyCase>& cases, const Env& parent) {
  for (const ApplyCase& c : cases) {
    SCOPED_TRACE(c.what);
    auto d = parse_flags(c.args);
    ASSERT_TRUE(d.ok()) << d.error().message();
    Env env = env_of(c.start);
    auto r = apply_directives(*d, parent, env);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(render(env), c.want);
  }
}

TEST(Directives, SetReplacesAddOnlyFillsTheUnset) {
  // Spec 03 §3: ADD is not SET. Two implementations that differ only in "overwrite"
  // look identical; these cases are the difference.
  run_apply_cases(
      {
          {"set onto unset", {}, {"--set-env", "FOO=1"}, "FOO=1"},
          {"set replaces", {{"FOO", "old"}}, {"--set-env", "FOO=1"}, "FOO=1"},
          {"set to empty", {{"FOO", "old"}}, {"--set-env", "FOO="}, "FOO="},
          {"add onto unset", {}, {"--add-env", "FOO=1"}, "FOO=1"},
          {"add keeps a value", {{"FOO", "old"}}, {"--add-env", "FOO=1"}, "FOO=old"},
          {"add keeps an empty value", {{"FOO", ""}}, {"--add-env", "FOO=1"}, "FOO="},
          {"add after unset fills",
           {{"FOO", "old"}},
           {"--unset-env", "FOO", "--add-env", "FOO=1"},
           "FOO=1"},
          {"add then set", {}, {"--add-env", "FOO=1", "--set-env", "FOO=2"}, "FOO=2"},
          {"set then add", {}, {"--set-env", "FOO=2", "--add-env", "FOO=1"}, "FOO=2"},
      },
      Env());
}

TEST(Directives, OrderIsTheContract) {
  // The header's example, both ways round, and the same for the other pairs.
  run_apply_cases(
      {
          {"prepend then set", {}, {"--prepend-env", "FOO[:]", "x", "--set-env", "FOO=1"}, "FOO=1"},
          {"set then prepend",
           {},
           {"--set-env", "FOO=1", "--prepend-env", "FOO[:]", "x"},
           "FOO=x:1"},
          {"unset then set", {{"FOO", "0"}}, {"--unset-env", "FOO", "--set-env", "FOO=1"}, "FOO=1"},
          {"set then unset",
           {{"FOO", "0"}},
           {"--set-env", "FOO=1", "--unset-env", "FOO"},
           "(empty)"},
          {"append then prepend",
           {{"P", "m"}},
           {"--append-env", "P[:]", "z", "--prepend-env", "P[:]", "a"},
           "P=a:m:z"},
          {"two prepends stack, last in front",
           {{"P", "m"}},
           {"--prepend-env", "P[:]", "b", "--prepend-env", "P[:]", "a"},
           "P=a:b:m"},
          {"two appends stack, last at the end",
           {{"P", "m"}},
           {"--append-env", "P[:]", "y", "--append-env", "P[:]", "z"},
           "P=m:y:z"},
      },
      Env());
}

TEST(Directives, UnsetWithAndWithoutPrefix) {
  const std::vector<std::pair<std::string, std::string>> start = {
      {"FOO", "0"}, {"FOO_A", "1"}, {"FOO_B", "2"}, {"FOOBAR", "3"}, {"FO", "4"}, {"XFOO_C", "5"}};
  run_apply_cases(
      {
          {"exact", start, {"--unset-env", "FOO"}, "FO=4 FOOBAR=3 FOO_A=1 FOO_B=2 XFOO_C=5"},
          {"exact, absent",
           start,
           {"--unset-env", "NOPE"},
           "FO=4 FOO=0 FOOBAR=3 FOO_A=1 FOO_B=2 XFOO_C=5"},
          {"prefix FOO_*", start, {"--unset-env", "FOO_*"}, "FO=4 FOO=0 FOOBAR=3 XFOO_C=5"},
          {"prefix FOO*", start, {"--unset-env", "FOO*"}, "FO=4 XFOO_C=5"},
          {"prefix, none match",
           start,
           {"--unset-env", "ZZ*"},
           "FO=4 FOO=0 FOOBAR=3 FOO_A=1 FOO_B=2 XFOO_C=5"},
          {"prefix of everything", {{"A", "1"}, {"AB", "2"}}, {"--unset-env", "A*"}, "(empty)"},
      },
      Env());
}

TEST(Directives, PathNeverEditsPathext) {
  // Spec 03 §3: a name matches whole, up to and including the '='. A textual prefix
  // match on "PATH" also hits "PATHEXT=..."; every directive on PATH must leave PATHEXT
  // alone, and only an explicit PATH* reaches it.
  const std::vector<std::pair<std::string, std::string>> start = {{"PATH", "/usr/bin"},
                                                                  {"PATHEXT", ".COM;.EXE"}};
  const std::vector<std::pair<std::string, std::string>> only_ext = {{"PATHEXT", ".COM"}};
  Env parent = env_of({{"PATH", "/parent/bin"}, {"PATHEXT", ".PARENT"}});
  run_apply_cases(
      {
          {"set", start, {"--set-env", "PATH=/x"}, "PATH=/x PATHEXT=.COM;.EXE"},
          {"add, PATH set", start, {"--add-env", "PATH=/x"}, "PATH=/usr/bin PATHEXT=.COM;.EXE"},
          {"add, only PATHEXT set", only_ext, {"--add-env", "PATH=/x"}, "PATH=/x PATHEXT=.COM"},
          {"unset", start, {"--unset-env", "PATH"}, "PATHEXT=.COM;.EXE"},
          {"unset, only PATHEXT set", only_ext, {"--unset-env", "PATH"}, "PATHEXT=.COM"},
          {"unset PATH* takes both", start, {"--unset-env", "PATH*"}, "(empty)"},
          {"unset PATHEXT", start, {"--unset-env", "PATHEXT"}, "PATH=/usr/bin"},
          {"prepend",
           start,
           {"--prepend-env", "PATH[:]", "/opt"},
           "PATH=/opt:/usr/bin PATHEXT=.COM;.EXE"},
          {"append",
           start,
           {"--append-env", "PATH[:]", "/opt"},
           "PATH=/usr/bin:/opt PATHEXT=.COM;.EXE"},
          {"prepend, only PATHEXT set",
           only_ext,
           {"--prepend-env", "PATH[:]", "/opt"},
           "PATH=/opt PATHEXT=.COM"},
          {"append, only PATHEXT set",
           only_ext,
           {"--append-env", "PATH[:]", "/opt"},
           "PATH=/opt PATHEXT=.COM"},
          {"-x PATH", start, {"-x", "PATH"}, "PATH=/parent/bin PATHEXT=.COM;.EXE"},
          {"-x PATH*", {}, {"-x", "PATH*"}, "PATH=/parent/bin PATHEXT=.PARENT"},
          {"-x PATHEXT", {}, {"-x", "PATHEXT"}, "PATHEXT=.PARENT"},
      },
      parent);
}

TEST(Directives, PrependAndAppendOntoUnsetOrEmptyGiveTheValueAlone) {
  // No stray separator: "x:" on PATH would put the current directory on the child's
  // search path.
  run_apply_cases(
      {
          {"prepend, unset", {}, {"--prepend-env", "P[:]", "x"}, "P=x"},
          {"append, unset", {}, {"--append-env", "P[:]", "x"}, "P=x"},
          {"prepend, empty", {{"P", ""}}, {"--prepend-env", "P[:]", "x"}, "P=x"},
          {"append, empty", {{"P", ""}}, {"--append-env", "P[:]", "x"}, "P=x"},
          {"multi-char separator", {{"P", "a"}}, {"--append-env", "P[ && ]", "b"}, "P=a && b"},
          {"empty separator", {{"P", "a"}}, {"--prepend-env", "P[]", "b"}, "P=ba"},
          {"empty value", {{"P", "a"}}, {"--append-env", "P[:]", ""}, "P=a:"},
      },
      Env());
}

TEST(Directives, ExportsFromTheParent) {
  Env parent = env_of({{"HOME", "/home/u"},
                       {"OMPI_A", "1"},
                       {"OMPI_B", "2"},
                       {"OMPIX", "3"},
                       {"EMPTY", ""},
                       {"XOMPI_C", "4"}});
  run_apply_cases(
      {
          {"-x N", {}, {"-x", "HOME"}, "HOME=/home/u"},
          {"-x N replaces", {{"HOME", "/root"}}, {"-x", "HOME"}, "HOME=/home/u"},
          {"-x N, empty in parent", {}, {"-x", "EMPTY"}, "EMPTY="},
          {"-x N=V sets", {}, {"-x", "HOME=/elsewhere"}, "HOME=/elsewhere"},
          {"-x PREFIX*", {}, {"-x", "OMPI_*"}, "OMPI_A=1 OMPI_B=2"},
          {"-x PREFIX*, wider", {}, {"-x", "OMPI*"}, "OMPIX=3 OMPI_A=1 OMPI_B=2"},
          {"-x PREFIX*, none match", {{"K", "v"}}, {"-x", "SLURM_*"}, "K=v"},
          {"-x then set", {}, {"-x", "HOME", "--set-env", "HOME=/x"}, "HOME=/x"},
          {"set then -x", {}, {"--set-env", "HOME=/x", "-x", "HOME"}, "HOME=/home/u"},
      },
      parent);
}

TEST(Directives, ExportOfAVariableUnsetInTheParentFailsNamingIt) {
  Env parent = env_of({{"HOME", "/home/u"}});
  auto d = parse_flags({"--set-env", "A=1", "-x", "NOPE"});
  ASSERT_TRUE(d.ok());
  Env env;
  auto r = apply_directives(*d, parent, env);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kNotFound);
  EXPECT_EQ(r.error().message(), "-x NOPE: 'NOPE' is not set in berth's environment");
  // The parent is only read, never written.
  EXPECT_EQ(render(parent), "HOME=/home/u");
}

TEST(Directives, AppTrumpsJob) {
  // Spec 03 §3: the job's directives apply first, then the app's, so an app's wins.
  auto job = parse_flags({"--set-env", "MODE=job", "--prepend-env", "P[:]", "jobdir", "--add-env",
                          "LEVEL=job", "--unset-env", "APPONLY"});
  auto app = parse_flags({"--set-env", "MODE=app", "--prepend-env", "P[:]", "appdir", "--add-env",
                          "LEVEL=app", "--set-env", "APPONLY=1"});
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(app.ok());
  std::vector<EnvDirective> all = *job;
  all.insert(all.end(), app->begin(), app->end());
  Env env = env_of({{"P", "/usr/bin"}});
  ASSERT_TRUE(apply_directives(all, Env(), env).ok());
  // ADD keeps the job's value: the app's ADD found LEVEL already set, as documented.
  EXPECT_EQ(render(env), "APPONLY=1 LEVEL=job MODE=app P=appdir:jobdir:/usr/bin");
}

TEST(Directives, EmptyListLeavesTheEnvironmentAlone) {
  Env env = env_of({{"A", "1"}});
  ASSERT_TRUE(apply_directives({}, env_of({{"B", "2"}}), env).ok());
  EXPECT_EQ(render(env), "A=1");
}

}  // namespace
}  // namespace berth::launch
