// The evgate command line: a table of commands (cli.cpp), each entry saying what the command
// needs loaded and which options it takes (command.hpp).
#pragma once

#include <gsl/gsl>

#include "cli/command.hpp"

namespace evgate {

// Runs one command; the only place that turns errors into text and exit codes.
int run_cli(int argc, char** argv);

// The command table, in the order `evgate --help` lists it.
gsl::span<const Command> commands();

}  // namespace evgate
