// The JSON files evgate reads back: the first byte picks suite.json, receipt.json, a run
// plan or ledger.jsonl; the rest is the file.
#include "fuzz_support.hpp"
#include "inputs/suite_config.hpp"
#include "runs/receipt.hpp"
#include "runs/run_plan.hpp"
#include "verdicts/gate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const evgate_fuzz::MemoryFile file(data + 1, size - 1);
    evgate_fuzz::expect_only_input_errors([&] {
        switch (data[0] % 4) {
            case 0: evgate::load_suite_config(file.path()); break;
            case 1: evgate::load_receipt(file.path()).collected(); break;
            case 2: evgate::read_plan(file.path()); break;
            default: evgate::read_gate_summary(file.path()); break;
        }
    });
    return 0;
}
