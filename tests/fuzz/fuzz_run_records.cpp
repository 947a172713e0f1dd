// runs/<run>.jsonl: read, then have a torn tail cut as the harness does after a dead writer.
// After the cut the file is empty or ends in a newline.
#include "fuzz_support.hpp"
#include "runs/run_records.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const evgate_fuzz::MemoryFile file(data, size);
    evgate_fuzz::expect_only_input_errors([&] { evgate::read_run_records(file.path()); });
    evgate_fuzz::expect_only_input_errors([&] { evgate::cut_torn_tail(file.path()); });
    const auto end = ::lseek(file.fd(), 0, SEEK_END);
    char last = '\n';
    if (end > 0 && ::pread(file.fd(), &last, 1, end - 1) != 1) evgate_fuzz::violated("the file stays readable");
    if (last != '\n') evgate_fuzz::violated("after cut_torn_tail the file ends in a newline");
    evgate_fuzz::expect_only_input_errors([&] { evgate::read_run_records(file.path()); });
    return 0;
}
