// The settled record's steps (settled.h, spec 04 §7.1): where a record and its steps
// object are kept, and the steps a rerun reports — the object with the record's
// overrides spliced in.
#include "pipeline/settled.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "util/memory.h"

namespace berth::pipeline {

std::string settled_steps_path(std::string_view cache_dir, std::string_view steps_object) {
  if (!store::check_object_name(steps_object).ok()) return "";
  return fmt::format("{}/settled/{}.json", cache_dir, steps_object.substr(7));
}

std::string settled_record_path(std::string_view cache_dir, std::string_view steps_object) {
  if (!store::check_object_name(steps_object).ok()) return "";
  return fmt::format("{}/settled/{}.record", cache_dir, steps_object.substr(7));
}

Result<std::string> settled_steps_text(const Settled& s, std::string_view object) {
  if (object.size() != s.object_bytes) {
    return fail(Errc::kInvalidInput,
                fmt::format("settled record: the steps object is {} bytes, the record says {}",
                            object.size(), s.object_bytes));
  }
  return splice_overrides(object, s.overrides);
}

Result<std::string> splice_overrides(std::string_view object,
                                     const std::vector<SettledOverride>& overrides) {
  size_t bytes = object.size(), pos = 0;
  for (const auto& v : overrides) {
    if (v.offset < pos || v.offset > object.size() || v.length > object.size() - v.offset) {
      return fail(Errc::kInvalidInput, "settled record: an override lies outside its object");
    }
    bytes = bytes - v.length + v.entry.size();
    pos = v.offset + v.length;
  }
  std::string out;
  memory::reserve_populated(out, bytes);
  pos = 0;
  for (const auto& v : overrides) {
    out.append(object.substr(pos, v.offset - pos)).append(v.entry);
    pos = v.offset + v.length;
  }
  out.append(object.substr(pos));
  return out;
}

std::optional<EntrySpans> settled_object_spans(const Settled& s) {
  EntrySpans out;
  out.reserve(s.entries.size());
  // How far the steps a rerun reports have moved from the object, up to here.
  int64_t shift = 0;
  size_t k = 0;  // the next override
  const auto& ov = s.overrides;
  for (const auto& e : s.entries) {
    int64_t at = static_cast<int64_t>(e.offset) - shift;
    if (at < 0) return std::nullopt;
    auto offset = static_cast<size_t>(at);
    if (k < ov.size() && ov[k].offset == offset) {
      if (e.length != ov[k].entry.size()) return std::nullopt;
      out.emplace_back(ov[k].offset, ov[k].length);
      shift += static_cast<int64_t>(ov[k].entry.size()) - static_cast<int64_t>(ov[k].length);
      ++k;
      continue;
    }
    if (offset > s.object_bytes || e.length > s.object_bytes - offset) return std::nullopt;
    if (k < ov.size() && offset + e.length > ov[k].offset) return std::nullopt;
    out.emplace_back(offset, e.length);
  }
  if (k != ov.size()) return std::nullopt;  // an override of no entry
  return out;
}

std::shared_ptr<const RecordedEntries> recorded_entries(const Settled& s,
                                                        files::SharedBytes object) {
  if (!object || object->size() != s.object_bytes) return nullptr;
  auto spans = settled_object_spans(s);
  if (!spans) return nullptr;
  auto r = std::make_shared<RecordedEntries>();
  r->overridden.reserve(s.overrides.size());
  for (const auto& v : s.overrides) r->overridden.push_back(v.entry);
  r->text.reserve(spans->size());
  size_t k = 0;  // the next override
  for (const auto& [offset, length] : *spans) {
    if (k < s.overrides.size() && s.overrides[k].offset == offset) {
      r->text.emplace_back(r->overridden[k++]);
    } else {
      r->text.emplace_back(object->data() + offset, length);
    }
  }
  r->object = std::move(object);
  return r;
}

std::optional<std::vector<SettledOverride>> settled_overrides(std::string_view object,
                                                              const EntrySpans& object_spans,
                                                              std::string_view steps,
                                                              const EntrySpans& spans,
                                                              size_t max_bytes) {
  if (object_spans.size() != spans.size()) return std::nullopt;
  std::vector<SettledOverride> out;
  size_t op = 0, sp = 0, bytes = 0;  // where the last entries ended; the overrides' size
  for (size_t i = 0; i < spans.size(); ++i) {
    auto [oo, ol] = object_spans[i];
    auto [so, sl] = spans[i];
    if (oo < op || oo > object.size() || ol > object.size() - oo || so < sp || so > steps.size() ||
        sl > steps.size() - so) {
      return std::nullopt;
    }
    if (object.substr(op, oo - op) != steps.substr(sp, so - sp)) return std::nullopt;
    std::string_view theirs = object.substr(oo, ol), ours = steps.substr(so, sl);
    if (theirs != ours) {
      bytes += ours.size();
      if (bytes > max_bytes) return std::nullopt;
      out.push_back({oo, ol, std::string(ours)});
    }
    op = oo + ol;
    sp = so + sl;
  }
  if (object.substr(op) != steps.substr(sp)) return std::nullopt;
  return out;
}

}  // namespace berth::pipeline
