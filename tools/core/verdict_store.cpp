#include "verdict_store.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ostream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

// Inlined, so that evgate-verdict needs no libxxhash at run time.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "error.hpp"

namespace evgate {
namespace {

// Layout, little-endian: "EVGVRD1\n", the entry count (u64); the entries sorted by digest, each
// digest high and low (u64 each), the record's offset in the file (u64), the id's and the
// text's length (u32 each); then the records, each the id, '\n' and the text.
constexpr std::string_view kMagic = "EVGVRD1\n";
constexpr std::size_t kHeader = 16;
constexpr std::size_t kEntry = 32;

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
        unsigned char header[kHeader];
        read(0, header, kHeader);
        if (std::memcmp(header, kMagic.data(), kMagic.size()) != 0) damaged("not a verdict store");
        const auto count = get(header + kMagic.size(), 8);
        if (count > (size_ - kHeader) / kEntry) damaged("its index is cut short");
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
            if (e.offset > size_ || e.id_length + 1ull + e.text_length > size_ - e.offset) damaged("a record lies outside it");
            std::string record(e.id_length + 1ull + e.text_length, '\0');
            read(e.offset, record.data(), record.size());
            if (std::string_view(record).substr(0, e.id_length) == test) return record.substr(e.id_length + 1ull);
        }
        return std::nullopt;
    }

private:
    Entry entry(std::uint64_t i) {
        unsigned char bytes[kEntry];
        read(kHeader + i * kEntry, bytes, kEntry);
        return {{get(bytes, 8), get(bytes + 8, 8)}, get(bytes + 16, 8), static_cast<std::uint32_t>(get(bytes + 24, 4)),
                static_cast<std::uint32_t>(get(bytes + 28, 4))};
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
    std::uint64_t size_ = 0;
};

}  // namespace

void VerdictStoreWriter::reserve(std::size_t verdicts, std::size_t bytes) {
    items_.reserve(verdicts);
    records_.reserve(bytes);
}

void VerdictStoreWriter::add(std::string_view test, std::string_view text) {
    const auto digest = digest_of(test);
    items_.push_back({digest.high, digest.low, records_.size(), length32(test.size()), length32(text.size())});
    records_.append(test).append(1, '\n').append(text);
}

std::string VerdictStoreWriter::index() const {
    const auto id = [this](const Item& item) { return std::string_view(records_).substr(item.offset, item.id_length); };
    auto order = items_;  // by digest; equal digests by id, equal ids in the order added
    std::sort(order.begin(), order.end(), [&](const Item& a, const Item& b) {
        if (a.high != b.high || a.low != b.low) return a.high != b.high ? a.high < b.high : a.low < b.low;
        const auto x = id(a), y = id(b);
        return x != y ? x < y : a.offset < b.offset;
    });
    order.erase(std::unique(order.begin(), order.end(), [&](const Item& a, const Item& b) { return id(a) == id(b); }),
                order.end());
    const std::uint64_t start = kHeader + order.size() * kEntry;  // where the records begin
    std::string out;
    out.reserve(start);
    out.append(kMagic);
    put(out, order.size(), 8);
    for (const auto& item : order) {
        put(out, item.high, 8);
        put(out, item.low, 8);
        put(out, start + item.offset, 8);
        put(out, item.id_length, 4);
        put(out, item.text_length, 4);
    }
    return out;
}

std::optional<std::string> find_verdict(const std::filesystem::path& store, std::string_view test) {
    return StoreFile(store).find(test);
}

int print_verdict(const std::filesystem::path& store, std::string_view test, std::ostream& out) {
    StoreFile file(store);
    if (!file.exists()) {
        out << "no verdict: the verdict store " << store.string() << " does not exist: the suite's ledger step has not run\n";
        return 1;
    }
    const auto text = file.find(test);
    if (!text) {
        out << "no verdict: " << test << " has no row in the ledger: pytest does not collect it any more (renamed "
            << "or removed?), so this entry is older than the collection; the next ctest registers the entries anew\n";
        return 1;
    }
    out << *text;
    return 0;
}

}  // namespace evgate
