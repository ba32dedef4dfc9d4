#include "pipeline/step_row.h"

#include <nlohmann/json.hpp>

namespace berth::pipeline {
namespace {

using json = nlohmann::json;

// Tracks the path of keys down to depth 3 — [outputs, <out>, <field>] and [provenance,
// <field>] are the only places read — and ignores everything else.
class Reader : public nlohmann::json_sax<json> {
 public:
  explicit Reader(StepRowDigest* d) : d_(d) {}
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool string(string_t& v) override {
    if (depth_ == 3 && in_outputs_ && in_output_) {
      d_->outputs[keys_[1]][keys_[2]] = v;
    } else if (depth_ == 1 && keys_[0] == "log") {
      d_->log = v;
    } else if (depth_ == 2 && in_provenance_) {
      if (keys_[1] == "host") d_->host = v;
      if (keys_[1] == "cores") d_->cores = v;
      if (keys_[1] == "worker") d_->worker = v;
    }
    return value();
  }
  bool start_object(std::size_t) override {
    if (depth_ == 0) top_object_ = true;
    if (depth_ == 1 && keys_[0] == "outputs") in_outputs_ = outputs_seen_ = true;
    if (depth_ == 1 && keys_[0] == "provenance") in_provenance_ = true;
    if (depth_ == 2 && in_outputs_) {
      in_output_ = true;
      d_->outputs[keys_[1]];
    }
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ >= 1 && depth_ <= 3) keys_[depth_ - 1] = k;
    return true;
  }
  bool end_object() override {
    --depth_;
    if (depth_ == 2) in_output_ = false;
    if (depth_ == 1) in_outputs_ = in_provenance_ = false;
    return true;
  }
  bool start_array(std::size_t) override {
    value();
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

  // One object at the top, with an "outputs" member that is an object (and never also
  // something else, for a key given twice).
  bool usable() const { return top_object_ && outputs_seen_ && !outputs_not_object_; }

 private:
  // A value that is not an object where an output's record belongs makes it unusable;
  // at the top, a value that is not an object makes the row so ("outputs": 3).
  bool value() {
    if (depth_ == 2 && in_outputs_) d_->malformed.insert(keys_[1]);
    if (depth_ == 1 && keys_[0] == "outputs") outputs_not_object_ = true;
    return true;
  }

  StepRowDigest* d_;
  int depth_ = 0;
  std::string keys_[3];
  bool top_object_ = false;
  bool outputs_seen_ = false;
  bool outputs_not_object_ = false;
  bool in_outputs_ = false;
  bool in_output_ = false;
  bool in_provenance_ = false;
};

}  // namespace

std::optional<StepRowDigest> read_step_row(std::string_view text) {
  StepRowDigest d;
  Reader reader(&d);
  if (!json::sax_parse(text, &reader) || !reader.usable()) return std::nullopt;
  // A key given twice is merged where a full parse keeps the last: harmless, since
  // every object a row names is verified before it is used.
  return d;
}

}  // namespace berth::pipeline
