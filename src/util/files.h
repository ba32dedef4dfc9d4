// File helpers: whole-file reads with a size bound, atomic writes.
//
// Every failure names the path and says what the operating system said.
#pragma once

#include <string>

#include "util/result.h"

namespace berth::files {

// The default bound for files berth parses (hostfiles, env files, Flux R documents).
inline constexpr size_t kMaxParsedFileBytes = 64ull * 1024 * 1024;

// Reads the whole file. Fails with kNotFound when it does not exist, kIo when it can't
// be read or is a directory, kInvalidInput when it is larger than `max_bytes`.
Result<std::string> read_file(const std::string& path, size_t max_bytes = kMaxParsedFileBytes);

// Writes `data` to `path` so that a reader sees either the old file or the whole new
// one: write to a temporary file in the same directory, fsync, rename over `path`.
// Without `sync` there is no fsync: a crash soon after may leave the old file, or an
// empty one, never part of the new one's bytes under the name.
Result<void> write_file_atomic(const std::string& path, std::string_view data, bool sync = true);

bool exists(const std::string& path);

}  // namespace berth::files
