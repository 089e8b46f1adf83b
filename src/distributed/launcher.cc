#include "src/distributed/launcher.h"

#include <unistd.h>

#include <csignal>
#include <mutex>
#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace fluid {

namespace {

std::mutex g_mu;
pid_t g_launcher = 0;  // 0: not watching

}  // namespace

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
