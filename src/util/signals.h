// SignalsBlocked: every signal blocked in the calling thread for the guard's life.
//
// berth takes its own signals (SIGINT, SIGTERM, SIGHUP, SIGCHLD) through a signalfd on
// the thread that supervises, which works only while no other thread leaves them
// unblocked: the kernel delivers a process signal to any thread that does not block
// it. A thread started while this guard is alive inherits the full mask, so a
// library's thread (libpmix's progress thread, berth's own servers) never takes a
// signal meant for berth.
#pragma once

#include <pthread.h>
#include <signal.h>

namespace berth {

class SignalsBlocked {
 public:
  SignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old_);
  }
  ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

 private:
  sigset_t old_;
};

}  // namespace berth
