// The Catch2 runner for every unit test of the core library.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
