#include "launch/gpu_watch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <optional>

#include "util/files.h"
#include "util/strings.h"

namespace berth::launch {

GpuWatch::GpuWatch(std::shared_ptr<topo::Nvml> nvml, std::chrono::milliseconds interval,
                   std::string proc)
    : nvml_(std::move(nvml)), interval_(interval), proc_(std::move(proc)) {
  assert(nvml_ != nullptr);
}

GpuWatch::~GpuWatch() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

GpuWatch::Ticket GpuWatch::watch(int64_t pgid, std::vector<std::string> allowed,
                                 std::string label) {
  std::lock_guard lock(mutex_);
  Ticket ticket = next_++;
  Watched& w = watched_[ticket];
  w.pgid = pgid;
  w.allowed = std::move(allowed);
  w.label = std::move(label);
  // The thread starts with the first step, so that a run without GPU steps has none.
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  wake_.notify_all();
  return ticket;
}

GpuWatchReport GpuWatch::finish(Ticket ticket) {
  // One last poll, for the processes of the group still alive: those of a caller that
  // finishes the watch before its step's processes are gone. A step already reaped
  // has none left, and its record is what the polls while it ran saw.
  poll();
  std::lock_guard lock(mutex_);
  auto it = watched_.find(ticket);
  if (it == watched_.end()) {
    GpuWatchReport unknown;
    unknown.error = fmt::format("GPU watch: no step is watched as ticket {}", ticket);
    return unknown;
  }
  GpuWatchReport report = std::move(it->second.report);
  watched_.erase(it);
  return report;
}

void GpuWatch::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    // Nothing watched: sleep until a step is, rather than ask NVML for nothing.
    wake_.wait(lock, [this] { return stop_ || !watched_.empty(); });
    if (wake_.wait_for(lock, interval_, [this] { return stop_; })) break;
    lock.unlock();
    poll();
    lock.lock();
  }
}

void GpuWatch::poll() {
  // The groups watched now; NVML and /proc are asked without the lock, so that watch()
  // and finish() never wait on a slow driver.
  std::vector<Ticket> tickets;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [ticket, w] : watched_) tickets.push_back(ticket);
  }
  if (tickets.empty()) return;
  auto processes = nvml_->compute_processes();

  // Each process's group and name, read once per poll; one that has exited is skipped.
  std::map<int64_t, std::optional<ProcStat>> stats;
  if (processes.ok()) {
    for (const auto& p : *processes) {
      if (stats.count(p.pid) > 0) continue;
      auto text = files::read_file(fmt::format("{}/{}/stat", proc_, p.pid), 4096);
      auto stat = text.ok() ? parse_proc_stat(*text) : Result<ProcStat>(text.error());
      stats[p.pid] = stat.ok() ? std::optional<ProcStat>(*stat) : std::nullopt;
    }
  }

  std::lock_guard lock(mutex_);
  for (Ticket ticket : tickets) {
    auto it = watched_.find(ticket);
    if (it == watched_.end()) continue;  // finished while NVML was asked
    Watched& w = it->second;
    if (!processes.ok()) {
      if (w.report.error.empty()) {
        w.report.error = fmt::format("{}: {}", w.label, processes.error().message());
      }
      continue;
    }
    for (const auto& p : *processes) {
      const auto& stat = stats[p.pid];
      if (!stat || stat->pgrp != w.pgid) continue;
      bool given = std::find(w.allowed.begin(), w.allowed.end(), p.device_uuid) != w.allowed.end();
      if (given || !w.reported.emplace(p.pid, p.device_uuid).second) continue;
      w.report.findings.push_back({p.pid, p.device_uuid, stat->comm});
    }
  }
}

std::string describe_finding(const GpuFinding& finding, const std::vector<std::string>& given) {
  return fmt::format("process {} ({}) used {}, which it was not given (given: {})", finding.pid,
                     finding.comm, finding.device_uuid,
                     given.empty() ? "no GPU" : str::join(given, ", "));
}

Result<ProcStat> parse_proc_stat(std::string_view text) {
  // "pid (comm) state ppid pgrp ...": the name is whatever lies between the first '('
  // and the last ')', since a process may name itself ") S 1 (".
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return fail(Errc::kInvalidInput,
                fmt::format("stat: no name in parentheses in \"{}\"", str::printable(text)));
  }
  auto fields = str::split_ws(text.substr(close + 1));
  if (fields.size() < 3) {
    return fail(Errc::kInvalidInput, fmt::format("stat: no process group after the name in \"{}\"",
                                                 str::printable(text)));
  }
  auto pgrp = str::parse_uint(fields[2], INT64_MAX);
  if (!pgrp.ok()) {
    return fail(Errc::kInvalidInput,
                fmt::format("stat: process group \"{}\": {}", str::printable(fields[2]),
                            pgrp.error().message()));
  }
  return ProcStat{str::printable(text.substr(open + 1, close - open - 1)),
                  static_cast<int64_t>(*pgrp)};
}

}  // namespace berth::launch
