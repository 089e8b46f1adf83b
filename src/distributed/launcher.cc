#include "src/distributed/launcher.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace fluid {

namespace {

// The first of `names` that is set to a non-negative integer, else -1.
int EnvInt(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n >= 0 && n < (1L << 24)) return static_cast<int>(n);
  }
  return -1;
}

std::mutex g_mu;
pid_t g_launcher = 0;  // 0: not watching

}  // namespace

int LauncherWorldSize() {
  int n = EnvInt({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
  return n > 0 ? n : 1;
}

int LauncherRank() {
  int r = EnvInt({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"});
  return r > 0 ? r : 0;
}

void WatchLauncher() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_launcher != 0) return;
  const pid_t parent = getppid();
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  // The parent may have died before the request took effect: then no
  // signal will come, but the process has been re-parented already. (A
  // parent of pid 1 is not taken as a sign: mpirun may be a container's
  // init.)
  if (getppid() != parent) raise(SIGKILL);
  g_launcher = parent;
}

bool LauncherAlive() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_launcher == 0 || getppid() == g_launcher;
}

}  // namespace fluid
