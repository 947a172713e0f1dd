// evgate-verdict: what every per-test CTest entry runs, as `evgate verdict` does. It links the
// verdict store's reader and nothing else (libstdc++ statically), so that it starts as fast as
// /bin/true: with a thousand entries the libraries evgate loads would cost seconds.
#include <iostream>

#include "error.hpp"
#include "verdict_store.hpp"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: evgate-verdict <verdicts.store> <node id>\n";
        return 2;
    }
    try {
        return evgate::print_verdict(argv[1], argv[2], std::cout);
    } catch (const evgate::Error& e) {
        std::cerr << "evgate-verdict: error: " << e.what() << '\n';
        return 2;
    }
}
