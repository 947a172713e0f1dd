#include "runs/discover_cache.hpp"

#include <algorithm>
#include <sstream>

#include <sys/stat.h>

#include "inputs/evidence_layout.hpp"
#include "io/atomic_file.hpp"
#include "io/file_identity.hpp"
#include "io/json_io.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

// The files pytest reads its configuration from.
constexpr const char* kConfigNames[] = {"pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"};

bool is_config(const std::string& name) {
    return std::any_of(std::begin(kConfigNames), std::end(kConfigNames), [&](const char* c) { return name == c; });
}

bool is_python(const std::string& name) { return name.size() > 3 && name.compare(name.size() - 3, 3, ".py") == 0; }

// A length-prefixed field: no two different lists of fields make the same material.
void field(std::string& material, std::string_view text) {
    material += std::to_string(text.size());
    material += ':';
    material += text;
}

// Directories collection never looks into: version control and other hidden ones, bytecode
// caches, build trees (ours among them) and the evidence directory.
bool skipped(const fs::directory_entry& dir, const SuiteConfig& suite) {
    const auto name = dir.path().filename().string();
    std::error_code ec;
    return name.empty() || name[0] == '.' || name == "__pycache__" || dir.path() == suite.evidence_dir ||
           fs::exists(dir.path() / "CMakeCache.txt", ec);
}

// Relative path and stamp of every Python and config file below `dir`, links not followed.
void stamp_tree(const fs::path& dir, const SuiteConfig& suite, std::vector<std::string>& stamps) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
        stamps.push_back(dir.lexically_relative(suite.root).string() + " unreadable");
        return;
    }
    for (const auto& entry : it) {
        const auto status = entry.symlink_status(ec);
        const auto name = entry.path().filename().string();
        if (fs::is_directory(status)) {
            if (!skipped(entry, suite)) stamp_tree(entry.path(), suite, stamps);
        } else if (is_python(name) || is_config(name)) {
            stamps.push_back(entry.path().lexically_relative(suite.root).string() + " " + file_stamp(entry.path()));
        }
    }
}

// What the project's build puts on the path: each DEPENDS file, and each PYTHON_PATH_PREPEND
// directory with the modules directly in it (a built extension appears or is rebuilt there
// after a ctest that collected without it: the next ctest must collect again).
void stamp_build_outputs(const SuiteConfig& suite, std::vector<std::string>& stamps) {
    for (const auto& dependency : suite.depends)
        stamps.push_back("depends " + dependency.file.string() + " " + file_stamp(dependency.file, true));
    for (const auto& dir : suite.python_path_prepend) {
        stamps.push_back("path " + dir + " " + file_stamp(dir, true));
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(dir, ec)) {
            const auto name = entry.path().filename().string();
            const auto dot = name.rfind('.');
            const auto ext = dot == std::string::npos ? std::string() : name.substr(dot);
            if (ext == ".py" || ext == ".so" || ext == ".pth" || ext == ".pyd")
                stamps.push_back("path " + entry.path().string() + " " + file_stamp(entry.path()));
        }
    }
}

std::string state_file(const SuiteConfig& suite) { return (suite.evidence_dir / evidence::kDiscoverFingerprint).string(); }

std::string ids_digest(const std::vector<std::string>& ids) {
    std::string material;
    for (const auto& id : ids) field(material, id);
    return sha256_hex(material);
}

// discover.fingerprint: the fingerprint, the digest of the ids, the entries file's stamp; a line each.
std::vector<std::string> remembered(const SuiteConfig& suite) {
    std::vector<std::string> lines;
    std::error_code ec;
    if (!fs::exists(state_file(suite), ec)) return lines;
    std::istringstream in(read_file(state_file(suite)));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

}  // namespace

std::string collection_fingerprint(const SuiteConfig& suite, const fs::path& entries, const fs::path& tool,
                                   const std::vector<std::string>& environment) {
    std::string material = "evgate discover 1\n";
    field(material, read_file(suite.source));
    field(material, entries.string());
    for (const auto& program : {tool, fs::path(suite.python)}) {
        field(material, program.string());
        field(material, file_stamp(program));
        field(material, file_stamp(program, true));
    }
    std::vector<std::string> variables;  // values too, so a change shows; only their digest is written
    for (const auto& entry : environment)
        if (entry.rfind("PYTEST_", 0) == 0 || entry.rfind("PYTHON", 0) == 0) variables.push_back(entry);
    std::sort(variables.begin(), variables.end());
    std::vector<std::string> stamps;
    std::error_code ec;
    for (const auto& file : fs::directory_iterator(suite.plugin_dir, ec))  // the plugin: its modules and protocol file
        if (const auto name = file.path().filename().string(); is_python(name) || name == "evidence_gate_protocol.json")
            stamps.push_back(file.path().string() + " " + file_stamp(file.path()));
    for (auto dir = suite.root.parent_path(); !dir.empty(); dir = dir.parent_path()) {  // config files above ROOT
        for (const char* name : kConfigNames) stamps.push_back((dir / name).string() + " " + file_stamp(dir / name));
        stamps.push_back((dir / "conftest.py").string() + " " + file_stamp(dir / "conftest.py"));
        if (dir == dir.root_path()) break;
    }
    stamp_build_outputs(suite, stamps);
    std::sort(stamps.begin(), stamps.end());
    std::vector<std::string> tree;
    stamp_tree(suite.root, suite, tree);
    std::sort(tree.begin(), tree.end());
    for (const auto* list : {&variables, &stamps, &tree}) {
        field(material, std::to_string(list->size()));
        for (const auto& item : *list) field(material, item);
    }
    return sha256_hex(material);
}

bool entries_current(const SuiteConfig& suite, const fs::path& entries, const std::string& fingerprint) {
    const auto lines = remembered(suite);
    return lines.size() == 3 && lines[0] == fingerprint && lines[2] == file_stamp(entries);
}

void remember_entries(const SuiteConfig& suite, const fs::path& entries, const std::string& fingerprint,
                      const std::vector<std::string>& ids) {
    write_file_atomic(state_file(suite), fingerprint + "\n" + ids_digest(ids) + "\n" + file_stamp(entries) + "\n");
}

bool forget_stale_entries(const SuiteConfig& suite, const std::vector<std::string>& collected) {
    const auto lines = remembered(suite);
    if (lines.size() < 2 || lines[1] == ids_digest(collected)) return false;
    std::error_code ec;
    fs::remove(state_file(suite), ec);
    return true;
}

}  // namespace evgate
