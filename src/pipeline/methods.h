// The methods paragraph (spec 04 §9): what computed a pipeline's outputs, in words a
// paper's methods section can use, from the provenance records in the store.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace berth::pipeline {

// `rows` are the step rows (JSON) of every step of the run. Every distinct engine
// version and platform that contributed is named — with how many outputs each
// computed when there is more than one — never just the first: a mixed cluster, or
// one worker on an older berth, must not be written up as one machine. Rows that do
// not parse, or lack provenance, are counted and said so.
std::string methods_paragraph(std::string_view pipeline, const std::vector<std::string>& rows);

}  // namespace berth::pipeline
