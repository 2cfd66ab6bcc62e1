#include "saturn/rules/rewrite.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "saturn/rules/machine.h"

namespace saturn {

namespace {

using Key = absl::InlinedVector<Id, 4>;

// Joins the matches so far with one more pattern's matches on the variables
// both bind. `before` lists the earlier patterns whose root must be a lower
// class than the new pattern's (interchangeable patterns).
RuleMatches join(const RuleMatches& left, const PatternMatches& right, std::size_t limit,
                 std::span<const std::uint32_t> before) {
  RuleMatches out;
  out.num_patterns = left.num_patterns + 1;
  out.num_vars = left.num_vars;
  if (left.size() == 0 || right.size() == 0) return out;
  std::vector<std::size_t> shared;
  for (std::size_t v = 0; v < left.num_vars; ++v) {
    if (left.subst(0)[v].valid() && right.subst(0)[v].valid()) shared.push_back(v);
  }
  absl::flat_hash_map<Key, std::vector<std::uint32_t>> index;
  for (std::size_t j = 0; j < right.size(); ++j) {
    Key key;
    for (std::size_t v : shared) key.push_back(right.subst(j)[v]);
    index[key].push_back(static_cast<std::uint32_t>(j));
  }
  for (std::size_t i = 0; i < left.size() && out.size() < limit; ++i) {
    Key key;
    for (std::size_t v : shared) key.push_back(left.subst(i)[v]);
    auto it = index.find(key);
    if (it == index.end()) continue;
    auto roots = left.roots_of(i);
    for (std::uint32_t j : it->second) {
      if (out.size() >= limit) break;
      if (std::any_of(before.begin(), before.end(),
                      [&](std::uint32_t p) { return !(roots[p] < right.roots[j]); }))
        continue;
      out.roots.insert(out.roots.end(), roots.begin(), roots.end());
      out.roots.push_back(right.roots[j]);
      for (std::size_t v = 0; v < left.num_vars; ++v) {
        Id a = left.subst(i)[v];
        out.substs.push_back(a.valid() ? a : right.subst(j)[v]);
      }
    }
  }
  return out;
}

}  // namespace

RuleMatches search_rule(const EGraph& egraph, const Rule& rule, std::size_t limit) {
  RuleMatches out;
  search_rule(egraph, rule, limit, out);
  return out;
}

void search_rule(const EGraph& egraph, const Rule& rule, std::size_t limit, RuleMatches& out) {
  // The first pattern's matches go straight into out's buffers.
  PatternMatches first;
  first.roots = std::move(out.roots);
  first.substs = std::move(out.substs);
  first.clear();
  search_pattern(egraph, rule.lhs[0], rule.num_vars(), first, rule.is_multi() ? SIZE_MAX : limit);
  out.num_patterns = 1;
  out.num_vars = rule.num_vars();
  out.roots = std::move(first.roots);
  out.substs = std::move(first.substs);
  std::vector<std::uint32_t> before;
  for (std::size_t p = 1; p < rule.lhs.size(); ++p) {
    PatternMatches next;
    search_pattern(egraph, rule.lhs[p], rule.num_vars(), next);
    before.clear();
    for (auto [i, j] : rule.interchangeable) {
      if (j == p) before.push_back(i);
    }
    out = join(out, next, p + 1 == rule.lhs.size() ? limit : SIZE_MAX, before);
  }
}

namespace {

// Instantiates one pattern many times: its attributes are interned once and
// its scratch buffers reused.
class Instantiator {
 public:
  Instantiator(EGraph& egraph, const Pattern& pattern)
      : egraph_(egraph),
        pattern_(pattern),
        attrs_(pattern.nodes.size()),
        ids_(pattern.nodes.size()) {
    for (std::size_t i = 0; i < pattern.nodes.size(); ++i) {
      const PatternNode& n = pattern.nodes[i];
      if (n.is_var()) continue;
      ++num_ops_;
      if (n.attr_vars.empty() && n.attr_calls.empty()) {
        attrs_[i] = egraph.attrs().intern(n.attributes);
      } else {
        computed_attrs_ = true;
      }
    }
  }

  // Adds the instantiated pattern; with `into` valid, its root joins that
  // class (EGraph::add_into) and the merged class is returned.
  std::optional<Id> run(std::span<const Id> subst, AddStatus* status, Id into = Id()) {
    if (computed_attrs_ && !bind_attributes(subst)) {
      if (status) *status = AddStatus::kRejected;
      return std::nullopt;
    }
    // The result must fit as a whole: unless there is room for every node,
    // look the nodes up first and check that the missing ones fit.
    std::fill(ids_.begin(), ids_.end(), Id());
    if (!egraph_.has_room_for(num_ops_) && !egraph_.has_room_for(look_up(subst))) {
      if (status) *status = AddStatus::kNodeLimit;
      return std::nullopt;
    }
    const std::size_t root = pattern_.nodes.size() - 1;
    for (std::size_t i = 0; i < pattern_.nodes.size(); ++i) {
      const PatternNode& n = pattern_.nodes[i];
      if (n.is_var()) {
        ids_[i] = subst[n.var];
      } else if (!ids_[i].valid()) {
        AddResult r = i == root && into.valid() ? egraph_.add_into(node_at(i), into)
                                                : egraph_.add(node_at(i));
        if (!r.ok()) {
          if (status) *status = r.status;
          return std::nullopt;
        }
        ids_[i] = r.id;
      }
    }
    if (status) *status = AddStatus::kExisting;
    if (!into.valid()) return ids_.back();
    absl::StatusOr<Id> merged = egraph_.merge(into, ids_.back());
    if (!merged.ok()) {
      if (status) *status = AddStatus::kConflict;
      return std::nullopt;
    }
    return *merged;
  }

