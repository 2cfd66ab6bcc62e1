#include "saturn/base/ranks.h"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#ifdef SATURN_MPI
#include <boost/mpi/collectives.hpp>
#include <boost/mpi/collectives/all_gather.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <mpi.h>
#endif

namespace saturn {

#ifdef SATURN_MPI

namespace {

constexpr int kAsk = 1, kAnswer = 2;
constexpr std::chrono::milliseconds kPoll(2);

// Waits for every rank to arrive here, sleeping between polls (MPI's own
// waits spin, which takes the core of a rank still at work).
void wait_for_all(const boost::mpi::communicator& world) {
  MPI_Request request;
  MPI_Ibarrier(world, &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(kPoll);
  }
}

}  // namespace

// Rank 0 hands out task numbers: a thread there answers the other ranks'
// requests (MPI_THREAD_MULTIPLE), and rank 0's own requests take the same
// counter under a lock.
struct Ranks::Mpi {
  boost::mpi::environment env{boost::mpi::threading::multiple};
  boost::mpi::communicator world;
  std::mutex mutex;
  std::size_t next = 0;
  std::size_t count = 0;  // the task count of the current handing-out
  std::thread server;

  std::size_t take() {
    std::lock_guard<std::mutex> lock(mutex);
    return next < count ? next++ : count;
  }
  // Answers every other rank until each has been told that nothing is left.
  // It polls and sleeps: a blocking receive spins, and would take a core
  // from the rank's own work.
  void serve() {
    int done = 0;
    while (done < world.size() - 1) {
      if (!world.iprobe(boost::mpi::any_source, kAsk)) {
        std::this_thread::sleep_for(kPoll);
        continue;
      }
      int from_count = 0;
      boost::mpi::status s = world.recv(boost::mpi::any_source, kAsk, from_count);
      const std::size_t task = take();
      world.send(s.source(), kAnswer, task);
      if (task >= count) ++done;
    }
  }
};

Ranks::Ranks() : mpi_(std::make_unique<Mpi>()) {
  rank_ = mpi_->world.rank();
  size_ = mpi_->world.size();
}

Ranks::~Ranks() {
  if (mpi_->server.joinable()) mpi_->server.join();
}

bool Ranks::distributed_build() { return true; }

bool Ranks::launched() {
  // Open MPI's launcher, and the PMI and PMIx process managers others use.
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(variable) != nullptr) return true;
  return false;
}

std::size_t Ranks::next_task(std::size_t count) {
  if (size_ == 1) return next_ < count ? next_++ : count;
  if (rank_ == 0) {
    if (!mpi_->server.joinable()) {
      mpi_->count = count;
      mpi_->server = std::thread([this] { mpi_->serve(); });
    }
    return mpi_->take();
  }
  std::size_t task = count;
  mpi_->world.send(0, kAsk, static_cast<int>(count));
  boost::mpi::request answer = mpi_->world.irecv(0, kAnswer, task);
  while (!answer.test()) std::this_thread::sleep_for(kPoll);
  return task;
}

std::vector<std::string> Ranks::gather(const std::string& mine) {
  if (size_ > 1) wait_for_all(mpi_->world);
  if (rank_ == 0 && mpi_->server.joinable()) mpi_->server.join();
  std::vector<std::string> all;
  boost::mpi::gather(mpi_->world, mine, all, 0);
  return all;
}

std::vector<std::string> Ranks::all_gather(const std::string& mine) {
  std::vector<std::string> all;
  boost::mpi::all_gather(mpi_->world, mine, all);
  return all;
}

int Ranks::broadcast(int value) {
  boost::mpi::broadcast(mpi_->world, value, 0);
  return value;
}

#else

struct Ranks::Mpi {};

Ranks::Ranks() = default;
Ranks::~Ranks() = default;

bool Ranks::distributed_build() { return false; }

bool Ranks::launched() { return false; }

std::size_t Ranks::next_task(std::size_t count) { return next_ < count ? next_++ : count; }

std::vector<std::string> Ranks::gather(const std::string& mine) { return {mine}; }

std::vector<std::string> Ranks::all_gather(const std::string& mine) { return {mine}; }

int Ranks::broadcast(int value) { return value; }

#endif

}  // namespace saturn
