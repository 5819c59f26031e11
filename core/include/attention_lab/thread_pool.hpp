// A small pool of threads that runs independent tasks, owned by whoever runs the forwards (a Session,
// a native program) and handed to the products through ForwardOptions::pool and ops::gemm's first
// argument. No global pool: a null pool means one thread, everywhere.
//
// Bit-identical at any thread count: callers split work only into tasks whose outputs are disjoint
// (row blocks of a product, (batch, head) pairs of attention), and the split depends only on the
// problem's sizes, never on the pool's. Each output value is then computed by the same instructions
// whether its task runs on the caller, on a worker, or on a pool of one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace attention_lab {

class ThreadPool {
 public:
  /// The most threads a pool may have (the caller included).
  static constexpr int kMaxThreads = 16;

  /// A pool of `threads` threads: the caller of run() plus threads - 1 workers, started here.
  /// `threads` is clamped to 1 .. kMaxThreads; a worker the system refuses to start (an Emscripten
  /// build whose pool of Web Workers is smaller) is left out, so size() is what really runs.
  explicit ThreadPool(int threads);
  ~ThreadPool();  // joins the workers
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Threads that run tasks: 1 + the workers started.
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// How long a thread polls before it blocks, in microseconds: a worker after a job (the next one, the
  /// forward's next product, comes tens of microseconds later), and the caller waiting for the last
  /// task. Waking a blocked thread costs a futex wake, on a VM an interrupt to an idle core: tens to
  /// hundreds of microseconds, a whole product at 6 tokens. Idle, a pool polls this long and sleeps.
  static constexpr int kSpinMicroseconds = 200;

  /// Runs task(i) once for every i in [0, count) and returns when all are done; the caller runs tasks
  /// too. Tasks are claimed in index order by whichever thread is free. The first exception a task
  /// throws is rethrown here (after every task has finished). A run() called from inside a task, or
  /// while another thread's run() is in progress, runs its tasks inline, in order.
  void run(int64_t count, const std::function<void(int64_t)>& task);

 private:
  void work();
  void drain(const std::function<void(int64_t)>& task, int64_t count);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* task_ = nullptr;  // the job of the current run, or null
  int64_t count_ = 0, next_ = 0;
  // Written under mutex_; atomic so that a polling thread may read them without it.
  std::atomic<int64_t> finished_{0};
  std::atomic<uint64_t> job_{0};  // bumped per run: a worker takes part in each job once
  std::atomic<int> active_{0};    // workers inside the current job
  std::atomic<bool> stop_{false};
  bool busy_ = false;
  std::exception_ptr error_;
};

/// Runs task(i) for i in [0, count): on the pool when there is one with more than one thread, more
/// than one task, and at least `min_work` units of work in all (below that, threads cost more than they
/// save: the book's 6 tokens never wake one); else inline, in index order. The same tasks either way.
void parallel_for(ThreadPool* pool, int64_t count, double work, const std::function<void(int64_t)>& task);

/// The work (multiply-adds) below which parallel_for runs inline: about 50 microseconds of one
/// thread's products, a worker's wake-up many times over.
inline constexpr double kMinParallelWork = 1 << 18;

}  // namespace attention_lab
