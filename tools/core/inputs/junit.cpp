#include "inputs/junit.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include <tinyxml2.h>

#include "io/error.hpp"
#include "io/json_io.hpp"

namespace evgate {
namespace {

// Decodes the UTF-8 sequence at text[i]: code point and length. A byte that starts no valid
// sequence stands for itself, so that odd bytes pass through unchanged rather than vanish.
std::pair<char32_t, std::size_t> code_point_at(std::string_view text, std::size_t i) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2
                                             : (lead >> 4) == 0xE   ? 3
                                             : (lead >> 3) == 0x1E  ? 4
                                                                    : 0;
    if (length <= 1 || i + length > text.size()) return {lead, 1};
    char32_t c = lead & (0x7Fu >> length);
    for (std::size_t k = 1; k < length; ++k) {
        const auto byte = static_cast<unsigned char>(text[i + k]);
        if ((byte >> 6) != 0x2) return {lead, 1};
        c = (c << 6) | (byte & 0x3Fu);
    }
    return {c, length};
}

// pytest's bin_xml_escape keeps these and writes any other code point as "#xNN"; its pattern
// meant to keep U+10000.. as well but mistypes the range, so an emoji is escaped too.
bool kept_by_pytest(char32_t c) {
    return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0x7E) || (c >= 0x80 && c <= 0xD7FF) ||
           (c >= 0xE000 && c <= 0xFFFD);
}

// pytest's "#x%02X" below U+0100, "#x%04X" above.
std::string hex_escape(char32_t c) {
    constexpr char digits[] = "0123456789ABCDEF";
    const std::size_t width = c > 0xFF ? 4 : 2;
    std::string hex;
    for (; c != 0 || hex.size() < width; c >>= 4) hex.insert(hex.begin(), digits[c & 0xFu]);
    return "#x" + hex;
}

// A byte that starts no UTF-8 sequence cannot be written into XML as it is (pytest never has one:
// its ids are text).
bool kept_in_xml(char32_t c, std::size_t length) { return kept_by_pytest(c) && (c < 0x80 || length > 1); }

std::string visually_escaped(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto [c, length] = code_point_at(text, i);
        if (kept_in_xml(c, length))
            out.append(text.substr(i, length));
        else
            out += hex_escape(c);
        i += length;
    }
    return out;
}

// Property values of an element's <properties> child, by name (the first of duplicates).
std::map<std::string, std::string, std::less<>> properties_of(const tinyxml2::XMLElement& element) {
    std::map<std::string, std::string, std::less<>> out;
    const auto* properties = element.FirstChildElement("properties");
    if (properties == nullptr) return out;
    for (const auto* p = properties->FirstChildElement("property"); p != nullptr; p = p->NextSiblingElement("property")) {
        const char* name = p->Attribute("name");
        const char* value = p->Attribute("value");
        if (name != nullptr && value != nullptr) out.emplace(name, value);
    }
    return out;
}

std::string_view attribute(const tinyxml2::XMLElement& element, const char* name) {
    const char* value = element.Attribute(name);
    return value == nullptr ? std::string_view() : value;
}

// Every collected id under its JUnit address, built once: a report of n testcases maps in O(n).
class CollectedIndex {
public:
    explicit CollectedIndex(const std::vector<std::string>& ids) {
        by_address_.reserve(ids.size());
        for (const auto& id : ids) {
            const auto address = junit_address(id);
            auto& candidates = by_address_[key(address.classname, address.name)];
            if (std::none_of(candidates.begin(), candidates.end(), [&](const std::string* c) { return *c == id; }))
                candidates.push_back(&id);
        }
    }

    // The one collected id at this address, or nullptr. Several ids can share an address
    // (tests/a.py::B::c and tests/a/B.py::c); xunit1's file attribute, where present, settles it.
    const std::string* find(std::string_view classname, std::string_view name, std::string_view file) const {
        const auto it = by_address_.find(key(classname, name));
        if (it == by_address_.end()) return nullptr;
        if (it->second.size() == 1) return it->second.front();
        const std::string* match = nullptr;
        for (const auto* id : it->second) {
            if (file.empty() || id->substr(0, id->find("::")) != file) continue;
            if (match != nullptr) return nullptr;
            match = id;
        }
        return match;
    }

    // The collected id equal to `node_id`, or nullptr.
    const std::string* find_id(std::string_view node_id) const {
        const auto address = junit_address(node_id);
        const auto it = by_address_.find(key(address.classname, address.name));
        if (it == by_address_.end()) return nullptr;
        for (const auto* id : it->second)
            if (*id == node_id) return id;
        return nullptr;
    }

private:
    // No node id holds a NUL, so it cannot join two different pairs into one key.
    static std::string key(std::string_view classname, std::string_view name) {
        std::string k(classname);
        k += '\0';
        k += name;
        return k;
    }

    std::unordered_map<std::string, std::vector<const std::string*>> by_address_;
};

