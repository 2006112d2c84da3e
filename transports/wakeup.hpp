#pragma once
// A stop that reaches a thread blocked in a socket wait. A Listener or Connection told to wake on
// one (wake_on) returns std::nullopt from receive as soon as it is raised, and at once from every
// receive after: a level, never cleared. So a thread that waits in slices (the heartbeat
// threads) sees its stop flag without waiting out the slice, and a stop raised just before the
// wait begins is not lost.
//
// Thread-safe: raise() from any thread (a destructor, a signal-free stop path); the waiting
// socket's thread only polls fd(). Owned by whoever stops the thread; it outlives every socket
// told to wake on it.

namespace dt::transport {

class Wakeup {
 public:
  Wakeup();  // TransportError when the kernel gives no descriptor (out of file descriptors)
  ~Wakeup();
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  void raise() noexcept;
  [[nodiscard]] bool raised() const noexcept;
  // Readable once raised (for poll).
  [[nodiscard]] int fd() const noexcept { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace dt::transport
