#include "verdicts/verdict_store.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

// Inlined, so that evgate-verdict needs no libxxhash at run time.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "io/error.hpp"

namespace evgate {
namespace {

// Layout, little-endian: the records, each the id, '\n' and the text; the index, one entry a
// record sorted by digest, each the digest high and low (u64 each), the record's offset in the
// file (u64), the id's and the text's length (u32 each); then "EVGVRD2\n" and the entry count (u64).
constexpr std::string_view kMagic = "EVGVRD2\n";
constexpr std::size_t kFooter = 16;
constexpr std::size_t kEntry = 32;
constexpr std::size_t kChunk = std::size_t{1} << 20;

struct Digest {
    std::uint64_t high = 0, low = 0;
    bool operator<(const Digest& o) const { return high != o.high ? high < o.high : low < o.low; }
    bool operator==(const Digest& o) const { return high == o.high && low == o.low; }
};

Digest digest_of(std::string_view test) {
    const auto h = XXH3_128bits(test.data(), test.size());
    return {h.high64, h.low64};
}

void put(std::string& out, std::uint64_t value, int bytes) {
    char little[8];
    for (int i = 0; i < bytes; ++i) little[i] = static_cast<char>((value >> (8 * i)) & 0xff);
    out.append(little, static_cast<std::size_t>(bytes));
}

std::uint64_t get(const unsigned char* in, int bytes) {
    std::uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value |= static_cast<std::uint64_t>(in[i]) << (8 * i);
    return value;
}

std::uint32_t length32(std::size_t n) {
    if (n > UINT32_MAX) throw Error("a verdict text of " + std::to_string(n) + " bytes is too long for the store");
    return static_cast<std::uint32_t>(n);
}

struct Entry {
    Digest digest;
    std::uint64_t offset = 0;
    std::uint32_t id_length = 0, text_length = 0;
};

// An open store: reads only the bytes a lookup needs.
class StoreFile {
public:
    explicit StoreFile(const std::filesystem::path& path)
        : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)), open_error_(fd_ < 0 ? errno : 0) {}
    ~StoreFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    StoreFile(const StoreFile&) = delete;
    StoreFile& operator=(const StoreFile&) = delete;

    bool exists() const { return open_error_ != ENOENT; }

    std::optional<std::string> find(std::string_view test) {
        if (open_error_ == ENOENT) return std::nullopt;
        if (fd_ < 0) damaged(std::strerror(open_error_));
        struct stat st {};
        if (::fstat(fd_, &st) != 0) damaged(std::strerror(errno));
        size_ = static_cast<std::uint64_t>(st.st_size);
        if (size_ < kFooter) damaged("it is cut short");
        unsigned char footer[kFooter];
        read(size_ - kFooter, footer, kFooter);
        if (std::memcmp(footer, kMagic.data(), kMagic.size()) != 0) damaged("not a verdict store");
        const auto count = get(footer + kMagic.size(), 8);
        if (count > (size_ - kFooter) / kEntry) damaged("its index is cut short");
        index_ = size_ - kFooter - count * kEntry;
        const auto want = digest_of(test);
        std::uint64_t low = 0, high = count;  // the first entry not below `want`
        while (low < high) {
            const auto mid = low + (high - low) / 2;
            if (entry(mid).digest < want) low = mid + 1;
            else high = mid;
        }
        for (; low < count; ++low) {  // equal digests of different ids: compare the ids
            const auto e = entry(low);
            if (!(e.digest == want)) break;
            if (e.offset > index_ || e.id_length + 1ull + e.text_length > index_ - e.offset) damaged("a record lies outside it");
            std::string record(e.id_length + 1ull + e.text_length, '\0');
            read(e.offset, record.data(), record.size());
            if (std::string_view(record).substr(0, e.id_length) == test) return record.substr(e.id_length + 1ull);
        }
        return std::nullopt;
    }

private:
    Entry entry(std::uint64_t i) {
        unsigned char bytes[kEntry];
        read(index_ + i * kEntry, bytes, kEntry);
        return {{get(bytes, 8), get(bytes + 8, 8)}, get(bytes + 16, 8), static_cast<std::uint32_t>(get(bytes + 24, 4)), static_cast<std::uint32_t>(get(bytes + 28, 4))};
    }

