// The PMI server over real sockets: fake ranks speaking PMI-1 and PMI-2 byte for byte,
// and real MPICH programs (compiled here with mpicc.mpich) started through the spawner.
#include "wireup/pmi_server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "launch/spawn.h"
#include "wireup/pmi_mapping.h"

namespace berth::wireup {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Kind = RankEvent::Kind;

// The events a job's sink received, for the test thread to wait on.
class EventLog {
 public:
  EventSink sink() {
    return [this](const RankEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(e);
      changed_.notify_all();
    };
  }
  // The events once there are at least `n` (or what there is after 10 s).
  std::vector<RankEvent> wait(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(10), [&] { return events_.size() >= n; });
    return events_;
  }
  std::vector<RankEvent> now() { return wait(0); }
  // "init 0", "abort 1 7 msg", "refused 2 text".
  static std::string str(const RankEvent& e) {
    const char* kinds[] = {"init", "finalize", "abort", "refused"};
    std::string s = fmt::format("{} {}", kinds[static_cast<int>(e.kind)], e.rank);
    if (e.kind == Kind::kAbort) s += fmt::format(" {}", e.code);
    if (!e.message.empty()) s += " " + e.message;
    return s;
  }
  std::vector<std::string> strs(size_t n) {
    std::vector<std::string> out;
    for (const RankEvent& e : wait(n)) out.push_back(str(e));
    return out;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<RankEvent> events_;
};

// A PMI-2 message as MPICH's clients frame it: length left-aligned in six characters.
std::string frame2(std::string_view body) {
  return fmt::format("{:<6}", body.size()) + std::string(body);
}

// A fake rank: the other end of a PMI socket.
class Client {
 public:
  explicit Client(int fd) : fd_(fd) {}
  Client(const Client&) = delete;
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  void send(std::string_view s) {
    while (!s.empty()) {
      // MSG_NOSIGNAL: writing to a socket the server closed must not kill the test.
      ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      s.remove_prefix(static_cast<size_t>(n));
    }
  }
  // One PMI-1 line without its newline, or "EOF" / "TIMEOUT".
  std::string line() {
    size_t nl;
    while ((nl = buf_.find('\n')) == std::string::npos) {
      if (std::string why = more(); !why.empty()) return why;
    }
    std::string out = buf_.substr(0, nl);
    buf_.erase(0, nl + 1);
    return out;
  }
  // One PMI-2 message's body, or "EOF" / "TIMEOUT".
  std::string message() {
    while (buf_.size() < 6) {
      if (std::string why = more(); !why.empty()) return why;
    }
    size_t n = std::stoul(buf_.substr(0, 6));
    while (buf_.size() < 6 + n) {
      if (std::string why = more(); !why.empty()) return why;
    }
    std::string out = buf_.substr(6, n);
    buf_.erase(0, 6 + n);
    return out;
  }
  std::string ask(std::string_view request) {
    send(request);
    return line();
  }
  std::string ask2(std::string_view body) {
    send(frame2(body));
    return message();
  }
  // True when nothing arrives (and the socket stays open) for `ms`.
  bool quiet(int ms) { return buf_.empty() && more(ms) == "TIMEOUT"; }
  bool at_eof() { return line() == "EOF"; }

 private:
  std::string more(int timeout_ms = 10000) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return "TIMEOUT";
    char b[4096];
    ssize_t n = ::read(fd_, b, sizeof b);
    if (n <= 0) return "EOF";
    buf_.append(b, static_cast<size_t>(n));
    return "";
  }
  int fd_;
  std::string buf_;
};

class PmiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = PmiServer::start();
    ASSERT_TRUE(s.ok()) << s.error().message();
    server_ = std::move(*s);
  }
  // Serves `map`; one fake client per rank.
  std::vector<std::unique_ptr<Client>> serve(const JobMap& map) {
    auto job = server_->add_job(map, log_.sink());
    EXPECT_TRUE(job.ok()) << job.error().message();
    std::vector<std::unique_ptr<Client>> clients;
    if (!job.ok()) return clients;
    for (int fd : job->child_fds) clients.push_back(std::make_unique<Client>(fd));
    return clients;
  }

  EventLog log_;  // outlives the server
  std::unique_ptr<PmiServer> server_;
};

