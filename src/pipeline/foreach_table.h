// Table files: a step's foreach combinations read from a CSV file (spec 04 §3.1), one
// step per row, as a parameter sweep is kept in a spreadsheet:
//
//   foreach = "sweep.csv"          # lr,steps
//                                  # 0.1,100
//                                  # 0.01,200
//
// The format is RFC 4180's: fields separated by commas, a field may be double-quoted
// (then it may hold commas, newlines and "" for a quote), lines end in LF or CRLF, the
// last newline is optional. The first row is the header: the foreach keys. Every other
// row is one combination, in file order, and must have as many fields as the header.
// Blank lines are skipped. Cells are text, taken verbatim.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace berth::pipeline {

struct TableRows {
  std::vector<std::string> keys;                  // the header, in file order
  std::vector<std::vector<std::string>> columns;  // columns[k][row]: key k's value in row
  size_t rows() const { return columns.empty() ? 0 : columns.front().size(); }
};

// Parses `text`, the file at `path` (for messages). Fails (kInvalidInput) naming
// path:line:column on an unclosed quote, a character after a closing quote, a row with
// another number of fields than the header, a header field that is not a foreach key
// (foreach_key_problem()) or is given twice, a file with no header or no row, or more
// than `max_rows` rows.
Result<TableRows> parse_table_file(std::string_view text, const std::string& path, size_t max_rows);

}  // namespace berth::pipeline
