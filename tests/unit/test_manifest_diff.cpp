#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "io/error.hpp"
#include "io/json_io.hpp"
#include "machines/manifest_diff.hpp"

using namespace evgate;
namespace fs = std::filesystem;

namespace {

// Trimmed from a real `python -m evidence_gate_manifest` plus the host object evgate adds.
constexpr const char* kLocal = R"({
  "schema": 1, "python_version": "3.11.2", "python_implementation": "CPython",
  "python_executable": "/usr/bin/python3", "platform": "Linux-6.1-x86_64-with-glibc2.36",
  "machine": "x86_64", "os_release": "6.1", "cpu_count": 8, "usable_cpus": 8,
  "locale": {"env": {"LANG": "C.UTF-8"}, "setlocale": "C.UTF-8", "getlocale": ["en_US", "UTF-8"]},
  "timezone": {"TZ": null, "utc_offset_minutes": 0, "tzname": ["UTC", "UTC"]},
  "case_sensitive": {"root": true, "tempdir": true},
  "encodings": {"default": "utf-8", "filesystem": "utf-8", "preferred": "UTF-8"},
  "pythonhashseed": null, "umask": "0022", "pytest_version": "7.2.1",
  "distributions": {"attrs": "22.2.0", "pytest": "7.2.1"},
  "env": {"LANG": "C.UTF-8"},
  "env_names": ["HOME", "LANG", "PATH"],
  "host": {"name": "evgate", "hostname": "laptop", "kernel": "Linux 6.1", "suite": "billing"}
})";

rapidjson::Document manifest(const char* text) { return parse_json(text, "manifest.json"); }

// kLocal with some members replaced (a JSON object of top-level members).
rapidjson::Document local_with(const char* changes) {
    auto doc = manifest(kLocal);
    const auto patch = parse_json(changes, "patch");
    for (const auto& m : patch.GetObject()) {
        rapidjson::Value value(m.value, doc.GetAllocator());
        if (doc.HasMember(m.name))
            doc[m.name] = value;
        else
            doc.AddMember(rapidjson::Value(m.name, doc.GetAllocator()), value, doc.GetAllocator());
    }
    return doc;
}

std::vector<std::string> keys_of(const std::vector<DriftEntry>& drift) {
    std::vector<std::string> keys;
    for (const auto& entry : drift) keys.push_back(entry.key);
    return keys;
}

}  // namespace

TEST_CASE("flatten_manifest joins nested keys and lists each variable name", "[manifest_diff]") {
    const auto flat = flatten_manifest(manifest(kLocal));
    CHECK(flat.at("timezone.TZ") == "null");
    CHECK(flat.at("timezone.tzname") == R"(["UTC","UTC"])");
    CHECK(flat.at("locale.env.LANG") == R"("C.UTF-8")");
    CHECK(flat.at("cpu_count") == "8");
    CHECK(flat.at("case_sensitive.root") == "true");
    CHECK(flat.at("distributions.attrs") == R"("22.2.0")");
    CHECK(flat.at("env_names.PATH") == R"("present")");
    CHECK(flat.count("env_names") == 0);
    CHECK(flat.at("host.hostname") == R"("laptop")");
}

TEST_CASE("identical manifests have no drift", "[manifest_diff]") {
    CHECK(diff_manifests(manifest(kLocal), manifest(kLocal)).empty());
}

