// GpuWatch: the proof that a step ran on the GPUs it was given. A visibility variable
// only asks; a process may open other devices anyway (a hard-coded device, a library that
// resets CUDA_VISIBLE_DEVICES). While steps run, a background thread asks NVML which
// processes hold which GPU or MIG instance, and records each process of a watched step
// that holds a device outside that step's own.
//
// A process belongs to the step whose process group it is in (the step's processes are
// started in a group of their own, whose id is its root's pid), read from
// /proc/<pid>/stat. The watch samples: a process that opens a device and exits between two
// polls is not seen. NVML's pids are the host's, so berth must run in the host's pid
// namespace for them to match.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "topo/nvml.h"
#include "util/result.h"

namespace berth::launch {

// A process of a step that held a device the step was not given.
struct GpuFinding {
  int64_t pid = 0;
  std::string device_uuid;  // "GPU-…" or "MIG-…"
  std::string comm;         // the process's name, as /proc/<pid>/stat gives it
};

// What a watch saw, when it is finished.
struct GpuWatchReport {
  std::vector<GpuFinding> findings;  // once per (pid, device), in the order seen
  std::string error;  // the first poll that failed ("<label>: <NVML's message>"), or empty
};

class GpuWatch {
 public:
  using Ticket = uint64_t;
  static constexpr std::chrono::milliseconds kInterval{500};

  // Polls `nvml` (not null) every `interval` while anything is watched, reading
  // processes' stat files under `proc`.
  explicit GpuWatch(std::shared_ptr<topo::Nvml> nvml,
                    std::chrono::milliseconds interval = kInterval, std::string proc = "/proc");
  // Stops the thread; open tickets are dropped.
  ~GpuWatch();
  GpuWatch(const GpuWatch&) = delete;
  GpuWatch& operator=(const GpuWatch&) = delete;

  // Watches the processes of group `pgid`, which may use the devices `allowed` (GPU or
  // MIG UUIDs; empty: none). `label` names the step in errors.
  Ticket watch(int64_t pgid, std::vector<std::string> allowed, std::string label);

  // Polls once more, then stops watching `ticket` and says what it saw. An unknown
  // ticket gives a report whose error says so.
  GpuWatchReport finish(Ticket ticket);

 private:
  struct Watched {
    int64_t pgid = 0;
    std::vector<std::string> allowed;
    std::string label;
    std::set<std::pair<int64_t, std::string>> reported;
    GpuWatchReport report;
  };

  void run();
  void poll();

  const std::shared_ptr<topo::Nvml> nvml_;
  const std::chrono::milliseconds interval_;
  const std::string proc_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<Ticket, Watched> watched_;
  Ticket next_ = 1;
  bool stop_ = false;
  std::thread thread_;  // started by the first watch()
};

// "process 1234 (python3) used GPU-b…, which it was not given (given: GPU-a…)", or
// "(given: no GPU)" when `given` is empty.
std::string describe_finding(const GpuFinding& finding, const std::vector<std::string>& given);

// What berth reads of /proc/<pid>/stat: the name (field 2, in parentheses, which may
// itself hold spaces and parentheses: it ends at the last ')'), made printable as
// str::printable() does, and the process group (field 5). Fails on text not shaped so.
struct ProcStat {
  std::string comm;
  int64_t pgrp = 0;
};
Result<ProcStat> parse_proc_stat(std::string_view text);

}  // namespace berth::launch
