// The evgate command line: a table of subcommands, each parsing its own options.
#pragma once

namespace evgate {

// Runs one command; the only place that turns errors into text and exit codes.
int run_cli(int argc, char** argv);

}  // namespace evgate
