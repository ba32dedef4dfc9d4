#include "util/files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

namespace berth::files {
namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/berth-files-test.XXXXXX";
  return mkdtemp(tmpl);
}

TEST(Files, AtomicWriteThenReadRoundTrips) {
  std::string d = temp_dir();
  std::string p = d + "/x";
  ASSERT_TRUE(write_file_atomic(p, "hello").ok());
  ASSERT_TRUE(write_file_atomic(p, "bye").ok());
  auto r = read_file(p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "bye");
  unlink(p.c_str());
  rmdir(d.c_str());
}

TEST(Files, ReadRefusesFileOverLimit) {
  std::string d = temp_dir();
  std::string p = d + "/big";
  ASSERT_TRUE(write_file_atomic(p, std::string(100, 'a')).ok());
  auto r = read_file(p, 99);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kInvalidInput);
  unlink(p.c_str());
  rmdir(d.c_str());
}

TEST(Files, ReadOfDirectoryIsAnError) {
  auto r = read_file("/tmp");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("is a directory"), std::string::npos);
}

TEST(Files, ReadOfMissingFileIsNotFoundAndNamesPath) {
  auto r = read_file("/nonexistent/x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kNotFound);
  EXPECT_NE(r.error().message().find("/nonexistent/x"), std::string::npos);
}

}  // namespace
}  // namespace berth::files