TEST_F(PmiServerTest, AddJobRefusesWhatPmiCannotServe) {
  ASSERT_TRUE(server_->add_job(JobMap::local("j1", "n", {1}), log_.sink()).ok());
  struct Case {
    JobMap map;
    std::string want;
  } cases[] = {
      {JobMap::local("j1", "n", {1}), "job id j1 is already served"},
      {JobMap::local("", "n", {1}), "the job id is empty"},
      {JobMap::local("a b", "n", {1}), "the job id 'a b' holds ' ', which PMI cannot carry"},
      {JobMap::local("a;b", "n", {1}), "the job id 'a;b' holds ';', which PMI cannot carry"},
      {JobMap::local(std::string(256, 'x'), "n", {1}),
       "the job id is 256 bytes long; PMI allows 255"},
      {JobMap::local("j2", "n", {}), "job j2 has no ranks"},
  };
  for (const Case& c : cases) {
    auto r = server_->add_job(c.map, log_.sink());
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
    EXPECT_EQ(r.error().message(), c.want);
  }
  JobMap off = JobMap::local("j3", "n", {2});
  off.procs[1].node = 1;
  auto r = server_->add_job(off, log_.sink());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "job j3: rank 1 is on node 1, not one of its 1 nodes");
  server_->remove_job("j1");
  server_->remove_job("never-added");  // ignored
}

