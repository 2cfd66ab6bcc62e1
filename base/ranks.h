// The processes of a run: one, or the ranks of an MPI launch (`mpirun -np N
// saturn batch ...`) when saturn is built with Boost.MPI (SATURN_MPI). The
// commands that spread work over ranks use only this interface:
//
//   Ranks ranks;                                   // MPI starts here, if built with it
//   for (std::size_t t; (t = ranks.next_task(n)) < n;) work(t);
//   std::vector<std::string> all = ranks.gather(mine);   // at rank 0, in rank order
//
// Tasks are handed out on demand by rank 0 (a thread there answers the other
// ranks while its own rank works too), so a rank that finishes early takes
// the next task: order them largest first.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace saturn {

class Ranks {
 public:
  Ranks();
  ~Ranks();
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Whether this build can run over MPI ranks.
  static bool distributed_build();
  // Whether this process was started by an MPI launcher (mpirun, srun with
  // PMI) in a build that can run over ranks: a program that uses ranks only
  // when launched so need not start MPI otherwise.
  static bool launched();

  // The next task of `count` for this rank; `count` or more once none is left.
  std::size_t next_task(std::size_t count);
  // Every rank's string, at rank 0 in rank order; empty on the other ranks.
  std::vector<std::string> gather(const std::string& mine);
  // Every rank's string, on every rank in rank order.
  std::vector<std::string> all_gather(const std::string& mine);
  // Rank 0's value, on every rank.
  int broadcast(int value);

 private:
  struct Mpi;
  std::unique_ptr<Mpi> mpi_;
  int rank_ = 0, size_ = 1;
  std::size_t next_ = 0;  // one rank: the next task
};

}  // namespace saturn