TEST_CASE("drift is ranked by the seed's order of suspicion, then by key", "[manifest_diff]") {
    const auto other = local_with(R"({
        "python_version": "3.12.1", "platform": "Linux-6.5-aarch64", "cpu_count": 2, "usable_cpus": 1,
        "timezone": {"TZ": "Asia/Tokyo", "utc_offset_minutes": 540, "tzname": ["JST", "JST"]},
        "case_sensitive": {"root": false, "tempdir": true},
        "distributions": {"attrs": "23.1.0", "pytest": "7.2.1", "hypothesis": "6.0"},
        "env": {"LANG": "C.UTF-8", "TZ": "Asia/Tokyo"},
        "env_names": ["CI", "HOME", "LANG", "PATH", "TZ"], "umask": "0002",
        "python_executable": "/opt/venv/bin/python",
        "host": {"name": "evgate", "hostname": "runner-7", "kernel": "Linux 6.1", "suite": "billing"}})");
    const auto drift = diff_manifests(manifest(kLocal), other);
    CHECK(keys_of(drift) == std::vector<std::string>{
                                "distributions.attrs", "distributions.hypothesis",           // 1 packages
                                "env.TZ", "env_names.TZ", "timezone.TZ", "timezone.tzname",  // 2 locale, timezone
                                "timezone.utc_offset_minutes",                               //
                                "case_sensitive.root",                                       // 3 filesystem case
                                "cpu_count", "usable_cpus",                                  // 4 CPU count
                                "python_version",                                            // 5 Python minor
                                "platform", "umask",                                         // everything else
                                "env_names.CI",                                              // other variables
                                "host.hostname", "python_executable"});                      // noise
    CHECK(drift.front().rank == drift_rank::packages);
    CHECK(drift.back().rank == drift_rank::noise);
    CHECK(drift[1].local == std::nullopt);
    CHECK(drift[1].other == R"("6.0")");
    CHECK(drift[4].local == "null");
    CHECK(drift[4].other == R"("Asia/Tokyo")");
}

TEST_CASE("only a major.minor Python difference ranks as one", "[manifest_diff]") {
    const auto rank_for = [](const char* version) {
        const auto drift = diff_manifests(manifest(kLocal), local_with(version));
        REQUIRE(drift.size() == 1);
        return drift.front().rank;
    };
    CHECK(rank_for(R"({"python_version": "3.11.9"})") == drift_rank::other);
    CHECK(rank_for(R"({"python_version": "3.12.0"})") == drift_rank::python_minor);
    CHECK(rank_for(R"({"python_version": "3.1.2"})") == drift_rank::python_minor);
    CHECK(rank_for(R"({"python_version": "3.11"})") == drift_rank::other);
    CHECK(rank_for(R"({"python_implementation": "PyPy"})") == drift_rank::python_minor);
    CHECK(rank_for(R"({"pytest_version": "7.4.0"})") == drift_rank::packages);
    CHECK(rank_for(R"({"locale": {"env": {"LANG": "C.UTF-8"}, "setlocale": "C", "getlocale": ["en_US", "UTF-8"]}})") ==
          drift_rank::locale_timezone);
}

TEST_CASE("a key on one side only is a difference", "[manifest_diff]") {
    auto other = manifest(kLocal);
    other.RemoveMember("umask");
    const auto drift = diff_manifests(manifest(kLocal), other);
    REQUIRE(drift.size() == 1);
    CHECK(drift.front().key == "umask");
    CHECK(drift.front().local == R"("0022")");
    CHECK(drift.front().other == std::nullopt);
}

TEST_CASE("format_drift prints local and the other side per key, in rank order", "[manifest_diff]") {
    const auto other = local_with(R"({"timezone": {"TZ": "Asia/Tokyo", "utc_offset_minutes": 540,
                                       "tzname": ["UTC", "UTC"]}, "env_names": ["HOME", "LANG", "PATH", "TZ"]})");
    const auto drift = diff_manifests(manifest(kLocal), other);
    CHECK(format_drift(drift, "runner", 10) ==
          "env_names.TZ\n"
          "  local : (absent)\n"
          "  runner: \"present\"\n"
          "timezone.TZ\n"
          "  local : null\n"
          "  runner: \"Asia/Tokyo\"\n"
          "timezone.utc_offset_minutes\n"
          "  local : 0\n"
          "  runner: 540\n");
    CHECK(format_drift(drift, "perturbed", 1) ==
          "env_names.TZ\n"
          "  local    : (absent)\n"
          "  perturbed: \"present\"\n"
          "... and 2 more differing keys\n");
    CHECK(format_drift({}, "runner", 10).empty());
}