TEST_F(PmiServerTest, EnvNamesTheDescriptorRankAndSize) {
  auto job = server_->add_job(JobMap::local("j", "n", {3}), log_.sink());
  ASSERT_TRUE(job.ok());
  using Env = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(job->env(2, 3),
            (Env{{"PMI_FD", "3"}, {"PMI_RANK", "2"}, {"PMI_SIZE", "3"}, {"PMI_SPAWNED", "0"}}));
  ASSERT_EQ(job->child_fds.size(), 3u);
  for (int fd : job->child_fds) {
    EXPECT_EQ(::fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    EXPECT_EQ(::fcntl(fd, F_GETFL) & O_NONBLOCK, 0) << "the rank's end blocks";
    ::close(fd);
  }
}

// (a) What MPICH's PMI-1 client sends, in its order, from three ranks of two apps.
TEST_F(PmiServerTest, Pmi1JobFromInitToFinalize) {
  auto c = serve(JobMap::local("berth.1.1", "n", {2, 1}));
  ASSERT_EQ(c.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    Client& k = *c[static_cast<size_t>(r)];
    EXPECT_EQ(k.ask("cmd=init pmi_version=1 pmi_subversion=1\n"),
              "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
    EXPECT_EQ(k.ask("cmd=get_maxes\n"), "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024");
    EXPECT_EQ(k.ask("cmd=get_appnum\n"), fmt::format("cmd=appnum appnum={}", r < 2 ? 0 : 1));
    EXPECT_EQ(k.ask("cmd=get_my_kvsname\n"), "cmd=my_kvsname kvsname=berth.1.1");
    EXPECT_EQ(k.ask("cmd=get kvsname=berth.1.1 key=PMI_process_mapping\n"),
              "cmd=get_result rc=0 msg=success value=(vector,(0,1,3))");
    EXPECT_EQ(k.ask("cmd=get_universe_size\n"), "cmd=universe_size size=3");
    EXPECT_EQ(
        k.ask(fmt::format("cmd=put kvsname=berth.1.1 key=-bcast-1-{} value=2F6465{}\n", r, r)),
        "cmd=put_result rc=0 msg=success");
  }
  // The barrier completes only when the last rank enters, and then answers everyone.
  c[0]->send("cmd=barrier_in\n");
  c[2]->send("cmd=barrier_in\n");
  EXPECT_TRUE(c[0]->quiet(100));
  c[1]->send("cmd=barrier_in\n");
  for (auto& k : c) EXPECT_EQ(k->line(), "cmd=barrier_out");
  for (int r = 0; r < 3; ++r) {
    int peer = (r + 1) % 3;
    EXPECT_EQ(c[static_cast<size_t>(r)]->ask(
                  fmt::format("cmd=get kvsname=berth.1.1 key=-bcast-1-{}\n", peer)),
              fmt::format("cmd=get_result rc=0 msg=success value=2F6465{}", peer));
  }
  EXPECT_EQ(c[0]->ask("cmd=get kvsname=berth.1.1 key=nope\n"),
            "cmd=get_result rc=-1 msg=key_nope_not_found value=unknown");
  EXPECT_EQ(c[0]->ask("cmd=get kvsname=berth.1.1 key=PMI_dead_processes\n"),
            "cmd=get_result rc=0 msg=success value=");
  for (auto& k : c) {
    EXPECT_EQ(k->ask("cmd=finalize\n"), "cmd=finalize_ack");
    k.reset();  // MPICH closes its end after finalize_ack
  }
  EXPECT_THAT(log_.strs(6),
              ElementsAre("init 0", "init 1", "init 2", "finalize 0", "finalize 1", "finalize 2"));
}

// (a) What MPICH's PMI-2 client sends: the PMI-1 init line, then framed messages.
TEST_F(PmiServerTest, Pmi2JobFromInitToFinalize) {
  auto c = serve(JobMap::local("berth.1.2", "n", {3}));
  ASSERT_EQ(c.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    Client& k = *c[static_cast<size_t>(r)];
    EXPECT_EQ(k.ask("cmd=init pmi_version=2 pmi_subversion=0\n"),
              "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0");
    EXPECT_EQ(k.ask2(fmt::format("cmd=fullinit;pmirank={};threaded=FALSE;", r)),
              fmt::format("cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank={};size=3;"
                          "appnum=0;debugged=FALSE;pmiverbose=FALSE;rc=0;",
                          r));
    EXPECT_EQ(k.ask2("cmd=job-getid;"), "cmd=job-getid-response;jobid=berth.1.2;rc=0;");
    EXPECT_EQ(k.ask2("cmd=info-getjobattr;key=PMI_process_mapping;"),
              "cmd=info-getjobattr-response;found=TRUE;value=(vector,(0,1,3));rc=0;");
    EXPECT_EQ(k.ask2("cmd=info-getjobattr;key=universeSize;"),
              "cmd=info-getjobattr-response;found=TRUE;value=3;rc=0;");
    EXPECT_EQ(k.ask2("cmd=info-getjobattr;key=PMI_hwloc_xmlfile;"),
              "cmd=info-getjobattr-response;found=FALSE;rc=0;");
    EXPECT_EQ(k.ask2(fmt::format("cmd=kvs-put;key=card{};value=a;;b{};", r, r)),
              "cmd=kvs-put-response;rc=0;");
  }
  // A threaded client tags its requests; every answer carries the tag back.
  c[0]->send(frame2("cmd=kvs-fence;thrid=0x7f00;"));
  c[1]->send(frame2("cmd=kvs-fence;"));
  EXPECT_TRUE(c[0]->quiet(100));
  c[2]->send(frame2("cmd=kvs-fence;"));
  EXPECT_EQ(c[0]->message(), "cmd=kvs-fence-response;thrid=0x7f00;rc=0;");
  EXPECT_EQ(c[1]->message(), "cmd=kvs-fence-response;rc=0;");
  EXPECT_EQ(c[2]->message(), "cmd=kvs-fence-response;rc=0;");
  EXPECT_EQ(c[1]->ask2("cmd=kvs-get;jobid=berth.1.2;srcid=-1;key=card2;"),
            "cmd=kvs-get-response;found=TRUE;value=a;;b2;rc=0;");
  EXPECT_EQ(c[1]->ask2("cmd=kvs-get;thrid=t1;jobid=berth.1.2;srcid=-1;key=none;"),
            "cmd=kvs-get-response;thrid=t1;found=FALSE;rc=0;");
  EXPECT_EQ(c[1]->ask2("cmd=kvs-get;jobid=other;srcid=-1;key=card2;"),
            "cmd=kvs-get-response;rc=-1;errmsg=jobid other is not this job's;");
  for (auto& k : c) {
    EXPECT_EQ(k->ask2("cmd=finalize;"), "cmd=finalize-response;rc=0;");
    k.reset();
  }
  // kInit comes with the init line, once.
  EXPECT_THAT(log_.strs(6),
              ElementsAre("init 0", "init 1", "init 2", "finalize 0", "finalize 1", "finalize 2"));
}

TEST_F(PmiServerTest, Pmi2FullinitFromAnotherRankIsRefused) {
  auto c = serve(JobMap::local("j", "n", {2}));
  EXPECT_EQ(c[1]->ask2("cmd=fullinit;pmirank=0;threaded=FALSE;"),
            "cmd=fullinit-response;rc=-1;errmsg=pmirank 0 is not the rank of this PMI socket "
            "(1);");
}

TEST_F(PmiServerTest, Pmi2NodeAttributeWaitIsAnsweredByAPut) {
  auto c = serve(JobMap::local("j", "n", {2}));
  c[1]->send(frame2("cmd=info-getnodeattr;thrid=w;key=shm;wait=TRUE;"));
  EXPECT_EQ(c[0]->ask2("cmd=info-getnodeattr;key=shm;wait=FALSE;"),
            "cmd=info-getnodeattr-response;found=FALSE;rc=0;");
  EXPECT_TRUE(c[1]->quiet(100));
  EXPECT_EQ(c[0]->ask2("cmd=info-putnodeattr;key=shm;value=/dev/shm/x;"),
            "cmd=info-putnodeattr-response;rc=0;");
  EXPECT_EQ(c[1]->message(),
            "cmd=info-getnodeattr-response;thrid=w;found=TRUE;value=/dev/shm/x;rc=0;");
  EXPECT_EQ(c[1]->ask2("cmd=info-getnodeattr;key=shm;wait=TRUE;"),
            "cmd=info-getnodeattr-response;found=TRUE;value=/dev/shm/x;rc=0;");
}

TEST_F(PmiServerTest, Pmi1AndPmi2RanksShareTheKeyValueSpaceAndBarrier) {
  auto c = serve(JobMap::local("j", "n", {2}));
  EXPECT_EQ(c[0]->ask("cmd=put kvsname=j key=a value=1\n"), "cmd=put_result rc=0 msg=success");
  EXPECT_EQ(c[1]->ask2("cmd=kvs-put;key=b;value=2;"), "cmd=kvs-put-response;rc=0;");
  c[0]->send("cmd=barrier_in\n");
  c[1]->send(frame2("cmd=kvs-fence;"));
  EXPECT_EQ(c[0]->line(), "cmd=barrier_out");
  EXPECT_EQ(c[1]->message(), "cmd=kvs-fence-response;rc=0;");
  EXPECT_EQ(c[0]->ask("cmd=get kvsname=j key=b\n"), "cmd=get_result rc=0 msg=success value=2");
  EXPECT_EQ(c[1]->ask2("cmd=kvs-get;key=a;"), "cmd=kvs-get-response;found=TRUE;value=1;rc=0;");
  // A value PMI-1 cannot carry back is refused, not sent broken.
  EXPECT_EQ(c[1]->ask2("cmd=kvs-put;key=s;value=a b;"), "cmd=kvs-put-response;rc=0;");
  EXPECT_EQ(c[0]->ask("cmd=get kvsname=j key=s\n"),
            "cmd=get_result rc=-1 msg=value_of_s_cannot_be_sent_over_PMI-1 value=unknown");
}

TEST_F(PmiServerTest, MessagesArriveInPiecesAndTogether) {
  auto c = serve(JobMap::local("j", "n", {1}));
  std::string two =
      "cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_appnum\n" + frame2("cmd=job-getid;");
  for (char ch : two) c[0]->send(std::string_view(&ch, 1));
  EXPECT_EQ(c[0]->line(), "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
  EXPECT_EQ(c[0]->line(), "cmd=appnum appnum=0");
  EXPECT_EQ(c[0]->message(), "cmd=job-getid-response;jobid=j;rc=0;");
  // MPICH's PMI-2 client before 4.1 sends six undefined bytes after each message.
  std::string quirk = "cmd=job-getid;";
  quirk = fmt::format("{:<6}", quirk.size() + 6) + quirk + "\x01\x02zz;=";
  c[0]->send(quirk + "cmd=get_appnum\n");
  EXPECT_EQ(c[0]->message(), "cmd=job-getid-response;jobid=j;rc=0;");
  EXPECT_EQ(c[0]->line(), "cmd=appnum appnum=0");
}

TEST_F(PmiServerTest, BadArgumentsAreAnsweredWithAFailure) {
  auto c = serve(JobMap::local("j", "n", {1}));
  EXPECT_EQ(c[0]->ask("cmd=init pmi_version=3 pmi_subversion=0\n"),
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1");
  EXPECT_EQ(c[0]->ask("cmd=put kvsname=other key=a value=b\n"),
            "cmd=put_result rc=-1 msg=kvsname_is_not_this_job_s");
  EXPECT_EQ(c[0]->ask("cmd=put kvsname=j value=b\n"), "cmd=put_result rc=-1 msg=no_key");
  EXPECT_EQ(c[0]->ask(fmt::format("cmd=put kvsname=j key={} value=b\n", std::string(65, 'k'))),
            "cmd=put_result rc=-1 msg=key_longer_than_64");
  EXPECT_EQ(c[0]->ask(fmt::format("cmd=put kvsname=j key=k value={}\n", std::string(1025, 'v'))),
            "cmd=put_result rc=-1 msg=value_longer_than_1024");
  EXPECT_EQ(c[0]->ask("cmd=get kvsname=other key=a\n"),
            "cmd=get_result rc=-1 msg=kvsname_is_not_this_job_s value=unknown");
  EXPECT_EQ(c[0]->ask2(fmt::format("cmd=kvs-put;key=k;value={};", std::string(1025, 'v'))),
            "cmd=kvs-put-response;rc=-1;errmsg=value longer than 1024;");
  EXPECT_TRUE(log_.now().empty()) << "bad arguments are answered, not reported";
}

// (b) MPI_Abort: reported with its code, never answered (the rank waits to be ended).
TEST_F(PmiServerTest, AbortReachesTheSinkWithItsCode) {
  auto c = serve(JobMap::local("j", "n", {3}));
  c[1]->send("cmd=abort exitcode=7\n");
  c[2]->send(frame2("cmd=abort;isworld=TRUE;msg=application called MPI_Abort;;  oops;"));
  c[0]->send("cmd=abort\n");
  auto events = log_.wait(3);
  ASSERT_EQ(events.size(), 3u);
  std::vector<std::string> got;
  for (const RankEvent& e : events) got.push_back(EventLog::str(e));
  std::sort(got.begin(), got.end());
  EXPECT_THAT(
      got, ElementsAre("abort 0 1", "abort 1 7", "abort 2 1 application called MPI_Abort;  oops"));
  EXPECT_TRUE(c[1]->quiet(100)) << "abort is not answered and the socket stays open";
}

// (c) Spawn and name publishing: an answer at once, and a report.
TEST_F(PmiServerTest, SpawnIsRefusedWithAnAnswer) {
  auto c = serve(JobMap::local("j", "n", {2}));
  // MPI_Comm_spawn_multiple with two commands: two blocks, one answer after the last.
  c[1]->send(
      "mcmd=spawn\nnprocs=2\nexecname=./worker\ntotspawns=2\nspawnssofar=1\narg1=a b\n"
      "argcnt=1\npreput_num=0\ninfo_num=0\nendcmd\n");
  EXPECT_TRUE(c[1]->quiet(100));
  c[1]->send(
      "mcmd=spawn\nnprocs=1\nexecname=./other\ntotspawns=2\nspawnssofar=2\nargcnt=0\n"
      "preput_num=0\ninfo_num=0\nendcmd\n");
  EXPECT_EQ(c[1]->line(), "cmd=spawn_result rc=-1 msg=berth_does_not_serve_spawn");
  EXPECT_EQ(c[0]->ask("cmd=publish_name service=s port=p\n"),
            "cmd=publish_result rc=-1 msg=berth_does_not_serve_name_publishing");
  EXPECT_EQ(c[0]->ask("cmd=lookup_name service=s\n"),
            "cmd=lookup_result rc=-1 msg=berth_does_not_serve_name_publishing");
  EXPECT_EQ(c[0]->ask2("cmd=spawn;thrid=9;ncmds=1;subcmd=./w;maxprocs=1;argc=0;"),
            "cmd=spawn-response;thrid=9;rc=-1;errmsg=berth does not serve spawn;");
  EXPECT_EQ(c[0]->ask2("cmd=job-connect;jobid=x;"),
            "cmd=job-connect-response;rc=-1;errmsg=berth does not serve connecting jobs;");
  EXPECT_THAT(
      log_.strs(5),
      ElementsAre(
          "refused 1 rank 1 asked to spawn processes (MPI_Comm_spawn); berth does not serve spawn",
          "refused 0 rank 0 asked to publish a name (MPI_Publish_name); berth does not serve "
          "name publishing",
          "refused 0 rank 0 asked to look up a name (MPI_Lookup_name); berth does not serve "
          "name publishing",
          "refused 0 rank 0 asked to spawn processes (MPI_Comm_spawn); berth does not serve spawn",
          "refused 0 rank 0 asked to connect to another job (MPI_Comm_connect); berth does not "
          "serve connecting jobs"));
}

TEST_F(PmiServerTest, UnknownCommandsAreAnsweredAndReported) {
  auto c = serve(JobMap::local("j", "n", {1}));
  EXPECT_EQ(c[0]->ask("cmd=getbyidx kvsname=j idx=0\n"),
            "cmd=getbyidx_result rc=-1 msg=berth_does_not_serve_getbyidx");
  EXPECT_EQ(c[0]->ask2("cmd=ring;count=1;"),
            "cmd=ring-response;rc=-1;errmsg=berth does not serve ring;");
  EXPECT_THAT(log_.strs(2),
              ElementsAre("refused 0 rank 0 sent the PMI-1 command 'getbyidx', which berth "
                          "does not serve",
                          "refused 0 rank 0 sent the PMI-2 command 'ring', which berth does "
                          "not serve"));
}

// (d) Bytes that are not PMI end that rank's connection, and only that one.
TEST_F(PmiServerTest, GarbageEndsThatConnectionOnly) {
  auto c = serve(JobMap::local("j", "n", {3}));
  c[1]->send(std::string("\x01\xffgarbage\n", 10));
  EXPECT_TRUE(c[1]->at_eof());
  c[2]->send("12x   cmd=");
  EXPECT_TRUE(c[2]->at_eof());
  EXPECT_EQ(c[0]->ask("cmd=get_appnum\n"), "cmd=appnum appnum=0");
  EXPECT_THAT(log_.strs(2),
              ElementsAre("refused 1 rank 1 sent bytes that are not PMI (position 1: expected "
                          "'cmd=', found '\\x01\\xffgarbag'); berth closed its PMI connection",
                          "refused 2 rank 2 sent bytes that are not PMI (position 3: expected a "
                          "digit or space in the message length, found 'x'); berth closed its "
                          "PMI connection"));
}

TEST_F(PmiServerTest, EnteringTheBarrierTwiceEndsTheConnection) {
  auto c = serve(JobMap::local("j", "n", {2}));
  c[0]->send("cmd=barrier_in\ncmd=barrier_in\n");
  EXPECT_TRUE(c[0]->at_eof());
  EXPECT_THAT(log_.strs(1), ElementsAre("refused 0 rank 0 entered the PMI barrier again before "
                                        "it completed; berth closed its PMI connection"));
}

// (e) remove_job while a rank waits: its socket closes, and the sink hears nothing more.
TEST_F(PmiServerTest, RemoveJobWhileARankWaitsInTheBarrier) {
  auto c = serve(JobMap::local("j", "n", {2}));
  EXPECT_EQ(c[0]->ask("cmd=init pmi_version=1 pmi_subversion=1\n"),
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
  c[0]->send("cmd=barrier_in\n");
  EXPECT_TRUE(c[0]->quiet(50));
  server_->remove_job("j");
  EXPECT_TRUE(c[0]->at_eof());
  c[1]->send("cmd=init pmi_version=1 pmi_subversion=1\ncmd=barrier_in\n");
  EXPECT_TRUE(c[1]->at_eof());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_THAT(log_.strs(0), ElementsAre("init 0"));
  // The id is free again.
  EXPECT_TRUE(server_->add_job(JobMap::local("j", "n", {1}), log_.sink()).ok());
}

TEST_F(PmiServerTest, RemoveJobWaitsForTheSinkCallInProgress) {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false, returned = false;
  auto job = server_->add_job(JobMap::local("j", "n", {1}), [&](const RankEvent&) {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  });
  ASSERT_TRUE(job.ok());
  Client k(job->child_fds[0]);
  k.send("cmd=init pmi_version=1 pmi_subversion=1\n");
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return entered; }));
  }
  std::thread remover([&] {
    server_->remove_job("j");
    std::lock_guard<std::mutex> lock(mu);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_FALSE(returned) << "remove_job returned while the sink was still running";
    release = true;
    cv.notify_all();
  }
  remover.join();
  EXPECT_TRUE(returned);
}

// The sink hears of a finalize before the rank is answered, so before it can exit.
TEST_F(PmiServerTest, FinalizeIsReportedBeforeItIsAnswered) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  auto job = server_->add_job(JobMap::local("j", "n", {1}), [&](const RankEvent& e) {
    if (e.kind != Kind::kFinalize) return;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
  });
  ASSERT_TRUE(job.ok());
  Client k(job->child_fds[0]);
  k.send("cmd=finalize\n");
  EXPECT_TRUE(k.quiet(100)) << "answered while the sink had not returned";
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
    cv.notify_all();
  }
  EXPECT_EQ(k.line(), "cmd=finalize_ack");
}