// How much a testcase element's outcome outweighs another's for the same test: pytest writes a
// teardown error of a failed test as a second <testcase>, and the failure is what happened.
int weight(Outcome outcome) {
    constexpr Outcome order[] = {Outcome::passed, Outcome::skipped, Outcome::xfailed, Outcome::error, Outcome::failed};
    return static_cast<int>(std::find(std::begin(order), std::end(order), outcome) - std::begin(order));
}

std::optional<Outcome> outcome_of_child(const tinyxml2::XMLElement& child) {
    const std::string_view tag = child.Name();
    if (tag == "failure") return Outcome::failed;
    if (tag == "error") return Outcome::error;
    if (tag == "skipped") return attribute(child, "type") == "pytest.xfail" ? Outcome::xfailed : Outcome::skipped;
    return std::nullopt;  // system-out, properties, ...
}

TestResult result_of(const tinyxml2::XMLElement& testcase) {
    TestResult result{Outcome::passed, {}, {}, {}};
    for (const auto* child = testcase.FirstChildElement(); child != nullptr; child = child->NextSiblingElement()) {
        const auto outcome = outcome_of_child(*child);
        if (!outcome || weight(*outcome) <= weight(result.outcome)) continue;
        result.outcome = *outcome;
        const auto message = attribute(*child, "message");
        result.message = std::string(message.substr(0, message.find('\n')));  // one line, as run records keep it
    }
    return result;
}

// The runs of evgate's junit.xml that a runner column takes: those its machine ran itself.
std::optional<std::set<std::string>> local_runs(const tinyxml2::XMLElement& suite, const std::string& source) {
    const auto properties = properties_of(suite);
    const auto it = properties.find("local_runs");
    if (it == properties.end()) return std::nullopt;
    const int line = suite.FirstChildElement("properties")->GetLineNum();
    const auto doc = parse_json(it->second, source + ": property local_runs");
    if (!doc.IsArray()) throw InputError(source, line, "property local_runs is not a JSON list");
    std::set<std::string> runs;
    for (const auto& run : doc.GetArray()) {
        if (!run.IsString()) throw InputError(source, line, "property local_runs holds a non-string");
        runs.emplace(run.GetString(), run.GetStringLength());
    }
    return runs;
}

class Reader {
public:
    Reader(JUnitRun& run, const CollectedIndex& index, const std::string& source) : run_(run), index_(index), source_(source) {}

    // Suites may nest; testcases sit in any of them.
    void suite(const tinyxml2::XMLElement& element) {
        if (run_.hostname.empty()) run_.hostname = std::string(attribute(element, "hostname"));
        if (auto runs = local_runs(element, source_)) local_runs_ = std::move(runs);
        for (const auto* child = element.FirstChildElement(); child != nullptr; child = child->NextSiblingElement()) {
            const std::string_view tag = child->Name();
            if (tag == "testsuite")
                suite(*child);
            else if (tag == "testcase")
                testcase(*child);
        }
    }

private:
    JUnitRun& run_;
    const CollectedIndex& index_;
    const std::string& source_;
    std::optional<std::set<std::string>> local_runs_;  // of evgate's junit.xml

    void testcase(const tinyxml2::XMLElement& element) {
        const auto properties = properties_of(element);
        const auto property = [&properties](std::string_view name) -> const std::string* {
            const auto it = properties.find(name);
            return it == properties.end() ? nullptr : &it->second;
        };
        if (const auto* scope = property("scope"); scope != nullptr && *scope == "suite") return;  // the writer's suite row
        const auto classname = attribute(element, "classname");
        const auto name = attribute(element, "name");
        // evgate's node_id property names the test exactly, unless XML could not hold it as it is.
        const auto* node_id = property("node_id");
        const auto* id = node_id != nullptr ? index_.find_id(*node_id) : nullptr;
        if (id == nullptr) id = index_.find(classname, name, attribute(element, "file"));
        if (id == nullptr) {
            run_.unmapped.push_back(std::string(classname) + "::" + std::string(name));
            return;
        }
        if (const auto* outcomes = property("outcomes")) {
            add_attempts(*id, *outcomes, element.GetLineNum());
            return;
        }
        auto result = result_of(element);
        const auto [it, fresh] = run_.results.try_emplace(*id, std::move(result));  // moves only when fresh
        if (!fresh && weight(result.outcome) > weight(it->second.outcome)) it->second = std::move(result);
    }

    // Every attempt evgate's junit.xml lists for the test: its ledger row's outcomes.
    void add_attempts(const std::string& id, const std::string& json, int line) {
        const auto doc = parse_json(json, source_ + ":" + std::to_string(line) + ": property outcomes");
        if (!doc.IsObject()) throw InputError(source_, line, "property outcomes is not a JSON object");
        for (const auto& [run, outcome] : doc.GetObject()) {
            if (!outcome.IsString()) throw InputError(source_, line, "property outcomes holds a non-string");
            const std::string run_id(run.GetString(), run.GetStringLength());
            if (local_runs_ && !local_runs_->count(run_id)) continue;  // its perturbed run, its own runners
            const std::string_view word(outcome.GetString(), outcome.GetStringLength());
            run_.attempts[run_id][id] = TestResult{read_outcome(word, source_, line), {}, {}, {}};
        }
    }
};

