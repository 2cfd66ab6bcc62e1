// Wall time since a starting point, for reports and time limits.
//
//   Stopwatch clock;
//   ... work ...
//   double s = clock.seconds();
//   clock.restart();
#pragma once

#include <chrono>

namespace saturn {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void restart() { start_ = std::chrono::steady_clock::now(); }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace saturn
