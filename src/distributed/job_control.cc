#include "src/distributed/job_control.h"

#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "src/distributed/flight_recorder.h"
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
  (void)ignored;
  DumpFlightRecorder(g_lines[i]);
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

}  // namespace

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
    DumpFlightRecorder("error: this rank ended the job");
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
