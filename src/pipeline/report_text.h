// ReportText: a run report's JSON (spec 04 §8) as a run keeps it — never copied whole.
//
// A report of 10^5 steps is megabytes, and most of them are the bytes of a settled
// record's steps object already on disk. So a report is kept as its head, its steps and
// kReportTail, where the steps are one of:
//   - text this run made (`steps`);
//   - a steps object's bytes (`mapped`, or the file `file` of `file_bytes` bytes when not
//     mapped) with `overrides` in place: the entries of the steps that differ from it.
// The writers below send such a file by the kernel around the overrides.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipeline/settled.h"
#include "util/files.h"
#include "util/result.h"

namespace berth::pipeline {

struct ReportText {
  std::string head;   // report_json_head()
  std::string steps;  // the steps this run wrote; empty when they are an object's
  std::string file;   // the steps object's file, when the steps are it
  size_t file_bytes = 0;
  files::SharedBytes mapped;  // the object's bytes, when mapped (preferred to `file`)
  std::vector<SettledOverride> overrides;

  bool empty() const { return head.empty(); }
  // The JSON to `fd` (`what` names it in errors).
  Result<void> write(int fd, const std::string& what) const;
  // The JSON, whole.
  Result<std::string> json() const;
};

// The JSON of head, the steps file open as `steps_fd` (`object_bytes` long) with
// `overrides` in place, and kReportTail, to `path`, atomically (a temporary file renamed
// over it), not fsynced: the store's runs row is the durable record.
Result<void> write_report_file(const std::string& path, std::string_view head, int steps_fd,
                               size_t object_bytes, const std::vector<SettledOverride>& overrides);

// head, steps and kReportTail to `path`, the same way.
Result<void> write_pieces_file(const std::string& path, std::string_view head,
                               std::string_view steps);

}  // namespace berth::pipeline
