// Trees: a directory stored as objects and one manifest (spec 05 §1.1).
//
// A pipeline step's directory output (`outputs = ["plots/"]`) holds any number of
// files. Each regular file is stored as an ordinary object; the directory is one more
// object, its *manifest*: canonical text naming every file with its object, so that
// the same directory always has the same manifest, and the manifest's name names the
// whole tree. Trees are built from ObjectStore's own operations, so they work on every
// backend (file://, s3://, tiered, memory) with no method of their own.
//
// The manifest, UTF-8 or any bytes but control characters, every line ending in '\n':
//
//   berth-tree 1
//   file <object> <path>     a regular file
//   exec <object> <path>     a regular file with its owner's execute bit
//   dir <path>               an empty directory (others are implied by their files)
//
// entries sorted bytewise by path, each path relative and '/'-separated, with no
// empty, "." or ".." component and no byte below 0x20 or 0x7f. A manifest comes from the
// store, where anyone may have written it: decode_tree() refuses anything else, so that
// a path like `../../x` can never be materialised.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "store/object_store.h"
#include "util/result.h"

namespace berth::store {

struct TreeEntry {
  enum class Kind { kFile, kExec, kDir };
  Kind kind = Kind::kFile;
  std::string path;    // relative, '/'-separated
  std::string object;  // the file's object name; empty for kDir

  bool operator==(const TreeEntry&) const = default;
};

// The manifest of `entries`, sorted by path (entries need not be). The caller gives
// valid paths and names (put_tree does).
std::string encode_tree(std::vector<TreeEntry> entries);

// The entries of a manifest, in its order. kInvalidInput naming the line at fault for
// anything encode_tree would not have written: a first line other than
// "berth-tree 1", an unknown kind, a bad object name or path, entries out of order or
// repeated, a path below a file's or an empty directory's (`a` a file or `dir a`, and
// `a/b`), a missing final '\n'.
Result<std::vector<TreeEntry>> decode_tree(std::string_view manifest);

// Every object name the entries hold (files and exec files), in order.
std::vector<std::string> tree_objects(const std::vector<TreeEntry>& entries);

// Stores the directory `dir` as a tree and returns the manifest's object name. Every
// regular file is handed over with adopt_object_file (the caller will not write it
// again; it may become the stored copy, read-only); its execute bit is read first.
// Symlinks, devices, fifos and sockets are refused naming the path (a link followed
// could store a file from outside the step), as is a name with a control character.
// The files are stored before the manifest, so a manifest in the store never names a
// file that was not stored first. Fails with kNotFound when `dir` does not exist and
// kInvalidInput when it is not a directory, naming it; the refusals above are
// kInvalidInput naming the path relative to `dir`. A directory is stored once: its files
// may be read-only afterwards, execute bits gone, so a second put_tree of it may differ.
Result<std::string> put_tree(ObjectStore& store, const std::string& dir);

// The verified manifest `name`, decoded into *entries. A manifest that is there but does
// not decode is Found::kCorrupt with the reason in `problem`.
Result<ObjectRead> get_tree(ObjectStore& store, std::string_view name,
                            std::vector<TreeEntry>* entries);

// Makes `dest` the directory the tree `name` describes, whole: built beside it under a
// temporary name (each file by ObjectStore::materialize — a hard link to the stored
// copy where it can be; an exec file as a verified copy, mode 0555, since a stored copy
// is 0444 and shared), then put in place of whatever `dest` was (a file, a directory,
// nothing) atomically. The parent directory of `dest` must exist; a trailing '/' on
// `dest` is ignored. Directories are made 0755 (less the umask). On kAbsent or kCorrupt
// of the manifest or of any file `dest` is left as it was and `problem` says which file
// ("file <dest>/<path> (object sha256:…) is missing from the store"); with kPresent,
// `problem` lists any corrupt copies a backend replaced on the way (ObjectRead).
// With `copies`, every file is a verified copy of its own (ObjectStore::get_object_to_file,
// mode 0444, an exec file 0555) that shares nothing with the store: a user's results
// (spec 04 §7.5), where a hard link would let an edit change the stored object.
Result<ObjectRead> materialize_tree(ObjectStore& store, std::string_view name,
                                    const std::string& dest, bool copies = false);

// Puts the file or directory `from` at `to`, replacing whatever is there (a file, a
// directory with its contents, nothing) atomically where the kernel can
// (renameat2 RENAME_EXCHANGE, then the old one removed). Both on one filesystem. Where
// the filesystem cannot exchange, the old one is renamed aside first: for a moment
// nothing is at `to`. Fails naming the path when `from` is missing or a rename is
// refused, leaving `to` as it was; or, with `to` already replaced, when the old one
// cannot be removed from where it was moved (a hidden name beside `to`).
Result<void> replace_path(const std::string& from, const std::string& to);

}  // namespace berth::store