    void read(std::uint64_t offset, void* into, std::size_t n) {
        auto* out = static_cast<char*>(into);
        while (n > 0) {
            const auto got = ::pread(fd_, out, n, static_cast<off_t>(offset));
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) damaged(std::strerror(errno));
            if (got == 0) damaged("it is cut short");
            out += got;
            offset += static_cast<std::uint64_t>(got);
            n -= static_cast<std::size_t>(got);
        }
    }

    [[noreturn]] void damaged(const std::string& why) const {
        throw Error("cannot read the verdict store " + path_.string() + ": " + why);
    }

    std::filesystem::path path_;
    int fd_;
    int open_error_;
    std::uint64_t size_ = 0, index_ = 0;  // the file's size, where its index begins
};

}  // namespace

void VerdictStoreWriter::emit(std::string_view bytes) {
    pending_ += bytes;
    size_ += bytes.size();
    if (pending_.size() < kChunk) return;
    out_(pending_);
    pending_.clear();
}

void VerdictStoreWriter::add(std::string_view test, std::string_view text) {
    const auto digest = digest_of(test);
    items_.push_back({digest.high, digest.low, size_, length32(test.size()), length32(text.size()), ids_.size()});
    ids_ += test;
    emit(test);
    emit("\n");
    emit(text);
}

void VerdictStoreWriter::finish() {
    const auto id = [this](const Item& item) { return std::string_view(ids_).substr(item.id, item.id_length); };
    std::sort(items_.begin(), items_.end(), [&](const Item& a, const Item& b) {  // equal ids in the order added
        if (a.high != b.high || a.low != b.low) return a.high != b.high ? a.high < b.high : a.low < b.low;
        const auto x = id(a), y = id(b);
        return x != y ? x < y : a.offset < b.offset;
    });
    items_.erase(std::unique(items_.begin(), items_.end(), [&](const Item& a, const Item& b) { return id(a) == id(b); }),
                 items_.end());
    std::string entry;
    for (const auto& item : items_) {
        entry.clear();
        put(entry, item.high, 8);
        put(entry, item.low, 8);
        put(entry, item.offset, 8);
        put(entry, item.id_length, 4);
        put(entry, item.text_length, 4);
        emit(entry);
    }
    std::string footer(kMagic);
    put(footer, items_.size(), 8);
    emit(footer);
    out_(pending_);
    pending_.clear();
}

std::optional<std::string> find_verdict(const std::filesystem::path& store, std::string_view test) {
    return StoreFile(store).find(test);
}

EntryOutput entry_output(const std::filesystem::path& store, std::string_view test) {
    StoreFile file(store);
    if (!file.exists())
        return {"no verdict: the verdict store " + store.string() +
                    " does not exist: the suite's ledger step has not run "
                    "since its receipt step (a ctest interrupted before the ledger clears an earlier run's verdicts)\n"
                    "<CTestDetails>no verdict: the ledger step has not run</CTestDetails>\n",
                1};
    auto text = file.find(test);
    if (!text)
        return {"no verdict: " + std::string(test) + " has no row in the ledger: pytest does not collect it any more (renamed " +
                    "or removed?), so this entry is older than the collection; the next ctest registers the entries anew\n"
                    "<CTestDetails>no verdict: no longer collected</CTestDetails>\n",
                1};
    // The entry's exit status on a line of its own, then what it prints.
    const auto newline = text->find('\n');
    const auto status = std::string_view(*text).substr(0, newline);
    if (newline == std::string::npos || status.empty() || status.size() > 3 ||
        status.find_first_not_of("0123456789") != std::string_view::npos)
        return {"no verdict: the store's record of " + std::string(test) + " has no exit status: " + store.string() +
                    " was written by another version of evgate; run the ledger step again\n",
                1};
    int code = 0;
    for (char c : status) code = code * 10 + (c - '0');
    return {text->substr(newline + 1), code};
}

}  // namespace evgate
