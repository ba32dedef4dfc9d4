// Verifying a store's objects (store_verify.h).
#include "pipeline/store_verify.h"

#include <nlohmann/json.hpp>
#include <set>

#include "store/tree.h"

namespace berth::pipeline {
namespace {

// Every object the store's step rows name as an output, and which of them are trees.
Result<std::vector<std::string>> row_objects(store::ObjectStore& store,
                                             std::set<std::string>* trees) {
  std::vector<std::string> names;
  BERTH_TRY(auto rows, store.list_rows(store::row_address("steps", "")));
  for (const auto& a : rows) {
    auto row = store.get_row(a);
    if (!row.ok() || !row->has_value()) continue;
    auto j = nlohmann::json::parse(**row, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("outputs") || !j["outputs"].is_object()) {
      continue;
    }
    for (auto& [k, v] : j["outputs"].items()) {
      if (!v.is_object()) continue;
      names.push_back(v.value("object", ""));
      if (v.value("form", "") == "tree") trees->insert(names.back());
    }
  }
  return names;
}

}  // namespace

size_t StoreCheck::bad() const {
  size_t n = 0;
  for (const auto& o : objects) n += o.ok ? 0 : 1;
  return n;
}

Result<StoreCheck> verify_store(store::ObjectStore& store, const std::vector<std::string>& given) {
  std::vector<std::string> names = given;
  std::set<std::string> trees;
  if (names.empty()) {
    BERTH_TRY(names, row_objects(store, &trees));
  }
  StoreCheck out;
  // A tree's files are appended as it is read, so the loop runs over a growing list.
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string n = names[i];
    bool ok = false;
    if (trees.count(n)) {
      std::vector<store::TreeEntry> entries;
      auto got = store::get_tree(store, n, &entries);
      ok = got.ok() && got->present();
      if (ok) {
        for (std::string& child : store::tree_objects(entries)) names.push_back(std::move(child));
      }
    } else {
      auto got = store.get_object(n);
      ok = got.ok() && got->present();
    }
    out.objects.push_back({n, ok});
  }
  return out;
}

}  // namespace berth::pipeline
