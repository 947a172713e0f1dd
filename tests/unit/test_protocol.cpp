// evgate against the protocol file (templates/pytest/evidence_gate_protocol.json), whose names
// runs/protocol.hpp is generated from: evgate reads every event in it, writes only members it
// lists, and spells no protocol name by hand. The plugin's side is tests/python/test_protocol.py.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <rapidjson/document.h>

#include "runs/fork_launcher.hpp"
#include "runs/process_checks.hpp"
#include "runs/protocol.hpp"
#include "runs/record_channel.hpp"
#include "runs/run_records.hpp"

using namespace evgate;
namespace fs = std::filesystem;

namespace {

template <std::size_t N>
bool lists(const std::array<std::string_view, N>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// The members the protocol file allows in a record of `event`.
std::vector<std::string_view> fields_of(std::string_view event) {
    namespace f = protocol::fields_of;
    const std::pair<std::string_view, std::vector<std::string_view>> all[] = {
        {protocol::event::session, {f::session.begin(), f::session.end()}},
        {protocol::event::start, {f::start.begin(), f::start.end()}},
        {protocol::event::result, {f::result.begin(), f::result.end()}},
        {protocol::event::end, {f::end.begin(), f::end.end()}},
        {protocol::event::outside, {f::outside.begin(), f::outside.end()}},
        {protocol::event::interrupted, {f::interrupted.begin(), f::interrupted.end()}},
        {protocol::event::torn, {f::torn.begin(), f::torn.end()}},
        {protocol::event::finished, {f::finished.begin(), f::finished.end()}},
        {protocol::event::foreign, {f::foreign.begin(), f::foreign.end()}},
        {protocol::event::order, {f::order.begin(), f::order.end()}},
        {protocol::event::status, {f::status.begin(), f::status.end()}},
        {protocol::event::noise, {f::noise.begin(), f::noise.end()}}};
    for (const auto& [name, fields] : all)
        if (name == event) return fields;
    FAIL("no fields for event " << event);
    return {};
}

// Every member of a record evgate writes is one the protocol file lists for its event.
void check_written(const std::string& record) {
    rapidjson::Document doc;
    doc.Parse(record.c_str());
    REQUIRE(doc.IsObject());
    const std::string event = doc["event"].GetString();
    const auto allowed = fields_of(event);
    for (const auto& m : doc.GetObject()) {
        INFO(record);
        CHECK(std::find(allowed.begin(), allowed.end(), std::string_view(m.name.GetString())) != allowed.end());
    }
}

}  // namespace

TEST_CASE("evgate reads every record event of the protocol file, and knows no other", "[protocol]") {
    REQUIRE(protocol::event::all.size() == protocol::event::from_plugin.size() + protocol::event::from_evgate.size());
    for (const auto name : protocol::event::all) {
        INFO(name);
        const auto event = record_event(name);
        REQUIRE(event);
        CHECK(record_event_name(*event) == name);
    }
    for (int e = 0; e <= static_cast<int>(RunRecord::Event::noise); ++e)
        CHECK(lists(protocol::event::all, record_event_name(static_cast<RunRecord::Event>(e))));
    CHECK_FALSE(record_event("started"));
}

TEST_CASE("the records evgate writes have only the members the protocol file lists", "[protocol]") {
    check_written(noise_record("not a record", "t.py::a"));
    check_written(reason_record(protocol::event::order, "the order differs"));
    check_written(reason_record(protocol::event::status, "the server ended"));
    check_written(outside_record("exit", {"data"}));
    ForeignSender sender;
    sender.pid = 42;
    sender.lines = "{\"event\":\"start\",\"test\":\"t.py::a\"}\n";
    sender.count = 1;
    check_written(foreign_record(sender, ""));
}

TEST_CASE("the fork server's requests are the protocol file's", "[protocol]") {
    for (const auto op : {protocol::op::reap, protocol::op::stop}) {
        rapidjson::Document doc;
        doc.Parse(op_request(op).c_str());
        REQUIRE(doc.IsObject());
        CHECK(doc.MemberCount() == 1);
        CHECK(std::string_view(doc[protocol::field::op].GetString()) == op);
        CHECK(lists(protocol::op::all, op));
    }
}

// The protocol's names are taken from runs/protocol.hpp, never written out: a literal option
// flag, `"event"` or `"op"`, or an event named to a record writer (`reason_record("status", ...)`)
// in evgate's sources is a second spelling that can drift.
TEST_CASE("no source of evgate spells a protocol name by hand", "[protocol]") {
    // machines/shards.cpp rewrites `finished` records with a regex over their text (issue 27,
    // item 3, replaces it with typed records).
    const std::vector<std::string> known = {"machines/shards.cpp"};
    const std::regex spelled(R"re("--evidence-gate-|\\?"(event|op)\\?"|reason_record\(")re");
    const fs::path core = fs::path(EVIDENCE_GATE_SOURCE_DIR) / "tools" / "core";
    int files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(core)) {
        const auto ext = entry.path().extension();
        if (ext != ".cpp" && ext != ".hpp") continue;
        const auto relative = fs::relative(entry.path(), core).generic_string();
        if (std::find(known.begin(), known.end(), relative) != known.end()) continue;
        ++files;
        std::ifstream in(entry.path());
        int number = 0;
        for (std::string line; std::getline(in, line);) {
            ++number;
            const auto code = line.substr(0, line.find("//"));
            INFO(relative << ":" << number << ": " << line);
            CHECK_FALSE(std::regex_search(code, spelled));
        }
    }
    CHECK(files > 100);
}
