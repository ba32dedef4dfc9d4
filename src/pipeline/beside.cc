// Files beside the pipeline, found in commands (beside.h, spec 04 §3.7).
#include "pipeline/beside.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "pipeline/canonical.h"

namespace berth::pipeline {
namespace {

constexpr std::string_view kFileChars = "/.";
// Where a shell word ends, besides blanks.
constexpr std::string_view kShellBreaks = ";|&<>()";

// `word` as a path relative to the pipeline's directory, or "" when it cannot name a
// file beside it.
std::string candidate(std::string word) {
  std::erase_if(word, [](char c) { return c == '\'' || c == '"'; });
  if (word.empty() || word.find_first_of(kFileChars) == std::string::npos) return "";
  if (word.front() == '-' || word.front() == '/' || word.front() == '~') return "";
  if (word.find_first_of("*?[$=`\\{}") != std::string::npos) return "";
  std::string norm = std::filesystem::path(word).lexically_normal().string();
  if (norm.empty() || norm == "." || norm.starts_with("..") || norm.back() == '/') return "";
  std::string first = norm.substr(0, norm.find('/'));
  if (first == "in" || first == "out" || first == ".berth") return "";
  return norm;
}

}  // namespace

bool BesideFiles::may_name_files(const StepTable& t) {
  for (const Template& w : t.command) {
    if (w.literal_has_any(kFileChars)) return true;
  }
  for (const auto& [output, form] : t.canonical) {
    if (form.starts_with("command:") && form.find_first_of(kFileChars, 8) != std::string::npos) {
      return true;
    }
  }
  for (size_t k = 0; k < t.keys.size(); ++k) {
    bool used = std::any_of(t.command.begin(), t.command.end(),
                            [k](const Template& w) { return w.uses_key(k); });
    if (!used) continue;
    for (size_t i = 0; i < t.values[k].size(); ++i) {
      if (t.values[k][i].find_first_of(kFileChars) != std::string_view::npos) return true;
    }
  }
  return false;
}

bool BesideFiles::is_file(const std::string& relative) {
  auto [it, fresh] = known_.emplace(relative, false);
  if (fresh) {
    std::string path = dir_ == "." ? relative : dir_ + "/" + relative;
    struct stat st {};
    it->second = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  }
  return it->second;
}

std::vector<std::string> BesideFiles::named_by(const Step& step) {
  std::vector<std::string> words;
  for (const Word& w : step.command()) {
    if (!step.shell) {
      // An argv word: a path only when it is all text.
      if (w.size() == 1 && w[0].kind == Segment::Kind::kText) words.push_back(w[0].value);
      continue;
    }
    std::string cur;
    bool berth_path = false;  // the word holds {in.X}/{out.X}
    auto end_word = [&] {
      if (!berth_path && !cur.empty()) words.push_back(cur);
      cur.clear();
      berth_path = false;
    };
    for (const Segment& s : w) {
      if (s.kind != Segment::Kind::kText) {
        berth_path = true;
        continue;
      }
      for (char c : s.value) {
        if (c == ' ' || c == '\t' || c == '\n' || kShellBreaks.find(c) != std::string_view::npos) {
          end_word();
        } else {
          cur.push_back(c);
        }
      }
    }
    end_word();
  }
  // A command: canonicaliser runs in the staging directory too (canonical.h): a script
  // its argv names is staged and keyed like the command's.
  for (const auto& [output, form] : step.canonical) {
    if (!form.starts_with("command:")) continue;
    auto parsed = parse_canonical_form(form);
    if (parsed.ok()) words.insert(words.end(), parsed->argv.begin(), parsed->argv.end());
  }
  std::vector<std::string> out;
  for (const std::string& w : words) {
    std::string c = candidate(w);
    if (!c.empty() && is_file(c)) out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string beside_input_name(const std::string& relative) { return "./" + relative; }

std::vector<std::string> staged_beside(const Step& step) {
  std::vector<std::string> top;
  for (const auto& [name, input] : step.inputs) {
    std::string rel = beside_path_of(name);
    if (rel.empty()) continue;
    size_t slash = rel.find('/');
    top.push_back(slash == std::string::npos ? rel : rel.substr(0, slash + 1));
  }
  return top;
}

std::string beside_path_of(const std::string& input_name) {
  return input_name.starts_with("./") ? input_name.substr(2) : std::string();
}

}  // namespace berth::pipeline
