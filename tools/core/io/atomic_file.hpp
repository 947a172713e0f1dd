// Files replaced atomically: written into a temporary file beside the target, flushed and renamed
// over it, so a reader sees the old content or the new, never a part. A writer killed midway
// leaves the target as it was.
#pragma once

#include <filesystem>
#include <string_view>

namespace evgate {

// A file replaced atomically, its content written in pieces: into a temporary file beside it,
// flushed and renamed over it by commit(); the temporary is removed if commit() never comes.
class AtomicFile {
public:
    explicit AtomicFile(std::filesystem::path path);
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(std::string_view bytes);
    void commit();

private:
    std::filesystem::path path_, temp_;
    int fd_;
};

// Write `content` to a temporary file beside `path`, flush it and rename it over `path`.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

}  // namespace evgate
