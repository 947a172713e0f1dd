// evgate: the compiled half of Evidence Gate. Every command lives in the core library.
#include "cli/cli.hpp"

int main(int argc, char** argv) { return evgate::run_cli(argc, argv); }
