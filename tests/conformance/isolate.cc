#include "conformance/isolate.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

namespace ember::conformance {

namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  size_t index;
  pid_t pid;
  int fd;  // read end of the pipe the child writes its result to
  Clock::time_point start;
  std::string bytes;
};

// The child's result on the pipe: the status as one digit, then the detail.
void write_result(int fd, const Result& r) {
  const std::string bytes = std::to_string(static_cast<int>(r.status)) + r.detail;
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
}

Child spawn(size_t index, const Case& c, const std::function<Result(const Case&)>& run) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    write_result(fds[1], run(c));
    _exit(0);  // skip static destructors and atexit handlers of the libraries
  }
  close(fds[1]);
  return {index, pid, fds[0], Clock::now(), {}};
}

Result finish(Child& child, bool timed_out, double timeout_s) {
  if (timed_out) kill(child.pid, SIGKILL);
  int status = 0;
  waitpid(child.pid, &status, 0);
  close(child.fd);
  if (timed_out) {
    char text[64];
    std::snprintf(text, sizeof text, "timed out after %g s", timeout_s);
    return {Status::Crashed, text};
  }
  if (WIFSIGNALED(status))
    return {Status::Crashed, std::string("killed by signal ") + strsignal(WTERMSIG(status))};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || child.bytes.empty())
    return {Status::Crashed, "exited with status " + std::to_string(WEXITSTATUS(status)) + " without a result"};
  return {static_cast<Status>(child.bytes[0] - '0'), child.bytes.substr(1)};
}

}  // namespace

void run_isolated(const std::vector<Case>& cases, const std::function<Result(const Case&)>& run,
                  const IsolateOptions& options,
                  const std::function<void(size_t, const Result&)>& done) {
  if (!options.fork) {
    for (size_t i = 0; i < cases.size(); ++i) done(i, run(cases[i]));
    return;
  }
  std::vector<Child> running;
  size_t next = 0;
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && running.size() < static_cast<size_t>(std::max(1, options.jobs))) {
      running.push_back(spawn(next, cases[next], run));
      ++next;
    }
    std::vector<pollfd> fds;
    for (const Child& c : running) fds.push_back({c.fd, POLLIN, 0});
    poll(fds.data(), fds.size(), 100);
    for (size_t k = running.size(); k-- > 0;) {
      Child& c = running[k];
      bool eof = false;
      if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buffer[4096];
        const ssize_t n = read(c.fd, buffer, sizeof buffer);
        if (n > 0) c.bytes.append(buffer, static_cast<size_t>(n));
        eof = n <= 0;
      }
      const double elapsed = std::chrono::duration<double>(Clock::now() - c.start).count();
      const bool timed_out = !eof && elapsed > options.timeout_s;
      if (!eof && !timed_out) continue;
      done(c.index, finish(c, timed_out, options.timeout_s));
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
}

}  // namespace ember::conformance
