#include "src/distributed/job_control.h"

#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "src/distributed/flight_recorder.h"
#include "src/distributed/launcher.h"
#include "src/distributed/timeline_session.h"

namespace fluid {

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_previous[sizeof(kSignals) / sizeof(kSignals[0])];
// Preformatted per signal: a handler may only call async-signal-safe code.
char g_lines[sizeof(kSignals) / sizeof(kSignals[0])][160];
bool g_installed = false;

int IndexOf(int sig) {
  for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i)
    if (kSignals[i] == sig) return static_cast<int>(i);
  return -1;
}

void OnFatalSignal(int sig, siginfo_t* info, void* context) {
  const int i = IndexOf(sig);
  if (i < 0) return;
  ssize_t ignored = ::write(2, g_lines[i], std::strlen(g_lines[i]));
  if (const char* flight = DumpFlightRecorder(g_lines[i])) {
    const char said[] = "fluid: flight recorder written to ";
    ignored = ::write(2, said, sizeof(said) - 1);
    ignored = ::write(2, flight, std::strlen(flight));
    ignored = ::write(2, "\n", 1);
  }
  (void)ignored;
  DumpTimeline(g_lines[i], /*wait_for_others=*/false);
  const struct sigaction& prev = g_previous[i];
  if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction != nullptr) {
    prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN &&
             prev.sa_handler != nullptr) {
    prev.sa_handler(sig);
  }
  // Then the default action: the process ends by this signal, which the
  // launcher sees and reports.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// The exit deadline (ArmExitDeadline): one at a time. Never destroyed, and
// its thread detached, so that a process that exits while one is armed
// (MPI_Abort may end it with exit()) runs no destructor under the thread.
struct Deadline {
  std::mutex mu;
  std::condition_variable cv;
  bool armed = false;
  uint64_t generation = 0;  // bumped by each Arm and Disarm
};
Deadline& TheDeadline() {
  static Deadline* d = new Deadline;
  return *d;
}

}  // namespace

void ArmExitDeadline(double seconds, int code, const std::string& line) {
  Deadline& d = TheDeadline();
  std::lock_guard<std::mutex> lock(d.mu);
  if (d.armed) return;
  const uint64_t mine = ++d.generation;
  try {
    std::thread([&d, mine, seconds, code, line] {
      std::unique_lock<std::mutex> lock(d.mu);
      if (d.cv.wait_for(lock, std::chrono::duration<double>(seconds),
                        [&] { return d.generation != mine; }))
        return;
      WriteErrorLine(line);
      ::_exit(code);
    }).detach();
    d.armed = true;
  } catch (const std::exception&) {
    // No thread to spare: MPI_Abort alone has to do.
  }
}

void DisarmExitDeadline() {
  Deadline& d = TheDeadline();
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (!d.armed) return;
    d.armed = false;
    ++d.generation;
  }
  d.cv.notify_all();
}

void WriteErrorLine(const std::string& line) {
  std::string whole = line;
  if (whole.empty() || whole.back() != '\n') whole += '\n';
  const char* p = whole.data();
  size_t left = whole.size();
  while (left > 0) {
    ssize_t n = ::write(2, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void AbortJob(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    // Armed first: writing the files may hang too (a file system gone with
    // the network).
    char seconds[16];
    std::snprintf(seconds, sizeof(seconds), "%.0f", kAbortGraceSeconds);
    ArmExitDeadline(kAbortGraceSeconds, code,
                    "fluid: rank " + std::to_string(LauncherRank()) +
                        ": MPI_Abort has not ended this rank after " + seconds +
                        " s (mpirun cannot be reached: a lost host or a cut "
                        "network?); exiting");
    const char* flight = DumpFlightRecorder("error: this rank ended the job");
    if (flight != nullptr)
      WriteErrorLine("fluid: rank " + std::to_string(LauncherRank()) +
                     ": flight recorder written to " + flight +
                     " (the other ranks write theirs beside it as the job "
                     "ends; tools/flight_report.py reads them)");
    // Rank 0 waits a moment for the others' parts: ranks often fail
    // together (a diverging loss, one bad input everywhere).
    DumpTimeline("error: this rank ended the job", /*wait_for_others=*/true);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  std::fflush(nullptr);
  ::_exit(code);
}

void InstallFatalSignalLine(const std::string& prefix, int rank) {
  if (g_installed) return;
  g_installed = true;
  for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) {
    std::snprintf(g_lines[i], sizeof(g_lines[i]),
                  "%s: rank %d: fatal signal SIG%s (%s); ending the job\n",
                  prefix.c_str(), rank, sigabbrev_np(kSignals[i]),
                  strsignal(kSignals[i]));
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = OnFatalSignal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(kSignals[i], &sa, &g_previous[i]);
  }
}

}  // namespace fluid
