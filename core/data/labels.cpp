// Class labels for classifiers: integer class indices ("0", "3") or class names ("cat").

#include "core/data/dataset.hpp"
#include "base/error.hpp"
#include "base/text.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace dt::data {
namespace {

constexpr std::uint64_t kMaxClasses = 1000;

// A label that is all decimal digits ("0", "7", "007"); no sign, point or exponent, so "1.5"
// and "-1" are names.
std::optional<std::uint64_t> as_class_index(std::string_view label) {
  if (label.empty() || !std::all_of(label.begin(), label.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(label.data(), label.data() + label.size(), value);
  if (ec != std::errc{} || ptr != label.data() + label.size()) return std::nullopt;
  return value;
}

// True when the classes are exactly "0".."K-1", as resolve_classes makes them for integer labels.
bool are_indices(const std::vector<std::string>& classes) {
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (classes[i] != std::to_string(i)) return false;
  }
  return true;
}

std::string class_list(const std::vector<std::string>& classes) {
  constexpr std::size_t kShown = 10;
  std::vector<std::string> shown;
  for (std::size_t i = 0; i < classes.size() && i < kShown; ++i) shown.push_back("'" + classes[i] + "'");
  if (classes.size() <= kShown) return text::join_or(shown);
  std::string out;
  for (const auto& s : shown) out += s + ", ";
  return fmt::format("{}... ({} classes)", out, classes.size());
}

}  // namespace

std::vector<std::string> distinct_labels(const Shard& shard) {
  std::vector<std::string> labels = shard.raw_labels;
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  return labels;
}

std::vector<std::string> resolve_classes(const std::vector<std::string>& labels) {
  std::vector<std::string> names = labels;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  if (names.empty()) fail<DataError>("label column has no values; a classifier needs at least two classes");

  std::optional<std::uint64_t> largest = 0;
  for (const auto& name : names) {
    const auto index = as_class_index(name);
    if (!index) {
      largest.reset();
      break;
    }
    largest = std::max(*largest, *index);
  }

  if (largest) {
    if (*largest >= kMaxClasses) {
      fail<DataError>(
          "label column has integer labels up to {} ({} classes); is it the right column? (a "
          "classifier supports at most {} classes)",
          *largest, *largest + 1, kMaxClasses);
    }
    if (*largest == 0) {
      fail<DataError>("label column has only one class ('{}'); a classifier needs at least two",
                      names.front());
    }
    std::vector<std::string> classes;
    classes.reserve(*largest + 1);
    for (std::uint64_t k = 0; k <= *largest; ++k) classes.push_back(std::to_string(k));
    return classes;
  }

  if (names.size() > kMaxClasses) {
    fail<DataError>(
        "label column has {} distinct values; is it the right column? (a classifier supports at "
        "most {} classes)",
        names.size(), kMaxClasses);
  }
  if (names.size() < 2) {
    fail<DataError>("label column has only one class ('{}'); a classifier needs at least two",
                    names.front());
  }
  return names;
}

void assign_classes(Shard& shard, const std::vector<std::string>& classes) {
  shard.y.resize(static_cast<Eigen::Index>(shard.raw_labels.size()));
  const bool indices = are_indices(classes);
  std::unordered_map<std::string_view, std::size_t> lookup;
  if (!indices) {
    lookup.reserve(classes.size());
    for (std::size_t k = 0; k < classes.size(); ++k) lookup.emplace(classes[k], k);
  }
  for (std::size_t i = 0; i < shard.raw_labels.size(); ++i) {
    const std::string& label = shard.raw_labels[i];
    std::optional<std::size_t> k;
    if (indices) {
      // Integer classes compare by value, so "02" is class 2.
      const auto v = as_class_index(label);
      if (v && *v < classes.size()) k = static_cast<std::size_t>(*v);
    } else if (const auto it = lookup.find(label); it != lookup.end()) {
      k = it->second;
    }
    if (!k) {
      fail<DataError>("label '{}' is not one of the classes ({})", label, class_list(classes));
    }
    shard.y(static_cast<Eigen::Index>(i)) = static_cast<double>(*k);
  }
}

}  // namespace dt::data