// A rank that sends its finalize and exits without reading the answer (MPICH's PMI-1
// client may) leaves the finalize in the socket: sync() serves it before returning.
TEST_F(PmiServerTest, SyncServesWhatWasAlreadySent) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  // Job a's init holds the server's thread in a sink until released.
  auto a = server_->add_job(JobMap::local("a", "n", {1}), [&](const RankEvent& e) {
    if (e.kind != Kind::kInit) return;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
  });
  ASSERT_TRUE(a.ok());
  auto b = server_->add_job(JobMap::local("b", "n", {1}), log_.sink());
  ASSERT_TRUE(b.ok());
  Client ka(a->child_fds[0]);
  {
    Client kb(b->child_fds[0]);
    EXPECT_EQ(kb.ask("cmd=init pmi_version=1 pmi_subversion=1\n"),
              "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
    ka.send("cmd=init pmi_version=1 pmi_subversion=1\n");  // the thread now waits in a's sink
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    kb.send("cmd=finalize\n");
  }  // b's rank exits without reading the answer
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::lock_guard<std::mutex> lock(mu);
    release = true;
    cv.notify_all();
  });
  server_->sync();
  std::vector<std::string> got;
  for (const RankEvent& e : log_.now()) got.push_back(EventLog::str(e));
  releaser.join();
  EXPECT_EQ(got, (std::vector<std::string>{"init 0", "finalize 0"}));
}

