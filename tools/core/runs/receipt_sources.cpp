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

// Where a file was made: a build tree (a directory holding CMakeCache.txt that does not hold
// ROOT) or a virtual environment, each made anew by each job; or neither (empty).
struct Maker {
    enum { none,
           build,
           venv } kind = none;
    fs::path dir;
};

Maker made_by(const fs::path& file, const fs::path& root) {
    std::error_code ec;
    for (auto dir = file.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
        if (under(root, dir)) return {};  // ROOT's own ancestors are the project's, not a build's
        if (fs::exists(dir / "CMakeCache.txt", ec)) return {Maker::build, dir};
        if (fs::exists(dir / "pyvenv.cfg", ec)) return {Maker::venv, dir};
    }
    return {};
}

// A compiled module Python imports, or a shared library one links (libgeo.so, libgeo.so.1.2):
// the tested binaries a build tree holds.
bool extension_module(const fs::path& file) {
    const auto ext = file.extension();
    const auto name = file.filename().string();
    return ext == ".so" || ext == ".pyd" || name.find(".so.") != std::string::npos;
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
        if (ec || bytecode(file.generic_string())) return;
        if (const auto maker = made_by(file, root_); maker.kind != Maker::none) {
            // What a build or an install made anew: only the compiled modules under test count.
            if (maker.kind == Maker::build && extension_module(file)) built(file, "");
            return;
        }
        if (std::any_of(left_out_.begin(), left_out_.end(), [&](const fs::path& dir) { return under(file, dir); })) return;
        const auto name = name_of(file);
        if (names_.count(name)) return;  // the tree listing holds it, or it was imported twice
        add(name, state_of(file));
        outside_.push_back(name);
    }

    // A DEPENDS file, or a module imported from a build tree: listed with its size and digest.
    void built(const fs::path& path, const std::string& target) {
        std::error_code ec;
        const auto file = fs::weakly_canonical(path, ec);
        const auto maker = made_by(file, root_);
        const auto name = maker.kind == Maker::build ? "<build>/" + file.lexically_relative(maker.dir).generic_string() : name_of(file);
        const auto found = std::find_if(built_.begin(), built_.end(), [&](const BuiltFile& b) { return b.path == name; });
        if (found != built_.end()) {  // a DEPENDS target's module, imported as well
            if (found->target.empty()) found->target = target;
            return;
        }
        BuiltFile record{name, target, 0, "absent"};
        std::optional<FileState> state;
        try {
            state = file_state(file);
        } catch (const Error& e) {
            record.digest = std::string("unreadable: ") + e.what();
        }
        if (state) record.size = state->size, record.digest = state->identity;
        add(name, state ? described(*state) : record.digest);
        built_.push_back(std::move(record));
    }

    Sources done() {
        Sources sources;
        std::sort(files_.begin(), files_.end(), [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
        std::sort(outside_.begin(), outside_.end());
        sources.digest = sources_digest(files_);
        sources.files = std::move(files_);
        sources.outside = std::move(outside_);
        std::sort(built_.begin(), built_.end(), [](const BuiltFile& a, const BuiltFile& b) { return a.path < b.path; });
        sources.built = std::move(built_);
        return sources;
    }

private:
    // A file below ROOT, or below the git work tree ROOT is in, relative to ROOT (checkouts at
    // other paths agree); any other by its absolute path.
    std::string name_of(const fs::path& file) const {
        const bool near = under(file, root_) || (!top_.empty() && under(file, top_));
        return near ? file.lexically_relative(root_).generic_string() : file.generic_string();
    }

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
    std::vector<BuiltFile> built_;
};

}  // namespace

Sources list_sources(const SourceRoots& roots, const std::vector<FixtureFile>& guarded, const std::vector<std::string>& imported,
                     const std::vector<DependsFile>& depends) {
    Lister lister(roots);
    for (const auto& file : guarded) lister.guarded(file);
    for (const auto& dependency : depends) lister.built(dependency.file, dependency.target);
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
