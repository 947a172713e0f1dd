// The sources a receipt was taken over, so that a merge job can tell whether each shard ran the
// code it gates: every file of the guarded source tree (the fixture store's listing at the
// snapshot before the receipt's collection: git's tracked and untracked-not-ignored files below
// ROOT, else the walk the tree guard makes), the fixture groups' files, and the files pytest
// imported that lie outside that listing and outside the interpreter's own installation (a
// library beside ROOT a conftest puts on sys.path, a -p plugin found on PYTHONPATH), and what the
// build made that the suite tests (its DEPENDS files, the extension modules pytest imported from a
// build tree), each with its content and mode. receipt.json holds the digest and the built files;
// sources.json beside it the listing, so that a difference can name its files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fixtures/lease_file.hpp"

namespace evgate {

struct SourceFile {
    std::string path;   // relative to ROOT ("tests/test_a.py", "../lib/helper.py"), or absolute
    std::string state;  // "<identity> <mode, octal>"
};

// A file the build made that the suite tests: a DEPENDS target's file, or an extension module
// pytest imported from a build tree. It is in the listing too, so a rebuilt module changes the
// digest (shards, history and "new since" then compare the binaries too).
struct BuiltFile {
    std::string path;    // "<build>/<path below the build tree>" in a build tree, else named as the other sources
    std::string target;  // the DEPENDS target that makes it; "" for an imported module
    std::uintmax_t size = 0;
    std::string digest;  // "sha256:<hex>"; "absent" when the file is not there
};

struct Sources {
    std::string digest;                // "sha256:<hex>" over the listing
    std::vector<SourceFile> files;     // sorted by path
    std::vector<std::string> outside;  // the imported files among them that the tree listing does not hold
    std::vector<BuiltFile> built;      // sorted by path
};

// Where each file's name comes from. A file below ROOT, or below the git work tree ROOT is in
// (`top`, empty outside git), is named relative to ROOT, so that checkouts at other paths agree;
// any other file by its absolute path. `left_out`: directories whose files are no sources (the
// evidence directory, the plugin, the evidence a merge job was handed); build trees (a
// CMakeCache.txt), virtual environments and bytecode never are.
struct SourceRoots {
    std::filesystem::path root;
    std::filesystem::path top;
    std::vector<std::filesystem::path> left_out;
};

// What the build made that the suite depends on: a DEPENDS target and its file.
struct DependsFile {
    std::string target;
    std::filesystem::path file;
};

// `guarded`: the store's pristine files (paths relative to ROOT); `imported`: absolute paths of
// the files pytest imported (the plugin's collect mode); `depends`: the suite's DEPENDS files.
Sources list_sources(const SourceRoots& roots, const std::vector<FixtureFile>& guarded, const std::vector<std::string>& imported,
                     const std::vector<DependsFile>& depends = {});

// The digest of `files` as list_sources computes it.
std::string sources_digest(const std::vector<SourceFile>& files);

// sources.json; read_sources gives nullopt when the file is missing or its listing does not
// have the digest it claims (then a difference can only be told by the digests).
std::string sources_json(const Sources& sources);
std::optional<Sources> read_sources(const std::filesystem::path& file);

// What differs between two listings, each list sorted.
struct SourceDifference {
    std::vector<std::string> changed;     // in both, other content or mode
    std::vector<std::string> only_here;   // in `ours` only (new since, or not imported there)
    std::vector<std::string> only_there;  // in `theirs` only (removed since)
    bool empty() const { return changed.empty() && only_here.empty() && only_there.empty(); }
};
SourceDifference compare_sources(const Sources& theirs, const Sources& ours);

}  // namespace evgate
