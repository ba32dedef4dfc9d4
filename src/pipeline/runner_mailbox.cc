// The runner threads' mailbox (runner_mailbox.h).
#include "pipeline/runner_mailbox.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace berth::pipeline {

RunnerMailbox::~RunnerMailbox() {
  for (int fd : pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

Result<void> RunnerMailbox::open() {
  if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return fail(Errc::kIo, "pipe: " + std::string(std::strerror(errno)));
  }
  return Ok{};
}

void RunnerMailbox::wake() {
  char c = 1;
  // A full pipe already wakes the scheduler: a write that would block is not needed.
  [[maybe_unused]] ssize_t w = ::write(pipe_[1], &c, 1);
}

StepRunner::Events RunnerMailbox::events_for(size_t step, uint64_t grant) {
  StepRunner::Events ev;
  ev.exited = [this, step, grant] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      mail_.exited.emplace_back(step, grant);
    }
    wake();
  };
  ev.known = [this, step](const std::map<std::string, StepRecord::Output>& outputs) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      mail_.known.emplace_back(step, outputs);
    }
    wake();
  };
  ev.done = [this](StepResult d) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      mail_.done.push_back(std::move(d));
    }
    wake();
  };
  return ev;
}

RunnerMailbox::Mail RunnerMailbox::take() {
  char buf[256];
  while (::read(pipe_[0], buf, sizeof buf) > 0) {
  }
  Mail out;
  std::lock_guard<std::mutex> lock(mu_);
  std::swap(out, mail_);
  return out;
}

}  // namespace berth::pipeline