TEST_F(PmiServerTest, RemoveJobFromInsideTheSink) {
  std::atomic<int> calls{0};
  PmiServer* server = server_.get();
  auto job = server_->add_job(JobMap::local("j", "n", {1}), [&](const RankEvent&) {
    ++calls;
    server->remove_job("j");  // the server's own thread: must not wait for itself
  });
  ASSERT_TRUE(job.ok());
  Client k(job->child_fds[0]);
  // Two events in one read: the second is never delivered.
  k.send("cmd=init pmi_version=1 pmi_subversion=1\ncmd=abort exitcode=3\n");
  EXPECT_TRUE(k.at_eof()) << "the job was gone before its init was answered";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_TRUE(server_->add_job(JobMap::local("j", "n", {1}), log_.sink()).ok());
}

// `size` ranks scattered over 3 nodes by a fixed pseudo-random sequence: no short form.
JobMap scattered(const std::string& id, int size) {
  JobMap m;
  m.id = id;
  m.nodes = {"a", "b", "c"};
  uint32_t x = 1;
  for (int r = 0; r < size; ++r) {
    x = x * 1103515245u + 12345u;
    m.procs.push_back(JobMap::Proc{0, static_cast<int>(((x & 0x7fffffffu) >> 16) % 3), 0, 0});
  }
  return m;
}

