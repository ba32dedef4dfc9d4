// CSV table files for foreach (foreach_table.h, spec 04 §3.1).
#include "pipeline/foreach_table.h"

#include <fmt/format.h>

#include <algorithm>

#include "pipeline/pipeline_file.h"
#include "util/strings.h"

namespace berth::pipeline {
namespace {

// Reads records one at a time, counting lines and columns for messages.
class CsvReader {
 public:
  CsvReader(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  bool done() const { return at_ >= text_.size(); }
  uint32_t line() const { return line_; }

  // The next record's fields into `fields`; false for a blank line (nothing read).
  Result<bool> next(std::vector<std::string>& fields, uint32_t& line) {
    fields.clear();
    line = line_;
    if (text_[at_] == '\n' ||
        (text_[at_] == '\r' && at_ + 1 < text_.size() && text_[at_ + 1] == '\n')) {
      advance_line();
      return false;
    }
    for (;;) {
      std::string field;
      if (at_ < text_.size() && text_[at_] == '"') {
        const uint32_t open_line = line_, open_col = column();
        ++at_;
        for (;;) {
          if (at_ >= text_.size()) {
            return error(open_line, open_col, "a quoted field is never closed");
          }
          char c = text_[at_];
          if (c == '"') {
            if (at_ + 1 < text_.size() && text_[at_ + 1] == '"') {
              field.push_back('"');
              at_ += 2;
              continue;
            }
            ++at_;
            break;
          }
          if (c == '\n') {
            ++line_;
            line_start_ = at_ + 1;
          }
          field.push_back(c);
          ++at_;
        }
        if (at_ < text_.size() && text_[at_] != ',' && text_[at_] != '\n' &&
            !(text_[at_] == '\r' && at_ + 1 < text_.size() && text_[at_ + 1] == '\n')) {
          return error(line_, column(),
                       "a quoted field must end at its closing quote (write \"\" for a quote "
                       "inside it)");
        }
      } else {
        while (at_ < text_.size() && text_[at_] != ',' && text_[at_] != '\n' &&
               !(text_[at_] == '\r' && at_ + 1 < text_.size() && text_[at_ + 1] == '\n')) {
          if (text_[at_] == '"') {
            return error(line_, column(), "a quote inside an unquoted field (quote the field)");
          }
          field.push_back(text_[at_++]);
        }
      }
      fields.push_back(std::move(field));
      if (at_ < text_.size() && text_[at_] == ',') {
        ++at_;
        continue;
      }
      if (at_ < text_.size()) advance_line();
      return true;
    }
  }

  Failure error(uint32_t line, uint32_t column, std::string_view what) const {
    return fail(Errc::kInvalidInput, fmt::format("{}:{}:{}: {}", path_, line, column, what));
  }

 private:
  uint32_t column() const { return static_cast<uint32_t>(at_ - line_start_ + 1); }
  void advance_line() {
    at_ += text_[at_] == '\r' ? 2 : 1;
    ++line_;
    line_start_ = at_;
  }

  std::string_view text_;
  const std::string& path_;
  size_t at_ = 0;
  size_t line_start_ = 0;
  uint32_t line_ = 1;
};

}  // namespace

Result<TableRows> parse_table_file(std::string_view text, const std::string& path,
                                   size_t max_rows) {
  // A UTF-8 byte-order mark, as spreadsheets write one, is not part of the first key.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  CsvReader csv(text, path);
  TableRows t;
  std::vector<std::string> fields;
  uint32_t line = 0;
  while (!csv.done()) {
    BERTH_TRY(bool got, csv.next(fields, line));
    if (!got) continue;
    if (t.keys.empty()) {
      for (const std::string& k : fields) {
        if (auto problem = foreach_key_problem(k)) {
          return csv.error(line, 1, fmt::format("header: {}", *problem));
        }
        if (std::find(t.keys.begin(), t.keys.end(), k) != t.keys.end()) {
          return csv.error(line, 1, fmt::format("header: '{}' is given twice", k));
        }
        t.keys.push_back(k);
      }
      t.columns.resize(t.keys.size());
      continue;
    }
    if (fields.size() != t.keys.size()) {
      return csv.error(line, 1,
                       fmt::format("a row of {} field(s); the header has {} ({})", fields.size(),
                                   t.keys.size(), str::join(t.keys, ",")));
    }
    if (t.rows() >= max_rows) {
      return csv.error(line, 1, fmt::format("more than {} rows", max_rows));
    }
    for (size_t k = 0; k < fields.size(); ++k) t.columns[k].push_back(std::move(fields[k]));
  }
  if (t.keys.empty()) return fail(Errc::kInvalidInput, fmt::format("{}: no header row", path));
  if (t.rows() == 0) {
    return fail(Errc::kInvalidInput,
                fmt::format("{}: a header ({}) and no row", path, str::join(t.keys, ",")));
  }
  return t;
}

}  // namespace berth::pipeline