 private:
  // Fills in the attributes that come from attribute variables; false when
  // the language rejects the result (a value of the wrong kind).
  bool bind_attributes(std::span<const Id> subst) {
    for (std::size_t i = 0; i < pattern_.nodes.size(); ++i) {
      const PatternNode& n = pattern_.nodes[i];
      if (n.is_var() || (n.attr_vars.empty() && n.attr_calls.empty())) continue;
      Attributes attrs = n.attributes;
      for (const AttrVar& a : n.attr_vars)
        attrs.set(a.key, egraph_.attr_value(AttrId(subst[a.var].value)));
      for (const AttrCall& c : n.attr_calls) {
        args_.clear();
        for (int v : c.args) args_.push_back(subst[v]);
        std::optional<AttrValue> value = c.function->fn(egraph_, args_);
        if (!value) return false;
        attrs.set(c.key, *std::move(value));
      }
      absl::StatusOr<Attributes> normalized =
          egraph_.language().normalize(n.op, std::move(attrs), {});
      if (!normalized.ok()) return false;
      attrs_[i] = egraph_.attrs().intern(*normalized);
    }
    return true;
  }

  // Fills `ids_` with the classes of the nodes already present; returns how
  // many are missing (a node with a missing child is missing too).
  std::size_t look_up(std::span<const Id> subst) {
    std::size_t missing = 0;
    for (std::size_t i = 0; i < pattern_.nodes.size(); ++i) {
      const PatternNode& n = pattern_.nodes[i];
      if (n.is_var()) {
        ids_[i] = subst[n.var];
        continue;
      }
      bool complete = true;
      for (std::uint32_t c : n.children) complete &= ids_[c].valid();
      std::optional<Id> found = complete ? egraph_.lookup(node_at(i)) : std::nullopt;
      ids_[i] = found.value_or(Id());
      missing += !found;
    }
    return missing;
  }

  ENode node_at(std::size_t i) const {
    const PatternNode& n = pattern_.nodes[i];
    ENode node(n.op, attrs_[i]);
    for (std::uint32_t c : n.children) node.children.push_back(ids_[c]);
    return node;
  }

  EGraph& egraph_;
  const Pattern& pattern_;
  std::vector<AttrId> attrs_;
  std::vector<Id> ids_;
  std::vector<Id> args_;
  std::size_t num_ops_ = 0;      // pattern nodes that are not variables
  bool computed_attrs_ = false;  // whether a node takes attributes from the match
};

}  // namespace

std::optional<Id> instantiate(EGraph& egraph, const Pattern& pattern, std::span<const Id> subst,
                              AddStatus* status) {
  return Instantiator(egraph, pattern).run(subst, status);
}

ApplyResult apply_rule(EGraph& egraph, const Rule& rule, const RuleMatches& matches,
                       std::span<const std::size_t> which) {
  ApplyResult result;
  std::vector<Id> args, results;
  std::vector<Instantiator> rhs;
  rhs.reserve(rule.rhs.size());
  for (const Pattern& p : rule.rhs) rhs.emplace_back(egraph, p);
  auto apply_one = [&](std::size_t m) -> bool {
    std::span<const Id> subst = matches.subst(m);
    for (const RuleCondition& c : rule.conditions) {
      args.clear();
      for (int v : c.args) args.push_back(subst[v]);
      if (!c.predicate->fn(egraph, args)) {
        ++result.skipped;
        return true;
      }
    }
    if (rule.root_condition != nullptr) {
      for (const Id root : matches.roots_of(m)) {
        if (!rule.root_condition->fn(egraph, std::span(&root, 1))) {
          ++result.skipped;
          return true;
        }
      }
    }
    const std::size_t nodes_before = egraph.nodes_added();
    const std::size_t classes_before = egraph.num_classes();
    // A single result joins the matched class directly. Several are all
    // added first and merged only if none conflicts with its class, so that
    // no part of a rule's equalities is asserted without the rest (the nodes
    // of results built before a refusal stay, unmerged, as any e-node does).
    const bool single = rule.rhs.size() == 1;
    results.clear();
    for (std::size_t p = 0; p < rule.rhs.size(); ++p) {
      AddStatus status = AddStatus::kExisting;
      const Id root = matches.roots_of(m)[p];
      std::optional<Id> id = rhs[p].run(subst, &status, single ? root : Id());
      if (!id) {
        switch (status) {
          case AddStatus::kRejected:
            ++result.skipped;
            return true;
          case AddStatus::kConflict:
            ++result.conflicts;
            return true;
          default:
            result.stopped = status;
            return false;
        }
      }
      if (!single && egraph.analysis() != nullptr &&
          egraph.analysis()->conflict(egraph.find(root), egraph.find(*id))) {
        ++result.conflicts;
        return true;
      }
      results.push_back(*id);
    }
    if (!single) {
      for (std::size_t p = 0; p < results.size(); ++p) {
        // Checked above; two results cannot conflict once each fits its class.
        absl::StatusOr<Id> merged = egraph.merge(matches.roots_of(m)[p], results[p]);
        assert(merged.ok());
        (void)merged;
      }
    }
    if (egraph.nodes_added() != nodes_before || egraph.num_classes() != classes_before)
      ++result.applied;
    return true;
  };
  if (which.empty()) {
    for (std::size_t m = 0; m < matches.size(); ++m) {
      if (!apply_one(m)) break;
    }
  } else {
    for (std::size_t m : which) {
      if (!apply_one(m)) break;
    }
  }
  return result;
}

}  // namespace saturn