TEST_F(PmiServerTest, ALayoutTooLongForAClientIsNotGivenToIt) {
  JobMap mid = scattered("mid", 200);
  JobMap big = scattered("big", 300);
  size_t mid_len = pmi::process_mapping(mid).size();
  ASSERT_GT(mid_len, pmi::kMaxMappingPmi1);
  ASSERT_LE(mid_len, pmi::kMaxMappingPmi2);
  ASSERT_GT(pmi::process_mapping(big).size(), pmi::kMaxMappingPmi2);
  auto m = serve(mid);
  // PMI-1: not found, so MPICH exchanges host names instead; PMI-2 takes up to 1024.
  EXPECT_EQ(m[0]->ask("cmd=get kvsname=mid key=PMI_process_mapping\n"),
            "cmd=get_result rc=-1 msg=key_PMI_process_mapping_not_found value=unknown");
  EXPECT_EQ(
      m[0]->ask2("cmd=info-getjobattr;key=PMI_process_mapping;"),
      "cmd=info-getjobattr-response;found=TRUE;value=" + pmi::process_mapping(mid) + ";rc=0;");
  auto b = serve(big);
  EXPECT_EQ(b[0]->ask2("cmd=info-getjobattr;key=PMI_process_mapping;"),
            "cmd=info-getjobattr-response;found=FALSE;rc=0;");
}

