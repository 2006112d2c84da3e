#include "core/coordinator/launcher.hpp"

#include "base/error.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <deque>
#include <thread>

namespace dt {

std::string ExitStatus::describe() const {
  if (signal != 0) {
    const char* name = sigabbrev_np(signal);
    return fmt::format("was killed by signal {} (SIG{})", signal, name ? name : "?");
  }
  return fmt::format("exited with code {}", code);
}

namespace {

ExitStatus decode_status(int status) {
  ExitStatus s;
  if (WIFSIGNALED(status)) s.signal = WTERMSIG(status);
  else if (WIFEXITED(status)) s.code = WEXITSTATUS(status);
  return s;
}

// A descriptor that becomes readable when `pid` exits (Linux >= 5.3), so that a wait for
// children sleeps until one ends rather than polling; -1 where the kernel has none (the waits
// then poll).
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

// This process's environment with `changes` applied ("NAME=VALUE" sets, "NAME" removes).
std::vector<std::string> child_environment(const std::vector<std::string>& changes) {
  const auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const bool changed = std::any_of(changes.begin(), changes.end(), [&](const std::string& c) {
      return name_of(c) == name_of(entry);
    });
    if (!changed) out.push_back(entry);
  }
  for (const auto& c : changes) {
    if (c.find('=') != std::string::npos) out.push_back(c);
  }
  return out;
}

}  // namespace

pid_t Launcher::spawn(int rank, const std::filesystem::path& program,
                      const std::vector<std::string>& args,
                      const std::filesystem::path& log_path,
                      const std::vector<std::string>& environment) {
  // Everything the child needs is prepared before fork: after it, in a multi-threaded parent,
  // only async-signal-safe calls are allowed.
  std::vector<std::string> storage;
  storage.push_back(program.string());
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage = child_environment(environment);
  std::vector<char*> envp;
  for (auto& s : env_storage) envp.push_back(s.data());
  envp.push_back(nullptr);

  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) fail<IoError>("cannot create worker log {}: {}", log_path.string(), std::strerror(errno));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();

  // Signals stay blocked across fork so that no handler of the parent (the coordinator's Ctrl-C
  // flag, a test framework's crash reporter) ever runs in the child before exec; the child
  // resets every disposition to the default and only then unblocks.
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = ::fork();
  if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) {
    const int err = errno;
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    fail<IoError>("cannot start worker {}: fork failed: {}", rank, std::strerror(err));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the coordinator died before prctl took effect
    for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);  // SIGKILL/SIGSTOP just fail
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    const char msg[] = "disttrain worker: exec failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  children_.push_back({rank, pid, log_path, false, {}, open_pidfd(pid)});
  return pid;
}

std::vector<ChildExit> Launcher::poll() {
  std::vector<ChildExit> exits = std::move(unreported_);
  unreported_.clear();
  for (auto& c : children_) {
    if (c.reaped) continue;
    int status = 0;
    const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid) {
      c.reap(status);
      exits.push_back({c.rank, c.pid, c.status});
    }
  }
  return exits;
}

// A rank may have had several children (a replacement after a failure): the latest speaks for it.
const Launcher::Child* Launcher::latest(int rank) const {
  for (auto c = children_.rbegin(); c != children_.rend(); ++c) {
    if (c->rank == rank) return &*c;
  }
  return nullptr;
}

std::optional<pid_t> Launcher::pid_of(int rank) const {
  if (const Child* c = latest(rank)) return c->pid;
  return std::nullopt;
}

std::optional<std::filesystem::path> Launcher::log_of(int rank) const {
  if (const Child* c = latest(rank)) return c->log;
  return std::nullopt;
}

bool Launcher::running(int rank) const {
  const Child* c = latest(rank);
  return c != nullptr && !c->reaped;
}

void Launcher::kill(int rank) {
  for (auto& c : children_) {
    if (c.rank != rank || c.reaped) continue;
    ::kill(c.pid, SIGKILL);  // also ends a stopped (hung) process
    int status = 0;
    while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {}
    c.reap(status);
  }
}

void Launcher::Child::reap(int wait_status) {
  reaped = true;
  status = decode_status(wait_status);
  if (pidfd >= 0) ::close(pidfd);
  pidfd = -1;
}

void Launcher::await_exit(Clock::time_point deadline) const {
  std::vector<pollfd> fds;
  for (const auto& c : children_) {
    if (c.reaped) continue;
    if (c.pidfd < 0) {  // no pidfd for this child: look again soon
      std::this_thread::sleep_until(std::min(deadline, Clock::now() + std::chrono::milliseconds(5)));
      return;
    }
    fds.push_back({c.pidfd, POLLIN, 0});
  }
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  // EINTR (a signal, say Ctrl-C) just returns: the caller looks again.
  (void)::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(left, 0, 60000)));
}

bool Launcher::wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    // Keep what this reaps for the next poll(): a caller may still want the exit codes.
    for (auto& exit : poll()) unreported_.push_back(exit);
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    await_exit(deadline);  // until a child exits (its pidfd) or the deadline
  }
}

bool Launcher::wait_all(std::chrono::milliseconds timeout) {
  return wait_until(
      [this] { return std::all_of(children_.begin(), children_.end(),
                                  [](const Child& c) { return c.reaped; }); },
      timeout);
}

bool Launcher::await_child(int rank, std::chrono::milliseconds timeout) {
  return wait_until([this, rank] { return !running(rank); }, timeout);
}

void Launcher::stop_all(std::chrono::milliseconds grace) {
  for (const auto& c : children_) if (!c.reaped) ::kill(c.pid, SIGTERM);
  if (wait_all(grace)) return;
  for (const auto& c : children_) if (!c.reaped) ::kill(c.pid, SIGKILL);
  for (auto& c : children_) {
    if (c.reaped) continue;
    int status = 0;
    while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {}
    c.reap(status);
  }
}

Launcher::~Launcher() { stop_all(std::chrono::milliseconds(1000)); }

std::filesystem::path self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) fail<IoError>("cannot find the disttrain executable (/proc/self/exe): {}", ec.message());
  return p;
}

std::string tail_of(const std::filesystem::path& path, int lines) {
  std::ifstream in(path);
  if (!in) return {};
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) {
    if (!out.empty()) out += " | ";
    out += l;
  }
  return out;
}

}  // namespace dt
