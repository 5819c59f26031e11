#include "attention_lab/thread_pool.hpp"

#include <algorithm>
#include <chrono>
#include <system_error>

namespace attention_lab {

namespace {
/// Polls `ready` for up to ThreadPool::kSpinMicroseconds; true as soon as it holds, false on time out
/// (then the caller blocks). The clock is read once every 64 polls.
template <typename Ready>
bool spin_until(Ready ready) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(ThreadPool::kSpinMicroseconds);
  for (int i = 1;; ++i) {
    if (ready()) return true;
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) return false;
  }
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  const int n = std::clamp(threads, 1, kMaxThreads);
  workers_.reserve(static_cast<size_t>(n - 1));
  for (int i = 1; i < n; ++i) {
    try {
      workers_.emplace_back([this] { work(); });
    } catch (const std::system_error&) {
      break;  // no more threads here (EAGAIN): the pool is the ones that started
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::drain(const std::function<void(int64_t)>& task, int64_t count) {
  for (;;) {
    int64_t i;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (next_ >= count) return;
      i = next_++;
    }
    std::exception_ptr error;
    try {
      task(i);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (error && !error_) error_ = error;
    if (++finished_ == count) done_.notify_all();
  }
}

void ThreadPool::work() {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t)>* task;
    int64_t count;
    spin_until([&] { return stop_.load(std::memory_order_relaxed) || job_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || (task_ != nullptr && job_ != seen); });
      if (stop_) return;
      seen = job_;
      task = task_;
      count = count_;
      ++active_;
    }
    drain(*task, count);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--active_ == 0) done_.notify_all();
  }
}

void ThreadPool::run(int64_t count, const std::function<void(int64_t)>& task) {
  if (count <= 0) return;
  bool shared = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!busy_ && !workers_.empty() && count > 1) {  // else nested (a task's own products) or a pool of one
      shared = busy_ = true;
      task_ = &task;
      count_ = count;
      next_ = finished_ = 0;
      error_ = nullptr;
      ++job_;
    }
  }
  if (!shared) {  // inline: the same tasks, in order
    for (int64_t i = 0; i < count; ++i) task(i);
    return;
  }
  wake_.notify_all();
  drain(task, count);
  spin_until([&] { return finished_.load(std::memory_order_acquire) == count && active_.load(std::memory_order_acquire) == 0; });
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // every task finished, and no worker still inside the job (it would read task_ after we return)
    done_.wait(lock, [&] { return finished_ == count && active_ == 0; });
    task_ = nullptr;
    busy_ = false;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void parallel_for(ThreadPool* pool, int64_t count, double work, const std::function<void(int64_t)>& task) {
  if (pool != nullptr && pool->size() > 1 && count > 1 && work >= kMinParallelWork) {
    pool->run(count, task);
    return;
  }
  for (int64_t i = 0; i < count; ++i) task(i);
}

}  // namespace attention_lab