TEST_F(PmiServerTest, DestroyingTheServerClosesEverySocket) {
  auto c = serve(JobMap::local("j", "n", {2}));
  c[0]->send("cmd=barrier_in\n");
  EXPECT_TRUE(c[0]->quiet(50));
  server_.reset();
  EXPECT_TRUE(c[0]->at_eof());
  EXPECT_TRUE(c[1]->at_eof());
}

// (f) Real MPICH: a program compiled here, three ranks started by the real spawner.

constexpr const char* kRingProgram = R"(#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 1 && atoi(argv[1]) == rank) MPI_Abort(MPI_COMM_WORLD, 7);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int left = (rank + size - 1) % size, got = -1;
  MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT, left, 0,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (got != left) return 3;
  printf("rank %d of %d sum %d\n", rank, size, sum);
  MPI_Finalize();
  return 0;
}
)";

std::string path_env() {
  const char* p = std::getenv("PATH");
  return p != nullptr ? p : "/usr/bin:/bin";
}

class RealMpich : public PmiServerTest {
 protected:
  void SetUp() override {
    PmiServerTest::SetUp();
    mpicc_ = launch::search_path("mpicc.mpich", path_env());
    // Not a skip: the project installs MPICH (scripts/install-deps.sh), and a machine
    // without it would otherwise pass without ever running MPI.
    ASSERT_FALSE(mpicc_.empty())
        << "mpicc.mpich is not on PATH (" << path_env()
        << "): install MPICH (packages mpich and libmpich-dev, scripts/install-deps.sh) to run "
           "the real-MPI tests";
    char tmpl[] = "/tmp/berth_pmi_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/ring.c") << kRingProgram;
    std::string cmd =
        fmt::format("'{}' -o '{}/ring' '{}/ring.c' > '{}/cc.log' 2>&1", mpicc_, dir_, dir_, dir_);
    int rc = std::system(cmd.c_str());
    ASSERT_EQ(rc, 0) << "compiling with mpicc.mpich failed: " << slurp(dir_ + "/cc.log");
  }
  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  static std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

  struct Ran {
    pid_t pid = -1;
    std::string out_path;
    std::string err_path;
  };
  // Starts `size` ranks of ring with `args`, each with its PMI socket as fd 3 and only
  // PATH and the PMI variables in its environment.
  std::vector<Ran> start(int size, const std::vector<std::string>& args) {
    auto job = server_->add_job(JobMap::local("berth.test.1", "localhost", {size}), log_.sink());
    EXPECT_TRUE(job.ok()) << job.error().message();
    std::vector<Ran> ran;
    if (!job.ok()) return ran;
    for (int r = 0; r < size; ++r) {
      launch::SpawnRequest req;
      req.argv = {dir_ + "/ring"};
      req.argv.insert(req.argv.end(), args.begin(), args.end());
      req.envp = {"PATH=" + path_env()};
      for (const auto& [k, v] : job->env(r, 3)) req.envp.push_back(k + "=" + v);
      Ran one;
      one.out_path = fmt::format("{}/out.{}", dir_, r);
      one.err_path = fmt::format("{}/err.{}", dir_, r);
      int out = ::open(one.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      int err = ::open(one.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      req.stdout_fd = out;
      req.stderr_fd = err;
      req.pass_fds = {job->child_fds[static_cast<size_t>(r)]};
      launch::FailureContext ctx;
      ctx.rank = r;
      ctx.executable = req.argv[0];
      ctx.node = "localhost";
      auto s = launch::Spawner::real().spawn(req, ctx, [](pid_t) {});
      ::close(out);
      ::close(err);
      EXPECT_TRUE(s.ok()) << s.error().message();
      if (s.ok()) {
        one.pid = s->pid;
        if (s->pidfd >= 0) ::close(s->pidfd);
      }
      ran.push_back(one);
    }
    for (int fd : job->child_fds) ::close(fd);
    return ran;
  }
  // Waits up to `seconds` for the rank; -1 when it is still running.
  static int wait_exit(pid_t pid, int seconds) {
    for (int i = 0; i < seconds * 100; ++i) {
      int status = 0;
      pid_t got = ::waitpid(pid, &status, WNOHANG);
      if (got == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  static void kill_and_reap(pid_t pid) {
    ::kill(-pid, SIGKILL);  // the rank's process group
    ::waitpid(pid, nullptr, 0);
  }

  std::string mpicc_;
  std::string dir_;
};

TEST_F(RealMpich, ThreeRanksInitReduceRingAndFinalize) {
  std::vector<Ran> ran = start(3, {});
  ASSERT_EQ(ran.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    const Ran& one = ran[static_cast<size_t>(r)];
    int code = wait_exit(one.pid, 60);
    if (code < 0) kill_and_reap(one.pid);
    EXPECT_EQ(code, 0) << "rank " << r << " stderr: " << slurp(one.err_path);
    EXPECT_EQ(slurp(one.out_path), fmt::format("rank {} of 3 sum 3\n", r));
  }
  std::vector<std::string> got = log_.strs(6);
  std::sort(got.begin(), got.end());
  EXPECT_THAT(got,
              ElementsAre("finalize 0", "finalize 1", "finalize 2", "init 0", "init 1", "init 2"));
}

TEST_F(RealMpich, MpiAbortArrivesWithItsCode) {
  std::vector<Ran> ran = start(3, {"1"});
  ASSERT_EQ(ran.size(), 3u);
  // Rank 1 aborts; the others wait for it in MPI_Allreduce until the job is ended.
  bool aborted = false;
  for (int i = 0; i < 6000 && !aborted; ++i) {
    for (const RankEvent& e : log_.now()) aborted |= e.kind == Kind::kAbort;
    if (!aborted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // What a supervisor does on kAbort: end every rank, then take the job off the server.
  for (const Ran& one : ran) kill_and_reap(one.pid);
  server_->remove_job("berth.test.1");
  std::vector<RankEvent> aborts;
  for (const RankEvent& e : log_.now()) {
    if (e.kind == Kind::kAbort) aborts.push_back(e);
  }
  ASSERT_EQ(aborts.size(), 1u) << "stderr of rank 1: " << slurp(ran[1].err_path);
  EXPECT_EQ(aborts[0].rank, 1);
  EXPECT_EQ(aborts[0].code, 7);
  EXPECT_THAT(slurp(ran[1].err_path), HasSubstr("MPI_Abort(MPI_COMM_WORLD, 7)"));
}

}  // namespace
}  // namespace berth::wireup
