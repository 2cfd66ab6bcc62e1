// Compact 32-bit handles: e-class ids, operator symbols and attribute sets.
//
// Each handle kind is its own type, so an `Id` cannot be passed where a
// `Symbol` is expected:
//
//   Id a{3};
//   Symbol plus = language.find("+").value();
//   if (a.valid()) { ... }
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <utility>

namespace saturn {

template <typename Tag>
struct Handle {
  static constexpr std::uint32_t kInvalid = std::numeric_limits<std::uint32_t>::max();

  std::uint32_t value = kInvalid;

  constexpr Handle() = default;
  constexpr explicit Handle(std::uint32_t v) : value(v) {}

  constexpr bool valid() const { return value != kInvalid; }
  constexpr std::size_t index() const { return value; }

  friend constexpr bool operator==(Handle, Handle) = default;
  friend constexpr auto operator<=>(Handle, Handle) = default;

  template <typename H>
  friend H AbslHashValue(H h, Handle x) {
    return H::combine(std::move(h), x.value);
  }
};

// An e-class; also the e-node that created it (node i created class i).
using Id = Handle<struct IdTag>;
// An interned operator name of a `Language`.
using Symbol = Handle<struct SymbolTag>;
// An interned attribute set of an `AttrTable`; `AttrId{0}` is the empty set.
using AttrId = Handle<struct AttrIdTag>;

inline constexpr AttrId kNoAttributes{0};

}  // namespace saturn
