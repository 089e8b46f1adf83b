#include "src/distributed/launcher.h"

#include <cstdlib>
#include <initializer_list>

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

}  // namespace

int LauncherWorldSize() {
  int n = EnvInt({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
  return n > 0 ? n : 1;
}

int LauncherRank() {
  int r = EnvInt({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"});
  return r > 0 ? r : 0;
}

}  // namespace fluid