TEST_CASE("format_drift shows a variable outside the allowlist by name only", "[manifest_diff]") {
    // The plugin records DEPLOY_API_TOKEN's name, never its value: the diff has nothing more to show.
    const auto other = local_with(R"({"env_names": ["DEPLOY_API_TOKEN", "HOME", "LANG", "PATH"]})");
    const auto text = format_drift(diff_manifests(manifest(kLocal), other), "runner", 10);
    CHECK(text == "env_names.DEPLOY_API_TOKEN\n  local : (absent)\n  runner: \"present\"\n");
}

TEST_CASE("drift_keys names each suspect once, by variable where a key carries one", "[manifest_diff]") {
    const auto other = local_with(R"({
        "timezone": {"TZ": "Asia/Tokyo", "utc_offset_minutes": 540, "tzname": ["JST", "JST"]},
        "locale": {"env": {"LANG": "de_DE.UTF-8"}, "setlocale": "de_DE.UTF-8", "getlocale": ["de_DE", "UTF-8"]},
        "env": {"LANG": "de_DE.UTF-8", "TZ": "Asia/Tokyo"},
        "env_names": ["HOME", "LANG", "PATH", "TZ"], "python_executable": "/opt/python",
        "host": {"name": "evgate", "hostname": "runner-7", "kernel": "Linux 6.1", "suite": "billing"}})");
    const auto drift = diff_manifests(manifest(kLocal), other);
    CHECK(drift_keys(drift, 10) == std::vector<std::string>{"LANG", "TZ", "locale.getlocale", "locale.setlocale",
                                                            "timezone.tzname", "timezone.utc_offset_minutes"});
    CHECK(drift_keys(drift, 2) == std::vector<std::string>{"LANG", "TZ"});
    CHECK(drift_keys(drift, 0).empty());
}

TEST_CASE("check_manifest refuses what this evgate cannot read, naming the file", "[manifest_diff]") {
    CHECK_NOTHROW(check_manifest(manifest(kLocal), "m.json"));
    CHECK_THROWS_WITH(check_manifest(local_with(R"({"schema": 2})"), "runner/manifest.json"),
                      "runner/manifest.json: manifest from a newer schema (2); this evgate reads 1");
    CHECK_THROWS_WITH(check_manifest(manifest("[1, 2]"), "m.json"),
                      "m.json: not an environment manifest: not a JSON object");
    CHECK_THROWS_WITH(check_manifest(manifest(R"({"python": "3.11.2"})"), "m.json"),
                      "m.json: not an environment manifest: no positive integer 'schema'");
    CHECK_THROWS_WITH(check_manifest(local_with(R"({"schema": "1"})"), "m.json"),
                      "m.json: not an environment manifest: no positive integer 'schema'");
}

TEST_CASE("read_manifest reads and checks a file", "[manifest_diff]") {
    const auto dir = fs::temp_directory_path() /
                     ("evgate-manifest-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir);
    std::ofstream(dir / "ok.json") << kLocal;
    std::ofstream(dir / "newer.json") << R"({"schema": 3})";
    std::ofstream(dir / "broken.json") << "{\"schema\": 1,\n";
    CHECK(read_manifest(dir / "ok.json")["cpu_count"].GetInt() == 8);
    CHECK_THROWS_WITH(read_manifest(dir / "newer.json"),
                      (dir / "newer.json").string() + ": manifest from a newer schema (3); this evgate reads 1");
    CHECK_THROWS_AS(read_manifest(dir / "broken.json"), InputError);
    fs::remove_all(dir);
}

TEST_CASE("variables evgate sets or reads are noise, never a suspect", "[manifest_diff]") {
    const auto local = evgate::parse_json(R"({"schema":1,"env_names":["HOME","PYTHONPATH"],"env":{"PYTHONPATH":"/a"}})", "a");
    const auto other = evgate::parse_json(
        R"({"schema":1,"env_names":["HOME","EVIDENCE_GATE_SHARD","PYTHONPATH","TZ"],"env":{"PYTHONPATH":"/b","TZ":"Asia/Tokyo"}})", "b");
    const auto drift = evgate::diff_manifests(local, other);
    CHECK(evgate::drift_keys(drift, 10) == std::vector<std::string>{"TZ"});
}
