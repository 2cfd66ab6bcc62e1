// The environment over a line-based JSON protocol, so that an agent in
// another process (a PPO learner in Python, say) drives the same rewrites as
// saturn's own strategies. One request per line in, one response per line
// out; `saturn env` serves it on stdin/stdout. See docs/env-protocol.md.
//
//   -> {"cmd": "reset", "model": "squeezenet", "budget_nodes": 2000, "cost": "roofline"}
//   <- {"ok": true, "num_actions": 147, "stop_action": 146, "observation": {...}}
//   -> {"cmd": "step", "action": 12}
//   <- {"ok": true, "reward": 0.031, "done": false, "applied": 26, "observation": {...}}
//
// A bad request gets {"ok": false, "error": "line 3: ..."} and the session
// goes on.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include "absl/status/statusor.h"
#include "saturn/tensor/graph.h"

namespace saturn {

// Loads the model a `reset` names (a zoo name or a file; the caller decides).
using ModelLoader = std::function<absl::StatusOr<tensor::Graph>(const std::string& name)>;

// Serves requests from `in` until end of input or {"cmd": "quit"}. Returns
// the number of requests that failed.
int serve_environment(std::istream& in, std::ostream& out, const ModelLoader& load_model);

}  // namespace saturn