// tinyxml2 names the element it was in at the end of ErrorStr() ("... XMLElement name=testcase").
std::string xml_error(const tinyxml2::XMLDocument& doc) {
    std::string text = std::string("not valid XML: ") + doc.ErrorName();
    const std::string_view detail = doc.ErrorStr();
    const auto at = detail.rfind("name=");
    if (at != std::string_view::npos) text += " in <" + std::string(detail.substr(at + 5)) + ">";
    return text;
}

const tinyxml2::XMLElement& report_root(const tinyxml2::XMLDocument& doc, const std::string& source) {
    const auto* root = doc.RootElement();
    if (root == nullptr) throw InputError(source, 0, "not a JUnit XML report: no root element");
    const std::string_view tag = root->Name();
    if (tag == "testsuite" || (tag == "testsuites" && root->FirstChildElement("testsuite") != nullptr)) return *root;
    throw InputError(source, root->GetLineNum(), "not a JUnit XML report: no <testsuite> element");
}

}  // namespace

JUnitAddress junit_address(std::string_view node_id) {
    // pytest's junitxml.mangle_test_address: parameters are set aside before splitting on "::"
    // because they may hold "::", '/' and '.' themselves.
    const auto bracket = node_id.find('[');
    std::string_view rest = node_id.substr(0, bracket);
    std::vector<std::string> names;
    for (auto sep = rest.find("::");; sep = rest.find("::")) {
        names.emplace_back(rest.substr(0, sep));
        if (sep == std::string_view::npos) break;
        rest.remove_prefix(sep + 2);
    }
    std::replace(names.front().begin(), names.front().end(), '/', '.');
    const std::string_view py = ".py";
    if (names.front().size() >= py.size() && std::string_view(names.front()).substr(names.front().size() - py.size()) == py)
        names.front().resize(names.front().size() - py.size());
    if (bracket != std::string_view::npos) names.back() += node_id.substr(bracket);
    JUnitAddress address;
    for (std::size_t i = 0; i + 1 < names.size(); ++i) address.classname += (i == 0 ? "" : ".") + names[i];
    address.name = visually_escaped(names.back());
    return address;
}

void append_xml_text(std::string& out, std::string_view text, char quote) {
    const bool attribute = quote != '\0';
    // Printable ASCII that needs no reference: taken a run at a time, most text is nothing else.
    const auto plain = [quote](char c) {
        return c >= 0x20 && c <= 0x7E && c != '&' && c != '<' && c != '>' && c != quote;
    };
    for (std::size_t i = 0; i < text.size();) {
        if (plain(text[i])) {
            auto end = i + 1;
            while (end < text.size() && plain(text[end])) ++end;
            out.append(text, i, end - i);
            i = end;
            continue;
        }
        const auto [c, length] = code_point_at(text, i);
        if (!kept_in_xml(c, length)) {
            out += hex_escape(c);
        } else {
            switch (c) {
                case '&': out += "&amp;"; break;
                case '<': out += "&lt;"; break;
                case '>': out += "&gt;"; break;
                case '\r': out += "&#13;"; break;  // a parser would read a bare CR as LF
                case '"': out += quote == '"' ? "&quot;" : "\""; break;
                case '\'': out += quote == '\'' ? "&apos;" : "'"; break;
                case '\n': out += attribute ? "&#10;" : "\n"; break;  // an attribute's line break is read as a space
                case '\t': out += attribute ? "&#9;" : "\t"; break;
                default: out.append(text.substr(i, length));
            }
        }
        i += length;
    }
}

JUnitRun parse_junit(std::string_view xml, const std::string& source, const std::vector<std::string>& collected_ids) {
    tinyxml2::XMLDocument doc;
    if (doc.Parse(xml.data(), xml.size()) != tinyxml2::XML_SUCCESS)
        throw InputError(source, doc.ErrorLineNum(), xml_error(doc));
    const auto& root = report_root(doc, source);
    JUnitRun run;
    const CollectedIndex index(collected_ids);
    Reader(run, index, source).suite(root);
    run.name = run.hostname.empty() ? std::filesystem::path(source).stem().string() : run.hostname;
    std::sort(run.unmapped.begin(), run.unmapped.end());
    run.unmapped.erase(std::unique(run.unmapped.begin(), run.unmapped.end()), run.unmapped.end());
    return run;
}

JUnitRun read_junit(const std::filesystem::path& file, const std::vector<std::string>& collected_ids) {
    return parse_junit(read_file(file), file.string(), collected_ids);
}

}  // namespace evgate
