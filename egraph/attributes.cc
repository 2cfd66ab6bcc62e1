#include "saturn/egraph/attributes.h"

#include <algorithm>
#include <cctype>

#include "fmt/format.h"
#include "fmt/ranges.h"

namespace saturn {

namespace {

bool is_bare_word(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

}  // namespace

std::string format_attr_value(const AttrValue& value) {
  struct Formatter {
    std::string operator()(std::int64_t v) const { return fmt::format("{}", v); }
    std::string operator()(double v) const {
      std::string s = fmt::format("{}", v);
      // Keep floats recognisable as floats when read back.
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      return s;
    }
    std::string operator()(const std::string& v) const {
      return is_bare_word(v) && !std::isdigit(static_cast<unsigned char>(v[0])) && v[0] != '-'
                 ? v
                 : fmt::format("\"{}\"", v);
    }
    std::string operator()(const std::vector<std::int64_t>& v) const {
      return fmt::format("[{}]", fmt::join(v, ","));
    }
  };
  return std::visit(Formatter{}, value);
}

Attributes::Attributes(std::initializer_list<Attribute> entries) {
  for (const Attribute& e : entries) set(e.key, e.value);
}

void Attributes::set(std::string_view key, AttrValue value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const Attribute& e, std::string_view k) { return e.key < k; });
  if (it != entries_.end() && it->key == key) {
    it->value = std::move(value);
  } else {
    entries_.insert(it, Attribute{std::string(key), std::move(value)});
  }
}

const AttrValue* Attributes::find(std::string_view key) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const Attribute& e, std::string_view k) { return e.key < k; });
  return it != entries_.end() && it->key == key ? &it->value : nullptr;
}

std::optional<std::int64_t> Attributes::get_int(std::string_view key) const {
  const AttrValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* i = std::get_if<std::int64_t>(v)) return *i;
  return std::nullopt;
}

std::optional<double> Attributes::get_float(std::string_view key) const {
  const AttrValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
  return std::nullopt;
}

const std::string* Attributes::get_string(std::string_view key) const {
  const AttrValue* v = find(key);
  return v == nullptr ? nullptr : std::get_if<std::string>(v);
}

const std::vector<std::int64_t>* Attributes::get_ints(std::string_view key) const {
  const AttrValue* v = find(key);
  return v == nullptr ? nullptr : std::get_if<std::vector<std::int64_t>>(v);
}

std::string Attributes::to_string() const {
  if (entries_.empty()) return "";
  std::string out = "{";
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (i > 0) out += ", ";
    out += entries_[i].key;
    out += '=';
    out += format_attr_value(entries_[i].value);
  }
  out += '}';
  return out;
}

std::size_t Attributes::heap_bytes() const {
  std::size_t bytes = entries_.size() * sizeof(Attribute);
  for (const Attribute& e : entries_) {
    bytes += e.key.size();
    if (const auto* s = std::get_if<std::string>(&e.value)) bytes += s->size();
    if (const auto* v = std::get_if<std::vector<std::int64_t>>(&e.value)) {
      bytes += v->size() * sizeof(std::int64_t);
    }
  }
  return bytes;
}

AttrTable::AttrTable() { intern(Attributes{}); }

AttrId AttrTable::intern(const Attributes& attributes) {
  auto [it, inserted] = index_.try_emplace(attributes, AttrId(sets_.size()));
  if (!inserted) return it->second;
  const AttrId id = it->second;
  sets_.push_back(attributes);
  bytes_ += sizeof(Attributes) + attributes.heap_bytes();
  // The handles of its values ({"" = value}, EGraph::intern_value) come with
  // a new set, so that e-matching, which binds them, finds them and never
  // grows the table (whose bytes count in the e-graph's budget) on its own.
  const bool is_handle = attributes.entries().size() == 1 && attributes.entries()[0].key.empty();
  if (!is_handle) {
    for (const Attribute& a : attributes.entries()) intern(Attributes{{std::string(), a.value}});
  }
  return id;
}

std::optional<AttrId> AttrTable::find(const Attributes& attributes) const {
  auto it = index_.find(attributes);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

void AttrTable::truncate(std::size_t n) {
  n = std::max<std::size_t>(n, 1);  // the empty set stays
  while (sets_.size() > n) {
    index_.erase(sets_.back());
    bytes_ -= sizeof(Attributes) + sets_.back().heap_bytes();
    sets_.pop_back();
  }
}

}  // namespace saturn
