// RunOutcome: what one `berth run` came to, as the CLI and Python present it.
#pragma once

#include <optional>
#include <string>

#include "pipeline/report.h"
#include "pipeline/report_text.h"
#include "util/result.h"

namespace berth::pipeline {

// An ordinary run has its report and the report's text; a run answered from its
// settled record (`settled`) only the text, the record's steps file and overrides
// (report_text.h); a dry run only its report, whose text is made when asked for.
struct RunOutcome {
  int exit_code = 0;
  std::string worker;  // worker mode: this worker's name
  std::optional<RunReport> report;
  ReportText text;
  bool settled = false;
  size_t steps = 0;  // a settled run's: how many steps its record reports
  double elapsed_s = 0;
  // An edit's rerun that read only the tables whose bytes changed (and those that find
  // values among files), taking every other step from the settled record: how many it
  // read. 0: the file was read whole, or not at all.
  size_t tables_read_again = 0;

  // The report's JSON to `fd` (stdout for --format json).
  Result<void> write_report(int fd) const {
    if (text.empty() && report) {
      std::string made = report_json(*report);
      return files::write_all(fd, made.data(), made.size(), "stdout");
    }
    return text.write(fd, "stdout");
  }
  // The report's JSON, whole.
  Result<std::string> report_json_text() const {
    if (text.empty() && report) return report_json(*report);
    return text.json();
  }
};

}  // namespace berth::pipeline
