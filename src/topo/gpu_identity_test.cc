// Which GPU is which (gpu_identity.h), on driver trees laid out as the drivers lay
// them out: the real H100 node's information file, a two-socket NVIDIA node whose first
// GPU sits on the second socket, an AMD node's kfd topology and Intel's tiled cards.
#include "topo/gpu_identity.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "topo/fake_tree_for_test.h"
#include "util/strings.h"

namespace berth::topo {
namespace {

using testing::FakeTree;

// As the 580 driver writes it on the H100 node (tabs and spaces included).
constexpr const char* kH100 =
    "Model: \t\t NVIDIA H100 80GB HBM3\n"
    "IRQ:   \t\t 41\n"
    "GPU UUID: \t GPU-fffbc565-1b4c-bb38-06e5-82991410576d\n"
    "Video BIOS: \t 96.00.99.00.0d\n"
    "Bus Type: \t PCIe\n"
    "DMA Size: \t 52 bits\n"
    "DMA Mask: \t 0xfffffffffffff\n"
    "Bus Location: \t 0000:00:06.0\n"
    "Device Minor: \t 0\n"
    "GPU Firmware: \t 580.159.04\n"
    "GPU Excluded:\t No\n";

TEST(GpuIdentity, ReadsTheDriversInformationFile) {
  auto info = parse_nvidia_information(kH100);
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(info->model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(info->uuid, "GPU-fffbc565-1b4c-bb38-06e5-82991410576d");
  EXPECT_EQ(info->bus, "0000:00:06.0");
}

TEST(GpuIdentity, TheDriversVersion) {
  EXPECT_EQ(parse_nvidia_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  "
                                 "Thu Oct 30 10:02:15 UTC 2025\nGCC version:  gcc 13\n"),
            "580.159.04");
  EXPECT_EQ(parse_nvidia_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                                 "570.86.15  Release Build\n"),
            "570.86.15");
  EXPECT_EQ(parse_nvidia_version("garbage"), "");
}

TEST(GpuIdentity, AMalformedInformationFileIsRefusedByLine) {
  auto bad = parse_nvidia_information("Model: A100\nno colon here\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("line 2"), std::string::npos) << bad.error().message();
  auto control = parse_nvidia_information("GPU UUID: GPU-\x01x\n");
  ASSERT_FALSE(control.ok());
  EXPECT_NE(control.error().message().find("GPU UUID"), std::string::npos);
  // Keys berth does not take are not its business, whatever they hold.
  EXPECT_TRUE(parse_nvidia_information("IRQ: \x01\n").ok());
}

TEST(GpuIdentity, TwoSocketsAndTheFirstGpuOnTheSecond) {
  FakeTree t;
  const char* buses[] = {"0000:41:00.0", "0000:c1:00.0"};
  for (int i = 0; i < 2; ++i) {
    t.write(std::string("/proc/driver/nvidia/gpus/") + buses[i] + "/information",
            std::string("Model: \t\t NVIDIA A100-SXM4-40GB\nGPU UUID: \t GPU-") +
                std::to_string(i) + "aaa\nBus Location: \t " + buses[i] + "\n");
  }
  // The first GPU by bus order is on NUMA node 1, cores 32-63; the second on node 0.
  t.write("/sys/bus/pci/devices/0000:41:00.0/numa_node", "1\n");
  t.write("/sys/bus/pci/devices/0000:41:00.0/local_cpulist", "32-63\n");
  t.write("/sys/bus/pci/devices/0000:c1:00.0/numa_node", "0\n");
  t.write("/sys/bus/pci/devices/0000:c1:00.0/local_cpulist", "0-31\n");
  t.write("/proc/driver/nvidia/version",
          "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct 30 2025\n");
  auto ids = read_gpu_identities(t.root(), GpuVendor::kNvidia);
  ASSERT_TRUE(ids.ok()) << ids.error().message();
  ASSERT_EQ(ids->size(), 2u);
  EXPECT_EQ((*ids)[1].driver, "580.159.04");
  EXPECT_EQ((*ids)[0].id, "0");
  EXPECT_EQ((*ids)[0].bus, "0000:41:00.0");
  EXPECT_EQ((*ids)[0].uuid, "GPU-0aaa");
  EXPECT_EQ((*ids)[0].numa_node, 1);
  EXPECT_EQ((*ids)[0].local_cores.front(), 32);
  EXPECT_EQ((*ids)[0].local_cores.size(), 32u);
  EXPECT_EQ((*ids)[1].numa_node, 0);
  EXPECT_EQ((*ids)[1].local_cores.back(), 31);
}

TEST(GpuIdentity, NoNumaInformationAndMissingFilesLeaveFieldsEmpty) {
  FakeTree t;
  t.write("/proc/driver/nvidia/gpus/0000:00:06.0/information", kH100);
  t.write("/sys/bus/pci/devices/0000:00:06.0/numa_node", "-1\n");
  t.write("/proc/driver/nvidia/gpus/0000:00:07.0/.keep", "");  // no information file
  auto ids = read_gpu_identities(t.root(), GpuVendor::kNvidia);
  ASSERT_TRUE(ids.ok()) << ids.error().message();
  ASSERT_EQ(ids->size(), 2u);
  EXPECT_EQ((*ids)[0].numa_node, -1);
  EXPECT_TRUE((*ids)[0].local_cores.empty());
  EXPECT_EQ((*ids)[1].bus, "0000:00:07.0");  // the directory's name
  EXPECT_TRUE((*ids)[1].model.empty());
}

TEST(GpuIdentity, AmdFromKfdTopology) {
  FakeTree t;
  // Node 0 is the CPU; nodes 1 and 2 are GCDs at c1:00.0 and d1:00.0.
  t.write("/sys/class/kfd/kfd/topology/nodes/0/properties", "simd_count 0\nlocation_id 0\n");
  t.write("/sys/class/kfd/kfd/topology/nodes/1/properties",
          "simd_count 440\nlocation_id 49408\ndomain 0\nunique_id 5952409839234345062\n");
  t.write("/sys/class/kfd/kfd/topology/nodes/2/properties",
          "simd_count 440\nlocation_id 53504\ndomain 0\nunique_id 0\n");
  t.write("/sys/bus/pci/devices/0000:c1:00.0/numa_node", "3\n");
  auto ids = read_gpu_identities(t.root(), GpuVendor::kAmd);
  ASSERT_TRUE(ids.ok()) << ids.error().message();
  ASSERT_EQ(ids->size(), 2u);
  EXPECT_EQ((*ids)[0].bus, "0000:c1:00.0");
  EXPECT_EQ((*ids)[0].uuid, "GPU-529b3536291a6866");
  EXPECT_EQ((*ids)[0].numa_node, 3);
  EXPECT_EQ((*ids)[1].bus, "0000:d1:00.0");
  EXPECT_TRUE((*ids)[1].uuid.empty());  // unique_id 0: none given
}

TEST(GpuIdentity, AMalformedKfdNumberIsNamed) {
  auto bad = parse_kfd_identity("simd_count 4\nlocation_id x12\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("line 2: location_id"), std::string::npos)
      << bad.error().message();
}

TEST(GpuIdentity, IdsAreFoundByIndexOrUuid) {
  std::vector<GpuIdentity> devices(2);
  devices[0].id = "0";
  devices[0].uuid = "GPU-a";
  devices[1].id = "1";
  devices[1].model = "B";
  auto got = identities_of({"1", "GPU-a", "7"}, devices);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].model, "B");
  EXPECT_EQ(got[1].id, "0");
  EXPECT_TRUE(got[2].id.empty());  // no such device: an empty identity, still aligned
  // A device without a UUID is not found by an empty id.
  EXPECT_TRUE(identities_of({""}, devices)[0].id.empty());
}

// Two Intel cards as the kernel lays them out: /sys/class/drm/card<N>/device links to
// the PCI device's directory, which holds vendor, device and the locality files; the
// first (i915) has two gt tiles, the second (xe) two device tiles. A connector
// (card0-DP-1) and a virtual display card (no Intel vendor) are not GPUs.
TEST(GpuIdentity, IntelTilesAreNamedByTheirCard) {
  FakeTree t;
  const char* buses[] = {"0000:18:00.0", "0000:9a:00.0"};
  for (int c = 0; c < 2; ++c) {
    const std::string pci = std::string("/sys/devices/pci0000:00/") + buses[c];
    t.write(pci + "/vendor", "0x8086\n");
    t.write(pci + "/device", "0x0BD5\n");
    t.write(pci + "/numa_node", c == 0 ? "0\n" : "1\n");
    t.write(pci + "/local_cpulist", c == 0 ? "0-51\n" : "52-103\n");
    t.write(std::string("/sys/bus/pci/devices/") + buses[c] + "/numa_node", c == 0 ? "0\n" : "1\n");
    t.write(std::string("/sys/bus/pci/devices/") + buses[c] + "/local_cpulist",
            c == 0 ? "0-51\n" : "52-103\n");
    // card0 is a virtual display; the Intel cards are card1 and card2.
    const std::string card = "/sys/class/drm/card" + std::to_string(c + 1);
    t.mkdir(card);
    std::filesystem::create_symlink(t.root() + pci, t.root() + card + "/device");
  }
  t.mkdir("/sys/class/drm/card1/gt/gt0");
  t.mkdir("/sys/class/drm/card1/gt/gt1");
  t.mkdir("/sys/devices/pci0000:00/0000:9a:00.0/tile0");
  t.mkdir("/sys/devices/pci0000:00/0000:9a:00.0/tile1");
  t.write("/sys/class/drm/card0/device/vendor", "0x1af4\n");
  t.mkdir("/sys/class/drm/card1-DP-1");

  auto gpus = read_gpus(t.root(), Env());
  ASSERT_TRUE(gpus.ok()) << gpus.error().message();
  EXPECT_EQ(str::join(gpus->ids, ","), "0.0,0.1,1.0,1.1");
  auto ids = read_gpu_identities(t.root(), GpuVendor::kIntel);
  ASSERT_TRUE(ids.ok()) << ids.error().message();
  ASSERT_EQ(ids->size(), 4u);
  EXPECT_EQ((*ids)[1].id, "0.1");
  EXPECT_EQ((*ids)[1].bus, "0000:18:00.0");
  EXPECT_EQ((*ids)[1].model, "Intel GPU 0x0bd5");
  EXPECT_EQ((*ids)[1].numa_node, 0);
  EXPECT_EQ((*ids)[2].id, "1.0");
  EXPECT_EQ((*ids)[2].bus, "0000:9a:00.0");
  EXPECT_EQ((*ids)[3].numa_node, 1);
  EXPECT_EQ((*ids)[3].local_cores.front(), 52);
  EXPECT_TRUE((*ids)[3].uuid.empty());  // sysfs gives Intel GPUs none
}

// Without the `device` link (a tree copied without links), the uevent names the slot.
TEST(GpuIdentity, IntelBusFromTheUevent) {
  FakeTree t;
  t.write("/sys/class/drm/card0/device/vendor", "0x8086\n");
  t.write("/sys/class/drm/card0/device/uevent", "DRIVER=xe\nPCI_SLOT_NAME=0000:3A:00.0\n");
  auto ids = read_gpu_identities(t.root(), GpuVendor::kIntel);
  ASSERT_TRUE(ids.ok()) << ids.error().message();
  ASSERT_EQ(ids->size(), 1u);
  EXPECT_EQ((*ids)[0].id, "0");
  EXPECT_EQ((*ids)[0].bus, "0000:3a:00.0");
  EXPECT_TRUE((*ids)[0].model.empty());
}

TEST(GpuIdentity, NoneHasNoIdentities) {
  FakeTree t;
  auto none = read_gpu_identities(t.root(), GpuVendor::kNone);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto intel = read_gpu_identities(t.root(), GpuVendor::kIntel);
  ASSERT_TRUE(intel.ok());
  EXPECT_TRUE(intel->empty());
}

}  // namespace
}  // namespace berth::topo
