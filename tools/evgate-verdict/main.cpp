// evgate-verdict: what every per-test CTest entry runs, as `evgate verdict` does. It links the
// verdict store's reader and nothing else (libstdc++ statically, no iostreams), so that it
// starts as fast as /bin/true: with a thousand entries the libraries evgate loads would cost
// seconds.
#include <cstdio>

#include "io/error.hpp"
#include "verdicts/verdict_store.hpp"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fputs("usage: evgate-verdict <verdicts.store> <node id>\n", stderr);
        return 2;
    }
    try {
        const auto output = evgate::entry_output(argv[1], argv[2]);
        std::fwrite(output.text.data(), 1, output.text.size(), stdout);
        return output.status;
    } catch (const evgate::Error& e) {
        std::fprintf(stderr, "evgate-verdict: error: %s\n", e.what());
        return 2;
    }
}
