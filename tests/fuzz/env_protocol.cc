// The environment protocol (saturn env): a session of request lines against
// a small model, answered line by line; bad requests get errors and the
// session goes on.
#include <sstream>

#include "saturn/search/protocol.h"
#include "saturn/tensor/builder.h"
#include "saturn/tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace saturn;
  // Any model name loads the same small graph: the protocol is under test,
  // not the model files (their own harnesses cover them).
  auto load = [](const std::string&) -> absl::StatusOr<tensor::Graph> {
    tensor::GraphBuilder b("fuzz");
    tensor::Value x = b.input("x", {2, 8});
    tensor::Value w = b.weight("w", {8, 8});
    tensor::Value v = b.weight("v", {8, 8});
    b.output(b.relu(b.matmul(x, w)), "a");
    b.output(b.relu(b.matmul(x, v)), "b");
    return b.build();
  };
  std::istringstream in{std::string(fuzz::as_text(data, size))};
  std::ostringstream out;
  (void)serve_environment(in, out, load);
  return 0;
}
