// Environment manifests from another machine: checked, flattened and diffed against a local one.
#include "fuzz_support.hpp"
#include "io/json_io.hpp"
#include "machines/manifest_diff.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const auto local = evgate::parse_json(
        R"({"schema": 1, "python_version": "3.11.2", "timezone": {"TZ": null}, "cpu_count": 2,
            "distributions": {"pytest": "7.2.1"}, "env_names": ["HOME", "PATH"], "locale": {"env": {"LANG": "C.UTF-8"}}})",
        "local.json");
    evgate_fuzz::expect_only_input_errors([&] {
        const auto other = evgate::parse_json(evgate_fuzz::text(data, size), "runner.json");
        evgate::check_manifest(other, "runner.json");
        evgate::flatten_manifest(other);
        const auto drift = evgate::diff_manifests(local, other);
        evgate::format_drift(drift, "runner", drift.size());
        evgate::drift_keys(drift, 5);
        if (!evgate::diff_manifests(other, other).empty()) evgate_fuzz::violated("a manifest does not differ from itself");
    });
    return 0;
}
