// Renderings for the MPI implementations' own launchers (spec 02 §8): Open MPI's mpirun
// and MPICH's hydra under Grid Engine, LSF and hostfiles, table-driven, with the
// rankfiles Open MPI reads; and what each refuses.
#include "place/render_mpi.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "place/render.h"
#include "topo/catalog.h"
#include "util/files.h"
#include "util/strings.h"

namespace berth::place {
namespace {

using topo::LauncherKind;

const topo::MachineDescription& generic() {
  static auto catalog = topo::Catalog::built_in();
  EXPECT_TRUE(catalog.ok());
  return *catalog->find("generic");
}

// Where the test's rankfiles go: a directory of its own (RenderMpi), removed afterwards.
std::string& test_tmpdir() {
  static std::string dir;
  return dir;
}

Launcher mpi(LauncherKind kind, const std::string& allocation, const std::string& here = "n1") {
  Launcher l;
  l.tmpdir = test_tmpdir();
  l.kind = kind;
  l.program = kind == LauncherKind::kMpirun ? "mpirun" : "mpiexec.hydra";
  l.version_text = kind == LauncherKind::kMpirun ? "mpirun (Open MPI) 4.1.4" : "hydra 4.0.2";
  l.allocation = allocation;
  l.here = here;
  return l;
}

Placement place(std::vector<std::string> nodes, std::vector<std::vector<int>> cores, int gpus = 0,
                std::vector<std::string> ids = {}) {
  Placement p;
  p.nodes = std::move(nodes);
  p.cores = std::move(cores);
  p.gpus = gpus;
  p.gpu_ids = std::move(ids);
  return p;
}

LaunchSpec spec(int tasks, int cpt = 1) {
  LaunchSpec s;
  s.tasks = tasks;
  s.cpus_per_task = cpt;
  s.command = {"./a.out", "x"};
  return s;
}

class RenderMpi : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/berth-render-mpi.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    test_tmpdir() = dir_;
  }
  void TearDown() override {
    test_tmpdir().clear();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // The argv with the rankfile's path as RANKFILE, and the rankfile's text.
  std::string argv_of(const Rendered& r, std::string* rankfile = nullptr) const {
    std::vector<std::string> w = r.argv;
    for (auto& word : w) {
      if (word.rfind(dir_, 0) == 0) {
        if (rankfile != nullptr) {
          auto text = files::read_file(word);
          *rankfile = text.ok() ? *text : "UNREADABLE: " + text.error().message();
        }
        word = "RANKFILE";
      }
    }
    return str::join(w, " ");
  }
  std::string dir_;
};

TEST_F(RenderMpi, PlacementsRenderForEachImplementationAndAllocation) {
  struct Case {
    const char* what;
    LauncherKind kind;
    const char* allocation;
    Placement p;
    int tasks;
    int cpt;
    const char* argv;
    const char* rankfile;  // Open MPI's; "" for hydra
  };
  const std::vector<Case> cases = {
      {"Open MPI, Grid Engine, the same cores on two nodes", LauncherKind::kMpirun, "gridengine",
       place({"n1", "n2"}, {{0, 1}, {0, 1}}), 4, 1,
       "mpirun --host n1:2,n2:2 -np 4 --mca plm rsh --mca plm_rsh_disable_qrsh 0 "
       "--use-hwthread-cpus --mca rmaps_rank_file_physical 1 --rankfile RANKFILE "
       "-x CUDA_VISIBLE_DEVICES= ./a.out x",
       "rank 0=n1 slot=0\nrank 1=n1 slot=1\nrank 2=n2 slot=0\nrank 3=n2 slot=1\n"},
      {"Open MPI, hostfile: ssh, never qrsh", LauncherKind::kMpirun, "hosts",
       place({"a", "b"}, {{2, 3}, {2, 3}}), 2, 2,
       "mpirun --host a:1,b:1 -np 2 --mca plm rsh --mca plm_rsh_agent ssh "
       "--mca plm_rsh_disable_qrsh 1 --use-hwthread-cpus --mca rmaps_rank_file_physical 1 "
       "--rankfile RANKFILE -x CUDA_VISIBLE_DEVICES= ./a.out x",
       "rank 0=a slot=2-3\nrank 1=b slot=2-3\n"},
      {"Open MPI, LSF: its own launch", LauncherKind::kMpirun, "lsf",
       place({"hostA", "hostB"}, {{0}, {1}}), 2, 1,
       "mpirun --host hostA:1,hostB:1 -np 2 --mca plm lsf --use-hwthread-cpus "
       "--mca rmaps_rank_file_physical 1 --rankfile RANKFILE -x CUDA_VISIBLE_DEVICES= ./a.out x",
       "rank 0=hostA slot=0\nrank 1=hostB slot=1\n"},
      {"Open MPI, different cores on each node, tasks filling each in turn",
       LauncherKind::kMpirun, "gridengine", place({"n1", "n2"}, {{0, 1, 2, 3}, {4, 5}}), 3, 2,
       "mpirun --host n1:2,n2:1 -np 3 --mca plm rsh --mca plm_rsh_disable_qrsh 0 "
       "--use-hwthread-cpus --mca rmaps_rank_file_physical 1 --rankfile RANKFILE "
       "-x CUDA_VISIBLE_DEVICES= ./a.out x",
       "rank 0=n1 slot=0-1\nrank 1=n1 slot=2-3\nrank 2=n2 slot=4-5\n"},
      {"Open MPI, GPUs by their ids", LauncherKind::kMpirun, "gridengine",
       place({"n1", "n2"}, {{0}, {0}}, 2, {"0", "1"}), 2, 1,
       "mpirun --host n1:1,n2:1 -np 2 --mca plm rsh --mca plm_rsh_disable_qrsh 0 "
       "--use-hwthread-cpus --mca rmaps_rank_file_physical 1 --rankfile RANKFILE "
       "-x CUDA_VISIBLE_DEVICES=0,1 ./a.out x",
       "rank 0=n1 slot=0\nrank 1=n2 slot=0\n"},
      {"Open MPI, two tasks on this node alone", LauncherKind::kMpirun, "gridengine",
       place({"n1"}, {{0, 1}}), 2, 1,
       "mpirun --host n1:2 -np 2 --mca plm rsh --mca plm_rsh_disable_qrsh 0 "
       "--use-hwthread-cpus --mca rmaps_rank_file_physical 1 --rankfile RANKFILE "
       "-x CUDA_VISIBLE_DEVICES= ./a.out x",
       "rank 0=n1 slot=0\nrank 1=n1 slot=1\n"},
      {"Open MPI, one task on another node", LauncherKind::kMpirun, "hosts",
       place({"n2"}, {{3}}), 1, 1,
       "mpirun --host n2:1 -np 1 --mca plm rsh --mca plm_rsh_agent ssh "
       "--mca plm_rsh_disable_qrsh 1 --use-hwthread-cpus --mca rmaps_rank_file_physical 1 "
       "--rankfile RANKFILE -x CUDA_VISIBLE_DEVICES= ./a.out x",
       "rank 0=n2 slot=3\n"},
      {"hydra, Grid Engine", LauncherKind::kHydra, "gridengine",
       place({"n1", "n2"}, {{0, 1}, {0, 1}}), 4, 1,
       "mpiexec.hydra -launcher sge -hosts n1:2,n2:2 -n 4 -bind-to user:0,1 "
       "-genv CUDA_VISIBLE_DEVICES  ./a.out x",
       ""},
      {"hydra, LSF, two cores a task", LauncherKind::kHydra, "lsf",
       place({"hostA", "hostB"}, {{0, 1, 2, 3}, {0, 1, 2, 3}}), 3, 2,
       "mpiexec.hydra -launcher lsf -hosts hostA:2,hostB:1 -n 3 -bind-to user:0+1,2+3 "
       "-genv CUDA_VISIBLE_DEVICES  ./a.out x",
       ""},
      {"hydra, hostfile, GPUs", LauncherKind::kHydra, "hosts",
       place({"a", "b"}, {{4}, {4}}, 1, {"1"}), 2, 1,
       "mpiexec.hydra -launcher ssh -hosts a:1,b:1 -n 2 -bind-to user:4 "
       "-genv CUDA_VISIBLE_DEVICES 1 ./a.out x",
       ""},
  };
  for (const auto& c : cases) {
    auto r = render(generic(), mpi(c.kind, c.allocation), c.p, spec(c.tasks, c.cpt));
    ASSERT_TRUE(r.ok()) << c.what << ": " << r.error().message();
    std::string rankfile;
    EXPECT_EQ(argv_of(*r, &rankfile), c.argv) << c.what;
    EXPECT_EQ(rankfile, c.rankfile) << c.what;
    EXPECT_EQ(r->mechanism, Mechanism::kCpuBinding) << c.what;
    EXPECT_EQ(r->wireup, c.kind == LauncherKind::kMpirun ? "mpirun (Open MPI)" : "hydra")
        << c.what;
    EXPECT_TRUE(r->env.empty()) << c.what << ": the launcher carries them in argv";
    EXPECT_TRUE(r->bind_cpus.empty()) << c.what;
    EXPECT_TRUE(r->notes.empty()) << c.what << ": " << str::join(r->notes, "|");
  }
}

TEST_F(RenderMpi, TheRankfileIsThisUsersAndNamedByItsText) {
  auto a = write_rankfile("rank 0=n1 slot=0\n", dir_);
  ASSERT_TRUE(a.ok()) << a.error().message();
  auto again = write_rankfile("rank 0=n1 slot=0\n", dir_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*a, *again);
  auto other = write_rankfile("rank 0=n1 slot=1\n", dir_);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*a, *other);
  EXPECT_EQ(a->rfind(dir_ + "/berth-rankfiles." + std::to_string(::getuid()) + "/rankfile-", 0),
            0u)
      << *a;
  struct stat st {};
  ASSERT_EQ(::stat(files::parent_dir(*a).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // A directory others may write in is not used.
  ASSERT_EQ(::chmod(files::parent_dir(*a).c_str(), 0777), 0);
  auto refused = write_rankfile("rank 0=n1 slot=2\n", dir_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("is not this user's own directory"), std::string::npos);
  ::chmod(files::parent_dir(*a).c_str(), 0700);
  // No TMPDIR (or not an absolute one): /tmp.
  auto fallback = write_rankfile("rank 0=n1 slot=3\n", "relative");
  ASSERT_TRUE(fallback.ok()) << fallback.error().message();
  EXPECT_EQ(fallback->rfind("/tmp/berth-rankfiles.", 0), 0u) << *fallback;
  std::filesystem::remove(*fallback);
}

TEST_F(RenderMpi, OneTaskOnThisNodeKeepsTheLocalRendering) {
  for (LauncherKind kind : {LauncherKind::kMpirun, LauncherKind::kHydra}) {
    auto r = render(generic(), mpi(kind, "gridengine", "n1"), place({"n1"}, {{2, 3}}), spec(1));
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(str::join(r->argv, " "), "./a.out x");
    EXPECT_EQ(r->bind_cpus, (std::vector<int>{2, 3}));
    EXPECT_EQ(r->wireup, "berth (PMIx, PMI)");
    // No placement, one task: the command itself; several: the launcher's plain command.
    r = render(generic(), mpi(kind, "gridengine"), std::nullopt, spec(1));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(str::join(r->argv, " "), "./a.out x");
    r = render(generic(), mpi(kind, "gridengine"), std::nullopt, spec(3));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(str::join(r->argv, " "),
              kind == LauncherKind::kMpirun
                  ? "mpirun -np 3 --mca plm rsh --mca plm_rsh_disable_qrsh 0 ./a.out x"
                  : "mpiexec.hydra -launcher sge -n 3 ./a.out x");
    EXPECT_EQ(r->mechanism, Mechanism::kNone);
  }
  // Not this node (or this node not in the allocation): through the launcher.
  auto r = render(generic(), mpi(LauncherKind::kHydra, "hosts", ""), place({"n1"}, {{0}}), spec(1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(str::join(r->argv, " "),
            "mpiexec.hydra -launcher ssh -hosts n1:1 -n 1 -bind-to user:0 -genv "
            "CUDA_VISIBLE_DEVICES  ./a.out x");
}

TEST_F(RenderMpi, GpuVariablesFollowTheNode) {
  // Level Zero's composite ids bring the hierarchy they assume.
  Placement p = place({"n1", "n2"}, {{0}, {0}}, 1, {"0.1"});
  p.gpu_variable = "ZE_AFFINITY_MASK";
  auto r = render(generic(), mpi(LauncherKind::kHydra, "gridengine"), p, spec(2));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_NE(str::join(r->argv, " ").find("-genv ZE_AFFINITY_MASK 0.1 -genv "
                                         "ZE_FLAT_DEVICE_HIERARCHY COMPOSITE"),
            std::string::npos)
      << str::join(r->argv, " ");
  LaunchSpec s = spec(2);
  s.local_gpu_variable = "ROCR_VISIBLE_DEVICES";
  r = render(generic(), mpi(LauncherKind::kMpirun, "hosts"), place({"a", "b"}, {{0}, {0}}), s);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(str::join(r->argv, " ").find("-x ROCR_VISIBLE_DEVICES= ./a.out"), std::string::npos);
}

TEST_F(RenderMpi, WhatCannotBeHonouredIsRefusedWithTheReason) {
  struct Case {
    const char* what;
    Launcher l;
    Placement p;
    LaunchSpec s;
    const char* refusal;
  };
  LaunchSpec pmi1 = spec(2);
  pmi1.mpi = wireup::Mode::kPmi1;
  LaunchSpec pmix = spec(2);
  pmix.mpi = wireup::Mode::kPmix;
  Launcher open_mpi5 = mpi(LauncherKind::kMpirun, "gridengine");
  open_mpi5.mpi_refusal = "berth renders for the mpirun of Open MPI 3 and 4 (ORTE)";
  Launcher none_found;  // the local launcher that looked for one
  none_found.version_text = "no MPI launcher found (mpirun: not found on PATH)";
  const std::vector<Case> cases = {
      {"hydra: nodes asking for different cores", mpi(LauncherKind::kHydra, "gridengine"),
       place({"n1", "n2"}, {{0, 1}, {2, 3}}), spec(4),
       "hydra -bind-to user: applies one node's core list to every node, but node 'n1' asks "
       "for cores 0-1 and node 'n2' for 2-3"},
      {"GPUs without their ids", mpi(LauncherKind::kMpirun, "gridengine"),
       place({"n1", "n2"}, {{0}, {0}}, 2), spec(2),
       "nothing assigns GPUs in a Grid Engine allocation: a placement asking for 2 GPU(s) must "
       "name their device ids (--gpu-ids)"},
      {"more tasks than cores", mpi(LauncherKind::kMpirun, "hosts"), place({"a", "b"}, {{0}, {0}}),
       spec(3), "3 task(s) of 1 core(s) do not fit"},
      {"Open MPI asked for PMI", mpi(LauncherKind::kMpirun, "gridengine"),
       place({"n1", "n2"}, {{0}, {0}}), pmi1,
       "--mpi pmi1: mpirun (Open MPI) serves its ranks PMIx, not PMI; an MPICH program needs "
       "hydra (--launcher hydra)"},
      {"hydra asked for PMIx", mpi(LauncherKind::kHydra, "lsf"), place({"n1", "n2"}, {{0}, {0}}),
       pmix, "--mpi pmix: hydra serves its ranks PMI-1 and PMI-2, not PMIx"},
      {"an MPI launcher that cannot place", open_mpi5, place({"n1", "n2"}, {{0}, {0}}), spec(2),
       "placement refused: berth renders for the mpirun of Open MPI 3 and 4 (ORTE)"},
      {"an allocation berth renders mpirun for not", mpi(LauncherKind::kMpirun, "slurm"),
       place({"n1", "n2"}, {{0}, {0}}), spec(2),
       "berth renders mpirun for Grid Engine, LSF and hostfile allocations, not for the slurm "
       "allocation"},
      {"no MPI launcher found: several nodes", none_found, place({"n1", "n2"}, {{0}, {0}}),
       spec(2),
       "the local launcher places on this node only; the placement names 2 nodes (no MPI "
       "launcher found (mpirun: not found on PATH))"},
      {"no MPI launcher found: several tasks", none_found, place({"n1"}, {{0, 1}}), spec(2),
       "the local launcher starts one process, not 2 tasks (no MPI launcher found"},
  };
  for (const auto& c : cases) {
    auto r = render(generic(), c.l, c.p, c.s);
    ASSERT_FALSE(r.ok()) << c.what << ": " << str::join(r->argv, " ");
    EXPECT_EQ(r.error().code(), Errc::kRefused) << c.what;
    EXPECT_NE(r.error().message().find(c.refusal), std::string::npos)
        << c.what << ": " << r.error().message();
  }
}

TEST_F(RenderMpi, WhatIsNotRenderedIsSaid) {
  LaunchSpec s = spec(2);
  s.memory_cap = 512;
  s.mpi = wireup::Mode::kNone;
  for (LauncherKind kind : {LauncherKind::kMpirun, LauncherKind::kHydra}) {
    auto r = render(generic(), mpi(kind, "gridengine"), place({"n1", "n2"}, {{0}, {0}}), s);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->memory_cap, CapState::kNotEnforced);
    std::string notes = str::join(r->notes, "|");
    EXPECT_NE(notes.find("the memory cap of 512 MB is not rendered"), std::string::npos) << notes;
    EXPECT_NE(notes.find("--mpi none is not rendered"), std::string::npos) << notes;
  }
  // A named mode each serves renders as auto does.
  s = spec(2);
  s.mpi = wireup::Mode::kPmix;
  Placement two = place({"a", "b"}, {{0}, {0}});
  EXPECT_TRUE(render(generic(), mpi(LauncherKind::kMpirun, "hosts"), two, s).ok());
  s.mpi = wireup::Mode::kPmi2;
  EXPECT_TRUE(render(generic(), mpi(LauncherKind::kHydra, "hosts"), two, s).ok());
}

}  // namespace
}  // namespace berth::place
