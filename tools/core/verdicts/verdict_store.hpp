// The verdicts the per-test CTest entries print, in one file the ledger step writes: the texts,
// then an index of the 128-bit XXH3 digests of the node ids, sorted. An entry finds its test by
// halving the index with a few small reads, whatever the suite's size, so it costs a process
// start and little else. Built on its own (no library beyond libc): see evgate-verdict.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace evgate {

// Writes a store as the verdicts come: `out` is given its bytes in order, a megabyte at a time,
// and only the index is held. Of two verdicts for the same test the first is kept.
class VerdictStoreWriter {
public:
    explicit VerdictStoreWriter(std::function<void(std::string_view)> out) : out_(std::move(out)) {}

    void add(std::string_view test, std::string_view text);  // `text`: what the test's entry prints
    void finish();                                           // the index, and the store is whole

private:
    struct Item {
        std::uint64_t high, low;  // the id's digest
        std::uint64_t offset;     // of its record in the store
        std::uint32_t id_length, text_length;
        std::size_t id;  // where ids_ holds it
    };
    void emit(std::string_view bytes);

    std::function<void(std::string_view)> out_;
    std::vector<Item> items_;
    std::string ids_;      // every id, back to back: what equal digests are told apart by
    std::string pending_;  // bytes not yet given to out_
    std::uint64_t size_ = 0;
};

// The text stored for `test`; nullopt when the store has none or does not exist. Throws Error
// when the file is not a verdict store.
std::optional<std::string> find_verdict(const std::filesystem::path& store, std::string_view test);

// What a per-test entry prints, and its exit status. The store holds, for each test, the status
// on a line of its own and then the text (what ctest_entries.cpp writes); a test the store does
// not know (no longer collected, or the ledger step did not run) prints why and fails: never a
// silent pass.
struct EntryOutput {
    std::string text;
    int status = 0;
};
EntryOutput entry_output(const std::filesystem::path& store, std::string_view test);

}  // namespace evgate
