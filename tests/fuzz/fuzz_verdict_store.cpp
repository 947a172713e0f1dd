// verdicts.store: any bytes looked up are a verdict, none, or an error; and a store written
// from the input (id, then text, a NUL between each) gives every id back with its own text.
#include <map>

#include "fuzz_support.hpp"
#include "verdicts/verdict_store.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const evgate_fuzz::MemoryFile file(data, size);
    for (const char* test : {"", "t::a", "tests/test_x.py::test_1"})
        evgate_fuzz::expect_only_input_errors([&] { evgate::find_verdict(file.path(), test); });

    std::map<std::string, std::string> first;  // of two verdicts for one test the first counts
    std::string bytes;
    evgate::VerdictStoreWriter store([&bytes](std::string_view part) { bytes += part; });
    const auto input = evgate_fuzz::text(data, size);
    for (std::size_t at = 0; at < input.size();) {
        const auto id_end = std::min(input.find('\0', at), input.size());
        const auto text_end = std::min(input.find('\0', id_end + 1), input.size());
        const auto id = input.substr(at, id_end - at);
        const auto text = id_end < input.size() ? input.substr(id_end + 1, text_end - id_end - 1) : std::string_view();
        store.add(id, text);
        first.emplace(id, text);
        at = text_end + 1;
    }
    store.finish();
    const evgate_fuzz::MemoryFile written(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    for (const auto& [id, text] : first)
        if (evgate::find_verdict(written.path(), id) != std::optional<std::string>(text)) evgate_fuzz::violated("a stored verdict is found");
    return 0;
}
