// The verdicts the per-test CTest entries print, in one file the ledger step writes: an index
// of the 128-bit XXH3 digests of the node ids, sorted, over the texts. An entry finds its test
// by halving the index with a few small reads, whatever the suite's size, so it costs a
// process start and little else. Built on its own (no library beyond libc): see evgate-verdict.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace evgate {

// Collects verdicts, then makes the store: its index (of two verdicts for the same test the
// first is kept), then its records, as two parts so that the records are never copied.
class VerdictStoreWriter {
public:
    void reserve(std::size_t verdicts, std::size_t bytes);  // room made at once, not as they come
    void add(std::string_view test, std::string_view text);  // `text`: what the test's entry prints
    std::string index() const;
    std::string_view records() const { return records_; }

private:
    struct Item {
        std::uint64_t high, low;  // the id's digest
        std::uint64_t offset;     // of its record in records_
        std::uint32_t id_length, text_length;
    };
    std::vector<Item> items_;
    std::string records_;  // each the id, '\n' and the text
};

// The text stored for `test`; nullopt when the store has none or does not exist. Throws Error
// when the file is not a verdict store.
std::optional<std::string> find_verdict(const std::filesystem::path& store, std::string_view test);

// What a per-test entry runs: prints the test's verdict and returns 0, or, for a test the store
// does not know (no longer collected, or the ledger step did not run), says so and returns 1:
// never a silent pass.
int print_verdict(const std::filesystem::path& store, std::string_view test, std::ostream& out);

}  // namespace evgate
