// Ending a multi-rank job from one rank, with one line that names it.
//
// The edges (the trainer's main, the Python package) call these when this
// rank cannot go on: the other ranks may be waiting for it in a collective,
// so it must take the whole job down rather than just exit.
#pragma once

#include <string>

namespace fluid {

// Writes `line` (a newline is added) to stderr in one write(2) (retrying
// only what a short or interrupted write left), so that lines of ranks
// failing at once never interleave.
void WriteErrorLine(const std::string& line);

// Ends the job: MPI_Abort over the world when MPI is up in this process,
// else _exit(code) (the launcher then ends the other ranks). Never returns.
[[noreturn]] void AbortJob(int code);

// On a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) writes
// "<prefix>: rank R: fatal signal NAME; ending the job" before the signal
// takes its usual course (a handler installed earlier, e.g. Python's
// faulthandler, still runs after it). Idempotent.
void InstallFatalSignalLine(const std::string& prefix, int rank);

}  // namespace fluid
