#include "runs/receipt_sources.hpp"

#include <algorithm>
#include <set>

#include "io/error.hpp"
#include "io/file_identity.hpp"
#include "io/json_io.hpp"
#include "io/json_paths.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

// `path` is `dir` or below it (both canonical).
bool under(const fs::path& path, const fs::path& dir) {
    const auto rel = path.lexically_relative(dir);
    return !rel.empty() && *rel.begin() != "..";
}

// Bytecode is made from the sources by each run, never one of them.
bool bytecode(const std::string& relative) {
    const fs::path path(relative);
    if (path.extension() == ".pyc") return true;
    return std::any_of(path.begin(), path.end(), [](const fs::path& part) { return part == "__pycache__"; });
}

// A file in a build tree (a directory holding CMakeCache.txt that does not hold ROOT) or a
// virtual environment: made by a build or an install, and made anew by each job.
bool generated(const fs::path& file, const fs::path& root) {
    std::error_code ec;
    for (auto dir = file.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
        if (under(root, dir)) return false;  // ROOT's own ancestors are the project's, not a build's
        if (fs::exists(dir / "CMakeCache.txt", ec) || fs::exists(dir / "pyvenv.cfg", ec)) return true;
    }
    return false;
}

std::string octal(unsigned mode) {
    std::string text;
    do {
        text.insert(text.begin(), static_cast<char>('0' + (mode & 7u)));
        mode >>= 3;
    } while (mode != 0);
    return text;
}

std::string described(const FileState& state) { return state.identity + " " + octal(state.mode); }

std::string state_of(const fs::path& file) {
    try {
        const auto state = file_state(file);
        return state ? described(*state) : std::string("absent");
    } catch (const Error& e) {
        return std::string("unreadable: ") + e.what();
    }
}

class Lister {
public:
    explicit Lister(const SourceRoots& roots) : root_(fs::weakly_canonical(roots.root)) {
        if (!roots.top.empty()) top_ = fs::weakly_canonical(roots.top);
        for (const auto& dir : roots.left_out) {
            left_out_.push_back(fs::weakly_canonical(dir));
            if (under(left_out_.back(), root_)) left_out_below_root_.push_back(left_out_.back().lexically_relative(root_).generic_string());
        }
    }

    void guarded(const FixtureFile& file) {
        if (bytecode(file.path) || left_out_relative(file.path)) return;
        add(file.path, described(file.state));
    }

    void imported(const std::string& path) {
        std::error_code ec;
        const auto file = fs::weakly_canonical(fs::path(path), ec);
        if (ec || bytecode(file.generic_string()) || generated(file, root_)) return;
        if (std::any_of(left_out_.begin(), left_out_.end(), [&](const fs::path& dir) { return under(file, dir); })) return;
        const bool near = under(file, root_) || (!top_.empty() && under(file, top_));
        const auto name = near ? file.lexically_relative(root_).generic_string() : file.generic_string();
        if (names_.count(name)) return;  // the tree listing holds it, or it was imported twice
        add(name, state_of(file));
        outside_.push_back(name);
    }

    Sources done() {
        Sources sources;
        std::sort(files_.begin(), files_.end(), [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
        std::sort(outside_.begin(), outside_.end());
        sources.digest = sources_digest(files_);
        sources.files = std::move(files_);
        sources.outside = std::move(outside_);
        return sources;
    }

private:
    bool left_out_relative(const std::string& relative) const {
        return std::any_of(left_out_below_root_.begin(), left_out_below_root_.end(), [&](const std::string& dir) {
            return relative == dir || relative.compare(0, dir.size() + 1, dir + "/") == 0;
        });
    }

    void add(const std::string& name, std::string state) {
        if (!names_.insert(name).second) return;
        files_.push_back({name, std::move(state)});
    }

    fs::path root_, top_;
    std::vector<fs::path> left_out_;
    std::vector<std::string> left_out_below_root_;
    std::set<std::string> names_;
    std::vector<SourceFile> files_;
    std::vector<std::string> outside_;
};

}  // namespace

Sources list_sources(const SourceRoots& roots, const std::vector<FixtureFile>& guarded, const std::vector<std::string>& imported) {
    Lister lister(roots);
    for (const auto& file : guarded) lister.guarded(file);
    for (const auto& path : imported) lister.imported(path);
    return lister.done();
}

std::string sources_digest(const std::vector<SourceFile>& files) {
    std::string listing;
    for (const auto& f : files) listing += f.path + '\0' + f.state + '\n';
    return "sha256:" + sha256_hex(listing);
}

std::string sources_json(const Sources& sources) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("schema"), w.Int(1);
    w.Key("digest"), w.String(sources.digest);
    w.Key("files"), w.StartArray();
    for (const auto& f : sources.files) {
        w.StartArray();
        write_path(w, f.path);
        write_path(w, f.state);  // a link's target is a name too
        w.EndArray();
    }
    w.EndArray();
    write_paths(w, "outside", sources.outside);
    w.EndObject();
    return std::string(json.text()) + "\n";
}

std::optional<Sources> read_sources(const fs::path& file) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) return std::nullopt;
    try {
        const auto doc = read_json_file(file);
        Sources sources;
        sources.digest = optional_string(doc, "digest", file.string()).value_or("");
        const auto* files = member(doc, "files");
        if (files == nullptr || !files->IsArray()) return std::nullopt;
        for (const auto& f : files->GetArray()) {
            if (!f.IsArray() || f.Size() != 2) return std::nullopt;
            sources.files.push_back({path_of(f[0]), path_of(f[1])});
        }
        sources.outside = paths_member(doc, "outside");
        // The listing must be the one the digest was made of (sorted, as list_sources leaves it).
        if (!std::is_sorted(sources.files.begin(), sources.files.end(),
                            [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; }) ||
            sources_digest(sources.files) != sources.digest)
            return std::nullopt;
        return sources;
    } catch (const Error&) {
        return std::nullopt;
    }
}

SourceDifference compare_sources(const Sources& theirs, const Sources& ours) {
    SourceDifference diff;
    auto there = theirs.files.begin(), here = ours.files.begin();
    while (there != theirs.files.end() || here != ours.files.end()) {
        if (here == ours.files.end() || (there != theirs.files.end() && there->path < here->path)) {
            diff.only_there.push_back((there++)->path);
        } else if (there == theirs.files.end() || here->path < there->path) {
            diff.only_here.push_back((here++)->path);
        } else {
            if (there->state != here->state) diff.changed.push_back(here->path);
            ++there, ++here;
        }
    }
    return diff;
}

}  // namespace evgate
